// Sparsemax along one axis, forward and backward (Martins & Astudillo, ICML 2016).
//
//   forward:  y_i = max(x_i - tau, 0), tau the threshold with sum_i max(x_i - tau, 0) = 1
//             (the Euclidean projection of the row onto the probability simplex)
//   backward: grad_x_i = [y_i > 0] * (grad_y_i - v),  v = sum_{y_j > 0} grad_y_j / |{y_j > 0}|
//             (the backward takes the forward's output y)
//
// The threshold: max m of the row, then Newton steps on f(t) = sum max(x - t, 0) - 1 from
// t = m - 1 (Michelot's iteration: each step t' = (sum_{x > t} x - 1) / |{x > t}| stays
// below tau and is exact once the support stops changing), with a bisection fallback after
// 24 steps; every step is one pass over the row (registers or memory). No sort, no
// workspace, any row length.
//
// Any axis (negative counts from the end), any length, any strides; y / grad_x must not
// overlap themselves. In place (y over x, grad_x over grad_y) is allowed with the identical
// layout. Dtypes f64, f32, f16, bf16, all operands one dtype; 16/32-bit compute in f32, f64
// in f64. A row holding a NaN or +inf, or only -inf, is NaN; -inf elements of other rows
// give 0. Every SKU is deterministic (no atomics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct SparsemaxDescriptor {
  TensorLayout x;
  TensorLayout y;  // x's shape and dtype
  int axis = -1;   // in [-rank, rank)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SparsemaxDescriptor&, const SparsemaxDescriptor&) = default;
};
struct SparsemaxArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using SparsemaxPlan = Plan<SparsemaxDescriptor, SparsemaxArgs>;

struct SparsemaxBackwardDescriptor {
  TensorLayout grad_y;
  TensorLayout y;       // the forward's output
  TensorLayout grad_x;  // grad_y's shape
  int axis = -1;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SparsemaxBackwardDescriptor&, const SparsemaxBackwardDescriptor&) = default;
};
struct SparsemaxBackwardArgs {
  const void* grad_y = nullptr;
  const void* y = nullptr;
  void* grad_x = nullptr;
};
using SparsemaxBackwardPlan = Plan<SparsemaxBackwardDescriptor, SparsemaxBackwardArgs>;

extern template class Plan<SparsemaxDescriptor, SparsemaxArgs>;
extern template class Plan<SparsemaxBackwardDescriptor, SparsemaxBackwardArgs>;

}  // namespace baracuda
