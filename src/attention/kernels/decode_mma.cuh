// SdpaDecodePlan's tensor-core kernel (SKU paged_decode.fwd.mma_splitkv) and the split combine.
//
// What: for each sequence b, KV head h and split s, the attention of the query rows of h's
// group (row r = t * group + g: token t of Sq, query head h * group + g) over the keys
// [s * split_len, (s + 1) * split_len) n [0, seqlen_b): o = softmax(scores) V, with the mask,
// softcap and ALiBi of baracuda/ops/decode.hpp.
// Parallel scheme: one CTA of 4 warps per (b, h, block of 64 rows, split). K and V tiles of 64
// keys stream through a kStages-deep cp.async pipeline (16-byte copies, L2-only, 128-byte L2
// prefetch, L2 evict-first: K / V are read once, so the split partials the combine reads stay
// in the L2; H100 A/B: -1..6% on paged_decode) into shared memory; iteration i refills the stage tile i - 1 used before it waits
// for tile i, so kStages tiles are in flight during the wait (a barrier at the end of every
// iteration frees the stage). Each 16-key chunk of a tile lies in one page (page_size % 16 ==
// 0, tiles start on a 16-key boundary): a chunk costs one block-table read, done one tile
// before its copies are issued (the copies never wait on the table). Keys past seqlen are
// zero-filled.
// The warps split the rows into m16 tiles (1, 2 or 4) and the keys of each tile among the
// rest: warp (kg, mt) takes m-tile mt and chunks kg, kg + kgs, ... of every tile, computes
// S = Q K^T with mma.sync m16n8k16 (f16 / bf16 in, f32 accumulate; Q and K fragments through
// ldmatrix), updates its rows' online softmax (base 2, f32; chunks every row sees wholly skip
// the mask), rounds P to the input dtype and accumulates O += P V with the same mma (the S
// accumulators are the A fragments of P, V's B fragments come from ldmatrix.trans). At the
// end the warps of one m-tile merge (m, l, O) through shared memory; with one split the CTA
// writes o (and lse), otherwise the normalized partial o and its log2-sum-exp go to the
// workspace and decode_combine_kernel adds the splits in order (deterministic; no atomics).
// Shared memory rows are padded by 8 elements, so the 8 row addresses of every ldmatrix
// matrix hit distinct banks (mma_fragments.cuh).
// Preconditions (probe checks them): f16 / bf16, D in {64, 128, 256}, page_size % 16 == 0,
// cache rows 16-byte aligned (strides multiples of 8 elements), split_len % 64 == 0.
// Numerics: products exact, f32 accumulation, softmax statistics in f32 (exp2 of
// log2(e)-scaled scores), P rounded to the input dtype before PV (as flash attention).
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
#include "common/block_reduce.cuh"
#include "common/pdl.cuh"

namespace baracuda::attention::kernels {

template <class T, int D, int kStages>
__global__ void __launch_bounds__(kDecodeThreads) decode_mma_kernel(const DecodeParams p) {
  constexpr int kLd = D + kDecodeSmemPad;           // shared row stride (elements)
  constexpr int kTile = kDecodeBlockN * kLd;        // one K or V stage (elements)
  constexpr int kVecPerRow = D / 8;                 // 16-byte vectors per row
  constexpr int kRowsPerIter = kDecodeThreads / kVecPerRow;  // rows one pass of the CTA copies
  constexpr int kIters = kDecodeBlockN / kRowsPerIter;
  static_assert(kRowsPerIter <= 16 && 16 % kRowsPerIter == 0, "copy passes map onto 16-key chunks");
  static_assert((4 * 16 * (D + 4) + 2 * 64) * 4 <= 2 * kStages * kTile * 2, "the merge buffers fit in the stages");

  extern __shared__ __align__(16) unsigned char decode_smem[];
  T* ks = reinterpret_cast<T*>(decode_smem);
  T* vs = ks + kStages * kTile;
  T* qs = vs + kStages * kTile;

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int g4 = lane >> 2, q4 = lane & 3;  // fragment row / column-pair of this lane
  const int split = static_cast<int>(blockIdx.y);
  std::int64_t bx = blockIdx.x;
  const std::int64_t rb = bx % p.row_blocks;
  bx /= p.row_blocks;
  const std::int64_t h = bx % p.hkv, b = bx / p.hkv;
  const std::int64_t row0 = rb * kDecodeRowsPerCta;
  const int rows_here = static_cast<int>(p.rows - row0 < kDecodeRowsPerCta ? p.rows - row0 : kDecodeRowsPerCta);
  const int mtiles = (rows_here + 15) / 16;
  const int warps_m = mtiles == 1 ? 1 : (mtiles == 2 ? 2 : 4);
  const int kgs = 4 / warps_m;
  const int mt = warp % warps_m, kg = warp / warps_m;
  const int q_rows = warps_m * 16;

  const std::int64_t seqlen = clamp_seqlen(p.seqlens[b * p.seqlens_stride], p.capacity);
  std::int64_t k_begin = static_cast<std::int64_t>(split) * p.split_len;
  std::int64_t k_end = k_begin + p.split_len < seqlen ? k_begin + p.split_len : seqlen;
  if (p.window_left >= 0) {
    const std::int64_t lo = seqlen - p.sq - p.window_left;  // lowest key token 0 sees
    if (lo > k_begin) k_begin = lo & ~std::int64_t{15};    // lo > 0 here: rounds down to a chunk
  }
  const int n_tiles = k_end > k_begin ? static_cast<int>((k_end - k_begin + kDecodeBlockN - 1) / kDecodeBlockN) : 0;

  // Block-table slot and page row of the 4 16-key chunks of the tile at key `base` (keys <
  // capacity <= 2^31: one 32-bit division per tile; the chunks step 16 rows, wrapping into the
  // next slots). A contiguous cache is one page per sequence: slot 0, row = key.
  const T* kg_base = static_cast<const T*>(p.k);
  const T* vg_base = static_cast<const T*>(p.v);
  const bool paged = p.block_table != nullptr;
  const std::uint32_t ps = static_cast<std::uint32_t>(p.page_size);
  auto locate = [&](std::int64_t base, std::uint32_t (&slot)[4], std::uint32_t (&row)[4]) {
    std::uint32_t s0 = 0, r0 = static_cast<std::uint32_t>(base);
    if (paged) {
      s0 = r0 / ps;
      r0 -= s0 * ps;
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      row[c] = r0 + 16 * c;
      slot[c] = s0;
      while (paged && row[c] >= ps) {
        row[c] -= ps;
        ++slot[c];
      }
    }
  };
  // The pages of tile `it`'s chunks (-1: past k_end, outside the block table, or an entry
  // outside [0, num_pages)). Read one tile before its copies are issued, so the block-table
  // load is off the copy path.
  auto lookup = [&](int it, int (&pg)[4]) {
    const std::int64_t base = k_begin + static_cast<std::int64_t>(it) * kDecodeBlockN;
    std::uint32_t slot[4], row[4];
    locate(base, slot, row);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      int e = base + 16 * c < k_end ? 0 : -1;
      if (paged && e == 0) {
        e = -1;
        if (slot[c] < p.max_pages) {
          const int t = __ldg(p.block_table + b * p.bt_stride[0] + static_cast<std::int64_t>(slot[c]) * p.bt_stride[1]);
          e = t >= 0 && t < p.num_pages ? t : -1;
        }
      }
      pg[c] = e;
    }
  };
  // Issues the copies of tile `it` (pages pg from lookup) into stage it % kStages; rows past
  // k_end or on a missing page are zero-filled.
  const int cp_row = tid / kVecPerRow, cp_col = (tid % kVecPerRow) * 8;
  const std::int64_t k_off = cp_row * p.k_stride[1] + cp_col + h * p.k_stride[2];
  const std::int64_t v_off = cp_row * p.v_stride[1] + cp_col + h * p.v_stride[2];
  const unsigned long long evict_first = baracuda::kernels::l2_evict_first_policy();
  auto issue = [&](int it, const int (&pg)[4]) {
    const std::int64_t base = k_begin + static_cast<std::int64_t>(it) * kDecodeBlockN;
    T* kst = ks + (it % kStages) * kTile;
    T* vst = vs + (it % kStages) * kTile;
    std::uint32_t slot[4], row[4];
    locate(base, slot, row);
    const T* kchunk[4];
    const T* vchunk[4];
    int nvalid[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const std::int64_t left = k_end - (base + 16 * c);
      nvalid[c] = pg[c] < 0 || left <= 0 ? 0 : (left >= 16 ? 16 : static_cast<int>(left));
      const std::int64_t page = paged ? (pg[c] < 0 ? 0 : pg[c]) : b;
      kchunk[c] = kg_base + page * p.k_stride[0] + static_cast<std::int64_t>(row[c]) * p.k_stride[1] + k_off;
      vchunk[c] = vg_base + page * p.v_stride[0] + static_cast<std::int64_t>(row[c]) * p.v_stride[1] + v_off;
    }
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int c = (i * kRowsPerIter) / 16;   // compile-time: the chunk of this pass
      const int rr0 = (i * kRowsPerIter) % 16;  // compile-time: its first row in the chunk
      const bool valid = cp_row + rr0 < nvalid[c];
      const int r = i * kRowsPerIter + cp_row;  // row of the tile
      baracuda::kernels::cp_async16_hint<128>(kst + r * kLd + cp_col,
                                              valid ? kchunk[c] + rr0 * p.k_stride[1] : kg_base, valid, evict_first);
      baracuda::kernels::cp_async16_hint<128>(vst + r * kLd + cp_col,
                                              valid ? vchunk[c] + rr0 * p.v_stride[1] : vg_base, valid, evict_first);
    }
  };

  // Prologue: tiles 0 .. kStages - 2 in flight, the pages of tile kStages - 1 on their way.
  int pend[4] = {-1, -1, -1, -1};
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_tiles) {
      lookup(s, pend);
      issue(s, pend);
    }
    cp_async_commit();
  }
  if (kStages - 1 < n_tiles) lookup(kStages - 1, pend);

  // The query tile (after the first copies are in flight): rows past `rows_here` are zeros.
  const T* qg = static_cast<const T*>(p.q);
  for (int i = tid; i < q_rows * D; i += kDecodeThreads) {
    const int r = i / D, c = i % D;
    T v = from_float<T>(0.0f);
    if (r < rows_here) {
      const std::int64_t gr = row0 + r, t = gr / p.group, hq = h * p.group + gr % p.group;
      v = qg[b * p.q_stride[0] + t * p.q_stride[1] + hq * p.q_stride[2] + c];
    }
    qs[r * kLd + c] = v;
  }

  // Per-lane row state: rows g4 and g4 + 8 of m-tile mt.
  float m_run[2], l_run[2];
  float o_acc[D / 8][4];
  const DecodeRowState rs = decode_begin_rows<D>(p, b, h, seqlen, row0, mt * 16 + g4, rows_here, m_run, l_run, o_acc);
  const DecodeScoreConsts sc = decode_score_consts(p, seqlen, k_end);

  // Main loop. Iteration `it` first refills the stage tile it - 1 used (free since the barrier
  // that ended that iteration) with tile it + kStages - 1, so kStages tiles are in flight while
  // tile it is awaited, then computes tile it.
  for (int it = 0; it < n_tiles; ++it) {
    if (it + kStages - 1 < n_tiles) issue(it + kStages - 1, pend);
    cp_async_commit();
    if (it + kStages < n_tiles) lookup(it + kStages, pend);
    cp_async_wait<kStages - 1>();
    __syncthreads();

    const T* kst = ks + (it % kStages) * kTile;
    const T* vst = vs + (it % kStages) * kTile;
    const std::int64_t tile_base = k_begin + static_cast<std::int64_t>(it) * kDecodeBlockN;
    for (int c = kg; c < 4; c += kgs) {
      const std::int64_t j0 = tile_base + 16 * c;
      if (j0 >= k_end) break;
      // S = Q K^T for 16 rows x 16 keys (two n8 tiles), fragments through ldmatrix.
      float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        std::uint32_t a[4], bf[4];
        frag_a<kLd>(a, qs, mt * 16, kk * 16, lane);
        frag_b_nk<kLd>(bf, kst, c * 16, kk * 16, lane);
        mma16816<T>(s[0], a, bf[0], bf[1]);
        mma16816<T>(s[1], a, bf[2], bf[3]);
      }
      // Scores -> probabilities (online softmax, base 2). Rows past rows_here need no mask:
      // they are never written.
      decode_softmax_step<D>(s, m_run, l_run, o_acc, j0, q4, rs, sc);
      // O += P V: P's A fragment is the two S tiles; V's B fragments through ldmatrix.trans.
      decode_pv_step<T, D>(o_acc, s, vst + (c * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLd + (lane >> 4) * 8);
    }
    __syncthreads();  // every warp is done with tile it's stage: the next iteration refills it
  }

  ::baracuda::kernels::pdl_trigger();  // the split combine may be scheduled (it waits for this grid)
  // Merge the warps of each m-tile through shared memory (the stages are free now).
  cp_async_wait<0>();
  __syncthreads();
  decode_merge_store<T, D>(p, decode_smem, m_run, l_run, o_acc, rows_here, warps_m, kgs, b, split,
                           [&](int r, std::int64_t& t, std::int64_t& hq) {
                             const std::int64_t gr = row0 + r;
                             t = gr / p.group;
                             hq = h * p.group + gr % p.group;
                             return true;
                           });
}

// Adds the splits of one output row in split order: o = sum_s 2^(lse_s - lse) o_s, with
// lse = log2(sum_s 2^lse_s); a row no split saw gives o = 0, lse = -inf. One block per row: the
// row's split lse values are read once, in parallel, into shared memory, their max is a block
// reduction and each split's weight 2^(lse_s - max) is formed once; l is summed in split order
// by one thread, and each thread's partial-o loads are issued 8 splits at a time before they
// are added, in split order (deterministic). H100, B 1 x 32k keys, 29 splits: the first form
// (every thread looping over the splits three times, one load at a time) took 17.6 us. On sm_90+ it is a
// programmatic dependent of the decode kernel: launched early, it waits here for that grid.
template <class T>
__global__ void decode_combine_kernel(const DecodeParams p) {
  __shared__ float s_lse[kDecodeMaxSplits], s_w[kDecodeMaxSplits], s_red[33];
  const std::int64_t row = blockIdx.x;  // (b, t, hq)
  const std::int64_t hq = row % p.hq, t = (row / p.hq) % p.sq, b = row / (p.hq * p.sq);
  const std::int64_t plane = p.batch * p.sq * p.hq;
  const int splits = p.splits;
  ::baracuda::kernels::pdl_wait();
  float m = -INFINITY;
  for (int s = threadIdx.x; s < splits; s += blockDim.x) {
    s_lse[s] = p.ws_lse[s * plane + row];
    m = fmaxf(m, s_lse[s]);
  }
  m = ::baracuda::kernels::block_allreduce(m, [](float a, float c) { return fmaxf(a, c); }, -INFINITY, s_red);
  // Each split's weight 2^(lse_s - m) once (0 for a split that saw no key), then l in split order.
  for (int s = threadIdx.x; s < splits; s += blockDim.x) s_w[s] = m == -INFINITY ? 0.0f : exp2f(s_lse[s] - m);
  __syncthreads();
  if (threadIdx.x == 0) {
    float l = 0.0f;
    for (int s = 0; s < splits; ++s) l += s_w[s];
    s_red[32] = l;
  }
  __syncthreads();
  const float l = s_red[32];
  T* og = static_cast<T*>(p.o);
  const float* wo = p.ws_o + row * p.d;
  const std::int64_t split_stride = plane * p.d;
  for (std::int64_t col = threadIdx.x; col < p.d; col += blockDim.x) {
    float acc = 0.0f;
    if (m != -INFINITY) {
      constexpr int kBatch = 8;
      for (int s = 0; s < splits; s += kBatch) {
        float o[kBatch];
        bool seen[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          seen[u] = s + u < splits && s_lse[s + u] != -INFINITY;
          o[u] = seen[u] ? wo[(s + u) * split_stride + col] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
          if (seen[u]) acc += s_w[s + u] * o[u];
      }
    }
    og[b * p.o_stride[0] + t * p.o_stride[1] + hq * p.o_stride[2] + col] = from_float<T>(m == -INFINITY ? 0.0f : acc / l);
  }
  if (threadIdx.x == 0 && p.lse)
    p.lse[b * p.lse_stride[0] + hq * p.lse_stride[1] + t * p.lse_stride[2]] =
        m == -INFINITY ? -INFINITY : (m + log2f(l)) * 0.6931471805599453f;
}

}  // namespace baracuda::attention::kernels
