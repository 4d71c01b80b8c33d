// Unary math on the device: y = f(x) and PyTorch's backward g * f'(x) for every floating
// UnaryKind, in the compute type C (float for f32/f16/bf16, double for f64), plus the
// integer kinds. docs/semantics.md is the specification (one row per kind); the formulas
// below follow PyTorch's CUDA kernels (no fast math; the CUDA library functions).
//
//   unary_fwd<K>(x, s)      forward of kind K with scalars s (UnaryParams, in C)
//   unary_grad<K>(g, x, s)  grad_in of kind K at the forward input x
//   unary_fwd_dyn / unary_grad_dyn: the same with the kind chosen at run time (one switch),
//     for the strided and row kernels, which are built once per dtype rather than per kind.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "baracuda/ops/elementwise.hpp"

namespace baracuda::kernels {

// The floating kinds that have per-kind kernels (everything but the integer-only kinds and
// the bool-valued predicates, which have launchers of their own).
#define BARACUDA_UNARY_FLOAT_KINDS(X)                                                                                   \
  X(kNeg) X(kAbs) X(kSign) X(kReciprocal) X(kSquare) X(kCube) X(kSqrt) X(kRsqrt) X(kCbrt) X(kExp) X(kExp2) X(kExpm1)    \
  X(kLog) X(kLog2) X(kLog10) X(kLog1p) X(kSin) X(kCos) X(kTan) X(kAsin) X(kAcos) X(kAtan) X(kSinh) X(kCosh) X(kTanh)    \
  X(kAsinh) X(kAcosh) X(kAtanh) X(kFloor) X(kCeil) X(kRound) X(kTrunc) X(kFrac) X(kErf) X(kErfc) X(kErfinv) X(kLgamma)  \
  X(kDigamma) X(kRelu) X(kRelu6) X(kGeluErf) X(kGeluTanh) X(kSilu) X(kMish) X(kSigmoid) X(kLogit) X(kSoftplus)          \
  X(kSoftsign) X(kTanhshrink) X(kHardswish) X(kHardsigmoid) X(kHardtanh) X(kSelu) X(kCelu) X(kElu) X(kLeakyRelu)        \
  X(kHardshrink) X(kSoftshrink) X(kStep) X(kNanToNum) X(kThreshold) X(kPow)

template <class C>
struct UnaryScalars {
  C a, b, c;
};

// Kinds cheap enough that one 16-byte vector in flight per thread saturates HBM.
constexpr bool unary_is_light(UnaryKind k) {
  switch (k) {
    case UnaryKind::kNeg: case UnaryKind::kAbs: case UnaryKind::kSign: case UnaryKind::kSquare: case UnaryKind::kCube:
    case UnaryKind::kExp: case UnaryKind::kExp2: case UnaryKind::kFloor: case UnaryKind::kCeil: case UnaryKind::kRound:
    case UnaryKind::kTrunc: case UnaryKind::kFrac: case UnaryKind::kRelu: case UnaryKind::kRelu6:
    case UnaryKind::kHardtanh: case UnaryKind::kLeakyRelu: case UnaryKind::kHardshrink: case UnaryKind::kSoftshrink:
    case UnaryKind::kStep: case UnaryKind::kNanToNum: case UnaryKind::kThreshold: case UnaryKind::kHardsigmoid:
    case UnaryKind::kHardswish: return true;
    default: return false;
  }
}

namespace um {  // float / double dispatch of the CUDA math library
template <class C> __device__ __forceinline__ bool is_f32() { return std::is_same_v<C, float>; }
#define BARACUDA_UM1(name, f32, f64) \
  template <class C> __device__ __forceinline__ C name(C x) { if constexpr (std::is_same_v<C, float>) return f32(x); else return f64(x); }
BARACUDA_UM1(exp_, expf, ::exp) BARACUDA_UM1(exp2_, exp2f, ::exp2) BARACUDA_UM1(expm1_, expm1f, ::expm1)
BARACUDA_UM1(log_, logf, ::log) BARACUDA_UM1(log2_, log2f, ::log2) BARACUDA_UM1(log10_, log10f, ::log10)
BARACUDA_UM1(log1p_, log1pf, ::log1p) BARACUDA_UM1(sqrt_, sqrtf, ::sqrt) BARACUDA_UM1(rsqrt_, rsqrtf, ::rsqrt)
BARACUDA_UM1(cbrt_, cbrtf, ::cbrt) BARACUDA_UM1(sin_, sinf, ::sin) BARACUDA_UM1(cos_, cosf, ::cos)
BARACUDA_UM1(tan_, tanf, ::tan) BARACUDA_UM1(asin_, asinf, ::asin) BARACUDA_UM1(acos_, acosf, ::acos)
BARACUDA_UM1(atan_, atanf, ::atan) BARACUDA_UM1(sinh_, sinhf, ::sinh) BARACUDA_UM1(cosh_, coshf, ::cosh)
BARACUDA_UM1(tanh_, tanhf, ::tanh) BARACUDA_UM1(asinh_, asinhf, ::asinh) BARACUDA_UM1(acosh_, acoshf, ::acosh)
BARACUDA_UM1(atanh_, atanhf, ::atanh) BARACUDA_UM1(floor_, floorf, ::floor) BARACUDA_UM1(ceil_, ceilf, ::ceil)
BARACUDA_UM1(rint_, rintf, ::rint) BARACUDA_UM1(trunc_, truncf, ::trunc) BARACUDA_UM1(erf_, erff, ::erf)
BARACUDA_UM1(erfc_, erfcf, ::erfc) BARACUDA_UM1(erfinv_, erfinvf, ::erfinv) BARACUDA_UM1(lgamma_, lgammaf, ::lgamma)
BARACUDA_UM1(fabs_, fabsf, ::fabs)
#undef BARACUDA_UM1
template <class C> __device__ __forceinline__ C pow_(C x, C e) { if constexpr (std::is_same_v<C, float>) return powf(x, e); else return ::pow(x, e); }
template <class C> __device__ __forceinline__ bool isnan_(C x) { return x != x; }
template <class C> __device__ __forceinline__ C inf() { return C(1) / C(0); }
template <class C> __device__ __forceinline__ C nan() { return C(0) / C(0); }
template <class C> __device__ __forceinline__ C sigmoid(C x) { return C(1) / (C(1) + exp_(-x)); }
// NaN-propagating clamp (torch clamp / hardtanh)
template <class C> __device__ __forceinline__ C clamp(C x, C lo, C hi) { return isnan_(x) ? x : (x < lo ? lo : (x > hi ? hi : x)); }

// digamma: reflection for x < 0, recurrence up to x >= 6 (float) / 10 (double), then the
// asymptotic series log x - 1/2x - sum B_2k / (2k x^2k).
template <class C> __device__ C digamma(C x) {
  constexpr C kPi = C(3.14159265358979323846);
  if (x == C(0)) return copysign(inf<C>(), -x);  // torch: digamma(+0) = -inf, digamma(-0) = +inf
  C result = 0;
  if (x < C(0)) {
    if (x == floor_(x)) return nan<C>();
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan(pi x) = tan(pi r) with r = x - rint(x) in
    // [-1/2, 1/2], exact in floating point, so tiny |x| keeps its precision
    const C r = x - rint_(x);
    result = -kPi / tan_(kPi * r);
    x = C(1) - x;
  }
  const C lim = is_f32<C>() ? C(6) : C(10);
  while (x < lim) {
    result -= C(1) / x;
    x += C(1);
  }
  if (isnan_(x)) return x;
  const C z = C(1) / (x * x);
  // B2/2 = 1/12, B4/4 = -1/120, B6/6 = 1/252, B8/8 = -1/240, B10/10 = 1/132, B12/12 = -691/32760
  const C series = z * (C(1.0 / 12) - z * (C(1.0 / 120) - z * (C(1.0 / 252) - z * (C(1.0 / 240) - z * (C(1.0 / 132) - z * C(691.0 / 32760))))));
  return result + log_(x) - C(0.5) / x - series;
}

// trigamma psi'(x): reflection psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x) for x < 1/2,
// recurrence psi'(x) = psi'(x + 1) + 1/x^2, asymptotic 1/x + 1/2x^2 + sum B_2k / x^(2k+1).
template <class C> __device__ C trigamma(C x) {
  constexpr C kPi = C(3.14159265358979323846);
  C sign = 1, result = 0;
  if (x == -inf<C>()) return nan<C>();
  if (x <= C(0) && x == floor_(x)) return inf<C>();  // poles 0, -1, -2, ...
  if (x < C(0.5)) {
    const C s = sin_(kPi * (x - rint_(x)));  // sin^2(pi x) has period 1; the reduced argument is exact
    result = -kPi * kPi / (s * s);
    sign = -1;
    x = C(1) - x;
  }
  // the series below, cut after 5/(66 x^11), is good to ~1e-9 relative from 6 (float) and
  // ~1e-17 from 20 (double)
  const C lim = is_f32<C>() ? C(6) : C(20);
  while (x < lim) {
    result += C(1) / (x * x);
    x += C(1);
  }
  const C z = C(1) / (x * x);
  const C tail =
      (C(1) + C(0.5) / x + z * (C(1.0 / 6) - z * (C(1.0 / 30) - z * (C(1.0 / 42) - z * (C(1.0 / 30) - z * C(5.0 / 66)))))) / x;
  return sign * (result + tail);
}
}  // namespace um

// x ** e as torch computes a tensor to a scalar power: exponents 2, 3, 0.5, -0.5, -1 and -2
// as multiplications, sqrt and rsqrt; otherwise pow (exact sign for negative bases with
// integer exponents).
template <class C>
__device__ __forceinline__ C pow_scalar(C x, C e) {
  using namespace um;
  if (e == C(2)) return x * x;
  if (e == C(3)) return x * x * x;
  if (e == C(0.5)) return sqrt_(x);
  if (e == C(-0.5)) return rsqrt_(x);
  if (e == C(-1)) return C(1) / x;
  if (e == C(-2)) return C(1) / (x * x);
  return pow_(x, e);
}

template <UnaryKind K, class C>
__device__ __forceinline__ C unary_fwd(C x, const UnaryScalars<C>& s) {
  using namespace um;
  constexpr UnaryKind k = K;
  if constexpr (k == UnaryKind::kNeg) return -x;
  else if constexpr (k == UnaryKind::kAbs) return fabs_(x);
  else if constexpr (k == UnaryKind::kSign) return C((C(0) < x) - (x < C(0)));
  else if constexpr (k == UnaryKind::kReciprocal) return C(1) / x;
  else if constexpr (k == UnaryKind::kSquare) return x * x;
  else if constexpr (k == UnaryKind::kCube) return x * x * x;
  else if constexpr (k == UnaryKind::kSqrt) return sqrt_(x);
  else if constexpr (k == UnaryKind::kRsqrt) return rsqrt_(x);
  else if constexpr (k == UnaryKind::kCbrt) return cbrt_(x);
  else if constexpr (k == UnaryKind::kExp) return exp_(x);
  else if constexpr (k == UnaryKind::kExp2) return exp2_(x);
  else if constexpr (k == UnaryKind::kExpm1) return expm1_(x);
  else if constexpr (k == UnaryKind::kLog) return log_(x);
  else if constexpr (k == UnaryKind::kLog2) return log2_(x);
  else if constexpr (k == UnaryKind::kLog10) return log10_(x);
  else if constexpr (k == UnaryKind::kLog1p) return log1p_(x);
  else if constexpr (k == UnaryKind::kSin) return sin_(x);
  else if constexpr (k == UnaryKind::kCos) return cos_(x);
  else if constexpr (k == UnaryKind::kTan) return tan_(x);
  else if constexpr (k == UnaryKind::kAsin) return asin_(x);
  else if constexpr (k == UnaryKind::kAcos) return acos_(x);
  else if constexpr (k == UnaryKind::kAtan) return atan_(x);
  else if constexpr (k == UnaryKind::kSinh) return sinh_(x);
  else if constexpr (k == UnaryKind::kCosh) return cosh_(x);
  else if constexpr (k == UnaryKind::kTanh) return tanh_(x);
  else if constexpr (k == UnaryKind::kAsinh) return asinh_(x);
  else if constexpr (k == UnaryKind::kAcosh) return acosh_(x);
  else if constexpr (k == UnaryKind::kAtanh) return atanh_(x);
  else if constexpr (k == UnaryKind::kFloor) return floor_(x);
  else if constexpr (k == UnaryKind::kCeil) return ceil_(x);
  else if constexpr (k == UnaryKind::kRound) return rint_(x);
  else if constexpr (k == UnaryKind::kTrunc) return trunc_(x);
  else if constexpr (k == UnaryKind::kFrac) return x - trunc_(x);
  else if constexpr (k == UnaryKind::kErf) return erf_(x);
  else if constexpr (k == UnaryKind::kErfc) return erfc_(x);
  else if constexpr (k == UnaryKind::kErfinv) return erfinv_(x);
  else if constexpr (k == UnaryKind::kLgamma) return lgamma_(x);
  else if constexpr (k == UnaryKind::kDigamma) return digamma(x);
  else if constexpr (k == UnaryKind::kRelu) return isnan_(x) ? x : (x > C(0) ? x : C(0));
  else if constexpr (k == UnaryKind::kRelu6) return clamp(x, C(0), C(6));
  else if constexpr (k == UnaryKind::kGeluErf) return C(0.5) * x * (C(1) + erf_(x * C(0.70710678118654752440)));
  else if constexpr (k == UnaryKind::kGeluTanh) {
    const C inner = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
    return C(0.5) * x * (C(1) + tanh_(inner));
  } else if constexpr (k == UnaryKind::kSilu) return x / (C(1) + exp_(-x));
  else if constexpr (k == UnaryKind::kMish) return x * tanh_(log1p_(exp_(x)));
  else if constexpr (k == UnaryKind::kSigmoid) return sigmoid(x);
  else if constexpr (k == UnaryKind::kLogit) {
    const C z = s.a < C(0) ? x : (x < s.a ? s.a : (x > C(1) - s.a ? C(1) - s.a : x));
    return log_(z / (C(1) - z));
  } else if constexpr (k == UnaryKind::kSoftplus) {
    const C bx = x * s.a;
    return bx > s.b ? x : log1p_(exp_(bx)) / s.a;
  } else if constexpr (k == UnaryKind::kSoftsign) return x / (C(1) + fabs_(x));
  else if constexpr (k == UnaryKind::kTanhshrink) return x - tanh_(x);
  // torch multiplies by 1/6 (a division here halved the bf16 throughput)
  else if constexpr (k == UnaryKind::kHardswish) return x * clamp(x + C(3), C(0), C(6)) * C(1.0 / 6);
  else if constexpr (k == UnaryKind::kHardsigmoid) return clamp(x + C(3), C(0), C(6)) * C(1.0 / 6);
  else if constexpr (k == UnaryKind::kHardtanh) return clamp(x, s.a, s.b);
  else if constexpr (k == UnaryKind::kSelu) {
    constexpr C kAlpha = C(1.6732632423543772848170429916717), kScale = C(1.0507009873554804934193349852946);
    return x > C(0) ? kScale * x : kScale * kAlpha * expm1_(x);
  } else if constexpr (k == UnaryKind::kCelu) return x > C(0) ? x : s.a * expm1_(x / s.a);
  else if constexpr (k == UnaryKind::kElu) return x > C(0) ? x : s.a * expm1_(x);
  else if constexpr (k == UnaryKind::kLeakyRelu) return x > C(0) ? x : x * s.a;
  else if constexpr (k == UnaryKind::kHardshrink) return (x >= -s.a && x <= s.a) ? C(0) : x;
  else if constexpr (k == UnaryKind::kSoftshrink) return isnan_(x) ? x : (x > s.a ? x - s.a : (x < -s.a ? x + s.a : C(0)));
  else if constexpr (k == UnaryKind::kStep) return isnan_(x) ? x : (x > C(0) ? C(1) : C(0));
  else if constexpr (k == UnaryKind::kNanToNum) return isnan_(x) ? s.a : (x == inf<C>() ? s.b : (x == -inf<C>() ? s.c : x));
  else if constexpr (k == UnaryKind::kThreshold) return x <= s.a ? s.b : x;
  else if constexpr (k == UnaryKind::kPow) return pow_scalar(x, s.a);
  else {
    static_assert(k == UnaryKind::kNeg, "unary_fwd: kind without a floating kernel");
    return x;
  }
}

template <UnaryKind K, class C>
__device__ __forceinline__ C unary_grad(C g, C x, const UnaryScalars<C>& s) {
  using namespace um;
  constexpr UnaryKind k = K;
  constexpr C kLn2 = C(0.69314718055994530942), kLn10 = C(2.30258509299404568402);
  constexpr C kTwoOverSqrtPi = C(1.12837916709551257390), kSqrtPiOver2 = C(0.88622692545275801365);
  if constexpr (k == UnaryKind::kNeg) return -g;
  else if constexpr (k == UnaryKind::kAbs) return g * C((C(0) < x) - (x < C(0)));
  else if constexpr (k == UnaryKind::kSign || k == UnaryKind::kFloor || k == UnaryKind::kCeil || k == UnaryKind::kRound ||
                     k == UnaryKind::kTrunc || k == UnaryKind::kStep) return C(0);
  else if constexpr (k == UnaryKind::kReciprocal) return -g / (x * x);
  else if constexpr (k == UnaryKind::kSquare) return C(2) * x * g;
  else if constexpr (k == UnaryKind::kCube) return C(3) * x * x * g;
  else if constexpr (k == UnaryKind::kSqrt) return g / (C(2) * sqrt_(x));
  else if constexpr (k == UnaryKind::kRsqrt) { const C r = rsqrt_(x); return C(-0.5) * g * r * r * r; }
  else if constexpr (k == UnaryKind::kCbrt) { const C c = cbrt_(x); return g / (C(3) * c * c); }
  else if constexpr (k == UnaryKind::kExp || k == UnaryKind::kExpm1) return g * exp_(x);
  else if constexpr (k == UnaryKind::kExp2) return g * exp2_(x) * kLn2;
  else if constexpr (k == UnaryKind::kLog) return g / x;
  else if constexpr (k == UnaryKind::kLog2) return g / (x * kLn2);
  else if constexpr (k == UnaryKind::kLog10) return g / (x * kLn10);
  else if constexpr (k == UnaryKind::kLog1p) return g / (x + C(1));
  else if constexpr (k == UnaryKind::kSin) return g * cos_(x);
  else if constexpr (k == UnaryKind::kCos) return -g * sin_(x);
  else if constexpr (k == UnaryKind::kTan) { const C t = tan_(x); return g * (C(1) + t * t); }
  else if constexpr (k == UnaryKind::kAsin) return g * rsqrt_(C(1) - x * x);
  else if constexpr (k == UnaryKind::kAcos) return -g * rsqrt_(C(1) - x * x);
  else if constexpr (k == UnaryKind::kAtan) return g / (C(1) + x * x);
  else if constexpr (k == UnaryKind::kSinh) return g * cosh_(x);
  else if constexpr (k == UnaryKind::kCosh) return g * sinh_(x);
  else if constexpr (k == UnaryKind::kTanh) { const C t = tanh_(x); return g * (C(1) - t * t); }
  else if constexpr (k == UnaryKind::kAsinh) return g * rsqrt_(x * x + C(1));
  else if constexpr (k == UnaryKind::kAcosh) return g * rsqrt_(x * x - C(1));
  else if constexpr (k == UnaryKind::kAtanh) return g / (C(1) - x * x);
  else if constexpr (k == UnaryKind::kFrac) return g;
  else if constexpr (k == UnaryKind::kErf) return g * kTwoOverSqrtPi * exp_(-x * x);
  else if constexpr (k == UnaryKind::kErfc) return -g * kTwoOverSqrtPi * exp_(-x * x);
  else if constexpr (k == UnaryKind::kErfinv) { const C y = erfinv_(x); return g * kSqrtPiOver2 * exp_(y * y); }
  else if constexpr (k == UnaryKind::kLgamma) return g * digamma(x);
  else if constexpr (k == UnaryKind::kDigamma) return g * trigamma(x);
  else if constexpr (k == UnaryKind::kRelu) return x <= C(0) ? C(0) : g;
  else if constexpr (k == UnaryKind::kRelu6) return (x <= C(0) || x >= C(6)) ? C(0) : g;
  else if constexpr (k == UnaryKind::kGeluErf) {
    const C cdf = C(0.5) * (C(1) + erf_(x * C(0.70710678118654752440)));
    const C pdf = exp_(C(-0.5) * x * x) * C(0.39894228040143267794);
    return g * (cdf + x * pdf);
  } else if constexpr (k == UnaryKind::kGeluTanh) {
    const C kBeta = C(0.79788456080286535588), kKappa = C(0.044715);
    const C x2 = x * x;
    const C t = tanh_(kBeta * (x + kKappa * x2 * x));
    const C left = C(0.5) * x, right = C(1) + t;
    return g * (C(0.5) * right + left * (C(1) - t * t) * kBeta * (C(1) + C(3) * kKappa * x2));
  } else if constexpr (k == UnaryKind::kSilu) {
    const C sg = C(1) / (C(1) + exp_(-x));
    return g * sg * (C(1) + x * (C(1) - sg));
  } else if constexpr (k == UnaryKind::kMish) {
    const C sg = sigmoid(x), t = tanh_(log1p_(exp_(x)));
    return g * (t + x * sg * (C(1) - t * t));
  } else if constexpr (k == UnaryKind::kSigmoid) { const C sg = sigmoid(x); return g * sg * (C(1) - sg); }
  else if constexpr (k == UnaryKind::kLogit) {
    if (s.a < C(0) ? (x < C(0) || x > C(1)) : (x < s.a || x > C(1) - s.a)) return s.a < C(0) ? nan<C>() : C(0);
    if (x == C(0) || x == C(1)) return g * inf<C>();  // torch: g * inf at the ends (sign of g, not of -0)
    return g / (x * (C(1) - x));
  } else if constexpr (k == UnaryKind::kSoftplus) {
    const C bx = x * s.a, z = exp_(bx);
    return bx > s.b ? g : g * z / (z + C(1));
  } else if constexpr (k == UnaryKind::kSoftsign) { const C d = C(1) + fabs_(x); return g / (d * d); }
  else if constexpr (k == UnaryKind::kTanhshrink) { const C t = tanh_(x); return g * t * t; }
  else if constexpr (k == UnaryKind::kHardswish) return x < C(-3) ? C(0) : (x <= C(3) ? g * (x / C(3) + C(0.5)) : g);
  else if constexpr (k == UnaryKind::kHardsigmoid) return (x > C(-3) && x < C(3)) ? g * C(1.0 / 6) : C(0);
  else if constexpr (k == UnaryKind::kHardtanh) return (x <= s.a || x >= s.b) ? C(0) : g;
  else if constexpr (k == UnaryKind::kSelu) {
    constexpr C kAlpha = C(1.6732632423543772848170429916717), kScale = C(1.0507009873554804934193349852946);
    return x <= C(0) ? g * kScale * kAlpha * exp_(x) : g * kScale;  // torch tests x <= 0: NaN x passes g * scale
  } else if constexpr (k == UnaryKind::kCelu) return x <= C(0) ? g * exp_(x / s.a) : g;
  else if constexpr (k == UnaryKind::kElu) return x <= C(0) ? g * s.a * exp_(x) : g;
  else if constexpr (k == UnaryKind::kLeakyRelu) return x > C(0) ? g : g * s.a;
  else if constexpr (k == UnaryKind::kHardshrink || k == UnaryKind::kSoftshrink) return (x >= -s.a && x <= s.a) ? C(0) : g;
  else if constexpr (k == UnaryKind::kNanToNum) return (isnan_(x) || fabs_(x) == inf<C>()) ? C(0) : g;
  else if constexpr (k == UnaryKind::kThreshold) return x <= s.a ? C(0) : g;
  else if constexpr (k == UnaryKind::kPow) {
    const C e = s.a;
    return e == C(0) ? C(0) : g * e * pow_scalar(x, e - C(1));  // torch: self.pow(e - 1)
  } else {
    static_assert(k == UnaryKind::kNeg, "unary_grad: kind without a floating kernel");
    return g;
  }
}

template <class C>
__device__ C unary_fwd_dyn(UnaryKind k, C x, const UnaryScalars<C>& s) {
  switch (k) {
#define BARACUDA_CASE(K) case UnaryKind::K: return unary_fwd<UnaryKind::K>(x, s);
    BARACUDA_UNARY_FLOAT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: return um::nan<C>();
  }
}

template <class C>
__device__ C unary_grad_dyn(UnaryKind k, C g, C x, const UnaryScalars<C>& s) {
  switch (k) {
#define BARACUDA_CASE(K) case UnaryKind::K: return unary_grad<UnaryKind::K>(g, x, s);
    BARACUDA_UNARY_FLOAT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: return um::nan<C>();
  }
}

// Integer kinds in the integer type T itself (two's complement, wrapping), and the
// predicates (result 0 / 1, stored as bool).
template <UnaryKind K, class T>
__device__ __forceinline__ T unary_int(T x) {
  constexpr int kBits = sizeof(T) * 8;
  using U = std::conditional_t<(sizeof(T) > 4), unsigned long long, unsigned int>;
  if constexpr (K == UnaryKind::kNeg) return static_cast<T>(-x);
  else if constexpr (K == UnaryKind::kAbs) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return static_cast<T>(x < T(0) ? -x : x);
  } else if constexpr (K == UnaryKind::kSign) {
    if constexpr (std::is_unsigned_v<T>) return static_cast<T>(x != T(0));
    else return static_cast<T>((T(0) < x) - (x < T(0)));
  } else if constexpr (K == UnaryKind::kBitwiseNot) {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return static_cast<T>(~x);
  } else if constexpr (K == UnaryKind::kPopcount) {
    U bits = static_cast<U>(x);
    if constexpr (kBits < 32) bits &= (U(1) << kBits) - 1;  // the dtype's own bits only
    if constexpr (sizeof(U) == 8) return static_cast<T>(__popcll(bits));
    else return static_cast<T>(__popc(bits));
  } else if constexpr (K == UnaryKind::kClz) {
    U bits = static_cast<U>(x);
    if constexpr (kBits < 32) bits &= (U(1) << kBits) - 1;
    if constexpr (sizeof(U) == 8) return static_cast<T>(__clzll(static_cast<long long>(bits)));
    else return static_cast<T>(__clz(static_cast<int>(bits)) - (32 - kBits));
  } else if constexpr (K == UnaryKind::kLogicalNot) return static_cast<T>(x == T(0));
  else {
    static_assert(K == UnaryKind::kNeg, "unary_int: not an integer kind");
    return x;
  }
}

// Predicates on a compute value (float or double, or an integer for logical_not): 1 or 0.
template <UnaryKind K, class C>
__device__ __forceinline__ C unary_predicate(C x) {
  if constexpr (K == UnaryKind::kIsnan) return C(x != x);
  else if constexpr (K == UnaryKind::kIsinf) return C(x == um::inf<C>() || x == -um::inf<C>());
  else if constexpr (K == UnaryKind::kIsfinite) return C(x == x && x != um::inf<C>() && x != -um::inf<C>());
  else {
    static_assert(K == UnaryKind::kLogicalNot, "unary_predicate: not a predicate");
    return C(x == C(0));
  }
}

}  // namespace baracuda::kernels
