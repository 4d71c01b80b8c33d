// Flash SDPA forward, mma.sync (sm_80+): the FlashAttention-2 scheme.
//
// What: o = softmax(scale * q k^T [softcap, + bias, - ALiBi, masked]) v and lse (natural log)
// for one (query block, batch, query head) per CTA; GQA reads KV head h / group.
//
// Tiling: kWarps warps (4 or 8), each owning 16 query rows, so a CTA holds kM = 16 * kWarps
// query rows; keys and values stream through shared memory in tiles of kN rows. Q stays in
// shared memory (its A fragments are re-read with ldmatrix per key tile); S = Q K^T is
// accumulated in registers (16 x kN per warp, f32), turned into probabilities in registers and
// repacked as the A operand of P V (K^T via ldmatrix, V via ldmatrix.trans); the output
// accumulator (16 x D per warp, f32) stays in registers to the end.
//
// Pipeline: cp.async double buffering: while tile n is multiplied, tile n + 1 of K and V is in
// flight into the other stage (one commit group per tile, Q rides with the first).
//
// Softmax: online, in log2 units (scores prescaled by scale * log2 e, exp2), the running max
// and sum per row held by the 4 threads of a quad; a row whose max is still -inf uses 0 as its
// reference so exp2 never sees inf - inf. The sum is of the undropped probabilities (the LSE
// is of the undropped scores); dropout (the contract's Philox rule, kernels/dropout.cuh) zeroes
// dropped P before P V and 1 / (1 - p) scales o at the end. Rows that see no key: o = 0,
// lse = -inf.
//
// Masks: only key tiles that intersect the visible band are visited (causal / window bounds of
// the whole query block); only tiles that cross the band's edges or the key end are masked
// element by element. kExtras selects the slow score path (softcap, bias, ALiBi, dropout);
// without it a score is one multiply.
//
// Preconditions (probe checks): f16 / bf16, Dk == Dv == D, every q / k / v / o row 16-byte
// aligned with a contiguous head dim, Hq % Hkv == 0, grid y = Hq and z = B within 65535.
#pragma once

#include "attention/kernels/flash_common.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::attention::kernels {

template <int D>
struct FlashFwdConfig {
  static constexpr int kWarps = 8;
  static constexpr int kM = FlashTiles::fwd_m(D);
  static_assert(kM == 16 * kWarps);
  static constexpr int kN = FlashTiles::fwd_n(D);
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMinBlocks = D <= 64 ? 2 : 1;
  static constexpr int kSmemBytes = FlashTiles::fwd_smem(D);
};

// One key tile of the online softmax for a warp's 16 rows (rows m0 + row_local[0 / 1] of this
// thread; s the 16 x kN scores in the mma C layout): scores to log2 units (fast path one
// multiply, kExtras the slow path), mask, running max / sum update, acc_o rescaled, s <- P
// (dropped entries zeroed; the sum is of the undropped P).
template <class T, int D, int kN, bool kExtras>
__device__ __forceinline__ void online_softmax_tile(const FlashFwdParams& p, const SeqInfo& si, float (&s)[kN / 8][4],
                                                    float (&acc_o)[D / 8][4], float (&row_max)[2], float (&row_sum)[2],
                                                    int m0, const int (&row_local)[2], int j0, bool need_mask, int b,
                                                    int h, float slope, const DropKey& drop, int t) {
  // Scores in log2 units, masked.
#pragma unroll
  for (int n8 = 0; n8 < kN / 8; ++n8) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = m0 + row_local[e >> 1];
      const int j = j0 + n8 * 8 + 2 * t + (e & 1);
      float x;
      if constexpr (kExtras) {
        float dcap;
        x = extra_score<T>(p, si, s[n8][e], b, h, i, j, slope, &dcap) * kLog2e;
      } else {
        x = s[n8][e] * p.scale_log2;
      }
      if (need_mask && !visible(p, si, i, j)) x = kNegInf;
      s[n8][e] = x;
    }
  }

  // Online softmax.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = row_max[r];
#pragma unroll
    for (int n8 = 0; n8 < kN / 8; ++n8) mx = fmaxf(mx, fmaxf(s[n8][2 * r], s[n8][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float ref = mx == kNegInf ? 0.f : mx;
    const float corr = exp2f(row_max[r] - ref);
    row_max[r] = mx;
    row_sum[r] *= corr;
#pragma unroll
    for (int d8 = 0; d8 < D / 8; ++d8) {
      acc_o[d8][2 * r] *= corr;
      acc_o[d8][2 * r + 1] *= corr;
    }
#pragma unroll
    for (int n8 = 0; n8 < kN / 8; ++n8) {
      const float p0 = exp2f(s[n8][2 * r] - ref);
      const float p1 = exp2f(s[n8][2 * r + 1] - ref);
      row_sum[r] += p0 + p1;
      s[n8][2 * r] = p0;
      s[n8][2 * r + 1] = p1;
    }
  }

  if constexpr (kExtras) {
    if (p.dropout_p > 0.f) {
#pragma unroll
      for (int n8 = 0; n8 < kN / 8; ++n8) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = m0 + row_local[r];
          const int j = j0 + n8 * 8 + 2 * t;  // even: j and j + 1 share one Philox call
          bool k0, k1;
          dropout_keep_pair(drop, static_cast<std::int64_t>(b) * p.heads_q + h, i, j, k0, k1);
          if (!k0) s[n8][2 * r] = 0.f;
          if (!k1) s[n8][2 * r + 1] = 0.f;
        }
      }
    }
  }
}

// Start of the key loop: the slow path's ALiBi slope and dropout key, zero o, max -inf, sum 0.
template <bool kExtras, int kD8>
__device__ __forceinline__ void start_rows(const FlashFwdParams& p, int b, int h, float& slope, DropKey& drop,
                                           float (&acc_o)[kD8][4], float (&row_max)[2], float (&row_sum)[2]) {
  if constexpr (kExtras) {
    if (p.alibi != nullptr) slope = p.alibi[b * p.alibi_b + h * p.alibi_h];
    if (p.dropout_p > 0.f) drop = flash_dropout_key(p);
  }
  zero_acc(acc_o);
  row_max[0] = row_max[1] = kNegInf;
  row_sum[0] = row_sum[1] = 0.f;
}

// A query block that sees no key: o = 0 (rows [0, valid_q) at og), lse = -inf.
template <int D, int kM, int kThreads, class T>
__device__ __forceinline__ void write_empty_rows(const FlashFwdParams& p, T* og, int valid_q, int b, int h,
                                                 std::int64_t tok0, int tid) {
  constexpr int kChunks = D / 8;
  for (int c = tid; c < kM * kChunks; c += kThreads) {
    const int r = c / kChunks;
    if (r < valid_q) *reinterpret_cast<uint4*>(og + r * p.o_s + (c - r * kChunks) * 8) = make_uint4(0, 0, 0, 0);
  }
  if (p.lse != nullptr && tid < valid_q) p.lse[b * p.lse_b + h * p.lse_h + (tok0 + tid) * p.lse_s] = kNegInf;
}

// End of the key loop: acc_o /= l (times 1 / (1 - p) with dropout), lse_v = natural-log LSE
// (-inf and o = 0 for rows that saw no key).
template <int D, bool kExtras>
__device__ __forceinline__ void finish_rows(const FlashFwdParams& p, float (&acc_o)[D / 8][4], const float (&row_max)[2],
                                            const float (&row_sum)[2], float (&lse_v)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.f ? (kExtras && p.dropout_p > 0.f ? p.drop_scale : 1.f) / l : 0.f;
    lse_v[r] = l > 0.f ? (row_max[r] + log2f(l)) * kLn2 : kNegInf;
#pragma unroll
    for (int d8 = 0; d8 < D / 8; ++d8) {
      acc_o[d8][2 * r] *= inv;
      acc_o[d8][2 * r + 1] *= inv;
    }
  }
}

template <class T, int D, bool kExtras>
__global__ void __launch_bounds__(FlashFwdConfig<D>::kThreads, FlashFwdConfig<D>::kMinBlocks)
    flash_fwd_kernel(const FlashFwdParams p) {
  using Cfg = FlashFwdConfig<D>;
  constexpr int kM = Cfg::kM, kN = Cfg::kN, kThreads = Cfg::kThreads, S = SmemTile<D>::kStride;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + kM * S;      // [2][kN][S]
  T* sV = sK + 2 * kN * S;  // [2][kN][S]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  QueryBlock<T> qb;
  if (!query_block<kM, kN>(p, qb)) return;
  const SeqInfo& si = qb.si;
  const int b = qb.b, h = qb.h, m0 = qb.m0, valid_q = qb.valid_q, n_begin = qb.n_begin, n_end = qb.n_end;
  const T *qg = qb.q, *kg = qb.k, *vg = qb.v;
  T* og = qb.o;
  const int row_local[2] = {warp * 16 + g, warp * 16 + g + 8};

  if (n_end <= n_begin) {  // no query of the block sees a key: o = 0, lse = -inf
    write_empty_rows<D, kM, kThreads>(p, og, valid_q, b, h, si.start_q + m0, tid);
    return;
  }

  load_tile_async<kM, D, kThreads>(sQ, qg, p.q_s, valid_q, tid);
  load_tile_async<kN, D, kThreads>(sK, kg + static_cast<std::int64_t>(n_begin) * kN * p.k_s, p.k_s,
                                   si.sk - n_begin * kN, tid);
  load_tile_async<kN, D, kThreads>(sV, vg + static_cast<std::int64_t>(n_begin) * kN * p.v_s, p.v_s,
                                   si.sk - n_begin * kN, tid);
  cp_async_commit();

  float slope = 0.f, acc_o[D / 8][4], row_max[2], row_sum[2];
  DropKey drop{};
  start_rows<kExtras>(p, b, h, slope, drop, acc_o, row_max, row_sum);

  for (int nb = n_begin; nb < n_end; ++nb) {
    const T *cK, *cV;
    kv_loop_step<kN, D, kThreads>(sK, sV, kg, vg, p.k_s, p.v_s, nb, n_begin, n_end, si.sk, tid, cK, cV);

    // S = Q K^T (16 x kN per warp).
    float s[kN / 8][4];
    warp_a_bt<T, D>(s, sQ, warp * 16, cK, lane);

    const int j0 = nb * kN;
    online_softmax_tile<T, D, kN, kExtras>(p, si, s, acc_o, row_max, row_sum, m0, row_local, j0,
                                           tile_needs_mask(p, si, m0, kM, j0, kN), b, h, slope, drop, t);

    // O += P V.
    warp_p_b<T, D>(acc_o, s, cV, lane);
    __syncthreads();  // this stage is refilled by the next iteration's prefetch
  }

  // Epilogue: o / l, lse; o staged through this warp's Q rows.
  float lse_v[2];
  finish_rows<D, kExtras>(p, acc_o, row_max, row_sum, lse_v);
  T* sO = sQ + warp * 16 * S;
#pragma unroll
  for (int d8 = 0; d8 < D / 8; ++d8) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
      *reinterpret_cast<std::uint32_t*>(sO + (g + 8 * r) * S + d8 * 8 + 2 * t) =
          pack2f<T>(acc_o[d8][2 * r], acc_o[d8][2 * r + 1]);
  }
  __syncwarp();
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, ch = c - (c / kChunks) * kChunks;
    const int row = warp * 16 + r;
    if (row < valid_q)
      *reinterpret_cast<uint4*>(og + row * p.o_s + ch * 8) = *reinterpret_cast<const uint4*>(sO + r * S + ch * 8);
  }
  if (p.lse != nullptr && t == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (row_local[r] < valid_q)
        p.lse[b * p.lse_b + h * p.lse_h + static_cast<std::int64_t>(si.start_q + m0 + row_local[r]) * p.lse_s] = lse_v[r];
  }
}

// Host launcher of one head dim (instantiated by flash_fwd_d<D>.cu).
template <int D>
Status launch_flash_fwd_impl(const FlashFwdParams& p, cudaStream_t stream) {
  using Cfg = FlashFwdConfig<D>;
  const dim3 grid(static_cast<unsigned>((p.seqlen_q + Cfg::kM - 1) / Cfg::kM), static_cast<unsigned>(p.heads_q),
                  static_cast<unsigned>(p.batch));
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return Status::ok();
  void (*kernel)(const FlashFwdParams) =
      p.bf16 ? (p.extras ? flash_fwd_kernel<__nv_bfloat16, D, true> : flash_fwd_kernel<__nv_bfloat16, D, false>)
             : (p.extras ? flash_fwd_kernel<__half, D, true> : flash_fwd_kernel<__half, D, false>);
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes);
  if (e != cudaSuccess) return gemm::kernel_launch_status("sdpa flash_mma forward (shared memory attribute)");
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
  return gemm::kernel_launch_status("sdpa flash_mma forward");
}

}  // namespace baracuda::attention::kernels
