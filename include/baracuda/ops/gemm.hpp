// GEMM: D = epilogue(alpha * A * B + beta * C) on cuBLASLt, single and strided-batched.
//
// Shapes: A is M x K, B is K x N, C and D are M x N, as logical matrices. Each operand is a
// MatrixLayout: row- or column-major with any leading dimension >= its inner extent (padded
// rows / columns). A transposed operand is expressed by its order: the K x M row-major buffer
// of a weight used as W^T is the M x K column-major layout with the same ld. The four layout
// classes of the seed (RRR, RCR, CRR, CCR: orders of A, B, D) are therefore just orders.
// C must have D's order (cuBLASLt cannot transpose C).
//
// Dtypes: A, B, C, D share one of f64 (f64 compute), f32 (f32 compute, strict IEEE; TF32 only
// through the separate SKU "cublaslt_tf32", chosen only when PlanPreference::math.allow_tf32),
// f16 and bf16 (f32 accumulation, alpha / beta in f32, one rounding to the output dtype).
//
// Epilogue (cuBLASLt's native ones): an optional bias (one per column of D: bias[j], j < N,
// as torch.nn.Linear; D row-major), then an activation (relu, or gelu with the tanh
// approximation), with an optional auxiliary output for the activation's backward (relu: a
// bit mask, bit (i, j) at bit i * aux.ld + j set where the pre-activation > 0; gelu_tanh,
// gelu_erf, silu: the pre-activation itself, D's dtype). Or, instead, a bias gradient written beside the
// product: kA gives bias_grad[i] = sum_k A[i, k] (length M), kB bias_grad[j] = sum_k B[k, j]
// (length N), in D's dtype. Epilogues need f32, f16 or bf16.
//
// Activation backward (epilogue.activation_grad; cuBLASLt's DRELU, DGELU, DRELU_BGRAD,
// DGELU_BGRAD): D = (alpha A B) .* act'(aux), aux being what the forward epilogue saved (the
// relu bit mask, or the pre-activation for the gelus and silu) and now an input, with
// optionally bias_grad[j] = sum_i D[i, j] (GemmBiasGrad::kD, length N). This is the GEMM of an
// MLP backward computing dX_pre = (dY W) .* act'(X_pre) and the bias gradient of the layer that
// produced X_pre: A = dY (M x N2), B = W ([N2, H] row-major as N2 x H), D = aux = M x H.
// GemmEpilogue::activation_backward(act, with_bias_grad) builds the epilogue.
//
// Row-major D is computed as the column-major product D^T = B^T A^T (the usual transpose
// trick; docs/gemm.md), so no operand is ever copied or transposed in memory.
//
// select() queries cuBLASLt's heuristic once (capped at min(PlanPreference::max_workspace_bytes,
// 32 MiB) of workspace, with the operands' promised alignments) and caches the algorithm;
// workspace_size() is what that algorithm needs; run() sets up descriptors on the stack and
// calls cublasLtMatmul: no allocation, no synchronization, graph-capturable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// relu and gelu_tanh are cuBLASLt's own epilogues; gelu_erf (0.5 x (1 + erf(x / sqrt 2)),
// PyTorch's exact gelu) and silu (x sigmoid(x)) are composites: cuBLASLt (with its bias
// epilogue) then one elementwise pass of ours over D (SKU impl "cublaslt_act").
enum class GemmActivation : std::uint8_t { kNone, kRelu, kGeluTanh, kGeluErf, kSilu };
// kA, kB: sums of an operand (standalone bias-gradient epilogues); kD: column sums of D after
// the activation gradient (only with activation_grad).
enum class GemmBiasGrad : std::uint8_t { kNone, kA, kB, kD };
const char* gemm_activation_name(GemmActivation a) noexcept;

struct GemmEpilogue {
  GemmActivation activation = GemmActivation::kNone;
  bool bias = false;  // add bias[j] (length N) before the activation
  bool aux = false;   // write the activation's backward input to aux (needs an activation)
  GemmBiasGrad bias_grad = GemmBiasGrad::kNone;  // kA / kB: not with bias / activation / aux
  // Backward of `activation`: D = (alpha A B) .* act'(aux); needs aux = true (aux is then an
  // input: the forward's relu mask or pre-activation), no bias, no C; bias_grad kD or kNone.
  bool activation_grad = false;
  std::string to_string() const;                 // "bias+gelu_tanh+aux", "none", "bgrad_a", "drelu+bgrad_d"
  // {activation = a, aux = true, activation_grad = true, bias_grad = kD when with_bias_grad}
  static GemmEpilogue activation_backward(GemmActivation a, bool with_bias_grad) noexcept {
    GemmEpilogue e;
    e.activation = a;
    e.aux = true;
    e.activation_grad = true;
    e.bias_grad = with_bias_grad ? GemmBiasGrad::kD : GemmBiasGrad::kNone;
    return e;
  }
  friend bool operator==(const GemmEpilogue&, const GemmEpilogue&) = default;
};

struct GemmDescriptor {
  MatrixLayout a;  // M x K
  MatrixLayout b;  // K x N
  MatrixLayout c;  // M x N, read only when with_c (D's order)
  MatrixLayout d;  // M x N
  bool with_c = false;  // D = alpha A B + beta C (else beta is ignored)
  GemmEpilogue epilogue;
  TensorLayout bias;       // [N], D's dtype, unit stride: when epilogue.bias
  TensorLayout bias_grad;  // [M] (kA) or [N] (kB, kD), D's dtype, unit stride: output
  // M x N in D's order: dtype bit (relu: bit (i, j) at i * ld + j for row-major D, j * ld + i
  // for column-major; ld a multiple of 128 bits) or D's dtype (the gelus, silu: gelu_tanh's ld
  // a multiple of 8 elements, cuBLASLt's rules). Output of the forward, input of activation_grad.
  MatrixLayout aux;

  std::int64_t m() const noexcept { return d.rows; }
  std::int64_t n() const noexcept { return d.cols; }
  std::int64_t k() const noexcept { return a.cols; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GemmDescriptor&, const GemmDescriptor&) = default;
};

// Pointers to element (0, 0) of each operand (of batch 0 for the batched plan); alpha and
// beta are host values (f64 plans use them as is, the others in f32).
struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // when with_c (may equal d when c and d have the same layout)
  void* d = nullptr;
  const void* bias = nullptr;  // when epilogue.bias
  void* bias_grad = nullptr;   // when epilogue.bias_grad != kNone
  void* aux = nullptr;         // when epilogue.aux (read, never written, under activation_grad)
  double alpha = 1.0;
  double beta = 0.0;
};
using GemmPlan = Plan<GemmDescriptor, GemmArgs>;

// `batch` independent GEMMs of one shape; operand i of batch p starts stride_x * p elements
// (bits for a relu mask) after operand i of batch 0. A stride of 0 broadcasts an input
// (A, B, C, bias) to every batch; outputs (D, aux, bias_grad) need strides that keep the
// batches apart.
struct BatchedGemmDescriptor {
  GemmDescriptor gemm;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0;
  std::int64_t stride_b = 0;
  std::int64_t stride_c = 0;
  std::int64_t stride_d = 0;
  std::int64_t stride_bias = 0;       // bias or bias_grad
  std::int64_t stride_aux = 0;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BatchedGemmDescriptor&, const BatchedGemmDescriptor&) = default;
};
using BatchedGemmPlan = Plan<BatchedGemmDescriptor, GemmArgs>;

// `batch` copies of `one`, `stride` elements apart, as one layout of rank one.rank + 1 (what
// a batched operand spans: the run-time overlap checks and the reference use it).
TensorLayout gemm_batched_layout(const TensorLayout& one, std::int64_t batch, std::int64_t stride);

// The backward of D = alpha * A B (+ bias[j]) from one descriptor, as two GemmPlans:
//   grad_a    = alpha * grad_d B^T     (M x K: GEMM of grad_d and B read transposed)
//   grad_b    = alpha * A^T grad_d     (K x N: GEMM of A read transposed and grad_d)
//   grad_bias = sum_i grad_d[i, j]     ([N]: the bias-gradient epilogue of the grad_b GEMM,
//                                       so it needs compute_grad_b, and alpha = 1 at run)
// Transposed reads are layout flips (a row-major buffer read as its column-major transpose),
// never copies; any orders and lds of the forward operands and of the gradients work.
struct GemmBackwardDescriptor {
  MatrixLayout a;          // forward A, M x K
  MatrixLayout b;          // forward B, K x N
  MatrixLayout grad_d;     // M x N
  MatrixLayout grad_a;     // M x K, when compute_grad_a
  MatrixLayout grad_b;     // K x N, when compute_grad_b
  TensorLayout grad_bias;  // [N], when compute_grad_bias
  bool compute_grad_a = true;
  bool compute_grad_b = true;
  bool compute_grad_bias = false;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GemmBackwardDescriptor&, const GemmBackwardDescriptor&) = default;
};
struct GemmBackwardArgs {
  const void* a = nullptr;  // needed for grad_b
  const void* b = nullptr;  // needed for grad_a
  const void* grad_d = nullptr;
  void* grad_a = nullptr;
  void* grad_b = nullptr;
  void* grad_bias = nullptr;
  double alpha = 1.0;
};
using GemmBackwardPlan = Plan<GemmBackwardDescriptor, GemmBackwardArgs>;
// m read as its transpose: cols x rows, same ld and alignment, the other order.
MatrixLayout gemm_transposed(const MatrixLayout& m);
// The backward's two GEMMs as forward descriptors (the plan and the reference both use them):
// grad_a = grad_d B^T, and grad_b = A^T grad_d with the bias-gradient epilogue kB when
// compute_grad_bias.
GemmDescriptor gemm_backward_grad_a(const GemmBackwardDescriptor& d);
GemmDescriptor gemm_backward_grad_b(const GemmBackwardDescriptor& d);

extern template class Plan<GemmDescriptor, GemmArgs>;
extern template class Plan<BatchedGemmDescriptor, GemmArgs>;
extern template class Plan<GemmBackwardDescriptor, GemmBackwardArgs>;

}  // namespace baracuda
