// Layer normalization and RMS normalization over the last dims, forward (optionally fused
// with a residual add) and backward (torch.nn.functional.layer_norm / rms_norm and their
// autograd; the fused add is vLLM's fused_add_rms_norm shape).
//
// x is [rows..., normalized...]: the last `normalized_rank` dims (N elements) are normalized
// per row. Those dims must form one unit-stride run in every row operand (x, y, residual,
// residual_out, grad_y, grad_x); the kept dims may have any strides. weight / bias /
// grad_weight / grad_bias have the normalized shape, unit-stride, the dtype of x.
//
//   LayerNorm: mean = sum(h) / N, var = sum((h - mean)^2) / N (biased, as PyTorch),
//              rstd = 1 / sqrt(var + eps), y = (h - mean) * rstd * weight + bias
//   RMSNorm:   rstd = 1 / sqrt(sum(h^2) / N + eps), y = h * rstd * weight
// with h = x, or with add_residual h = round(x + residual) to x's dtype, stored to
// residual_out (exactly what an unfused add then norm computes). mean and rstd are saved
// (save_stats) as one value per row, row-major over the kept dims, in f32 (f64 for f64).
//
// Backward, given x (= h), the saved mean / rstd and weight:
//   xhat = (x - mean) * rstd (RMSNorm: x * rstd), wg = weight * grad_y
//   LayerNorm: grad_x = rstd * (wg - mean(wg) - xhat * mean(wg * xhat))
//   RMSNorm:   grad_x = rstd * (wg - xhat * mean(wg * xhat))
//   grad_weight = sum over rows of grad_y * xhat, grad_bias = sum over rows of grad_y,
// reduced deterministically: per-block partial sums in the workspace, then a second pass
// adds them in a fixed order (no atomics: the same inputs give the same bits).
// Dtypes f64, f32, f16, bf16 (f16 / bf16 / f32 computed in f32, f64 in f64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class NormKind : std::uint8_t { kLayerNorm, kRMSNorm };

// The fields both norms share (NormKind says which one; the plans below fix it).
struct NormDescriptor {
  NormKind kind = NormKind::kLayerNorm;
  TensorLayout x;
  TensorLayout y;              // x's shape and dtype
  int normalized_rank = 1;     // 1..rank of x
  bool has_weight = true;
  bool has_bias = true;        // LayerNorm only (RMSNorm refuses a bias)
  TensorLayout weight;         // the normalized shape (when has_weight)
  TensorLayout bias;           // the normalized shape (when has_bias)
  bool save_stats = true;      // write mean (LayerNorm) and rstd
  double eps = 1e-5;
  bool add_residual = false;   // h = x + residual; residual_out = h
  TensorLayout residual;       // x's shape (when add_residual)
  TensorLayout residual_out;   // x's shape (when add_residual); may be `residual` in place
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const NormDescriptor&, const NormDescriptor&) = default;
};
struct NormArgs {
  const void* x = nullptr;
  const void* residual = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  void* residual_out = nullptr;
  void* mean = nullptr;  // rows values (LayerNorm, save_stats)
  void* rstd = nullptr;  // rows values (save_stats)
};

struct NormBackwardDescriptor {
  NormKind kind = NormKind::kLayerNorm;
  TensorLayout grad_y;
  TensorLayout x;              // the forward's normalized input h
  TensorLayout grad_x;         // x's shape
  int normalized_rank = 1;
  bool has_weight = true;      // weight is read and grad_weight written
  bool has_bias = true;        // grad_bias written (LayerNorm only)
  TensorLayout weight;
  TensorLayout grad_weight;
  TensorLayout grad_bias;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const NormBackwardDescriptor&, const NormBackwardDescriptor&) = default;
};
struct NormBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* mean = nullptr;  // LayerNorm: saved by the forward
  const void* rstd = nullptr;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
};

// The plans: one descriptor layout, kind fixed by the type (select refuses the other kind).
struct LayerNormDescriptor : NormDescriptor {
  LayerNormDescriptor() { kind = NormKind::kLayerNorm; }
};
struct RMSNormDescriptor : NormDescriptor {
  RMSNormDescriptor() {
    kind = NormKind::kRMSNorm;
    has_bias = false;
    eps = 1e-6;
  }
};
struct LayerNormBackwardDescriptor : NormBackwardDescriptor {
  LayerNormBackwardDescriptor() { kind = NormKind::kLayerNorm; }
};
struct RMSNormBackwardDescriptor : NormBackwardDescriptor {
  RMSNormBackwardDescriptor() {
    kind = NormKind::kRMSNorm;
    has_bias = false;
  }
};
using LayerNormArgs = NormArgs;
using RMSNormArgs = NormArgs;
using LayerNormBackwardArgs = NormBackwardArgs;
using RMSNormBackwardArgs = NormBackwardArgs;

using LayerNormPlan = Plan<LayerNormDescriptor, NormArgs>;
using RMSNormPlan = Plan<RMSNormDescriptor, NormArgs>;
using LayerNormBackwardPlan = Plan<LayerNormBackwardDescriptor, NormBackwardArgs>;
using RMSNormBackwardPlan = Plan<RMSNormBackwardDescriptor, NormBackwardArgs>;

extern template class Plan<LayerNormDescriptor, NormArgs>;
extern template class Plan<RMSNormDescriptor, NormArgs>;
extern template class Plan<LayerNormBackwardDescriptor, NormBackwardArgs>;
extern template class Plan<RMSNormBackwardDescriptor, NormBackwardArgs>;

}  // namespace baracuda
