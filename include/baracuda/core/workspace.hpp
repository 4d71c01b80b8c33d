// Workspace: caller-owned scratch device memory handed to run(). Plans never allocate;
// run() fails with kWorkspaceTooSmall when bytes < plan.workspace_size().
#pragma once

#include <cstddef>

namespace baracuda {

struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// Alignment every plan may assume for workspace.data (run() checks it when bytes > 0).
inline constexpr std::size_t kWorkspaceAlignment = 256;

}  // namespace baracuda
