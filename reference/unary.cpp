// CPU oracle, unary scalar math: forward values, PyTorch's backward formulas, the error
// scales and the integer kinds. docs/semantics.md ("Unary kinds") is the spec of each case.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "baracuda/reference/elementwise.hpp"
#include "map_eval.hpp"  // wrap_to

namespace baracuda::reference {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390, kSqrtPiOverTwo = 0.88622692545275801365;
constexpr double kSqrtHalf = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluBeta = 0.79788456080286535588, kGeluKappa = 0.044715;  // sqrt(2/pi), tanh-gelu cubic
constexpr double kSeluAlpha = 1.6732632423543772, kSeluScale = 1.0507009873554805;

template <class C>
C nan_value() {
  return std::numeric_limits<C>::quiet_NaN();
}

// (0 < x) - (x < 0): 0 for NaN, +0 for -0 (as torch).
template <class C>
C sign_of(C x) {
  return C(C(0) < x) - C(x < C(0));
}

// min(max(x, lo), hi) that keeps NaN (torch's clamp).
template <class C>
C clamp_keep_nan(C x, C lo, C hi) {
  if (std::isnan(x)) return x;
  return x < lo ? lo : (x > hi ? hi : x);
}

template <class C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

// x ** e with torch's special exponents, each computed as its cheap formula.
template <class C>
C pow_value(C x, C e) {
  if (e == C(2)) return x * x;
  if (e == C(3)) return x * x * x;
  if (e == C(0.5)) return std::sqrt(x);
  if (e == C(-0.5)) return C(1) / std::sqrt(x);
  if (e == C(-1)) return C(1) / x;
  if (e == C(-2)) return C(1) / (x * x);
  return std::pow(x, e);  // exact sign for negative x and integral e; pow(NaN, 0) = 1
}

// logit's input after torch's optional clamp to [eps, 1 - eps] (eps < 0: none).
template <class C>
C logit_input(C x, const UnaryParams& p) {
  return p.a < 0 ? x : clamp_keep_nan(x, C(p.a), C(1) - C(p.a));
}

// ---------------------------------------------------------------------------- forward
// Arithmetic, exponentials, logarithms, trigonometric, rounding and special functions.
template <class C>
C math_value(UnaryKind k, C x) {
  switch (k) {
    case UnaryKind::kNeg: return -x;
    case UnaryKind::kAbs: return std::fabs(x);
    case UnaryKind::kSign: return sign_of(x);
    case UnaryKind::kReciprocal: return C(1) / x;
    case UnaryKind::kSquare: return x * x;
    case UnaryKind::kCube: return x * x * x;
    case UnaryKind::kSqrt: return std::sqrt(x);
    case UnaryKind::kRsqrt: return C(1) / std::sqrt(x);
    case UnaryKind::kCbrt: return std::cbrt(x);
    case UnaryKind::kExp: return std::exp(x);
    case UnaryKind::kExp2: return std::exp2(x);
    case UnaryKind::kExpm1: return std::expm1(x);
    case UnaryKind::kLog: return std::log(x);
    case UnaryKind::kLog2: return std::log2(x);
    case UnaryKind::kLog10: return std::log10(x);
    case UnaryKind::kLog1p: return std::log1p(x);
    case UnaryKind::kSin: return std::sin(x);
    case UnaryKind::kCos: return std::cos(x);
    case UnaryKind::kTan: return std::tan(x);
    case UnaryKind::kAsin: return std::asin(x);
    case UnaryKind::kAcos: return std::acos(x);
    case UnaryKind::kAtan: return std::atan(x);
    case UnaryKind::kSinh: return std::sinh(x);
    case UnaryKind::kCosh: return std::cosh(x);
    case UnaryKind::kTanh: return std::tanh(x);
    case UnaryKind::kAsinh: return std::asinh(x);
    case UnaryKind::kAcosh: return std::acosh(x);
    case UnaryKind::kAtanh: return std::atanh(x);
    case UnaryKind::kFloor: return std::floor(x);
    case UnaryKind::kCeil: return std::ceil(x);
    case UnaryKind::kRound: return std::nearbyint(x);  // ties to even under the default rounding mode
    case UnaryKind::kTrunc: return std::trunc(x);
    case UnaryKind::kFrac: return x - std::trunc(x);
    case UnaryKind::kErf: return std::erf(x);
    case UnaryKind::kErfc: return std::erfc(x);
    case UnaryKind::kErfinv: return erfinv(x);
    case UnaryKind::kLgamma: return std::lgamma(x);
    case UnaryKind::kDigamma: return digamma(x);
    default: return nan_value<C>();
  }
}

// Activations, predicates and the parametric kinds.
template <class C>
C activation_value(UnaryKind k, C x, const UnaryParams& p) {
  const C a = C(p.a), b = C(p.b);
  switch (k) {
    case UnaryKind::kRelu: return std::isnan(x) ? x : (x > C(0) ? x : C(0));
    case UnaryKind::kRelu6: return clamp_keep_nan(x, C(0), C(6));
    case UnaryKind::kGeluErf: return C(0.5) * x * (C(1) + std::erf(x * C(kSqrtHalf)));
    case UnaryKind::kGeluTanh: return C(0.5) * x * (C(1) + std::tanh(C(kGeluBeta) * (x + C(kGeluKappa) * x * x * x)));
    case UnaryKind::kSilu: return x / (C(1) + std::exp(-x));
    case UnaryKind::kMish: return x * std::tanh(std::log1p(std::exp(x)));
    case UnaryKind::kSigmoid: return sigmoid(x);
    case UnaryKind::kLogit: {
      const C z = logit_input(x, p);
      return z == C(1) ? std::numeric_limits<C>::infinity() : std::log(z / (C(1) - z));
    }
    case UnaryKind::kSoftplus: return a * x > b ? x : std::log1p(std::exp(a * x)) / a;  // a = beta, b = threshold
    case UnaryKind::kSoftsign: return x / (C(1) + std::fabs(x));
    case UnaryKind::kTanhshrink: return x - std::tanh(x);
    case UnaryKind::kHardswish: return x * clamp_keep_nan(x + C(3), C(0), C(6)) / C(6);
    case UnaryKind::kHardsigmoid: return clamp_keep_nan(x + C(3), C(0), C(6)) / C(6);
    case UnaryKind::kHardtanh: return clamp_keep_nan(x, a, b);
    case UnaryKind::kSelu: return x > C(0) ? C(kSeluScale) * x : C(kSeluScale * kSeluAlpha) * std::expm1(x);
    case UnaryKind::kCelu: return x > C(0) ? x : a * std::expm1(x / a);
    case UnaryKind::kElu: return x > C(0) ? x : a * std::expm1(x);
    case UnaryKind::kLeakyRelu: return x > C(0) ? x : a * x;
    case UnaryKind::kHardshrink: return (x >= -a && x <= a) ? C(0) : x;
    // x * 0 inside the band keeps NaN (torch)
    case UnaryKind::kSoftshrink: return x > a ? x - a : (x < -a ? x + a : x * C(0));
    case UnaryKind::kStep: return std::isnan(x) ? x : (x > C(0) ? C(1) : C(0));  // torch.heaviside(x, 0)
    case UnaryKind::kLogicalNot: return C(x == C(0));
    case UnaryKind::kIsnan: return C(std::isnan(x));
    case UnaryKind::kIsinf: return C(std::isinf(x));
    case UnaryKind::kIsfinite: return C(std::isfinite(x));
    case UnaryKind::kNanToNum:
      if (std::isnan(x)) return a;
      if (std::isinf(x)) return x > C(0) ? b : C(p.c);
      return x;
    case UnaryKind::kThreshold: return x <= a ? b : x;  // NaN passes through
    case UnaryKind::kPow: return pow_value(x, a);
    default: return nan_value<C>();
  }
}

// ---------------------------------------------------------------------------- backward
template <class C>
C math_grad(UnaryKind k, C g, C x) {
  switch (k) {
    case UnaryKind::kNeg: return -g;
    case UnaryKind::kAbs: return g * sign_of(x);
    case UnaryKind::kReciprocal: return -g / (x * x);
    case UnaryKind::kSquare: return g * (C(2) * x);
    case UnaryKind::kCube: return g * (C(3) * (x * x));
    case UnaryKind::kSqrt: return g / (C(2) * std::sqrt(x));
    case UnaryKind::kRsqrt: {
      const C r = C(1) / std::sqrt(x);
      return C(-0.5) * g * (r * r * r);  // -0.5 g / x^1.5
    }
    case UnaryKind::kCbrt: {
      const C c = std::cbrt(x);
      return g / (C(3) * (c * c));
    }
    case UnaryKind::kExp:
    case UnaryKind::kExpm1: return g * std::exp(x);
    case UnaryKind::kExp2: return g * std::exp2(x) * C(kLn2);
    case UnaryKind::kLog: return g / x;
    case UnaryKind::kLog2: return g / (x * C(kLn2));
    case UnaryKind::kLog10: return g / (x * C(kLn10));
    case UnaryKind::kLog1p: return g / (C(1) + x);
    case UnaryKind::kSin: return g * std::cos(x);
    case UnaryKind::kCos: return -g * std::sin(x);
    case UnaryKind::kTan: {
      const C t = std::tan(x);
      return g * (C(1) + t * t);
    }
    case UnaryKind::kAsin: return g / std::sqrt(C(1) - x * x);
    case UnaryKind::kAcos: return -g / std::sqrt(C(1) - x * x);
    case UnaryKind::kAtan: return g / (C(1) + x * x);
    case UnaryKind::kSinh: return g * std::cosh(x);
    case UnaryKind::kCosh: return g * std::sinh(x);
    case UnaryKind::kTanh: {
      const C t = std::tanh(x);
      return g * (C(1) - t * t);
    }
    case UnaryKind::kAsinh: return g / std::sqrt(x * x + C(1));
    case UnaryKind::kAcosh: return g / std::sqrt(x * x - C(1));
    case UnaryKind::kAtanh: return g / (C(1) - x * x);
    case UnaryKind::kSign:
    case UnaryKind::kFloor:
    case UnaryKind::kCeil:
    case UnaryKind::kRound:
    case UnaryKind::kTrunc: return C(0);  // piecewise constant: zeros_like(grad), as torch
    case UnaryKind::kFrac: return g;
    case UnaryKind::kErf: return g * C(kTwoOverSqrtPi) * std::exp(-x * x);
    case UnaryKind::kErfc: return -g * C(kTwoOverSqrtPi) * std::exp(-x * x);
    case UnaryKind::kErfinv: {
      const C y = erfinv(x);
      return g * C(kSqrtPiOverTwo) * std::exp(y * y);
    }
    case UnaryKind::kLgamma: return g * digamma(x);
    case UnaryKind::kDigamma: return g * trigamma(x);
    default: return nan_value<C>();
  }
}

// torch's gelu_backward: g (Phi(x) + x phi(x)), and the tanh form's product rule.
template <class C>
C gelu_grad(UnaryKind k, C g, C x) {
  if (k == UnaryKind::kGeluErf) {
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(kSqrtHalf)));
    const C pdf = std::exp(C(-0.5) * x * x) * C(kInvSqrt2Pi);
    return g * (cdf + x * pdf);
  }
  const C x2 = x * x;
  const C t = std::tanh(C(kGeluBeta) * (x + C(kGeluKappa) * x2 * x));
  return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * C(kGeluBeta) * (C(1) + C(3 * kGeluKappa) * x2));
}

// torch's logit_backward: NaN outside [0, 1] (no eps) or 0 outside [eps, 1 - eps].
template <class C>
C logit_grad(C g, C x, const UnaryParams& p) {
  const bool outside = p.a < 0 ? (x < C(0) || x > C(1)) : (x < C(p.a) || x > C(1) - C(p.a));
  if (outside) return p.a < 0 ? nan_value<C>() : C(0);
  if (x == C(0) || x == C(1)) return g * std::numeric_limits<C>::infinity();
  return g / (x * (C(1) - x));
}

template <class C>
C activation_grad(UnaryKind k, C g, C x, const UnaryParams& p) {
  const C a = C(p.a), b = C(p.b);
  switch (k) {
    case UnaryKind::kRelu: return x <= C(0) ? C(0) : g;  // NaN x passes g
    case UnaryKind::kRelu6: return (x <= C(0) || x >= C(6)) ? C(0) : g;
    case UnaryKind::kGeluErf:
    case UnaryKind::kGeluTanh: return gelu_grad(k, g, x);
    case UnaryKind::kSilu: {
      const C s = sigmoid(x);
      return g * s * (C(1) + x * (C(1) - s));
    }
    case UnaryKind::kMish: {
      const C t = std::tanh(std::log1p(std::exp(x))), s = sigmoid(x);
      return g * (t + x * s * (C(1) - t * t));
    }
    case UnaryKind::kSigmoid: {
      const C s = sigmoid(x);
      return g * (C(1) - s) * s;
    }
    case UnaryKind::kLogit: return logit_grad(g, x, p);
    case UnaryKind::kSoftplus: {
      const C z = std::exp(a * x);
      return a * x > b ? g : g * z / (z + C(1));
    }
    case UnaryKind::kSoftsign: {
      const C d = C(1) + std::fabs(x);
      return g / (d * d);
    }
    case UnaryKind::kTanhshrink: {
      const C t = std::tanh(x);
      return g * t * t;
    }
    case UnaryKind::kHardswish: return x < C(-3) ? C(0) : (x <= C(3) ? g * (x / C(3) + C(0.5)) : g);
    case UnaryKind::kHardsigmoid: return (x > C(-3) && x < C(3)) ? g / C(6) : C(0);
    case UnaryKind::kHardtanh: return (x <= a || x >= b) ? C(0) : g;
    // torch tests x <= 0, so a NaN x passes the positive-side gradient
    case UnaryKind::kSelu: return x <= C(0) ? g * C(kSeluScale * kSeluAlpha) * std::exp(x) : g * C(kSeluScale);
    case UnaryKind::kCelu: return x <= C(0) ? g * std::exp(x / a) : g;
    case UnaryKind::kElu: return x <= C(0) ? g * a * std::exp(x) : g;
    case UnaryKind::kLeakyRelu: return x > C(0) ? g : g * a;
    case UnaryKind::kHardshrink:
    case UnaryKind::kSoftshrink: return (x >= -a && x <= a) ? C(0) : g;
    case UnaryKind::kStep: return C(0);
    case UnaryKind::kNanToNum: return std::isfinite(x) ? g : C(0);
    case UnaryKind::kThreshold: return x <= a ? C(0) : g;
    case UnaryKind::kPow: return a == C(0) ? C(0) : g * (a * pow_value(x, a - C(1)));
    default: return nan_value<C>();
  }
}

// The kinds up to kDigamma are math_*, the rest activation_* (enum order).
bool is_math_kind(UnaryKind k) { return static_cast<int>(k) <= static_cast<int>(UnaryKind::kDigamma); }

}  // namespace

template <class C>
C unary_value(UnaryKind k, C x, const UnaryParams& p) {
  return is_math_kind(k) ? math_value(k, x) : activation_value(k, x, p);
}

template <class C>
C unary_grad(UnaryKind k, C g, C x, const UnaryParams& p) {
  return is_math_kind(k) ? math_grad(k, g, x) : activation_grad(k, g, x, p);
}

template float unary_value<float>(UnaryKind, float, const UnaryParams&);
template double unary_value<double>(UnaryKind, double, const UnaryParams&);
template float unary_grad<float>(UnaryKind, float, float, const UnaryParams&);
template double unary_grad<double>(UnaryKind, double, double, const UnaryParams&);

// ---------------------------------------------------------------------------- integers
namespace {

std::int64_t int_kind(UnaryKind k, std::int64_t x, DType t) {
  const int bits = dtype_bits(t);
  const auto ux = static_cast<std::uint64_t>(x);
  const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  switch (k) {
    case UnaryKind::kNeg: return wrap_to(t, std::uint64_t{0} - ux);
    case UnaryKind::kAbs: return x < 0 ? wrap_to(t, std::uint64_t{0} - ux) : x;
    case UnaryKind::kSign: return (x > 0) - (x < 0);
    case UnaryKind::kBitwiseNot: return wrap_to(t, ~ux);
    case UnaryKind::kPopcount: return std::popcount(ux & mask);
    case UnaryKind::kClz: return std::countl_zero(ux & mask) - (64 - bits);
    case UnaryKind::kLogicalNot: return x == 0;
    default: return 0;
  }
}

}  // namespace

std::int64_t unary_int_value(UnaryKind k, std::int64_t x, DType t) {
  if (t == DType::kBool) {
    const std::int64_t v = x != 0;
    if (k == UnaryKind::kBitwiseNot || k == UnaryKind::kLogicalNot) return !v;
    return int_kind(k, v, DType::kU8) != 0;
  }
  return int_kind(k, wrap_to(t, static_cast<std::uint64_t>(x)), t);
}

// ---------------------------------------------------------------------------- error scales
namespace {

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

// Magnitude of the terms digamma's recurrence, asymptotic series and (x < 0) reflection add
// up: they cancel near its root 1.46 and for negative x.
double digamma_terms(double x) {
  if (x < 0) {
    const double r = x - std::trunc(x);
    return digamma_terms(1 - x) + std::fabs(kPi / std::tan(kPi * r));
  }
  double sum = 0;
  for (double y = x; y < 12; y += 1) sum += 1 / y;
  return sum + std::log(std::max(x, 12.0));
}

// Kind-specific terms of the forward's scale where the formula subtracts.
double forward_cancellation(UnaryKind k, double x, const UnaryParams& p) {
  switch (k) {
    case UnaryKind::kTanhshrink: return std::fabs(x) + std::fabs(std::tanh(x));
    case UnaryKind::kDigamma: return digamma_terms(x);
    case UnaryKind::kLgamma:
      // reflection: log(pi / |sin(pi x)|) - lgamma(1 - x)
      if (x >= 0) return 0;
      return std::fabs(std::lgamma(1 - x)) + std::fabs(std::log(kPi / std::fabs(std::sin(kPi * (x - std::trunc(x))))));
    case UnaryKind::kHardswish: return std::fabs(x) * (std::fabs(x) + 3) / 6;  // x + 3 near -3
    case UnaryKind::kSoftshrink: return std::fabs(x) > p.a ? std::fabs(x) + p.a : 0;
    default: return 0;
  }
}

// Kinds whose derivative is piecewise constant (or linear): f'' is taken as exact, not
// estimated numerically across their kinks.
bool piecewise_linear(UnaryKind k) {
  switch (k) {
    case UnaryKind::kNeg: case UnaryKind::kAbs: case UnaryKind::kSign: case UnaryKind::kFloor:
    case UnaryKind::kCeil: case UnaryKind::kRound: case UnaryKind::kTrunc: case UnaryKind::kFrac:
    case UnaryKind::kRelu: case UnaryKind::kRelu6: case UnaryKind::kHardswish: case UnaryKind::kHardsigmoid:
    case UnaryKind::kHardtanh: case UnaryKind::kLeakyRelu: case UnaryKind::kHardshrink:
    case UnaryKind::kSoftshrink: case UnaryKind::kStep: case UnaryKind::kNanToNum: case UnaryKind::kThreshold:
      return true;
    default: return false;
  }
}

// f''(x), from central differences of the backward formula in double (one-sided next to a
// domain edge; 0 where neither side is finite).
double second_derivative(UnaryKind k, double x, const UnaryParams& p) {
  if (piecewise_linear(k)) return k == UnaryKind::kHardswish && std::fabs(x) < 3 ? 1.0 / 3 : 0.0;
  const double h = 1e-5 * std::fabs(x);
  if (h == 0) return 0;
  const double lo = unary_grad<double>(k, 1.0, x - h, p), mid = unary_grad<double>(k, 1.0, x, p);
  const double hi = unary_grad<double>(k, 1.0, x + h, p);
  for (double d : {(hi - lo) / (2 * h), (hi - mid) / h, (mid - lo) / h})
    if (std::isfinite(d)) return d;
  return 0;
}

// Kind-specific terms of the backward's scale (per unit |g|) where the formula subtracts.
double backward_cancellation(UnaryKind k, double x) {
  switch (k) {
    case UnaryKind::kTanh: {
      const double t = std::tanh(x);
      return 1 + t * t;  // 1 - t^2
    }
    case UnaryKind::kSigmoid: return sigmoid(x);  // (1 - s) s
    case UnaryKind::kMish: {
      const double t = std::tanh(std::log1p(std::exp(x))), s = sigmoid(x);
      return std::fabs(t) + std::fabs(x) * s * (1 + t * t);  // t + x s (1 - t^2)
    }
    case UnaryKind::kHardswish: return std::fabs(x) < 3 ? 0.5 + std::fabs(x) / 3 : 0;  // x / 3 + 0.5
    case UnaryKind::kLgamma: return digamma_terms(x);
    case UnaryKind::kDigamma: {
      if (x >= 0) return 0;
      // reflection: pi^2 / sin^2(pi x) - trigamma(1 - x)
      const double s = std::sin(kPi * (x - std::trunc(x)));
      return kPi * kPi / (s * s) + std::fabs(trigamma(1 - x));
    }
    default: return 0;
  }
}

bool exact_kind(UnaryKind k) {
  const UnaryKindInfo& info = unary_kind_info(k);
  return info.to_bool || !info.floating;
}

}  // namespace

// Error scales of the maps: the magnitude of the terms a result is computed from, so the
// tolerance covers the rounding of each term where the formula cancels (e.g. silu's
// backward 1 + x (1 - s) near x = -1.28, or gelu's 1 + erf for negative x). Generic:
// |f(x)| + |x f'(x)| (a relative rounding of x moves f by eps |x f'|), plus the terms
// of the formulas that subtract.
double unary_scale(UnaryKind k, double x, const UnaryParams& p) {
  if (!std::isfinite(x) || exact_kind(k)) return 0;
  const double ax = std::fabs(x);
  switch (k) {
    case UnaryKind::kRelu:
    case UnaryKind::kGeluErf:
    case UnaryKind::kSilu: return ax;
    case UnaryKind::kGeluTanh: {
      const double inner = kGeluBeta * (x + kGeluKappa * x * x * x), t = std::tanh(inner);
      return finite_or_zero(ax * (1 + std::fabs(inner) * (1 - t * t) * (1 + 3 * kGeluKappa * x * x)));
    }
    case UnaryKind::kExp: return finite_or_zero(std::exp(x) * (1 + ax));
    default: break;
  }
  const double f = unary_value<double>(k, x, p);
  const double slope = x == 0 ? 0.0 : std::fabs(x * unary_grad<double>(k, 1.0, x, p));
  return finite_or_zero(std::fabs(f) + slope + forward_cancellation(k, x, p));
}

// Backward: |g| (|f'(x)| + |x f''(x)|) plus the terms of the formulas that subtract.
double unary_grad_scale(UnaryKind k, double g, double x, const UnaryParams& p) {
  if (!std::isfinite(x) || !std::isfinite(g) || !unary_kind_info(k).differentiable) return 0;
  const double ag = std::fabs(g), ax = std::fabs(x);
  switch (k) {
    case UnaryKind::kRelu: return ag;
    case UnaryKind::kGeluErf: {
      // cdf = 0.5 (1 + erf) sums terms of size 0.5 (1 + |erf|): for negative x it cancels
      const double erf_v = std::erf(x * kSqrtHalf);
      const double pdf = std::exp(-0.5 * x * x) * kInvSqrt2Pi;
      return finite_or_zero(ag * (0.5 * (1 + std::fabs(erf_v)) + ax * pdf * (1 + x * x)));
    }
    case UnaryKind::kGeluTanh: {
      const double inner = kGeluBeta * (x + kGeluKappa * x * x * x), t = std::tanh(inner);
      return finite_or_zero(ag * (0.5 * (1 + std::fabs(t)) + 0.5 * ax * (1 + t * t) * kGeluBeta *
                                                                (1 + 3 * kGeluKappa * x * x) * (1 + std::fabs(inner))));
    }
    case UnaryKind::kSilu: {
      const double sg = 1 / (1 + std::exp(-x));
      return finite_or_zero(ag * sg * (1 + ax * (1 - sg) * (1 + ax)));
    }
    case UnaryKind::kExp: return finite_or_zero(ag * std::exp(x) * (1 + ax));
    default: break;
  }
  const double d1 = std::fabs(unary_grad<double>(k, 1.0, x, p));
  const double curvature = x == 0 ? 0.0 : std::fabs(x * second_derivative(k, x, p));
  return finite_or_zero(ag * (d1 + curvature + backward_cancellation(k, x)));
}

}  // namespace baracuda::reference
