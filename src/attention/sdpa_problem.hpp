// The normalized SDPA problem every backend works from (general, flash, cuDNN): sizes, the
// element strides of each operand as (b, h, s, d), broadcast strides of the bias / mask /
// alibi slopes, the effective scale, the window with causal and alignment folded in, and the
// dropout threshold of the contract's rule (notes: attention-contract.md).
//
// Built by make_sdpa_problem() from a descriptor that passed validation (sdpa.cpp); it is a
// plain struct (no std:: members), so kernels take it by value as a launch parameter.
//
// Varlen: sequence b holds query tokens cu_seqlens_q[b] .. cu_seqlens_q[b + 1]; the operand's
// `b` stride is 0 and the token stride is `s` (element of token t, head h, dim d at
// t * s + h * h_stride + d * d_stride); sq / skv are the max_seqlen bounds. lse [Hq, Tq]: h and s.
//
// Masks: query i (within its sequence of length sq_b) sees key j (of skv_b) when
//   lo <= j <= hi,  lo = i + off - window_left (no bound when window_left < 0),
//                   hi = i + off + window_right (no bound when window_right < 0),
// off = bottom_right ? skv_b - sq_b : 0. `causal` has already set window_right = 0.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"

namespace baracuda {
struct SdpaDescriptor;
struct SdpaBackwardDescriptor;
}  // namespace baracuda

namespace baracuda::attention {

// Element strides of a [B, H, S, D] operand (varlen: b = 0, s = token stride).
struct Strides4 {
  std::int64_t b = 0, h = 0, s = 0, d = 0;
};

// A [B, Hq, Sq, Skv]-broadcast operand (bias, mask, grad_bias): strides in elements (0 on
// broadcast dims) and, for grad_bias's reduction, the operand's own sizes right-aligned to
// rank 4 (1 where the dim is broadcast).
struct Broadcast4 {
  bool present = false;
  std::int64_t size[4] = {1, 1, 1, 1};  // (b, h, i, j)
  std::int64_t stride[4] = {0, 0, 0, 0};
};

struct SdpaProblem {
  bool backward = false;
  bool varlen = false;
  DType dtype = DType::kF32;       // q, k, v, o (and grads)
  DType bias_dtype = DType::kF32;  // q's dtype or f32
  std::int64_t batch = 0, hq = 0, hkv = 0;
  std::int64_t sq = 0, skv = 0;  // dense sizes, or the varlen max_seqlen bounds
  std::int64_t dk = 0, dv = 0;
  std::int64_t group = 1;  // hq / hkv: query head h reads KV head h / group
  std::int64_t total_q = 0, total_k = 0;  // varlen: packed token counts (q.shape[0], k.shape[0])

  Strides4 q, k, v, o;
  Strides4 grad_o, grad_q, grad_k, grad_v;  // backward only
  bool has_lse = false;
  Strides4 lse;  // d unused; varlen: b = 0, s = token stride

  Broadcast4 bias, mask, grad_bias;
  bool has_alibi = false;
  std::int64_t alibi_b = 0, alibi_h = 0;  // element strides of the slopes ([Hq] -> b = 0)

  double scale = 1.0;  // effective (0 in the descriptor -> 1/sqrt(dk))
  double softcap = 0.0;
  bool causal = false;
  bool bottom_right = false;
  std::int64_t window_left = -1, window_right = -1;  // causal folded in (window_right = 0)
  bool has_window = false;                           // window_left >= 0 || window_right >= 0

  double dropout_p = 0.0;
  std::uint32_t dropout_threshold = 0;  // kept iff the Philox word >= threshold
  double dropout_scale = 1.0;           // 1 / (1 - p)

  // The key window [lo, hi] (inclusive, clamped to [0, skv_b - 1]) of query i in a sequence of
  // sq_b queries and skv_b keys; empty when lo > hi.
#if defined(__CUDACC__)
  __host__ __device__
#endif
  inline void key_range(std::int64_t i, std::int64_t sq_b, std::int64_t skv_b, std::int64_t* lo,
                        std::int64_t* hi) const {
    const std::int64_t off = bottom_right ? skv_b - sq_b : 0;
    std::int64_t l = 0, h = skv_b - 1;
    if (window_left >= 0 && i + off - window_left > l) l = i + off - window_left;
    if (window_right >= 0 && i + off + window_right < h) h = i + off + window_right;
    *lo = l;
    *hi = h;
  }
};

// From a validated descriptor. The dropout threshold: (uint32) min(floor(p * 2^32), 2^32 - 1).
SdpaProblem make_sdpa_problem(const SdpaDescriptor& d);
SdpaProblem make_sdpa_problem(const SdpaBackwardDescriptor& d);
std::uint32_t dropout_threshold(double p);

}  // namespace baracuda::attention
