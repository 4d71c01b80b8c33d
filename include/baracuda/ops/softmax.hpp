// Softmax and log-softmax along one axis, forward and backward (torch.softmax,
// torch.log_softmax, aten::_softmax_backward_data, aten::_log_softmax_backward_data).
//
//   softmax:     y_i = exp(x_i - m) / sum_j exp(x_j - m),  m = max_j x_j
//   log_softmax: y_i = x_i - m - log(sum_j exp(x_j - m))
//   backward of softmax:     grad_x_i = y_i * (grad_y_i - sum_j grad_y_j * y_j)
//   backward of log_softmax: grad_x_i = grad_y_i - exp(y_i) * sum_j grad_y_j
// (the backward takes the forward's output y, as PyTorch's does).
//
// Any axis (negative counts from the end), any length (no cap), any strides on every dim;
// y / grad_x must not overlap themselves. In place (y over x, grad_x over grad_y or y) is
// allowed with the identical layout. Dtypes f64, f32, f16, bf16; all operands share one;
// f16 / bf16 / f32 compute in f32 (max and sum merged online in f32), f64 in f64.
//
// Non-finite rows follow PyTorch: a NaN anywhere in a row makes the whole row NaN; a +inf
// in a row makes the whole row NaN (inf - inf); a row of only -inf gives NaN for both
// softmax and log_softmax (exp(-inf - -inf) = NaN); -inf elements of other rows give 0
// (softmax) / -inf (log_softmax). Every SKU is deterministic (no atomics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class SoftmaxKind : std::uint8_t { kSoftmax, kLogSoftmax };
const char* softmax_kind_name(SoftmaxKind k) noexcept;  // "softmax", "log_softmax"

struct SoftmaxDescriptor {
  TensorLayout x;
  TensorLayout y;  // x's shape and dtype
  int axis = -1;   // in [-rank, rank)
  SoftmaxKind kind = SoftmaxKind::kSoftmax;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SoftmaxDescriptor&, const SoftmaxDescriptor&) = default;
};
struct SoftmaxArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using SoftmaxPlan = Plan<SoftmaxDescriptor, SoftmaxArgs>;

struct SoftmaxBackwardDescriptor {
  TensorLayout grad_y;
  TensorLayout y;       // the forward's output
  TensorLayout grad_x;  // grad_y's shape
  int axis = -1;
  SoftmaxKind kind = SoftmaxKind::kSoftmax;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SoftmaxBackwardDescriptor&, const SoftmaxBackwardDescriptor&) = default;
};
struct SoftmaxBackwardArgs {
  const void* grad_y = nullptr;
  const void* y = nullptr;
  void* grad_x = nullptr;
};
using SoftmaxBackwardPlan = Plan<SoftmaxBackwardDescriptor, SoftmaxBackwardArgs>;

extern template class Plan<SoftmaxDescriptor, SoftmaxArgs>;
extern template class Plan<SoftmaxBackwardDescriptor, SoftmaxBackwardArgs>;

}  // namespace baracuda
