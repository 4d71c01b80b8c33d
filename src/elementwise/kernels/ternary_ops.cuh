// Functors of TernaryPlan (clamp, fma, addcmul, addcdiv), its backward and AffinePlan, for
// the map kernels of map.cuh. They run in the compute type C (float for 16-bit inputs,
// double for f64, the integer type itself for integer clamp and affine).
//
// Rounding: addcmul and addcdiv use the explicitly rounded intrinsics (__fmul_rn,
// __fadd_rn, __fdiv_rn and their double forms) so nvcc cannot contract the multiply and the
// add into one fma (-fmad=true is nvcc's default): the result rounds as PyTorch's separate
// operations. fma and affine use fma() on purpose (one rounding).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "baracuda/ops/elementwise.hpp"

namespace baracuda::kernels {

// Correctly rounded, never-contracted float and double arithmetic.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }

template <class C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

// torch.clamp(x, lo, hi): NaN in x, then lo, then hi propagates; otherwise
// min(max(x, lo), hi) with strict comparisons (x keeps its sign of zero when equal).
template <class C>
__device__ __forceinline__ C clamp_value(C x, C lo, C hi) {
  if (is_nan(x)) return x;
  if (is_nan(lo)) return lo;
  if (is_nan(hi)) return hi;
  const C r = x < lo ? lo : x;
  return r > hi ? hi : r;
}

template <TernaryKind K, class C>
__device__ __forceinline__ C ternary_value(C a, C b, C c, C value) {
  if constexpr (K == TernaryKind::kClamp) return clamp_value(a, b, c);
  else if constexpr (K == TernaryKind::kFma) return fma(a, b, c);
  else if constexpr (K == TernaryKind::kAddcmul) return add_rn(a, mul_rn(mul_rn(value, b), c));
  else return add_rn(a, mul_rn(value, div_rn(b, c)));
}

template <TernaryKind K>
struct TernaryOp {  // in: a, b, c   out: out
  static constexpr int kIn = 3, kOut = 1;
  double value = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = ternary_value<K>(in[0], in[1], in[2], C(value));
  }
};

// The gradient of operand `which` (0 a, 1 b, 2 c) for grad_out g; PyTorch's formulas.
template <class C>
__device__ __forceinline__ C ternary_grad(TernaryKind k, int which, C g, C a, C b, C c, C value) {
  switch (k) {
    case TernaryKind::kClamp:  // a = x, b = min, c = max
      if (which == 0) return a >= b && a <= c ? g : C(0);
      if (which == 1) return a < b && b < c ? g : C(0);
      return a > c || c < b ? g : C(0);
    case TernaryKind::kFma: return which == 0 ? g * b : (which == 1 ? g * a : g);
    case TernaryKind::kAddcmul: return which == 0 ? g : (which == 1 ? g * c * value : g * b * value);
    case TernaryKind::kAddcdiv:
      if (which == 0) return g;
      if (which == 1) return g * (value / c);
      return -g * value * b / (c * c);
  }
  return C(0);
}

struct TernaryGradOp {  // in: grad_out, a, b, c   out: the gradient of operand `which`
  static constexpr int kIn = 4, kOut = 1;
  TernaryKind kind = TernaryKind::kClamp;
  int which = 0;
  double value = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = ternary_grad(kind, which, in[0], in[1], in[2], in[3], C(value));
  }
};

// N gradients in one map (in: grad_out, a, b, c; out j: the gradient of operand which[j]),
// each input read once (GradPasses' fused pass). The kind is a template argument: with it
// chosen at run time the per-element switch held addcmul's bf16 backward at 75% of copy.
template <TernaryKind K, int N>
struct TernaryGradsOp {
  static constexpr int kIn = 4, kOut = N;
  static constexpr TernaryKind kind = K;
  int which[N] = {};
  double value = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = ternary_grad(kind, which[j], in[0], in[1], in[2], in[3], C(value));
  }
};

// y = alpha * x + beta. Floating: one fma in C. Integers: wrap-around arithmetic in 64-bit
// unsigned (no signed overflow), truncated to the dtype's width.
struct AffineOp {
  static constexpr int kIn = 1, kOut = 1;
  double alpha = 1, beta = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    if constexpr (std::is_floating_point_v<C>) {
      y[0] = fma(C(alpha), x[0], C(beta));
    } else {
      const auto a = static_cast<std::uint64_t>(static_cast<std::int64_t>(alpha));
      const auto b = static_cast<std::uint64_t>(static_cast<std::int64_t>(beta));
      const auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(x[0]));
      y[0] = static_cast<C>(a * v + b);
    }
  }
};

}  // namespace baracuda::kernels
