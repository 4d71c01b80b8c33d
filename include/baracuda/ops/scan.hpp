// Scans along one axis, forward and backward (torch.cumsum, torch.cumprod, torch.cummax,
// torch.cummin, torch.logcumsumexp; jax.lax.cumsum/cumprod/cummax/cummin/cumlogsumexp with
// reverse=).
//
//   cumsum:       y_i = sum_{j<=i} x_j          cumprod: y_i = prod_{j<=i} x_j
//   cummax:       y_i = max_{j<=i} x_j, indices_i = the index of that maximum (i64)
//   cummin:       the same with min
//   logcumsumexp: y_i = log(sum_{j<=i} exp(x_j))
// `reverse` runs the scan from the end of the axis (j >= i), as jax.lax's reverse=True
// (= flip, scan, flip; indices stay positions of the unflipped axis).
//
// Dtypes: f64, f32, f16, bf16 for every kind (f16 / bf16 / f32 compute in f32, f64 in f64);
// cumsum, cumprod, cummax and cummin also take i32 and i64 inputs. Integer cumsum / cumprod
// write i64, as torch promotes them (accumulated in 64 bits, wrapping on overflow like torch);
// integer cummax / cummin write x's dtype (exact). y has x's shape; its dtype is x's, except
// i64 for integer cumsum / cumprod. cummax / cummin write `indices` (i64, x's shape).
//
// PyTorch's rules: cummax takes the LAST index among equal maxima (its comparison is >=;
// cummin likewise with <=); a NaN is the extremum from where it appears on, and each later NaN
// takes over the index (torch: `isnan(x) || (!isnan(out) && x >= out)`). -0 and +0 compare
// equal (a tie). logcumsumexp combines as torch's _log_add_exp_helper (+-inf pairs kept, NaN
// propagates). Integer cumsum / cumprod wrap (two's complement, 64 bits).
//
// Backward (floating dtypes; grad_x has x's layout rules, grad_y y's shape and dtype):
//   cumsum:       grad_x = reverse cumsum of grad_y
//   cumprod:      grad_x_i = y_{i-1} * (g_i + sum_{j>i} g_j prod_{k=i+1..j} x_k) (y_{-1} = 1):
//                 exact with zeros in x (no division; PyTorch's cumprod_backward value),
//                 needs x and y (the forward's output)
//   cummax/min:   grad_x_i = sum of g_j over the j whose index is i (torch's scatter_add),
//                 deterministic; needs the forward's `indices` (as cummax/cummin wrote them:
//                 runs of one index starting at that index)
//   logcumsumexp: grad_x_i = sum_{j>=i} g_j exp(x_i - y_j), as torch: positive and negative
//                 g in the log domain apart; needs x and y
// Operands a kind does not use are ignored (their layouts and pointers may be anything).
//
// Any axis (negative counts from the end), any strides on every dim; outputs must not
// overlap themselves or each other; in place (y over x, grad_x over grad_y) is allowed with
// the identical layout and dtype. Determinism: every SKU gives the same bits run after run,
// except the single-pass look-back SKU on floating cumsum / cumprod / logcumsumexp (its
// carry into a tile is added in the order the predecessors finished; integers, max and min
// are exact, hence deterministic). PlanPreference::deterministic excludes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class ScanKind : std::uint8_t { kCumsum, kCumprod, kCummax, kCummin, kLogcumsumexp };
const char* scan_kind_name(ScanKind k) noexcept;  // "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"

struct ScanDescriptor {
  TensorLayout x;
  TensorLayout y;        // x's shape; x's dtype (i64 for integer cumsum / cumprod)
  TensorLayout indices;  // cummax / cummin only: i64, x's shape
  int axis = -1;         // in [-rank, rank)
  ScanKind kind = ScanKind::kCumsum;
  bool reverse = false;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const ScanDescriptor&, const ScanDescriptor&) = default;
};
struct ScanArgs {
  const void* x = nullptr;
  void* y = nullptr;
  void* indices = nullptr;  // cummax / cummin
};
using ScanPlan = Plan<ScanDescriptor, ScanArgs>;

struct ScanBackwardDescriptor {
  TensorLayout grad_y;
  TensorLayout x;        // cumprod, logcumsumexp: the forward's input
  TensorLayout y;        // cumprod, logcumsumexp: the forward's output
  TensorLayout indices;  // cummax, cummin: the forward's indices (i64)
  TensorLayout grad_x;   // grad_y's shape and dtype
  int axis = -1;
  ScanKind kind = ScanKind::kCumsum;
  bool reverse = false;  // the forward's
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const ScanBackwardDescriptor&, const ScanBackwardDescriptor&) = default;
};
struct ScanBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* y = nullptr;
  const void* indices = nullptr;
  void* grad_x = nullptr;
};
using ScanBackwardPlan = Plan<ScanBackwardDescriptor, ScanBackwardArgs>;

extern template class Plan<ScanDescriptor, ScanArgs>;
extern template class Plan<ScanBackwardDescriptor, ScanBackwardArgs>;

}  // namespace baracuda
