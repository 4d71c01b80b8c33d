// baracuda::reference for the binary plans beyond the floating BinaryKinds: the integer
// kinds, the comparisons (BinaryCmpPlan) and lerp / add / sub with alpha (BinaryParamPlan).
// Conventions as elementwise.hpp (exact in double, naive in the compute type, scale).
#pragma once

#include <cstdint>

#include "baracuda/ops/elementwise_binary.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Integer and bool kinds on values of dtype t (i64, i32, i16, i8, u8, bool): two's
// complement, wrapping at t's width; division and remainder by 0 give 0; MIN / -1 wraps
// to MIN (remainder 0); shifts as torch (left by < 0 or >= width: 0; right: sign fill).
// Logical kinds give 0 or 1 on any dtype.
std::int64_t binary_int_value(BinaryKind k, std::int64_t a, std::int64_t b, DType t);
// nextafter(a, b) in the format of t (f64, f32, f16, bf16).
double nextafter_in(DType t, double a, double b);

// Where random floating inputs of each kind exercise it (the tests and `baracuda check`
// add +-0, +-inf, NaN, subnormal, huge and tiny values on top). The backward ranges keep
// the formulas tame (no division by values near 0 for div, fmod and remainder; positive
// bases for pow and xlogy).
struct BinaryRanges {
  double a_lo, a_hi, b_lo, b_hi;
};
BinaryRanges binary_input_ranges(BinaryKind k, bool backward);

// The comparisons in C (float, or double for f64 and the integer dtypes): 0 or 1. isclose
// is torch.isclose with the tolerance atol + rtol * |b| as one fma in C.
template <class C> bool binary_cmp_value(BinaryCmpKind k, C a, C b, double rtol, double atol, bool equal_nan);
Expected<Result> binary_cmp(const BinaryCmpDescriptor& d, const HostTensor& a, const HostTensor& b);

// lerp(a, b, w) = |w| < 0.5 ? a + w (b - a) : b - (b - a)(1 - w)
template <class C> C lerp_value(C a, C b, C w);
// `weight` is read only for lerp_tensor (pass any tensor otherwise).
Expected<Result> binary_param(const BinaryParamDescriptor& d, const HostTensor& a, const HostTensor& b,
                              const HostTensor& weight);
struct ParamBackwardResult {
  Result grad_a;       // empty when not computed
  Result grad_b;
  Result grad_weight;  // lerp_tensor only
};
// Every gradient in grad_out's shape (no reduction over broadcast dims).
Expected<ParamBackwardResult> binary_param_backward(const BinaryParamBackwardDescriptor& d, const HostTensor& grad_out,
                                                    const HostTensor& a, const HostTensor& b, const HostTensor& weight);

}  // namespace baracuda::reference
