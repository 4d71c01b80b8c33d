// ALiBi (attention with linear biases, Press et al. 2022) as a separate op: the bias that
// SdpaDescriptor::alibi_slopes applies inside attention, for the unfused path.
//
//   y[b, h, i, j] = s[b, h, i, j] - slope[b, h] * |i + off - j|
// with off = Skv - Sq (CausalAlign::kBottomRight, flash-attn's convention) or 0 (kTopLeft);
// s, y are [B, H, Sq, Skv] (any strides; y may alias s exactly: in place); without s
// (rank 0) y is the bias alone. slopes are f32 [H] or [B, H] (any strides), on the device.
// The bias is computed in f32 (f64 for f64: the distance is exact below 2^24) and added to s
// in f32 (f64), rounded once to y's dtype. Dtypes f64, f32, f16, bf16 (s and y share one).
//
// Backward: grad_s = grad_y (a copy, nothing to do when grad_s is grad_y in place), and when
// grad_slopes is given, grad_slope[b?, h] = -sum over (b, i, j) of grad_y * |i + off - j|
// (the batch summed for [H] slopes), accumulated in f64 in a fixed order (chunk partials in
// the workspace, then added in order: same inputs, same bits; no atomics), stored as f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/attention.hpp"  // CausalAlign

namespace baracuda {

// The standard ALiBi slopes of n heads (HF build_alibi_tensor / the paper's reference code):
// n a power of two: slope_h = 2^(-8 (h + 1) / n); otherwise the slopes of the closest power of
// two p < n, followed by every other slope (the odd-numbered ones) of 2p, n - p of them.
// As f32 (the values HF computes in f32). n >= 1.
std::vector<float> alibi_slopes(std::int64_t num_heads);

struct AlibiDescriptor {
  TensorLayout s{};       // rank 0: y is the bias alone
  TensorLayout y{};       // [B, H, Sq, Skv]
  TensorLayout slopes{};  // f32 [H] or [B, H]
  CausalAlign align = CausalAlign::kBottomRight;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const AlibiDescriptor&, const AlibiDescriptor&) = default;
};
struct AlibiArgs {
  const void* s = nullptr;
  void* y = nullptr;
  const float* slopes = nullptr;
};
using AlibiPlan = Plan<AlibiDescriptor, AlibiArgs>;

struct AlibiBackwardDescriptor {
  TensorLayout grad_y{};       // [B, H, Sq, Skv]
  TensorLayout grad_s{};       // rank 0: not wanted; else grad_y's shape and dtype (may alias grad_y)
  TensorLayout grad_slopes{};  // rank 0: not wanted; else f32 [H] or [B, H] (the forward slopes' shape)
  CausalAlign align = CausalAlign::kBottomRight;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const AlibiBackwardDescriptor&, const AlibiBackwardDescriptor&) = default;
};
struct AlibiBackwardArgs {
  const void* grad_y = nullptr;
  void* grad_s = nullptr;
  float* grad_slopes = nullptr;
};
using AlibiBackwardPlan = Plan<AlibiBackwardDescriptor, AlibiBackwardArgs>;

extern template class Plan<AlibiDescriptor, AlibiArgs>;
extern template class Plan<AlibiBackwardDescriptor, AlibiBackwardArgs>;

}  // namespace baracuda
