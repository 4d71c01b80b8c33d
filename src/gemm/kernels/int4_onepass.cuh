// Int4GemmPlan's one-pass decode kernel (SKU w4a16_onepass): Y[M, N] = X[M, K] * dequant(W)^T
// for M <= 16 and group sizes 128 or K, as w4a16_streamk computes it (same units, fragments,
// dequantization, weight ring and X staging: kernels/int4_streamk.cuh), but in one kernel
// with no partial sums in global memory and no second pass.
//
// Why: w4a16_streamk's time has a fixed part of several us, part of it its second kernel (its
// launch, the wait for the first grid to finish and flush, the partial slots' round trip
// through the L2). Measured (H100, session 32, docs/gemm.md): 2-6% faster than w4a16_streamk
// at M <= 8 on 28672 x 8192, 6-14% slower at M = 16 (four-block clusters), so Int4GemmPlan
// takes it first for M <= 8 only.
// Parallel scheme:
//  * the output tiles (16 rows of N) are split into C contiguous ranges, one per cluster of
//    `splits` blocks (block r of a cluster takes K slice r); inside a block the 16 warps split
//    the block's units (tile, 128-k chunk), numbered tile major, into equal contiguous ranges
//    as w4a16_streamk's warps do over the whole device;
//  * a tile that lies inside one warp's range is finished by that warp: with one slice it
//    rounds (+ bias) straight into y, with several it stores its f32 sums to the block's tile
//    sums in shared memory; a tile that a warp boundary cuts is stored by each warp to its
//    own slot (one for its first tile, one for its last), and after the loop one warp adds the
//    slots in warp order;
//  * with several slices, the cluster's blocks then add the slices' tile sums in slice order
//    through distributed shared memory (block r finishes the r-th share of the tiles; sm_90),
//    so every output is the same ordered sum on every run (deterministic).
// Balance: a cluster owns floor or ceil(T / C) tiles (the busiest owns at most one tile more
// than the mean; the others' early finish leaves the DRAM to it).
// Shared memory: X's slice, the warps' rings (int4_streamk_ring_offset, stages KiB each), the
// warps' two boundary slots (16 x M f32 each), then (several slices) the block's tile sums.
// Preconditions (select checks them): as w4a16_streamk, and every warp of every block has at
// least one unit; splits <= 8 (a portable cluster), splits > 1 only on sm_90+.
#pragma once

#include <cooperative_groups.h>

#include "gemm/int4_onepass_split.hpp"
#include "gemm/kernels/int4_streamk.cuh"

namespace baracuda::gemm::kernels {

// Stores a warp's f32 sums of one tile as 16 rows x M at dst (shared memory) and clears them.
template <int NT>
__device__ __forceinline__ void int4_onepass_store(float* dst, float (&acc)[NT][4], int M, int g, int t) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int m = 8 * nt + 2 * t + (e & 1);
      if (m < M) dst[(g + 8 * (e >> 1)) * M + m] = acc[nt][e];
      acc[nt][e] = 0.0f;
    }
}

// y[m, n] = RN(v (+ bias[n])) for row `row` (0..15) of tile `tile`; rows past N are dropped.
template <class T>
__device__ __forceinline__ void int4_onepass_emit(const Int4GemvParams& p, std::int64_t tile, int row, int m, float v) {
  const std::int64_t n = tile * 16 + row;
  if (n >= p.wt.n) return;
  if (p.bias) v = __fadd_rn(v, Int4Act<T>::to_float(static_cast<const T*>(p.bias)[n]));
  static_cast<T*>(p.y)[m * p.ldy + n] = Int4Act<T>::from_float(v);
}

// Rounds a warp's f32 sums of one tile (+ bias) into y and clears them.
template <class T, int NT>
__device__ __forceinline__ void int4_onepass_emit_acc(const Int4GemvParams& p, std::int64_t tile, float (&acc)[NT][4],
                                                      int g, int t) {
  const int M = static_cast<int>(p.m);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int m = 8 * nt + 2 * t + (e & 1);
      if (m < M) int4_onepass_emit<T>(p, tile, g + 8 * (e >> 1), m, acc[nt][e]);
      acc[nt][e] = 0.0f;
    }
}

template <class T, int NT, bool kSigned, bool kTiled, int D, int kL2Prefetch>
__global__ void __launch_bounds__(kInt4StreamKWarps * 32, 1) int4_onepass_kernel(const Int4OnePassParams P) {
  extern __shared__ uint4 smem_raw[];
  constexpr int W = kInt4StreamKWarps;
  const Int4GemvParams& p = P.g;
  const Int4Weights& wt = p.wt;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int M = static_cast<int>(p.m), tile_floats = 16 * M;
  auto* smem = reinterpret_cast<unsigned char*>(smem_raw);
  T* xs = reinterpret_cast<T*>(smem);
  uint4* ring = reinterpret_cast<uint4*>(smem + P.o.ring_offset) + warp * D * 64 + lane;
  float* slots = reinterpret_cast<float*>(smem + P.o.slots_offset);  // [warp][first / last][16][M]
  float* sums = reinterpret_cast<float*>(smem + P.o.sums_offset);    // [local tile][16][M] (clustered)
  const int splits = p.cfg.splits;
  const bool clustered = splits > 1;  // a cluster of `splits` blocks, one per K slice
  const int split = static_cast<int>(blockIdx.x % splits);
  const std::int64_t cluster = blockIdx.x / splits;
  const std::int64_t tile0 = cluster * P.o.tiles / P.o.clusters;
  const int ntiles = static_cast<int>((cluster + 1) * P.o.tiles / P.o.clusters - tile0);
  const std::int64_t k0 = split * p.cfg.kslice, k1 = k0 + p.cfg.kslice < wt.k ? k0 + p.cfg.kslice : wt.k;
  const int chunks = int4_streamk_chunks(p, split);
  const Int4OnePassSplit sp{ntiles * chunks, chunks, W};  // units < 2^31: select checks
  const int u0 = sp.bound(warp), u1 = sp.bound(warp + 1), first_lt = u0 / chunks;
  // Where the warp's sums of a tile go: a tile inside the range is finished here; a cut tile
  // goes to the warp's first or last slot.
  int4_streamk_warp_run<T, NT, kSigned, kTiled, D, kL2Prefetch>(
      p, xs, ring, k0, k1, chunks, tile0 + first_lt, u0 - first_lt * chunks, u1 - u0,
      [&](float (&acc)[NT][4], std::int64_t tile, bool) {
        const int lt = static_cast<int>(tile - tile0);
        if (!sp.whole(lt, u0, u1)) {
          int4_onepass_store<NT>(slots + (2 * warp + sp.slot(warp, lt)) * tile_floats, acc, M, g, t);
        } else if (clustered) {
          int4_onepass_store<NT>(sums + lt * tile_floats, acc, M, g, t);
        } else {
          int4_onepass_emit_acc<T, NT>(p, tile, acc, g, t);
        }
      });
  baracuda::kernels::pdl_trigger();
  __syncthreads();

  // The cut tiles: each added by one warp, its slots in warp order (Int4OnePassSplit).
  if (const int c_lt = sp.combined_tile(warp); c_lt >= 0) {
    const int end = (c_lt + 1) * chunks;
    for (int o = lane; o < tile_floats; o += 32) {
      float v = 0.0f;
      for (int j = warp - 1; j < W && sp.bound(j) < end; ++j)
        v = __fadd_rn(v, slots[(2 * j + sp.slot(j, c_lt)) * tile_floats + o]);
      if (clustered)
        sums[c_lt * tile_floats + o] = v;
      else
        int4_onepass_emit<T>(p, tile0 + c_lt, o / M, o % M, v);
    }
  }
  if (clustered) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();  // every slice's tile sums are complete and visible to the cluster
    // Block `split` finishes its share of the tiles, 4 sums a thread (16-byte remote reads;
    // a tile's 16 M sums are a multiple of 4), each the slices' sums in slice order.
    const int lt0 = split * ntiles / splits, lt1 = (split + 1) * ntiles / splits;
    for (int o = lt0 * tile_floats + 4 * static_cast<int>(threadIdx.x); o < lt1 * tile_floats; o += 4 * blockDim.x) {
      float4 v = *reinterpret_cast<const float4*>(cl.map_shared_rank(sums + o, 0u));
      for (int r = 1; r < splits; ++r) {
        const float4 w = *reinterpret_cast<const float4*>(cl.map_shared_rank(sums + o, static_cast<unsigned>(r)));
        v = make_float4(__fadd_rn(v.x, w.x), __fadd_rn(v.y, w.y), __fadd_rn(v.z, w.z), __fadd_rn(v.w, w.w));
      }
      const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int tl = (o + i) / tile_floats, rest = o + i - tl * tile_floats;
        int4_onepass_emit<T>(p, tile0 + tl, rest / M, rest % M, e[i]);
      }
    }
    cl.sync();  // no block leaves while others read its tile sums
#else
    __trap();
#endif
  }
}

}  // namespace baracuda::gemm::kernels
