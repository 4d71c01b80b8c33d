// LayerNorm / RMSNorm forward (optionally with the residual add) fed by bulk copies, lean
// form: the `tma_lean` implementation (sm_90; host side: normalization.cpp, seam:
// norm_params.hpp). Same scheme as tma_row (norm_tma.cuh: persistent blocks, `stages` rows
// in flight per block in shared memory, thread 0 refilling a stage with cp.async.bulk once
// the block holds the row in registers), with what profiling tma_row showed it lacked:
//
// - tma_row at 16384x8192 bf16 issued on about 65% of cycles (ncu, session 11): about 25
//   instructions per element, from run-time kind / parameter branches per element, 64-bit
//   stage arithmetic and bf16 conversions repeated in every pass. Here LayerNorm / RMSNorm
//   and the residual are template parameters, stages and phases are counters, the row is
//   converted to f32 once, and weight / bias (1 / 0 when absent) are loaded into registers
//   once per kernel: a thread owns the same columns of every row.
// - Rows split over a cluster (131072 columns) waited on cluster barriers, two per row, with
//   every thread reading every block's slot. Here each block forms its slice's exact
//   statistics with one barrier (each warp its sum and M2 about its own mean, from registers;
//   then every warp merges the warps' pairs by a butterfly, the same bits in every lane), and
//   the blocks exchange them once per row by pushing into each other's shared memory (common/cluster_push.cuh). The
//   slices have equal counts, so the merge is exact: mean = the average of the slice means,
//   M2 = sum of the slice M2 + n_slice * sum((mean_r - mean)^2), in rank order (every block
//   the same bits).
//
// Two kernels: norm_fwd_tma_lean (the above, one block barrier a row) and, for LayerNorm with
// whole rows in a block, layer_norm_fwd_tma_deferred (no block barrier in the row loop: each
// warp finishes row i - 1 after publishing its part of row i; common/deferred_rows.cuh).
//
// f32 math; mean = sum / n, var = M2 / n (biased), rstd = rsqrt(var + eps); with the residual
// h = x + residual is rounded to T (it is an output too) before it is normalized.
// Preconditions (host): rows are one unit-stride run, 16-byte aligned, n a multiple of the
// vector, n / cluster <= threads * kVecs * vector, stages * sources * slice bytes of dynamic
// shared memory.
#pragma once

#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/bulk_copy.cuh"
#include "common/cluster_push.cuh"
#include "common/deferred_rows.cuh"
#include "common/device_types.cuh"
#include "common/row_io.cuh"
#include "common/vec_io.cuh"
#include "common/tma_rows.cuh"
#include "normalization/kernels/norm.cuh"
#include "normalization/norm_params.hpp"

namespace baracuda::kernels {

// LayerNorm: this warp's element count n_w (a thread owns vectors j * nt + t); lane 0 stores
// (n_w, 1 / n_w; 0 when empty) to warp_count[warp] for the merge of the warps' (sum, M2).
// Returns 1 / n_w.
template <int V, int K>
__device__ __forceinline__ float ln_warp_count(int nvec, int nt, float2* warp_count) {
  const int warp = static_cast<int>(threadIdx.x >> 5);
  int vecs = 0;
#pragma unroll
  for (int j = 0; j < K; ++j) vecs += min(max(nvec - (j * nt + warp * 32), 0), 32);
  const float wn = static_cast<float>(vecs * V);
  const float inv = vecs > 0 ? 1.f / wn : 0.f;
  if ((threadIdx.x & 31) == 0) warp_count[warp] = make_float2(wn, inv);
  return inv;
}

// LayerNorm: this warp's (sum_w, M2_w about the warp's own mean) from the thread's elements
// h(j, e) and their partial sum (two passes over the registers, no barrier); lane 0's M2_w is
// the warp's.
template <int V, int K, class H>
__device__ __forceinline__ float2 ln_warp_pair(const H& h, const bool (&ok)[K], float sum, float warp_inv_n) {
  const float wsum = warp_allreduce(sum, MergeScalarSum<float>{});
  const float wmean = wsum * warp_inv_n;
  float sq = 0.f;
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float d = h(j, e) - wmean;
      sq += ok[j] ? d * d : 0.f;
    }
  return make_float2(wsum, warp_reduce_to_lane0(sq, MergeScalarSum<float>{}));
}

// LayerNorm: the warps' (sum_w, M2_w about the warp's own mean) merged in parallel: lane l
// (and l + 16) takes warp l & 15's pair (zeros past the block's warps), and two butterfly
// sums give every lane the same bits (each step adds the same two values in either order),
// in every warp: mean = sum / n, M2 = sum_w (M2_w + (sum_w - n_w mean)^2 / n_w). This
// replaced two loops over the warps run by every thread (ncu, H100: LayerNorm issued 54% more
// instructions than RMSNorm at 16384 x 8192, most of them in these loops).
__device__ __forceinline__ void ln_merge_warp_stats(const float2* stats, const float2* warp_count, int warps,
                                                    float inv_slice, float& mean, float& m2) {
  static_assert(rows::kTmaMaxThreads / 32 <= 16, "the butterfly below covers 16 warps");
  const int w = static_cast<int>(threadIdx.x & 15);
  const bool has = w < warps;
  const float2 st = has ? stats[w] : make_float2(0.f, 0.f);
  const float2 cnt = has ? warp_count[w] : make_float2(0.f, 0.f);
  float total = st.x;
#pragma unroll
  for (int x = 8; x > 0; x >>= 1) total += __shfl_xor_sync(0xffffffffu, total, x);
  mean = total * inv_slice;
  const float dm = st.x - cnt.x * mean;
  m2 = st.y + dm * dm * cnt.y;
#pragma unroll
  for (int x = 8; x > 0; x >>= 1) m2 += __shfl_xor_sync(0xffffffffu, m2, x);
}

// y = ((h - mean) rstd) w + b; LayerNorm, 16-bit outputs: (h - mean) rstd as one FFMA,
// h rstd + (-mean rstd). Its extra error, |mean| rstd 2^-24, is of the order the mean's own
// f32 rounding already carries and far below half an ulp of a 16-bit output; f32 outputs keep
// the subtraction first.
template <class T, bool kLayer>
__device__ __forceinline__ float norm_fwd_out(float h, float mean, float rstd, float neg_mean_rstd, float w, float b) {
  const float v = kLayer && sizeof(T) == 2 ? fmaf(h, rstd, neg_mean_rstd) : (h - mean) * rstd;
  return v * w + b;
}

// Launch bounds: capped at 128 registers (rows::kTmaRegCap; the host plans
// rows::tma_blocks_per_sm blocks an SM from that). Compile-time LayerNorm / RMSNorm and
// residual add, so the per-element work has no branches; weight and bias (1 and 0 when
// absent) stay in registers for the whole kernel, since a thread owns the same columns in
// every row.
template <class T, int K, bool kLayer, bool kResidual>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::kTmaMinBlocks) norm_fwd_tma_lean(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = float;  // tma_lean takes 16-bit and f32 rows only
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  constexpr int kSources = kResidual ? 2 : 1;
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ TmaRowShared sh;
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int stages = p.stages;
  const TmaSlice sl = tma_slice(p.rows, p.n, p.cluster, static_cast<int>(sizeof(T)));
  const unsigned row_bytes = sl.bytes;
  const int nvec = sl.n / V;
  bool ok[K];
  Vec<T, V> wv[K], bv[K];
  load_weight_bias_cols<T, V, K, true>(p, p.fwd.weight, p.fwd.bias, sl.off, sl.n / V, t, nt, ok, wv, bv);
  BulkRowRing<kSources> ring{stage_mem, sh.full, stages, row_bytes};
  auto sources = [&](std::int64_t i, const void* (&src)[kSources]) {  // this block's row i
    const std::int64_t row = sl.first + i * sl.step;
    src[0] = static_cast<const T*>(p.fwd.x) + tma_row_offset(p, 1, row) + sl.off;
    if constexpr (kResidual) src[1] = static_cast<const T*>(p.fwd.residual) + tma_row_offset(p, 2, row) + sl.off;
  };
  // LayerNorm: the element count of every warp of the block (a thread owns vectors j * nt + t),
  // for the merge of the warps' (sum, M2) below; the counts are fixed for the kernel.
  __shared__ float2 warp_count[rows::kTmaMaxThreads / 32];  // (n_w, 1 / n_w; 0 when empty)
  __shared__ float2 warp_stats[2][rows::kTmaMaxThreads / 32];  // a row's (sum_w, M2_w), two in turn
  const int warp = t >> 5, lane = t & 31;
  C my_warp_inv_n = C(0);
  if constexpr (kLayer) my_warp_inv_n = ln_warp_count<V, K>(nvec, nt, warp_count);
  tma_row_begin(sh, ring, p.cluster, sl.my_rows, sources);  // its barrier publishes warp_count

  const C inv_n = static_cast<C>(p.inv_n);
  const C inv_slice = C(1) / static_cast<C>(sl.n);
  const C eps = static_cast<C>(p.eps);
  int rb = 0, xk = 0;
  for (std::int64_t i = 0; i < sl.my_rows; ++i) {
    const std::int64_t row = sl.first + i * sl.step;
    ring.wait();
    const Vec<T, V>* sx = reinterpret_cast<const Vec<T, V>*>(ring.current(0));
    C h[K][V];
    C sum = C(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const Vec<T, V> a = ok[j] ? sx[j * nt + t] : Vec<T, V>{};
      Vec<T, V> r{};
      if constexpr (kResidual) r = ok[j] ? reinterpret_cast<const Vec<T, V>*>(ring.current(1))[j * nt + t] : Vec<T, V>{};
#pragma unroll
      for (int e = 0; e < V; ++e) {
        // with the residual, h is rounded to T (it is also an output) before it is normalized
        if constexpr (kResidual) h[j][e] = to_compute(from_compute<T>(vec_elem(a, e) + vec_elem(r, e)));
        else h[j][e] = vec_elem(a, e);
        sum += kLayer ? h[j][e] : h[j][e] * h[j][e];
      }
    }
    C mean = C(0), rstd;
    if constexpr (kLayer) {
      // Exact statistics of the block's slice with one barrier: each warp forms its own sum and
      // M2 about its own mean from the registers (two passes, no barrier), lane 0 publishes
      // them, and every warp merges the pairs by a butterfly (the same bits everywhere):
      // mean = sum / n, M2 = sum_w (M2_w + (sum_w - n_w mean)^2 / n_w). That barrier also
      // means every thread holds its part of the row: the stage can be refilled.
      const float2 pair = ln_warp_pair<V, K>([&](int j, int e) { return h[j][e]; }, ok, sum, my_warp_inv_n);
      if (lane == 0) warp_stats[rb][warp] = pair;
      __syncthreads();
      if (t == 0) ring.refill_after(i, sl.my_rows, sources);
      ring.advance();
      C m2;
      ln_merge_warp_stats(warp_stats[rb], warp_count, nt >> 5, inv_slice, mean, m2);
      rb ^= 1;
      // a cluster merges the slices' (mean, M2) once (equal counts: mean = average of the
      // means, M2 = sum of the M2 + n_slice * sum((mean_r - mean)^2), in rank order)
      if (p.cluster > 1) {
        const unsigned long long* got = cluster_push_exchange(sh.push, pack_float2(mean, m2), sl.rank, p.cluster, xk);
        C ms = C(0);
        for (int r = 0; r < p.cluster; ++r) ms += unpack_lo(got[r]);
        const C cm = ms / static_cast<C>(p.cluster);
        C m2s = C(0), dev = C(0);
        for (int r = 0; r < p.cluster; ++r) {
          const C d = unpack_lo(got[r]) - cm;
          m2s += unpack_hi(got[r]);
          dev += d * d;
        }
        mean = cm;
        m2 = m2s + static_cast<C>(sl.n) * dev;
      }
      rstd = norm_rsqrt(m2 * inv_n + eps);
    } else {
      // The block's sum of squares. Its barrier also means every thread holds its part of the
      // row in registers: the stage can be refilled.
      sum = block_allreduce_flat(sum, MergeScalarSum<C>{}, sh.red[rb]);
      rb ^= 1;
      if (t == 0) ring.refill_after(i, sl.my_rows, sources);
      ring.advance();
      if (p.cluster > 1) {
        const unsigned long long* got = cluster_push_exchange(sh.push, pack_float2(sum, C(0)), sl.rank, p.cluster, xk);
        sum = C(0);
        for (int r = 0; r < p.cluster; ++r) sum += unpack_lo(got[r]);
      }
      rstd = norm_rsqrt(sum * inv_n + eps);
    }
    T* y = static_cast<T*>(p.fwd.y) + tma_row_offset(p, 0, row) + sl.off;
    const C neg_mean_rstd = -mean * rstd;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (!ok[j]) continue;
      const std::int64_t e0 = static_cast<std::int64_t>(j * nt + t) * V;
      if constexpr (kResidual) {
        Vec<T, V> hv;
#pragma unroll
        for (int e = 0; e < V; ++e) hv.v[e] = from_compute<T>(h[j][e]);  // exact: h is a T value
        store_row_vec<T, V>(static_cast<T*>(p.fwd.residual_out) + tma_row_offset(p, 3, row) + sl.off + e0, hv);
      }
      Vec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        o.v[e] = from_compute<T>(norm_fwd_out<T, kLayer>(h[j][e], mean, rstd, neg_mean_rstd, vec_elem(wv[j], e), vec_elem(bv[j], e)));
      }
      store_row_vec<T, V>(y + e0, o);
    }
    if (p.save_stats && t == 0 && sl.lead) {
      if constexpr (kLayer) static_cast<C*>(p.fwd.mean)[row] = mean;
      static_cast<C*>(p.fwd.rstd)[row] = rstd;
    }
  }
  if (p.cluster > 1) cluster_sync_all();  // no block exits while a peer may still push to it
#endif
}

// LayerNorm with whole rows in a block (cluster 1), the deferred row loop of
// common/deferred_rows.cuh: in iteration i a warp takes row i from its stage into registers
// (as T: with the residual, h is rounded to T anyway) and gives the stage back at once,
// publishes its warp's (sum_w, M2_w) and writes residual_out, then finishes row i - 1 from
// the registers it kept. The warps' pairs merge as in norm_fwd_tma_lean (the same bits).
// (RMSNorm measured slower on this loop; it keeps norm_fwd_tma_lean.)
template <class T, int K, bool kResidual>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::kTmaMinBlocks) layer_norm_fwd_tma_deferred(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = float;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  constexpr int kSources = kResidual ? 2 : 1;
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ DeferredRowShared sh;
  __shared__ float2 warp_count[rows::kTmaMaxThreads / 32];
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x), warps = nt >> 5;
  const TmaSlice sl = tma_slice(p.rows, p.n, 1, static_cast<int>(sizeof(T)));
  const int nvec = sl.n / V;
  bool ok[K];
  Vec<T, V> wv[K], bv[K];
  load_weight_bias_cols<T, V, K, true>(p, p.fwd.weight, p.fwd.bias, sl.off, sl.n / V, t, nt, ok, wv, bv);
  BulkRowRing<kSources> ring{stage_mem, sh.full, p.stages, sl.bytes};
  auto sources = [&](std::int64_t i, const void* (&src)[kSources]) {  // this block's row i
    const std::int64_t row = sl.first + i * sl.step;
    src[0] = static_cast<const T*>(p.fwd.x) + tma_row_offset(p, 1, row);
    if constexpr (kResidual) src[1] = static_cast<const T*>(p.fwd.residual) + tma_row_offset(p, 2, row);
  };
  const C my_warp_inv_n = ln_warp_count<V, K>(nvec, nt, warp_count);
  deferred_rows_begin(sh, ring, sl.my_rows, sources);  // its barrier publishes warp_count

  const C inv_n = static_cast<C>(p.inv_n);
  const C inv_slice = C(1) / static_cast<C>(sl.n);
  const C eps = static_cast<C>(p.eps);
  Vec<T, V> hv[K], prev[K];  // rows i and i - 1 (zeros in the columns past the row)
  for (std::int64_t i = 0; i <= sl.my_rows; ++i) {
    if (i < sl.my_rows) {
      const int slot = ring.s;
      ring.wait();
      const Vec<T, V>* sx = reinterpret_cast<const Vec<T, V>*>(ring.current(0));
#pragma unroll
      for (int j = 0; j < K; ++j) {
        hv[j] = ok[j] ? sx[j * nt + t] : Vec<T, V>{};
        if constexpr (kResidual) {
          const Vec<T, V> r = ok[j] ? reinterpret_cast<const Vec<T, V>*>(ring.current(1))[j * nt + t] : Vec<T, V>{};
#pragma unroll
          for (int e = 0; e < V; ++e) hv[j].v[e] = from_compute<T>(vec_elem(hv[j], e) + vec_elem(r, e));
        }
      }
      deferred_release(sh, ring, slot, i, sl.my_rows, sources);
      ring.advance();
      // (sum_w, M2_w) from the T registers, converted again where used (an f32 copy of the
      // row beside two T rows, weight and bias spills)
      auto h = [&](int j, int e) { return vec_elem(hv[j], e); };
      C sum = C(0);
#pragma unroll
      for (int j = 0; j < K; ++j)
#pragma unroll
        for (int e = 0; e < V; ++e) sum += h(j, e);
      deferred_publish(sh, i, ln_warp_pair<V, K>(h, ok, sum, my_warp_inv_n));
      if constexpr (kResidual) {
        T* ro = static_cast<T*>(p.fwd.residual_out) + tma_row_offset(p, 3, sl.first + i * sl.step);
#pragma unroll
        for (int j = 0; j < K; ++j)
          if (ok[j]) store_row_vec<T, V>(ro + static_cast<std::int64_t>(j * nt + t) * V, hv[j]);
      }
    }
    if (i > 0) {  // row i - 1
      const std::int64_t r = i - 1, row = sl.first + r * sl.step;
      const float2* pairs = deferred_wait(sh, r);
      C mean, m2;
      ln_merge_warp_stats(pairs, warp_count, warps, inv_slice, mean, m2);
      const C rstd = norm_rsqrt(m2 * inv_n + eps);
      T* y = static_cast<T*>(p.fwd.y) + tma_row_offset(p, 0, row);
      const C neg_mean_rstd = -mean * rstd;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        if (!ok[j]) continue;
        Vec<T, V> o;
#pragma unroll
        for (int e = 0; e < V; ++e)
          o.v[e] = from_compute<T>(norm_fwd_out<T, true>(vec_elem(prev[j], e), mean, rstd, neg_mean_rstd,
                                                           vec_elem(wv[j], e), vec_elem(bv[j], e)));
        store_row_vec<T, V>(y + static_cast<std::int64_t>(j * nt + t) * V, o);
      }
      if (p.save_stats && t == 0) {
        static_cast<C*>(p.fwd.mean)[row] = mean;
        static_cast<C*>(p.fwd.rstd)[row] = rstd;
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j) prev[j] = hv[j];
  }
#endif
}

template <class T>
Status launch_norm_fwd_tma_lean(const norm::NormParams& p, cudaStream_t s) {
  const std::int64_t slice_bytes = p.n / p.cluster * static_cast<std::int64_t>(sizeof(T));
  const auto smem = static_cast<std::size_t>(rows::tma_row_smem_bytes(slice_bytes, p.stages, p.add_residual ? 2 : 1, 0));
  constexpr int K = rows::kTmaVecsPerThread;
  if constexpr (sizeof(T) > 4) {
    return Status(Code::kInternal, "norm tma_lean: f64 rows stay in the in-register kernels");
  } else {
    // LayerNorm with whole rows in a block: the deferred loop (H100, bf16 16384x8192, min ms
    // 0.2008 -> 0.1955); RMSNorm measured slower on it (0.1940 -> 0.2036: it converts the row
    // from T twice, and its barrier kernel issues fewer instructions) and stays on the barrier.
    if (p.cluster == 1 && p.layer) {
      if (p.add_residual) return launch_tma_row(layer_norm_fwd_tma_deferred<T, K, true>, p, smem, s, "norm tma_lean");
      return launch_tma_row(layer_norm_fwd_tma_deferred<T, K, false>, p, smem, s, "norm tma_lean");
    }
    if (p.layer && p.add_residual) return launch_tma_row(norm_fwd_tma_lean<T, K, true, true>, p, smem, s, "norm tma_lean");
    if (p.layer) return launch_tma_row(norm_fwd_tma_lean<T, K, true, false>, p, smem, s, "norm tma_lean");
    if (p.add_residual) return launch_tma_row(norm_fwd_tma_lean<T, K, false, true>, p, smem, s, "norm tma_lean");
    return launch_tma_row(norm_fwd_tma_lean<T, K, false, false>, p, smem, s, "norm tma_lean");
  }
}

}  // namespace baracuda::kernels
