// Softmax / log-softmax forward and backward fed by bulk copies: the `tma_row` implementation
// (sm_90; host side: softmax.cpp; seam: softmax_params.hpp; shared machinery:
// common/tma_rows.cuh, common/cluster_push.cuh).
//
// Why: the in-register row kernels (softmax.cuh) load a row, reduce it and write it with
// nothing else in flight; at 16 KiB rows (16384x8192 bf16) the forward reached 67% of the
// copy bandwidth, and rows split over a cluster (131072) waited on a cluster barrier with
// every thread reading every block's slot. Here blocks are persistent and keep `stages` rows
// in flight in shared memory; thread 0 refills a stage once the block holds its row in
// registers (f32, converted once), so the next rows' loads overlap this row's reductions
// and stores.
//
// Forward, per row: the block's max m (nan_max: NaN propagates), then the block's
// s = sum exp(x - m) from registers (softmax keeps e = exp(x - m) in place of x: the output
// is e * exp(m - M) / S, one multiply); a slice of -inf has no mass. A cluster exchanges the
// blocks' (m, s) once (push, rank order): M = max m_r, and S = sum s_r exp(m_r - M) formed
// by lanes r of every warp and added by an xor butterfly (the same bits in every lane and
// every block). log_softmax: (x - M) - log S. Rows of only -inf give NaN, as PyTorch.
// Backward, per row: s = sum g * y (softmax) or sum g (log_softmax) over the block and the
// cluster (rank order); grad_x = y (g - s) or g - exp(y) s, times p.scale.
// exp: 2^((x - m) log2e) by MUFU.EX2 for 16-bit rows (softmax.cuh's exp_shifted), expf for
// f32. Preconditions (host): unit axis stride, 16-byte aligned rows, len a multiple of the
// vector, len / cluster <= threads * kTmaVecsPerThread * vector, rows < 2^31.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/cluster_push.cuh"
#include "common/device_types.cuh"
#include "common/tma_rows.cuh"
#include "common/vec_io.cuh"
#include "softmax/kernels/softmax.cuh"
#include "softmax/softmax_params.hpp"

namespace baracuda::kernels {

struct MergeNanMax {
  __device__ __forceinline__ float operator()(float a, float b) const { return nan_max(a, b); }
};

template <class T>
__device__ __forceinline__ float softmax_exp(float x, float m) {
  if constexpr (kFastExp<T>) return exp_shifted(x, m);
  else return dev_exp(x - m);
}

template <class T, int K, bool kBwd, bool kLog>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::kTmaMinBlocks) softmax_tma(softmax::SoftmaxParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = float;  // 16-bit and f32 rows only
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  constexpr int kSources = kBwd ? 2 : 1;
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ TmaRowShared sh;
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int stages = p.stages;
  const TmaSlice sl = tma_slice(p.rows, p.len, p.cluster, static_cast<int>(sizeof(T)));
  const int nvec = sl.n / V;
  bool ok[K];
#pragma unroll
  for (int j = 0; j < K; ++j) ok[j] = j * nt + t < nvec;
  BulkRowRing<kSources> ring{stage_mem, sh.full, stages, sl.bytes};
  auto sources = [&](std::int64_t i, const void* (&src)[kSources]) {  // this block's row i
    const std::int64_t row = sl.first + i * sl.step;
    src[0] = static_cast<const T*>(p.in0) + tma_row_offset(p, 1, row) + sl.off;
    if constexpr (kBwd) src[1] = static_cast<const T*>(p.in1) + tma_row_offset(p, 2, row) + sl.off;
  };
  tma_row_begin(sh, ring, p.cluster, sl.my_rows, sources);
  const C ninf = -static_cast<C>(INFINITY);
  int rb = 0, xk = 0;
  // The block's barrier also means every thread holds its part of the row in registers:
  // thread 0 refills the stage right after the first block reduction of a row.
  auto reduce_and_refill = [&](C v, auto merge, std::int64_t i) {
    v = block_allreduce_flat(v, merge, sh.red[rb]);
    rb ^= 1;
    if (t == 0) ring.refill_after(i, sl.my_rows, sources);
    ring.advance();
    return v;
  };
  for (std::int64_t i = 0; i < sl.my_rows; ++i) {
    const std::int64_t row = sl.first + i * sl.step;
    ring.wait();
    T* out = static_cast<T*>(p.out) + tma_row_offset(p, 0, row) + sl.off;
    if constexpr (!kBwd) {
      const Vec<T, V>* sx = reinterpret_cast<const Vec<T, V>*>(ring.current(0));
      C h[K][V];
      C m = ninf;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const Vec<T, V> a = ok[j] ? sx[j * nt + t] : Vec<T, V>{};
#pragma unroll
        for (int e = 0; e < V; ++e) {
          h[j][e] = ok[j] ? vec_elem(a, e) : ninf;
          m = nan_max(m, h[j][e]);
        }
      }
      m = reduce_and_refill(m, MergeNanMax{}, i);
      const bool empty = m == ninf;  // the block's slice is all -inf: no mass (uniform)
      C s = C(0);
      if (!empty) {
#pragma unroll
        for (int j = 0; j < K; ++j)
#pragma unroll
          for (int e = 0; e < V; ++e) {
            const C ex = softmax_exp<T>(h[j][e], m);  // 0 for the -inf padding
            s += ex;
            if constexpr (!kLog) h[j][e] = ex;
          }
      }
      s = block_allreduce_flat(s, MergeSum<C>{}, sh.red[rb]);
      rb ^= 1;
      C mx = m, sum = s;
      if (p.cluster > 1) {
        const unsigned long long* got = cluster_push_exchange(sh.push, pack_float2(m, s), sl.rank, p.cluster, xk);
        mx = ninf;
        for (int r = 0; r < p.cluster; ++r) mx = nan_max(mx, unpack_lo(got[r]));
        const int lane = t & 31;
        C term = C(0);
        if (lane < p.cluster) {
          const C mr = unpack_lo(got[lane]);
          if (mr != ninf) term = unpack_hi(got[lane]) * dev_exp(mr - mx);
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) term += __shfl_xor_sync(0xffffffffu, term, off);
        sum = term;
      }
      if constexpr (kLog) {
        const C log_s = dev_log(sum);
#pragma unroll
        for (int j = 0; j < K; ++j) {
          if (!ok[j]) continue;
          Vec<T, V> o;
#pragma unroll
          for (int e = 0; e < V; ++e) o.v[e] = from_compute<T>((h[j][e] - mx) - log_s);
          store_row_vec<T, V>(out + static_cast<std::int64_t>(j * nt + t) * V, o);
        }
      } else {
        const C inv = C(1) / sum;
        // e was formed against the block's max: rescale to the row's (1 without a cluster)
        const C scale = p.cluster > 1 ? dev_exp(m - mx) * inv : inv;
#pragma unroll
        for (int j = 0; j < K; ++j) {
          if (!ok[j]) continue;
          Vec<T, V> o;
#pragma unroll
          for (int e = 0; e < V; ++e) o.v[e] = from_compute<T>(empty ? dev_exp(h[j][e] - mx) * inv : h[j][e] * scale);
          store_row_vec<T, V>(out + static_cast<std::int64_t>(j * nt + t) * V, o);
        }
      }
    } else {
      const Vec<T, V>* sg = reinterpret_cast<const Vec<T, V>*>(ring.current(0));
      const Vec<T, V>* sy = reinterpret_cast<const Vec<T, V>*>(ring.current(1));
      C g[K][V], y[K][V];
      C s = C(0);
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const Vec<T, V> a = ok[j] ? sg[j * nt + t] : Vec<T, V>{};
        const Vec<T, V> b = ok[j] ? sy[j * nt + t] : Vec<T, V>{};
#pragma unroll
        for (int e = 0; e < V; ++e) {
          g[j][e] = vec_elem(a, e);
          y[j][e] = vec_elem(b, e);
          s += kLog ? g[j][e] : g[j][e] * y[j][e];
        }
      }
      s = reduce_and_refill(s, MergeSum<C>{}, i);
      if (p.cluster > 1) {
        const unsigned long long* got = cluster_push_exchange(sh.push, pack_float2(s, C(0)), sl.rank, p.cluster, xk);
        s = C(0);
        for (int r = 0; r < p.cluster; ++r) s += unpack_lo(got[r]);
      }
      const C scale = static_cast<C>(p.scale);
#pragma unroll
      for (int j = 0; j < K; ++j) {
        if (!ok[j]) continue;
        Vec<T, V> o;
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = from_compute<T>(softmax_grad<T>(g[j][e], y[j][e], s, kLog, scale));
        store_row_vec<T, V>(out + static_cast<std::int64_t>(j * nt + t) * V, o);
      }
    }
  }
  if (p.cluster > 1) cluster_sync_all();  // no block exits while a peer may still push to it
#endif
}

template <class T, bool kBwd>
Status launch_softmax_tma(const softmax::SoftmaxParams& p, cudaStream_t s) {
  if constexpr (sizeof(T) > 4) {
    return Status(Code::kInternal, "softmax tma_row: f64 rows stay in the in-register kernels");
  } else {
    constexpr int K = rows::kTmaVecsPerThread;
    const auto smem = static_cast<std::size_t>(rows::tma_row_smem_bytes(
        p.len / p.cluster * static_cast<std::int64_t>(sizeof(T)), p.stages, kBwd ? 2 : 1, 0));
    if (p.log) return launch_tma_row(softmax_tma<T, K, kBwd, true>, p, smem, s, "softmax tma_row");
    return launch_tma_row(softmax_tma<T, K, kBwd, false>, p, smem, s, "softmax tma_row");
  }
}

}  // namespace baracuda::kernels
