// The general SDPA kernels (host side: src/attention/sdpa_general.cpp; rules:
// include/baracuda/ops/attention.hpp and notes/attention-contract.md).
//
// What: attention on CUDA cores for every case the fused SKUs do not take: f64, f32, f16, bf16,
// any head dims (d_k != d_v), any strides, causal / window (either alignment), bool mask,
// additive bias, ALiBi, softcap, dropout (kernels/dropout.cuh), GQA, varlen with empty
// sequences. Nothing of size Sq x Skv is materialized.
//
// Parallel scheme. 256 threads = 8 warps; tiles of 32 (the warp width) along the inner loop.
//  * forward: a block owns R <= 32 query rows of one (b, h); warp w owns rows w, w + 8, ...
//    and lane l the key j0 + l of each 32-key tile. q . k is summed over d_k in chunks of 32
//    (K chunk in shared memory, padded rows), the online softmax (max, sum) runs per row with
//    warp shuffles, and the probabilities are broadcast by shuffle into the PV product over
//    V chunks; the output accumulators [R, d_v] live in shared memory, each element owned
//    by one thread. kStatsOnly runs only the statistics (the f64 backward's exact lse).
//  * backward: delta_i = rowsum(dO_i * O_i) (one warp per row); then dQ per query block
//    (loops over key tiles: s, dP = dO . v, dS = P * (dP~ - delta), dQ += dS~ K) and dK / dV
//    per key block (loops over the query heads of its GQA group and the query tiles:
//    dV += P~^T dO, dK += dS~^T Q). Every sum runs in a fixed order: deterministic, no atomics.
//    grad_bias: written by the dQ kernel when it has the full [B, Hq, Sq, Skv] shape, else
//    reduced over its broadcast dims by grad_bias_reduce (one thread per element, in order).
// Numerics: f32 compute and statistics for f32 / f16 / bf16, f64 for f64; accurate exp / log /
// tanh (no fast-math intrinsics). A row that sees no key: o = 0, lse = -inf, zero gradients.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/kernels/dropout.cuh"
#include "attention/sdpa_general_params.hpp"
#include "common/block_reduce.cuh"
#include "common/device_types.cuh"

namespace baracuda::kernels::attention {

using baracuda::attention::GeneralParams;
using baracuda::attention::kGeneralThreads;
using baracuda::attention::kGeneralWarps;
using baracuda::attention::kMaxRowsPerWarp;
using baracuda::attention::kTile;
using baracuda::attention::kTilePitch;
using baracuda::attention::SdpaProblem;

// ---- small helpers
template <class C>
__device__ __forceinline__ C warp_max(C x) {
  return warp_allreduce(x, [](C a, C b) { return b > a ? b : a; });
}
template <class C>
__device__ __forceinline__ C warp_sum(C x) {
  return warp_allreduce(x, [](C a, C b) { return a + b; });
}
template <class C>
__device__ __forceinline__ C neg_infinity() {
  return -__builtin_huge_val();
}
__device__ __forceinline__ float exp_c(float x) { return expf(x); }
__device__ __forceinline__ double exp_c(double x) { return exp(x); }
__device__ __forceinline__ float log_c(float x) { return logf(x); }
__device__ __forceinline__ double log_c(double x) { return log(x); }
__device__ __forceinline__ float tanh_c(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh_c(double x) { return tanh(x); }

template <class T>
__device__ __forceinline__ Compute<T> ld(const void* base, std::int64_t off) {
  return static_cast<Compute<T>>(to_compute(static_cast<const T*>(base)[off]));
}
template <class T, class C>
__device__ __forceinline__ void st(void* base, std::int64_t off, C v) {
  static_cast<T*>(base)[off] = FromCompute<T>::cvt(v, 0);
}

// A sequence's extent: its lengths and the first token of q and k (0 for dense).
struct SeqExtent {
  std::int64_t sq, skv, tq0, tk0;
};
__device__ __forceinline__ SeqExtent seq_extent(const GeneralParams& g, std::int64_t b) {
  if (!g.p.varlen) return {g.p.sq, g.p.skv, 0, 0};
  const std::int64_t q0 = g.cu_q[b], k0 = g.cu_k[b];
  return {g.cu_q[b + 1] - q0, g.cu_k[b + 1] - k0, q0, k0};
}
__device__ __forceinline__ std::int64_t elem(const baracuda::attention::Strides4& s, std::int64_t b, std::int64_t h,
                                             std::int64_t t, std::int64_t d) {
  return b * s.b + h * s.h + t * s.s + d * s.d;
}
// Row of the per-query workspaces (delta, exact lse): dense (b, h, i), varlen (h, token).
__device__ __forceinline__ std::int64_t ws_row(const SdpaProblem& p, std::int64_t b, std::int64_t h, std::int64_t t) {
  return p.varlen ? h * p.total_q + t : (b * p.hq + h) * p.sq + t;
}

// Per-(b, h) constants of the score: dropout key, ALiBi slope, alignment offset.
template <class C>
struct HeadCtx {
  std::int64_t b, h;
  SeqExtent seq;
  std::int64_t off;  // i + off is the query's position in key coordinates
  C slope;
  DropoutKey drop;
};
template <class C>
__device__ __forceinline__ HeadCtx<C> head_ctx(const GeneralParams& g, std::int64_t b, std::int64_t h) {
  HeadCtx<C> c;
  c.b = b;
  c.h = h;
  c.seq = seq_extent(g, b);
  c.off = g.p.bottom_right ? c.seq.skv - c.seq.sq : 0;
  c.slope = g.p.has_alibi ? static_cast<C>(g.alibi[b * g.p.alibi_b + h * g.p.alibi_h]) : C(0);
  std::uint64_t seed = 0, offset = 0;
  if (g.p.dropout_p > 0) dropout_seed_offset(g.seed_ptr, g.seed, g.offset, &seed, &offset);
  c.drop = dropout_key(seed, offset, g.p.dropout_threshold);
  return c;
}

// The query block of a forward / dQ block: blockIdx.x = ((b * Hq + h) * ceil(Sq / R) + qb); its
// first row i0, K / V head and rows inside the sequence (nrows <= R; <= 0: past the sequence).
template <class C>
struct QueryBlock {
  HeadCtx<C> c;
  std::int64_t i0, kvh, nrows;
};
template <class C>
__device__ __forceinline__ QueryBlock<C> query_block(const GeneralParams& g) {
  const std::int64_t nqb = (g.p.sq + g.rows - 1) / g.rows;
  const std::int64_t qb = blockIdx.x % nqb, bh = blockIdx.x / nqb;
  QueryBlock<C> r{head_ctx<C>(g, bh / g.p.hq, bh % g.p.hq), qb * g.rows, 0, 0};
  r.kvh = r.c.h / g.p.group;
  r.nrows = r.c.seq.sq - r.i0 < g.rows ? r.c.seq.sq - r.i0 : g.rows;
  return r;
}

// Whether query i sees key j (lengths, window, bool mask).
template <class C>
__device__ __forceinline__ bool visible(const GeneralParams& g, const HeadCtx<C>& c, std::int64_t i, std::int64_t j) {
  if (i < 0 || i >= c.seq.sq || j < 0 || j >= c.seq.skv) return false;
  const SdpaProblem& p = g.p;
  if (p.window_left >= 0 && j < i + c.off - p.window_left) return false;
  if (p.window_right >= 0 && j > i + c.off + p.window_right) return false;
  if (p.mask.present) {
    const std::int64_t m = c.b * p.mask.stride[0] + c.h * p.mask.stride[1] + i * p.mask.stride[2] + j * p.mask.stride[3];
    if (g.mask[m] == 0) return false;
  }
  return true;
}

// The logit of a visible (i, j) from the raw dot q_i . k_j; *dcap = d(capped)/d(scaled).
template <class T, class C>
__device__ __forceinline__ C logit(const GeneralParams& g, const HeadCtx<C>& c, C dot, std::int64_t i, std::int64_t j,
                                   C* dcap) {
  const SdpaProblem& p = g.p;
  C x = dot * static_cast<C>(p.scale);
  *dcap = C(1);
  if (p.softcap > 0) {
    const C cap = static_cast<C>(p.softcap);
    const C t = tanh_c(x / cap);
    x = cap * t;
    *dcap = C(1) - t * t;
  }
  if (p.bias.present) {
    const std::int64_t o = c.b * p.bias.stride[0] + c.h * p.bias.stride[1] + i * p.bias.stride[2] + j * p.bias.stride[3];
    x += p.bias_dtype == DType::kF32 ? static_cast<C>(static_cast<const float*>(g.bias)[o]) : ld<T>(g.bias, o);
  }
  if (p.has_alibi) {
    const std::int64_t dist = i + c.off - j;
    x -= c.slope * static_cast<C>(dist < 0 ? -dist : dist);
  }
  return x;
}

// Dropout of (i, j): the multiplier (0 or 1 / (1 - p)).
template <class C>
__device__ __forceinline__ C dropout_mult(const GeneralParams& g, const HeadCtx<C>& c, std::int64_t i, std::int64_t j) {
  if (!(g.p.dropout_p > 0)) return C(1);
  return dropout_keep(c.drop, c.b * g.p.hq + c.h, i, j) ? static_cast<C>(g.p.dropout_scale) : C(0);
}

// The [lo, hi] key range that rows first..last (clamped to the sequence) can see; empty when lo > hi.
template <class C>
__device__ __forceinline__ void block_key_range(const GeneralParams& g, const HeadCtx<C>& c, std::int64_t first,
                                                std::int64_t last, std::int64_t* lo, std::int64_t* hi) {
  std::int64_t l0, h0, l1, h1;
  g.p.key_range(first, c.seq.sq, c.seq.skv, &l0, &h0);
  g.p.key_range(last, c.seq.sq, c.seq.skv, &l1, &h1);
  *lo = l0;
  *hi = h1;
}

// Loads a 32 x 32 chunk of a [rows, D] operand (rows r0 + c, dims dc + d) into `tile` (pitch 33),
// zero outside [0, nrows) x [0, D).
template <class T>
__device__ __forceinline__ void load_chunk(Compute<T>* tile, const void* base, const baracuda::attention::Strides4& s,
                                           std::int64_t b, std::int64_t h, std::int64_t t0, std::int64_t r0,
                                           std::int64_t nrows, std::int64_t dc, std::int64_t D) {
  using C = Compute<T>;
  for (int idx = threadIdx.x; idx < kTile * kTile; idx += kGeneralThreads) {
    const int c = idx / kTile, d = idx % kTile;
    const std::int64_t r = r0 + c, dd = dc + d;
    tile[c * kTilePitch + d] = (r < nrows && dd < D) ? ld<T>(base, elem(s, b, h, t0 + r, dd)) : C(0);
  }
}
// Loads rows [r0, r0 + R) x [0, D) of an operand into `dst` ([R, D]), zero past nrows.
template <class T>
__device__ __forceinline__ void load_rows(Compute<T>* dst, const void* base, const baracuda::attention::Strides4& s,
                                          std::int64_t b, std::int64_t h, std::int64_t t0, std::int64_t r0,
                                          std::int64_t nrows, int R, std::int64_t D) {
  using C = Compute<T>;
  for (std::int64_t idx = threadIdx.x; idx < R * D; idx += kGeneralThreads) {
    const std::int64_t r = idx / D, d = idx % D;
    dst[idx] = r0 + r < nrows ? ld<T>(base, elem(s, b, h, t0 + r0 + r, d)) : C(0);
  }
}

// Streams rows [r0, r0 + 32) x [0, D) of an operand through `tile` one 32-wide chunk of dims at
// a time (load_chunk between two barriers) and calls fn(dc) on each chunk.
template <class T, class Fn>
__device__ __forceinline__ void for_each_chunk(Compute<T>* tile, const void* base, const baracuda::attention::Strides4& s,
                                               std::int64_t b, std::int64_t h, std::int64_t t0, std::int64_t r0,
                                               std::int64_t nrows, std::int64_t D, Fn&& fn) {
  for (std::int64_t dc = 0; dc < D; dc += kTile) {
    __syncthreads();
    load_chunk<T>(tile, base, s, b, h, t0, r0, nrows, dc, D);
    __syncthreads();
    fn(dc);
  }
}

// acc[k] += sum_d A[row_k][dc + d] * tile[lane][d] over one chunk (rows row_k = w + 8k < R).
template <class C>
__device__ __forceinline__ void dot_chunk(C (&acc)[kMaxRowsPerWarp], const C* A, std::int64_t D, std::int64_t dc,
                                          const C* tile, int R, int w, int lane) {
  const int dn = static_cast<int>(D - dc < kTile ? D - dc : kTile);
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    const int r = w + kGeneralWarps * k;
    if (r >= R) break;
    const C* a = A + r * D + dc;
    C s = acc[k];
    for (int d = 0; d < dn; ++d) s += a[d] * tile[lane * kTilePitch + d];
    acc[k] = s;
  }
}
// acc_rows[row_k][dc + lane] (*= alpha[k]) += sum_c coef[k]@lane c * tile[c][lane].
template <class C, bool kRescale>
__device__ __forceinline__ void outer_chunk(C* acc_rows, std::int64_t D, std::int64_t dc, const C* tile,
                                            const C (&coef)[kMaxRowsPerWarp], const C (&alpha)[kMaxRowsPerWarp], int R,
                                            int w, int lane) {
  const std::int64_t dd = dc + lane;
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    const int r = w + kGeneralWarps * k;
    if (r >= R) break;
    C s = C(0);
#pragma unroll 8
    for (int c = 0; c < kTile; ++c) s += __shfl_sync(0xffffffffu, coef[k], c) * tile[c * kTilePitch + lane];
    if (dd < D) {
      C* a = acc_rows + r * D + dd;
      *a = kRescale ? *a * alpha[k] + s : *a + s;
    }
  }
}

template <class C>
__device__ __forceinline__ C* shared_base() {
  extern __shared__ double general_smem[];  // double: 8-byte aligned for every compute type
  return reinterpret_cast<C*>(general_smem);
}

// The prologue of the forward and dQ kernels: the block's geometry (*qb), its R rows of q
// ([R, d_k]) and, with grad_o, of grad_o ([R, d_v]) loaded from the start of shared memory
// (zero past the sequence), the n_zero elements after them (the accumulators) zeroed, then a
// barrier (the accumulators are read by other threads than the ones that zeroed them, even
// with no key tile). False: the block lies past its sequence (nothing done; return).
template <class T>
__device__ __forceinline__ bool query_block_prologue(const GeneralParams& g, bool grad_o, std::int64_t n_zero,
                                                     QueryBlock<Compute<T>>* qb) {
  using C = Compute<T>;
  const SdpaProblem& p = g.p;
  *qb = query_block<C>(g);
  const HeadCtx<C>& c = qb->c;
  if (qb->nrows <= 0) return false;
  C* rows = shared_base<C>();
  load_rows<T>(rows, g.q, p.q, c.b, c.h, c.seq.tq0, qb->i0, c.seq.sq, g.rows, p.dk);
  rows += g.rows * p.dk;
  if (grad_o) {
    load_rows<T>(rows, g.grad_o, p.grad_o, c.b, c.h, c.seq.tq0, qb->i0, c.seq.sq, g.rows, p.dv);
    rows += g.rows * p.dv;
  }
  for (std::int64_t idx = threadIdx.x; idx < n_zero; idx += kGeneralThreads) rows[idx] = C(0);
  __syncthreads();
  return true;
}

// ---- forward: grid = ceil(Sq / R) * Hq * B blocks
template <class T, bool kStatsOnly>
__global__ void __launch_bounds__(kGeneralThreads) sdpa_general_fwd(GeneralParams g) {
  using C = Compute<T>;
  const SdpaProblem& p = g.p;
  const int R = g.rows;
  QueryBlock<C> qbk;
  if (!query_block_prologue<T>(g, false, kStatsOnly ? 0 : R * p.dv, &qbk)) return;
  const HeadCtx<C>& c = qbk.c;
  const std::int64_t b = c.b, h = c.h, i0 = qbk.i0, kvh = qbk.kvh, nrows = qbk.nrows;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  C* Qs = shared_base<C>();
  C* Os = Qs + R * p.dk;
  C* tile = Os + (kStatsOnly ? 0 : R * p.dv);

  C m[kMaxRowsPerWarp], l[kMaxRowsPerWarp];
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    m[k] = neg_infinity<C>();
    l[k] = C(0);
  }
  std::int64_t lo, hi;
  block_key_range(g, c, i0, i0 + nrows - 1, &lo, &hi);
  for (std::int64_t j0 = lo / kTile * kTile; j0 <= hi; j0 += kTile) {
    C s[kMaxRowsPerWarp] = {};
    for_each_chunk<T>(tile, g.k, p.k, b, kvh, c.seq.tk0, j0, c.seq.skv, p.dk,
                      [&](std::int64_t dc) { dot_chunk(s, Qs, p.dk, dc, tile, R, w, lane); });
    C pd[kMaxRowsPerWarp], alpha[kMaxRowsPerWarp];
#pragma unroll
    for (int k = 0; k < kMaxRowsPerWarp; ++k) {
      const int r = w + kGeneralWarps * k;
      pd[k] = C(0);
      alpha[k] = C(1);
      if (r >= R) continue;
      const std::int64_t i = i0 + r, j = j0 + lane;
      C dcap;
      const bool vis = r < nrows && visible(g, c, i, j);
      const C x = vis ? logit<T>(g, c, s[k], i, j, &dcap) : neg_infinity<C>();
      const C m_new_raw = warp_max(x);
      const C m_new = m_new_raw > m[k] ? m_new_raw : m[k];
      const C e = x == neg_infinity<C>() ? C(0) : exp_c(x - m_new);
      alpha[k] = m[k] == neg_infinity<C>() ? C(0) : exp_c(m[k] - m_new);
      l[k] = l[k] * alpha[k] + warp_sum(e);
      m[k] = m_new;
      pd[k] = e == C(0) ? C(0) : e * dropout_mult(g, c, i, j);
    }
    if constexpr (!kStatsOnly) {
      for_each_chunk<T>(tile, g.v, p.v, b, kvh, c.seq.tk0, j0, c.seq.skv, p.dv,
                        [&](std::int64_t dc) { outer_chunk<C, true>(Os, p.dv, dc, tile, pd, alpha, R, w, lane); });
    }
  }
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    const int r = w + kGeneralWarps * k;
    if (r >= nrows) break;
    const std::int64_t t = c.seq.tq0 + i0 + r;
    const C lse = l[k] > C(0) ? m[k] + log_c(l[k]) : neg_infinity<C>();
    if constexpr (kStatsOnly) {
      if (lane == 0) static_cast<C*>(g.ws_lse)[ws_row(p, b, h, t)] = lse;
    } else {
      if (lane == 0 && g.lse != nullptr) g.lse[b * p.lse.b + h * p.lse.h + t * p.lse.s] = static_cast<float>(lse);
      const C inv = l[k] > C(0) ? C(1) / l[k] : C(0);
      for (std::int64_t d = lane; d < p.dv; d += kTile)
        st<T>(g.o, elem(p.o, b, h, t, d), l[k] > C(0) ? Os[r * p.dv + d] * inv : C(0));
    }
  }
}

// ---- backward pre-pass: delta = rowsum(dO * O), one warp per row (dense B*Hq*Sq, varlen Hq*Tq)
template <class T>
__global__ void __launch_bounds__(kGeneralThreads) sdpa_general_bwd_delta(GeneralParams g, std::int64_t nrows) {
  using C = Compute<T>;
  const SdpaProblem& p = g.p;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kGeneralWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= nrows) return;
  std::int64_t b, h, t;
  if (p.varlen) {
    b = 0;
    h = row / p.total_q;
    t = row % p.total_q;
  } else {
    t = row % p.sq;
    h = row / p.sq % p.hq;
    b = row / p.sq / p.hq;
  }
  C s = C(0);
  for (std::int64_t d = lane; d < p.dv; d += 32)
    s += ld<T>(g.grad_o, elem(p.grad_o, b, h, t, d)) * ld<T>(g.o_in, elem(p.o, b, h, t, d));
  s = warp_sum(s);
  if (lane == 0) static_cast<C*>(g.ws_delta)[row] = s;
}

// The lse the backward uses for row (b, h, t): the exact f64 one (ws_lse) or the forward's f32.
template <class C>
__device__ __forceinline__ C row_lse(const GeneralParams& g, std::int64_t b, std::int64_t h, std::int64_t t) {
  if (g.ws_lse != nullptr) return static_cast<const C*>(g.ws_lse)[ws_row(g.p, b, h, t)];
  return static_cast<C>(g.lse_in[b * g.p.lse.b + h * g.p.lse.h + t * g.p.lse.s]);
}

// dL/dlogit (the bias gradient) and dL/d(q.k) of a visible (i, j), from s = q.k and dp = dO.v.
template <class T, class C>
__device__ __forceinline__ void score_grads(const GeneralParams& g, const HeadCtx<C>& c, bool vis, C s, C dp, C lse,
                                            C delta, std::int64_t i, std::int64_t j, C* p_dropped, C* ds_logit,
                                            C* ds_dot) {
  *p_dropped = C(0);
  *ds_logit = C(0);
  *ds_dot = C(0);
  if (!vis || lse == neg_infinity<C>()) return;
  C dcap;
  const C x = logit<T>(g, c, s, i, j, &dcap);
  if (x == neg_infinity<C>()) return;
  const C prob = exp_c(x - lse);
  const C mult = dropout_mult(g, c, i, j);
  *p_dropped = prob * mult;
  *ds_logit = prob * (dp * mult - delta);
  *ds_dot = *ds_logit * dcap * static_cast<C>(g.p.scale);
}

// ---- dQ (and grad_bias when direct): grid = ceil(Sq / R) * Hq * B blocks
template <class T>
__global__ void __launch_bounds__(kGeneralThreads) sdpa_general_bwd_dq(GeneralParams g) {
  using C = Compute<T>;
  const SdpaProblem& p = g.p;
  const int R = g.rows;
  QueryBlock<C> qbk;
  if (!query_block_prologue<T>(g, true, R * p.dk, &qbk)) return;
  const HeadCtx<C>& c = qbk.c;
  const std::int64_t b = c.b, h = c.h, i0 = qbk.i0, kvh = qbk.kvh, nrows = qbk.nrows;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  C* dQs = shared_base<C>() + R * (p.dk + p.dv);
  C* tile = dQs + R * p.dk;
  const C* Qs = shared_base<C>();
  const C* dOs = Qs + R * p.dk;

  C lse[kMaxRowsPerWarp], delta[kMaxRowsPerWarp];
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    const int r = w + kGeneralWarps * k;
    lse[k] = neg_infinity<C>();
    delta[k] = C(0);
    if (r < nrows) {
      const std::int64_t t = c.seq.tq0 + i0 + r;
      lse[k] = row_lse<C>(g, b, h, t);
      delta[k] = static_cast<const C*>(g.ws_delta)[ws_row(p, b, h, t)];
    }
  }
  std::int64_t lo, hi;
  block_key_range(g, c, i0, i0 + nrows - 1, &lo, &hi);
  if (g.grad_bias_direct) {  // every grad_bias element of these rows is written, zeros included
    lo = 0;
    hi = c.seq.skv - 1;
  }
  const C none[kMaxRowsPerWarp] = {};
  for (std::int64_t j0 = lo / kTile * kTile; j0 <= hi; j0 += kTile) {
    C s[kMaxRowsPerWarp] = {}, dp[kMaxRowsPerWarp] = {};
    for_each_chunk<T>(tile, g.k, p.k, b, kvh, c.seq.tk0, j0, c.seq.skv, p.dk,
                      [&](std::int64_t dc) { dot_chunk(s, Qs, p.dk, dc, tile, R, w, lane); });
    for_each_chunk<T>(tile, g.v, p.v, b, kvh, c.seq.tk0, j0, c.seq.skv, p.dv,
                      [&](std::int64_t dc) { dot_chunk(dp, dOs, p.dv, dc, tile, R, w, lane); });
    C ds[kMaxRowsPerWarp];
#pragma unroll
    for (int k = 0; k < kMaxRowsPerWarp; ++k) {
      const int r = w + kGeneralWarps * k;
      ds[k] = C(0);
      if (r >= R) continue;
      const std::int64_t i = i0 + r, j = j0 + lane;
      const bool vis = r < nrows && visible(g, c, i, j);
      C pdrop, dsl;
      score_grads<T>(g, c, vis, s[k], dp[k], lse[k], delta[k], i, j, &pdrop, &dsl, &ds[k]);
      if (g.grad_bias_direct && r < nrows && j < c.seq.skv) {
        const std::int64_t o =
            b * p.grad_bias.stride[0] + h * p.grad_bias.stride[1] + i * p.grad_bias.stride[2] + j * p.grad_bias.stride[3];
        if (p.bias_dtype == DType::kF32) static_cast<float*>(g.grad_bias)[o] = static_cast<float>(dsl);
        else st<T>(g.grad_bias, o, dsl);
      }
    }
    for_each_chunk<T>(tile, g.k, p.k, b, kvh, c.seq.tk0, j0, c.seq.skv, p.dk,
                      [&](std::int64_t dc) { outer_chunk<C, false>(dQs, p.dk, dc, tile, ds, none, R, w, lane); });
  }
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    const int r = w + kGeneralWarps * k;
    if (r >= nrows) break;
    const std::int64_t t = c.seq.tq0 + i0 + r;
    for (std::int64_t d = lane; d < p.dk; d += kTile) st<T>(g.grad_q, elem(p.grad_q, b, h, t, d), dQs[r * p.dk + d]);
  }
}

// ---- dK / dV: grid = ceil(Skv / R) * Hkv * B blocks; rows are keys, lanes are queries
template <class T>
__global__ void __launch_bounds__(kGeneralThreads) sdpa_general_bwd_dkdv(GeneralParams g) {
  using C = Compute<T>;
  const SdpaProblem& p = g.p;
  const int R = g.rows;
  const std::int64_t nkb = (p.skv + R - 1) / R;
  const std::int64_t kb = blockIdx.x % nkb, bh = blockIdx.x / nkb;
  const std::int64_t kvh = bh % p.hkv, b = bh / p.hkv;
  const SeqExtent seq = seq_extent(g, b);
  const std::int64_t j0 = kb * R;
  if (j0 >= seq.skv) return;
  const std::int64_t nkeys = seq.skv - j0 < R ? seq.skv - j0 : R;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;

  C* Ks = shared_base<C>();
  C* Vs = Ks + R * p.dk;
  C* dKs = Vs + R * p.dv;
  C* dVs = dKs + R * p.dk;
  C* tile = dVs + R * p.dv;
  load_rows<T>(Ks, g.k, p.k, b, kvh, seq.tk0, j0, seq.skv, R, p.dk);
  load_rows<T>(Vs, g.v, p.v, b, kvh, seq.tk0, j0, seq.skv, R, p.dv);
  for (std::int64_t idx = threadIdx.x; idx < R * p.dk; idx += kGeneralThreads) dKs[idx] = C(0);
  for (std::int64_t idx = threadIdx.x; idx < R * p.dv; idx += kGeneralThreads) dVs[idx] = C(0);
  __syncthreads();
  const C none[kMaxRowsPerWarp] = {};

  for (std::int64_t h = kvh * p.group; h < (kvh + 1) * p.group; ++h) {
    const HeadCtx<C> c = head_ctx<C>(g, b, h);
    for (std::int64_t i0 = 0; i0 < c.seq.sq; i0 += kTile) {
      // Skip query tiles that see none of these keys (the ranges grow with i).
      const std::int64_t ilast = c.seq.sq - 1 < i0 + kTile - 1 ? c.seq.sq - 1 : i0 + kTile - 1;
      std::int64_t lo, hi;
      block_key_range(g, c, i0, ilast, &lo, &hi);
      if (lo > j0 + nkeys - 1 || hi < j0) continue;
      const std::int64_t i = i0 + lane;
      C lse = neg_infinity<C>(), delta = C(0);
      if (i < c.seq.sq) {
        const std::int64_t t = c.seq.tq0 + i;
        lse = row_lse<C>(g, b, h, t);
        delta = static_cast<const C*>(g.ws_delta)[ws_row(p, b, h, t)];
      }
      C s[kMaxRowsPerWarp] = {}, dp[kMaxRowsPerWarp] = {};
      for_each_chunk<T>(tile, g.q, p.q, b, h, c.seq.tq0, i0, c.seq.sq, p.dk,
                        [&](std::int64_t dc) { dot_chunk(s, Ks, p.dk, dc, tile, R, w, lane); });
      for_each_chunk<T>(tile, g.grad_o, p.grad_o, b, h, c.seq.tq0, i0, c.seq.sq, p.dv,
                        [&](std::int64_t dc) { dot_chunk(dp, Vs, p.dv, dc, tile, R, w, lane); });
      C pdrop[kMaxRowsPerWarp], ds[kMaxRowsPerWarp];
#pragma unroll
      for (int k = 0; k < kMaxRowsPerWarp; ++k) {
        const int r = w + kGeneralWarps * k;
        pdrop[k] = ds[k] = C(0);
        if (r >= R) continue;
        const std::int64_t j = j0 + r;
        const bool vis = r < nkeys && visible(g, c, i, j);
        C dsl;
        score_grads<T>(g, c, vis, s[k], dp[k], lse, delta, i, j, &pdrop[k], &dsl, &ds[k]);
      }
      for_each_chunk<T>(tile, g.grad_o, p.grad_o, b, h, c.seq.tq0, i0, c.seq.sq, p.dv,
                        [&](std::int64_t dc) { outer_chunk<C, false>(dVs, p.dv, dc, tile, pdrop, none, R, w, lane); });
      for_each_chunk<T>(tile, g.q, p.q, b, h, c.seq.tq0, i0, c.seq.sq, p.dk,
                        [&](std::int64_t dc) { outer_chunk<C, false>(dKs, p.dk, dc, tile, ds, none, R, w, lane); });
    }
  }
#pragma unroll
  for (int k = 0; k < kMaxRowsPerWarp; ++k) {
    const int r = w + kGeneralWarps * k;
    if (r >= nkeys) break;
    const std::int64_t t = seq.tk0 + j0 + r;
    for (std::int64_t d = lane; d < p.dk; d += kTile) st<T>(g.grad_k, elem(p.grad_k, b, kvh, t, d), dKs[r * p.dk + d]);
    for (std::int64_t d = lane; d < p.dv; d += kTile) st<T>(g.grad_v, elem(p.grad_v, b, kvh, t, d), dVs[r * p.dv + d]);
  }
}

// ---- grad_bias over broadcast dims (dense only): one thread per grad_bias element, summing
// dL/dlogit over the (b, h, i, j) that read it, in order.
template <class T>
__global__ void __launch_bounds__(kGeneralThreads) sdpa_general_bwd_grad_bias(GeneralParams g, std::int64_t n) {
  using C = Compute<T>;
  const SdpaProblem& p = g.p;
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * kGeneralThreads + threadIdx.x;
  if (e >= n) return;
  const auto& gb = p.grad_bias;
  std::int64_t idx[4], rem = e;
  for (int d = 3; d >= 0; --d) {
    idx[d] = rem % gb.size[d];
    rem /= gb.size[d];
  }
  const std::int64_t full[4] = {p.batch, p.hq, p.sq, p.skv};
  std::int64_t lo[4], hi[4];
  for (int d = 0; d < 4; ++d) {
    const bool reduced = gb.size[d] == 1 && full[d] != 1;
    lo[d] = reduced ? 0 : idx[d];
    hi[d] = reduced ? full[d] : idx[d] + 1;
  }
  C sum = C(0);
  for (std::int64_t b = lo[0]; b < hi[0]; ++b)
    for (std::int64_t h = lo[1]; h < hi[1]; ++h) {
      const HeadCtx<C> c = head_ctx<C>(g, b, h);
      const std::int64_t kvh = h / p.group;
      for (std::int64_t i = lo[2]; i < hi[2]; ++i) {
        const C lse = row_lse<C>(g, b, h, i);
        const C delta = static_cast<const C*>(g.ws_delta)[ws_row(p, b, h, i)];
        for (std::int64_t j = lo[3]; j < hi[3]; ++j) {
          if (!visible(g, c, i, j)) continue;
          C s = C(0), dp = C(0);
          for (std::int64_t d = 0; d < p.dk; ++d)
            s += ld<T>(g.q, elem(p.q, b, h, i, d)) * ld<T>(g.k, elem(p.k, b, kvh, j, d));
          for (std::int64_t d = 0; d < p.dv; ++d)
            dp += ld<T>(g.grad_o, elem(p.grad_o, b, h, i, d)) * ld<T>(g.v, elem(p.v, b, kvh, j, d));
          C pdrop, dsl, dsd;
          score_grads<T>(g, c, true, s, dp, lse, delta, i, j, &pdrop, &dsl, &dsd);
          sum += dsl;
        }
      }
    }
  const std::int64_t o = idx[0] * gb.stride[0] + idx[1] * gb.stride[1] + idx[2] * gb.stride[2] + idx[3] * gb.stride[3];
  if (p.bias_dtype == DType::kF32) static_cast<float*>(g.grad_bias)[o] = static_cast<float>(sum);
  else st<T>(g.grad_bias, o, sum);
}

}  // namespace baracuda::kernels::attention
