// Unit tests of the CPU oracle itself: known values, identities, and every backward
// formula against central finite differences of its forward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kEulerGamma = 0.5772156649015329;
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

UnaryParams defaults(UnaryKind k) { return default_unary_params(k, DType::kF64); }
double value(UnaryKind k, double x) { return unary_value<double>(k, x, defaults(k)); }
double value(UnaryKind k, double x, UnaryParams p) { return unary_value<double>(k, x, p); }
double grad(UnaryKind k, double x, UnaryParams p) { return unary_grad<double>(k, 1.0, x, p); }
double grad(UnaryKind k, double x) { return grad(k, x, defaults(k)); }

// ------------------------------------------------------------------ known values
struct Known {
  UnaryKind kind;
  double x;
  double want;
};

// Finite values within 2 ulp; infinities, NaN and zeros (with their sign) exactly.
void expect_value(UnaryKind k, double x, UnaryParams p, double want) {
  const double got = value(k, x, p);
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << unary_kind_name(k) << "(" << x << ") = " << got << ", want NaN";
  } else if (want == 0 || std::isinf(want)) {
    EXPECT_EQ(got, want) << unary_kind_name(k) << "(" << x << ")";
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << unary_kind_name(k) << "(" << x << "): sign of " << got;
  } else {
    EXPECT_NEAR(got, want, 4.5e-16 * std::fabs(want)) << unary_kind_name(k) << "(" << x << ")";
  }
}

TEST(Reference, KnownUnaryValues) {
  const double e = std::exp(1.0), ln2 = std::log(2.0);
  using K = UnaryKind;
  const Known cases[] = {
      // arithmetic
      {K::kNeg, 2.5, -2.5}, {K::kNeg, 0.0, -0.0}, {K::kAbs, -3.0, 3.0}, {K::kAbs, -0.0, 0.0},
      {K::kSign, -2.0, -1.0}, {K::kSign, 3.0, 1.0}, {K::kSign, kNaN, 0.0}, {K::kSign, -0.0, 0.0},
      {K::kReciprocal, 4.0, 0.25}, {K::kReciprocal, 0.0, kInf}, {K::kReciprocal, -0.0, -kInf},
      {K::kSquare, -3.0, 9.0}, {K::kCube, -2.0, -8.0}, {K::kSqrt, 2.25, 1.5}, {K::kSqrt, -1.0, kNaN},
      {K::kSqrt, -0.0, -0.0}, {K::kRsqrt, 4.0, 0.5}, {K::kRsqrt, 0.0, kInf}, {K::kRsqrt, -0.0, -kInf},
      {K::kCbrt, -8.0, -2.0}, {K::kCbrt, 27.0, 3.0},
      // exponentials and logarithms
      {K::kExp, 1.0, e}, {K::kExp, 1000.0, kInf}, {K::kExp, -kInf, 0.0}, {K::kExp2, 10.0, 1024.0},
      {K::kExp2, -1.0, 0.5}, {K::kExpm1, 1e-10, 1.00000000005e-10}, {K::kExpm1, -0.0, -0.0},
      {K::kLog, e, 1.0}, {K::kLog, 0.0, -kInf}, {K::kLog, -1.0, kNaN}, {K::kLog2, 8.0, 3.0},
      {K::kLog10, 1000.0, 3.0}, {K::kLog1p, 1e-10, 9.9999999995e-11}, {K::kLog1p, -1.0, -kInf},
      {K::kLog1p, -2.0, kNaN},
      // trigonometric and hyperbolic
      {K::kSin, kPi / 6, 0.5}, {K::kCos, kPi / 3, 0.5}, {K::kTan, kPi / 4, 1.0}, {K::kSin, kInf, kNaN},
      {K::kCos, -kInf, kNaN}, {K::kAsin, 0.5, kPi / 6}, {K::kAcos, 0.5, kPi / 3}, {K::kAtan, 1.0, kPi / 4},
      {K::kAsin, 1.5, kNaN}, {K::kAcos, -1.5, kNaN}, {K::kSinh, 1.0, (e - 1 / e) / 2},
      {K::kCosh, 1.0, (e + 1 / e) / 2}, {K::kTanh, 0.5, (e - 1) / (e + 1)}, {K::kAsinh, std::sinh(2.0), 2.0},
      {K::kAcosh, std::cosh(2.0), 2.0}, {K::kAtanh, 0.5, 0.5 * std::log(3.0)}, {K::kAcosh, 0.5, kNaN},
      {K::kAtanh, 1.0, kInf}, {K::kAtanh, -1.0, -kInf}, {K::kAtanh, 1.5, kNaN},
      // rounding
      {K::kFloor, -2.5, -3.0}, {K::kFloor, -0.0, -0.0}, {K::kFloor, kInf, kInf}, {K::kCeil, -2.5, -2.0},
      {K::kCeil, -0.5, -0.0}, {K::kTrunc, -2.7, -2.0}, {K::kTrunc, -kInf, -kInf}, {K::kRound, 2.5, 2.0},
      {K::kRound, 3.5, 4.0}, {K::kRound, -2.5, -2.0}, {K::kRound, -0.5, -0.0}, {K::kRound, 0.5, 0.0},
      {K::kFrac, -2.75, -0.75}, {K::kFrac, 3.25, 0.25}, {K::kFrac, kInf, kNaN}, {K::kFrac, -kInf, kNaN},
      // special functions
      {K::kErf, 0.5, 0.5204998778130465}, {K::kErfc, 0.5, 0.4795001221869535}, {K::kErf, -kInf, -1.0},
      {K::kErfinv, std::erf(0.3), 0.3}, {K::kErfinv, 0.5, 0.4769362762044699}, {K::kErfinv, 1.0, kInf},
      {K::kErfinv, -1.0, -kInf}, {K::kErfinv, 1.5, kNaN}, {K::kErfinv, -0.0, -0.0},
      {K::kLgamma, 5.0, std::log(24.0)}, {K::kLgamma, 0.5, 0.5 * std::log(kPi)},
      {K::kLgamma, -0.5, std::log(2 * std::sqrt(kPi))}, {K::kLgamma, 0.0, kInf}, {K::kLgamma, -1.0, kInf},
      {K::kLgamma, -2.0, kInf}, {K::kDigamma, 0.0, -kInf}, {K::kDigamma, -0.0, kInf},
      {K::kDigamma, -1.0, kNaN}, {K::kDigamma, -3.0, kNaN}, {K::kDigamma, kInf, kInf},
      // activations with their default parameters
      {K::kRelu, -0.0, 0.0}, {K::kRelu6, 7.0, 6.0}, {K::kRelu6, 3.0, 3.0}, {K::kRelu6, kNaN, kNaN},
      {K::kGeluErf, -0.0, -0.0}, {K::kGeluTanh, -kInf, kNaN}, {K::kSilu, -kInf, kNaN},
      {K::kMish, 1.0, std::tanh(std::log1p(e))}, {K::kMish, -kInf, kNaN}, {K::kSigmoid, 0.0, 0.5},
      {K::kSigmoid, std::log(3.0), 0.75}, {K::kLogit, 0.75, std::log(3.0)}, {K::kLogit, 0.0, -kInf},
      {K::kLogit, 1.0, kInf}, {K::kLogit, 1.5, kNaN}, {K::kSoftplus, 0.0, ln2}, {K::kSoftplus, 30.0, 30.0},
      {K::kSoftsign, 1.0, 0.5}, {K::kSoftsign, -3.0, -0.75}, {K::kSoftsign, kInf, kNaN},
      {K::kTanhshrink, 1.0, 1 - std::tanh(1.0)}, {K::kHardswish, 1.0, 2.0 / 3}, {K::kHardswish, -4.0, -0.0} /* x * 0, as torch */,
      {K::kHardswish, 4.0, 4.0}, {K::kHardswish, kNaN, kNaN}, {K::kHardsigmoid, 0.0, 0.5},
      {K::kHardsigmoid, 4.0, 1.0}, {K::kHardsigmoid, -4.0, 0.0}, {K::kHardtanh, -2.0, -1.0},
      {K::kHardtanh, 0.25, 0.25}, {K::kHardtanh, kNaN, kNaN}, {K::kSelu, 1.0, 1.0507009873554805},
      {K::kSelu, -1.0, 1.0507009873554805 * 1.6732632423543772 * std::expm1(-1.0)},
      {K::kCelu, -1.0, std::expm1(-1.0)}, {K::kElu, -1.0, std::expm1(-1.0)}, {K::kElu, 2.0, 2.0},
      {K::kLeakyRelu, -2.0, -0.02}, {K::kLeakyRelu, 3.0, 3.0}, {K::kHardshrink, 0.5, 0.0},
      {K::kHardshrink, 0.625, 0.625}, {K::kHardshrink, -0.625, -0.625}, {K::kHardshrink, kNaN, kNaN},
      {K::kSoftshrink, 0.75, 0.25}, {K::kSoftshrink, -0.75, -0.25}, {K::kSoftshrink, 0.25, 0.0},
      {K::kSoftshrink, kNaN, kNaN}, {K::kStep, kNaN, kNaN}, {K::kStep, 0.0, 0.0}, {K::kStep, 1e-300, 1.0}, {K::kStep, -1.0, 0.0},
      // predicates and nan_to_num (f64 defaults: the largest finite double)
      {K::kLogicalNot, 0.0, 1.0}, {K::kLogicalNot, -0.0, 1.0}, {K::kLogicalNot, kNaN, 0.0},
      {K::kLogicalNot, 2.0, 0.0}, {K::kIsnan, kNaN, 1.0}, {K::kIsnan, kInf, 0.0}, {K::kIsinf, -kInf, 1.0},
      {K::kIsinf, kNaN, 0.0}, {K::kIsfinite, 1.0, 1.0}, {K::kIsfinite, kInf, 0.0}, {K::kIsfinite, kNaN, 0.0},
      {K::kNanToNum, kNaN, 0.0}, {K::kNanToNum, kInf, std::numeric_limits<double>::max()},
      {K::kNanToNum, -kInf, std::numeric_limits<double>::lowest()}, {K::kNanToNum, -2.0, -2.0},
      // integer-only kinds have no floating form
      {K::kBitwiseNot, 1.0, kNaN}, {K::kPopcount, 1.0, kNaN}, {K::kClz, 1.0, kNaN},
  };
  for (const Known& c : cases) expect_value(c.kind, c.x, defaults(c.kind), c.want);
  // digamma's recurrence cancels to its small values: a few ulp of the terms (~3)
  EXPECT_NEAR(value(K::kDigamma, 1.0), -kEulerGamma, 1e-15);
  EXPECT_NEAR(value(K::kDigamma, 0.5), -kEulerGamma - 2 * ln2, 1e-15);
  EXPECT_NEAR(value(K::kDigamma, -0.5), 2 - kEulerGamma - 2 * ln2, 1e-15);  // psi(0.5) + 2
  // the existing activations' reference values
  EXPECT_NEAR(value(UnaryKind::kGeluErf, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(value(UnaryKind::kGeluErf, -1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(value(UnaryKind::kGeluTanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(value(UnaryKind::kSilu, 1.0), 0.7310585786300049, 1e-15);
  EXPECT_EQ(value(UnaryKind::kRelu, -3.0), 0.0);
  EXPECT_EQ(value(UnaryKind::kRelu, 2.5), 2.5);
  EXPECT_TRUE(std::isnan(value(UnaryKind::kRelu, kNaN)));
  // nan_to_num's defaults follow the dtype
  EXPECT_EQ(unary_value<float>(UnaryKind::kNanToNum, INFINITY, default_unary_params(UnaryKind::kNanToNum, DType::kF32)),
            std::numeric_limits<float>::max());
  EXPECT_EQ(value(UnaryKind::kNanToNum, -kInf, default_unary_params(UnaryKind::kNanToNum, DType::kF16)), -65504.0);
}

TEST(Reference, KnownParametricValues) {
  using K = UnaryKind;
  const double e = std::exp(1.0);
  expect_value(K::kThreshold, 0.5, {0.5, -2, 0}, -2.0);
  expect_value(K::kThreshold, 0.625, {0.5, -2, 0}, 0.625);
  expect_value(K::kThreshold, kNaN, {0.5, -2, 0}, kNaN);
  expect_value(K::kLeakyRelu, -2.0, {0.25, 0, 0}, -0.5);
  expect_value(K::kElu, -1.0, {0.5, 0, 0}, 0.5 * std::expm1(-1.0));
  expect_value(K::kCelu, -1.0, {2, 0, 0}, 2 * std::expm1(-0.5));
  expect_value(K::kHardtanh, 1.0, {-2, 0.5, 0}, 0.5);
  expect_value(K::kHardtanh, -3.0, {-2, 0.5, 0}, -2.0);
  expect_value(K::kSoftplus, 1.0, {2, 20, 0}, std::log1p(e * e) / 2);
  expect_value(K::kSoftplus, 3.0, {2, 5, 0}, 3.0);  // beta x > threshold: x
  expect_value(K::kHardshrink, 1.25, {1.5, 0, 0}, 0.0);
  expect_value(K::kSoftshrink, 2.0, {1.5, 0, 0}, 0.5);
  expect_value(K::kLogit, 0.0, {0.1, 0, 0}, -std::log(9.0));  // clamped to eps
  expect_value(K::kLogit, 1.5, {0.1, 0, 0}, std::log(9.0));
  expect_value(K::kNanToNum, kNaN, {1, 2, 3}, 1.0);
  expect_value(K::kNanToNum, kInf, {1, 2, 3}, 2.0);
  expect_value(K::kNanToNum, -kInf, {1, 2, 3}, 3.0);
  // pow: the special exponents, integral exponents of negative bases, pow(NaN, 0) = 1
  expect_value(K::kPow, -2.0, {2, 0, 0}, 4.0);
  expect_value(K::kPow, -2.0, {3, 0, 0}, -8.0);
  expect_value(K::kPow, 4.0, {0.5, 0, 0}, 2.0);
  expect_value(K::kPow, 4.0, {-0.5, 0, 0}, 0.5);
  expect_value(K::kPow, -4.0, {-1, 0, 0}, -0.25);
  expect_value(K::kPow, -4.0, {-2, 0, 0}, 0.0625);
  expect_value(K::kPow, -2.0, {5, 0, 0}, -32.0);
  expect_value(K::kPow, -2.0, {-3, 0, 0}, -0.125);
  expect_value(K::kPow, 2.0, {10, 0, 0}, 1024.0);
  expect_value(K::kPow, -8.0, {1.0 / 3, 0, 0}, kNaN);
  expect_value(K::kPow, -0.0, {-1, 0, 0}, -kInf);
  expect_value(K::kPow, kNaN, {0, 0, 0}, 1.0);
  expect_value(K::kPow, kInf, {0, 0, 0}, 1.0);
}

TEST(Reference, KnownUnaryGradients) {
  using K = UnaryKind;
  const double pi2 = kPi * kPi;
  EXPECT_NEAR(trigamma(1.0), pi2 / 6, 4e-16 * pi2);
  EXPECT_NEAR(trigamma(0.5), pi2 / 2, 4e-16 * pi2);
  EXPECT_NEAR(trigamma(-0.5), pi2 / 2 + 4, 4e-16 * pi2);
  EXPECT_EQ(trigamma(-2.0), kInf);
  EXPECT_NEAR(grad(K::kDigamma, 1.0), pi2 / 6, 4e-16 * pi2);  // trigamma
  EXPECT_NEAR(grad(K::kLgamma, 1.0), -kEulerGamma, 1e-15);     // digamma
  EXPECT_DOUBLE_EQ(grad(K::kErfinv, 0.0), std::sqrt(kPi) / 2);
  EXPECT_NEAR(unary_grad<double>(K::kExp2, 3.0, 2.0, {}), 3 * 4 * std::log(2.0), 1e-14);
  EXPECT_EQ(unary_grad<double>(K::kRelu, 2.5, kNaN, {}), 2.5);  // NaN x passes g
  EXPECT_EQ(unary_grad<double>(K::kThreshold, 2.5, kNaN, {0.5, -2, 0}), 2.5);
  EXPECT_EQ(grad(K::kAbs, 0.0), 0.0);
  EXPECT_EQ(grad(K::kAbs, -3.0), -1.0);
  EXPECT_EQ(grad(K::kReciprocal, 0.0), -kInf);
  EXPECT_EQ(grad(K::kAtanh, 1.0), kInf);
  EXPECT_EQ(grad(K::kNanToNum, kInf), 0.0);
  EXPECT_EQ(grad(K::kNanToNum, 2.0), 1.0);
  EXPECT_EQ(grad(K::kHardsigmoid, 1.0), 1.0 / 6);
  EXPECT_EQ(grad(K::kHardswish, 1.0), 1.0 / 3 + 0.5);
  EXPECT_EQ(grad(K::kRelu6, 6.0), 0.0);
  EXPECT_EQ(grad(K::kHardtanh, -1.0), 0.0);
  EXPECT_EQ(grad(K::kSoftshrink, 0.5), 0.0);
  EXPECT_EQ(grad(K::kSelu, 1.0), 1.0507009873554805);
  // logit: NaN outside [0, 1] without eps, 0 outside [eps, 1 - eps] with it, g * inf at 0 and 1
  EXPECT_TRUE(std::isnan(grad(K::kLogit, 1.5)));
  EXPECT_EQ(grad(K::kLogit, 1.0), kInf);
  EXPECT_EQ(grad(K::kLogit, 0.05, {0.1, 0, 0}), 0.0);
  EXPECT_EQ(grad(K::kLogit, 0.5, {0.1, 0, 0}), 4.0);
  // pow: exponent 0 gives 0 (even at NaN), else g e x^(e - 1)
  EXPECT_EQ(grad(K::kPow, kNaN, {0, 0, 0}), 0.0);
  EXPECT_EQ(grad(K::kPow, -2.0, {3, 0, 0}), 12.0);
  EXPECT_EQ(grad(K::kPow, 4.0, {0.5, 0, 0}), 0.25);
  // piecewise-constant kinds: exactly 0, even at their jumps and for NaN
  for (K k : {K::kSign, K::kFloor, K::kCeil, K::kRound, K::kTrunc, K::kStep})
    for (double x : {-1.0, 0.0, 0.5, 2.5, kNaN}) EXPECT_EQ(grad(k, x), 0.0) << unary_kind_name(k) << " at " << x;
}

TEST(Reference, SpecialFunctionsMatchIdentities) {
  const double eps = std::ldexp(1.0, -52);
  for (double x : {-0.999999, -0.9, -0.3, 1e-8, 0.2, 0.5, 0.75, 0.99, 0.999999999}) {
    const double y = erfinv(x);
    EXPECT_NEAR(std::erf(y), x, 2.3e-16) << x;
    // the tail keeps its digits: erfc(y) = 1 - x up to the rounding of y (relative 2 y^2 eps)
    if (x > 0.5) EXPECT_NEAR(std::erfc(y), 1 - x, (2 * y * y + 4) * eps * (1 - x)) << x;
    const float xf = static_cast<float>(x);
    if (std::fabs(xf) < 1) EXPECT_NEAR(erfinv(xf), erfinv(static_cast<double>(xf)), 4e-7 * std::max(1.0, std::fabs(y))) << x;
  }
  // values from mpmath at 40 digits
  EXPECT_NEAR(erfinv(0.999), 2.3267537655135244939, 2 * eps * 2.33);
  EXPECT_NEAR(erfinv(-0.9), -1.1630871536766741628, 2 * eps * 1.17);
  EXPECT_NEAR(erfinv(0.999999999), 4.3200053881053620459, 2 * eps * 4.32);
  EXPECT_NEAR(erfinv(1e-8), 8.8622692545275805539e-9, 2 * eps * 8.9e-9);
  for (double x : {-7.3, -2.5, -0.25, 0.1, 1.4616321449683622, 3.0, 11.5, 12.5, 150.0, 1e10}) {
    EXPECT_NEAR(digamma(x + 1), digamma(x) + 1 / x, 2e-15 * std::max(1.0, std::fabs(digamma(x)))) << x;
    EXPECT_NEAR(trigamma(x + 1), trigamma(x) - 1 / (x * x), 2e-15 * trigamma(x)) << x;
  }
  EXPECT_NEAR(digamma(1.4616321449683622), -9.2412655217294275168e-17, 1e-15);  // near its positive root (mpmath)
}

TEST(Reference, KnownIntegerValues) {
  using K = UnaryKind;
  const std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
  const std::int64_t big = (std::int64_t{1} << 53) + 1;  // not a double
  EXPECT_EQ(unary_int_value(K::kPopcount, -1, DType::kI8), 8);
  EXPECT_EQ(unary_int_value(K::kPopcount, -1, DType::kI64), 64);
  EXPECT_EQ(unary_int_value(K::kPopcount, 255, DType::kU8), 8);
  EXPECT_EQ(unary_int_value(K::kClz, 1, DType::kI32), 31);
  EXPECT_EQ(unary_int_value(K::kClz, 1, DType::kI64), 63);
  EXPECT_EQ(unary_int_value(K::kClz, 0, DType::kI8), 8);
  EXPECT_EQ(unary_int_value(K::kClz, -1, DType::kI16), 0);
  EXPECT_EQ(unary_int_value(K::kAbs, -128, DType::kI8), -128);
  EXPECT_EQ(unary_int_value(K::kAbs, -5, DType::kI16), 5);
  EXPECT_EQ(unary_int_value(K::kAbs, 200, DType::kU8), 200);
  EXPECT_EQ(unary_int_value(K::kNeg, 1, DType::kU8), 255);
  EXPECT_EQ(unary_int_value(K::kNeg, std::numeric_limits<std::int32_t>::min(), DType::kI32),
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(unary_int_value(K::kNeg, i64_min, DType::kI64), i64_min);
  EXPECT_EQ(unary_int_value(K::kNeg, big, DType::kI64), -big);
  EXPECT_EQ(unary_int_value(K::kSign, -7, DType::kI64), -1);
  EXPECT_EQ(unary_int_value(K::kSign, 200, DType::kU8), 1);
  EXPECT_EQ(unary_int_value(K::kSign, 0, DType::kI8), 0);
  EXPECT_EQ(unary_int_value(K::kBitwiseNot, 0, DType::kI16), -1);
  EXPECT_EQ(unary_int_value(K::kBitwiseNot, 0, DType::kU8), 255);
  EXPECT_EQ(unary_int_value(K::kBitwiseNot, big, DType::kI64), -big - 1);
  EXPECT_EQ(unary_int_value(K::kBitwiseNot, 1, DType::kBool), 0);
  EXPECT_EQ(unary_int_value(K::kBitwiseNot, 0, DType::kBool), 1);
  EXPECT_EQ(unary_int_value(K::kLogicalNot, 5, DType::kI32), 0);
  EXPECT_EQ(unary_int_value(K::kLogicalNot, 0, DType::kI64), 1);
  EXPECT_EQ(unary_int_value(K::kLogicalNot, 1, DType::kBool), 0);
}

TEST(Reference, KnownBinaryValues) {
  EXPECT_EQ(binary_value<double>(BinaryKind::kAdd, 1.5, 2.25), 3.75);
  EXPECT_EQ(binary_value<double>(BinaryKind::kSub, 1.5, 2.25), -0.75);
  EXPECT_EQ(binary_value<double>(BinaryKind::kMul, 1.5, -2.0), -3.0);
  EXPECT_EQ(binary_value<double>(BinaryKind::kDiv, 1.0, 4.0), 0.25);
  EXPECT_TRUE(std::isinf(binary_value<double>(BinaryKind::kDiv, 1.0, 0.0)));
}

// ------------------------------------------------------------------ finite differences
// Central differences: f'(x) ~ (f(x+h) - f(x-h)) / 2h, h scaled to x.
double central_diff(double (*f)(double, const void*), const void* ctx, double x) {
  double h = 1e-6 * std::max(1.0, std::fabs(x));
  return (f(x + h, ctx) - f(x - h, ctx)) / (2 * h);
}

// Five-point stencil (error h^4 f^(5) / 30): accurate enough for a 1e-6 relative check.
double five_point_diff(UnaryKind k, const UnaryParams& p, double x) {
  const double h = 1e-4 * std::max(1.0, std::fabs(x));
  auto f = [&](double v) { return unary_value<double>(k, v, p); };
  return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h);
}

struct Domain {
  double lo, hi;
};

// Where each kind's forward is finite and smooth enough to sample.
Domain grad_domain(UnaryKind k, const UnaryParams& p) {
  using K = UnaryKind;
  switch (k) {
    case K::kSqrt: case K::kRsqrt: case K::kLog: case K::kLog2: case K::kLog10: return {0.05, 10};
    case K::kLog1p: return {-0.95, 10};
    case K::kTan: return {-1.4, 1.4};
    case K::kAsin: case K::kAcos: case K::kAtanh: case K::kErfinv: return {-0.97, 0.97};
    case K::kAcosh: return {1.05, 10};
    case K::kErf: case K::kErfc: return {-4, 4};
    case K::kLgamma: case K::kDigamma: return {-5.9, 12};
    case K::kLogit: return p.a < 0 ? Domain{0.02, 0.98} : Domain{-0.5, 1.5};
    case K::kPow: return p.a == std::trunc(p.a) ? Domain{-4, 4} : Domain{0.05, 6};
    default: return {-6, 6};
  }
}

bool near(double x, double point, double d = 0.02) { return std::fabs(x - point) < d; }
bool near_integer(double x) { return near(x, std::nearbyint(x)); }

// True within a small distance of a point where the kind (with p) is not differentiable
// (kinks and jumps), or of a pole.
bool near_kink(UnaryKind k, const UnaryParams& p, double x) {
  using K = UnaryKind;
  switch (k) {
    case K::kAbs: case K::kRelu: case K::kLeakyRelu: case K::kElu: case K::kCelu: case K::kSelu:
    case K::kReciprocal: case K::kCbrt: case K::kSign: case K::kStep: return near(x, 0);
    case K::kRelu6: return near(x, 0) || near(x, 6);
    case K::kHardswish: case K::kHardsigmoid: return near(x, -3) || near(x, 3);
    case K::kHardtanh: return near(x, p.a) || near(x, p.b);
    case K::kHardshrink: case K::kSoftshrink: return near(x, p.a) || near(x, -p.a);
    case K::kThreshold: return near(x, p.a);
    case K::kSoftplus: return near(x, p.b / p.a);  // jumps where beta x crosses the threshold
    case K::kLogit: return p.a >= 0 && (near(x, p.a) || near(x, 1 - p.a));
    case K::kFloor: case K::kCeil: case K::kTrunc: case K::kFrac: return near_integer(x);
    case K::kRound: return near_integer(x + 0.5);  // jumps at the half-integers
    case K::kLgamma: case K::kDigamma: return x < 0.5 && near_integer(x);
    case K::kPow: return p.a < 1 && near(x, 0);
    default: return false;
  }
}

// The parameter sets each kind's backward is checked with: the defaults and, for the
// parametric kinds, a few others.
std::vector<UnaryParams> param_sets(UnaryKind k) {
  using K = UnaryKind;
  std::vector<UnaryParams> sets;
  if (unary_kind_info(k).plain) sets.push_back(defaults(k));
  switch (k) {
    case K::kLeakyRelu: sets.push_back({0.2, 0, 0}); break;
    case K::kElu: sets.push_back({0.5, 0, 0}); break;
    case K::kCelu: sets.push_back({2, 0, 0}); break;
    case K::kHardtanh: sets.push_back({-2, 0.5, 0}); break;
    case K::kSoftplus: sets.push_back({2, 5, 0}); break;
    case K::kHardshrink: case K::kSoftshrink: sets.push_back({1.5, 0, 0}); break;
    case K::kNanToNum: sets.push_back({1, 2, 3}); break;
    case K::kLogit: sets.push_back({0.1, 0, 0}); break;
    case K::kThreshold: sets.push_back({0.5, -2, 0}); sets.push_back({-1, 3, 0}); break;
    case K::kPow:
      for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 0.0, 1.0, 4.0, -3.0, 2.7, -1.3}) sets.push_back({e, 0, 0});
      break;
    default: break;
  }
  return sets;
}

TEST(Reference, UnaryBackwardMatchesFiniteDifferences) {
  for (int i = 0; i < kNumUnaryKinds; ++i) {
    const auto k = static_cast<UnaryKind>(i);
    if (!unary_kind_info(k).differentiable) continue;
    for (const UnaryParams& p : param_sets(k)) {
      const Domain d = grad_domain(k, p);
      int checked = 0;
      for (int s = 0; s <= 60; ++s) {
        const double x = d.lo + (d.hi - d.lo) * (s + 0.0123) / 60.5;  // off the round numbers
        if (near_kink(k, p, x)) continue;
        const double fd = five_point_diff(k, p, x), an = grad(k, x, p);
        EXPECT_NEAR(an, fd, 1e-6 * std::max(1.0, std::fabs(fd)))
            << unary_kind_name(k) << " (a = " << p.a << ", b = " << p.b << ") at x = " << x;
        ++checked;
      }
      EXPECT_GE(checked, 30) << unary_kind_name(k);
    }
  }
}

TEST(Reference, BinaryBackwardMatchesFiniteDifferences) {
  struct Ctx {
    BinaryKind kind;
    double other;
    bool wrt_a;
  };
  // the arithmetic kinds here; every differentiable kind in test_binary.cpp
  for (auto kind : {BinaryKind::kAdd, BinaryKind::kSub, BinaryKind::kMul, BinaryKind::kDiv}) {
    for (double a : {-2.5, -0.75, 0.5, 3.0})
      for (double b : {-1.5, 0.25, 2.0}) {
        Ctx ca{kind, b, true}, cb{kind, a, false};
        auto f = [](double v, const void* c) {
          auto* x = static_cast<const Ctx*>(c);
          return x->wrt_a ? binary_value<double>(x->kind, v, x->other) : binary_value<double>(x->kind, x->other, v);
        };
        auto [da, db] = binary_partials<double>(kind, a, b);
        EXPECT_NEAR(da, central_diff(f, &ca, a), 1e-6 * std::max(1.0, std::fabs(da))) << binary_kind_name(kind);
        EXPECT_NEAR(db, central_diff(f, &cb, b), 1e-6 * std::max(1.0, std::fabs(db))) << binary_kind_name(kind);
        // torch's gradient formulas equal g times the partials
        EXPECT_NEAR(binary_grad_a<double>(kind, 0.7, a, b), 0.7 * da, 1e-12);
        EXPECT_NEAR(binary_grad_b<double>(kind, 0.7, a, b), 0.7 * db, 1e-12);
      }
  }
}

// ------------------------------------------------------------------ float path vs double
// The naive float formulas agree with the double ones within a few float ulps of the value
// plus the error scale: catches slips in the float path (a constant in double, a wrong
// branch) and scales that are too small for the float rounding.
TEST(Reference, FloatPathAgreesWithDouble) {
  const double eps = std::ldexp(1.0, -24);
  for (int i = 0; i < kNumUnaryKinds; ++i) {
    const auto k = static_cast<UnaryKind>(i);
    const UnaryKindInfo& info = unary_kind_info(k);
    if (!info.floating) continue;
    for (UnaryParams p : param_sets(k).empty() ? std::vector<UnaryParams>{defaults(k)} : param_sets(k)) {
      if (k == UnaryKind::kNanToNum && p == defaults(k)) p = default_unary_params(k, DType::kF32);
      const Domain d = grad_domain(k, p);
      for (int s = 0; s <= 40; ++s) {
        const float xf = static_cast<float>(d.lo + (d.hi - d.lo) * (s + 0.0123) / 40.5);
        const double x = xf;
        const double want = unary_value<double>(k, x, p), got = unary_value<float>(k, xf, p);
        const double scale = unary_scale(k, x, p);
        EXPECT_TRUE(std::isfinite(scale)) << unary_kind_name(k) << " at " << x;
        EXPECT_NEAR(got, want, 8 * eps * (std::fabs(want) + scale) + 1e-37)
            << unary_kind_name(k) << " (a = " << p.a << ") at x = " << x;
        if (!info.differentiable) continue;
        const double gwant = unary_grad<double>(k, 0.75, x, p), ggot = unary_grad<float>(k, 0.75f, xf, p);
        const double gscale = unary_grad_scale(k, 0.75, x, p);
        EXPECT_TRUE(std::isfinite(gscale)) << unary_kind_name(k) << " at " << x;
        EXPECT_NEAR(ggot, gwant, 8 * eps * (std::fabs(gwant) + gscale) + 1e-37)
            << unary_kind_name(k) << " backward (a = " << p.a << ") at x = " << x;
      }
    }
  }
}

// compare()'s rules for infinite results: the exact value rounded to the dtype (an exact sum
// past FLT_MAX is -inf in f32), the naive twin's own value, or any infinity where the twin
// is NaN (order-dependent overflow of its terms); a finite exact value with a finite twin
// still rejects an infinity, and NaN is accepted only where the twin is NaN.
TEST(Reference, CompareInfinityRules) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const TensorLayout l = TensorLayout::contiguous(DType::kF32, {1});
  auto check = [&](double got, double exact, double naive) {
    HostTensor h(l);
    h.set(0, got);
    Result r;
    r.exact = {exact};
    r.naive = {naive};
    r.scale = {0.0};
    return compare(h, r, false).ok;
  };
  EXPECT_TRUE(check(-inf, -5.3713683370375771e+38, nan));   // exact rounds to -inf in f32
  EXPECT_TRUE(check(-inf, -5.3713683370375771e+38, -1.0));  // ... whatever the twin says
  EXPECT_TRUE(check(-inf, 6.5232190248264815e+37, nan));    // twin NaN: its terms overflow
  EXPECT_TRUE(check(inf, 1.0, inf));                        // equals the twin
  EXPECT_FALSE(check(-inf, 6.5232190248264815e+37, 6.5232190248264815e+37));  // finite twin
  EXPECT_FALSE(check(-inf, 1.0, inf));                      // the twin's opposite infinity
  EXPECT_FALSE(check(nan, inf, inf));                       // NaN where the twin is inf
  EXPECT_TRUE(check(nan, 1.0, nan));
}

// ElementJudge (compare() one element at a time, for oracles computed in pieces): judges fed
// out of order and merged give compare()'s verdict, count and first mismatches (by index);
// the zero-trust rule applies to the merged totals.
TEST(Reference, ElementJudgeMergesToCompare) {
  const std::int64_t n = 40;
  const TensorLayout l = TensorLayout::contiguous(DType::kBF16, {n});
  HostTensor h(l);
  Result r;
  for (std::int64_t i = 0; i < n; ++i) {
    const double e = 1.0 + 0.25 * static_cast<double>(i);
    r.exact.push_back(e);
    r.naive.push_back(e);
    r.scale.push_back(0.0);
    h.set(i, i % 7 == 3 ? e + 1 : (i == 11 ? kNaN : e));  // 6 off by 1, one NaN
  }
  const Comparison whole = compare(h, r, false);
  ASSERT_FALSE(whole.ok);
  EXPECT_EQ(whole.mismatches, 7);
  ElementJudge a(DType::kBF16), b(DType::kBF16);
  for (std::int64_t i = n - 1; i >= 0; --i)  // b takes the front half backwards, a the rest
    (i < n / 2 ? b : a).add(i, h.get(i), r.exact[static_cast<std::size_t>(i)], r.naive[static_cast<std::size_t>(i)], 0.0);
  a.merge(b);
  const Comparison pieces = a.finish();
  EXPECT_EQ(pieces.ok, whole.ok);
  EXPECT_EQ(pieces.checked, n);
  EXPECT_EQ(pieces.mismatches, whole.mismatches);
  EXPECT_EQ(pieces.detail, whole.detail);
  ElementJudge zeros(DType::kF32);  // all outputs 0 where the oracle is not: zero-trust
  for (std::int64_t i = 0; i < 64; ++i) EXPECT_TRUE(zeros.add(i, 0.0, 1e-9, 1e-9, 0.0, 1.0));
  EXPECT_FALSE(zeros.finish().ok);
  EXPECT_NE(zeros.finish().detail.find("zero-trust"), std::string::npos);
}

TEST(Reference, ScalesAreFiniteAndZeroForExactKinds) {
  using K = UnaryKind;
  for (int i = 0; i < kNumUnaryKinds; ++i) {
    const auto k = static_cast<UnaryKind>(i);
    for (double x : {kNaN, kInf, -kInf, 0.0, -0.0, 1e-300, 0.5, 1.0, -1.0, 700.0, 1e300, -1e300}) {
      EXPECT_TRUE(std::isfinite(unary_scale(k, x, defaults(k)))) << unary_kind_name(k) << " at " << x;
      EXPECT_TRUE(std::isfinite(unary_grad_scale(k, 1.0, x, defaults(k)))) << unary_kind_name(k) << " at " << x;
    }
    EXPECT_EQ(unary_scale(k, kInf, defaults(k)), 0.0) << unary_kind_name(k);
  }
  for (K k : {K::kIsnan, K::kIsinf, K::kIsfinite, K::kLogicalNot, K::kBitwiseNot, K::kPopcount})
    EXPECT_EQ(unary_scale(k, 1.5, defaults(k)), 0.0) << unary_kind_name(k);
  for (K k : {K::kFloor, K::kSign, K::kStep}) EXPECT_EQ(unary_grad_scale(k, 1.0, 1.5, defaults(k)), 0.0);
  // a cancelling formula gets more than its value: tanhshrink near 0, silu's backward near -1.28
  EXPECT_GT(unary_scale(K::kTanhshrink, 1e-3, {}), 1e-3);
  EXPECT_GT(unary_grad_scale(K::kSilu, 1.0, -1.28, {}), 0.5);
}

// ------------------------------------------------------------------ tensor level
TEST(Reference, BroadcastBackwardSumsOverBroadcastDims) {
  // out[i, j] = a[i, j] * b[j]; grad_b[j] = sum_i g[i, j] * a[i, j]
  auto out = TensorLayout::contiguous(DType::kF32, {3, 2});
  auto bl = TensorLayout::contiguous(DType::kF32, {2});
  HostTensor g(out), a(out), b(bl);
  const double gv[] = {1, 2, 3, 4, 5, 6}, av[] = {0.5, -1, 2, 0.25, -3, 1};
  for (int i = 0; i < 6; ++i) {
    g.set(i, gv[i]);
    a.set(i, av[i]);
  }
  b.set(0, 2.0);
  b.set(1, -4.0);
  BinaryBackwardDescriptor d{BinaryKind::kMul, out, out, bl, out, bl};
  auto r = binary_backward(d, g, a, b);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->grad_b.exact.size(), 2u);
  EXPECT_DOUBLE_EQ(r->grad_b.exact[0], 1 * 0.5 + 3 * 2 + 5 * -3);
  EXPECT_DOUBLE_EQ(r->grad_b.exact[1], 2 * -1 + 4 * 0.25 + 6 * 1);
  EXPECT_DOUBLE_EQ(r->grad_a.exact[3], 4 * -4.0);
  EXPECT_DOUBLE_EQ(r->grad_b.scale[0], 0.5 + 6 + 15);
}

TEST(Reference, StridedAndNegativeStrideViews) {
  auto x = TensorLayout::strided(DType::kF32, {4}, {-2});  // every other element, reversed
  HostTensor t(x);
  for (int i = 0; i < 4; ++i) t.set(i, i + 1.0);
  EXPECT_EQ(t.storage_bytes(), 7 * sizeof(float));
  EXPECT_EQ(t.get(3), 4.0);
  auto y = TensorLayout::contiguous(DType::kF32, {4});
  auto r = unary(UnaryDescriptor{UnaryKind::kRelu, x, y}, t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exact[2], 3.0);
}

TEST(Reference, UnaryBroadcastStridedGivesScalarsInLogicalOrder) {
  // x: 3 elements at stride 2, broadcast over 2 rows of y
  auto x = TensorLayout::strided(DType::kF32, {3}, {2});
  auto y = TensorLayout::contiguous(DType::kF32, {2, 3});
  HostTensor t(x);
  const double xs[] = {-1.5, 0.25, 2.0};
  for (int i = 0; i < 3; ++i) t.set(i, xs[i]);
  const UnaryParams p{2, 5, 0};
  auto r = unary(UnaryParamDescriptor{UnaryKind::kSoftplus, p, x, y}, t);
  auto plain = unary(UnaryDescriptor{UnaryKind::kLgamma, x, y}, t);
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(plain.has_value());
  ASSERT_EQ(r->exact.size(), 6u);
  for (int row = 0; row < 2; ++row)
    for (int j = 0; j < 3; ++j) {
      const auto i = static_cast<std::size_t>(row * 3 + j);
      EXPECT_EQ(r->exact[i], unary_value<double>(UnaryKind::kSoftplus, xs[j], p));
      EXPECT_EQ(r->naive[i], static_cast<double>(unary_value<float>(UnaryKind::kSoftplus, static_cast<float>(xs[j]), p)));
      EXPECT_EQ(r->scale[i], unary_scale(UnaryKind::kSoftplus, xs[j], p));
      EXPECT_EQ(plain->exact[i], std::lgamma(xs[j]));
    }
  // the backward with parameters, in f16 (naive rounded to f16)
  auto g16 = TensorLayout::contiguous(DType::kF16, {3});
  HostTensor g(g16), xh(g16);
  for (int i = 0; i < 3; ++i) {
    g.set(i, 0.5);
    xh.set(i, xs[i]);
  }
  auto b = unary_backward(UnaryParamBackwardDescriptor{UnaryKind::kLeakyRelu, {0.2, 0, 0}, g16, g16, g16}, g, xh);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->exact[0], 0.5 * 0.2);
  EXPECT_EQ(b->naive[0], round_to(DType::kF16, 0.5f * 0.2f));
  EXPECT_EQ(b->exact[2], 0.5);
}

TEST(Reference, UnaryOnIntegerDtypes) {
  auto l = TensorLayout::contiguous(DType::kI8, {4});
  HostTensor t(l);
  const double xs[] = {-128, -1, 0, 5};
  for (int i = 0; i < 4; ++i) t.set(i, xs[i]);
  auto abs = unary(UnaryDescriptor{UnaryKind::kAbs, l, l}, t);
  auto pop = unary(UnaryDescriptor{UnaryKind::kPopcount, l, l}, t);
  ASSERT_TRUE(abs.has_value());
  ASSERT_TRUE(pop.has_value());
  EXPECT_EQ(abs->exact, (std::vector<double>{-128, 1, 0, 5}));
  EXPECT_EQ(abs->naive, abs->exact);
  EXPECT_EQ(abs->scale, (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(pop->exact, (std::vector<double>{1, 8, 0, 2}));
  // i64 beyond 2^53 is read exactly: ~(2^60 + 1) = -(2^60 + 2)
  auto l64 = TensorLayout::contiguous(DType::kI64, {1});
  HostTensor t64(l64);
  const std::int64_t v = (std::int64_t{1} << 60) + 1;
  std::memcpy(t64.data(), &v, sizeof v);
  auto inv = unary(UnaryDescriptor{UnaryKind::kBitwiseNot, l64, l64}, t64);
  ASSERT_TRUE(inv.has_value());
  EXPECT_EQ(inv->exact[0], static_cast<double>(-v - 1));
  // a kind an integer dtype does not take is refused
  EXPECT_FALSE(unary(UnaryDescriptor{UnaryKind::kExp, l, l}, t).has_value());
}

TEST(Reference, PredicatesWriteBool) {
  auto x = TensorLayout::contiguous(DType::kF16, {4});
  auto y = TensorLayout::contiguous(DType::kBool, {4});
  HostTensor t(x);
  const double xs[] = {kNaN, 1.0, -kInf, 0.0};
  for (int i = 0; i < 4; ++i) t.set(i, xs[i]);
  auto nan = unary(UnaryDescriptor{UnaryKind::kIsnan, x, y}, t);
  auto fin = unary(UnaryDescriptor{UnaryKind::kIsfinite, x, y}, t);
  auto lnot = unary(UnaryDescriptor{UnaryKind::kLogicalNot, x, y}, t);
  ASSERT_TRUE(nan.has_value() && fin.has_value() && lnot.has_value());
  EXPECT_EQ(nan->exact, (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(fin->exact, (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(lnot->exact, (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(lnot->naive, lnot->exact);
  // logical_not on bool
  HostTensor b(y);
  b.set(0, 1);
  b.set(1, 0);
  auto bnot = unary(UnaryDescriptor{UnaryKind::kLogicalNot, y, y}, b);
  ASSERT_TRUE(bnot.has_value());
  EXPECT_EQ(bnot->exact, (std::vector<double>{0, 1, 1, 1}));
  // predicates have no backward
  EXPECT_FALSE(unary_backward(UnaryBackwardDescriptor{UnaryKind::kIsnan, x, x, x}, t, t).has_value());
}

TEST(Reference, CastRoundsOnceToNearestEven) {
  auto x = TensorLayout::contiguous(DType::kF32, {3});
  auto y = TensorLayout::contiguous(DType::kBF16, {3});
  HostTensor t(x);
  t.set(0, 1.0 + std::ldexp(1.0, -8));       // tie -> even (1.0)
  t.set(1, 1.0 + 3 * std::ldexp(1.0, -8));   // tie -> even (1 + 2^-6)
  t.set(2, 1e39);                            // beyond f32 -> inf in f32 storage
  auto r = cast(CastDescriptor{x, y}, t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exact[0], 1.0);
  EXPECT_EQ(r->exact[1], 1.0 + std::ldexp(1.0, -6));
  EXPECT_TRUE(std::isinf(r->exact[2]));
}

}  // namespace
}  // namespace baracuda::reference
