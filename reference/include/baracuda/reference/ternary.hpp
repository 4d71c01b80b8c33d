// baracuda::reference for the ternary group: TernaryPlan (clamp, fma, addcmul, addcdiv) and
// its backward, WherePlan and its backward, AffinePlan and FillPlan. Same conventions as
// elementwise.hpp: exact in double, naive in the kernel's compute precision, error scale
// per output; results in the output's logical row-major order.
#pragma once

#include <array>
#include <cstdint>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Scalar forms (C = float or double). ternary_value rounds like the kernels in C: fma once,
// addcmul as ((value * b) * c) + a, addcdiv as (value * (b / c)) + a; clamp as torch.clamp.
template <class C> C ternary_value(TernaryKind k, C a, C b, C c, C value);
// PyTorch's gradient of operand `which` (0 a, 1 b, 2 c) for grad_out g.
template <class C> C ternary_grad(TernaryKind k, int which, C g, C a, C b, C c, C value);
// Clamp on integers (exact).
std::int64_t clamp_int(std::int64_t x, std::int64_t lo, std::int64_t hi);

// Floating dtypes: exact in double, naive in the compute type. Integer clamp: exact.
Expected<Result> ternary(const TernaryDescriptor& d, const HostTensor& a, const HostTensor& b, const HostTensor& c);
struct TernaryBackwardResult {
  std::array<Result, 3> grad;  // empty when the gradient is not computed
};
// Gradients of broadcast operands are summed (double exact; naive: float terms summed in
// float in logical order, as the kernels' f32 accumulation).
Expected<TernaryBackwardResult> ternary_backward(const TernaryBackwardDescriptor& d, const HostTensor& grad_out,
                                                 const HostTensor& a, const HostTensor& b, const HostTensor& c);

// Exact (bit selection): out = cond ? a : b.
Expected<Result> where(const WhereDescriptor& d, const HostTensor& cond, const HostTensor& a, const HostTensor& b);
Expected<BackwardResult> where_backward(const WhereBackwardDescriptor& d, const HostTensor& cond, const HostTensor& grad_out);

// alpha * x + beta: floating exact in double, naive fma in the compute type; integers wrap.
Expected<Result> affine(const AffineDescriptor& d, const HostTensor& x);
// Every element: value converted to y's dtype (exact == naive).
Expected<Result> fill(const FillDescriptor& d);

}  // namespace baracuda::reference
