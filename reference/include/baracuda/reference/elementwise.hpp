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

#include <utility>
#include <vector>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Scalar math, templated on the evaluation type (float or double).
template <class C> C unary_value(UnaryKind k, C x);
template <class C> C unary_derivative(UnaryKind k, C x);  // f'(x)
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
};

// Error scales of the map kinds (see Result::scale).
double unary_scale(UnaryKind k, double x);
double unary_grad_scale(UnaryKind k, double g, double x);
double binary_scale(BinaryKind k, double a, double b);

// v rounded to dtype t (through f32 for the narrow formats, as the kernels store).
double round_to(DType t, double v, Fp8Overflow mode = Fp8Overflow::kPyTorch);

Expected<Result> unary(const UnaryDescriptor& d, const HostTensor& x);
Expected<Result> unary_backward(const UnaryBackwardDescriptor& d, const HostTensor& grad_out, const HostTensor& x);
Expected<Result> binary(const BinaryDescriptor& d, const HostTensor& a, const HostTensor& b);
struct BackwardResult {
  Result grad_a;  // empty when !compute_grad_a
  Result grad_b;
};
// Broadcast gradients are summed in double (exact) and in the compute type in logical
// order (naive).
Expected<BackwardResult> binary_backward(const BinaryBackwardDescriptor& d, const HostTensor& grad_out,
                                         const HostTensor& a, const HostTensor& b);
// Casts are exact: one rounding from the input value (exact == naive).
Expected<Result> cast(const CastDescriptor& d, const HostTensor& x);

}  // namespace baracuda::reference
