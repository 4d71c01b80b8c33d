// Kernel launchers of the ternary group (TernaryPlan, WherePlan, AffinePlan, FillPlan and
// the backwards): non-template entry points defined by the generated instance files of
// inst/ternary_*.inl and inst/select.inl (one dtype, or one element size, each).
#pragma once

#include <cstdint>
#include <span>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "elementwise/map_params.hpp"

namespace baracuda::elementwise {

// Ternary forward (floating dtypes: every kind; integer dtypes: clamp) and affine.
template <DType D> Status launch_ternary_fwd(TernaryKind kind, double value, const MapParams& p, cudaStream_t s);
template <DType D> Status launch_affine(double alpha, double beta, const MapParams& p, cudaStream_t s);
// Gradient of operand `which` (0 a, 1 b, 2 c) over the map (grad_out, a, b, c); to_compute:
// the output is the compute type (f32 for f16/bf16 inputs) instead of D (floating D only).
template <DType D>
Status launch_ternary_grad(TernaryKind kind, int which, double value, bool to_compute, const MapParams& p, cudaStream_t s);
// 2 or 3 gradients in one contiguous map: output j is the gradient of operand which[j].
template <DType D>
Status launch_ternary_grads(TernaryKind kind, std::span<const int> which, double value, const MapParams& p, cudaStream_t s);
// Bit maps by element size (1, 2, 4, 8 bytes): where (mask cond, a, b), where's gradient
// (mask cond, g; which 0: grad_a, 1: grad_b) and fill with the element's bits.
template <int Bytes> Status launch_where(const MapParams& p, cudaStream_t s);
template <int Bytes> Status launch_where_grad(int which, const MapParams& p, cudaStream_t s);
// Both of where's gradients in one contiguous map (out 0: grad_a, out 1: grad_b).
template <int Bytes> Status launch_where_grads(const MapParams& p, cudaStream_t s);
template <int Bytes> Status launch_fill(std::uint64_t bits, const MapParams& p, cudaStream_t s);

#define BARACUDA_TERNARY_FLOAT_SPECS(D)                                                                              \
  template <> Status launch_ternary_fwd<DType::D>(TernaryKind, double, const MapParams&, cudaStream_t);             \
  template <> Status launch_affine<DType::D>(double, double, const MapParams&, cudaStream_t);                       \
  template <> Status launch_ternary_grad<DType::D>(TernaryKind, int, double, bool, const MapParams&, cudaStream_t); \
  template <> Status launch_ternary_grads<DType::D>(TernaryKind, std::span<const int>, double, const MapParams&, cudaStream_t);
#define BARACUDA_TERNARY_INT_SPECS(D)                                                                  \
  template <> Status launch_ternary_fwd<DType::D>(TernaryKind, double, const MapParams&, cudaStream_t); \
  template <> Status launch_affine<DType::D>(double, double, const MapParams&, cudaStream_t);
#define BARACUDA_SELECT_SPECS(B)                                                   \
  template <> Status launch_where<B>(const MapParams&, cudaStream_t);              \
  template <> Status launch_where_grad<B>(int, const MapParams&, cudaStream_t);    \
  template <> Status launch_where_grads<B>(const MapParams&, cudaStream_t);        \
  template <> Status launch_fill<B>(std::uint64_t, const MapParams&, cudaStream_t);
BARACUDA_TERNARY_FLOAT_SPECS(kF64)
BARACUDA_TERNARY_FLOAT_SPECS(kF32)
BARACUDA_TERNARY_FLOAT_SPECS(kF16)
BARACUDA_TERNARY_FLOAT_SPECS(kBF16)
BARACUDA_TERNARY_INT_SPECS(kI64)
BARACUDA_TERNARY_INT_SPECS(kI32)
BARACUDA_TERNARY_INT_SPECS(kI16)
BARACUDA_TERNARY_INT_SPECS(kI8)
BARACUDA_TERNARY_INT_SPECS(kU8)
BARACUDA_SELECT_SPECS(1)
BARACUDA_SELECT_SPECS(2)
BARACUDA_SELECT_SPECS(4)
BARACUDA_SELECT_SPECS(8)
#undef BARACUDA_TERNARY_FLOAT_SPECS
#undef BARACUDA_TERNARY_INT_SPECS
#undef BARACUDA_SELECT_SPECS

// Runtime-dtype dispatchers (launch_ternary.cpp); kNotBuilt for a dtype without kernels.
Status launch_ternary_fwd(DType d, TernaryKind kind, double value, const MapParams& p, cudaStream_t s);
Status launch_affine(DType d, double alpha, double beta, const MapParams& p, cudaStream_t s);
Status launch_ternary_grad(DType d, TernaryKind kind, int which, double value, bool to_compute, const MapParams& p,
                           cudaStream_t s);
Status launch_ternary_grads(DType d, TernaryKind kind, std::span<const int> which, double value, const MapParams& p,
                            cudaStream_t s);
Status launch_where(DType d, const MapParams& p, cudaStream_t s);  // d: a's dtype
Status launch_where_grad(DType d, int which, const MapParams& p, cudaStream_t s);
Status launch_where_grads(DType d, const MapParams& p, cudaStream_t s);
Status launch_fill(DType d, std::uint64_t bits, const MapParams& p, cudaStream_t s);

}  // namespace baracuda::elementwise
