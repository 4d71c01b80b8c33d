// baracuda::reference for the elementwise family: the CPU oracle every GPU test and
// `baracuda check` compare with.
//
// Each op is evaluated twice from the same host buffers and descriptor:
//   exact: in double, with no rounding of the result (what the math says), and
//   naive: the same formula in the kernel's compute precision (float for f32/f16/bf16,
//          double for f64), rounded to the output dtype - what a plain implementation
//          gets, used to scale tolerances (docs/semantics.md, "Tolerances").
// Results come back as doubles in the output's logical row-major order.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Scalar math, templated on the evaluation type (float or double). The unary kinds follow
// docs/semantics.md row by row; p holds the parametric kinds' scalars (UnaryParams; pass
// default_unary_params(k, dtype) for PyTorch's defaults). Kinds without a floating form
// (bitwise_not, popcount, clz) give NaN; predicates give 0 or 1.
template <class C> C unary_value(UnaryKind k, C x, const UnaryParams& p);
// PyTorch's backward formula: grad_in for grad_out g at the forward input x (0 for the
// piecewise-constant kinds, NaN for the kinds that are not differentiable).
template <class C> C unary_grad(UnaryKind k, C g, C x, const UnaryParams& p);
// The integer kinds (neg, abs, sign, bitwise_not, popcount, clz, logical_not) on i64, i32,
// i16, i8, u8 (and u32): two's complement, wrapping at t's width (abs(i8 -128) = -128,
// neg(u8 1) = 255). On bool (x is 0 or 1) bitwise_not and logical_not give !x, the others
// work on the 0/1 value and give a bool. Other kinds give 0.
std::int64_t unary_int_value(UnaryKind k, std::int64_t x, DType t);
// Special functions the standard library lacks (digamma(+-0) = -inf, poles NaN; trigamma's
// poles +inf; erfinv(+-1) = +-inf). In double: erfinv and trigamma within ~1 ulp, digamma
// within ~3 ulp of max(|digamma|, 1) (its recurrence cancels near the roots).
template <class C> C digamma(C x);
template <class C> C trigamma(C x);  // digamma'
template <class C> C erfinv(C x);
// Binary kinds on floating values (docs/semantics.md "Binary kinds"): NaN for the kinds
// without a floating form (bitwise, shifts); logical kinds give 0 or 1; nextafter steps in
// C's format (binary() steps f16 / bf16 tensors in theirs).
template <class C> C binary_value(BinaryKind k, C a, C b);
template <class C> std::pair<C, C> binary_partials(BinaryKind k, C a, C b);  // d/da, d/db (times 1)
template <class C> C binary_grad_a(BinaryKind k, C g, C a, C b);  // torch's formula for g * d/da
template <class C> C binary_grad_b(BinaryKind k, C g, C a, C b);

struct Result {
  std::vector<double> exact;
  std::vector<double> naive;
  // The error scale per output: the magnitude of the terms it is computed from (sum of
  // |terms| for reductions). Rounding each term in the compute type moves the result by
  // about eps * scale, which is what the tolerance allows (compare.hpp).
  std::vector<double> scale;
  // How the naive twin's error enters compare()'s bound: naive_factor x |naive - exact| of the
  // element (default), or, with naive_tensor_max, naive_factor x the largest |naive - exact|
  // over the tensor (flash-attention's rule: max error <= k x the naive's max error; SDPA).
  double naive_factor = 4;
  bool naive_tensor_max = false;
};

// Error scales of the map kinds (see Result::scale): finite, 0 where x (or g) is not finite
// and for the exact kinds (predicates, integers, piecewise-constant gradients).
double unary_scale(UnaryKind k, double x, const UnaryParams& p);
double unary_grad_scale(UnaryKind k, double g, double x, const UnaryParams& p);
double binary_scale(BinaryKind k, double a, double b);
double binary_grad_scale(BinaryKind k, int which, double g, double a, double b);  // |term|, 0 where not finite

// v rounded to dtype t (through f32 for the narrow formats, as the kernels store).
double round_to(DType t, double v, Fp8Overflow mode = Fp8Overflow::kPyTorch);

// A Result of n zeros (exact, naive and scale), for oracles that fill it element by element.
Result zero_result(std::int64_t n);

// Unary maps of every kind. Floating inputs: exact in double, naive in the compute type;
// integer and bool inputs: in integers (exact == naive, i64 read exactly). The plain
// descriptors use default_unary_params(d.kind, d.x.dtype). A kind that does not accept x's
// dtype (or is not differentiable, for the backward) is a kInvalidArgument error.
Expected<Result> unary(const UnaryDescriptor& d, const HostTensor& x);
Expected<Result> unary(const UnaryParamDescriptor& d, const HostTensor& x);
Expected<Result> unary_backward(const UnaryBackwardDescriptor& d, const HostTensor& grad_out, const HostTensor& x);
Expected<Result> unary_backward(const UnaryParamBackwardDescriptor& d, const HostTensor& grad_out,
                                const HostTensor& x);
// Every kind on every dtype it accepts (BinaryKindInfo): floating kinds exact in double and
// naive in the compute type; integer and bool kinds in integers (exact == naive).
Expected<Result> binary(const BinaryDescriptor& d, const HostTensor& a, const HostTensor& b);
struct BackwardResult {
  Result grad_a;  // empty when !compute_grad_a
  Result grad_b;
};
// Broadcast gradients are summed in double (exact) and in the compute type in logical
// order (naive).
Expected<BackwardResult> binary_backward(const BinaryBackwardDescriptor& d, const HostTensor& grad_out,
                                         const HostTensor& a, const HostTensor& b);
// Casts are exact (exact == naive): cast.hpp's rules; values as doubles (i64 outputs beyond
// 2^53 rounded: bit-exact checks use cast_exact).
Expected<Result> cast(const CastDescriptor& d, const HostTensor& x);

}  // namespace baracuda::reference

#include "baracuda/reference/binary.hpp"  // integer kinds, comparisons, lerp / alpha
