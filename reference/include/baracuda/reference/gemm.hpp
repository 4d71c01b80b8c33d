// baracuda::reference for GemmPlan / BatchedGemmPlan (rules in baracuda/ops/gemm.hpp).
//
// Exact: every product and sum in double over the stored (already rounded) inputs, the
// epilogue in double. Each output also gets an error bound, derived (never tuned) from K and
// the unit roundoff of the accumulation and output dtypes (docs/gemm.md):
//   pre-activation  |err| <= g * S,  g = K' u / (1 - K' u) + t,  K' = K + 3,
//                   S = |alpha| sum_k |a_ik b_kj| + |beta c_ij| + |bias_j|,
//                   u = 2^-53 (f64) or 2^-24 (f32 accumulation), t = 2^-10 with TF32 inputs
//                   (both factors rounded to 10-bit mantissas), else 0;
//   relu            the same (1-Lipschitz);
//   gelu_tanh       1.13 * g * S + 2^-11 |pre| (|gelu'| <= 1.13; tanh evaluated in f32,
//                   possibly with the hardware tanh.approx, relative error < 2^-10.99);
//   gelu_erf, silu  1.13 * (pre bound + u_out |pre|) + 2^-21 |pre| (composite: the
//                   pre-activation is stored in D's dtype, then evaluated in f32);
//   stored output   + u_out |exact| (round to nearest) + the smallest subnormal of the dtype;
//   bias gradient   g_K * sum_k |a_ik| (or |b_kj|), then the same output rounding.
//   activation backward (activation_grad: D = pre .* act'(aux), pre = alpha A B rounded to D's
//                   dtype first: pre bound + u_out |pre|): relu selects exactly; otherwise
//                   |act'(x)| * that + e(x) |pre| with e the f32 evaluation bound of act'
//                   (gelu_tanh: 2^-11 (0.5 + k |x| (1 + 3 c x^2)) + 2^-21 allowing the hardware
//                   tanh; gelu_erf, silu: 2^-21 (1 + |x|)); its bias gradient (kD, column sums
//                   of D): the sum of the elements' bounds + g_M(2^-24) sum |d_ij| + rounding.
// The relu mask is checked where |pre| exceeds its bound (elsewhere either bit is right).
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/gemm_grouped.hpp"
#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Row-major M x N per batch (batch-major), or [batch, len] for the bias gradient.
struct GemmOracle {
  std::int64_t batch = 1, m = 0, n = 0;
  std::vector<double> d, d_bound;      // D after the epilogue
  std::vector<double> pre, pre_bound;  // alpha A B + beta C + bias, before the activation
  std::vector<double> bias_grad, bias_grad_bound;
};

// The host layout of `batch` copies of m, `stride` elements apart ([batch, rows, cols]).
TensorLayout batched_layout(const MatrixLayout& m, std::int64_t batch, std::int64_t stride);
TensorLayout batched_layout(const TensorLayout& v, std::int64_t batch, std::int64_t stride);

// a, b, c, bias: host tensors with batched_layout(...) of the descriptor's operands (c and
// bias ignored unless used). `tf32`: the plan multiplies f32 in TF32 (widens the bound).
// aux: the activation backward's input (epilogue.activation_grad; batched_layout of g.aux,
// the relu mask read bit by bit at stride_aux * p + its element offset).
Expected<GemmOracle> batched_gemm(const BatchedGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                  const HostTensor* c, const HostTensor* bias, double alpha, double beta, bool tf32,
                                  const HostTensor* aux = nullptr);
Expected<GemmOracle> gemm(const GemmDescriptor& d, const HostTensor& a, const HostTensor& b, const HostTensor* c,
                          const HostTensor* bias, double alpha, double beta, bool tf32, const HostTensor* aux = nullptr);

// The backward (GemmBackwardPlan): grad_a = alpha grad_d B^T, grad_b = alpha A^T grad_d, each
// as a forward oracle over B and A read transposed; grad_bias = column sums of grad_d (the
// grad_b oracle's bias_grad). a, b, grad_d: host tensors of the descriptor's layouts.
struct GemmBackwardOracle {
  GemmOracle grad_a, grad_b;  // grad_b.bias_grad holds grad_bias
};
Expected<GemmBackwardOracle> gemm_backward(const GemmBackwardDescriptor& d, const HostTensor& a, const HostTensor& b,
                                           const HostTensor& grad_d, double alpha);

// Device results (host copies, batched_layout of the outputs) against the oracle: every
// element within its bound, NaN never passes, plus the zero-trust rule of compare.hpp.
Comparison compare_gemm_d(const HostTensor& d, const GemmOracle& o);
Comparison compare_gemm_aux_pre(const HostTensor& aux, const GemmOracle& o);  // gelu: the pre-activation
Comparison compare_gemm_relu_mask(const HostTensor& aux, const GemmOracle& o, std::int64_t ld_bits,
                                  std::int64_t stride_bits, bool row_major);
Comparison compare_gemm_bias_grad(const HostTensor& bias_grad, const GemmOracle& o);

// GroupedGemmPlan: every group's oracle (gemm() of grouped_gemm_group) stacked as one
// sum(M_g) x N result (batch 1), same bounds; a is sum(M_g) x K, b is G x K x N as packed.
Expected<GemmOracle> grouped_gemm(const GroupedGemmDescriptor& d, const HostTensor& a, const HostTensor& b, double alpha);

}  // namespace baracuda::reference
