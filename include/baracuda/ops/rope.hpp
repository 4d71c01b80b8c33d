// Rotary position embedding (RoPE), forward and backward: HF transformers' apply_rotary_pos_emb,
// vLLM's rotary_embedding, flash-attn's apply_rotary_emb.
//
// x is rank 3 or 4 with the head dim last (any strides); options.seq_axis names the sequence
// axis: [B, S, H, D] (flash-attn / vLLM) has seq_axis 1, [B, H, S, D] (HF) seq_axis 2, the
// packed tokens [T, H, D] seq_axis 0. The batch axis is axis 0 unless the sequence is; every
// other axis except the last is the head axis. Pairs (x_a, x_b) of the first rotary_dim
// elements (R = rotary_dim, even, <= D; 0 means D) rotate by the angle of their position:
//   neox (rotate_half, HF / vLLM neox):   pair i = (i, i + R/2),   i < R/2
//   interleaved (GPT-J, flash-attn interleaved): pair i = (2i, 2i + 1)
//   y_a = x_a cos(t) - x_b sin(t),   y_b = x_b cos(t) + x_a sin(t),   t = pos * inv_freq[i]
// (times the attention factor, YaRN only) and elements R .. D-1 pass through unchanged.
// The backward rotates by -t: grad_x = R(-t) grad_y (the transpose; same options).
//
// Positions: position_ids (i32 or i64, [B, S] or [S], any strides) when given, else
// position_offset + s. cos / sin: caller caches (f32 or x's dtype, [max_pos, R/2], any strides:
// HF's [max_pos, R] cache is the view of its first R/2 columns, vLLM's cos_sin_cache the two
// column halves) when given, else computed in the kernel from inv_freq (rope_inv_freq below,
// HF's formulas evaluated in double on the host at select, rounded to f32, f64 for f64 x) as
// t = float(pos) * inv_freq[i] in f32 (one rounding, as HF's f32 position x inv_freq product;
// exact positions up to 2^24) with accurate sincosf (f64: sincos). A position outside
// [0, max_pos) of a cache gives NaN in that row (never an out-of-bounds read); without
// position_ids, position_offset + S <= max_pos is checked at select.
//
// Arithmetic in f32 (f64 for f64), one rounding to y's dtype. y may alias x exactly (in place);
// any other overlap is refused. x2 / y2 (optional, rank 0 when absent) rotate a second tensor
// with the same positions in the same launch (q and k: x2 may have a different head count,
// e.g. Hkv; same rank, seq_axis, batch, sequence and head dim as x). Dtypes f64, f32, f16, bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class RopeStyle : std::uint8_t { kNeox, kInterleaved };
// How inv_freq is derived from theta (HF transformers' rope_type):
//   kNone    inv_freq[i] = theta^(-2i/R)                          ("default")
//   kLinear  positions / factor, i.e. inv_freq / factor            ("linear")
//   kNtk     theta * factor^(R / (R - 2)) as the base             (static NTK-aware)
//   kYarn    HF _compute_yarn_parameters (truncate = true): interpolation inv_freq / factor and
//            extrapolation inv_freq blended by the linear ramp between the correction dims of
//            beta_fast and beta_slow at original_max_position; cos / sin times the attention
//            factor (attention_factor, or 0.1 ln(factor) + 1 when it is 0 and factor > 1)
//   kLlama3  HF _compute_llama3_parameters (factor, low_freq_factor, high_freq_factor,
//            original_max_position)
enum class RopeScaling : std::uint8_t { kNone, kLinear, kNtk, kYarn, kLlama3 };
const char* rope_style_name(RopeStyle s) noexcept;      // "neox", "interleaved"
const char* rope_scaling_name(RopeScaling s) noexcept;  // "none", "linear", "ntk", "yarn", "llama3"

struct RopeOptions {
  RopeStyle style = RopeStyle::kNeox;
  std::int64_t rotary_dim = 0;  // R; 0: the head dim D
  int seq_axis = 1;             // the sequence axis of x (0 .. rank - 2)
  std::int64_t position_offset = 0;  // positions offset + s when no position_ids are given
  // The in-kernel tables (used when no cos / sin caches are given):
  double theta = 10000.0;
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;                     // linear / ntk / yarn / llama3
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn
  double attention_factor = 0.0;           // yarn; 0: 0.1 ln(factor) + 1 (1 for factor <= 1)
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  std::int64_t original_max_position = 0;  // yarn, llama3 (HF original_max_position_embeddings)
  friend bool operator==(const RopeOptions&, const RopeOptions&) = default;
};

// HF's inv_freq of the options for rotary dim R (R / 2 values, in double), and the factor that
// multiplies cos and sin (1 except YaRN). Errors name the offending option.
Expected<std::vector<double>> rope_inv_freq(const RopeOptions& o, std::int64_t rotary_dim);
double rope_attention_factor(const RopeOptions& o) noexcept;

// Optional operands have rank 0 when absent.
struct RopeDescriptor {
  TensorLayout x{}, y{};           // y: x's shape and dtype
  TensorLayout x2{}, y2{};         // optional second tensor (k), rotated in the same launch
  TensorLayout position_ids{};   // i32 / i64, [B, S] or [S]
  TensorLayout cos{}, sin{};       // both or neither: f32 or x's dtype, [max_pos, R / 2]
  RopeOptions options{};
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const RopeDescriptor&, const RopeDescriptor&) = default;
};
struct RopeArgs {
  const void* x = nullptr;
  void* y = nullptr;
  const void* x2 = nullptr;
  void* y2 = nullptr;
  const void* position_ids = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
};
using RopePlan = Plan<RopeDescriptor, RopeArgs>;

// grad_x = R(-t) grad_y (and grad_x2 from grad_y2); grad_x may alias grad_y exactly.
struct RopeBackwardDescriptor {
  TensorLayout grad_y{}, grad_x{};
  TensorLayout grad_y2{}, grad_x2{};  // optional
  TensorLayout position_ids{};
  TensorLayout cos{}, sin{};
  RopeOptions options{};
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const RopeBackwardDescriptor&, const RopeBackwardDescriptor&) = default;
};
struct RopeBackwardArgs {
  const void* grad_y = nullptr;
  void* grad_x = nullptr;
  const void* grad_y2 = nullptr;
  void* grad_x2 = nullptr;
  const void* position_ids = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
};
using RopeBackwardPlan = Plan<RopeBackwardDescriptor, RopeBackwardArgs>;

extern template class Plan<RopeDescriptor, RopeArgs>;
extern template class Plan<RopeBackwardDescriptor, RopeBackwardArgs>;

}  // namespace baracuda
