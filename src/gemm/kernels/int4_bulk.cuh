// Int4GemmPlan's bulk-copy decode kernel (SKU w4a16_bulk, sm_90+): Y[M, N] = X[M, K] *
// dequant(W)^T for M <= 16, with the packed-weight stream carried by the copy engine.
//
// What: y[m, n] = RN(sum_k x[m, k] w(n, k) (+ bias[n])), w(n, k) = RN((q - z) s) in the
// activation dtype, products and sums in f32: the numerics of w4a16_gemv / w4a16_stream
// (int4_gemv.cuh), summed in a different (fixed) order.
// Why: w4a16_stream keeps the weight stream in registers (a few 16-byte loads per lane) and
// reaches ~1.8 TB/s: too few bytes in flight per SM. Here the bytes in flight live in shared
// memory, issued by one thread per row with cp.async.bulk (the TMA's 1-D copy), so each SM
// keeps ~70-150 KiB of weights in flight whatever the registers.
// Parallel scheme: the weight is cut into tiles of 16 rows (the mma's M, as in int4_gemv.cuh:
// weight rows are the mma rows, tokens its 8-wide N). A CTA = G groups of 8 consumer warps +
// 1 producer warp owns a contiguous run of tiles [tile0, tile1) of one K slice [k0, k1)
// (blockIdx.x = slice * ctas_per_slice + j); the grid is one wave of resident CTAs (2 per SM
// with G = 1, or 1 with G = 2: 16 consumer warps per SM either way; chosen at select). The
// CTA walks its tiles in order and each tile's slice in stages of
// kInt4BulkStageK = 1024 k: a stage is 16 rows x 512 contiguous bytes (one bulk copy per
// row, rows past N re-read row N - 1) + the rows' scales (and zeros) of those 1024 k (one
// bulk copy per row when the [N, G] rows are 16-byte runs: G % 8 == 0 and 16-byte aligned
// scales / zeros; else the consumers read them from global memory before waiting).
//  * Ring: `stages` stage buffers, each with a full mbarrier (the producer's
//    arrive.expect_tx + the copies' complete_tx) and an empty mbarrier (one arrival per
//    warp of the group that reads it). The producer issues the first `stages` stages before X is staged, then
//    refills a buffer as soon as its empty barrier completes.
//  * Consumers: group i takes the stages i, i + G, ... of the walk (the ring depth is a
//    multiple of G, so each buffer is always read by the same group: its full barrier's
//    phases alternate as that group waits for them); warp w of a group takes the 128-k
//    chunk w of each of its stages: lane (g, t) reads the
//    16-byte vectors of rows g and g + 8 at k = chunk + 32t (rows kInt4BulkRowBytes = 576
//    bytes apart: a quarter warp's reads hit distinct banks), its scales / zeros, releases
//    the buffer (fence.proxy.async, then one arrive per warp) and only then dequantizes
//    (int4_dequant.cuh bit trick) and runs mma.sync m16n8k16 against X, staged once per CTA
//    in shared memory in int4_stage_x's permuted order. The two k16 halves of a word feed
//    two accumulator sets (shorter dependency chains).
//  * Tile end: each warp's f32 partial (16 rows x M, the two sets added) goes to a shared
//    array (double-buffered when small, else a second barrier after the reads); after a
//    named barrier of the consumers, thread i sums the
//    8 G warps' partials of output (m, row) = (i / 16, i % 16) in warp order and writes y (one
//    slice: + bias, rounded) or partial[slice, m, n] (several: int4_splitk_reduce_kernel adds
//    the slices in order, + bias). Deterministic: the order is fixed by the shape alone.
// Preconditions (select / launch check them): sm_90+, M <= 16, K % 32 == 0, group_size in
// {32, 64, 128} or K, kslice % 1024 == 0, w rows 16-byte aligned, shared-memory layout of
// Int4BulkConfig (bulk_config in int4_gemm.cpp).
// Numerics: as int4_gemv.cuh; tolerance in baracuda/reference/gemm_int4.hpp.
// Speed: bench gemm suite rows w4a16 M in {1, 16} on 28672x8192 and 4096x4096 with this SKU
// forced (--sku '*w4a16_bulk*').
#pragma once

#include "common/bulk_copy.cuh"
#include "common/tma.cuh"
#include "gemm/kernels/int4_gemv.cuh"

namespace baracuda::gemm::kernels {

// A CTA's walk over its stages (tile-major, then the stages of the tile's slice), with the
// ring buffer and the phase parity of each; the producer and the consumers walk the same one.
struct Int4BulkCursor {
  std::int64_t tile = 0;
  int st = 0, slot = 0, it = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void next(int stages_per_tile, int ring) {
    if (++st == stages_per_tile) {
      st = 0;
      ++tile;
    }
    if (++slot == ring) {
      slot = 0;
      phase ^= 1u;
    }
    ++it;
  }
};

template <class T, int NT, bool kSigned, int G>
__global__ void __launch_bounds__(int4_bulk_threads(G), G == 1 ? 2 : 1) int4_bulk_kernel(const Int4BulkParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace bk = baracuda::kernels;
  constexpr int kWarps = G * kInt4BulkChunkWarps;  // consumer warps
  constexpr int kConsumers = kWarps * 32;
  constexpr int kStageK = static_cast<int>(kInt4BulkStageK);
  extern __shared__ __align__(128) unsigned char bulk_smem[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(bulk_smem);
  std::uint64_t* empty = full + kInt4BulkMaxStages;
  T* xs = reinterpret_cast<T*>(bulk_smem + p.b.x_off);
  float* red = reinterpret_cast<float*>(bulk_smem + p.b.red_off);
  unsigned char* ring = bulk_smem + p.b.ring_off;

  const Int4Weights& wt = p.g.wt;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int stages = p.b.stages, cps = p.b.ctas_per_slice;
  const int slice = static_cast<int>(blockIdx.x) / cps, j = static_cast<int>(blockIdx.x) % cps;
  const std::int64_t tile0 = j * p.b.tiles / cps, tile1 = (j + 1) * p.b.tiles / cps;
  const std::int64_t k0 = slice * p.b.kslice, k1 = k0 + p.b.kslice < wt.k ? k0 + p.b.kslice : wt.k;
  const int per_tile = static_cast<int>((k1 - k0 + kStageK - 1) / kStageK);
  const int total = static_cast<int>(tile1 - tile0) * per_tile;
  const int gshift = p.g.cfg.group_shift;
  const int srow = p.b.scale_row_bytes;  // bytes per row of a stage's scale (zero) rows
  const std::size_t sbase = std::size_t{kInt4BulkTileRows} * kInt4BulkRowBytes;  // scales after the weight rows
  const std::size_t zbase = sbase + std::size_t{kInt4BulkTileRows} * srow;        // zeros after the scales

  if (tid == 0) {
    for (int s = 0; s < stages; ++s) {
      bk::mbarrier_init(&full[s], 1);
      bk::mbarrier_init(&empty[s], kInt4BulkChunkWarps);  // one group reads a stage
    }
    bk::mbarrier_init_fence();
  }
  __syncthreads();

  // Producer: lane r < 16 copies weight row r of the stage, lane 16 + r its scales (zeros).
  const bool producer = warp == kWarps;
  const auto* wbytes = static_cast<const unsigned char*>(wt.w);
  const auto* sbytes_g = static_cast<const unsigned char*>(wt.scales);
  const auto* zbytes_g = static_cast<const unsigned char*>(wt.zeros);
  auto issue = [&](const Int4BulkCursor& c) {
    const std::int64_t ks = k0 + static_cast<std::int64_t>(c.st) * kStageK;
    const std::int64_t ke = ks + kStageK < k1 ? ks + kStageK : k1;
    const unsigned wb = static_cast<unsigned>((ke - ks) / 2);
    const unsigned sb = p.scale_bulk ? static_cast<unsigned>(2 * ((ke - ks) >> gshift)) : 0u;
    unsigned char* stage = ring + static_cast<std::size_t>(c.slot) * p.b.stage_bytes;
    if (lane == 0) bk::mbarrier_arrive_expect_tx(&full[c.slot], kInt4BulkTileRows * (wb + (kSigned ? 1u : 2u) * sb));
    __syncwarp();
    const int r = lane & 15;
    std::int64_t row = c.tile * kInt4BulkTileRows + r;
    row = row < wt.n ? row : wt.n - 1;
    if (lane < 16) {
      bk::bulk_copy_to_shared(stage + r * kInt4BulkRowBytes, wbytes + row * wt.ld_bytes + ks / 2, wb, &full[c.slot]);
    } else if (sb != 0) {
      const std::int64_t off = (row * wt.groups + (ks >> gshift)) * 2;
      bk::bulk_copy_to_shared(stage + sbase + r * srow, sbytes_g + off, sb, &full[c.slot]);
      if (!kSigned) bk::bulk_copy_to_shared(stage + zbase + r * srow, zbytes_g + off, sb, &full[c.slot]);
    }
  };
  Int4BulkCursor cur;
  cur.tile = tile0;
  if (producer)
    for (; cur.it < total && cur.it < stages; cur.next(per_tile, stages)) issue(cur);

  int4_stage_x<T, 4>(p.g, xs, k0, k1);
  __syncthreads();

  if (producer) {
    for (; cur.it < total; cur.next(per_tile, stages)) {
      bk::mbarrier_wait_bounded(&empty[cur.slot], cur.phase ^ 1u);
      issue(cur);
    }
    return;
  }

  // Consumers: group `grp` takes the stages it = grp (mod G) (stages % G == 0: a buffer is
  // always read by the same group, so its phases alternate as the group waits for them);
  // warp cw of the group takes chunk cw of each.
  const int grp = warp / kInt4BulkChunkWarps, cw = warp % kInt4BulkChunkWarps;
  const int g = lane >> 2, t = lane & 3;
  const int M = static_cast<int>(p.g.m);
  const std::int64_t rs = p.g.cfg.kslice + 32;
  const auto* scales = static_cast<const unsigned short*>(wt.scales);
  const auto* zeros = static_cast<const unsigned short*>(wt.zeros);
  int buf = 0;
  for (std::int64_t tile = tile0; tile < tile1; ++tile) {
    const std::int64_t rbase = tile * kInt4BulkTileRows;
    std::int64_t rows[2] = {rbase + g, rbase + g + 8};
#pragma unroll
    for (int h = 0; h < 2; ++h) rows[h] = rows[h] < wt.n ? rows[h] : wt.n - 1;
    float acc[2][NT][4] = {};
    for (int st = 0; st < per_tile; ++st, cur.next(per_tile, stages)) {
      if (G > 1 && cur.it % G != grp) continue;  // the other group's stage
      const std::int64_t ks = k0 + static_cast<std::int64_t>(st) * kStageK;
      const std::int64_t ke = ks + kStageK < k1 ? ks + kStageK : k1;
      const std::int64_t kc = ks + 128 * cw, kk = kc + 32 * t;
      const bool active = kc < ke, valid = kk < ke;  // active: warp-uniform
      unsigned short sv[2] = {0, 0}, zv[2] = {0, 0};  // past the slice: zero scales, products exactly 0
      if (!p.scale_bulk && valid) {                   // issued before the wait: the latency overlaps it
        const std::int64_t gi = kk >> gshift;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          sv[h] = __ldg(scales + rows[h] * wt.groups + gi);
          if (!kSigned) zv[h] = __ldg(zeros + rows[h] * wt.groups + gi);
        }
      }
      bk::mbarrier_wait_bounded(&full[cur.slot], cur.phase);
      const unsigned char* stage = ring + static_cast<std::size_t>(cur.slot) * p.b.stage_bytes;
      uint4 q[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
      if (valid) {
        const int gi = static_cast<int>((kk - ks) >> gshift);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = g + 8 * h;
          q[h] = *reinterpret_cast<const uint4*>(stage + r * kInt4BulkRowBytes + 64 * cw + 16 * t);
          if (p.scale_bulk) {
            sv[h] = reinterpret_cast<const unsigned short*>(stage + sbase + r * srow)[gi];
            if (!kSigned) zv[h] = reinterpret_cast<const unsigned short*>(stage + zbase + r * srow)[gi];
          }
        }
      }
      bk::fence_proxy_async_shared();  // this lane's reads of the buffer before its refill
      __syncwarp();
      if (lane == 0) bk::mbarrier_arrive(&empty[cur.slot]);
      if (!active) continue;
      const Int4GroupConst<T> ca = int4_group_const_bits<T, kSigned>(sv[0], zv[0]);
      const Int4GroupConst<T> cb = int4_group_const_bits<T, kSigned>(sv[1], zv[1]);
      const int c = static_cast<int>((kc - k0) / 128);
      const std::uint32_t qa[4] = {q[0].x, q[0].y, q[0].z, q[0].w}, qb[4] = {q[1].x, q[1].y, q[1].z, q[1].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint4 b[NT];
        int4_x_frag<T, NT>(b, xs, rs, c, i, g, t, M);
        const std::uint32_t wa = int4_prepare_word(qa[i], kSigned), wb = int4_prepare_word(qb[i], kSigned);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          std::uint32_t a[4];
          int4_a_frag<T>(a, wa, wb, h, ca, cb);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma_16816<T>(acc[h][nt], a, h == 0 ? b[nt].x : b[nt].z, h == 0 ? b[nt].y : b[nt].w);
        }
      }
    }

    // Tile end: the warps' partials (16 rows x M) through shared memory, summed in warp order.
    float* part = red + buf * (kWarps * M * kInt4BulkTileRows);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int m = 8 * nt + 2 * t + (e & 1), r = g + 8 * (e >> 1);
        if (m < M) part[(warp * M + m) * kInt4BulkTileRows + r] = __fadd_rn(acc[0][nt][e], acc[1][nt][e]);
      }
    bk::named_barrier_sync(1, kConsumers);
    for (int idx = tid; idx < M * kInt4BulkTileRows; idx += kConsumers) {
      const int m = idx / kInt4BulkTileRows, r = idx % kInt4BulkTileRows;
      const std::int64_t n = rbase + r;
      float v = part[m * kInt4BulkTileRows + r];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) v = __fadd_rn(v, part[(w * M + m) * kInt4BulkTileRows + r]);
      if (n >= wt.n) continue;
      if (p.g.cfg.splits == 1) {
        const T* bias = static_cast<const T*>(p.g.bias);
        if (bias) v = __fadd_rn(v, Int4Act<T>::to_float(bias[n]));
        static_cast<T*>(p.g.y)[m * p.g.ldy + n] = Int4Act<T>::from_float(v);
      } else {
        p.g.partial[(static_cast<std::int64_t>(slice) * M + m) * wt.n + n] = v;
      }
    }
    if (p.b.red_buffers == 2)
      buf ^= 1;  // the next tile writes the other buffer; this one is rewritten only after the next barrier
    else
      bk::named_barrier_sync(1, kConsumers);  // every read of the one buffer before the next tile's writes
  }
#endif
}

}  // namespace baracuda::gemm::kernels
