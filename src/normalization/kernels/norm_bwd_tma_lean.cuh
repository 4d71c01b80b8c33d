// LayerNorm / RMSNorm backward fed by bulk copies: the `tma_lean` backward (sm_90; host side:
// normalization.cpp, seam: norm_params.hpp). The in-register backward (norm.cuh's norm_bwd)
// loads a row, reduces, writes, then loads the next: ncu at 16384x8192 bf16 (session 11)
// showed 62% of cycles with no eligible warp and DRAM at 40%. Here, as in the forward's
// tma_lean (norm_tma_lean.cuh), persistent blocks keep `stages` rows of grad_y and x in
// flight in shared memory (common/tma_rows.cuh), so the loads of the next rows overlap the
// reductions and stores of this one.
//
// Per row (or its slice, when a cluster splits the row):
//   pass 1, from shared memory: s1 = sum(w g), s2 = sum(w g xhat), xhat = (x - mean) rstd
//           (mean = 0 for RMSNorm); one block reduction of the pair, and with a cluster one
//           push exchange (common/cluster_push.cuh), the slices merged in rank order;
//   pass 2, from shared memory again: grad_x = rstd (w g - s1 / n - xhat s2 / n) (no s1 term
//           for RMSNorm), and the column sums g xhat and g kept in registers (a thread owns
//           the same columns in every row).
// Two kernels. Whole rows in a block (cluster 1): norm_bwd_tma_deferred, without a block
// barrier in its row loop (common/deferred_rows.cuh): a warp runs pass 1 of row i, then
// pass 2 of row i - 1, whose block sums every warp published an iteration earlier. Rows split
// over a cluster: norm_bwd_tma_lean, one block reduction (and push exchange) per row; the
// stage of row i is refilled with row i + stages after the block reduction of row i + 1,
// the first point where every thread has finished pass 2 of row i. At the end each block
// writes its column sums to partial[unit][n] (unit = the block's cluster index) and
// norm_param_grads (norm.cuh) adds the units in order per column: deterministic.
// f32 math for 16-bit and f32 rows.
// Preconditions (host): rows are one unit-stride run, 16-byte aligned, n a multiple of the
// vector, n / cluster <= threads * K * vector, stages * 2 * slice bytes of dynamic shared
// memory, workspace for 2 * (grid / cluster) * n f32 partials when there are parameter
// gradients.
#pragma once

#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/cluster_push.cuh"
#include "common/device_types.cuh"
#include "common/row_io.cuh"
#include "common/deferred_rows.cuh"
#include "common/tma_rows.cuh"
#include "common/vec_io.cuh"
#include "normalization/kernels/norm.cuh"
#include "normalization/norm_params.hpp"

namespace baracuda::kernels {

// A row's statistics and xhat = (x - mean) rstd (mean = 0 for RMSNorm); LayerNorm with
// 16-bit rows: one FFMA, x rstd + (-mean rstd) (the forward's form: an extra error
// |mean| rstd 2^-24, below what the rows' rounding carries).
template <class T, bool kLayer>
struct NormBwdRowStats {
  float mean = 0.f, rstd = 0.f, neg_mean_rstd = 0.f;
  __device__ __forceinline__ NormBwdRowStats() = default;
  __device__ __forceinline__ NormBwdRowStats(float m, float r) : mean(m), rstd(r), neg_mean_rstd(-m * r) {}
  __device__ __forceinline__ float xhat(float x) const {
    if constexpr (kLayer && sizeof(T) == 2) return fmaf(x, rstd, neg_mean_rstd);
    else return (x - mean) * rstd;
  }
};

// The thread's part of a row's (or slice's) sums: s1 = sum(w g), s2 = sum(w g xhat).
template <class T, int V, int K, bool kLayer>
__device__ __forceinline__ Sum2<float> norm_bwd_row_sums(const Vec<T, V>* sg, const Vec<T, V>* sx, const bool (&ok)[K],
                                                         const Vec<T, V> (&wv)[K], int t, int nt,
                                                         const NormBwdRowStats<T, kLayer>& st) {
  Sum2<float> s{0.f, 0.f};
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (!ok[j]) continue;
    const Vec<T, V> g = sg[j * nt + t], x = sx[j * nt + t];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float wg = vec_elem(wv[j], e) * vec_elem(g, e);
      s.a += wg;
      s.b += wg * st.xhat(vec_elem(x, e));
    }
  }
  return s;
}

// grad_x = rstd (w g - c1 - xhat c2) of the thread's columns (c1 = s1 / n, 0 for RMSNorm;
// c2 = s2 / n), and the column sums g xhat and g added to acc_w / acc_b.
template <class T, int V, int K, bool kLayer>
__device__ __forceinline__ void norm_bwd_row_finish(const Vec<T, V>* sg, const Vec<T, V>* sx, const bool (&ok)[K],
                                                    const Vec<T, V> (&wv)[K], float (&acc_w)[K][V],
                                                    float (&acc_b)[K][V], int t, int nt,
                                                    const NormBwdRowStats<T, kLayer>& st, float c1, float c2, T* gx) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (!ok[j]) continue;
    const Vec<T, V> g = sg[j * nt + t], x = sx[j * nt + t];
    Vec<T, V> o;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float gv = vec_elem(g, e);
      const float xhat = st.xhat(vec_elem(x, e));
      acc_w[j][e] += gv * xhat;
      acc_b[j][e] += gv;
      o.v[e] = from_compute<T>(st.rstd * (vec_elem(wv[j], e) * gv - c1 - xhat * c2));
    }
    store_row_vec<T, V>(gx + static_cast<std::int64_t>(j * nt + t) * V, o);
  }
}

// The thread's columns of the weight (ones without one), and zeroed column sums.
template <class T, int V, int K>
__device__ __forceinline__ void norm_bwd_thread_setup(const norm::NormParams& p, const TmaSlice& sl, int t, int nt,
                                                      bool (&ok)[K], Vec<T, V> (&wv)[K], float (&acc_w)[K][V],
                                                      float (&acc_b)[K][V]) {
  const int nvec = sl.n / V;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const int q = j * nt + t;
    ok[j] = q < nvec;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      wv[j].v[e] = from_compute<T>(1.f);
      acc_w[j][e] = acc_b[j][e] = 0.f;
    }
    if (ok[j] && p.has_weight) wv[j] = load_elems<T, V>(static_cast<const T*>(p.bwd.weight), sl.off + static_cast<std::int64_t>(q) * V);
  }
}

// The block's column sums to partial[unit][n] (weight plane) and partial[units + unit][n]
// (bias plane); unit = the block's cluster index.
template <int V, int K>
__device__ __forceinline__ void norm_bwd_write_partials(const norm::NormParams& p, const TmaSlice& sl, int t, int nt,
                                                        const bool (&ok)[K], const float (&acc_w)[K][V],
                                                        const float (&acc_b)[K][V]) {
  if (!p.has_weight && !p.has_bias) return;
  const std::int64_t unit = blockIdx.x / static_cast<unsigned>(p.cluster);
  const std::int64_t units = gridDim.x / static_cast<unsigned>(p.cluster);
  float* pw = static_cast<float*>(p.partial) + unit * p.n + sl.off;
  float* pb = static_cast<float*>(p.partial) + (units + unit) * p.n + sl.off;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (!ok[j]) continue;
    const std::int64_t e0 = static_cast<std::int64_t>(j * nt + t) * V;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (p.has_weight) pw[e0 + e] = acc_w[j][e];
      if (p.has_bias) pb[e0 + e] = acc_b[j][e];
    }
  }
}

// Rows split over a cluster: one block barrier (and one push exchange) per row.
template <class T, int K, bool kLayer>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::kTmaMinBlocks) norm_bwd_tma_lean(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = float;
  using Stats = NormBwdRowStats<T, kLayer>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ TmaRowShared sh;
  __shared__ Sum2<C> red[2][rows::kTmaMaxThreads / 32];
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const TmaSlice sl = tma_slice(p.rows, p.n, p.cluster, static_cast<int>(sizeof(T)));
  bool ok[K];
  Vec<T, V> wv[K];
  C acc_w[K][V], acc_b[K][V];
  norm_bwd_thread_setup<T, V, K>(p, sl, t, nt, ok, wv, acc_w, acc_b);
  BulkRowRing<2> ring{stage_mem, sh.full, p.stages, sl.bytes};
  auto sources = [&](std::int64_t i, const void* (&src)[2]) {  // this block's row i: grad_y, x
    const std::int64_t row = sl.first + i * sl.step;
    src[0] = static_cast<const T*>(p.bwd.grad_y) + tma_row_offset(p, 1, row) + sl.off;
    src[1] = static_cast<const T*>(p.bwd.x) + tma_row_offset(p, 2, row) + sl.off;
  };
  tma_row_begin(sh, ring, p.cluster, sl.my_rows, sources);

  const C inv_n = static_cast<C>(p.inv_n);
  const C* mean_of = static_cast<const C*>(p.bwd.mean);
  const C* rstd_of = static_cast<const C*>(p.bwd.rstd);
  int rb = 0, xk = 0;
  // A row's mean / rstd are loaded one row ahead: read at the top of their own row they cost
  // a DRAM round trip per row on the block's critical path (the arrays are cold in L2).
  C next_mean = C(0), next_rstd = C(0);
  if (sl.my_rows > 0) {
    if constexpr (kLayer) next_mean = __ldg(mean_of + sl.first);
    next_rstd = __ldg(rstd_of + sl.first);
  }
  for (std::int64_t i = 0; i < sl.my_rows; ++i) {
    const std::int64_t row = sl.first + i * sl.step;
    const Stats st(next_mean, next_rstd);
    if (i + 1 < sl.my_rows) {
      if constexpr (kLayer) next_mean = __ldg(mean_of + row + sl.step);
      next_rstd = __ldg(rstd_of + row + sl.step);
    }
    ring.wait();
    const Vec<T, V>* sg = reinterpret_cast<const Vec<T, V>*>(ring.current(0));
    const Vec<T, V>* sx = reinterpret_cast<const Vec<T, V>*>(ring.current(1));
    Sum2<C> s = norm_bwd_row_sums<T, V, K, kLayer>(sg, sx, ok, wv, t, nt, st);
    // Its barrier also ends pass 2 of the previous row in every thread: that row's stage
    // can take row (i - 1) + stages.
    s = block_allreduce_flat(s, MergeSum2<C>{}, red[rb]);
    rb ^= 1;
    if (t == 0 && i > 0 && i - 1 + ring.stages < sl.my_rows) {
      const void* src[2];
      sources(i - 1 + ring.stages, src);
      fence_proxy_async_shared();
      ring.fill(ring.s == 0 ? ring.stages - 1 : ring.s - 1, src);
    }
    if (p.cluster > 1) {
      const unsigned long long* got = cluster_push_exchange(sh.push, pack_float2(s.a, s.b), sl.rank, p.cluster, xk);
      s = Sum2<C>{C(0), C(0)};
      for (int r = 0; r < p.cluster; ++r) s = MergeSum2<C>{}(s, Sum2<C>{unpack_lo(got[r]), unpack_hi(got[r])});
    }
    T* gx = static_cast<T*>(p.bwd.grad_x) + tma_row_offset(p, 0, row) + sl.off;
    norm_bwd_row_finish<T, V, K, kLayer>(sg, sx, ok, wv, acc_w, acc_b, t, nt, st, kLayer ? s.a * inv_n : C(0),
                                         s.b * inv_n, gx);
    ring.advance();
  }
  norm_bwd_write_partials<V, K>(p, sl, t, nt, ok, acc_w, acc_b);
  if (p.cluster > 1) cluster_sync_all();  // no block exits while a peer may still push to it
#endif
}

// Whole rows in a block (cluster 1), the deferred row loop of common/deferred_rows.cuh: in
// iteration i a warp runs pass 1 of row i and publishes its warp's pair, then pass 2 of row
// i - 1 (the pairs merged in warp order after the same shuffle tree as block_allreduce_flat:
// the same bits as norm_bwd_tma_lean), then gives that row's stage back.
template <class T, int K, bool kLayer>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::kTmaMinBlocks) norm_bwd_tma_deferred(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = float;
  using Stats = NormBwdRowStats<T, kLayer>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ DeferredRowShared sh;
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x), warps = nt >> 5;
  const TmaSlice sl = tma_slice(p.rows, p.n, 1, static_cast<int>(sizeof(T)));
  bool ok[K];
  Vec<T, V> wv[K];
  C acc_w[K][V], acc_b[K][V];
  norm_bwd_thread_setup<T, V, K>(p, sl, t, nt, ok, wv, acc_w, acc_b);
  BulkRowRing<2> ring{stage_mem, sh.full, p.stages, sl.bytes};
  auto sources = [&](std::int64_t i, const void* (&src)[2]) {  // this block's row i: grad_y, x
    const std::int64_t row = sl.first + i * sl.step;
    src[0] = static_cast<const T*>(p.bwd.grad_y) + tma_row_offset(p, 1, row);
    src[1] = static_cast<const T*>(p.bwd.x) + tma_row_offset(p, 2, row);
  };
  deferred_rows_begin(sh, ring, sl.my_rows, sources);

  const C inv_n = static_cast<C>(p.inv_n);
  const C* mean_of = static_cast<const C*>(p.bwd.mean);
  const C* rstd_of = static_cast<const C*>(p.bwd.rstd);
  C next_mean = C(0), next_rstd = C(0);  // loaded a row ahead (cold in L2)
  if (sl.my_rows > 0) {
    if constexpr (kLayer) next_mean = __ldg(mean_of + sl.first);
    next_rstd = __ldg(rstd_of + sl.first);
  }
  Stats prev;         // row i - 1's statistics
  int prev_slot = 0;  // and its stage
  for (std::int64_t i = 0; i <= sl.my_rows; ++i) {
    const int slot = ring.s;
    Stats st;
    if (i < sl.my_rows) {  // pass 1 of row i
      st = Stats(next_mean, next_rstd);
      if (i + 1 < sl.my_rows) {
        const std::int64_t next_row = sl.first + (i + 1) * sl.step;
        if constexpr (kLayer) next_mean = __ldg(mean_of + next_row);
        next_rstd = __ldg(rstd_of + next_row);
      }
      ring.wait();
      const Sum2<C> s = warp_reduce_to_lane0(
          norm_bwd_row_sums<T, V, K, kLayer>(reinterpret_cast<const Vec<T, V>*>(ring.current(0)),
                                             reinterpret_cast<const Vec<T, V>*>(ring.current(1)), ok, wv, t, nt, st),
          MergeSum2<C>{});
      deferred_publish(sh, i, make_float2(s.a, s.b));
    }
    if (i > 0) {  // pass 2 of row i - 1
      const std::int64_t r = i - 1;
      const float2* pairs = deferred_wait(sh, r);
      Sum2<C> tot{pairs[0].x, pairs[0].y};
      for (int w = 1; w < warps; ++w) tot = MergeSum2<C>{}(tot, Sum2<C>{pairs[w].x, pairs[w].y});
      T* gx = static_cast<T*>(p.bwd.grad_x) + tma_row_offset(p, 0, sl.first + r * sl.step);
      norm_bwd_row_finish<T, V, K, kLayer>(reinterpret_cast<const Vec<T, V>*>(ring.at(prev_slot, 0)),
                                           reinterpret_cast<const Vec<T, V>*>(ring.at(prev_slot, 1)), ok, wv, acc_w,
                                           acc_b, t, nt, prev, kLayer ? tot.a * inv_n : C(0), tot.b * inv_n, gx);
      deferred_release(sh, ring, prev_slot, r, sl.my_rows, sources);
    }
    prev = st;
    prev_slot = slot;
    if (i < sl.my_rows) ring.advance();
  }
  norm_bwd_write_partials<V, K>(p, sl, t, nt, ok, acc_w, acc_b);
#endif
}

// grad_x by norm_bwd_tma_lean, then the parameter gradients over the units actually
// launched (with clusters, launch_tma_row trims the grid to the clusters that fit at once).
template <class T>
Status launch_norm_bwd_tma_lean(const norm::NormParams& p, cudaStream_t s) {
  const std::int64_t slice_bytes = p.n / p.cluster * static_cast<std::int64_t>(sizeof(T));
  const auto smem = static_cast<std::size_t>(rows::tma_row_smem_bytes(slice_bytes, p.stages, 2, 0));
  constexpr int K = rows::kTmaVecsPerThread;
  if constexpr (sizeof(T) > 4) {
    return Status(Code::kInternal, "norm tma_lean: f64 rows stay in the in-register kernels");
  } else {
    std::int64_t grid = p.grid;
    if (p.cluster == 1) {
      if (p.layer) BARACUDA_TRY(launch_tma_row(norm_bwd_tma_deferred<T, K, true>, p, smem, s, "norm tma_lean backward", &grid));
      else BARACUDA_TRY(launch_tma_row(norm_bwd_tma_deferred<T, K, false>, p, smem, s, "norm tma_lean backward", &grid));
    } else {
      if (p.layer) BARACUDA_TRY(launch_tma_row(norm_bwd_tma_lean<T, K, true>, p, smem, s, "norm tma_lean backward", &grid));
      else BARACUDA_TRY(launch_tma_row(norm_bwd_tma_lean<T, K, false>, p, smem, s, "norm tma_lean backward", &grid));
    }
    norm::NormParams q = p;
    q.units = grid / p.cluster;
    return launch_norm_param_grads<T>(q, s);
  }
}

}  // namespace baracuda::kernels
