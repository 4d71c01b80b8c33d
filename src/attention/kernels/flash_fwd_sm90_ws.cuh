// Flash SDPA forward on sm_90a, FlashAttention-3 scheme: warp-specialized, TMA-fed, wgmma.
// SKU `flash_wgmma_ws`: first in the flash table where it accepts; SdpaPlan tries cuDNN first
// (measured as fast or faster on the bench shapes, docs/flash-attention.md).
//
// Persistent: one CTA of 3 warpgroups (384 threads) per SM walks work tiles = (128-row query
// block, query head, batch), taken in a fixed order from a tile counter in the workspace
// (atomicAdd, zeroed by the launcher before the kernel): groups of 8 (batch, head) pairs, heaviest
// query block first inside a group (causal balance with K / V reuse in L2). Which CTA computes a
// tile never changes its result (deterministic). The next tile's Q and first K / V tiles load
// while the current tile's last GEMMs and epilogue run.
//   - warpgroup 0, the producer, drops to 40 registers (setmaxnreg.dec); one thread claims the
//     tiles and issues every TMA copy: a tile's Q into one of two Q buffers, then its K and V
//     tiles of 128 keys through a kStages-deep ring that runs on across tiles. Each stage has a
//     "full" mbarrier per operand (1 arrival + expect_tx bytes) and an "empty" one (8 arrivals:
//     lane 0 of each consumer warp once it has finished reading); each Q buffer has a "full"
//     barrier (whose arrival also publishes the tile index in shared memory, -1 = no more
//     tiles) and an "empty" one (the 8 consumer warps, after the tile's epilogue).
//   - warpgroups 1 and 2, the consumers, rise to 232 registers (128 x 40 + 256 x 232 is exactly
//     the 384 x 168 the CTA is launched with; setmaxnreg.inc past the CTA's pool waits forever);
//     each owns 64 query rows.
//     Per key tile j: S_j = Q K_j^T (wgmma m64n128k16, both operands in shared memory),
//     online softmax in registers (ws_softmax_tile: log2 units, one FFMA + one ex2.approx per
//     score on tiles without a mask, the mask only on the band's edge tiles, row sums reduced
//     across the quad once at the end), P_j repacked (cvt to bf16x2 / f16x2) as the A operand
//     of O += P_j V_j (wgmma register-A form, V read MN-major: no transpose).
// Overlap: inside a warpgroup S_{j+1} is issued before O += P_j V_j and the softmax of tile
// j + 1 runs while the P V group is still in flight (wgmma.wait_group 1); the O rescale by the
// factors of tile j + 1 runs in the next iteration between the S and the P V issue (under the S
// GEMM, as FA3 orders it). Across warpgroups two named barriers (ids 1, 2) hand the tensor cores
// back and forth (ping-pong): a warpgroup issues its GEMMs of an iteration only after the other one
// issued its own, so one's softmax overlaps the other's GEMMs.
//
// Shared memory: tiles in the 128-byte-swizzled layout that TMA's SWIZZLE_128B writes and the
// wgmma descriptors of flash_fwd_sm90.cuh read: [D / 64][rows][64] (128-byte rows, 16-byte
// chunk c of row r at c ^ (r % 8)), every tile 1024-byte aligned. TMA boxes are {64, rows} of
// a 4-D map (d, s, h, b) per operand, built on the host per launch; rows past the sequence
// arrive zero-filled (and still count in the transaction bytes). d128: 2 x Q 32 KB + 2 x (K 32 KB
// + V 32 KB) = 192 KB; d64: 2 x Q 16 KB + 3 x 32 KB = 128 KB.
//
// Masks: only key tiles inside the causal / window band of the block are visited; only tiles
// crossing the band's edge or the key end of a warpgroup's 64 rows are masked per element.
// Epilogue: o / l written through the warpgroup's (finished) Q rows in shared memory as 16-byte
// coalesced stores; lse natural log; rows that see no key: o = 0, lse = -inf.
//
// Preconditions (probe): dense [B, H, S, D] operands with a contiguous head dim, 16-byte
// multiple strides and 16-byte aligned bases (TMA-expressible), D in {64, 128}, f16 / bf16, no
// softcap / bias / ALiBi / dropout / varlen, sm_90a.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <string>

#include "attention/flash_ws.hpp"
#include "attention/kernels/flash_fwd_sm90.cuh"
#include "common/mufu.cuh"
#include "common/tma.cuh"

namespace baracuda::attention::kernels {

template <int D>
struct FlashWsConfig {
  static constexpr int kM = 128, kN = 128, kThreads = 384;
  static constexpr int kStages = D <= 64 ? 3 : 2;
  // 128 x 40 + 256 x 232 = 384 x 168, the registers the CTA is launched with
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr int kTileQ = kM * D, kTileKV = kN * D;  // elements
  static constexpr int kBars = 4 + 4 * kStages;  // q_full[2], q_empty[2], k/v full / empty per stage
  // 2 Q buffers, the K / V ring, the barriers, 2 tile slots (ints) + alignment slack
  static constexpr int kSmemBytes = (2 * kTileQ + 2 * kStages * kTileKV) * 2 + kBars * 8 + 16 + 1024;
};

#if defined(BARACUDA_FLASH_SM90)
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads / writes of wgmma accumulators across the issue / wait.
template <int N>
__device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

#endif  // BARACUDA_FLASH_SM90

// Online softmax of one 64 x kN score tile in the wgmma accumulator layout (thread: rows g and
// g + 8 of its warp's 16, columns n8 * 8 + 2t, + 1; identical to mma.m16n8k16's C layout).
// row_max in log2 units (scaled), row_sum a per-thread partial (the quad is reduced once, in
// finish_rows), corr = exp2(old max - new max) per row.
//   kGeneral = false (unmasked tile, scale > 0): the row max is taken over the raw scores and
//     scaled once, p = ex2(fma(s, scale_log2, -max)): one FMNMX, one FFMA, one MUFU per element.
//   kGeneral = true (masked tile or scale <= 0): s scaled first, hidden elements -inf, then the
//     same max / exp2 (one FMUL and the mask more per element).
// A row that has seen only hidden keys keeps max -inf; its exponent reference is 0 so every
// p and corr is 0 (no inf - inf).
template <bool kGeneral, int kN8>
__device__ __forceinline__ void ws_softmax_tile(const FlashFwdParams& p, const SeqInfo& si, float (&s)[kN8][4],
                                                float (&row_max)[2], float (&row_sum)[2], float (&corr)[2], int m0,
                                                const int (&row_local)[2], int j0, int t) {
  using ::baracuda::kernels::mufu::ex2_ftz;
  const float mul = kGeneral ? 1.f : p.scale_log2;
  if constexpr (kGeneral) {
    // visible(p, si, i, j) as a key interval [lo, hi] per row (64-bit: no overflow for any
    // window), so each score costs two compares.
    int lo[2], hi[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::int64_t d0 = static_cast<std::int64_t>(m0 + row_local[r]) + si.off;
      const std::int64_t l = p.window_left < 0 ? 0 : d0 - p.window_left;
      const std::int64_t u = p.window_right < 0 ? si.sk - 1 : d0 + p.window_right;
      lo[r] = static_cast<int>(l > 0 ? l : 0);
      hi[r] = static_cast<int>(u < si.sk - 1 ? u : si.sk - 1);
    }
    const int jt = j0 + 2 * t;
#pragma unroll
    for (int n8 = 0; n8 < kN8; ++n8) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = jt + n8 * 8 + (e & 1);
        const float x = s[n8][e] * p.scale_log2;
        s[n8][e] = j >= lo[e >> 1] && j <= hi[e >> 1] ? x : kNegInf;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = s[0][2 * r];
#pragma unroll
    for (int n8 = 0; n8 < kN8; ++n8) mx = fmaxf(mx, fmaxf(s[n8][2 * r], s[n8][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    if constexpr (!kGeneral) mx *= mul;
    mx = fmaxf(mx, row_max[r]);
    const float ref = mx == kNegInf ? 0.f : mx;
    corr[r] = ex2_ftz(row_max[r] - ref);
    row_max[r] = mx;
    const float neg_ref = -ref;
    float sum[2] = {0.f, 0.f};  // two chains: half the add latency on the critical path
#pragma unroll
    for (int n8 = 0; n8 < kN8; ++n8) {
      const float p0 = ex2_ftz(fmaf(s[n8][2 * r], mul, neg_ref));
      const float p1 = ex2_ftz(fmaf(s[n8][2 * r + 1], mul, neg_ref));
      sum[n8 & 1] += p0 + p1;
      s[n8][2 * r] = p0;
      s[n8][2 * r + 1] = p1;
    }
    row_sum[r] = fmaf(row_sum[r], corr[r], sum[0] + sum[1]);
  }
}

// The work tile `tile` of the launch order (groups of kHeadGroup (batch, head) pairs; inside a
// group the query blocks heaviest first, the pairs of one block index side by side): the CTAs in
// flight share the K / V of at most a few groups (L2 reuse) while the long blocks start before
// the short ones of the same group. nx = query blocks per (batch, head), hb = heads x batch.
template <int kM, int kN, class T>
__device__ __forceinline__ bool ws_tile_block(const FlashFwdParams& p, QueryBlock<T>& qb, int tile, int nx, int hb) {
  constexpr int kHeadGroup = 8;
  const int group = tile / (nx * kHeadGroup);
  const int first = group * kHeadGroup, size = min(kHeadGroup, hb - first);
  const int r = tile - group * nx * kHeadGroup;  // 0 .. nx * size - 1
  const int bh = first + r % size;
  return query_block_at<kM, kN>(p, qb, nx - 1 - r / size, bh % p.heads_q, bh / p.heads_q);
}

template <class T, int D>
__global__ void __launch_bounds__(384, 1)
    flash_fwd_sm90_ws_kernel(const FlashFwdParams p, const __grid_constant__ FlashWsMaps maps, int* tile_counter) {
#if defined(BARACUDA_FLASH_SM90)
  using Cfg = FlashWsConfig<D>;
  using ::baracuda::kernels::mbarrier_arrive;
  using ::baracuda::kernels::mbarrier_arrive_expect_tx;
  using ::baracuda::kernels::mbarrier_init;
  using ::baracuda::kernels::mbarrier_init_fence;
  using ::baracuda::kernels::mbarrier_wait_bounded;
  using ::baracuda::kernels::named_barrier_arrive;
  using ::baracuda::kernels::named_barrier_sync;
  using ::baracuda::kernels::tma_load_4d;
  constexpr int kM = Cfg::kM, kN = Cfg::kN, kS = Cfg::kStages;
  static_assert(D == 64 || D == 128);
  extern __shared__ unsigned char smem_raw[];
  T* sQ0 = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  T* sK = sQ0 + 2 * Cfg::kTileQ;    // [kS][kN * D]
  T* sV = sK + kS * Cfg::kTileKV;   // [kS][kN * D]
  std::uint64_t* bars = reinterpret_cast<std::uint64_t*>(sV + kS * Cfg::kTileKV);
  std::uint64_t* q_full = bars;       // [2]
  std::uint64_t* q_empty = bars + 2;  // [2]
  std::uint64_t* k_full = bars + 4;
  std::uint64_t* v_full = bars + 4 + kS;
  std::uint64_t* k_empty = bars + 4 + 2 * kS;
  std::uint64_t* v_empty = bars + 4 + 3 * kS;
  volatile int* tile_slot = reinterpret_cast<volatile int*>(bars + Cfg::kBars);  // [2]

  const int tid = threadIdx.x, lane = tid & 31;
  const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);  // warp-uniform in ptxas's eyes (no divergent wgmma)
  const int nx = (p.seqlen_q + kM - 1) / kM, hb = p.heads_q * p.batch, n_work = nx * hb;

  if (tid == 0) {
    for (int b = 0; b < 2; ++b) {
      mbarrier_init(q_full + b, 1);
      mbarrier_init(q_empty + b, 8);  // lane 0 of each of the 8 consumer warps
    }
    for (int s = 0; s < kS; ++s) {
      mbarrier_init(k_full + s, 1);
      mbarrier_init(v_full + s, 1);
      mbarrier_init(k_empty + s, 8);
      mbarrier_init(v_empty + s, 8);
    }
    mbarrier_init_fence();
  }
  __syncthreads();  // the last CTA-wide barrier: the warpgroups part here

  if (warp < 4) {
    // ------------------------------------------------------------ producer
    ::baracuda::kernels::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      ::baracuda::kernels::tma_prefetch_descriptor(&maps.q);
      ::baracuda::kernels::tma_prefetch_descriptor(&maps.k);
      ::baracuda::kernels::tma_prefetch_descriptor(&maps.v);
      constexpr unsigned kQBytes = Cfg::kTileQ * 2, kKVBytes = Cfg::kTileKV * 2;
      int ring = 0;  // K / V tiles issued so far (the ring runs on across work tiles)
      int tile = static_cast<int>(blockIdx.x);
      for (int local = 0;; ++local) {
        const int qbuf = local & 1;
        mbarrier_wait_bounded(q_empty + qbuf, ((local >> 1) & 1) ^ 1);  // the first use of a buffer does not wait
        if (tile >= n_work) {
          tile_slot[qbuf] = -1;
          mbarrier_arrive(q_full + qbuf);
          break;
        }
        QueryBlock<T> qb;
        tile_slot[qbuf] = tile;
        if (!ws_tile_block<kM, kN>(p, qb, tile, nx, hb) || qb.n_end <= qb.n_begin) {
          mbarrier_arrive(q_full + qbuf);  // nothing to load: the consumers write the empty rows
        } else {
          T* sQ = sQ0 + qbuf * Cfg::kTileQ;
          mbarrier_arrive_expect_tx(q_full + qbuf, kQBytes);
#pragma unroll
          for (int c = 0; c < D / 64; ++c) tma_load_4d(sQ + c * kM * 64, &maps.q, c * 64, qb.m0, qb.h, qb.b, q_full + qbuf);
          for (int it = qb.n_begin; it < qb.n_end; ++it, ++ring) {
            const int st = ring % kS;
            const unsigned empty_parity = ((ring / kS) & 1) ^ 1;  // the first pass through the ring does not wait
            const int key0 = it * kN;
            mbarrier_wait_bounded(k_empty + st, empty_parity);
            mbarrier_arrive_expect_tx(k_full + st, kKVBytes);
#pragma unroll
            for (int c = 0; c < D / 64; ++c)
              tma_load_4d(sK + st * Cfg::kTileKV + c * kN * 64, &maps.k, c * 64, key0, qb.hk, qb.b, k_full + st);
            mbarrier_wait_bounded(v_empty + st, empty_parity);
            mbarrier_arrive_expect_tx(v_full + st, kKVBytes);
#pragma unroll
            for (int c = 0; c < D / 64; ++c)
              tma_load_4d(sV + st * Cfg::kTileKV + c * kN * 64, &maps.v, c * 64, key0, qb.hk, qb.b, v_full + st);
          }
        }
        // The next tile is claimed only now, about kStages key tiles before the consumers finish
        // this one, so the claims follow the CTAs' progress (dynamic balance of unequal tiles).
        tile = static_cast<int>(gridDim.x) + atomicAdd(tile_counter, 1);
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  ::baracuda::kernels::setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int cw = (warp >> 2) - 1;  // consumer warpgroup 0 / 1: rows 64 cw .. 64 cw + 63
  const int ctid = tid - 128 * (cw + 1);
  const int g = lane >> 2, t = lane & 3;
  const int row_local[2] = {cw * 64 + (warp & 3) * 16 + g, cw * 64 + (warp & 3) * 16 + g + 8};
  const bool pos_scale = p.scale_log2 > 0.f;
  auto release = [&](std::uint64_t* bar) { ::baracuda::kernels::mbarrier_arrive_if(bar, lane == 0); };

  float acc_o[D / 8][4], row_max[2], row_sum[2], corr[2];
  float s[kN / 8][4];
  float (&s_flat)[kN / 2] = reinterpret_cast<float (&)[kN / 2]>(s);
  float (&o_flat)[D / 2] = reinterpret_cast<float (&)[D / 2]>(acc_o);
  std::uint32_t pa[kN / 16][4];

  int ring = 0;  // K / V tiles consumed so far, as the producer counts them
  for (int local = 0;; ++local) {
    const int qbuf = local & 1;
    mbarrier_wait_bounded(q_full + qbuf, (local >> 1) & 1);
    // Broadcast from lane 0 so ptxas sees a warp-uniform value: the tile decides the stage
    // indices and wgmma descriptors, which then stay in the uniform datapath (no R2UR before
    // every wgmma).
    const int tile = __shfl_sync(0xffffffffu, tile_slot[qbuf], 0);
    if (tile < 0) break;
    QueryBlock<T> qb;
    const bool in_seq = ws_tile_block<kM, kN>(p, qb, tile, nx, hb);
    if (!in_seq || qb.n_end <= qb.n_begin) {
      if (in_seq)  // no query of the block sees a key: o = 0, lse = -inf, by the 256 consumer threads
        write_empty_rows<D, kM, 256>(p, qb.o, qb.valid_q, qb.b, qb.h, qb.si.start_q + qb.m0, tid - 128);
      __syncwarp();
      release(q_empty + qbuf);
      continue;
    }
    const SeqInfo& si = qb.si;
    const int m0 = qb.m0, n_begin = qb.n_begin;
    const int n_tiles = qb.n_end - n_begin;
    const int wg_row0 = m0 + cw * 64;
    const T* sQ = sQ0 + qbuf * Cfg::kTileQ;

    zero_acc(acc_o);
    row_max[0] = row_max[1] = kNegInf;
    row_sum[0] = row_sum[1] = 0.f;

    auto issue_s = [&](int st) {
      const T* cK = sK + st * Cfg::kTileKV;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const std::uint64_t da = sw128_desc(sQ + (kk >> 2) * kM * 64 + cw * 64 * 64 + (kk & 3) * 16, 16, 1024);
        const std::uint64_t db = sw128_desc(cK + (kk >> 2) * kN * 64 + (kk & 3) * 16, 16, 1024);
        wgmma_s<T>(s_flat, da, db, kk > 0 ? 1 : 0);
      }
    };
    auto issue_pv = [&](int st) {
      const T* cV = sV + st * Cfg::kTileKV;
#pragma unroll
      for (int k16 = 0; k16 < kN / 16; ++k16) wgmma_pv<T, D>(o_flat, pa[k16], sw128_desc(cV + k16 * 16 * 64, kN * 128, 1024));
    };
    // The softmax of one key tile (ws_softmax_tile): the fast form on tiles that need no mask
    // when the scale is positive, the general one otherwise; corr = the rows' rescale factors of
    // acc_o, applied once the P V in flight has finished.
    auto softmax = [&](int it) {
      const int j0 = (n_begin + it) * kN;
      if (pos_scale && !tile_needs_mask(p, si, wg_row0, 64, j0, kN))
        ws_softmax_tile<false>(p, si, s, row_max, row_sum, corr, m0, row_local, j0, t);
      else
        ws_softmax_tile<true>(p, si, s, row_max, row_sum, corr, m0, row_local, j0, t);
    };
    // acc_o *= the rows' factors of the last softmax: done while the next S GEMM runs, just
    // before the P V GEMM that needs it (FA3's order), not between that P V's end and the next
    // issue, where it would delay this warpgroup's turn.
    auto rescale_o = [&] {
#pragma unroll
      for (int d8 = 0; d8 < D / 8; ++d8) {
        acc_o[d8][0] *= corr[0];
        acc_o[d8][1] *= corr[0];
        acc_o[d8][2] *= corr[1];
        acc_o[d8][3] *= corr[1];
      }
    };
    auto pack_p = [&] {
#pragma unroll
      for (int k16 = 0; k16 < kN / 16; ++k16) acc_to_a<T>(pa[k16], s, k16);
    };

    // Key tile 0: S_0, softmax (acc_o is zero: no rescale needed).
    {
      const int st = ring % kS;
      mbarrier_wait_bounded(k_full + st, (ring / kS) & 1);
      reg_fence(s_flat);
      wgmma_fence();
      issue_s(st);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(s_flat);
      release(k_empty + st);
      softmax(0);
      pack_p();
    }

    // Ping-pong: consumer 1 lets consumer 0 issue first; each iteration a warpgroup waits for its
    // turn (barrier 1 + cw) and, after issuing, hands the turn over (barrier 2 - cw). Consumer 1
    // skips its last hand-over so both barriers see equal arrival counts in every work tile.
    if (cw == 1 && n_tiles > 1) named_barrier_arrive(1, 256);
    for (int it = 1; it < n_tiles; ++it) {
      const int rc = ring + it, rp = rc - 1;
      const int st = rc % kS, pst = rp % kS;
      named_barrier_sync(1 + cw, 256);
      // Both waits before the fence: no branch (mbarrier try_wait loop) between the two GEMMs,
      // so ptxas keeps them in one wgmma sequence (no extra warpgroup.arrive, C7519).
      mbarrier_wait_bounded(v_full + pst, (rp / kS) & 1);  // V_{it-1} was issued before K_it
      mbarrier_wait_bounded(k_full + st, (rc / kS) & 1);
      reg_fence(s_flat);
      reg_fence(o_flat);
      wgmma_fence();
      issue_s(st);
      wgmma_commit();
      rescale_o();  // under S_it; P_{it-1} V_{it-1} finished in the last iteration
      reg_fence(o_flat);
      wgmma_fence();
      issue_pv(pst);
      wgmma_commit();
      if (!(cw == 1 && it == n_tiles - 1)) named_barrier_arrive(2 - cw, 256);
      wgmma_wait<1>();  // S_it done, O += P_{it-1} V_{it-1} may still run
      reg_fence(s_flat);
      release(k_empty + st);
      softmax(it);
      wgmma_wait<0>();
      reg_fence(o_flat);
      release(v_empty + pst);
      pack_p();
    }
    {
      const int rl = ring + n_tiles - 1, lst = rl % kS;
      mbarrier_wait_bounded(v_full + lst, (rl / kS) & 1);
      rescale_o();
      reg_fence(o_flat);
      wgmma_fence();
      issue_pv(lst);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(o_flat);
      release(v_empty + lst);
    }
    ring += n_tiles;

    // Epilogue: o / l staged through this warpgroup's Q rows (its last S GEMM has completed),
    // then the Q buffer is handed back to the producer.
    float lse_v[2];
    finish_rows<D, false>(p, acc_o, row_max, row_sum, lse_v);
    T* sO = sQ0 + qbuf * Cfg::kTileQ;
#pragma unroll
    for (int d8 = 0; d8 < D / 8; ++d8) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = row_local[r], col = d8 * 8 + 2 * t;
        T* dst = sO + (col >> 6) * kM * 64 + row * 64 + ((((col & 63) >> 3) ^ (row & 7)) << 3) + (col & 7);
        *reinterpret_cast<std::uint32_t*>(dst) = pack2f<T>(acc_o[d8][2 * r], acc_o[d8][2 * r + 1]);
      }
    }
    fence_proxy_async();  // these generic writes before the producer's next TMA writes of the buffer
    named_barrier_sync(3 + cw, 128);
    constexpr int kChunks = D / 8;
    T* og = qb.o;
#pragma unroll
    for (int c = ctid; c < 64 * kChunks; c += 128) {
      const int r = c / kChunks, ch = c - (c / kChunks) * kChunks;
      const int row = cw * 64 + r;
      if (row < qb.valid_q)
        *reinterpret_cast<uint4*>(og + row * p.o_s + ch * 8) =
            *reinterpret_cast<const uint4*>(sO + (ch >> 3) * kM * 64 + row * 64 + (((ch & 7) ^ (row & 7)) << 3));
    }
    __syncwarp();
    release(q_empty + qbuf);  // this warp's reads of the staged o are done
    if (p.lse != nullptr && t == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (row_local[r] < qb.valid_q)
          p.lse[qb.b * p.lse_b + qb.h * p.lse_h + static_cast<std::int64_t>(si.start_q + m0 + row_local[r]) * p.lse_s] =
              lse_v[r];
    }
  }
#endif  // BARACUDA_FLASH_SM90
}
// ---------------------------------------------------------------- host side
// cuTensorMapEncodeTiled from the driver through the runtime (no libcuda link), looked up once.
using TensorMapEncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                       const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline TensorMapEncodeFn tensor_map_encoder() {
  static const TensorMapEncodeFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return static_cast<TensorMapEncodeFn>(nullptr);
    return reinterpret_cast<TensorMapEncodeFn>(f);
  }();
  return fn;
}

// A 4-D (d, s, h, b) map of a 16-bit [B, H, S, D] operand with element strides (sb, sh, ss),
// box {64, rows, 1, 1}, 128-byte swizzle. Strides of size-1 dims are irrelevant and replaced by
// a legal value.
inline Status encode_operand_map(CUtensorMap* map, const void* base, bool bf16, int d, std::int64_t s, std::int64_t h,
                                 std::int64_t b, std::int64_t ss, std::int64_t sh, std::int64_t sb, int rows) {
  const TensorMapEncodeFn enc = tensor_map_encoder();
  if (enc == nullptr) return Status(Code::kNotSupported, "sdpa flash_wgmma_ws: the driver has no cuTensorMapEncodeTiled");
  auto legal = [&](std::int64_t size, std::int64_t stride) {
    const std::int64_t bytes = stride * 2;
    return size <= 1 ? static_cast<cuuint64_t>(d * 2) : static_cast<cuuint64_t>(bytes);
  };
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(s), static_cast<cuuint64_t>(h),
                              static_cast<cuuint64_t>(b)};
  const cuuint64_t strides[3] = {legal(s, ss), legal(h, sh), legal(b, sb)};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(rows), 1, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUresult r = enc(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                         const_cast<void*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status(Code::kInvalidArgument, "sdpa flash_wgmma_ws: cuTensorMapEncodeTiled failed (" + std::to_string(static_cast<int>(r)) + ")");
  return Status::ok();
}

// Host launcher (flash_fwd_sm90_ws_d<D>.cu): tensor maps, the tile counter zeroed, then one
// persistent CTA per SM (fewer when there are fewer work tiles).
template <int D>
Status launch_flash_fwd_sm90_ws_impl(const FlashFwdParams& p, int* tile_counter, int sm_count, cudaStream_t stream) {
  using Cfg = FlashWsConfig<D>;
  const std::int64_t n_work = (p.seqlen_q + Cfg::kM - 1) / Cfg::kM * static_cast<std::int64_t>(p.heads_q) * p.batch;
  if (n_work == 0) return Status::ok();
  const int hkv = p.heads_q / p.group;
  FlashWsMaps maps{};
  BARACUDA_TRY(encode_operand_map(&maps.q, p.q, p.bf16 != 0, D, p.seqlen_q, p.heads_q, p.batch, p.q_s, p.q_h, p.q_b, Cfg::kM));
  if (p.seqlen_k > 0) {  // no keys: every block writes o = 0, lse = -inf and loads nothing
    BARACUDA_TRY(encode_operand_map(&maps.k, p.k, p.bf16 != 0, D, p.seqlen_k, hkv, p.batch, p.k_s, p.k_h, p.k_b, Cfg::kN));
    BARACUDA_TRY(encode_operand_map(&maps.v, p.v, p.bf16 != 0, D, p.seqlen_k, hkv, p.batch, p.v_s, p.v_h, p.v_b, Cfg::kN));
  }
  void (*kernel)(const FlashFwdParams, const FlashWsMaps, int*) =
      p.bf16 ? flash_fwd_sm90_ws_kernel<__nv_bfloat16, D> : flash_fwd_sm90_ws_kernel<__half, D>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes) != cudaSuccess)
    return gemm::kernel_launch_status("sdpa flash_wgmma_ws forward (shared memory attribute)");
  if (const cudaError_t e = cudaMemsetAsync(tile_counter, 0, sizeof(int), stream); e != cudaSuccess)
    return Status(Code::kCudaError, std::string("sdpa flash_wgmma_ws forward: zeroing the tile counter failed: ") + cudaGetErrorString(e),
                  StatusSource::kCuda, static_cast<int>(e));
  const unsigned ctas = static_cast<unsigned>(std::min<std::int64_t>(n_work, std::max(sm_count, 1)));
  kernel<<<ctas, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p, maps, tile_counter);
  return gemm::kernel_launch_status("sdpa flash_wgmma_ws forward");
}

}  // namespace baracuda::attention::kernels
