// Sparsemax forward and backward (host side: src/softmax/sparsemax.cpp; rules:
// include/baracuda/ops/sparsemax.hpp; scaffolding: row_ops.cuh).
//
// What: forward y = max(d - tau, 0) with d = x - max(x) (shift-invariant, so rows of any
// magnitude keep their precision) and tau in [-1, 0) the root of f(t) = sum max(d - t, 0) - 1.
// The threshold, every step one fold + merge over the row (registers or memory):
//  1. Newton / Michelot steps from t = -1 (a lower bound: the max alone contributes 1):
//     t' = (sum_{d > t} d - 1) / |{d > t}| stays a lower bound and is exact once the support
//     count repeats; typically 2-6 steps. Stop also when t' does not move past t (rounding).
//  2. After 24 steps without convergence (adversarial rows), bisection on [t, 0) until the
//     bracket stops shrinking, then one Michelot step from its lower end.
// Backward: grad_x = [y > 0] * (grad_y - v), v the mean of grad_y over the support.
// Parallel scheme and preconditions: row_ops.cuh. Numerics: f32 for 16/32-bit types, f64
// for f64; sums and counts merged in fixed trees (deterministic); counts are 64-bit. A row
// whose max is not finite (a NaN, a +inf, or only -inf) is NaN. Bench: `baracuda-bench
// --suite softmax` (sparsemax, sparsemax_bwd).
#pragma once

#include <cstdint>

#include "softmax/kernels/row_ops.cuh"
#include "softmax/kernels/softmax.cuh"

namespace baracuda::kernels::sparse {

using rowop::RowOpParams;

// A sum and a count.
template <class C>
struct SumCount {
  C s;
  long long c;
};
template <class C>
struct MergeSumCount {
  __device__ __forceinline__ SumCount<C> operator()(SumCount<C> a, SumCount<C> b) const { return {a.s + b.s, a.c + b.c}; }
};
template <class C>
struct MergeMax {
  __device__ __forceinline__ C operator()(C a, C b) const { return nan_max(a, b); }
};

constexpr int kNewtonSteps = 24;
constexpr int kBisectSteps = 80;

struct Forward : rowop::Untransformed {
  static constexpr bool kTwo = false;
  static constexpr const char* kName = "sparsemax";
  template <class T, class Row, class S>
  static __device__ __forceinline__ void run(const RowOpParams&, const Row& r, S scope, T* out, std::int64_t so, T*,
                                             std::int64_t) {
    using C = Compute<T>;
    C m = r.fold(neg_inf<C>(), [](C acc, C x, C, std::int64_t) { return nan_max(acc, x); });
    m = scope.all(m, MergeMax<C>{}, neg_inf<C>());
    if (!(m > neg_inf<C>() && m < -neg_inf<C>())) {  // NaN, +inf, or a row of -inf
      const C nan = C(0) / C(0);
      r.write(out, so, [&](C, C, std::int64_t) { return nan; });
      return;
    }
    // sum and count of d = x - m over d > t
    const auto above = [&](C t) {
      const SumCount<C> id{C(0), 0};
      SumCount<C> q = r.fold(id, [&](SumCount<C> acc, C x, C, std::int64_t) {
        const C d = x - m;
        if (d > t) {
          acc.s += d;
          ++acc.c;
        }
        return acc;
      });
      return scope.all(q, MergeSumCount<C>{}, id);
    };
    C lo = C(-1), tau = C(-1);
    long long c_prev = 0;
    bool done = false;
    for (int it = 0; it < kNewtonSteps; ++it) {
      const SumCount<C> q = above(lo);
      const C t = (q.s - C(1)) / static_cast<C>(q.c);
      if (q.c == c_prev || !(t > lo)) {
        tau = t;
        done = true;
        break;
      }
      c_prev = q.c;
      lo = t;
    }
    if (!done) {
      C hi = C(0);
      for (int it = 0; it < kBisectSteps; ++it) {
        const C mid = (lo + hi) * C(0.5);
        if (!(mid > lo && mid < hi)) break;
        const SumCount<C> q = above(mid);
        if (q.s - static_cast<C>(q.c) * mid - C(1) >= C(0)) lo = mid;
        else hi = mid;
      }
      const SumCount<C> q = above(lo);
      tau = (q.s - C(1)) / static_cast<C>(q.c);
    }
    r.write(out, so, [&](C x, C, std::int64_t) {
      const C d = x - m;
      return d > tau ? d - tau : C(0);
    });
  }
};

struct Backward : rowop::Untransformed {
  static constexpr bool kTwo = true;
  static constexpr const char* kName = "sparsemax_backward";
  // a = grad_y, b = y
  template <class T, class Row, class S>
  static __device__ __forceinline__ void run(const RowOpParams&, const Row& r, S scope, T* out, std::int64_t so, T*,
                                             std::int64_t) {
    using C = Compute<T>;
    const SumCount<C> id{C(0), 0};
    SumCount<C> q = r.fold(id, [](SumCount<C> acc, C g, C y, std::int64_t) {
      if (y > C(0)) {
        acc.s += g;
        ++acc.c;
      }
      return acc;
    });
    q = scope.all(q, MergeSumCount<C>{}, id);
    const C v = q.c > 0 ? q.s / static_cast<C>(q.c) : C(0);
    r.write(out, so, [&](C g, C y, std::int64_t) { return y > C(0) ? g - v : C(0); });
  }
};

}  // namespace baracuda::kernels::sparse
