// SdpaDecodePlan's bulk-copy kernel (SKU paged_decode.fwd.bulk_splitkv, sm_90+).
//
// What: for each sequence b, group of `hb` = heads_per_cta neighbouring KV heads and split s,
// the attention of the query rows of those heads (row r = t * group + g: token t of Sq, query
// head h * group + g; at most 16 rows per head) over the keys [s * split_len, (s + 1) *
// split_len) n [0, seqlen_b), with the mask, softcap and ALiBi of baracuda/ops/decode.hpp.
//
// Why this shape (the decode is a pure stream of the K and V bytes; mma_splitkv reached 45%
// of DRAM bandwidth at the must-show shape, latency bound: one CTA per (b, KV head) reads
// 256-byte pieces of every 2 KiB token row while 7 other CTAs read the rest at other times, 16
// cp.async per thread per tile, 1.94 waves):
//  * One CTA per (b, head group, split) reads whole token rows: the hb heads of a token row
//    are hb * D * 2 contiguous bytes (2 KiB at 8 heads x d128), fetched with ONE
//    cp.async.bulk (the TMA's 1D copy, no tensor map) into a padded shared row; a page of 16
//    tokens is 16 such copies, a tile of K + V rows is one warp instruction issuing 32 (or
//    more) copies. Rows are copied one by one (not a whole page at once) so that (a) any
//    page size works: each row finds its own page, (b) the shared rows get 16 bytes of
//    padding (row stride = 16 mod 128 bytes) and ldmatrix reads them without bank conflicts
//    (a page copied in one piece would put every key of a head 2 KiB apart: 8-way conflicts).
//  * 8 warps, one per (head, 16-key chunk of the tile): a tile has 16 * 8 / hb keys (128
//    head rows) = 64 KiB of K + V at d128 whatever hb; `kStages` stages (3 at d128, 6 at d64:
//    ~200 KiB) complete on one mbarrier each, so ~130-200 KiB are in flight per SM during the
//    wait, enough for the DRAM latency at the full H200 rate (~30 GB/s per SM). One CTA per
//    SM; the split count (chosen at select from the SM count) makes the grid whole waves.
//  * The compute is small (16 rows per head): Q fragments live in registers (loaded once
//    from global), S = Q K^T and O += P V on mma.sync m16n8k16 (ldmatrix / ldmatrix.trans from
//    the padded rows), online softmax in f32 (decode_tile.cuh, shared with mma_splitkv).
// Pipeline (all warps consume; warp 0 also produces): the block-table entries of a tile are
// read one tile before its copies are issued (off the copy path); iteration `it` issues tile
// it + kStages - 1 into the stage tile it - 1 used (free since the barrier that ended that
// iteration: fence.proxy.async orders the generic reads before the async writes), then waits
// on tile it's mbarrier (phase parity (it / kStages) & 1), computes, and ends with
// __syncthreads. Each issued tile arrives exactly once on its stage's barrier (lane 0's
// arrive.expect_tx with the bytes of the copied rows), and every issued tile is waited for,
// so no copy is in flight at exit. Rows past k_end or on an unmapped page are not copied but
// zero-filled by the issuing lane before lane 0's arrive (release) makes them visible with
// the phase (acquire): the cache contract's "a page of zeros", and no stale or NaN V rows
// under P = 0.
// Partials: one split writes o / lse; several write the normalized partial o (f32) and its
// log2-sum-exp to the workspace and decode_combine_kernel (decode_mma.cuh) adds the splits
// in a fixed order (deterministic, no atomics).
// Preconditions (probe checks them): sm_90+, f16 / bf16, D in {64, 128}, group * Sq <= 16, the
// hb heads of a CTA packed (head stride D) when hb > 1, cache row / page strides multiples of
// 8 elements, 16-byte aligned caches, split_len a multiple of the tile.
// Numerics: as mma_splitkv (products exact, f32 accumulation and statistics, P rounded to the
// input dtype before PV).
// Speed: bench suite attention, paged_decode bf16 64x4096x32x8x128 (page 16 and 256).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "attention/decode_params.hpp"
#include "attention/kernels/decode_common.cuh"
#include "attention/kernels/decode_tile.cuh"
#include "attention/kernels/mma_fragments.cuh"
#include "common/bulk_copy.cuh"
#include "common/pdl.cuh"

namespace baracuda::attention::kernels {

template <class T, int D, int kStages>
__global__ void __launch_bounds__(kBulkThreads, 1) decode_bulk_kernel(const DecodeParams p) {
  namespace bk = baracuda::kernels;  // the mbarrier / bulk-copy helpers (common/bulk_copy.cuh)
  constexpr int kMaxRowsPerLane = 4;  // tile keys <= 128: 4 rows per lane of the producer warp

  extern __shared__ __align__(128) unsigned char bulk_smem[];
  std::uint64_t* bar = reinterpret_cast<std::uint64_t*>(bulk_smem);
  T* stage0 = reinterpret_cast<T*>(bulk_smem + kBulkBarrierBytes);

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int g4 = lane >> 2, q4 = lane & 3;
  const int hb = p.heads_per_cta;              // 1, 2, 4 or 8
  const int kgs = kBulkWarps / hb;             // warps per head = 16-key chunks per tile
  const int tile_keys = 16 * kgs;
  const int ld = hb * D + kDecodeSmemPad;      // shared row stride (elements)
  const int half = tile_keys * ld;             // K (or V) rows of one stage
  const unsigned row_bytes = static_cast<unsigned>(hb * D * 2);
  const int hl = warp % hb, kc = warp / hb;    // this warp's head in the group, key chunk

  const int split = static_cast<int>(blockIdx.y);
  const std::int64_t n_groups = p.hkv / hb;
  const std::int64_t hg = blockIdx.x % n_groups, b = blockIdx.x / n_groups;
  const std::int64_t h = hg * hb + hl;

  const std::int64_t seqlen = clamp_seqlen(p.seqlens[b * p.seqlens_stride], p.capacity);
  std::int64_t k_begin = static_cast<std::int64_t>(split) * p.split_len;
  const std::int64_t k_end = k_begin + p.split_len < seqlen ? k_begin + p.split_len : seqlen;
  if (p.window_left >= 0) {
    const std::int64_t lo = seqlen - p.sq - p.window_left;  // lowest key token 0 sees
    if (lo > k_begin) k_begin = lo & ~std::int64_t{15};
  }
  const int n_tiles = k_end > k_begin ? static_cast<int>((k_end - k_begin + tile_keys - 1) / tile_keys) : 0;

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) bk::mbarrier_init(&bar[s], 1);
    bk::mbarrier_init_fence();
  }
  __syncthreads();

  // Producer (warp 0): lane handles tile rows lane, lane + 32, ... (< tile_keys). pg: the page of
  // each of its rows, -1 for a row past k_end or on an unmapped page (zero-filled).
  const T* kbase = static_cast<const T*>(p.k) + hg * hb * p.k_stride[2];
  const T* vbase = static_cast<const T*>(p.v) + hg * hb * p.v_stride[2];
  const bool paged = p.block_table != nullptr;
  const std::uint32_t ps = static_cast<std::uint32_t>(p.page_size);
  auto lookup = [&](int it, int (&pg)[kMaxRowsPerLane]) {
    const std::int64_t base = k_begin + static_cast<std::int64_t>(it) * tile_keys;
#pragma unroll
    for (int i = 0; i < kMaxRowsPerLane; ++i) {
      const int r = lane + 32 * i;
      const std::int64_t key = base + r;
      int e = r < tile_keys && key < k_end ? static_cast<int>(b) : -1;
      if (paged && e >= 0) {
        const std::uint32_t slot = static_cast<std::uint32_t>(key) / ps;
        e = -1;
        if (slot < p.max_pages) {
          const int t = __ldg(p.block_table + b * p.bt_stride[0] + static_cast<std::int64_t>(slot) * p.bt_stride[1]);
          e = t >= 0 && t < p.num_pages ? t : -1;
        }
      }
      pg[i] = e;
    }
  };
  auto issue = [&](int it, const int (&pg)[kMaxRowsPerLane]) {
    const std::int64_t base = k_begin + static_cast<std::int64_t>(it) * tile_keys;
    const int st = it % kStages;
    T* kst = stage0 + st * 2 * half;
    T* vst = kst + half;
    unsigned copied = 0;
#pragma unroll
    for (int i = 0; i < kMaxRowsPerLane; ++i) {
      const int r = lane + 32 * i;
      if (r < tile_keys && pg[i] < 0) {  // zero-fill (generic stores, visible with the phase)
        uint4* kz = reinterpret_cast<uint4*>(kst + r * ld);
        uint4* vz = reinterpret_cast<uint4*>(vst + r * ld);
        for (unsigned v = 0; v < row_bytes / 16; ++v) kz[v] = vz[v] = make_uint4(0, 0, 0, 0);
      }
      copied += static_cast<unsigned>(__popc(__ballot_sync(0xffffffffu, r < tile_keys && pg[i] >= 0)));
    }
    bk::fence_proxy_async_shared();  // earlier generic accesses of this stage before the async writes
    __syncwarp();
    if (lane == 0) bk::mbarrier_arrive_expect_tx(&bar[st], copied * 2 * row_bytes);
#pragma unroll
    for (int i = 0; i < kMaxRowsPerLane; ++i) {
      const int r = lane + 32 * i;
      if (r < tile_keys && pg[i] >= 0) {
        const std::int64_t key = base + r;
        const std::int64_t row = paged ? static_cast<std::int64_t>(static_cast<std::uint32_t>(key) % ps) : key;
        const std::int64_t page = pg[i];
        bk::bulk_copy_to_shared(kst + r * ld, kbase + page * p.k_stride[0] + row * p.k_stride[1], row_bytes, &bar[st]);
        bk::bulk_copy_to_shared(vst + r * ld, vbase + page * p.v_stride[0] + row * p.v_stride[1], row_bytes, &bar[st]);
      }
    }
  };

  // Prologue: tiles 0 .. kStages - 2 in flight, the pages of tile kStages - 1 on their way.
  int pend[kMaxRowsPerLane] = {-1, -1, -1, -1};
  if (warp == 0) {
#pragma unroll 1
    for (int s = 0; s < kStages - 1 && s < n_tiles; ++s) {
      lookup(s, pend);
      issue(s, pend);
    }
    if (kStages - 1 < n_tiles) lookup(kStages - 1, pend);
  }

  // Q fragments of this warp's head (rows past `rows` are zeros), from global memory once.
  const int rows = static_cast<int>(p.rows);
  const std::uint16_t* q16 = static_cast<const std::uint16_t*>(p.q);
  std::uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = g4 + 8 * (i & 1), col = kk * 16 + 2 * q4 + 8 * (i >> 1);
      std::uint32_t v = 0;
      if (r < rows) {
        const std::int64_t t = r / p.group, hq = h * p.group + r % p.group;
        const std::uint16_t* src = q16 + b * p.q_stride[0] + t * p.q_stride[1] + hq * p.q_stride[2] + col;
        v = static_cast<std::uint32_t>(src[0]) | (static_cast<std::uint32_t>(src[1]) << 16);
      }
      qf[kk][i] = v;
    }

  float m_run[2], l_run[2];
  float o_acc[D / 8][4];
  const DecodeRowState rs = decode_begin_rows<D>(p, b, h, seqlen, 0, g4, rows, m_run, l_run, o_acc);
  const DecodeScoreConsts sc = decode_score_consts(p, seqlen, k_end);

  // ldmatrix row addresses of this lane inside a stage (elements): K as [key][d] for the B
  // operand of Q K^T, V through the transposing load for P V.
  const int k_lane = (kc * 16 + (lane & 7) + ((lane >> 4) << 3)) * ld + hl * D + ((lane >> 3) & 1) * 8;
  const int v_lane = (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + hl * D + (lane >> 4) * 8;

#pragma unroll 1
  for (int it = 0; it < n_tiles; ++it) {
    if (warp == 0) {
      if (it + kStages - 1 < n_tiles) issue(it + kStages - 1, pend);
      if (it + kStages < n_tiles) lookup(it + kStages, pend);
    }
    const int st = it % kStages;
    bk::mbarrier_wait_parity(&bar[st], static_cast<unsigned>((it / kStages) & 1));
    const T* kst = stage0 + st * 2 * half;
    const T* vst = kst + half;
    const std::int64_t j0 = k_begin + static_cast<std::int64_t>(it) * tile_keys + 16 * kc;
    if (j0 < k_end) {
      float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        std::uint32_t bf[4];
        ldsm_x4(bf, kst + k_lane + kk * 16);
        mma16816<T>(s[0], qf[kk], bf[0], bf[1]);
        mma16816<T>(s[1], qf[kk], bf[2], bf[3]);
      }
      decode_softmax_step<D>(s, m_run, l_run, o_acc, j0, q4, rs, sc);
      decode_pv_step<T, D>(o_acc, s, vst + v_lane);
    }
    __syncthreads();  // every warp is done with this stage: the next iteration refills it
  }

  ::baracuda::kernels::pdl_trigger();  // the split combine may be scheduled (it waits for this grid)
  // Every issued tile was waited for: no copy is in flight, the stages are free for the merge.
  // Merged rows: head hl's 16 rows at hl * 16 .. (m16 "tile" hl, kgs warps each).
  decode_merge_store<T, D>(p, bulk_smem + kBulkBarrierBytes, m_run, l_run, o_acc, hb * 16, hb, kgs, b, split,
                           [&](int r, std::int64_t& t, std::int64_t& hq) {
                             const int rr = r % 16;
                             if (rr >= rows) return false;
                             t = rr / p.group;
                             hq = (hg * hb + r / 16) * p.group + rr % p.group;
                             return true;
                           });
}

}  // namespace baracuda::attention::kernels
