// Gumbel-softmax forward and backward (host side: src/softmax/gumbel_softmax.cpp; rules:
// include/baracuda/ops/gumbel_softmax.hpp; scaffolding: row_ops.cuh).
//
// What: forward z = (x + g) / tau with g ~ Gumbel(0, 1), then per row the online
// (max, sum of exp(z - max), first argmax) of z; soft y = exp(z - m) / s, hard y = the
// one-hot of the argmax (and y_soft = the soft values when asked for). Backward:
// grad_x = s * (grad_y - sum grad_y * s) / tau with s = y_soft.
// Noise: Philox4x32-10 keyed by the seed, counter (logical index / 4, offset), word
// index % 4 (philox4x32_10 of common/philox.cuh; the host twin is reference::philox4x32_10, checked against
// the Random123 known answers), or the caller's noise tensor (in1). The register rows draw
// it once at load; the loop rows draw it again in each of their two passes (same bits).
// Parallel scheme and preconditions: row_ops.cuh. Numerics: f32 for 16/32-bit types (z, the
// noise, the statistics), f64 for f64; the (max, sum, argmax) merge is a fixed tree with ties
// to the lowest index, so soft and hard outputs are deterministic. NaN or +inf in z makes
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
// Gumbel(0, 1) from one 32-bit word.
template <class C>
__device__ __forceinline__ C gumbel_of_word(unsigned w) {
  if constexpr (sizeof(C) == 8) {
    const double u = (static_cast<double>(w) + 0.5) * 0x1p-32;
    return -log(-log(u));
  } else {
    const float u = (static_cast<float>(w >> 9) + 0.5f) * 0x1p-23f;
    return -logf(-logf(u));
  }
}
// The Gumbel(0, 1) noise of logical element i (gumbel_softmax.hpp gives the mapping).
template <class C>
__device__ __forceinline__ C noise(std::uint64_t seed, std::uint64_t offset, std::int64_t i) {
  const uint4 r = noise_block(seed, offset, static_cast<std::uint64_t>(i) >> 2);
  const unsigned w = (i & 3) == 0 ? r.x : (i & 3) == 1 ? r.y : (i & 3) == 2 ? r.z : r.w;
  return gumbel_of_word<C>(w);
}

// z = (x + g) / tau; g from in1 (the noise tensor) or drawn from (seed, offset, index).
template <class C>
struct Perturb {
  C tau;
  bool draw;
  std::uint64_t seed, offset;
  std::int64_t base, inner;  // element k of the row has logical index base + k * inner
  __device__ __forceinline__ C operator()(C x, C g, std::int64_t k) const {
    if (draw) g = noise<C>(seed, offset, base + k * inner);
    return (x + g) / tau;
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
          for (int e = 0; e < 4; ++e) x[4 * q + e] = (x[4 * q + e] + gumbel_of_word<C>(w[e])) / tau;
        }
        return;
      }
    }
#pragma unroll
    for (int e = 0; e < V; ++e) x[e] = (*this)(x[e], g[e], k0 + e);
  }
};

// (max, sum of exp(z - max)) of z (softmax.cuh's MaxSum) and the first index of the max.
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

struct Forward {
  static constexpr bool kTwo = true;
  static constexpr const char* kName = "gumbel_softmax";
  template <class C>
  static __device__ __forceinline__ Perturb<C> transform(const RowOpParams& p, std::int64_t row) {
    const std::int64_t base = row / p.inner * p.len * p.inner + row % p.inner;
    return {static_cast<C>(p.tau), p.in1 == nullptr, p.seed, p.offset, base, p.inner};
  }
  template <class T, class Row, class S>
  static __device__ __forceinline__ void run(const RowOpParams& p, const Row& r, S scope, T* out, std::int64_t so, T* out2,
                                             std::int64_t so2) {
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
    // y_soft first: a loop row re-reads x, which an in-place y overwrites
    if (out2) r.write(out2, so2, soft);
    const bool bad = !(st.ms.s == st.ms.s) || !(st.ms.m == st.ms.m);
    const C nan = C(0) / C(0);
    r.write(out, so, [&](C, C, std::int64_t k) { return bad ? nan : k == st.idx ? C(1) : C(0); });
  }
};

struct Backward : rowop::Untransformed {
  static constexpr bool kTwo = true;
  static constexpr const char* kName = "gumbel_softmax_backward";
  // a = grad_y, b = y_soft
  template <class T, class Row, class S>
  static __device__ __forceinline__ void run(const RowOpParams& p, const Row& r, S scope, T* out, std::int64_t so, T*,
                                             std::int64_t) {
    using C = Compute<T>;
    C sum = r.fold(C(0), [](C acc, C g, C y, std::int64_t) { return acc + g * y; });
    sum = scope.all(sum, MergeSum<C>{}, C(0));
    const C tau = static_cast<C>(p.tau);
    r.write(out, so, [&](C g, C y, std::int64_t) { return y * (g - sum) / tau; });
  }
};

}  // namespace baracuda::kernels::gumbel
