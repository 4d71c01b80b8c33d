// Workspace byte counts rounded up to kWorkspaceAlignment, so that a plan's workspace can be
// cut into aligned regions (each one starting at an aligned offset). Written once here.
#pragma once

#include <cstddef>

#include "baracuda/core/workspace.hpp"

namespace baracuda {

inline constexpr std::size_t align_workspace(std::size_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

}  // namespace baracuda
