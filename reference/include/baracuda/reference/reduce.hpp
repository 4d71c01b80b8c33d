// baracuda::reference for the reduction family (rules in baracuda/ops/reduce.hpp): exact in
// long double; naive in the compute type (f32 for f16/bf16/f32, double for f64, i64 for
// integers) summed sequentially, rounded to the output dtype. Results are in the output's
// logical (row-major) order. Error scales (Result::scale): sum / mean the sum of |terms|
// (/ n); prod n |y| (n roundings, each relative); var (|x| + |mean|)^2 summed / divisor, std
// that / (2 std); norm the sum of the |terms| it adds, carried through the root; logsumexp
// |y| + log2(n) + 4; amax / amin, arg, bool, count, integer sums are exact (scale 0).
#pragma once

#include "baracuda/ops/reduce.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

Expected<Result> reduce(const ReduceDescriptor& d, const HostTensor& x);
// grad_x from grad_y, x and y (y: the forward's output as the device stored it).
Expected<Result> reduce_backward(const ReduceBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& x,
                                 const HostTensor& y);
Expected<Result> arg_reduce(const ArgReduceDescriptor& d, const HostTensor& x);
Expected<Result> bool_reduce(const BoolReduceDescriptor& d, const HostTensor& x);
Expected<Result> count_reduce(const CountReduceDescriptor& d, const HostTensor& x);
Expected<Result> trace(const TraceDescriptor& d, const HostTensor& x);

}  // namespace baracuda::reference
