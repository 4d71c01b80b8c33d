// baracuda::reference for SparsemaxPlan / SparsemaxBackwardPlan (rules in
// baracuda/ops/sparsemax.hpp): the sort-based threshold of Martins & Astudillo (sort
// d = x - max descending, k = the largest k with 1 + k d_(k) > d_(1) + ... + d_(k),
// tau = (d_(1) + ... + d_(k) - 1) / k), exact in long double and naive in the compute type,
// rounded to the output dtype. Error scale of an output: |d| + |tau| + (log2(len) + 2) *
// (sum over the support of |d| + 1) / |support| (the rounding of the support's sum spread
// over its size); backward: |grad_y| + (log2(len) + 2) * sum over the support of |grad_y| /
// |support|.
#pragma once

#include "baracuda/ops/sparsemax.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

Expected<Result> sparsemax(const SparsemaxDescriptor& d, const HostTensor& x);
Expected<Result> sparsemax_backward(const SparsemaxBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& y);

}  // namespace baracuda::reference
