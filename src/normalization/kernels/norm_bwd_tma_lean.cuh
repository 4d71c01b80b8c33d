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
// The stage of row i is refilled with row i + stages after the block reduction of row i + 1:
// that barrier is the first point where every thread has finished pass 2 of row i. At the
// end each block writes its column sums to partial[unit][n] (unit = the block's cluster
// index) and norm_param_grads (norm.cuh) adds the units in order per column: deterministic.
// f32 math for 16-bit and f32 rows. A thread holds K vectors of the row: K = 2 under a
// 64-register cap for LayerNorm's 16-bit rows that fit one block (blocks of up to 512 threads,
// two an SM: the per-thread column sums need the warps), else K = 4 under 128.
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
#include "common/tma_rows.cuh"
#include "common/vec_io.cuh"
#include "normalization/kernels/norm.cuh"
#include "normalization/norm_params.hpp"

namespace baracuda::kernels {

template <class T, int K, bool kLayer>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::tma_min_blocks(K)) norm_bwd_tma_lean(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = float;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ TmaRowShared sh;
  __shared__ Sum2<C> red[2][rows::kTmaMaxThreads / 32];
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const TmaSlice sl = tma_slice(p.rows, p.n, p.cluster, static_cast<int>(sizeof(T)));
  bool ok[K];
  Vec<T, V> wv[K], no_bias[K];
  load_weight_bias_cols<T, V, K, false>(p, p.bwd.weight, nullptr, sl.off, sl.n / V, t, nt, ok, wv, no_bias);
  // The 2-vector bucket (LayerNorm 16-bit rows of one block) reads the weight vectors from the
  // L1 each row, leaving registers to the column sums (spills 56 -> 28 bytes; H100 session 25:
  // bf16 16384x8192 0.3283 -> 0.3265 ms, f16 0.3302 -> 0.3259); the 4-vector one keeps them
  // in registers.
  auto weight_of = [&](int j) -> Vec<T, V> {
    if constexpr (K == rows::kTmaBwdVecsPerThread) {
      if (p.has_weight) return load_elems<T, V>(static_cast<const T*>(p.bwd.weight), sl.off + static_cast<std::int64_t>(j * nt + t) * V);
    }
    return wv[j];
  };
  C acc_w[K][V], acc_b[K][V];
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int e = 0; e < V; ++e) acc_w[j][e] = acc_b[j][e] = C(0);
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
  // The rows' mean / rstd ride in lanes, a batch of 32 rows at a time: lane l of every warp
  // holds those of the block's row b + l, the next batch is loaded a batch ahead, and a row
  // takes its pair by shuffle. (Read at the top of their own row they cost a DRAM round trip
  // per row on the block's critical path, the arrays being cold in L2; loaded one row ahead
  // with a block-uniform address, ptxas moved the value into a uniform register right after
  // the load, which waited there: 35% of the stall samples, ncu H100 session 21.)
  auto load_stats = [&](std::int64_t b, C& m, C& r) {
    const std::int64_t i = b + (t & 31);
    m = C(0);
    r = C(0);
    if (i < sl.my_rows) {
      const std::int64_t row = sl.first + i * sl.step;
      if constexpr (kLayer) m = __ldg(mean_of + row);
      r = __ldg(rstd_of + row);
    }
  };
  C batch_mean, batch_rstd, next_mean, next_rstd;
  load_stats(0, batch_mean, batch_rstd);
  load_stats(32, next_mean, next_rstd);
  for (std::int64_t i = 0; i < sl.my_rows; ++i) {
    const std::int64_t row = sl.first + i * sl.step;
    if (i > 0 && (i & 31) == 0) {  // block-uniform
      batch_mean = next_mean;
      batch_rstd = next_rstd;
      load_stats(i + 32, next_mean, next_rstd);
    }
    const int lane_of_row = static_cast<int>(i & 31);
    const C mean = kLayer ? __shfl_sync(0xffffffffu, batch_mean, lane_of_row) : C(0);
    const C rstd = __shfl_sync(0xffffffffu, batch_rstd, lane_of_row);
    // xhat = (x - mean) rstd; LayerNorm with 16-bit rows: one FFMA, x rstd + (-mean rstd) (the
    // forward's form: an extra error |mean| rstd 2^-24, below what the rows' rounding carries)
    const C neg_mean_rstd = -mean * rstd;
    auto xhat_of = [&](C x) {
      if constexpr (kLayer && sizeof(T) == 2) return fmaf(x, rstd, neg_mean_rstd);
      else return (x - mean) * rstd;
    };
    ring.wait();
    const Vec<T, V>* sg = reinterpret_cast<const Vec<T, V>*>(ring.current(0));
    const Vec<T, V>* sx = reinterpret_cast<const Vec<T, V>*>(ring.current(1));
    Sum2<C> s{C(0), C(0)};
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (!ok[j]) continue;
      const Vec<T, V> g = sg[j * nt + t], x = sx[j * nt + t];
      const Vec<T, V> w = weight_of(j);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C wg = vec_elem(w, e) * vec_elem(g, e);
        s.a += wg;
        s.b += wg * xhat_of(vec_elem(x, e));
      }
    }
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
    const C c1 = kLayer ? s.a * inv_n : C(0), c2 = s.b * inv_n;
    T* gx = static_cast<T*>(p.bwd.grad_x) + tma_row_offset(p, 0, row) + sl.off;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (!ok[j]) continue;
      const Vec<T, V> g = sg[j * nt + t], x = sx[j * nt + t];
      const Vec<T, V> w = weight_of(j);
      Vec<T, V> o;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C gv = vec_elem(g, e);
        const C xhat = xhat_of(vec_elem(x, e));
        acc_w[j][e] += gv * xhat;
        acc_b[j][e] += gv;
        o.v[e] = from_compute<T>(rstd * (vec_elem(w, e) * gv - c1 - xhat * c2));
      }
      store_row_vec<T, V>(gx + static_cast<std::int64_t>(j * nt + t) * V, o);
    }
    ring.advance();
  }
  if (p.has_weight || p.has_bias) {
    const std::int64_t unit = blockIdx.x / static_cast<unsigned>(p.cluster);
    const std::int64_t units = gridDim.x / static_cast<unsigned>(p.cluster);
    C* pw = static_cast<C*>(p.partial) + unit * p.n + sl.off;
    C* pb = static_cast<C*>(p.partial) + (units + unit) * p.n + sl.off;
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
  if (p.cluster > 1) cluster_sync_all();  // no block exits while a peer may still push to it
#endif
}

// grad_x by norm_bwd_tma_lean, then the parameter gradients over the units actually
// launched (with clusters, launch_tma_row trims the grid to the clusters that fit at once).
template <class T>
Status launch_norm_bwd_tma_lean(const norm::NormParams& p, cudaStream_t s) {
  const std::int64_t slice_bytes = p.n / p.cluster * static_cast<std::int64_t>(sizeof(T));
  const auto smem = static_cast<std::size_t>(rows::tma_row_smem_bytes(slice_bytes, p.stages, 2, 0));
  constexpr int K2 = rows::kTmaBwdVecsPerThread, K4 = rows::kTmaVecsPerThread;
  if constexpr (sizeof(T) > 4) {
    return Status(Code::kInternal, "norm tma_lean: f64 rows stay in the in-register kernels");
  } else {
    std::int64_t grid = p.grid;
    const char* what = "norm tma_lean backward";
    // the 2-vector bucket: LayerNorm with 16-bit rows only (normalization.cpp's tma_setup)
    if (p.k == K2) {
      if constexpr (sizeof(T) == 2) {
        if (!p.layer) return Status(Code::kInternal, "norm tma_lean backward: k = 2 is LayerNorm's bucket");
        BARACUDA_TRY(launch_tma_row(norm_bwd_tma_lean<T, K2, true>, p, smem, s, what, &grid));
      } else {
        return Status(Code::kInternal, "norm tma_lean backward: k = 2 is the 16-bit rows' bucket");
      }
    } else if (p.layer) {
      BARACUDA_TRY(launch_tma_row(norm_bwd_tma_lean<T, K4, true>, p, smem, s, what, &grid));
    } else {
      BARACUDA_TRY(launch_tma_row(norm_bwd_tma_lean<T, K4, false>, p, smem, s, what, &grid));
    }
    norm::NormParams q = p;
    q.units = grid / p.cluster;
    return launch_norm_param_grads<T>(q, s);
  }
}

}  // namespace baracuda::kernels
