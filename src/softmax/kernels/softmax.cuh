// Softmax / log-softmax forward and backward kernels (host side: src/softmax/softmax.cpp;
// the seam: softmax_params.hpp).
//
// What: per row of `len` elements, forward y = exp(x - m) / s or x - m - log(s) with
// (m, s) = (max, sum of exp(x - m)); backward grad_x = y * (g - sum g*y) or
// g - exp(y) * sum g, times `scale` (1, or 1 / tau for gumbel_softmax's backward).
//
// Parallel schemes (all deterministic, fixed reduction trees):
//  * row kernels (softmax_rows): a row, or a slice of it, is spread over `nt` threads; thread
//    t holds K vectors of V elements in registers, vector j at element (j * nt + t) * V of
//    the slice (16-byte loads when V > 1, coalesced). The input is read once: the thread's
//    (max, sum) is formed from registers, merged across the warp (xor butterfly), the block
//    (shared memory) and, by mode, the cluster (distributed shared memory, sm_90) or not
//    at all (split pass 1 writes it to the workspace; pass 2 merges the row's slices in
//    order and re-reads its slice). Then the outputs are written from registers.
//  * column kernel: one thread per row walks the axis with any stride; an online (max, sum)
//    sweep (one exp per element), then a second sweep writes.
// Preconditions: row kernels need unit axis stride; V > 1 needs len % V == 0 and 16-byte
// aligned rows (the plan checks both). Numerics: f32 for f16/bf16/f32, f64 for f64; NaN
// propagates through the max; (m, s) merges skip -inf maxima so rows of -inf give NaN only
// through exp(-inf - -inf), as PyTorch does. Bench: `baracuda-bench --suite softmax`.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/block_reduce.cuh"
#include "common/device_types.cuh"
#include "common/mufu.cuh"
#include "common/row_io.cuh"
#include "common/vec_io.cuh"
#include "softmax/softmax_params.hpp"

namespace baracuda::kernels {

enum class RowMode : int { kWarp, kBlock, kCluster, kSplitStats, kSplitWrite };

__device__ __forceinline__ float dev_exp(float x) { return expf(x); }
__device__ __forceinline__ double dev_exp(double x) { return exp(x); }
__device__ __forceinline__ float dev_log(float x) { return logf(x); }
__device__ __forceinline__ double dev_log(double x) { return log(x); }
template <class C>
__device__ __forceinline__ C nan_max(C a, C b) {
  return (b > a || b != b) ? b : a;
}
__device__ __forceinline__ float nan_max(float a, float b) { return mufu::max_nan(a, b); }

// f16 / bf16 rows take exp(x - m) as 2^((x - m) log2e): FADD, FMUL and one MUFU.EX2 (2^-22
// relative, and the rounding of the product adds |x - m| 2^-24: far under the 2^-9 / 2^-12
// of the stored result) where expf costs ~10 instructions. (Not x log2e - m log2e in one
// FFMA: at |m| ~ 1e30 the rounding of m log2e alone is ~1e22.) With expf the bf16 16384x8192 forward
// issued about as many instructions as its memory time allows (two exps per element).
// Non-finite inputs behave as with expf: -inf - (-inf) and inf - inf give NaN, -inf gives 0.
// The .ftz form (one instruction; without it each exp adds a compare and two predicated
// multiplies): exponents below -126 give 0, not a subnormal. In a sum of exps that is exact
// to far below the rounding (the sum holds a term of 1); an output below 2^-126 becomes 0,
// an absolute error under 1.2e-38.
template <class T>
inline constexpr bool kFastExp = sizeof(T) == 2;
__device__ __forceinline__ float exp_shifted(float x, float m) { return mufu::exp_ftz(x - m); }
template <class C>
__device__ __forceinline__ C neg_inf() {
  return -static_cast<C>(INFINITY);
}

// (max, sum of exp(x - max)); a -inf max carries no mass.
template <class C>
struct MaxSum {
  C m, s;
};
template <class C>
struct MergeMaxSum {
  __device__ __forceinline__ MaxSum<C> operator()(MaxSum<C> a, MaxSum<C> b) const {
    const C m = nan_max(a.m, b.m);
    const C sa = a.m == neg_inf<C>() ? C(0) : a.s * dev_exp(a.m - m);
    const C sb = b.m == neg_inf<C>() ? C(0) : b.s * dev_exp(b.m - m);
    return {m, sa + sb};
  }
};
// 16-bit rows: both terms rescaled by exp_shifted (FADD, FMUL, MUFU.EX2 each) where expf
// costs ~10 instructions; the merge runs 5 to 10 times a thread (warp and block trees), a
// tenth of the bf16 block row's instructions with expf. Its 2^-22 relative error is far under
// the 2^-9 / 2^-12 of the stored result. A -inf max (an empty slice) has no mass: 2^-inf = 0,
// and two empty slices shift by 0 instead of forming -inf - -inf; NaN propagates.
struct MergeMaxSumFast {
  __device__ __forceinline__ MaxSum<float> operator()(MaxSum<float> a, MaxSum<float> b) const {
    const float m = nan_max(a.m, b.m);
    const float shift = m == neg_inf<float>() ? 0.f : m;
    return {m, a.s * exp_shifted(a.m, shift) + b.s * exp_shifted(b.m, shift)};
  }
};
template <class C>
struct MergeSum {
  __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};

// The largest element of a thread's K vectors (NaN wins, as nan_max; -inf for none).
template <class C, class T, int V, int K>
__device__ __forceinline__ C thread_max(const Vec<T, V> (&x)[K]) {
  C m = neg_inf<C>();
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int i = 0; i < V; ++i) m = nan_max(m, vec_elem(x[j], i));
  return m;
}

// The statistic of a thread's registers: forward (max, sum), backward sum of g*y (softmax)
// or of g (log_softmax).
template <bool kBwd, class T, int V, int K>
struct ThreadStat;
template <class T, int V, int K>
struct ThreadStat<false, T, V, K> {
  using C = Compute<T>;
  using R = MaxSum<C>;
  static __device__ __forceinline__ R identity() { return {neg_inf<C>(), C(0)}; }
  static __device__ __forceinline__ R of(const Vec<T, V> (&x)[K], const Vec<T, V> (&)[K], bool) {
    const C m = thread_max<C>(x);
    C s = C(0);
    if (m != neg_inf<C>()) {
      if constexpr (kFastExp<T>) {
#pragma unroll
        for (int j = 0; j < K; ++j)
#pragma unroll
          for (int i = 0; i < V; ++i) s += exp_shifted(vec_elem(x[j], i), m);
      } else {
#pragma unroll
        for (int j = 0; j < K; ++j)
#pragma unroll
          for (int i = 0; i < V; ++i) s += dev_exp(vec_elem(x[j], i) - m);
      }
    }
    return {m, s};
  }
  using Merge = std::conditional_t<kFastExp<T>, MergeMaxSumFast, MergeMaxSum<C>>;
};
template <class T, int V, int K>
struct ThreadStat<true, T, V, K> {
  using C = Compute<T>;
  using R = C;
  static __device__ __forceinline__ R identity() { return C(0); }
  static __device__ __forceinline__ R of(const Vec<T, V> (&g)[K], const Vec<T, V> (&y)[K], bool log) {
    C s = C(0);
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) s += log ? vec_elem(g[j], i) : vec_elem(g[j], i) * vec_elem(y[j], i);
    return s;
  }
  using Merge = MergeSum<C>;
};

// f16 / bf16 softmax (not log): e = 2^((x - m_t) log2e) against the thread's own max m_t,
// formed once and kept in f32 registers; after the merge y = e * exp(m_t - M) / S, one
// multiply an element. (Forming exp(x - M) again for the output took two exps an element,
// ~20 instructions with the unpacking: at 16384x8192 bf16 the H200 run issued on 73% of the
// cycles at 57% of DRAM bandwidth, session 11.) Padding (-inf) gives e = 0; a thread whose
// slice is all -inf has e = 0 and scale exp(-inf - M) = 0, or NaN for a row of -inf (as
// PyTorch); NaN or +inf makes S NaN.
template <class T, int V, int K>
__device__ __forceinline__ MaxSum<float> cached_exp_stat(const Vec<T, V> (&x)[K], float (&e)[K][V]) {
  const float m = thread_max<float>(x);
  // (x - m) for m = -inf is NaN (or +inf): a slice of only -inf has no mass instead
  const float shift = m == neg_inf<float>() ? INFINITY : m;
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int i = 0; i < V; ++i) {
      e[j][i] = exp_shifted(vec_elem(x[j], i), shift);
      s += e[j][i];
    }
  return {m, s};
}
// (y is written whole, a fresh vector each: element-wise stores into the input's registers
// would keep the inputs alive to merge the halves.)
template <class T, int V, int K>
__device__ __forceinline__ void finish_cached(Vec<T, V> (&y)[K], const float (&e)[K][V], float m_own, MaxSum<float> st) {
  const float scale = dev_exp(m_own - st.m) * (1.f / st.s);
#pragma unroll
  for (int j = 0; j < K; ++j) {
    Vec<T, V> o;
#pragma unroll
    for (int i = 0; i < V; ++i) o.v[i] = from_compute<T>(e[j][i] * scale);
    y[j] = o;
  }
}

// Outputs from registers (in place over buf0) given the row's merged statistic: log_softmax,
// and softmax of f32 / f64 (16-bit softmax: finish_cached).
template <class T, int V, int K>
__device__ __forceinline__ void finish(Vec<T, V> (&x)[K], const Vec<T, V> (&)[K], MaxSum<Compute<T>> st, bool log) {
  using C = Compute<T>;
  // (x - m) - log s, never x - (m + log s): at |m| ~ 1e30 the sum m + log s is m itself.
  // f64 softmax: exp((x - m) - log s) (a double division is a called slow path that spills
  // the row).
  constexpr bool kF64 = sizeof(C) == 8;
  const C log_s = (log || kF64) ? dev_log(st.s) : C(0);
  const C inv = kF64 ? C(1) : C(1) / st.s;
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const C v = (vec_elem(x[j], i) - st.m) - log_s;
      x[j].v[i] = from_compute<T>(log ? v : dev_exp(v) * inv);
    }
}
// The backward element, times `scale` (1 for softmax: exact; 1 / tau for gumbel_softmax).
template <class T, class C>
__device__ __forceinline__ C softmax_grad(C g, C y, C sum, bool log, C scale) {
  if constexpr (kFastExp<T>) {
    return (log ? fmaf(-mufu::ex2(y * mufu::kLog2e), sum, g) : y * (g - sum)) * scale;
  } else {
    return (log ? g - dev_exp(y) * sum : y * (g - sum)) * scale;
  }
}
template <class T, int V, int K>
__device__ __forceinline__ void finish(Vec<T, V> (&g)[K], const Vec<T, V> (&y)[K], Compute<T> sum, bool log,
                                       Compute<T> scale) {
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int i = 0; i < V; ++i)
      g[j].v[i] = from_compute<T>(softmax_grad<T>(vec_elem(g[j], i), vec_elem(y[j], i), sum, log, scale));
}

// One kernel for every row mode. Grid: kWarp: blocks of `blockDim.x / 32` rows; kBlock: one
// block per row; kCluster: `slices` blocks per row (one cluster); kSplit*: `slices` blocks
// per row (flattened).
template <class T, int V, int K, RowMode M, bool kBwd>
__global__ void __launch_bounds__(
    softmax::row_max_threads(static_cast<int>(sizeof(T)), V, static_cast<int>(sizeof(T)) * V * K * (kBwd ? 2 : 1)))
softmax_rows(softmax::SoftmaxParams p) {
  using Stat = ThreadStat<kBwd, T, V, K>;
  using R = typename Stat::R;
  using C = Compute<T>;
  __shared__ R red[33];
  __shared__ R cluster_slot;
  std::int64_t row;
  int t, nt;
  std::int64_t slice = 0;
  if constexpr (M == RowMode::kWarp) {
    row = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    t = static_cast<int>(threadIdx.x & 31);
    nt = 32;
    if (row >= p.rows) return;
  } else if constexpr (M == RowMode::kBlock) {
    row = blockIdx.x;
    t = static_cast<int>(threadIdx.x);
    nt = static_cast<int>(blockDim.x);
  } else {
    row = static_cast<std::int64_t>(blockIdx.x) / p.slices;
    slice = static_cast<std::int64_t>(blockIdx.x) - row * p.slices;
    t = static_cast<int>(threadIdx.x);
    nt = static_cast<int>(blockDim.x);
  }
  const std::int64_t base = slice * static_cast<std::int64_t>(nt) * K * V;
  const T* in0 = static_cast<const T*>(p.in0) + row_offset(p, 1, row);
  T* out = static_cast<T*>(p.out) + row_offset(p, 0, row);
  Vec<T, V> a[K];
  Vec<T, V> b[kBwd ? K : 1];
  // fill: -inf for the forward max, 0 for the backward sums
  load_slice(a, in0, base, p.len, t, nt, kBwd ? from_compute<T>(C(0)) : from_compute<T>(neg_inf<C>()));
  if constexpr (kBwd) {
    const T* in1 = static_cast<const T*>(p.in1) + row_offset(p, 2, row);
    load_slice(b, in1, base, p.len, t, nt, from_compute<T>(C(0)));
  }
  // The thread's statistic merged over the row (warp, block, cluster or the split's slices).
  typename Stat::Merge merge;
  auto merged = [&](R st) {
    if constexpr (M == RowMode::kWarp) {
      st = warp_allreduce(st, merge);
    } else {
      st = block_allreduce(st, merge, Stat::identity(), red);
    }
    if constexpr (M == RowMode::kCluster) st = cluster_allreduce(st, merge, &cluster_slot);
    if constexpr (M == RowMode::kSplitStats) {
      if (t == 0) static_cast<R*>(p.partial)[row * p.slices + slice] = st;
    }
    if constexpr (M == RowMode::kSplitWrite) {
      const R* part = static_cast<const R*>(p.partial) + row * p.slices;
      R acc = part[0];
      for (std::int64_t s = 1; s < p.slices; ++s) acc = merge(acc, part[s]);
      st = acc;
    }
    return st;
  };
  // 16-bit softmax keeps its exps (finish_cached). Its own branch, merge included, so the
  // compiler never holds the exps and the log path's inputs at once (with a shared merge the
  // bf16 block row of 4 vectors spilled 40 bytes).
  if constexpr (!kBwd && kFastExp<T>) {
    if (!p.log) {
      float e[K][V];
      const MaxSum<float> own = cached_exp_stat(a, e);
      const R st = merged(own);
      if constexpr (M == RowMode::kSplitStats) return;
      finish_cached(a, e, own.m, st);
      store_slice(a, out, base, p.len, t, nt);
      return;
    }
  }
  R st;
  if constexpr (kBwd) st = merged(Stat::of(a, b, p.log));
  else st = merged(Stat::of(a, a, p.log));
  if constexpr (M == RowMode::kSplitStats) return;
  if constexpr (kBwd) finish(a, b, st, p.log, static_cast<C>(p.scale));
  else finish(a, a, st, p.log);
  store_slice(a, out, base, p.len, t, nt);
}

// s += v with Kahan's compensation c: the column kernel adds a whole row serially, whose
// plain rounding error grows with the row length (f64 65536-element rows reached 1.2e-14
// relative, H100 session 12) where the row kernels' trees grow with its log.
template <class C>
__device__ __forceinline__ void kahan_add(C& s, C& c, C v) {
  const C y = v - c;
  const C t = s + y;
  c = (t - s) - y;
  s = t;
}

// Column kernel: one thread per row, any axis stride; the sums compensated (kahan_add).
template <class T, bool kBwd>
__global__ void __launch_bounds__(256) softmax_column(softmax::SoftmaxParams p) {
  using C = Compute<T>;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= p.rows) return;
  const T* in0 = static_cast<const T*>(p.in0) + row_offset(p, 1, row);
  T* out = static_cast<T*>(p.out) + row_offset(p, 0, row);
  const std::int64_t s0 = p.axis_stride[0], s1 = p.axis_stride[1];
  if constexpr (!kBwd) {
    C m = neg_inf<C>(), s = C(0), c = C(0);
    for (std::int64_t k = 0; k < p.len; ++k) {
      const C x = to_compute(in0[k * s1]);
      if (x > m) {
        // exp(x - x): 1, or NaN for x = +inf (inf - inf), which makes the row NaN as in PyTorch
        const C r = m == neg_inf<C>() ? C(0) : dev_exp(m - x);
        s *= r;
        c *= r;
        kahan_add(s, c, dev_exp(x - x));
        m = x;
      } else if (x == x) {
        if (m != neg_inf<C>()) kahan_add(s, c, dev_exp(x - m));
      } else {
        m = x;  // NaN: sticks (nothing compares greater)
      }
    }
    constexpr bool kF64 = sizeof(C) == 8;
    const C log_s = (p.log || kF64) ? dev_log(s) : C(0);  // (x - m) - log s, as in finish()
    const C inv = kF64 ? C(1) : C(1) / s;
    for (std::int64_t k = 0; k < p.len; ++k) {
      const C v = (to_compute(in0[k * s1]) - m) - log_s;
      out[k * s0] = from_compute<T>(p.log ? v : dev_exp(v) * inv);
    }
  } else {
    const T* in1 = static_cast<const T*>(p.in1) + row_offset(p, 2, row);
    const std::int64_t s2 = p.axis_stride[2];
    C sum = C(0), c = C(0);
    for (std::int64_t k = 0; k < p.len; ++k) {
      const C g = to_compute(in0[k * s1]);
      kahan_add(sum, c, p.log ? g : g * to_compute(in1[k * s2]));
    }
    const C scale = static_cast<C>(p.scale);
    for (std::int64_t k = 0; k < p.len; ++k) {
      const C g = to_compute(in0[k * s1]), y = to_compute(in1[k * s2]);
      out[k * s0] = from_compute<T>((p.log ? g - dev_exp(y) * sum : y * (g - sum)) * scale);
    }
  }
}

template <class T, int V, int K, RowMode M, bool kBwd>
Status launch_rows_mode(const softmax::SoftmaxParams& p, cudaStream_t s) {
  const std::int64_t rows_per_block = p.threads / 32;
  const std::int64_t blocks = M == RowMode::kWarp    ? (p.rows + rows_per_block - 1) / rows_per_block
                              : M == RowMode::kBlock ? p.rows
                                                     : p.rows * p.slices;
  return launch_row_kernel(softmax_rows<T, V, K, M, kBwd>, p, static_cast<unsigned>(blocks), p.threads,
                           M == RowMode::kCluster, static_cast<int>(p.slices), s, "softmax rows");
}

template <class T, int V, int K, bool kBwd>
Status launch_rows_k(const softmax::SoftmaxParams& p, cudaStream_t s) {
  using softmax::SoftmaxImpl;
  constexpr bool kVec = V > 1;
  switch (p.impl) {
    case SoftmaxImpl::kWarpRow:
      if constexpr (softmax::row_bucket_built(SoftmaxImpl::kWarpRow, kVec, K, kBwd))
        return launch_rows_mode<T, V, K, RowMode::kWarp, kBwd>(p, s);
      break;
    case SoftmaxImpl::kBlockRow:
      if constexpr (softmax::row_bucket_built(SoftmaxImpl::kBlockRow, kVec, K, kBwd))
        return launch_rows_mode<T, V, K, RowMode::kBlock, kBwd>(p, s);
      break;
    case SoftmaxImpl::kClusterRow:
      if constexpr (softmax::row_bucket_built(SoftmaxImpl::kClusterRow, kVec, K, kBwd))
        return launch_rows_mode<T, V, K, RowMode::kCluster, kBwd>(p, s);
      break;
    case SoftmaxImpl::kSplitRow:
      if constexpr (softmax::row_bucket_built(SoftmaxImpl::kSplitRow, kVec, K, kBwd)) {
        BARACUDA_TRY((launch_rows_mode<T, V, K, RowMode::kSplitStats, kBwd>(p, s)));
        return launch_rows_mode<T, V, K, RowMode::kSplitWrite, kBwd>(p, s);
      }
      break;
    default: break;
  }
  return Status(Code::kInternal, "softmax: no row kernel built for this (impl, vec, k)");
}

// The compile-time buckets of (vec, k); the host picks only these (softmax.cpp mirrors them).
template <class T, bool kBwd>
Status launch_softmax(const softmax::SoftmaxParams& p, cudaStream_t s) {
  if (p.rows == 0 || p.len == 0) return Status::ok();
  if (p.impl == softmax::SoftmaxImpl::kColumn) {
    const auto blocks = static_cast<unsigned>((p.rows + 255) / 256);
    softmax_column<T, kBwd><<<blocks, 256, 0, s>>>(p);
    return row_launch_status("softmax column");
  }
  return dispatch_row_bucket<T>(
      p.vec, p.k,
      [&](auto v, auto k) { return launch_rows_k<T, decltype(v)::value, decltype(k)::value, kBwd>(p, s); }, "softmax");
}

}  // namespace baracuda::kernels
