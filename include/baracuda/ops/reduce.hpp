// Reductions over any set of axes (torch.sum / mean / prod / amax / amin / max / min /
// linalg.vector_norm / logsumexp / var / std, argmax / argmin, any / all, count_nonzero,
// trace) and the backward of the differentiable ones.
//
//   ReducePlan          y = reduce(x) over `axes` (keepdim or not)
//   ReduceBackwardPlan  grad_x from grad_y (+ x and y where the formula needs them)
//   ArgReducePlan       argmax / argmin -> i64 (one axis, or all axes = flattened index)
//   BoolReducePlan      any / all -> bool, any real dtype
//   CountReducePlan     count_nonzero -> i64, any real dtype
//   TracePlan           sum of the diagonal of a 2-D x -> rank-0 y
//
// Axes: ReduceAxes lists dims (negative counts from the end); no dims = every dim (torch's
// dim=None). A dim out of range or listed twice is refused. y's shape is x's with the
// reduced dims removed, or kept as size 1 with keepdim. Any strides on x and y (y must not
// overlap itself); y may alias x only with the identical layout (a reduction of size-1 dims).
//
// Dtypes (docs/reduce.md): f64, f32, f16, bf16 for every float kind, y of x's dtype; f16 /
// bf16 / f32 accumulate in f32, f64 in f64. sum and prod also take i32 / i64 x with an i64 y,
// accumulated in i64 with two's complement wrapping (torch). PyTorch semantics: amax / amin /
// max / min propagate NaN; an empty reduction gives sum 0, prod 1, mean NaN, norm 0,
// logsumexp -inf, var / std NaN, any false, all true, count 0; max / min / amax / amin /
// argmax / argmin of an empty reduction are refused (torch raises). Every SKU is
// deterministic: fixed order, no atomics; two-pass splits keep partials in the workspace.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct ReduceAxes {
  std::array<std::int8_t, kMaxRank> dims{};
  int count = 0;  // 0 = every dim
  static ReduceAxes all() { return {}; }
  static ReduceAxes of(std::initializer_list<int> d) {
    ReduceAxes a;
    for (int v : d) {
      if (a.count < kMaxRank) a.dims[static_cast<std::size_t>(a.count)] = static_cast<std::int8_t>(v);
      ++a.count;  // > kMaxRank is refused by validation
    }
    return a;
  }
  std::string to_string() const;  // "[0,-1]" or "all"
  friend bool operator==(const ReduceAxes&, const ReduceAxes&) = default;
};

// max / min equal amax / amin (values only; torch.max(x, dim)'s indices: ArgReducePlan).
enum class ReduceKind : std::uint8_t { kSum, kMean, kProd, kMax, kMin, kAmax, kAmin, kNorm, kLogSumExp, kVar, kStd };
const char* reduce_kind_name(ReduceKind k) noexcept;  // "sum", "mean", ...

struct ReduceDescriptor {
  TensorLayout x;
  TensorLayout y;
  ReduceAxes axes;
  bool keepdim = false;
  ReduceKind kind = ReduceKind::kSum;
  double p = 2.0;           // kNorm: any p (inf, -inf, 0 included; torch.linalg.vector_norm's ord)
  double correction = 1.0;  // kVar / kStd: divisor max(0, n - correction)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const ReduceDescriptor&, const ReduceDescriptor&) = default;
};
struct ReduceArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using ReducePlan = Plan<ReduceDescriptor, ReduceArgs>;

// Backward of sum, mean, amax / amin / max / min (grad split evenly among ties, as torch.amax),
// norm, logsumexp, var, std, prod (zeros handled as torch). Floating dtypes only.
struct ReduceBackwardDescriptor {
  TensorLayout grad_y;  // y's shape
  TensorLayout x;       // the forward's input (grad_x's shape)
  TensorLayout y;       // the forward's output (grad_y's shape)
  TensorLayout grad_x;  // x's shape
  ReduceAxes axes;
  bool keepdim = false;
  ReduceKind kind = ReduceKind::kSum;
  double p = 2.0;
  double correction = 1.0;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const ReduceBackwardDescriptor&, const ReduceBackwardDescriptor&) = default;
};
// x may be null for sum / mean, y may be null for sum / mean / var.
struct ReduceBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* y = nullptr;
  void* grad_x = nullptr;
};
using ReduceBackwardPlan = Plan<ReduceBackwardDescriptor, ReduceBackwardArgs>;

enum class ArgReduceKind : std::uint8_t { kArgmax, kArgmin };
// Index of the first extreme value (torch's tie rule); NaN counts as the extreme for both
// (the first NaN wins). With all axes the index is into x flattened in row-major order.
struct ArgReduceDescriptor {
  TensorLayout x;  // f64, f32, f16, bf16, i64, i32
  TensorLayout y;  // i64
  ReduceAxes axes;  // one dim, or all
  bool keepdim = false;
  ArgReduceKind kind = ArgReduceKind::kArgmax;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const ArgReduceDescriptor&, const ArgReduceDescriptor&) = default;
};
struct ArgReduceArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using ArgReducePlan = Plan<ArgReduceDescriptor, ArgReduceArgs>;

enum class BoolReduceKind : std::uint8_t { kAny, kAll };
// x != 0 is true (NaN true, -0.0 false); y bool.
struct BoolReduceDescriptor {
  TensorLayout x;
  TensorLayout y;
  ReduceAxes axes;
  bool keepdim = false;
  BoolReduceKind kind = BoolReduceKind::kAny;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BoolReduceDescriptor&, const BoolReduceDescriptor&) = default;
};
struct BoolReduceArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using BoolReducePlan = Plan<BoolReduceDescriptor, BoolReduceArgs>;

struct CountReduceDescriptor {
  TensorLayout x;  // any real dtype
  TensorLayout y;  // i64
  ReduceAxes axes;
  bool keepdim = false;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const CountReduceDescriptor&, const CountReduceDescriptor&) = default;
};
struct CountReduceArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using CountReducePlan = Plan<CountReduceDescriptor, CountReduceArgs>;

// torch.trace: x 2-D [n, m] (any strides), y rank 0; floats keep x's dtype, i32 / i64 give i64.
struct TraceDescriptor {
  TensorLayout x;
  TensorLayout y;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const TraceDescriptor&, const TraceDescriptor&) = default;
};
struct TraceArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using TracePlan = Plan<TraceDescriptor, TraceArgs>;

// y's layout (contiguous) for a reduction of x over `axes`; fails on a bad axis.
Expected<TensorLayout> reduced_layout(const TensorLayout& x, const ReduceAxes& axes, bool keepdim, DType y_dtype);

extern template class Plan<ReduceDescriptor, ReduceArgs>;
extern template class Plan<ReduceBackwardDescriptor, ReduceBackwardArgs>;
extern template class Plan<ArgReduceDescriptor, ArgReduceArgs>;
extern template class Plan<BoolReduceDescriptor, BoolReduceArgs>;
extern template class Plan<CountReduceDescriptor, CountReduceArgs>;
extern template class Plan<TraceDescriptor, TraceArgs>;

}  // namespace baracuda
