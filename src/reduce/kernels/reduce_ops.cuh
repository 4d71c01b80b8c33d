// The reduction ops: what one element adds to an accumulator, how two accumulators merge,
// and how the final value is stored. Every merge is deterministic given the order the
// kernels call it in (fixed), and the arg ops' merge is order-free (ties go to the lower
// index, NaN wins), so the same inputs give the same bits run after run.
//
// Numerics (docs/reduce.md): f16 / bf16 / f32 accumulate in f32, f64 in f64, integers in i64
// with two's complement wrapping. amax / amin propagate NaN; logsumexp shifts by the running
// max (online merge); var / std use Welford per thread (per chunk of loaded elements in the row
// kernel: two-pass mean / M2 in registers) and Chan's merge.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/device_types.cuh"
#include "common/mufu.cuh"
#include "common/vec_io.cuh"
#include "reduce/reduce_params.hpp"

namespace baracuda::kernels::reduce {

using baracuda::reduce::ReduceParams;

template <class T>
struct AccOf {
  using type = Compute<T>;
};
template <>
struct AccOf<std::int32_t> {
  using type = std::int64_t;
};
template <>
struct AccOf<std::int64_t> {
  using type = std::int64_t;
};
template <class T>
using AccT = typename AccOf<T>::type;

template <class T>
__device__ __forceinline__ AccT<T> to_acc(T x) {
  if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(x);
  else return to_compute(x);
}

template <class C>
__device__ __forceinline__ bool is_nan(C x) {
  if constexpr (std::is_integral_v<C>) return false;
  else return isnan(x);
}
__device__ __forceinline__ float c_exp(float x) { return expf(x); }
__device__ __forceinline__ double c_exp(double x) { return exp(x); }
__device__ __forceinline__ float c_log(float x) { return logf(x); }
__device__ __forceinline__ double c_log(double x) { return log(x); }
__device__ __forceinline__ float c_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double c_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float c_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double c_sqrt(double x) { return sqrt(x); }

template <class C>
__device__ __forceinline__ C c_inf() {
  if constexpr (std::is_same_v<C, double>) return __longlong_as_double(0x7ff0000000000000ll);
  else return __int_as_float(0x7f800000);
}

template <class C>
__device__ __forceinline__ C c_nan() {
  if constexpr (std::is_same_v<C, double>) return __longlong_as_double(0x7ff8000000000000ll);
  else return __int_as_float(0x7fffffff);
}
// max / min that ignore a NaN operand (fmax / fmin); the chunk paths track NaN apart.
template <bool kMax, class C>
__device__ __forceinline__ C c_extreme(C a, C b) {
  if constexpr (std::is_same_v<C, double>) return kMax ? fmax(a, b) : fmin(a, b);
  else return kMax ? fmaxf(a, b) : fminf(a, b);
}

// The output of the floating ops has x's dtype; integer sums / products are i64.
template <class T, class C>
__device__ __forceinline__ void store_value(void* y, std::int64_t off, C v) {
  if constexpr (std::is_integral_v<T>) static_cast<std::int64_t*>(y)[off] = static_cast<std::int64_t>(v);
  else static_cast<T*>(y)[off] = from_compute<T>(v);
}

// sum, mean (kMean: sum / n), integer sums wrap.
template <class T, bool kMean>
struct SumOp {
  using Acc = AccT<T>;
  __device__ explicit SumOp(const ReduceParams&) {}
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc merge(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc>)
      return static_cast<Acc>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
    else return a + b;
  }
  __device__ void add(Acc& a, T x, std::int64_t) const { a = merge(a, to_acc(x)); }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t n) const {
    if constexpr (kMean && !std::is_integral_v<Acc>) a = a / static_cast<Acc>(n);
    store_value<T>(y, off, a);
  }
};

template <class T>
struct ProdOp {
  using Acc = AccT<T>;
  __device__ explicit ProdOp(const ReduceParams&) {}
  __device__ Acc identity() const { return Acc(1); }
  __device__ Acc merge(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc>)
      return static_cast<Acc>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
    else return a * b;
  }
  __device__ void add(Acc& a, T x, std::int64_t) const { a = merge(a, to_acc(x)); }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t) const { store_value<T>(y, off, a); }
};

// amax / amin (NaN propagates); with abs (norm +-inf) of |x|.
template <class T, bool kMax>
struct MaxOp {
  using Acc = Compute<T>;
  bool abs_first;
  __device__ explicit MaxOp(const ReduceParams& p)
      : abs_first(p.op == baracuda::reduce::RedOp::kNormInf || p.op == baracuda::reduce::RedOp::kNormNegInf) {}
  __device__ Acc identity() const { return kMax ? -c_inf<Acc>() : c_inf<Acc>(); }
  __device__ Acc merge(Acc a, Acc b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    if constexpr (kMax) return b > a ? b : a;
    else return b < a ? b : a;
  }
  __device__ void add(Acc& a, T x, std::int64_t) const {
    Acc v = to_compute(x);
    a = merge(a, abs_first ? (v < Acc(0) ? -v : v) : v);
  }
  // The row kernel's U x V loaded elements at once: fmax / fmin (one instruction an element)
  // and a NaN flag, then one merge (the per-element merge tests both operands for NaN).
  static constexpr bool kChunked = true;
  template <int U, int V>
  __device__ void add_chunk(Acc& a, const Vec<T, V> (&buf)[U], std::int64_t, std::int64_t) const {
    Acc m = identity();
    bool nan = false;
#pragma unroll
    for (int k = 0; k < U * V; ++k) {
      Acc v = to_compute(buf[k / V].v[k % V]);
      if (abs_first) v = v < Acc(0) ? -v : v;
      nan |= v != v;
      m = c_extreme<kMax>(m, v);
    }
    a = merge(a, nan ? c_nan<Acc>() : m);
  }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t) const { store_value<T>(y, off, a); }
};

// vector norm for finite p: sum of f(x) then g(sum): p = 0 counts nonzeros, 1 |x|, 2 x^2 /
// sqrt, general |x|^p / sum^(1/p).
template <class T>
struct NormOp {
  using Acc = Compute<T>;
  int code;
  Acc p;
  __device__ explicit NormOp(const ReduceParams& prm) : code(prm.norm_code), p(static_cast<Acc>(prm.p)) {}
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc merge(Acc a, Acc b) const { return a + b; }
  __device__ void add(Acc& a, T x, std::int64_t) const {
    const Acc v = to_compute(x);
    const Acc m = v < Acc(0) ? -v : v;
    switch (code) {
      case 0: a += (v != Acc(0)) ? Acc(1) : Acc(0); break;
      case 1: a += m; break;
      case 2: a += v * v; break;
      default: a += c_pow(m, p); break;
    }
  }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t) const {
    Acc r = a;
    if (code == 2) r = c_sqrt(a);
    else if (code == 3) r = c_pow(a, Acc(1) / p);
    store_value<T>(y, off, r);
  }
};

template <class C>
struct LseAcc {
  C m;  // the running max (NaN: the result is NaN; +inf: the result is +inf)
  C s;  // sum of exp(x - m) over the elements seen (m finite)
};

template <class T>
struct LseOp {
  using C = Compute<T>;
  using Acc = LseAcc<C>;
  __device__ explicit LseOp(const ReduceParams&) {}
  __device__ Acc identity() const { return Acc{-c_inf<C>(), C(0)}; }
  __device__ Acc merge(Acc a, Acc b) const {
    if (is_nan(a.m)) return a;
    if (is_nan(b.m)) return b;
    const C inf = c_inf<C>();
    if (a.m == inf || b.m == inf) return Acc{inf, C(1)};
    if (b.m == -inf) return a;
    if (a.m == -inf) return b;
    if (b.m > a.m) return Acc{b.m, a.s * c_exp(a.m - b.m) + b.s};
    return Acc{a.m, a.s + b.s * c_exp(b.m - a.m)};
  }
  __device__ void add(Acc& a, T x, std::int64_t) const {
    const C v = to_compute(x);
    a = merge(a, Acc{v, v == -c_inf<C>() ? C(0) : C(1)});
  }
  // The row kernel's U x V loaded elements at once: their max (NaN and +inf flagged), then
  // the sum of exp(x - max) and one merge (one exponential an element either way; no
  // per-element branches and rescales; f16 / bf16 results: MUFU ex2, 2^-22 relative, as the
  // softmax of 16-bit rows). Not for f64: a chunk of double exponentials spills.
  static constexpr bool kChunked = !std::is_same_v<C, double>;
  template <int U, int V>
  __device__ void add_chunk(Acc& a, const Vec<T, V> (&buf)[U], std::int64_t, std::int64_t) const {
    constexpr int kN = U * V;
    C x[kN];
    C mx = -c_inf<C>();
    bool nan = false;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      x[k] = to_compute(buf[k / V].v[k % V]);
      nan |= x[k] != x[k];
      mx = c_extreme<true>(mx, x[k]);
    }
    Acc c;
    if (nan) c = Acc{c_nan<C>(), C(1)};
    else if (mx == c_inf<C>() || mx == -c_inf<C>()) c = Acc{mx, mx == c_inf<C>() ? C(1) : C(0)};
    else {
      C sum = C(0);
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        if constexpr (sizeof(T) == 2) sum += mufu::exp_ftz(x[k] - mx);  // 16-bit result: MUFU
        else sum += c_exp(x[k] - mx);
      }
      c = Acc{mx, sum};
    }
    a = merge(a, c);
  }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t) const {
    const C r = (is_nan(a.m) || a.m == c_inf<C>() || a.m == -c_inf<C>()) ? a.m : a.m + c_log(a.s);
    store_value<T>(y, off, r);
  }
};

template <class C>
struct WelfordAcc {
  std::int64_t n;
  C mean;
  C m2;
};

// var / std with correction: m2 / max(0, n - correction) (torch).
template <class T, bool kStd>
struct WelfordOp {
  using C = Compute<T>;
  using Acc = WelfordAcc<C>;
  C correction;
  __device__ explicit WelfordOp(const ReduceParams& p) : correction(static_cast<C>(p.correction)) {}
  __device__ Acc identity() const { return Acc{0, C(0), C(0)}; }
  __device__ Acc merge(Acc a, Acc b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const std::int64_t n = a.n + b.n;
    const C d = b.mean - a.mean;
    // f32: __fdividef (2 ulp, n < 2^126) instead of the IEEE division's ~10 instructions and
    // slow-path call at every merge of the warp / block trees
    C wb;
    if constexpr (std::is_same_v<C, float>) wb = __fdividef(static_cast<C>(b.n), static_cast<C>(n));
    else wb = static_cast<C>(b.n) / static_cast<C>(n);
    return Acc{n, a.mean + d * wb, a.m2 + b.m2 + d * d * static_cast<C>(a.n) * wb};
  }
  __device__ void add(Acc& a, T x, std::int64_t) const {
    const C v = to_compute(x);
    a.n += 1;
    const C d = v - a.mean;
    a.mean += d / static_cast<C>(a.n);
    a.m2 += d * (v - a.mean);
  }
  // The row kernel's U x V loaded elements at once: their mean and squared deviations by two
  // passes over registers, then one Chan merge (one division a chunk instead of one an
  // element, which made var / std twice as slow as sum: H100 session 30).
  static constexpr bool kChunked = true;
  template <int U, int V>
  __device__ void add_chunk(Acc& a, const Vec<T, V> (&buf)[U], std::int64_t, std::int64_t) const {
    constexpr int kN = U * V;
    C x[kN];
    C s = C(0);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      x[k] = to_compute(buf[k / V].v[k % V]);
      s += x[k];
    }
    const C mean = s / static_cast<C>(kN);
    C m2 = C(0);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const C d = x[k] - mean;
      m2 += d * d;
    }
    a = merge(a, Acc{kN, mean, m2});
  }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t) const {
    C div = static_cast<C>(a.n) - correction;
    if (div < C(0)) div = C(0);
    C r = a.m2 / div;
    if constexpr (kStd) r = c_sqrt(r);
    store_value<T>(y, off, r);
  }
};

template <class V>
struct ArgAcc {
  V v;
  std::int64_t i;  // -1: no element yet
};

// argmax / argmin: the extreme value's lowest index; NaN is the extreme (first NaN wins).
template <class T, bool kMax>
struct ArgOp {
  using V = std::conditional_t<std::is_integral_v<T>, std::int64_t, Compute<T>>;
  using Acc = ArgAcc<V>;
  __device__ explicit ArgOp(const ReduceParams&) {}
  __device__ Acc identity() const { return Acc{V(0), -1}; }
  __device__ Acc merge(Acc a, Acc b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    if (an || bn) {
      if (an && bn) return a.i < b.i ? a : b;
      return an ? a : b;
    }
    if (a.v == b.v) return a.i < b.i ? a : b;
    if constexpr (kMax) return a.v > b.v ? a : b;
    else return a.v < b.v ? a : b;
  }
  __device__ V value(T x) const {
    if constexpr (std::is_integral_v<T>) return static_cast<V>(x);
    else return to_compute(x);
  }
  __device__ void add(Acc& a, T x, std::int64_t idx) const { a = merge(a, Acc{value(x), idx}); }
  // The row kernel's U x V loaded elements (indices e + u step + i, increasing in (u, i)) at
  // once: the chunk's extreme by plain compares in index order (strictly better replaces, so
  // ties keep the first; a NaN replaces a non-NaN and nothing replaces a NaN), its position a
  // compile-time constant, then one merge with the 64-bit index (the per-element merge made
  // argmax twice as slow as sum: H100 session 30).
  static constexpr bool kChunked = true;
  template <int U, int VW>
  __device__ void add_chunk(Acc& a, const Vec<T, VW> (&buf)[U], std::int64_t e, std::int64_t step) const {
    V best = value(buf[0].v[0]);
    int at = 0;
#pragma unroll
    for (int k = 1; k < U * VW; ++k) {
      const V x = value(buf[k / VW].v[k % VW]);
      bool take = kMax ? x > best : x < best;
      if constexpr (!std::is_integral_v<T>) take = take || (is_nan(x) && !is_nan(best));
      best = take ? x : best;
      at = take ? k : at;
    }
    a = merge(a, Acc{best, e + (at / VW) * step + at % VW});
  }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t) const {
    static_cast<std::int64_t*>(y)[off] = a.i;
  }
};

// any / all / count_nonzero over bit patterns U: an element is nonzero when (bits & mask) != 0
// (floats mask the sign bit so -0.0 is zero; NaN is nonzero).
template <class U>
struct CountOp {
  using Acc = std::int64_t;
  std::uint64_t mask;
  baracuda::reduce::RedOp op;
  __device__ explicit CountOp(const ReduceParams& p) : mask(p.mask), op(p.op) {}
  __device__ Acc identity() const { return 0; }
  __device__ Acc merge(Acc a, Acc b) const { return a + b; }
  __device__ void add(Acc& a, U x, std::int64_t) const { a += (static_cast<std::uint64_t>(x) & mask) != 0 ? 1 : 0; }
  __device__ void store(void* y, std::int64_t off, Acc a, std::int64_t n) const {
    if (op == baracuda::reduce::RedOp::kCount) static_cast<std::int64_t*>(y)[off] = a;
    else static_cast<bool*>(y)[off] = op == baracuda::reduce::RedOp::kAny ? a > 0 : a == n;
  }
};

}  // namespace baracuda::kernels::reduce
