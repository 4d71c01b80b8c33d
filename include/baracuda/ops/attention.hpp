// Scaled dot-product attention, forward and backward (torch.nn.functional.scaled_dot_product_attention,
// flash-attn's flash_attn_func / flash_attn_varlen_func, jax.nn.dot_product_attention).
//
//   s_ij = scale * q_i . k_j                         (scale = 1/sqrt(d_k) unless given)
//   s_ij = softcap * tanh(s_ij / softcap)            (when softcap > 0)
//   s_ij += bias_ij - alibi_slope_h * |i + off - j|  (when given; off below)
//   s_ij = -inf where the mask hides key j from query i
//   p_ij = softmax_j(s_ij) (statistics in f32, or f64 for f64), dropped with probability
//          dropout_p and the kept values scaled by 1 / (1 - dropout_p)
//   o_i  = sum_j p_ij v_j,     lse_i = log(sum_j exp(s_ij))  (natural log, before dropout)
//
// Shapes (any strides; the fused SKUs want the head dim contiguous and 16-byte rows):
//   dense:  q [B, Hq, Sq, Dk], k [B, Hkv, Skv, Dk], v [B, Hkv, Skv, Dv], o [B, Hq, Sq, Dv],
//           lse f32 [B, Hq, Sq]
//   varlen: q [Tq, Hq, Dk], k [Tk, Hkv, Dk], v [Tk, Hkv, Dv], o [Tq, Hq, Dv], lse f32 [Hq, Tq];
//           sequence b holds tokens cu_seqlens_q[b] .. cu_seqlens_q[b+1] (int32, B + 1 entries,
//           on the device); empty sequences are allowed.
// Hq must be a multiple of Hkv (GQA / MQA: query head h reads KV head h / (Hq / Hkv)).
//
// Masks. Query i sees key j when  i + off - window_left <= j <= i + off + window_right, where
// off = 0 for top-left alignment (PyTorch's is_causal) and Skv - Sq for bottom-right
// (flash-attn's causal); window_left / window_right = -1 is unbounded and `causal` sets
// window_right = 0. A bool mask (u8 storage, 1 = take part, PyTorch's attn_mask) and an
// additive bias broadcast to [B, Hq, Sq, Skv]. A row that sees no key gives o = 0 and
// lse = -inf, never NaN (flash-attn's rule; PyTorch's math backend gives NaN there).
//
// Dropout is Philox4x32-10 keyed by (seed, offset) and the logical (b, h, i, j), so a run is
// reproducible from the seed on the same SKU, and the backward replays the forward's mask.
// `philox_seed_offset`, when not null, is a device pointer to {seed, offset} read at run
// time (CUDA-graph replays with a fresh seed); otherwise the host values are used.
//
// Plans. SdpaPlan / SdpaBackwardPlan take every case (any dtype f64, f32, f16, bf16, any head
// dims, any mask) and choose the fastest SKU that accepts it: cuDNN's fused attention (frontend
// graph), our flash kernels (wgmma + TMA on sm_90a, mma.sync on sm_80+), or the general
// kernels (CUDA cores, any dtype; still never materialize Sq x Skv). FlashSdpaPlan /
// FlashSdpaBackwardPlan take the same descriptor but only the fused SKUs (f16, bf16; e4m3
// forward), and refuse what those cannot run. PlanPreference::deterministic selects a
// backward without atomics.
//
// e4m3 forward (q, k, v, o e4m3; a bias, if any, f32; SdpaArgs::fp8): the attention of
// real = stored * descale operands, stored o = satfinite e4m3(o * scale_o) (+-448 at most),
// amax_o = max |o| before scale_o (optional). descale_q / k / v and scale_o are required device
// f32 scalars; descale_s / scale_s are not read (P stays f32 / bf16) and amax_s is refused (not
// produced). Today's SKU dequantizes to bf16 and runs a bf16 plan (docs/attention.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class CausalAlign : std::uint8_t { kTopLeft, kBottomRight };
const char* causal_align_name(CausalAlign a) noexcept;  // "top_left", "bottom_right"

// The attention function itself (everything except the operand layouts).
struct SdpaOptions {
  double scale = 0.0;  // 0: 1 / sqrt(Dk)
  bool causal = false;
  CausalAlign align = CausalAlign::kTopLeft;  // of the causal mask and the window
  std::int64_t window_left = -1;              // -1: unbounded
  std::int64_t window_right = -1;             // -1: unbounded (causal makes it 0)
  double softcap = 0.0;                       // 0: off
  double dropout_p = 0.0;                     // in [0, 1)
  bool varlen = false;                        // packed tokens + cu_seqlens (see above)
  std::int64_t batch = 0;                     // varlen only: number of sequences B
  std::int64_t max_seqlen_q = 0;              // varlen only: upper bound on every sequence's length
  std::int64_t max_seqlen_k = 0;
  friend bool operator==(const SdpaOptions&, const SdpaOptions&) = default;
};

// Optional operands have rank 0 when absent.
struct SdpaDescriptor {
  TensorLayout q, k, v, o;
  TensorLayout lse;           // f32; rank 0: not returned
  TensorLayout bias;          // q's dtype or f32, broadcastable to [B, Hq, Sq, Skv]; dense only
  TensorLayout mask;          // u8 (0 / 1), broadcastable to [B, Hq, Sq, Skv]; dense only
  TensorLayout alibi_slopes;  // f32 [Hq] or [B, Hq]
  SdpaOptions options;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SdpaDescriptor&, const SdpaDescriptor&) = default;
};

// Per-tensor fp8 scaling (e4m3 forward only): real = stored * descale; o_stored = o * scale_o.
// Device pointers to f32 scalars (4-byte aligned), all null for other dtypes (refused otherwise).
struct SdpaFp8Scales {
  const float* descale_q = nullptr;
  const float* descale_k = nullptr;
  const float* descale_v = nullptr;
  const float* descale_s = nullptr;  // of the probabilities fed to the PV product (not read today)
  const float* scale_s = nullptr;    // (not read today)
  const float* scale_o = nullptr;
  float* amax_s = nullptr;  // must be null: no SKU produces it yet
  float* amax_o = nullptr;  // optional output: max |o| (unscaled)
};

struct SdpaArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  const void* bias = nullptr;
  const std::uint8_t* mask = nullptr;
  const float* alibi_slopes = nullptr;
  const std::int32_t* cu_seqlens_q = nullptr;  // varlen
  const std::int32_t* cu_seqlens_k = nullptr;
  std::uint64_t seed = 0;  // dropout
  std::uint64_t offset = 0;
  const std::uint64_t* philox_seed_offset = nullptr;  // device {seed, offset}; overrides the two above
  SdpaFp8Scales fp8;
};

struct FlashSdpaDescriptor : SdpaDescriptor {};

// Gradients of q, k, v (and of the bias when grad_bias is given) from the forward's o and lse.
struct SdpaBackwardDescriptor {
  TensorLayout q, k, v, o, grad_o;
  TensorLayout lse;                       // f32, required
  TensorLayout grad_q, grad_k, grad_v;    // shapes of q, k, v; dtype of q
  TensorLayout bias, mask, alibi_slopes;  // as in the forward
  TensorLayout grad_bias;                 // rank 0: not wanted; else bias's shape (broadcast dims summed)
  SdpaOptions options;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SdpaBackwardDescriptor&, const SdpaBackwardDescriptor&) = default;
};

struct SdpaBackwardArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* o = nullptr;
  const void* grad_o = nullptr;
  const float* lse = nullptr;
  void* grad_q = nullptr;
  void* grad_k = nullptr;
  void* grad_v = nullptr;
  const void* bias = nullptr;
  const std::uint8_t* mask = nullptr;
  const float* alibi_slopes = nullptr;
  void* grad_bias = nullptr;
  const std::int32_t* cu_seqlens_q = nullptr;
  const std::int32_t* cu_seqlens_k = nullptr;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  const std::uint64_t* philox_seed_offset = nullptr;
};

struct FlashSdpaBackwardDescriptor : SdpaBackwardDescriptor {};

using SdpaPlan = Plan<SdpaDescriptor, SdpaArgs>;
using FlashSdpaPlan = Plan<FlashSdpaDescriptor, SdpaArgs>;
using SdpaBackwardPlan = Plan<SdpaBackwardDescriptor, SdpaBackwardArgs>;
using FlashSdpaBackwardPlan = Plan<FlashSdpaBackwardDescriptor, SdpaBackwardArgs>;

extern template class Plan<SdpaDescriptor, SdpaArgs>;
extern template class Plan<FlashSdpaDescriptor, SdpaArgs>;
extern template class Plan<SdpaBackwardDescriptor, SdpaBackwardArgs>;
extern template class Plan<FlashSdpaBackwardDescriptor, SdpaBackwardArgs>;

}  // namespace baracuda
