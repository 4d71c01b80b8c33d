// Launch parameters of the flash SDPA kernels (kernels/flash_*.cuh), filled by flash_sdpa.cpp
// from the descriptor and the args, and the per-head-dim launchers (one TU each:
// flash_fwd_d<D>.cu, flash_bwd_d<D>.cu).
//
// Positions are int (every sequence length < 2^31); strides are int64 element strides. Dense
// and varlen share one indexing: element (b, h, i) of q sits at
//   q + b * q_b + h * q_h + (start_q(b) + i) * q_s
// where start_q(b) = cu_q[b] for varlen (q_b = 0 then) and 0 for dense, and likewise for k, v,
// o (with the KV head h / group), lse (f32) and the gradients.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "baracuda/core/status.hpp"

namespace baracuda::attention {

// Options shared by the forward and the backward.
struct FlashMaskParams {
  int batch = 0;            // B
  int heads_q = 0;          // Hq
  int group = 1;            // Hq / Hkv
  int seqlen_q = 0;         // dense Sq, or max_seqlen_q for varlen
  int seqlen_k = 0;         // dense Skv, or max_seqlen_k
  const std::int32_t* cu_q = nullptr;  // varlen: B + 1 offsets (device); null for dense
  const std::int32_t* cu_k = nullptr;
  int window_left = -1;     // -1: unbounded (clamped to 2^30 on the host)
  int window_right = -1;    // -1: unbounded; causal makes it 0
  int bottom_right = 0;     // off = Skv - Sq (per sequence) when 1, else 0
  float scale = 0.f;        // effective softmax scale
  float scale_log2 = 0.f;   // scale * log2(e)
  float softcap = 0.f;      // 0: off
  const float* alibi = nullptr;  // slopes, element (b, h) at alibi + b * alibi_b + h * alibi_h
  std::int64_t alibi_b = 0, alibi_h = 0;
  const void* bias = nullptr;    // additive bias, q's dtype or f32 (bias_f32)
  int bias_f32 = 0;
  std::int64_t bias_b = 0, bias_h = 0, bias_i = 0, bias_j = 0;
  float dropout_p = 0.f;
  std::uint32_t drop_threshold = 0;  // keep iff Philox word >= threshold
  float drop_scale = 1.f;            // 1 / (1 - p)
  std::uint64_t seed = 0, offset = 0;
  const std::uint64_t* seed_offset = nullptr;  // device {seed, offset}; overrides the two above
  int extras = 0;  // softcap, alibi, bias or dropout present: the kernels' slow score path
};

struct FlashFwdParams : FlashMaskParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // optional
  std::int64_t q_b = 0, q_h = 0, q_s = 0;
  std::int64_t k_b = 0, k_h = 0, k_s = 0;
  std::int64_t v_b = 0, v_h = 0, v_s = 0;
  std::int64_t o_b = 0, o_h = 0, o_s = 0;
  std::int64_t lse_b = 0, lse_h = 0, lse_s = 0;
  int bf16 = 0;  // element type: 1 bf16, 0 f16
};

struct FlashBwdParams : FlashFwdParams {
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  std::int64_t do_b = 0, do_h = 0, do_s = 0;
  std::int64_t dq_b = 0, dq_h = 0, dq_s = 0;
  std::int64_t dk_b = 0, dk_h = 0, dk_s = 0;
  std::int64_t dv_b = 0, dv_h = 0, dv_s = 0;
  // Workspace: delta[h * rows + r] = rowsum(dO * O) of row r (r = b * Sq + i dense, the token
  // index varlen); dq_accum[(h * rows + r) * D + d] f32 (atomic SKU only, else null).
  std::int64_t rows = 0;  // dense B * Sq, varlen Tq
  float* delta = nullptr;
  float* dq_accum = nullptr;
  int deterministic = 0;  // 1: dQ by the per-query-block kernel, no atomics
};

// Tile shapes of the kernels (kernels/flash_fwd.cuh, flash_bwd.cuh), host-visible so the probe
// can check the shared memory a head dim needs against the device's opt-in limit.
struct FlashTiles {
  static constexpr int stride(int d) { return d + 8; }  // smem row stride, elements
  // forward: 8 warps x 16 query rows, key tiles of 64 (32 above d128), Q + 2 stages of K and V
  static constexpr int fwd_m(int) { return 128; }
  static constexpr int fwd_n(int d) { return d <= 128 ? 64 : 32; }
  static constexpr int fwd_smem(int d) { return (fwd_m(d) + 4 * fwd_n(d)) * stride(d) * 2; }
  // backward dK/dV: 64 key rows (4 warps x 16), query steps of 32 (16 at d256), K, V, 2 stages
  // of Q and dO, dS^T, lse and Delta
  static constexpr int bwd_n(int) { return 64; }
  static constexpr int bwd_m(int d) { return d >= 256 ? 16 : 32; }
  static constexpr int bwd_smem(int d) {
    return (2 * bwd_n(d) + 4 * bwd_m(d)) * stride(d) * 2 + bwd_n(d) * (bwd_m(d) + 8) * 2 + 4 * bwd_m(d) * 4;
  }
  // backward dQ (deterministic): 64 query rows (4 warps x 16), key tiles of 64 (32 above d128)
  static constexpr int dq_m(int) { return 64; }
  static constexpr int dq_n(int d) { return d <= 128 ? 64 : 32; }
  static constexpr int dq_smem(int d) { return (2 * dq_m(d) + 4 * dq_n(d)) * stride(d) * 2; }
};

// Workspace bytes of the backward (delta, plus dq_accum when atomic).
std::size_t flash_bwd_workspace_bytes(std::int64_t heads_q, std::int64_t rows, int head_dim, bool deterministic);

// Per head dim: one instantiation TU each. Return the launch status.
template <int D>
Status launch_flash_fwd(const FlashFwdParams& p, cudaStream_t stream);
template <int D>
Status launch_flash_bwd(const FlashBwdParams& p, cudaStream_t stream);

#define BARACUDA_FLASH_DECLARE(D)                                                   \
  template <>                                                                       \
  Status launch_flash_fwd<D>(const FlashFwdParams& p, cudaStream_t stream);        \
  template <>                                                                       \
  Status launch_flash_bwd<D>(const FlashBwdParams& p, cudaStream_t stream);
BARACUDA_FLASH_DECLARE(64)
BARACUDA_FLASH_DECLARE(96)
BARACUDA_FLASH_DECLARE(128)
BARACUDA_FLASH_DECLARE(192)
BARACUDA_FLASH_DECLARE(256)
#undef BARACUDA_FLASH_DECLARE

}  // namespace baracuda::attention
