// Hash combination for descriptor hash() implementations.
#pragma once

#include <cstddef>

namespace baracuda::detail {
inline std::size_t hash_combine(std::size_t h, std::size_t v) noexcept {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}
}  // namespace baracuda::detail
