// Gumbel-softmax forward (host side: src/softmax/gumbel_softmax.cpp; rules:
// include/baracuda/ops/gumbel_softmax.hpp; scaffolding: row_ops.cuh).
//
// What: forward z = (x + g) / tau with g ~ Gumbel(0, 1), then per row the max m of z,
// s = sum exp(z - m) and the first argmax; soft y = exp(z - m) / s, hard y = the
// one-hot of the argmax (and y_soft = the soft values when asked for). The backward,
// grad_x = s * (grad_y - sum grad_y * s) / tau with s = y_soft, runs softmax's backward
// kernels (softmax/softmax_backward_table.hpp).
// Noise: Philox4x32-10 keyed by the seed, counter (logical index / 4, offset), word
// index % 4 (philox4x32_10 of common/philox.cuh; the host twin is reference::philox4x32_10, checked against
// the Random123 known answers), or the caller's noise tensor (in1). The register rows draw
// it once at load; the loop rows draw it again in each of their two passes (same bits).
// Parallel scheme and preconditions: row_ops.cuh. Numerics: f32 for 16/32-bit types (z, the
// noise, the statistics), f64 for f64; f16 / bf16 rows take the noise, exp and 1 / tau by
// MUFU forms (gumbel_of_word); each statistic is a fixed tree, ties to the lowest index, so
// soft and hard outputs are deterministic. NaN or +inf in z makes
// the row NaN (soft and hard), as torch's softmax does. Bench: `baracuda-bench --suite
// softmax` (gumbel_softmax, gumbel_softmax_hard, gumbel_softmax_bwd).
#pragma once

#include <cstdint>

#include "common/philox.cuh"
#include "softmax/kernels/row_ops.cuh"
#include "softmax/kernels/softmax.cuh"

namespace baracuda::kernels::gumbel {

using rowop::RowOpParams;

// Philox4x32-10 block n of (seed, offset): the words of logical elements 4n .. 4n + 3.
__device__ __forceinline__ uint4 noise_block(std::uint64_t seed, std::uint64_t offset, std::uint64_t n) {
  return philox4x32_10(make_uint4(static_cast<unsigned>(n), static_cast<unsigned>(n >> 32),
                                  static_cast<unsigned>(offset), static_cast<unsigned>(offset >> 32)),
                       make_uint2(static_cast<unsigned>(seed), static_cast<unsigned>(seed >> 32)));
}
// Gumbel(0, 1) from one 32-bit word: u = ((w >> 9) + 1/2) 2^-23 (f32; 2^-32 steps in f64),
// g = -log(-log(u)). kFast (f16 / bf16 rows, whose outputs keep 8 / 11 bits): MUFU lg2 for
// both logs, except -log(u) for u >= 3/4, where lg2's 2^-22 absolute error would be large
// next to |log u| (u near 1 gives the largest g, the samples that win the row): there
// -log(u) = 2 atanh(v / (2 - v)) with v = 1 - u (exact), by the odd series to r^9 (r <= 1/7:
// 2^-27 relative). Else logf twice (1-2 ulp).
template <class C, bool kFast>
__device__ __forceinline__ C gumbel_of_word(unsigned w) {
  if constexpr (sizeof(C) == 8) {
    const double u = (static_cast<double>(w) + 0.5) * 0x1p-32;
    return -log(-log(u));
  } else if constexpr (kFast) {
    const float u = (static_cast<float>(w >> 9) + 0.5f) * 0x1p-23f;
    const float v = 1.0f - u;
    const float r = __fdividef(v, 2.0f - v), r2 = r * r;
    float q = fmaf(r2, 1.0f / 9, 1.0f / 7);
    q = fmaf(q, r2, 1.0f / 5);
    q = fmaf(q, r2, 1.0f / 3);
    q = fmaf(q, r2, 1.0f);
    const float e = u < 0.75f ? -mufu::lg2(u) * mufu::kLn2 : 2.0f * r * q;
    return -mufu::lg2(e) * mufu::kLn2;
  } else {
    const float u = (static_cast<float>(w >> 9) + 0.5f) * 0x1p-23f;
    return -logf(-logf(u));
  }
}
// The Gumbel(0, 1) noise of logical element i (gumbel_softmax.hpp gives the mapping).
template <class C, bool kFast>
__device__ __forceinline__ C noise(std::uint64_t seed, std::uint64_t offset, std::int64_t i) {
  const uint4 r = noise_block(seed, offset, static_cast<std::uint64_t>(i) >> 2);
  const unsigned w = (i & 3) == 0 ? r.x : (i & 3) == 1 ? r.y : (i & 3) == 2 ? r.z : r.w;
  return gumbel_of_word<C, kFast>(w);
}

// z = (x + g) / tau; g from in1 (the noise tensor) or drawn from (seed, offset, index).
// kFast (16-bit rows): the MUFU noise and z = (x + g) * (1 / tau).
template <class C, bool kFast>
struct Perturb {
  C tau, inv_tau;
  bool draw;
  std::uint64_t seed, offset;
  std::int64_t base, inner;  // element k of the row has logical index base + k * inner
  __device__ __forceinline__ C scaled(C v) const {
    if constexpr (kFast) return v * inv_tau;
    else return v / tau;
  }
  __device__ __forceinline__ C operator()(C x, C g, std::int64_t k) const {
    if (draw) g = noise<C, kFast>(seed, offset, base + k * inner);
    return scaled(x + g);
  }
  // The V consecutive elements k0 .. k0 + V - 1 of a register row: where they are
  // consecutive logical elements from a multiple of 4, one Philox block serves 4 of them
  // (the same words as noise(), a quarter of the Philox work); else element by element.
  template <int V>
  __device__ __forceinline__ void map_vec(C (&x)[V], const C (&g)[V], std::int64_t k0) const {
    const std::int64_t i0 = base + k0 * inner;
    if constexpr (V % 4 == 0) {
      if (draw && inner == 1 && (i0 & 3) == 0) {
#pragma unroll
        for (int q = 0; q < V / 4; ++q) {
          const uint4 r = noise_block(seed, offset, static_cast<std::uint64_t>(i0) / 4 + q);
          const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) x[4 * q + e] = scaled(x[4 * q + e] + gumbel_of_word<C, kFast>(w[e]));
        }
        return;
      }
    }
#pragma unroll
    for (int e = 0; e < V; ++e) x[e] = (*this)(x[e], g[e], k0 + e);
  }
};

// exp(z - m): MUFU ex2 for 16-bit rows (softmax.cuh's exp_shifted), else expf / exp.
template <class T, class C>
__device__ __forceinline__ C gumbel_exp(C z, C m) {
  if constexpr (kFastExp<T>) return exp_shifted(z, m);
  else return dev_exp(z - m);
}

// Loop rows (the row re-read and its noise re-drawn in every pass): (max, sum of exp(z - max))
// of z online (softmax.cuh's MaxSum) and the first index of the max, in one pass.
template <class C>
struct Stat {
  MaxSum<C> ms;
  long long idx;
};
template <class C>
struct MergeStat {
  __device__ __forceinline__ Stat<C> operator()(Stat<C> a, Stat<C> b) const {
    const MaxSum<C> ms = MergeMaxSum<C>{}(a.ms, b.ms);
    const long long idx = a.ms.m == b.ms.m ? (a.idx < b.idx ? a.idx : b.idx) : (ms.m == a.ms.m ? a.idx : b.idx);
    return {ms, idx};
  }
};
template <class C>
__device__ __forceinline__ Stat<C> add_element(Stat<C> st, C z, std::int64_t k) {
  MaxSum<C>& a = st.ms;
  if (z > a.m) {
    // exp(z - z): 1, or NaN for z = +inf (inf - inf), which makes the row NaN as in torch
    a.s = (a.m == neg_inf<C>() ? C(0) : a.s * dev_exp(a.m - z)) + dev_exp(z - z);
    a.m = z;
    st.idx = k;
  } else if (z == a.m) {
    a.s += dev_exp(z - z);  // NaN for a tie of -inf, dropped once a finite z arrives
    st.idx = k < st.idx ? k : st.idx;
  } else if (z == z) {
    a.s += dev_exp(z - a.m);
  } else {
    a.m = z;  // NaN sticks
    a.s = z;
  }
  return st;
}

// Per row: register rows take the max m of z (NaN propagates), then s = sum exp(z - m), then
// for hard the first index of m, each a fixed tree (scope.all); loop rows the online Stat in
// one pass. Soft y = exp(z - m) / s. Deterministic. A row of only -inf or with +inf or NaN
// gives s = NaN: every output NaN, as torch's softmax.
struct Forward {
  static constexpr bool kTwo = true;
  static constexpr const char* kName = "gumbel_softmax";
  template <class T>
  static __device__ __forceinline__ Perturb<Compute<T>, kFastExp<T>> transform(const RowOpParams& p, std::int64_t row) {
    using C = Compute<T>;
    const std::int64_t base = row / p.inner * p.len * p.inner + row % p.inner;
    return {static_cast<C>(p.tau), static_cast<C>(1.0 / p.tau), p.in1 == nullptr, p.seed, p.offset, base, p.inner};
  }
  template <class T, class Row, class S>
  static __device__ __forceinline__ void run(const RowOpParams& p, const Row& r, S scope, T* out, std::int64_t so, T* out2,
                                             std::int64_t so2) {
    using C = Compute<T>;
    if constexpr (!Row::kInRegisters) {
      run_online<T>(p, r, scope, out, so, out2, so2);
      return;
    }
    const auto max_of = [](C a, C b) { return nan_max(a, b); };
    const auto sum_of = [](C a, C b) { return a + b; };
    C m = r.fold(neg_inf<C>(), [&](C acc, C z, C, std::int64_t) { return max_of(acc, z); });
    m = scope.all(m, max_of, neg_inf<C>());
    C s = r.fold(C(0), [&](C acc, C z, C, std::int64_t) { return acc + gumbel_exp<T>(z, m); });
    s = scope.all(s, sum_of, C(0));
    const C inv = C(1) / s;
    const auto soft = [&](C z, C, std::int64_t) { return gumbel_exp<T>(z, m) * inv; };
    if (!p.hard) {
      r.write(out, so, soft);
      return;
    }
    // y_soft first: a loop row re-reads x, which an in-place y overwrites
    if (out2) r.write(out2, so2, soft);
    scope.sync();  // the buffer of the last reduction is read before a wider type reuses it
    constexpr long long kNone = 0x7fffffffffffffffLL;
    const auto min_of = [](long long a, long long b) { return b < a ? b : a; };
    long long idx = r.fold(kNone, [&](long long acc, C z, C, std::int64_t k) { return z == m && k < acc ? k : acc; });
    idx = scope.all(idx, min_of, kNone);
    const bool bad = !(s == s);
    const C nan = C(0) / C(0);
    r.write(out, so, [&](C, C, std::int64_t k) { return bad ? nan : k == idx ? C(1) : C(0); });
  }
  template <class T, class Row, class S>
  static __device__ __forceinline__ void run_online(const RowOpParams& p, const Row& r, S scope, T* out, std::int64_t so,
                                                    T* out2, std::int64_t so2) {
    using C = Compute<T>;
    const Stat<C> id{{neg_inf<C>(), C(0)}, 0x7fffffffffffffffLL};
    Stat<C> st = r.fold(id, [](Stat<C> acc, C z, C, std::int64_t k) { return add_element(acc, z, k); });
    st = scope.all(st, MergeStat<C>{}, id);
    const C inv = C(1) / st.ms.s;
    const auto soft = [&](C z, C, std::int64_t) { return dev_exp(z - st.ms.m) * inv; };
    if (!p.hard) {
      r.write(out, so, soft);
      return;
    }
    if (out2) r.write(out2, so2, soft);
    const bool bad = !(st.ms.s == st.ms.s) || !(st.ms.m == st.ms.m);
    const C nan = C(0) / C(0);
    r.write(out, so, [&](C, C, std::int64_t k) { return bad ? nan : k == st.idx ? C(1) : C(0); });
  }
};

}  // namespace baracuda::kernels::gumbel
