// KernelSku: which backend and kernel a plan runs, as a structured value with a stable name.
//
// Name grammar: <family>.<dir>.<impl>[<in>,<compute>(,<out>)].<arch>
//   e.g. "unary.fwd.vec16_contig[bf16,f32].sm80+", "cast.fwd.strided_i64[f32,f32,e4m3].sm80+"
// The names are API: tests, benches, logs and PlanPreference globs use them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "baracuda/core/dtype.hpp"

namespace baracuda {

enum class Backend : std::uint8_t { kHand, kCublasLt, kCudnn, kCufft, kCusolver, kCurand, kCub, kCutlass };
using BackendMask = std::uint32_t;
constexpr BackendMask backend_bit(Backend b) { return BackendMask{1} << static_cast<unsigned>(b); }
inline constexpr BackendMask kAllBackends = 0xFFu;
const char* backend_name(Backend b) noexcept;

enum class Direction : std::uint8_t { kForward, kBackward };

// What the kernel promises about its numerics.
struct PrecisionInfo {
  DType accumulator = DType::kF32;    // the type arithmetic / accumulation runs in
  bool deterministic = true;          // same inputs -> same bits, run after run
  bool uses_tf32 = false;             // f32 inputs multiplied in TF32
  bool reduced_precision_reduction = false;
  bool fast_math = false;             // approximate intrinsics (e.g. __expf)
  friend bool operator==(const PrecisionInfo&, const PrecisionInfo&) = default;
};

struct KernelSku {
  std::string family;                 // "unary", "binary", "cast", ...
  Direction direction = Direction::kForward;
  std::string impl;                   // algorithm: "vec16_contig", "strided_i32", ...
  DType in = DType::kF32;
  DType compute = DType::kF32;
  DType out = DType::kF32;
  int min_sm = 80;                    // lowest compute capability the kernel runs on (80 = 8.0)
  bool arch_specific = false;         // true for sm_90a-only code (wgmma, setmaxnreg): runs on sm_90 only
  Backend backend = Backend::kHand;
  PrecisionInfo precision;
  bool graph_capturable = true;       // run() may be captured in a CUDA graph

  std::string name() const;           // the stable printable name
  friend bool operator==(const KernelSku&, const KernelSku&) = default;
};

// Glob match with '*' and '?' (used for PlanPreference SKU filters).
bool sku_glob_match(std::string_view pattern, std::string_view name) noexcept;

}  // namespace baracuda
