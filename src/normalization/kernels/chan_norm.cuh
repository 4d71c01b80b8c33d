// BatchNorm / GroupNorm / InstanceNorm forward and backward kernels (host side:
// src/normalization/chan_norm.cpp; seam and vocabulary: chan_norm_params.hpp).
//
// What: x viewed as [N, C, S]; statistics per channel (BatchNorm) or per (n, group)
// (GroupNorm, InstanceNorm = GroupNorm with C groups); y = (x - mean) * invstd * w + b and
// PyTorch's backward.
// Parallel scheme (three launches, memory-bound):
//   1. chan_reduce: one warp per (segment, chunk) item - a chunk of `chunk_len` values of
//      one segment (a channel's N planes, a group's C/G planes, or one plane) - loads 4
//      16-byte vectors per lane in flight (or scalars on the strided path), accumulates
//      Welford (count, mean, M2) (forward) or (sum grad_y, sum grad_y * (x - mean))
//      (backward) in the compute type, merges the lanes with a fixed shuffle tree and
//      writes the item's partial to the workspace. Many warps per segment: the reduction
//      spreads over the whole GPU for few large channels too.
//   2. a finalize kernel, one thread per channel / group: merges its chunks' partials in
//      chunk order in f64, writes the saved statistics, the running stats (momentum,
//      unbiased variance), the parameter gradients, and per-(n, c) coefficients {m, a, b, k}.
//   3. chan_apply: a grid-stride map over [N, C, S] in logical order (16-byte vectors when
//      the spatial dims are one unit-stride run): y = (x - m) * a + b, or
//      grad_x = a * grad_y + k * (x - m) + b.
// No atomics: the same inputs give the same bits, run after run.
// Empty inputs (PyTorch's semantics): a statistic over no values has mean 0 and variance 0
// (rstd 1 / sqrt(eps)); the backward writes zero parameter gradients; the InstanceNorm running
// update over N = 0 instances writes NaN. The apply pass launches nothing when x is empty.
// Preconditions (checked by the plans): vec > 1 needs S % vec == 0, unit spatial stride,
// 16-byte aligned pointers and plane strides that are whole vectors; fast 32-bit divisions
// when the divided values fit in 31 bits (else 64-bit division).
// Numerics: f32 for f16 / bf16 / f32, f64 for f64; the finalize runs in f64.
// Bench: `baracuda-bench --suite norm` (batch_norm*, group_norm*).
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>
#include <string>

#include "common/block_reduce.cuh"
#include "common/device_types.cuh"
#include "common/indexing.cuh"
#include "common/vec_io.cuh"
#include "normalization/chan_norm_params.hpp"

namespace baracuda::kernels {

using chnorm::ChanNormParams;
using chnorm::ChanOp;

inline constexpr int kChanBlock = chnorm::kWarpsPerBlock * 32;
inline constexpr int kChanUnroll = 4;
inline constexpr int kFinalizeBlock = 128;

// n / d with the 32-bit multiply-high divider when the host found every dividend fits.
struct ChanDiv {
  FastDivmod f;
  std::int64_t d = 1;
  bool fast = false;
  ChanDiv() = default;
  __host__ ChanDiv(std::int64_t divisor, std::int64_t max_dividend) : d(divisor > 0 ? divisor : 1) {
    fast = d < (1ll << 31) && max_dividend < (1ll << 31);
    if (fast) f = FastDivmod(static_cast<uint32_t>(d));
  }
  __device__ __forceinline__ std::int64_t div(std::int64_t n) const {
    return fast ? static_cast<std::int64_t>(f.div(static_cast<uint32_t>(n))) : n / d;
  }
};

// Offset of spatial index s (row-major over the spatial dims) in operand op.
__device__ __forceinline__ std::int64_t chan_spatial_offset(const ChanNormParams& p, int op, std::int64_t s) {
  if (p.sp_rank == 1) return s * p.sp_stride[op][0];
  std::int64_t off = 0;
  for (int d = p.sp_rank - 1; d >= 0; --d) {
    const std::int64_t q = s / p.sp_shape[d];
    off += (s - q * p.sp_shape[d]) * p.sp_stride[op][d];
    s = q;
  }
  return off;
}

template <class C>
struct ChanWelford {
  C n, mean, m2;
};
template <class C>
struct ChanSums {
  C dy, dyxm;  // sum(grad_y), sum(grad_y * (x - mean))
};
template <class C>
struct ChanCoef {
  C m, a, b, k;
};

__device__ __forceinline__ float chan_div(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double chan_div(double a, double b) { return a / b; }

// Chan et al.'s merge of (count, mean, M2); an empty side passes the other through.
template <class C>
__device__ __forceinline__ ChanWelford<C> chan_merge(ChanWelford<C> a, ChanWelford<C> b) {
  if (a.n == C(0)) return b;
  if (b.n == C(0)) return a;
  const C n = a.n + b.n, d = b.mean - a.mean, f = chan_div(b.n, n);
  return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}
template <class C, int V>
__device__ __forceinline__ void chan_add_values(ChanWelford<C>& st, const C (&v)[V]) {
  C sum = C(0);
#pragma unroll
  for (int i = 0; i < V; ++i) sum += v[i];
  const C lm = sum * (C(1) / C(V));
  C m2 = C(0);
#pragma unroll
  for (int i = 0; i < V; ++i) m2 += (v[i] - lm) * (v[i] - lm);
  st = chan_merge(st, ChanWelford<C>{C(V), lm, m2});
}

// A per-channel array element (x's dtype, or the compute type when is_c) as double.
template <class T>
__device__ __forceinline__ double chan_load(const void* ptr, bool is_c, std::int64_t i) {
  if (is_c) return static_cast<double>(static_cast<const Compute<T>*>(ptr)[i]);
  return static_cast<double>(to_compute(static_cast<const T*>(ptr)[i]));
}
template <class T>
__device__ __forceinline__ void chan_store(void* ptr, bool is_c, std::int64_t i, double v) {
  using C = Compute<T>;
  if (is_c) static_cast<C*>(ptr)[i] = static_cast<C>(v);
  else static_cast<T*>(ptr)[i] = from_compute<T>(static_cast<C>(v));
}

template <class C>
__device__ __forceinline__ C* ws_at(const ChanNormParams& p, std::size_t off) {
  return reinterpret_cast<C*>(static_cast<char*>(p.ws) + off);
}

// ---- pass 1: one warp per (segment, chunk)
template <class T, int V, bool Bwd>
__global__ void __launch_bounds__(kChanBlock) chan_reduce(const ChanNormParams p, const ChanDiv plane_div) {
  using C = Compute<T>;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * chnorm::kWarpsPerBlock + (threadIdx.x >> 5);
  if (item >= p.segs * p.chunks) return;  // whole warps
  const std::int64_t k = item / p.chunks, j = item - k * p.chunks;
  const std::int64_t hi = k / p.seg_lo, lo = k - hi * p.seg_lo;
  const T* x = static_cast<const T*>(p.x) + hi * p.seg_hi_stride[0] + lo * p.seg_lo_stride[0];
  const T* g = Bwd ? static_cast<const T*>(p.dy) + hi * p.seg_hi_stride[1] + lo * p.seg_lo_stride[1] : nullptr;
  const std::int64_t total = p.planes * p.S;
  const std::int64_t e0 = j * p.chunk_len, e1 = e0 + p.chunk_len < total ? e0 + p.chunk_len : total;
  C mean = C(0);
  if constexpr (Bwd) {
    const std::int64_t mi = k / p.mean_div;
    mean = static_cast<C>(p.op == ChanOp::kEval ? chan_load<T>(p.running_mean, p.rm_c, mi * p.rm_stride)
                                                : chan_load<T>(p.stat_mean, true, mi));
  }
  ChanWelford<C> st{C(0), C(0), C(0)};
  ChanSums<C> sums{C(0), C(0)};
  if constexpr (V > 1) {
    const std::int64_t sv = p.S / V, v1 = e1 / V;
    for (std::int64_t v0 = e0 / V + lane; v0 < v1; v0 += 32 * kChanUnroll) {
      Vec<T, V> xb[kChanUnroll], gb[kChanUnroll];
#pragma unroll
      for (int u = 0; u < kChanUnroll; ++u) {
        const std::int64_t v = v0 + 32 * u;
        if (v < v1) {
          const std::int64_t pl = plane_div.div(v), s = (v - pl * sv) * V;
          xb[u] = load_vec<T, V>(x + pl * p.plane_stride[0] + s);
          if constexpr (Bwd) gb[u] = load_vec<T, V>(g + pl * p.plane_stride[1] + s);
        }
      }
#pragma unroll
      for (int u = 0; u < kChanUnroll; ++u) {
        if (v0 + 32 * u >= v1) break;
        C xv[V];
#pragma unroll
        for (int i = 0; i < V; ++i) xv[i] = to_compute(xb[u].v[i]);
        if constexpr (Bwd) {
#pragma unroll
          for (int i = 0; i < V; ++i) {
            const C gv = to_compute(gb[u].v[i]);
            sums.dy += gv;
            sums.dyxm += gv * (xv[i] - mean);
          }
        } else {
          chan_add_values<C, V>(st, xv);
        }
      }
    }
  } else {
    for (std::int64_t e = e0 + lane; e < e1; e += 32) {
      const std::int64_t pl = plane_div.div(e), s = e - pl * p.S;
      const C xv[1] = {to_compute(x[pl * p.plane_stride[0] + chan_spatial_offset(p, 0, s)])};
      if constexpr (Bwd) {
        const C gv = to_compute(g[pl * p.plane_stride[1] + chan_spatial_offset(p, 1, s)]);
        sums.dy += gv;
        sums.dyxm += gv * (xv[0] - mean);
      } else {
        chan_add_values<C, 1>(st, xv);
      }
    }
  }
  if constexpr (Bwd) {
    sums = warp_allreduce(sums, [](ChanSums<C> a, ChanSums<C> b) { return ChanSums<C>{a.dy + b.dy, a.dyxm + b.dyxm}; });
    if (lane == 0) ws_at<ChanSums<C>>(p, p.partial_off)[item] = sums;
  } else {
    st = warp_allreduce(st, [](ChanWelford<C> a, ChanWelford<C> b) { return chan_merge(a, b); });
    if (lane == 0) ws_at<ChanWelford<C>>(p, p.partial_off)[item] = st;
  }
}

// ---- finalize (one thread per channel / group; f64, chunks in order)
struct ChanMerged {
  double n, mean, m2;
};
template <class C>
__device__ __forceinline__ ChanMerged chan_merge_chunks(const ChanNormParams& p, std::int64_t seg) {
  const ChanWelford<C>* part = ws_at<ChanWelford<C>>(p, p.partial_off) + seg * p.chunks;
  ChanMerged r{0, 0, 0};
  for (std::int64_t j = 0; j < p.chunks; ++j) {
    const ChanWelford<C> b = part[j];
    const double bn = b.n;
    if (bn == 0) continue;
    const double n = r.n + bn, d = static_cast<double>(b.mean) - r.mean;
    r.mean += d * bn / n;
    r.m2 += static_cast<double>(b.m2) + d * d * r.n * bn / n;
    r.n = n;
  }
  return r;
}
template <class T>
__device__ __forceinline__ double chan_weight(const ChanNormParams& p, std::int64_t c) {
  return p.has_weight ? chan_load<T>(p.weight, p.w_c, c * p.w_stride) : 1.0;
}
template <class T>
__device__ __forceinline__ double chan_bias(const ChanNormParams& p, std::int64_t c) {
  return p.has_bias ? chan_load<T>(p.bias, p.b_c, c * p.b_stride) : 0.0;
}
template <class C>
__device__ __forceinline__ void put_coef(const ChanNormParams& p, std::int64_t i, double m, double a, double b, double k) {
  ws_at<ChanCoef<C>>(p, p.coef_off)[i] = ChanCoef<C>{static_cast<C>(m), static_cast<C>(a), static_cast<C>(b), static_cast<C>(k)};
}
__device__ __forceinline__ std::int64_t chan_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * kFinalizeBlock + threadIdx.x;
}

// BatchNorm training forward: per channel.
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_batch(const ChanNormParams p) {
  using C = Compute<T>;
  const std::int64_t c = chan_thread();
  if (c >= p.C) return;
  const ChanMerged s = chan_merge_chunks<C>(p, c);
  // N * S == 0: no values (mean 0); their variance is taken as 0. The host leaves
  // update_running off then (the running stats stay as they are, as PyTorch).
  const double var = s.n > 0 ? s.m2 / s.n : 0.0, invstd = 1.0 / sqrt(var + p.eps);
  if (p.save_stats) {
    static_cast<C*>(p.stat_mean)[c] = static_cast<C>(s.mean);
    static_cast<C*>(p.stat_rstd)[c] = static_cast<C>(invstd);
  }
  if (p.update_running) {
    const double rm = chan_load<T>(p.running_mean, p.rm_c, c * p.rm_stride);
    const double rv = chan_load<T>(p.running_var, p.rv_c, c * p.rv_stride);
    chan_store<T>(p.running_mean, p.rm_c, c * p.rm_stride, (1 - p.momentum) * rm + p.momentum * s.mean);
    chan_store<T>(p.running_var, p.rv_c, c * p.rv_stride, (1 - p.momentum) * rv + p.momentum * s.m2 / (s.n - 1));
  }
  put_coef<C>(p, c, s.mean, chan_weight<T>(p, c) * invstd, chan_bias<T>(p, c), 0.0);
}

// Running statistics (eval): per channel; forward coefficients or backward ones + grads.
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_eval(const ChanNormParams p) {
  using C = Compute<T>;
  const std::int64_t c = chan_thread();
  if (c >= p.C) return;
  const double rm = chan_load<T>(p.running_mean, p.rm_c, c * p.rm_stride);
  const double invstd = 1.0 / sqrt(chan_load<T>(p.running_var, p.rv_c, c * p.rv_stride) + p.eps);
  put_coef<C>(p, c, rm, chan_weight<T>(p, c) * invstd, chan_bias<T>(p, c), 0.0);
}

// GroupNorm / InstanceNorm forward: per (n, group); coefficients per (n, c) of the group.
// InstanceNorm with running stats keeps each segment's mean and unbiased variance (extra).
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_group(const ChanNormParams p) {
  using C = Compute<T>;
  const std::int64_t k = chan_thread();
  if (k >= p.N * p.G) return;
  const ChanMerged s = chan_merge_chunks<C>(p, k);
  // InstanceNorm with S == 0: no values (mean 0, variance taken as 0); update_running is off
  const double rstd = 1.0 / sqrt((s.n > 0 ? s.m2 / s.n : 0.0) + p.eps);
  if (p.save_stats) {
    static_cast<C*>(p.stat_mean)[k] = static_cast<C>(s.mean);
    static_cast<C*>(p.stat_rstd)[k] = static_cast<C>(rstd);
  }
  if (p.update_running) {
    double* extra = ws_at<double>(p, p.extra_off);
    extra[2 * k] = s.mean;
    extra[2 * k + 1] = s.m2 / (s.n - 1);
  }
  const std::int64_t n = k / p.G, g = k - n * p.G;
  for (std::int64_t c = g * p.Cg; c < (g + 1) * p.Cg; ++c)
    put_coef<C>(p, n * p.C + c, s.mean, chan_weight<T>(p, c) * rstd, chan_bias<T>(p, c), 0.0);
}
// InstanceNorm running stats: per channel, the mean over n of the instances' statistics.
// N == 0: F.instance_norm's mean over no instance is 0 / 0, so both become NaN.
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_instance_running(const ChanNormParams p) {
  const std::int64_t c = chan_thread();
  if (c >= p.C) return;
  if (p.N == 0) {
    chan_store<T>(p.running_mean, p.rm_c, c * p.rm_stride, CUDART_NAN);
    chan_store<T>(p.running_var, p.rv_c, c * p.rv_stride, CUDART_NAN);
    return;
  }
  const double* extra = ws_at<double>(p, p.extra_off);
  double m = 0, v = 0;
  for (std::int64_t n = 0; n < p.N; ++n) {
    m += extra[2 * (n * p.C + c)];
    v += extra[2 * (n * p.C + c) + 1];
  }
  m /= static_cast<double>(p.N);
  v /= static_cast<double>(p.N);
  const double rm = chan_load<T>(p.running_mean, p.rm_c, c * p.rm_stride);
  const double rv = chan_load<T>(p.running_var, p.rv_c, c * p.rv_stride);
  chan_store<T>(p.running_mean, p.rm_c, c * p.rm_stride, (1 - p.momentum) * rm + p.momentum * m);
  chan_store<T>(p.running_var, p.rv_c, c * p.rv_stride, (1 - p.momentum) * rv + p.momentum * v);
}

template <class C>
__device__ __forceinline__ void chan_sum_chunks(const ChanNormParams& p, std::int64_t seg, double& dy, double& dyxm) {
  const ChanSums<C>* part = ws_at<ChanSums<C>>(p, p.partial_off) + seg * p.chunks;
  dy = dyxm = 0;
  for (std::int64_t j = 0; j < p.chunks; ++j) {
    dy += static_cast<double>(part[j].dy);
    dyxm += static_cast<double>(part[j].dyxm);
  }
}
template <class T>
__device__ __forceinline__ void chan_store_grads(const ChanNormParams& p, std::int64_t c, double gw, double gb) {
  if (p.grad_weight_on) chan_store<T>(p.grad_weight, p.gw_c, c * p.gw_stride, gw);
  if (p.grad_bias_on) chan_store<T>(p.grad_bias, p.gb_c, c * p.gb_stride, gb);
}

// BatchNorm backward (training: saved mean / invstd; eval: running stats): per channel.
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_batch_bwd(const ChanNormParams p) {
  using C = Compute<T>;
  const std::int64_t c = chan_thread();
  if (c >= p.C) return;
  if (p.N * p.S == 0) {  // no values: zero parameter gradients (as PyTorch), whatever the saved stats hold
    chan_store_grads<T>(p, c, 0.0, 0.0);
    return;
  }
  double sdy, sdyxm;
  chan_sum_chunks<C>(p, c, sdy, sdyxm);
  const bool train = p.op == ChanOp::kBatchTrain;
  const double mean = train ? chan_load<T>(p.stat_mean, true, c) : chan_load<T>(p.running_mean, p.rm_c, c * p.rm_stride);
  const double invstd = train ? chan_load<T>(p.stat_rstd, true, c)
                              : 1.0 / sqrt(chan_load<T>(p.running_var, p.rv_c, c * p.rv_stride) + p.eps);
  chan_store_grads<T>(p, c, sdyxm * invstd, sdy);
  const double a = chan_weight<T>(p, c) * invstd, m = static_cast<double>(p.N * p.S);
  if (train) put_coef<C>(p, c, mean, a, -a * sdy / m, -a * invstd * invstd * sdyxm / m);
  else put_coef<C>(p, c, mean, a, 0.0, 0.0);
}

// GroupNorm / InstanceNorm backward, step A: per (n, group): the plane sums of its channels
// (kept in extra for step B) and the coefficients of its planes.
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_group_bwd(const ChanNormParams p) {
  using C = Compute<T>;
  const std::int64_t k = chan_thread();
  if (k >= p.N * p.G) return;
  const std::int64_t n = k / p.G, g = k - n * p.G;
  double* extra = ws_at<double>(p, p.extra_off);
  double s1 = 0, s2 = 0;
  for (std::int64_t c = g * p.Cg; c < (g + 1) * p.Cg; ++c) {
    double dy, dyxm;
    chan_sum_chunks<C>(p, n * p.C + c, dy, dyxm);
    extra[2 * (n * p.C + c)] = dy;
    extra[2 * (n * p.C + c) + 1] = dyxm;
    const double w = chan_weight<T>(p, c);
    s1 += w * dy;
    s2 += w * dyxm;
  }
  const double mean = chan_load<T>(p.stat_mean, true, k), rstd = chan_load<T>(p.stat_rstd, true, k);
  const double m = static_cast<double>(p.Cg * p.S);
  for (std::int64_t c = g * p.Cg; c < (g + 1) * p.Cg; ++c)
    put_coef<C>(p, n * p.C + c, mean, chan_weight<T>(p, c) * rstd, -rstd * s1 / m, -rstd * rstd * rstd * s2 / m);
}
// Step B: per channel, the parameter gradients summed over n in order.
template <class T>
__global__ void __launch_bounds__(kFinalizeBlock) chan_finalize_group_grads(const ChanNormParams p) {
  const std::int64_t c = chan_thread();
  if (c >= p.C) return;
  if (p.S == 0) {  // no values: zero parameter gradients (as PyTorch), whatever the saved stats hold
    chan_store_grads<T>(p, c, 0.0, 0.0);
    return;
  }
  const double* extra = ws_at<double>(p, p.extra_off);
  double gw = 0, gb = 0;
  for (std::int64_t n = 0; n < p.N; ++n) {
    const std::int64_t k = n * p.C + c;
    gb += extra[2 * k];
    gw += extra[2 * k + 1] * chan_load<T>(p.stat_rstd, true, n * p.G + c / p.Cg);
  }
  chan_store_grads<T>(p, c, gw, gb);
}

// ---- apply: a grid-stride map over [N, C, S] in logical order.
template <class T, int V, bool Bwd>
__global__ void __launch_bounds__(kChanBlock) chan_apply(const ChanNormParams p, const ChanDiv plane_div,
                                                         const ChanDiv c_div) {
  using C = Compute<T>;
  const std::int64_t sv = p.S / V, total = p.N * p.C * sv;
  const ChanCoef<C>* coef = ws_at<const ChanCoef<C>>(p, p.coef_off);
  const T* x = static_cast<const T*>(p.x);
  const T* g = static_cast<const T*>(p.dy);
  T* out = static_cast<T*>(p.out);
  const int oo = Bwd ? 2 : 1;
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * kChanBlock + threadIdx.x; v < total;
       v += static_cast<std::int64_t>(gridDim.x) * kChanBlock) {
    const std::int64_t plane = plane_div.div(v), s = v - plane * sv;
    const std::int64_t n = c_div.div(plane), c = plane - n * p.C;
    const ChanCoef<C> cf = coef[n * p.coef_n_stride + c];
    if constexpr (V > 1) {
      const Vec<T, V> xv = load_vec<T, V>(x + n * p.sN[0] + c * p.sC[0] + s * V);
      Vec<T, V> gv, ov;
      if constexpr (Bwd) gv = load_vec<T, V>(g + n * p.sN[1] + c * p.sC[1] + s * V);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const C xm = to_compute(xv.v[i]) - cf.m;
        if constexpr (Bwd) ov.v[i] = from_compute<T>(cf.a * to_compute(gv.v[i]) + cf.k * xm + cf.b);
        else ov.v[i] = from_compute<T>(xm * cf.a + cf.b);
      }
      store_vec<T, V>(out + n * p.sN[oo] + c * p.sC[oo] + s * V, ov);
    } else {
      const C xm = to_compute(x[n * p.sN[0] + c * p.sC[0] + chan_spatial_offset(p, 0, s)]) - cf.m;
      C r;
      if constexpr (Bwd) r = cf.a * to_compute(g[n * p.sN[1] + c * p.sC[1] + chan_spatial_offset(p, 1, s)]) + cf.k * xm + cf.b;
      else r = xm * cf.a + cf.b;
      out[n * p.sN[oo] + c * p.sC[oo] + chan_spatial_offset(p, oo, s)] = from_compute<T>(r);
    }
  }
}

inline Status chan_launch_status(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string(what) + " launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                  static_cast<int>(e));
  return Status::ok();
}
inline unsigned chan_blocks(std::int64_t items, std::int64_t per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

template <class T, int V, bool Bwd>
Status chan_launch_passes(const ChanNormParams& p, cudaStream_t s, void (*finalize)(ChanNormParams),
                          std::int64_t finalize_items) {
  if (p.op != ChanOp::kEval || Bwd) {
    if (p.segs * p.chunks > 0) {
      const ChanDiv plane_div(p.S / V, p.planes * p.S / V);
      chan_reduce<T, V, Bwd><<<chan_blocks(p.segs * p.chunks, chnorm::kWarpsPerBlock), kChanBlock, 0, s>>>(p, plane_div);
      BARACUDA_TRY(chan_launch_status("chan_reduce"));
    }
  }
  if (finalize_items > 0) {
    finalize<<<chan_blocks(finalize_items, kFinalizeBlock), kFinalizeBlock, 0, s>>>(p);
    BARACUDA_TRY(chan_launch_status("chan_finalize"));
  }
  return Status::ok();
}

template <class T, int V, bool Bwd>
Status chan_launch_apply(const ChanNormParams& p, cudaStream_t s) {
  const std::int64_t sv = p.S / V, total = p.N * p.C * sv;
  if (total == 0) return Status::ok();
  const ChanDiv plane_div(sv, total), c_div(p.C, p.N * p.C);
  chan_apply<T, V, Bwd><<<static_cast<unsigned>(p.apply_blocks), kChanBlock, 0, s>>>(p, plane_div, c_div);
  return chan_launch_status("chan_apply");
}

template <class T, int V>
Status chan_forward(const ChanNormParams& p, cudaStream_t s) {
  switch (p.op) {
    case ChanOp::kBatchTrain:
      BARACUDA_TRY((chan_launch_passes<T, V, false>(p, s, chan_finalize_batch<T>, p.C)));
      break;
    case ChanOp::kEval:
      BARACUDA_TRY((chan_launch_passes<T, V, false>(p, s, chan_finalize_eval<T>, p.C)));
      break;
    case ChanOp::kGroup:
      BARACUDA_TRY((chan_launch_passes<T, V, false>(p, s, chan_finalize_group<T>, p.N * p.G)));
      if (p.update_running) {  // N == 0 too: NaN
        chan_finalize_instance_running<T><<<chan_blocks(p.C, kFinalizeBlock), kFinalizeBlock, 0, s>>>(p);
        BARACUDA_TRY(chan_launch_status("chan_finalize_instance_running"));
      }
      break;
  }
  return chan_launch_apply<T, V, false>(p, s);
}

template <class T, int V>
Status chan_backward(const ChanNormParams& p, cudaStream_t s) {
  if (p.op == ChanOp::kGroup) {
    BARACUDA_TRY((chan_launch_passes<T, V, true>(p, s, chan_finalize_group_bwd<T>, p.N * p.G)));
    if (p.grad_weight_on || p.grad_bias_on) {
      chan_finalize_group_grads<T><<<chan_blocks(p.C, kFinalizeBlock), kFinalizeBlock, 0, s>>>(p);
      BARACUDA_TRY(chan_launch_status("chan_finalize_group_grads"));
    }
  } else {
    BARACUDA_TRY((chan_launch_passes<T, V, true>(p, s, chan_finalize_batch_bwd<T>, p.C)));
  }
  return chan_launch_apply<T, V, true>(p, s);
}

template <class T, bool Bwd>
Status launch_chan_norm(const ChanNormParams& p, cudaStream_t s) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  if (p.vec == 1) return Bwd ? chan_backward<T, 1>(p, s) : chan_forward<T, 1>(p, s);
  return Bwd ? chan_backward<T, kVec>(p, s) : chan_forward<T, kVec>(p, s);
}

}  // namespace baracuda::kernels
