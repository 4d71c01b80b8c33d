// Scan kernels: cumsum, cumprod, cummax / cummin (+ indices), logcumsumexp, and the backward
// scans of cumprod, cummax / cummin and logcumsumexp (host side: src/scan/scan.cpp; the seam:
// scan_params.hpp).
//
// What: per row of `len` elements, in scan order (from the end when `reverse`), every output
// is the combine of the states of the elements up to it. An op (SumOp, ..., LseBwdOp) says
// what the state of an element is, how two states combine (associative; the earlier one
// first) and what is written from an element's exclusive / inclusive state.
//
// Parallel schemes:
//  * scan_tiles<kWarp / kBlock>: a warp (8 rows per block) or a block of 256 threads walks a
//    row in tiles. Thread t holds K vectors of V elements, vector j at tile element
//    (j * nt + t) * V (16-byte loads when V > 1, coalesced). Each thread folds its vectors,
//    the warp scans them (shuffles), the per-(vector, warp) totals (K * warps <= 32) are
//    scanned by one warp through shared memory, and a running carry joins the tiles in
//    order. Fixed order: deterministic.
//  * scan_tiles<kLookback>: the same tile scan, one tile per block, tiles numbered by a
//    ticket counter (launch order, so every predecessor is running or done). A tile
//    publishes its aggregate, then warp 0 looks back 32 predecessors at a time (spinning on
//    their flags) until one has published its inclusive prefix, and publishes its own.
//    The carry is combined in the order the predecessors' results were found: floating sums
//    and products may differ in the last bits from run to run; integers (wrapping adds and
//    multiplies), max and min are exact.
//  * scan_column: one thread per row walking the axis with any strides, sequential (groups
//    of 8 loads issued ahead of their stores).
// Preconditions: the tile kernels need unit axis strides; V > 1 needs len % V == 0 and
// 16-byte aligned rows (the plan checks both). Numerics: f32 for f16 / bf16 / f32, f64 for
// f64, wrapping 64-bit integers for the sums and products of i32 / i64 (written as i64);
// integer cummax / cummin compare and write the input dtype itself. Bench:
// `baracuda-bench --suite scan`.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/device_types.cuh"
#include "common/mufu.cuh"
#include "common/row_io.cuh"
#include "common/vec_io.cuh"
#include "scan/scan_params.hpp"

namespace baracuda::kernels {

// ------------------------------------------------------------------------------ contexts

// A row's operand offsets and axis strides.
struct ScanCtx {
  const scan::ScanParams* p;
  std::int64_t off[scan::kScanOperands];
  std::int64_t st[scan::kScanOperands];
  std::int64_t len;
  bool rev;
};

__device__ __forceinline__ ScanCtx scan_ctx(const scan::ScanParams& p, std::int64_t row) {
  ScanCtx c;
  c.p = &p;
#pragma unroll
  for (int k = 0; k < scan::kScanOperands; ++k) {
    c.off[k] = row_offset(p, k, row);
    c.st[k] = p.axis_stride[k];
  }
  c.len = p.len;
  c.rev = p.reverse;
  return c;
}

template <class T>
__device__ __forceinline__ const T* scan_in(const ScanCtx& c, int slot) {
  return static_cast<const T*>(c.p->in[slot - 2]) + c.off[slot];
}

// ------------------------------------------------------------------------------ scalar math

__device__ __forceinline__ bool scan_isnan(float x) { return x != x; }
__device__ __forceinline__ bool scan_isnan(double x) { return x != x; }
__device__ __forceinline__ float scan_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double scan_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float scan_exp(float x) { return expf(x); }
__device__ __forceinline__ double scan_exp(double x) { return exp(x); }
__device__ __forceinline__ float scan_log(float x) { return logf(x); }
__device__ __forceinline__ double scan_log(double x) { return log(x); }

// torch's _log_add_exp_helper: log(exp(x) + exp(y)); equal infinities stay, NaN propagates.
template <class C>
__device__ __forceinline__ C log_add_exp(C x, C y) {
  const C mn = scan_isnan(y) ? y : (y < x ? y : x);
  const C mx = scan_isnan(y) ? y : (y > x ? y : x);
  if (mn != mx || isfinite(mn)) return scan_log1p(scan_exp(mn - mx)) + mx;
  return x;
}

// ------------------------------------------------------------------------------ ops

// A forward op over input T, output O: subclasses give S, identity, combine, elem, value.
template <class Derived, class T, class O, bool kIdx>
struct ForwardOp {
  static constexpr bool kVecOk = true;
  static constexpr int kMinBlocks = 1;  // scan_tiles' __launch_bounds__ minimum blocks a SM
  template <int V, class S>
  __device__ __forceinline__ static void load(const ScanCtx& c, std::int64_t i0, S (&e)[V]) {
    const T* x = scan_in<T>(c, 2);
    if constexpr (V > 1) {
      const Vec<T, V> v = load_vec<T, V>(x + i0);
#pragma unroll
      for (int k = 0; k < V; ++k) e[k] = Derived::elem(v.v[k], i0 + k);
    } else {
      e[0] = Derived::elem(x[i0 * c.st[2]], i0);
    }
  }
  template <int V, class S>
  __device__ __forceinline__ static void store(const ScanCtx& c, std::int64_t i0, const S (&)[V], const S (&in)[V]) {
    O* y = static_cast<O*>(c.p->out) + c.off[0];
    std::int64_t* ix = static_cast<std::int64_t*>(c.p->out_idx) + c.off[1];
    if constexpr (V > 1) {
      Vec<O, V> o;
#pragma unroll
      for (int k = 0; k < V; ++k) o.v[k] = Derived::value(in[k]);
      store_row_vec<O, V>(y + i0, o);
      if constexpr (kIdx) {
        Vec<std::int64_t, V> w;
#pragma unroll
        for (int k = 0; k < V; ++k) w.v[k] = in[k].i;
        store_row_vec<std::int64_t, V>(ix + i0, w);
      }
    } else {
      y[i0 * c.st[0]] = Derived::value(in[0]);
      if constexpr (kIdx) ix[i0 * c.st[1]] = in[0].i;
    }
  }
};

// Integer inputs accumulate in uint64 (two's-complement wrap without undefined behaviour).
template <class T>
using SumState = std::conditional_t<std::is_integral_v<T>, unsigned long long, Compute<T>>;
template <class T>
using SumOut = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;

template <class T>
__device__ __forceinline__ SumState<T> sum_elem(T x) {
  if constexpr (std::is_integral_v<T>) return static_cast<unsigned long long>(static_cast<long long>(x));
  else return to_compute(x);
}
template <class T>
__device__ __forceinline__ SumOut<T> sum_value(SumState<T> s) {
  if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(s);
  else return from_compute<T>(s);
}

template <class T>
struct SumOp : ForwardOp<SumOp<T>, T, SumOut<T>, false> {
  using S = SumState<T>;
  __device__ __forceinline__ static S identity() { return S(0); }
  __device__ __forceinline__ static S combine(S a, S b) { return a + b; }
  __device__ __forceinline__ static S elem(T x, std::int64_t) { return sum_elem(x); }
  __device__ __forceinline__ static SumOut<T> value(S s) { return sum_value<T>(s); }
};

template <class T>
struct ProdOp : ForwardOp<ProdOp<T>, T, SumOut<T>, false> {
  using S = SumState<T>;
  __device__ __forceinline__ static S identity() { return S(1); }
  __device__ __forceinline__ static S combine(S a, S b) { return a * b; }
  __device__ __forceinline__ static S elem(T x, std::int64_t) { return sum_elem(x); }
  __device__ __forceinline__ static SumOut<T> value(S s) { return sum_value<T>(s); }
};

template <class C>
struct ValIdx {
  C v;
  std::int64_t i;  // -1: the identity (no element)
};

// cummax (kMax) / cummin: the later element (in scan order) wins a tie; a NaN beats any
// number and a later NaN beats an earlier one (torch: isnan(x) || (!isnan(out) && x >= out)).
// Floating inputs compare in their compute type (exact: widening), integers as themselves.
template <class T>
using MaxMinValue = std::conditional_t<std::is_integral_v<T>, T, Compute<T>>;
template <class T, bool kMax>
struct MaxMinOp : ForwardOp<MaxMinOp<T, kMax>, T, T, true> {
  using C = MaxMinValue<T>;
  using S = ValIdx<C>;
  __device__ __forceinline__ static S identity() { return {C(0), -1}; }
  __device__ __forceinline__ static S combine(S a, S b) {
    if (b.i < 0) return a;
    if (a.i < 0) return b;
    bool take_b;
    if constexpr (std::is_integral_v<T>) take_b = kMax ? b.v >= a.v : b.v <= a.v;
    else take_b = scan_isnan(b.v) || (!scan_isnan(a.v) && (kMax ? b.v >= a.v : b.v <= a.v));
    return take_b ? b : a;
  }
  __device__ __forceinline__ static S elem(T x, std::int64_t i) {
    if constexpr (std::is_integral_v<T>) return {x, i};
    else return {to_compute(x), i};
  }
  __device__ __forceinline__ static T value(S s) {
    if constexpr (std::is_integral_v<T>) return s.v;
    else return from_compute<T>(s.v);
  }
};

// Backward ops read several operands: scalar loads only (V == 1).
template <class T>
struct BackwardOpBase {
  static constexpr bool kVecOk = false;
  static constexpr int kMinBlocks = 1;
  __device__ __forceinline__ static T grad_y(const ScanCtx& c, std::int64_t i) { return scan_in<T>(c, 2)[i * c.st[2]]; }
  __device__ __forceinline__ static T x_at(const ScanCtx& c, std::int64_t i) { return scan_in<T>(c, 3)[i * c.st[3]]; }
  __device__ __forceinline__ static T y_at(const ScanCtx& c, std::int64_t i) { return scan_in<T>(c, 4)[i * c.st[4]]; }
  __device__ __forceinline__ static void put(const ScanCtx& c, std::int64_t i, Compute<T> v) {
    (static_cast<T*>(c.p->out) + c.off[0])[i * c.st[0]] = from_compute<T>(v);
  }
};

// cumprod backward. Scanning against the forward, element i maps s -> x_i * g_i + x_i * s, so
// the exclusive state's c is T_{i+1} = sum_{j>i} g_j prod_{k=i+1..j} x_k, and
// grad_x_i = y_{i-1} * (g_i + T_{i+1}) with y_{i-1} the forward's previous output (1 at the
// start). No division: exact with zeros in x.
template <class C>
struct Affine {
  C m, c;  // s -> c + m * s
};
template <class T>
struct ProdBwdOp : BackwardOpBase<T> {
  using B = BackwardOpBase<T>;
  using C = Compute<T>;
  using S = Affine<C>;
  __device__ __forceinline__ static S identity() { return {C(1), C(0)}; }
  // a: the elements scanned first (later in the forward), applied inside b
  __device__ __forceinline__ static S combine(S a, S b) { return {b.m * a.m, b.c + b.m * a.c}; }
  template <int V>
  __device__ __forceinline__ static void load(const ScanCtx& c, std::int64_t i, S (&e)[V]) {
    static_assert(V == 1);
    const C x = to_compute(B::x_at(c, i)), g = to_compute(B::grad_y(c, i));
    e[0] = {x, x * g};
  }
  template <int V>
  __device__ __forceinline__ static void store(const ScanCtx& c, std::int64_t i, const S (&ex)[V], const S (&)[V]) {
    // the forward's previous element: i - 1 when this (backward) scan runs from the end
    const std::int64_t prev = c.rev ? i - 1 : i + 1;
    const C yp = (prev >= 0 && prev < c.len) ? to_compute(B::y_at(c, prev)) : C(1);
    B::put(c, i, yp * (to_compute(B::grad_y(c, i)) + ex[0].c));
  }
};

// cummax / cummin backward: the sum of g over the run of equal indices that starts at each
// element (in this scan's order); an element receives it when its index is its own position
// (where the forward's extremum changed), else 0. Interval state: its first and last index,
// the sum of its trailing run, whether it is one run.
template <class C>
struct RunSum {
  std::int64_t first, last;  // first == -2: the identity
  C sum;                     // sum of g over the trailing run of index `last`
  int uniform;
};
template <class T>
struct MaxMinBwdOp : BackwardOpBase<T> {
  using B = BackwardOpBase<T>;
  using C = Compute<T>;
  using S = RunSum<C>;
  __device__ __forceinline__ static S identity() { return {-2, -2, C(0), 1}; }
  __device__ __forceinline__ static S combine(S a, S b) {
    if (a.first == -2) return b;
    if (b.first == -2) return a;
    S r;
    r.first = a.first;
    r.last = b.last;
    r.sum = (b.uniform && a.last == b.first) ? a.sum + b.sum : b.sum;
    r.uniform = a.uniform && b.uniform && a.last == b.first;
    return r;
  }
  template <int V>
  __device__ __forceinline__ static void load(const ScanCtx& c, std::int64_t i, S (&e)[V]) {
    static_assert(V == 1);
    const std::int64_t* idx = static_cast<const std::int64_t*>(c.p->in[3]) + c.off[5];
    e[0].first = e[0].last = idx[i * c.st[5]];
    e[0].sum = to_compute(B::grad_y(c, i));
    e[0].uniform = 1;
  }
  template <int V>
  __device__ __forceinline__ static void store(const ScanCtx& c, std::int64_t i, const S (&)[V], const S (&in)[V]) {
    B::put(c, i, in[0].last == i ? in[0].sum : C(0));
  }
};

// logcumsumexp backward (torch): grad_x_i = exp(x_i + LP_i) - exp(x_i + LN_i), LP / LN the
// scans (against the forward) of log(g_j) - y_j over positive / negative g (-inf elsewhere).
// Each of LP, LN is kept as a linear sum against its running maximum, L = m + log(s) with
// m = the largest term so far and s = sum of exp(term - m) (1 <= s <= the terms' count; the
// empty sum m = -inf, s = 0), and combined as (M, s_small e^(m_small - M) + s_big): one exp,
// rounding errors relative to the partial sums like a cumsum's. (The log-domain form rounded
// LP / LN to an ulp of their magnitude, 4..15 on long rows, at every combine, and pos - neg
// cancelled that up: a 262144-long f32 row came out 1.7e-3 off, docs/scan.md.) Output
// exp(x + m) s for each part: the same infinities and NaN as torch's formula (NaN g or an
// empty part's +inf x as torch's where()s give them).
template <class C>
struct LseLinear {
  C m, s;  // L = m + log(s)
};
// The same with a compensated f64 sum, L = m + log(s + e), e the rounding error of s carried
// along (the product's by an FMA, the sum's by TwoSum): for f64 inputs in the sequential column
// kernel (kColumn; its state, 48 bytes, is never published, and column_split's segments are
// short), which has no wider type to sum in: a plain f64 running sum over a 262144-long row
// came out ~7e-12 relative off, 2214 of 524288 elements past the f64 tolerance (H100 session 29,
// seed 9897670956504153021). A host model of both (session 29, 3 seeds of 262144 uniform(-5, 5)
// x, g in (-2, 2)): plain up to 1.05x the tolerance, compensated at most 0.20x.
struct LseLinearCompensated {
  double m, s, e;
};
// (M, s_small e^(m_small - M) + s_big) of either kind. kFast (f32 sums under a 16-bit
// result): the exponential as MUFU ex2 (2^-22 relative, common/mufu.cuh) instead of expf.
template <bool kFast = false, class L>
__device__ __forceinline__ L lse_linear_add(L a, L b) {
  using C = decltype(a.m);
  static_assert(!kFast || std::is_same_v<C, float>, "MUFU ex2 is an f32 instruction");
  const C d = a.m == b.m ? C(0) : a.m - b.m;  // equal maxima (also equal infinities): 0; NaN iff an m is NaN
  const bool a_hi = d > C(0);
  const L hi = a_hi ? a : b, lo = a_hi ? b : a;
  C f;
  if constexpr (kFast) f = mufu::exp_ftz(-fabs(d));
  else f = scan_exp(-fabs(d));
  L r;
  r.m = scan_isnan(d) ? d : hi.m;
  if constexpr (std::is_same_v<L, LseLinearCompensated>) {
    // _rn intrinsics: never contracted into an FMA, which would break the exact error terms
    const double p = __dmul_rn(lo.s, f), p_err = fma(lo.s, f, -p);  // lo.s f = p + p_err exactly
    const double t = __dadd_rn(hi.s, p), z = __dsub_rn(t, hi.s);     // TwoSum: hi.s + p = t + t_err exactly
    const double t_err = __dadd_rn(__dsub_rn(hi.s, __dsub_rn(t, z)), __dsub_rn(p, z));
    r.s = t;
    r.e = hi.e + fma(lo.e, f, p_err + t_err);
  } else {
    r.s = fma(lo.s, f, hi.s);
  }
  return r;
}
// logcumsumexp. f32 compute: the running L = m + log(s) in the linear form (m the running
// max, s the sum of exp(x_j - m)), so a combine is one exp and an FMA (lse_linear_add) and
// each output one log; torch's log-domain combine, log1p(exp(min - max)) + max, takes an exp
// and a log1p a combine (H100 session 30: bf16 16384x8192 0.72 ms, 24% of copy,
// compute-bound). An element x is (x, 1): -inf gives -inf, +inf gives +inf from there on, NaN
// gives NaN from there on. f16 / bf16 results take the exp and the log as MUFU ex2 / lg2
// (2^-22 relative, as the softmax of 16-bit rows). f64 keeps the log-domain combine: its
// (m, s) state, 16 bytes, spilled 160 bytes in column_split's 8-ahead loop. Either state is
// 8 bytes (scan_state_bytes).
template <class T>
struct LseOp : ForwardOp<LseOp<T>, T, T, false> {
  using C = Compute<T>;
  static constexpr bool kLinear = !std::is_same_v<C, double>;
  static constexpr bool kFast = sizeof(T) == 2;
  using S = std::conditional_t<kLinear, LseLinear<C>, C>;
  __device__ __forceinline__ static S identity() {
    if constexpr (kLinear) return {-static_cast<C>(INFINITY), C(0)};
    else return -static_cast<C>(INFINITY);
  }
  __device__ __forceinline__ static S combine(S a, S b) {
    if constexpr (kLinear) return lse_linear_add<kFast>(a, b);
    else return log_add_exp(a, b);
  }
  __device__ __forceinline__ static S elem(T x, std::int64_t) {
    if constexpr (kLinear) return {to_compute(x), C(1)};
    else return to_compute(x);
  }
  __device__ __forceinline__ static T value(S s) {
    if constexpr (kFast) return from_compute<T>(fmaf(mufu::lg2(s.s), mufu::kLn2, s.m));
    else if constexpr (kLinear) return from_compute<T>(s.m + scan_log(s.s));
    else return from_compute<T>(s);
  }
};

template <class L>
struct LseBwdState {
  L pos, neg;
};
// C: the sums' type. f32 in the tile kernels (tree sums, depth ~log2 len); f64 in the
// sequential column kernels, where a running f32 sum of up to len terms drifted (1.5% over
// 262144 16-bit terms: each step rounds s e^(-d) + 1 the same way, H100 session 21), and
// compensated f64 there for f64 inputs (kCompensated, LseLinearCompensated).
template <class T, class C = Compute<T>, bool kCompensated = false>
struct LseBwdOp : BackwardOpBase<T> {
  static_assert(!kCompensated || std::is_same_v<C, double>, "the compensated sums are f64");
  using B = BackwardOpBase<T>;
  using L = std::conditional_t<kCompensated, LseLinearCompensated, LseLinear<C>>;
  using S = LseBwdState<L>;
  __device__ __forceinline__ static L part(C m, C s) {
    if constexpr (kCompensated) return {m, s, 0.0};
    else return {m, s};
  }
  __device__ __forceinline__ static C value(const L& l) {  // s, or s + e
    if constexpr (kCompensated) return l.s + l.e;
    else return l.s;
  }
  // f32 sums: 3 blocks of 256 a SM in the row kernels (80 registers, no spills; 95 unbounded,
  // 2 blocks); the look-back's instance would spill at 80 and keeps 1
  static constexpr int kMinBlocks = sizeof(C) == 4 ? 3 : 1;
  __device__ __forceinline__ static S identity() {
    const C ninf = -static_cast<C>(INFINITY);
    return {part(ninf, C(0)), part(ninf, C(0))};
  }
  __device__ __forceinline__ static S combine(S a, S b) {
    return {lse_linear_add(a.pos, b.pos), lse_linear_add(a.neg, b.neg)};
  }
  template <int V>
  __device__ __forceinline__ static void load(const ScanCtx& c, std::int64_t i, S (&e)[V]) {
    static_assert(V == 1);
    const C g = static_cast<C>(to_compute(B::grad_y(c, i))), y = static_cast<C>(to_compute(B::y_at(c, i)));
    const L term = part(scan_log(fabs(g)) - y, C(1)), none = identity().pos;
    e[0] = {g > C(0) ? term : none, g < C(0) ? term : none};
  }
  template <int V>
  __device__ __forceinline__ static void store(const ScanCtx& c, std::int64_t i, const S (&)[V], const S (&in)[V]) {
    const C x = static_cast<C>(to_compute(B::x_at(c, i)));
    B::put(c, i, static_cast<Compute<T>>(scan_exp(x + in[0].pos.m) * value(in[0].pos) -
                                         scan_exp(x + in[0].neg.m) * value(in[0].neg)));
  }
};

// ------------------------------------------------------------------------------ warp helpers

// A state moved across lanes word by word: from lane - d (kUp) or from lane src.
template <bool kUp, class S>
__device__ __forceinline__ S shfl_state(S v, int arg) {
  static_assert(sizeof(S) % 4 == 0, "scan states are whole 32-bit words");
  constexpr int W = sizeof(S) / 4;
  unsigned w[W];
  memcpy(w, &v, sizeof(S));
#pragma unroll
  for (int k = 0; k < W; ++k) w[k] = kUp ? __shfl_up_sync(0xffffffffu, w[k], arg) : __shfl_sync(0xffffffffu, w[k], arg);
  memcpy(&v, w, sizeof(S));
  return v;
}
template <class S>
__device__ __forceinline__ S shfl_up_state(S v, int d) {
  return shfl_state<true>(v, d);
}
template <class S>
__device__ __forceinline__ S shfl_idx_state(S v, int src) {
  return shfl_state<false>(v, src);
}
// Inclusive scan over the 32 lanes (lane order = scan order).
template <class Op, class S>
__device__ __forceinline__ S warp_inclusive(S v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const S o = shfl_up_state(v, d);
    if (lane >= d) v = Op::combine(o, v);
  }
  return v;
}

// Word-wise L2 (coherent) stores / loads of a published state.
template <class S>
__device__ __forceinline__ void publish_state(void* slot, S v) {
  unsigned w[sizeof(S) / 4];
  memcpy(w, &v, sizeof(S));
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(S) / 4); ++k) __stcg(static_cast<unsigned*>(slot) + k, w[k]);
}
template <class S>
__device__ __forceinline__ S read_state(const void* slot) {
  unsigned w[sizeof(S) / 4];
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(S) / 4); ++k) w[k] = __ldcg(static_cast<const unsigned*>(slot) + k);
  S v;
  memcpy(&v, w, sizeof(S));
  return v;
}

// ------------------------------------------------------------------------------ chunk io

// The V elements at scan positions [p0, p0 + V) in scan order (reversed rows read the
// mirrored, still V-aligned, original chunk).
template <class Op, int V, class S>
__device__ __forceinline__ void load_chunk(const ScanCtx& c, std::int64_t p0, S (&e)[V]) {
  if (!c.rev) {
    Op::template load<V>(c, p0, e);
  } else {
    S t[V];
    Op::template load<V>(c, c.len - p0 - V, t);
#pragma unroll
    for (int k = 0; k < V; ++k) e[k] = t[V - 1 - k];
  }
}
template <class Op, int V, class S>
__device__ __forceinline__ void store_chunk(const ScanCtx& c, std::int64_t p0, const S (&ex)[V], const S (&in)[V]) {
  if (!c.rev) {
    Op::template store<V>(c, p0, ex, in);
  } else {
    S a[V], b[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      a[k] = ex[V - 1 - k];
      b[k] = in[V - 1 - k];
    }
    Op::template store<V>(c, c.len - p0 - V, a, b);
  }
}

// ------------------------------------------------------------------------------ kernels

enum class ScanGroup : int { kWarp, kBlock, kLookback };

// Decoupled look-back for the tile `ticket` (chunk `chunk` of its row): every thread of the
// block calls it; returns the combine of every earlier tile of the row.
template <class Op, class S>
__device__ __forceinline__ S look_back(const scan::ScanParams& p, std::int64_t ticket, std::int64_t chunk, S total,
                                       S* shared_prefix) {
  const std::int64_t n = p.rows * p.tiles;
  char* ws = static_cast<char*>(p.workspace);
  int* flags = reinterpret_cast<int*>(ws + 256);
  char* agg = ws + p.flag_bytes;
  char* inc = agg + n * scan::kScanStateSlot;
  if (threadIdx.x < 32) {
    const int lane = static_cast<int>(threadIdx.x);
    S prefix = Op::identity();
    if (chunk == 0) {
      if (lane == 0) {
        publish_state(inc + ticket * scan::kScanStateSlot, total);
        __threadfence();
        atomicExch(flags + ticket, 2);
      }
    } else {
      if (lane == 0) {
        publish_state(agg + ticket * scan::kScanStateSlot, total);
        __threadfence();
        atomicExch(flags + ticket, 1);
      }
      const std::int64_t row_first = ticket - chunk;
      std::int64_t hi = ticket - 1;
      while (true) {
        const std::int64_t mine = hi - (31 - lane);
        int f = 2;
        S v = Op::identity();
        if (mine >= row_first) {
          const volatile int* fp = flags + mine;
          do {
            f = *fp;
          } while (f == 0);
          __threadfence();
          v = read_state<S>((f == 2 ? inc : agg) + mine * scan::kScanStateSlot);
        }
        const unsigned done = __ballot_sync(0xffffffffu, f == 2);
        const int first = done ? 31 - __clz(static_cast<int>(done)) : 0;  // highest lane with a prefix
        if (lane < first) v = Op::identity();
        const S s = warp_inclusive<Op>(v, lane);
        prefix = Op::combine(shfl_idx_state(s, 31), prefix);
        if (done) break;
        hi -= 32;
      }
      if (lane == 0) {
        publish_state(inc + ticket * scan::kScanStateSlot, Op::combine(prefix, total));
        __threadfence();
        atomicExch(flags + ticket, 2);
      }
    }
    if (lane == 0) *shared_prefix = prefix;
  }
  __syncthreads();
  return *shared_prefix;
}

template <class Op, int V, int K, ScanGroup G>
__global__ void __launch_bounds__(scan::kScanBlockThreads, G == ScanGroup::kLookback ? 1 : Op::kMinBlocks)
    scan_tiles(scan::ScanParams p) {
  using S = typename Op::S;
  constexpr int kNt = G == ScanGroup::kWarp ? 32 : scan::kScanBlockThreads;
  constexpr int kWarps = kNt / 32;
  constexpr std::int64_t kTile = static_cast<std::int64_t>(kNt) * K * V;
  static_assert(K * kWarps <= 32, "one warp scans the per-(vector, warp) totals");
  __shared__ S totals[2][32];
  __shared__ S scanned[2][32];
  __shared__ S prefix_slot;
  __shared__ unsigned long long ticket_slot;
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int t = G == ScanGroup::kWarp ? lane : static_cast<int>(threadIdx.x);
  std::int64_t row, begin = 0, end = p.len, ticket = 0, chunk = 0;
  if constexpr (G == ScanGroup::kWarp) {
    row = static_cast<std::int64_t>(blockIdx.x) * (scan::kScanBlockThreads / 32) + warp;
    if (row >= p.rows) return;  // whole warps leave; the warp mode has no block barrier
  } else if constexpr (G == ScanGroup::kBlock) {
    row = blockIdx.x;
  } else {
    if (threadIdx.x == 0) ticket_slot = atomicAdd(static_cast<unsigned long long*>(p.workspace), 1ull);
    __syncthreads();
    ticket = static_cast<std::int64_t>(ticket_slot);
    row = ticket / p.tiles;
    chunk = ticket - row * p.tiles;
    begin = chunk * kTile;
    end = begin + kTile < p.len ? begin + kTile : p.len;
  }
  const ScanCtx c = scan_ctx(p, row);
  S carry = Op::identity();
  int parity = 0;
  for (std::int64_t base = begin; base < end; base += kTile) {
    S e[K][V];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::int64_t p0 = base + (static_cast<std::int64_t>(j) * kNt + t) * V;
      if (p0 < end) {
        load_chunk<Op, V>(c, p0, e[j]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) e[j][k] = Op::identity();
      }
    }
    S wex[K], pre[K];
    S total;
    {
      S wtot[K];
#pragma unroll
      for (int j = 0; j < K; ++j) {
        S a = e[j][0];
#pragma unroll
        for (int k = 1; k < V; ++k) a = Op::combine(a, e[j][k]);
        const S inc = warp_inclusive<Op>(a, lane);
        const S ex = shfl_up_state(inc, 1);
        wex[j] = lane == 0 ? Op::identity() : ex;
        wtot[j] = shfl_idx_state(inc, 31);
      }
      if constexpr (G == ScanGroup::kWarp) {
        S run = Op::identity();
#pragma unroll
        for (int j = 0; j < K; ++j) {
          pre[j] = run;
          run = Op::combine(run, wtot[j]);
        }
        total = run;
      } else {
        if (lane == 31) {
#pragma unroll
          for (int j = 0; j < K; ++j) totals[parity][j * kWarps + warp] = wtot[j];
        }
        __syncthreads();
        if (warp == 0) {
          const S v = lane < K * kWarps ? totals[parity][lane] : Op::identity();
          scanned[parity][lane] = warp_inclusive<Op>(v, lane);
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int slot = j * kWarps + warp;
          pre[j] = slot == 0 ? Op::identity() : scanned[parity][slot - 1];
        }
        total = scanned[parity][K * kWarps - 1];
      }
    }
    S tile_prefix;
    if constexpr (G == ScanGroup::kLookback) {
      tile_prefix = look_back<Op>(p, ticket, chunk, total, &prefix_slot);
    } else {
      tile_prefix = carry;
      carry = Op::combine(carry, total);
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::int64_t p0 = base + (static_cast<std::int64_t>(j) * kNt + t) * V;
      if (p0 >= end) continue;
      S run = Op::combine(tile_prefix, Op::combine(pre[j], wex[j]));
      S ex[V], in[V];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        ex[k] = run;
        run = Op::combine(run, e[j][k]);
        in[k] = run;
      }
      store_chunk<Op, V>(c, p0, ex, in);
    }
    parity ^= 1;
  }
}

// Column kernel: one thread per row, any strides, sequential along the axis.
template <class Op>
__global__ void __launch_bounds__(256) scan_column(scan::ScanParams p) {
  using S = typename Op::S;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= p.rows) return;
  const ScanCtx c = scan_ctx(p, row);
  // 8 elements loaded ahead of their stores (safe in place: an output aliases only its own
  // input element), so the loads of a group overlap
  constexpr int kAhead = 8;
  S run = Op::identity();
  for (std::int64_t q0 = 0; q0 < p.len; q0 += kAhead) {
    S e[kAhead][1];
#pragma unroll
    for (int u = 0; u < kAhead; ++u)
      if (q0 + u < p.len) load_chunk<Op, 1>(c, q0 + u, e[u]);
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      if (q0 + u >= p.len) break;
      S ex[1], in[1];
      ex[0] = run;
      run = Op::combine(run, e[u][0]);
      in[0] = run;
      store_chunk<Op, 1>(c, q0 + u, ex, in);
    }
  }
}

// Split column kernel, pass kPass (0: segment aggregates, 1: a row's exclusive prefixes of
// them, 2: rescan from the prefix). Workspace: S[tiles][rows]; (segment, row) threads with
// the row fastest, so the loads of a warp are coalesced over a dense kept dim.
template <class Op, int kPass>
__global__ void __launch_bounds__(256) scan_column_split(scan::ScanParams p) {
  using S = typename Op::S;
  S* agg = static_cast<S*>(p.workspace);
  const std::int64_t gid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (kPass == 1) {
    if (gid >= p.rows) return;
    S run = Op::identity();
    for (std::int64_t s = 0; s < p.tiles; ++s) {
      const S a = agg[s * p.rows + gid];
      agg[s * p.rows + gid] = run;
      run = Op::combine(run, a);
    }
  } else {
    if (gid >= p.rows * p.tiles) return;
    const std::int64_t seg = gid / p.rows, row = gid - seg * p.rows;
    const ScanCtx c = scan_ctx(p, row);
    const std::int64_t begin = seg * p.seg_len, end = begin + p.seg_len < p.len ? begin + p.seg_len : p.len;
    constexpr int kAhead = 8;
    S run = kPass == 0 ? Op::identity() : agg[gid];
    for (std::int64_t q0 = begin; q0 < end; q0 += kAhead) {
      S e[kAhead][1];
#pragma unroll
      for (int u = 0; u < kAhead; ++u)
        if (q0 + u < end) load_chunk<Op, 1>(c, q0 + u, e[u]);
#pragma unroll
      for (int u = 0; u < kAhead; ++u) {
        if (q0 + u >= end) break;
        S ex[1], in[1];
        ex[0] = run;
        run = Op::combine(run, e[u][0]);
        in[0] = run;
        if constexpr (kPass == 2) store_chunk<Op, 1>(c, q0 + u, ex, in);
      }
    }
    if constexpr (kPass == 0) agg[gid] = run;
  }
}

inline Status scan_launch_status(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string(what) + ": " + cudaGetErrorString(e));
}

template <class Op, int V>
Status launch_scan_v(const scan::ScanParams& p, cudaStream_t s) {
  using S = typename Op::S;
  constexpr int K = scan::scan_k(static_cast<int>(sizeof(S)), V);
  constexpr unsigned kNt = scan::kScanBlockThreads;
  if (p.k != K)  // the host sized the look-back's tiles with scan_state_bytes
    return Status(Code::kInternal, "scan: host K = " + std::to_string(p.k) + " != kernel K = " + std::to_string(K));
  switch (p.impl) {
    case scan::ScanImpl::kWarpRow:
      scan_tiles<Op, V, K, ScanGroup::kWarp><<<static_cast<unsigned>((p.rows + 7) / 8), kNt, 0, s>>>(p);
      return scan_launch_status("scan warp_row");
    case scan::ScanImpl::kBlockRow:
      scan_tiles<Op, V, K, ScanGroup::kBlock><<<static_cast<unsigned>(p.rows), kNt, 0, s>>>(p);
      return scan_launch_status("scan block_row");
    case scan::ScanImpl::kLookback: {
      const cudaError_t e = cudaMemsetAsync(p.workspace, 0, p.flag_bytes, s);
      if (e != cudaSuccess) return Status(Code::kCudaError, std::string("scan lookback memset: ") + cudaGetErrorString(e));
      scan_tiles<Op, V, K, ScanGroup::kLookback><<<static_cast<unsigned>(p.rows * p.tiles), kNt, 0, s>>>(p);
      return scan_launch_status("scan lookback");
    }
    default: break;
  }
  return Status(Code::kInternal, "scan: no tile kernel for this (impl, vec)");
}

// The sequential column kernel of one op (p.impl kColumn): its state is never published, so
// it may outgrow a workspace slot (LseBwdOp's compensated one).
template <class Op>
Status launch_scan_column(const scan::ScanParams& p, cudaStream_t s) {
  if (p.rows == 0 || p.len == 0) return Status::ok();
  scan_column<Op><<<static_cast<unsigned>((p.rows + 255) / 256), 256, 0, s>>>(p);
  return scan_launch_status("scan column");
}

// The column kernels of one op (p.impl kColumn or kColumnSplit).
template <class Op>
Status launch_scan_columns(const scan::ScanParams& p, cudaStream_t s) {
  static_assert(sizeof(typename Op::S) <= scan::kScanStateSlot, "a state fits its workspace slot");
  if (p.impl == scan::ScanImpl::kColumn) return launch_scan_column<Op>(p, s);
  if (p.impl != scan::ScanImpl::kColumnSplit) return Status(Code::kInternal, "scan: not a column impl");
  if (p.rows == 0 || p.len == 0) return Status::ok();
  const auto blocks = static_cast<unsigned>((p.rows * p.tiles + 255) / 256);
  scan_column_split<Op, 0><<<blocks, 256, 0, s>>>(p);
  scan_column_split<Op, 1><<<static_cast<unsigned>((p.rows + 255) / 256), 256, 0, s>>>(p);
  scan_column_split<Op, 2><<<blocks, 256, 0, s>>>(p);
  return scan_launch_status("scan column_split");
}

// The tile kernels of one op, with 16-byte vectors (ops with one input) and scalar loads.
template <class Op, class T>
Status launch_scan_tiles(const scan::ScanParams& p, cudaStream_t s) {
  static_assert(sizeof(typename Op::S) <= scan::kScanStateSlot, "a published state fits its workspace slot");
  if (p.rows == 0 || p.len == 0) return Status::ok();
  if constexpr (Op::kVecOk) {
    constexpr int kV = 16 / static_cast<int>(sizeof(T));
    if (p.vec == kV) return launch_scan_v<Op, kV>(p, s);
  }
  if (p.vec == 1) return launch_scan_v<Op, 1>(p, s);
  return Status(Code::kInternal, "scan: no kernel for vec = " + std::to_string(p.vec));
}

// Every kernel of one op.
template <class Op, class T>
Status launch_scan_op(const scan::ScanParams& p, cudaStream_t s) {
  return scan::is_column_impl(p.impl) ? launch_scan_columns<Op>(p, s) : launch_scan_tiles<Op, T>(p, s);
}

}  // namespace baracuda::kernels
