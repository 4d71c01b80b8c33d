// baracuda::reference for SoftmaxPlan / SoftmaxBackwardPlan (rules in baracuda/ops/softmax.hpp):
// exact in long double; naive in the compute type (f32 for f16/bf16/f32, double for f64)
// with the row sums taken sequentially, rounded to the output dtype. Results are in the
// output's logical (row-major) order. The error scale of an element (Result::scale) is the
// magnitude the compute-type rounding acts on: for softmax |y| (|x - m| + log2(len) + 4),
// for log_softmax |x - m| + |log s| + log2(len) + 4, and for the backward the terms of
// grad_x with the row sum weighted by log2(len) + 2 (a tree sum's rounding depth).
#pragma once

#include "baracuda/ops/softmax.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

Expected<Result> softmax(const SoftmaxDescriptor& d, const HostTensor& x);
Expected<Result> softmax_backward(const SoftmaxBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& y);

// The row view of a tensor along `axis` (normalised): element k of row r is at logical index
// ((r / inner) * len + k) * inner + r % inner.
struct AxisRows {
  std::int64_t rows = 0, len = 1, inner = 1;
  std::int64_t index(std::int64_t r, std::int64_t k) const { return ((r / inner) * len + k) * inner + r % inner; }
};
AxisRows axis_rows(const TensorLayout& t, int axis);

}  // namespace baracuda::reference
