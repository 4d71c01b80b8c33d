#include "baracuda/core/sku.hpp"

namespace baracuda {

const char* backend_name(Backend b) noexcept {
  switch (b) {
    case Backend::kHand: return "hand";
    case Backend::kCublasLt: return "cublaslt";
    case Backend::kCudnn: return "cudnn";
    case Backend::kCufft: return "cufft";
    case Backend::kCusolver: return "cusolver";
    case Backend::kCurand: return "curand";
    case Backend::kCub: return "cub";
    case Backend::kCutlass: return "cutlass";
  }
  return "unknown";
}

std::string KernelSku::name() const {
  std::string s = family;
  s += direction == Direction::kForward ? ".fwd." : ".bwd.";
  s += impl;
  s += "[";
  s += dtype_name(in);
  s += ",";
  s += dtype_name(compute);
  if (out != in) {
    s += ",";
    s += dtype_name(out);
  }
  s += "].sm" + std::to_string(min_sm) + (arch_specific ? "a" : "+");
  return s;
}

bool sku_glob_match(std::string_view p, std::string_view s) noexcept {
  // Iterative glob with backtracking on the last '*'.
  std::size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace baracuda
