// PlanPreference: what the caller allows select() to choose. Every field is honoured:
// a candidate that violates one is rejected with that field named in the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/core/sku.hpp"

namespace baracuda {

struct MathMode {
  bool allow_tf32 = false;                         // f32 GEMM/conv may multiply in TF32
  bool allow_reduced_precision_reduction = false;  // f16/bf16 accumulation allowed
  bool allow_fast_math = false;                    // approximate intrinsics allowed
};

struct PlanPreference {
  // Only candidates whose SKU name matches this glob are considered; when none of those
  // accepts, select fails with each one's reason (never a silent fallback). Empty = any.
  std::string force_sku;
  // Candidates whose SKU name matches any of these globs are skipped.
  std::vector<std::string> skip_skus;
  BackendMask backends = kAllBackends;
  bool deterministic = false;             // require bitwise-reproducible kernels
  MathMode math;
  std::size_t max_workspace_bytes = std::numeric_limits<std::size_t>::max();
  bool require_graph_capturable = false;
};

}  // namespace baracuda
