// LayerNorm / RMSNorm forward (optionally with the residual add) and backward kernels
// (host side: src/normalization/normalization.cpp; seam: norm_params.hpp).
//
// Forward (norm_fwd): a row per warp / block / cluster, held in registers (common/row_io.cuh
// layout, 16-byte loads when vec > 1). LayerNorm: each thread forms (count, mean, M2) of its
// elements from registers (two passes over registers), merged with Chan's formula across
// the warp, the block (fixed tree, common/block_reduce.cuh) and the cluster (rank order);
// RMSNorm: the sum of squares. Then y = (h - mean) * rstd * w + b from registers; one
// thread writes mean / rstd. The input is read once.
// Backward (norm_bwd): `units` persistent workers (warp / block / cluster) take rows
// unit, unit + units, ...; per row the two sums of wg and wg * xhat are reduced like the
// forward's statistic and grad_x written from registers, while grad_y * xhat and grad_y
// accumulate in registers per owned column; at the end every worker writes its column sums
// to the workspace and norm_param_grads adds the workers in order per column (no atomics).
// Split rows (any length): pass 1 (kSplitStats) reduces each slice in its block and writes
// the slice's statistic to row_stats[row][slice] (the forward also forms and stores h);
// pass 2 (kSplitApply) re-reads the slice, merges the row's statistics in slice order (every
// block of the row the same bits) and finishes like the in-register modes. Deterministic.
// Numerics: f32 for f16 / bf16 / f32, f64 for f64; rstd = 1 / sqrt(var + eps).
// Bench: `baracuda-bench --suite norm`.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/device_types.cuh"
#include "common/row_io.cuh"
#include "common/vec_io.cuh"
#include "normalization/norm_params.hpp"

namespace baracuda::kernels {

// kSplitStats / kSplitApply: the two passes of split_row (`cluster` plain blocks per row).
enum class NormMode : int { kWarp, kBlock, kCluster, kSplitStats, kSplitApply };

// Divisions without the called IEEE slow path (which spills the row held in registers):
// f32 within 2 ulp; f64 exact.
__device__ __forceinline__ float div_approx(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double div_approx(double a, double b) { return a / b; }

template <class C>
struct Welford {
  C n, mean, m2;
};
// Chan et al.: the merge of two (count, mean, M2) summaries; empty sides pass through.
template <class C>
struct MergeWelford {
  __device__ __forceinline__ Welford<C> operator()(Welford<C> a, Welford<C> b) const {
    if (a.n == C(0)) return b;
    if (b.n == C(0)) return a;
    const C n = a.n + b.n;
    const C d = b.mean - a.mean;
    const C f = div_approx(b.n, n);
    return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
  }
};
template <class C>
struct Sum2 {
  C a, b;
};
template <class C>
struct MergeSum2 {
  __device__ __forceinline__ Sum2<C> operator()(Sum2<C> x, Sum2<C> y) const { return {x.a + y.a, x.b + y.b}; }
};
template <class C>
struct MergeScalarSum {
  __device__ __forceinline__ C operator()(C x, C y) const { return x + y; }
};

__device__ __forceinline__ float norm_rsqrt(float v) { return rsqrtf(v); }
__device__ __forceinline__ double norm_rsqrt(double v) { return rsqrt(v); }

// The row / slice a thread works on for a mode.
struct RowSlot {
  std::int64_t first;  // forward: the row; backward: the worker id
  int t, nt;
  std::int64_t slice;
};
template <NormMode M>
__device__ __forceinline__ RowSlot row_slot(int cluster) {
  RowSlot s;
  if constexpr (M == NormMode::kWarp) {
    s.first = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    s.t = static_cast<int>(threadIdx.x & 31);
    s.nt = 32;
    s.slice = 0;
  } else if constexpr (M == NormMode::kBlock) {
    s.first = blockIdx.x;
    s.t = static_cast<int>(threadIdx.x);
    s.nt = static_cast<int>(blockDim.x);
    s.slice = 0;
  } else {
    s.first = static_cast<std::int64_t>(blockIdx.x) / cluster;
    s.slice = static_cast<std::int64_t>(blockIdx.x) - s.first * cluster;
    s.t = static_cast<int>(threadIdx.x);
    s.nt = static_cast<int>(blockDim.x);
  }
  return s;
}

template <NormMode M, class R, class Merge>
__device__ __forceinline__ R row_allreduce(R v, Merge merge, R identity, R* red, R* slot) {
  if constexpr (M == NormMode::kWarp) return warp_allreduce(v, merge);
  v = block_allreduce(v, merge, identity, red);
  if constexpr (M == NormMode::kCluster) v = cluster_allreduce(v, merge, slot);
  return v;
}

// The launch bounds of a bucket (norm_params.hpp).
template <class T, int V, int K, bool kBwd>
constexpr int norm_threads() {
  return norm::norm_max_threads(static_cast<int>(sizeof(T)), V, static_cast<int>(sizeof(T)) * V * K * 2, kBwd);
}

template <class T, int V, int K, NormMode M>
__global__ void __launch_bounds__(norm_threads<T, V, K, false>()) norm_fwd(norm::NormParams p) {
  using C = Compute<T>;
  __shared__ Welford<C> red_w[33];
  __shared__ Welford<C> slot_w;
  __shared__ C red_s[33];
  __shared__ C slot_s;
  const RowSlot rs = row_slot<M>(p.cluster);
  const std::int64_t row = rs.first;
  if (row >= p.rows) return;  // warp mode only (whole warps)
  const std::int64_t base = rs.slice * static_cast<std::int64_t>(rs.nt) * K * V;
  const T zero = from_compute<T>(C(0));
  Vec<T, V> h[K];
  constexpr bool kApply = M == NormMode::kSplitApply;
  if (kApply && p.add_residual)  // pass 1 stored h to residual_out
    load_slice(h, static_cast<const T*>(p.fwd.residual_out) + row_offset(p, 3, row), base, p.n, rs.t, rs.nt, zero);
  else
    load_slice(h, static_cast<const T*>(p.fwd.x) + row_offset(p, 1, row), base, p.n, rs.t, rs.nt, zero);
  if (!kApply && p.add_residual) {
    Vec<T, V> r[K];
    load_slice(r, static_cast<const T*>(p.fwd.residual) + row_offset(p, 2, row), base, p.n, rs.t, rs.nt, zero);
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) h[j].v[i] = from_compute<T>(vec_elem(h[j], i) + vec_elem(r[j], i));
    store_slice(h, static_cast<T*>(p.fwd.residual_out) + row_offset(p, 3, row), base, p.n, rs.t, rs.nt);
  }
  C count = C(0), sum = C(0);
#pragma unroll
  for (int j = 0; j < K; ++j)
    if (slice_elem(base, j, rs.t, rs.nt, V) < p.n) {
      count += C(V);
#pragma unroll
      for (int i = 0; i < V; ++i) sum += p.layer ? vec_elem(h[j], i) : vec_elem(h[j], i) * vec_elem(h[j], i);
    }
  C mean = C(0), rstd;
  const C inv_n = static_cast<C>(p.inv_n);
  Welford<C>* stats = static_cast<Welford<C>*>(p.row_stats) + row * p.cluster;  // split: the row's slices
  if constexpr (kApply) {
    Welford<C> w = stats[0];  // RMSNorm: the sum of squares in m2
    for (int i = 1; i < p.cluster; ++i) {
      if (p.layer) w = MergeWelford<C>{}(w, stats[i]);
      else w.m2 += stats[i].m2;
    }
    mean = w.mean;
    rstd = norm_rsqrt(w.m2 * inv_n + static_cast<C>(p.eps));
  } else if (p.layer) {
    Welford<C> w{count, count > C(0) ? div_approx(sum, count) : C(0), C(0)};
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (slice_elem(base, j, rs.t, rs.nt, V) < p.n) {
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const C d = vec_elem(h[j], i) - w.mean;
          w.m2 += d * d;
        }
      }
    w = row_allreduce<M>(w, MergeWelford<C>{}, Welford<C>{C(0), C(0), C(0)}, red_w, &slot_w);
    if constexpr (M == NormMode::kSplitStats) {
      if (rs.t == 0) stats[rs.slice] = w;
      return;
    }
    mean = w.mean;
    rstd = norm_rsqrt(w.m2 * inv_n + static_cast<C>(p.eps));
  } else {
    sum = row_allreduce<M>(sum, MergeScalarSum<C>{}, C(0), red_s, &slot_s);
    if constexpr (M == NormMode::kSplitStats) {
      if (rs.t == 0) stats[rs.slice] = Welford<C>{C(0), C(0), sum};
      return;
    }
    rstd = norm_rsqrt(sum * inv_n + static_cast<C>(p.eps));
  }
  const T* wt = static_cast<const T*>(p.fwd.weight);
  const T* bs = static_cast<const T*>(p.fwd.bias);
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t e = slice_elem(base, j, rs.t, rs.nt, V);
    if (e >= p.n) continue;
    Vec<T, V> w, b;
    if (p.has_weight) w = load_elems<T, V>(wt, e);
    if (p.has_bias) b = load_elems<T, V>(bs, e);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      C v = (vec_elem(h[j], i) - mean) * rstd;
      if (p.has_weight) v *= vec_elem(w, i);
      if (p.has_bias) v += vec_elem(b, i);
      h[j].v[i] = from_compute<T>(v);
    }
  }
  store_slice(h, static_cast<T*>(p.fwd.y) + row_offset(p, 0, row), base, p.n, rs.t, rs.nt);
  if (p.save_stats && rs.t == 0 && rs.slice == 0) {
    if (p.layer) static_cast<C*>(p.fwd.mean)[row] = mean;
    static_cast<C*>(p.fwd.rstd)[row] = rstd;
  }
}

template <class T, int V, int K, NormMode M>
__global__ void __launch_bounds__(norm_threads<T, V, K, true>()) norm_bwd(norm::NormParams p) {
  using C = Compute<T>;
  __shared__ Sum2<C> red[33];
  __shared__ Sum2<C> slot;
  const RowSlot rs = row_slot<M>(p.cluster);
  const std::int64_t unit = rs.first;
  const std::int64_t base = rs.slice * static_cast<std::int64_t>(rs.nt) * K * V;
  const T zero = from_compute<T>(C(0));
  const T* wt = static_cast<const T*>(p.bwd.weight);
  const C inv_n = static_cast<C>(p.inv_n);
  C acc_w[K][V], acc_b[K][V];
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int i = 0; i < V; ++i) acc_w[j][i] = acc_b[j][i] = C(0);
  for (std::int64_t row = unit; unit < p.units && row < p.rows; row += p.units) {
    Vec<T, V> g[K], x[K];
    load_slice(g, static_cast<const T*>(p.bwd.grad_y) + row_offset(p, 1, row), base, p.n, rs.t, rs.nt, zero);
    load_slice(x, static_cast<const T*>(p.bwd.x) + row_offset(p, 2, row), base, p.n, rs.t, rs.nt, zero);
    const C mean = p.layer ? static_cast<const C*>(p.bwd.mean)[row] : C(0);
    const C rstd = static_cast<const C*>(p.bwd.rstd)[row];
    Sum2<C> s{C(0), C(0)};
    Sum2<C>* stats = static_cast<Sum2<C>*>(p.row_stats) + row * p.cluster;  // split: the row's slices
#pragma unroll
    for (int j = 0; j < K && M != NormMode::kSplitApply; ++j) {
      const std::int64_t e = slice_elem(base, j, rs.t, rs.nt, V);
      Vec<T, V> w;
      if (p.has_weight && e < p.n) w = load_elems<T, V>(wt, e);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const C gv = vec_elem(g[j], i);
        const C xhat = (vec_elem(x[j], i) - mean) * rstd;
        const C wg = (p.has_weight && e < p.n) ? vec_elem(w, i) * gv : gv;
        s.a += wg;
        s.b += wg * xhat;
      }
    }
    if constexpr (M == NormMode::kSplitApply) {
      s = stats[0];
      for (int i = 1; i < p.cluster; ++i) s = MergeSum2<C>{}(s, stats[i]);
    } else {
      s = row_allreduce<M>(s, MergeSum2<C>{}, Sum2<C>{C(0), C(0)}, red, &slot);
    }
    if constexpr (M == NormMode::kSplitStats) {
      if (rs.t == 0) stats[rs.slice] = s;
      continue;
    }
    const C c1 = p.layer ? s.a * inv_n : C(0), c2 = s.b * inv_n;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::int64_t e = slice_elem(base, j, rs.t, rs.nt, V);
      if (e >= p.n) continue;
      Vec<T, V> w;
      if (p.has_weight) w = load_elems<T, V>(wt, e);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const C gv = vec_elem(g[j], i);
        const C xhat = (vec_elem(x[j], i) - mean) * rstd;
        const C wg = p.has_weight ? vec_elem(w, i) * gv : gv;
        acc_w[j][i] += gv * xhat;
        acc_b[j][i] += gv;
        g[j].v[i] = from_compute<T>(rstd * (wg - c1 - xhat * c2));
      }
    }
    store_slice(g, static_cast<T*>(p.bwd.grad_x) + row_offset(p, 0, row), base, p.n, rs.t, rs.nt);
  }
  if (M == NormMode::kSplitStats || unit >= p.units) return;  // warp mode: warps past the last worker
  C* pw = static_cast<C*>(p.partial) + unit * p.n;
  C* pb = static_cast<C*>(p.partial) + (p.units + unit) * p.n;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t e = slice_elem(base, j, rs.t, rs.nt, V);
    if (e >= p.n) continue;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (p.has_weight) pw[e + i] = acc_w[j][i];
      if (p.has_bias) pb[e + i] = acc_b[j][i];
    }
  }
}

// grad_weight / grad_bias: a block is 32 columns x 8 unit lanes; lane l adds units l, l + 8,
// ... in order, then the 8 lane sums are added in lane order (fixed: deterministic). The lanes
// keep 8x the loads in flight of a thread per column (H100 session 12: one thread per column
// took 32 us over 264 units x 8192 columns, 10% of the layer_norm backward).
inline constexpr int kParamGradCols = 32, kParamGradLanes = 8;
template <class T>
__global__ void __launch_bounds__(kParamGradCols * kParamGradLanes) norm_param_grads(norm::NormParams p) {
  using C = Compute<T>;
  __shared__ C lane_sums[kParamGradLanes][kParamGradCols];
  const bool bias_plane = blockIdx.y == 1;
  if (bias_plane ? !p.has_bias : !p.has_weight) return;  // the whole block
  const int tx = static_cast<int>(threadIdx.x) % kParamGradCols, ty = static_cast<int>(threadIdx.x) / kParamGradCols;
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kParamGradCols + tx;
  C s = C(0);
  if (c < p.n) {
    const C* part = static_cast<const C*>(p.partial) + (bias_plane ? p.units * p.n : 0) + c;
    for (std::int64_t u = ty; u < p.units; u += kParamGradLanes) s += part[u * p.n];
  }
  lane_sums[ty][tx] = s;
  __syncthreads();
  if (ty != 0 || c >= p.n) return;
#pragma unroll
  for (int l = 1; l < kParamGradLanes; ++l) s += lane_sums[l][tx];
  static_cast<T*>(bias_plane ? p.bwd.grad_bias : p.bwd.grad_weight)[c] = from_compute<T>(s);
}
// Launches norm_param_grads over p.units partials (no-op without parameter gradients).
template <class T>
Status launch_norm_param_grads(const norm::NormParams& p, cudaStream_t s) {
  if (!p.has_weight && !p.has_bias) return Status::ok();
  norm_param_grads<T><<<dim3(static_cast<unsigned>((p.n + kParamGradCols - 1) / kParamGradCols), 2),
                        kParamGradCols * kParamGradLanes, 0, s>>>(p);
  return row_launch_status("norm_param_grads");
}

template <class Kernel>
Status launch_norm_kernel(Kernel kernel, const norm::NormParams& p, std::int64_t blocks, cudaStream_t s) {
  return launch_row_kernel(kernel, p, static_cast<unsigned>(blocks), p.threads, p.impl == norm::NormImpl::kClusterRow,
                           p.cluster, s, "norm");
}

template <class T, int V, int K, NormMode M, bool kBwd>
Status launch_norm_mode(const norm::NormParams& p, cudaStream_t s) {
  const std::int64_t items = kBwd ? p.units : p.rows;  // rows (forward) or workers (backward)
  std::int64_t blocks = items;
  if constexpr (M == NormMode::kWarp) blocks = (items + p.threads / 32 - 1) / (p.threads / 32);
  if constexpr (M == NormMode::kCluster || M == NormMode::kSplitStats) blocks = items * p.cluster;
  if constexpr (M == NormMode::kSplitStats) {  // pass 1 here, pass 2 (kSplitApply) below
    if constexpr (!kBwd) BARACUDA_TRY(launch_norm_kernel(norm_fwd<T, V, K, M>, p, blocks, s));
    else BARACUDA_TRY(launch_norm_kernel(norm_bwd<T, V, K, M>, p, blocks, s));
    return launch_norm_mode<T, V, K, NormMode::kSplitApply, kBwd>(p, s);
  }
  if constexpr (M == NormMode::kSplitApply) blocks = items * p.cluster;
  if constexpr (!kBwd) {
    return launch_norm_kernel(norm_fwd<T, V, K, M>, p, blocks, s);
  } else {
    BARACUDA_TRY(launch_norm_kernel(norm_bwd<T, V, K, M>, p, blocks, s));
    return launch_norm_param_grads<T>(p, s);
  }
}

// The first kernel mode of an implementation (split_row's pass 1 launches pass 2).
constexpr NormMode first_mode(norm::NormImpl i) {
  using norm::NormImpl;
  return i == NormImpl::kWarpRow ? NormMode::kWarp : i == NormImpl::kBlockRow ? NormMode::kBlock
         : i == NormImpl::kClusterRow ? NormMode::kCluster : NormMode::kSplitStats;
}
template <class T, int V, int K, bool kBwd, norm::NormImpl I>
Status launch_norm_impl(const norm::NormParams& p, cudaStream_t s) {
  if constexpr (norm::norm_bucket_built(I, V > 1, K, kBwd)) return launch_norm_mode<T, V, K, first_mode(I), kBwd>(p, s);
  return Status(Code::kInternal, "norm: no kernel built for this (impl, vec, k)");
}

template <class T, int V, int K, bool kBwd>
Status launch_norm_k(const norm::NormParams& p, cudaStream_t s) {
  using norm::NormImpl;
  switch (p.impl) {
    case NormImpl::kWarpRow: return launch_norm_impl<T, V, K, kBwd, NormImpl::kWarpRow>(p, s);
    case NormImpl::kBlockRow: return launch_norm_impl<T, V, K, kBwd, NormImpl::kBlockRow>(p, s);
    case NormImpl::kClusterRow: return launch_norm_impl<T, V, K, kBwd, NormImpl::kClusterRow>(p, s);
    case NormImpl::kSplitRow: return launch_norm_impl<T, V, K, kBwd, NormImpl::kSplitRow>(p, s);
    case NormImpl::kTmaRow:
    case NormImpl::kTmaLean: break;  // norm_tma.cuh / norm_tma_lean.cuh, launched by the instance
  }
  return Status(Code::kInternal, "norm: no kernel built for this (impl, vec, k)");
}

template <class T, bool kBwd>
Status launch_norm(const norm::NormParams& p, cudaStream_t s) {
  if (p.rows == 0 || p.n == 0) {
    if constexpr (kBwd) {
      // no rows: the parameter gradients are sums over nothing
      if (p.n > 0) {
        norm::NormParams q = p;
        q.units = 0;
        return launch_norm_param_grads<T>(q, s);
      }
    }
    return Status::ok();
  }
  return dispatch_row_bucket<T>(
      p.vec, p.k, [&](auto v, auto k) { return launch_norm_k<T, decltype(v)::value, decltype(k)::value, kBwd>(p, s); },
      "norm");
}

// A thread's columns of weight and bias in the persistent row kernels (a thread owns vectors
// q = j * nt + t, j < K, of its slice in every row; ok[j] = q < nvec): loaded once before the
// row loop, 1 and 0 where absent or past the slice. The backward (kBias = false) has no bias.
template <class T, int V, int K, bool kBias>
__device__ __forceinline__ void load_weight_bias_cols(const norm::NormParams& p, const void* weight, const void* bias,
                                                      std::int64_t off, int nvec, int t, int nt, bool (&ok)[K],
                                                      Vec<T, V> (&wv)[K], Vec<T, V> (&bv)[K]) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const int q = j * nt + t;
    ok[j] = q < nvec;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      wv[j].v[e] = from_compute<T>(1.f);
      bv[j].v[e] = from_compute<T>(0.f);
    }
    if (ok[j] && p.has_weight) wv[j] = load_elems<T, V>(static_cast<const T*>(weight), off + static_cast<std::int64_t>(q) * V);
    if (kBias && ok[j] && p.has_bias) bv[j] = load_elems<T, V>(static_cast<const T*>(bias), off + static_cast<std::int64_t>(q) * V);
  }
}

}  // namespace baracuda::kernels
