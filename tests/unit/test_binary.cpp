// Unit tests (no GPU) of the binary plans: the oracle's known values for every BinaryKind
// (floating and integer), the comparisons and lerp / alpha; every backward against
// five-point finite differences of its forward; the tensor-level oracle; and the
// validation refusals of BinaryPlan, BinaryBackwardPlan, BinaryCmpPlan, BinaryParamPlan
// and BinaryParamBackwardPlan (errors that name the field and the value).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/binary.hpp"
#include "baracuda/reference/elementwise.hpp"

namespace baracuda {
namespace {

using reference::binary_grad_a;
using reference::binary_grad_b;
using reference::binary_int_value;
using reference::binary_value;
using reference::HostTensor;
using K = BinaryKind;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

double value(K k, double a, double b) { return binary_value<double>(k, a, b); }

// Finite values within 2 ulp; infinities, NaN and zeros (with their sign) exactly.
void expect_value(K k, double a, double b, double want) {
  const double got = value(k, a, b);
  const std::string what = std::string(binary_kind_name(k)) + "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " = " << got << ", want NaN";
  } else if (want == 0 || std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << what << ": sign of " << got;
  } else {
    EXPECT_NEAR(got, want, 4.5e-16 * std::fabs(want)) << what;
  }
}

// ------------------------------------------------------------------ kind table
TEST(BinaryKinds, TableNamesAndParse) {
  for (int i = 0; i < kNumBinaryKinds; ++i) {
    const auto k = static_cast<K>(i);
    const BinaryKindInfo& info = binary_kind_info(k);
    EXPECT_NE(std::string(info.name), "unknown");
    EXPECT_EQ(parse_binary_kind(info.name), k) << info.name;
    EXPECT_TRUE(info.floating || info.integer || info.boolean) << info.name;
    if (info.differentiable) EXPECT_TRUE(info.floating) << info.name;
    if (info.to_bool) EXPECT_FALSE(info.differentiable) << info.name;
  }
  EXPECT_EQ(std::string(binary_kind_name(static_cast<K>(200))), "unknown");
  EXPECT_FALSE(parse_binary_kind("nope").has_value());
  EXPECT_TRUE(binary_kind_info(K::kMaximum).integer);
  EXPECT_FALSE(binary_kind_info(K::kDiv).integer);  // true division of integers is refused (no promotion)
  EXPECT_FALSE(binary_kind_info(K::kNextafter).differentiable);
  EXPECT_TRUE(binary_kind_info(K::kBitwiseXor).boolean);
  EXPECT_FALSE(binary_kind_info(K::kShiftLeft).boolean);
  for (int i = 0; i < kNumBinaryCmpKinds; ++i)
    EXPECT_EQ(parse_binary_cmp_kind(binary_cmp_kind_name(static_cast<BinaryCmpKind>(i))), static_cast<BinaryCmpKind>(i));
  for (int i = 0; i < kNumBinaryParamKinds; ++i)
    EXPECT_EQ(parse_binary_param_kind(binary_param_kind_name(static_cast<BinaryParamKind>(i))),
              static_cast<BinaryParamKind>(i));
}

// ------------------------------------------------------------------ known values
TEST(BinaryReference, KnownFloatingValues) {
  expect_value(K::kDivFloor, -7, 2, -4);
  expect_value(K::kDivFloor, 7, -2, -4);
  expect_value(K::kDivFloor, 7.5, 2.5, 3);
  expect_value(K::kDivFloor, -0.0, 5, -0.0);
  expect_value(K::kDivFloor, 0.0, -5, -0.0);
  expect_value(K::kDivFloor, 1, 0, kInf);  // IEEE a / b
  expect_value(K::kDivFloor, -1, 0, -kInf);
  expect_value(K::kDivFloor, 0, 0, kNaN);
  expect_value(K::kDivTrunc, -7, 2, -3);
  expect_value(K::kDivTrunc, 7, 2, 3);
  expect_value(K::kDivTrunc, -1, 3, -0.0);
  expect_value(K::kPow, 2, 10, 1024);
  expect_value(K::kPow, -2, 3, -8);
  expect_value(K::kPow, -2, 0.5, kNaN);
  expect_value(K::kPow, kNaN, 0, 1);
  expect_value(K::kPow, 0, -1, kInf);
  expect_value(K::kAtan2, 1, 1, kPi / 4);
  expect_value(K::kAtan2, 0.0, -1, kPi);
  expect_value(K::kAtan2, -0.0, -1, -kPi);
  expect_value(K::kHypot, 3, 4, 5);
  expect_value(K::kHypot, kInf, kNaN, kInf);
  expect_value(K::kCopysign, 3, -0.0, -3);
  expect_value(K::kCopysign, -3, 0.0, 3);
  expect_value(K::kNextafter, 1, 2, 1 + std::ldexp(1.0, -52));
  expect_value(K::kNextafter, 0, -1, -std::numeric_limits<double>::denorm_min());
  expect_value(K::kFmin, kNaN, 1, 1);
  expect_value(K::kFmax, 1, kNaN, 1);
  expect_value(K::kFmax, kNaN, kNaN, kNaN);
  expect_value(K::kMaximum, kNaN, 1, kNaN);
  expect_value(K::kMinimum, 1, kNaN, kNaN);
  expect_value(K::kMaximum, -0.0, 0.0, 0.0);  // IEEE max: +0 above -0
  expect_value(K::kMaximum, 0.0, -0.0, 0.0);
  expect_value(K::kMinimum, 0.0, -0.0, -0.0);
  expect_value(K::kMinimum, -0.0, 0.0, -0.0);
  expect_value(K::kFmax, -0.0, 0.0, 0.0);
  expect_value(K::kFmod, -7, 2, -1);
  expect_value(K::kFmod, 7, -2, 1);
  expect_value(K::kFmod, -4, 2, -0.0);  // a's sign
  expect_value(K::kFmod, 1, 0, kNaN);
  expect_value(K::kFmod, 1, kInf, 1);
  expect_value(K::kRemainder, -7, 2, 1);
  expect_value(K::kRemainder, 7, -2, -1);
  expect_value(K::kRemainder, 5.5, 2, 1.5);
  expect_value(K::kRemainder, -4, 2, -0.0);  // torch keeps fmod's zero
  expect_value(K::kRemainder, -1, kInf, kInf);
  expect_value(K::kRemainder, 1, 0, kNaN);
  expect_value(K::kLdexp, 3, 4, 48);
  expect_value(K::kLdexp, 3, -1, 1.5);
  expect_value(K::kXlogy, 0, 0, 0);
  expect_value(K::kXlogy, 0, -1, 0);
  expect_value(K::kXlogy, 0, kNaN, kNaN);
  expect_value(K::kXlogy, 2, std::exp(1.0), 2);
  expect_value(K::kXlogy, 1, 0, -kInf);
  expect_value(K::kLogicalAnd, 2, kNaN, 1);
  expect_value(K::kLogicalAnd, 2, 0, 0);
  expect_value(K::kLogicalOr, -0.0, 0, 0);
  expect_value(K::kLogicalXor, 3, 0, 1);
  expect_value(K::kShiftLeft, 1, 1, kNaN);  // no floating form
  // float path
  EXPECT_EQ(binary_value<float>(K::kNextafter, 1.f, 2.f), 1.f + std::ldexp(1.f, -23));
  EXPECT_EQ(binary_value<float>(K::kDivFloor, -7.f, 2.f), -4.f);
}

TEST(BinaryReference, NextafterStepsInTheDtype) {
  using reference::nextafter_in;
  EXPECT_EQ(nextafter_in(DType::kF16, 1, 2), 1 + std::ldexp(1.0, -10));
  EXPECT_EQ(nextafter_in(DType::kF16, 1, 0), 1 - std::ldexp(1.0, -11));
  EXPECT_EQ(nextafter_in(DType::kBF16, 1, 2), 1 + std::ldexp(1.0, -7));
  EXPECT_EQ(nextafter_in(DType::kBF16, -1, -2), -1 - std::ldexp(1.0, -7));
  EXPECT_EQ(nextafter_in(DType::kF16, 0, 1), std::ldexp(1.0, -24));
  EXPECT_EQ(nextafter_in(DType::kF16, 0, -1), -std::ldexp(1.0, -24));
  EXPECT_EQ(nextafter_in(DType::kF16, 65504, kInf), kInf);
  EXPECT_EQ(nextafter_in(DType::kF32, 1, 2), 1 + std::ldexp(1.0, -23));
  EXPECT_EQ(nextafter_in(DType::kF16, 2, 2), 2);
  EXPECT_TRUE(std::isnan(nextafter_in(DType::kBF16, kNaN, 2)));
}

TEST(BinaryReference, KnownIntegerValues) {
  const std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
  struct Known {
    K kind;
    DType t;
    std::int64_t a, b, want;
  };
  const Known cases[] = {
      {K::kAdd, DType::kI8, 127, 1, -128},          {K::kSub, DType::kU8, 0, 1, 255},
      {K::kMul, DType::kI16, 300, 300, 24464},      {K::kAdd, DType::kI64, std::numeric_limits<std::int64_t>::max(), 1, i64_min},
      {K::kDivFloor, DType::kI32, -7, 2, -4},       {K::kDivFloor, DType::kI32, 7, -2, -4},
      {K::kDivFloor, DType::kI32, 6, 3, 2},         {K::kDivTrunc, DType::kI32, -7, 2, -3},
      {K::kDivFloor, DType::kI32, 5, 0, 0},         {K::kDivTrunc, DType::kU8, 5, 0, 0},  // division by zero: 0
      {K::kFmod, DType::kI16, 5, 0, 0},             {K::kRemainder, DType::kI8, -5, 0, 0},
      {K::kDivFloor, DType::kI8, -128, -1, -128},   {K::kDivTrunc, DType::kI64, i64_min, -1, i64_min},  // MIN / -1 wraps
      {K::kFmod, DType::kI64, i64_min, -1, 0},      {K::kRemainder, DType::kI64, i64_min, -1, 0},
      {K::kFmod, DType::kI32, -7, 2, -1},           {K::kRemainder, DType::kI32, -7, 2, 1},
      {K::kRemainder, DType::kI32, 7, -2, -1},      {K::kDivFloor, DType::kU8, 200, 7, 28},
      {K::kMaximum, DType::kI8, -5, 3, 3},          {K::kMinimum, DType::kU8, 200, 3, 3},
      {K::kBitwiseAnd, DType::kI32, 12, 10, 8},     {K::kBitwiseOr, DType::kI32, 12, 10, 14},
      {K::kBitwiseXor, DType::kI8, -1, 1, -2},      {K::kBitwiseXor, DType::kBool, 1, 1, 0},
      {K::kBitwiseOr, DType::kBool, 0, 1, 1},       {K::kShiftLeft, DType::kI8, 1, 7, -128},
      {K::kShiftLeft, DType::kI8, 1, 8, 0},         {K::kShiftLeft, DType::kI32, 1, -1, 0},
      {K::kShiftLeft, DType::kU8, 1, 200, 0},       {K::kShiftLeft, DType::kU8, 3, 7, 128},
      {K::kShiftRight, DType::kI8, -128, 9, -1},    {K::kShiftRight, DType::kI8, 64, 9, 0},
      {K::kShiftRight, DType::kI8, -128, 7, -1},    {K::kShiftRight, DType::kI16, -64, 3, -8},
      {K::kShiftRight, DType::kU8, 200, 8, 0},      {K::kShiftRight, DType::kU8, 200, 3, 25},
      {K::kShiftRight, DType::kI64, -1, 64, -1},    {K::kShiftRight, DType::kI32, 100, -1, 0},
      {K::kLogicalAnd, DType::kI32, 5, 0, 0},       {K::kLogicalOr, DType::kU8, 0, 9, 1},
      {K::kLogicalXor, DType::kBool, 1, 0, 1},
  };
  for (const Known& c : cases)
    EXPECT_EQ(binary_int_value(c.kind, c.a, c.b, c.t), c.want)
        << binary_kind_name(c.kind) << "(" << c.a << ", " << c.b << ") on " << dtype_name(c.t);
}

TEST(BinaryReference, ComparisonsAndIsclose) {
  using reference::binary_cmp_value;
  using C = BinaryCmpKind;
  EXPECT_TRUE(binary_cmp_value<double>(C::kEq, 1, 1, 0, 0, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kEq, kNaN, kNaN, 0, 0, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kNe, kNaN, kNaN, 0, 0, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kLt, kNaN, 1, 0, 0, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kLe, -0.0, 0.0, 0, 0, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kGe, kInf, kInf, 0, 0, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kGt, 2, 1, 0, 0, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kIsclose, 1.0, 1.0 + 1e-6, 1e-5, 1e-8, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kIsclose, 1.0, 1.0 + 1e-4, 1e-5, 1e-8, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kIsclose, kInf, kInf, 1e-5, 1e-8, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kIsclose, kInf, -kInf, 1e-5, 1e-8, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kIsclose, kInf, 1e308, 1, 1, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kIsclose, kNaN, kNaN, 1e-5, 1e-8, false));
  EXPECT_TRUE(binary_cmp_value<double>(C::kIsclose, kNaN, kNaN, 1e-5, 1e-8, true));
  EXPECT_TRUE(binary_cmp_value<double>(C::kIsclose, 0.0, 1e-9, 0, 1e-8, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kIsclose, 1.0, 1.0 + 1e-12, 0, 0, false));  // zero tolerance: equality
  // relative to |b|, not symmetric
  EXPECT_TRUE(binary_cmp_value<double>(C::kIsclose, 1.0, 2.0, 0.5, 0, false));
  EXPECT_FALSE(binary_cmp_value<double>(C::kIsclose, 2.0, 1.0, 0.5, 0, false));
}

TEST(BinaryReference, LerpAndAlphaValues) {
  using reference::lerp_value;
  EXPECT_EQ(lerp_value<double>(1, 3, 0.25), 1.5);
  EXPECT_EQ(lerp_value<double>(1, 3, 0.75), 2.5);
  EXPECT_EQ(lerp_value<double>(1, 3, 1.0), 3.0);  // the second form is exact at w = 1
  EXPECT_EQ(lerp_value<double>(1, 3, 0.0), 1.0);
  EXPECT_EQ(lerp_value<double>(1, 3, -1.0), -1.0);
  EXPECT_EQ(lerp_value<double>(1, 3, 2.0), 5.0);
  EXPECT_TRUE(std::isnan(lerp_value<double>(1, 3, kNaN)));
  // tensor level: add / sub with alpha
  auto l = TensorLayout::contiguous(DType::kF32, {2});
  HostTensor a(l), b(l);
  a.set(0, 1.0), a.set(1, -2.0), b.set(0, 4.0), b.set(1, 0.5);
  for (auto [kind, want0, want1] : {std::tuple{BinaryParamKind::kAddAlpha, 7.0, -1.25},
                                    std::tuple{BinaryParamKind::kSubAlpha, -5.0, -2.75}}) {
    BinaryParamDescriptor d{kind, 1.5, l, l, {}, l};
    auto r = reference::binary_param(d, a, b, a);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->exact[0], want0);
    EXPECT_EQ(r->exact[1], want1);
  }
}

// ------------------------------------------------------------------ finite differences
double five_point(const std::function<double(double)>& f, double x) {
  const double h = 1e-4 * std::max(1.0, std::fabs(x));
  return (-f(x + 2 * h) + 8 * f(x + h) - 8 * f(x - h) + f(x - 2 * h)) / (12 * h);
}

// Sample points where each kind is smooth (no ties, no integer quotients, no poles).
std::vector<std::pair<double, double>> fd_points(K k) {
  std::vector<double> as = {-2.5, -0.75, 0.55, 3.1}, bs = {0.3, -1.7, 2.2};
  if (k == K::kPow) as = {0.45, 1.3, 3.1}, bs = {-1.5, 0.3, 2.2, 3.0};
  if (k == K::kXlogy) bs = {0.3, 1.7, 2.2};
  if (k == K::kLdexp) bs = {-1.3, 0.3, 2.2};
  std::vector<std::pair<double, double>> ps;
  for (double a : as)
    for (double b : bs) ps.emplace_back(a, b);
  return ps;
}

TEST(BinaryReference, EveryBackwardMatchesFiniteDifferences) {
  int kinds = 0;
  for (int i = 0; i < kNumBinaryKinds; ++i) {
    const auto k = static_cast<K>(i);
    if (!binary_kind_info(k).differentiable) continue;
    ++kinds;
    for (auto [a, b] : fd_points(k)) {
      const double fa = five_point([&](double v) { return value(k, v, b); }, a);
      const double fb = five_point([&](double v) { return value(k, a, v); }, b);
      const double ga = binary_grad_a<double>(k, 1.0, a, b), gb = binary_grad_b<double>(k, 1.0, a, b);
      EXPECT_NEAR(ga, fa, 1e-6 * std::max(1.0, std::fabs(fa))) << binary_kind_name(k) << " d/da at " << a << ", " << b;
      EXPECT_NEAR(gb, fb, 1e-6 * std::max(1.0, std::fabs(fb))) << binary_kind_name(k) << " d/db at " << a << ", " << b;
      // linear in the incoming gradient
      EXPECT_NEAR(binary_grad_a<double>(k, 0.7, a, b), 0.7 * ga, 1e-12 * std::max(1.0, std::fabs(ga)));
      EXPECT_NEAR(binary_grad_b<double>(k, -1.3, a, b), -1.3 * gb, 1e-12 * std::max(1.0, std::fabs(gb)));
    }
  }
  EXPECT_EQ(kinds, 18);
}

// torch's choices where the derivative is not defined.
TEST(BinaryReference, GradientConventions) {
  EXPECT_EQ(binary_grad_a<double>(K::kMaximum, 2, 1, 1), 1);  // a tie splits the gradient
  EXPECT_EQ(binary_grad_b<double>(K::kMaximum, 2, 1, 1), 1);
  EXPECT_EQ(binary_grad_a<double>(K::kMaximum, 2, kNaN, 1), 2);  // NaN: both get g
  EXPECT_EQ(binary_grad_b<double>(K::kMaximum, 2, kNaN, 1), 2);
  EXPECT_EQ(binary_grad_a<double>(K::kFmax, 2, 1, 1), 2);  // fmax: a tie goes to a
  EXPECT_EQ(binary_grad_b<double>(K::kFmax, 2, 1, 1), 0);
  EXPECT_EQ(binary_grad_a<double>(K::kFmax, 2, 1, kNaN), 2);
  EXPECT_EQ(binary_grad_b<double>(K::kFmin, 2, kNaN, 1), 2);
  EXPECT_EQ(binary_grad_a<double>(K::kPow, 2, 0, 0), 0);  // exponent 0
  EXPECT_EQ(binary_grad_b<double>(K::kPow, 2, 0, 2), 0);  // base 0, exponent >= 0
  EXPECT_EQ(binary_grad_a<double>(K::kCopysign, 2, 0, -1), 0);
  EXPECT_EQ(binary_grad_b<double>(K::kCopysign, 2, 3, -1), 0);
  EXPECT_EQ(binary_grad_a<double>(K::kXlogy, 2, 0, 0), 0);
  EXPECT_EQ(binary_grad_a<double>(K::kXlogy, 0, 1, 0), 0);  // xlogy(g = 0, b) = 0
  EXPECT_EQ(binary_grad_a<double>(K::kDivFloor, 2, 3, 1), 0);
  EXPECT_EQ(binary_grad_b<double>(K::kDivTrunc, 2, 3, 1), 0);
}

TEST(BinaryReference, ParamBackwardMatchesFiniteDifferences) {
  auto l = TensorLayout::contiguous(DType::kF64, {1});
  HostTensor g(l), a(l), b(l), w(l);
  g.set(0, 1.0);
  for (double av : {-1.3, 0.4})
    for (double bv : {2.1, -0.6})
      for (double wv : {-0.8, 0.2, 0.7, 1.6}) {
        a.set(0, av), b.set(0, bv), w.set(0, wv);
        // tensor weight: all three gradients
        BinaryParamBackwardDescriptor d{BinaryParamKind::kLerpTensor, 0, l, l, l, l, l, l, l};
        auto r = reference::binary_param_backward(d, g, a, b, w);
        ASSERT_TRUE(r.has_value());
        auto lerp = [](double x, double y, double z) { return reference::lerp_value<double>(x, y, z); };
        EXPECT_NEAR(r->grad_a.exact[0], five_point([&](double v) { return lerp(v, bv, wv); }, av), 1e-7);
        EXPECT_NEAR(r->grad_b.exact[0], five_point([&](double v) { return lerp(av, v, wv); }, bv), 1e-7);
        EXPECT_NEAR(r->grad_weight.exact[0], five_point([&](double v) { return lerp(av, bv, v); }, wv), 1e-7);
        // scalar weight: a and b
        BinaryParamBackwardDescriptor ds{BinaryParamKind::kLerp, wv, l, l, l, {}, l, l, {}};
        auto rs = reference::binary_param_backward(ds, g, a, b, a);
        ASSERT_TRUE(rs.has_value());
        EXPECT_NEAR(rs->grad_a.exact[0], five_point([&](double v) { return lerp(v, bv, wv); }, av), 1e-7);
        EXPECT_NEAR(rs->grad_b.exact[0], five_point([&](double v) { return lerp(av, v, wv); }, bv), 1e-7);
        // alpha = wv
        for (auto kind : {BinaryParamKind::kAddAlpha, BinaryParamKind::kSubAlpha}) {
          const double sign = kind == BinaryParamKind::kAddAlpha ? 1 : -1;
          BinaryParamBackwardDescriptor da{kind, wv, l, l, l, {}, l, l, {}};
          auto ra = reference::binary_param_backward(da, g, a, b, a);
          ASSERT_TRUE(ra.has_value());
          EXPECT_NEAR(ra->grad_a.exact[0], five_point([&](double v) { return v + sign * wv * bv; }, av), 1e-7);
          EXPECT_NEAR(ra->grad_b.exact[0], five_point([&](double v) { return av + sign * wv * v; }, bv), 1e-7);
        }
      }
}

// ------------------------------------------------------------------ tensor level
TEST(BinaryReference, TensorsOfEveryDtype) {
  // i8 [2, 3] floor-divided by a broadcast [3] row, with a zero divisor
  auto al = TensorLayout::contiguous(DType::kI8, {2, 3}), bl = TensorLayout::contiguous(DType::kI8, {3});
  HostTensor a(al), b(bl);
  const double av[] = {-7, 7, -128, 5, 0, 127}, bv[] = {2, 0, -1};
  for (int i = 0; i < 6; ++i) a.set(i, av[i]);
  for (int i = 0; i < 3; ++i) b.set(i, bv[i]);
  auto r = reference::binary(BinaryDescriptor{K::kDivFloor, al, bl, al}, a, b);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  const double want[] = {-4, 0, -128, 2, 0, -127};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r->exact[i], want[i]) << i;
  EXPECT_EQ(r->exact, r->naive);
  // logical_and on i8 -> bool
  auto out_b = TensorLayout::contiguous(DType::kBool, {2, 3});
  auto rl = reference::binary(BinaryDescriptor{K::kLogicalAnd, al, bl, out_b}, a, b);
  ASSERT_TRUE(rl.has_value());
  EXPECT_EQ(rl->exact[0], 1);
  EXPECT_EQ(rl->exact[1], 0);
  EXPECT_EQ(rl->exact[4], 0);
  // refusals: a kind outside its dtypes
  EXPECT_FALSE(reference::binary(BinaryDescriptor{K::kPow, al, bl, al}, a, b).has_value());
  auto fl = TensorLayout::contiguous(DType::kF32, {2, 3});
  HostTensor f(fl);
  EXPECT_FALSE(reference::binary(BinaryDescriptor{K::kShiftLeft, fl, fl, fl}, f, f).has_value());
  // nextafter on bf16 steps in bf16
  auto hl = TensorLayout::contiguous(DType::kBF16, {1});
  HostTensor h1(hl), h2(hl);
  h1.set(0, 1.0), h2.set(0, 2.0);
  auto rn = reference::binary(BinaryDescriptor{K::kNextafter, hl, hl, hl}, h1, h2);
  ASSERT_TRUE(rn.has_value());
  EXPECT_EQ(rn->exact[0], 1 + std::ldexp(1.0, -7));
}

TEST(BinaryReference, ComparisonTensors) {
  auto l = TensorLayout::contiguous(DType::kI64, {3});
  auto ob = TensorLayout::contiguous(DType::kBool, {3});
  HostTensor a(l), b(l);
  // beyond 2^53: compared exactly
  const std::int64_t big = (std::int64_t{1} << 60) + 1;
  std::memcpy(a.data(), &big, sizeof big);
  const std::int64_t big2 = big - 1;
  std::memcpy(b.data(), &big2, sizeof big2);
  a.set(1, -5), b.set(1, -5), a.set(2, 3), b.set(2, 4);
  auto r = reference::binary_cmp(BinaryCmpDescriptor{BinaryCmpKind::kGt, 0, 0, false, l, l, ob}, a, b);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exact, (std::vector<double>{1, 0, 0}));
  auto e = reference::binary_cmp(BinaryCmpDescriptor{BinaryCmpKind::kEq, 0, 0, false, l, l, ob}, a, b);
  EXPECT_EQ(e->exact, (std::vector<double>{0, 1, 0}));
  // isclose on f16 in f32
  auto h = TensorLayout::contiguous(DType::kF16, {2});
  auto hb = TensorLayout::contiguous(DType::kBool, {2});
  HostTensor x(h), y(h);
  x.set(0, 1.0), y.set(0, 1.0009765625), x.set(1, kNaN), y.set(1, kNaN);
  auto c = reference::binary_cmp(BinaryCmpDescriptor{BinaryCmpKind::kIsclose, 1e-3, 0, true, h, h, hb}, x, y);
  EXPECT_EQ(c->exact, (std::vector<double>{1, 1}));
}

TEST(BinaryReference, BroadcastBackwardOfNewKinds) {
  // out[i, j] = atan2(a[i, j], b[j]); grad_b[j] = sum_i g * -a / (a^2 + b^2)
  auto out = TensorLayout::contiguous(DType::kF64, {2, 2});
  auto bl = TensorLayout::contiguous(DType::kF64, {2});
  HostTensor g(out), a(out), b(bl);
  const double gv[] = {1, 2, 3, 4}, av[] = {0.5, -1, 2, 0.25};
  for (int i = 0; i < 4; ++i) g.set(i, gv[i]), a.set(i, av[i]);
  b.set(0, 2.0), b.set(1, -4.0);
  BinaryBackwardDescriptor d{K::kAtan2, out, out, bl, out, bl};
  auto r = reference::binary_backward(d, g, a, b);
  ASSERT_TRUE(r.has_value());
  auto term = [](double gg, double x, double y) { return gg * -x / (x * x + y * y); };
  EXPECT_NEAR(r->grad_b.exact[0], term(1, 0.5, 2) + term(3, 2, 2), 1e-15);
  EXPECT_NEAR(r->grad_b.exact[1], term(2, -1, -4) + term(4, 0.25, -4), 1e-15);
  // not differentiable, or not floating: refused
  BinaryBackwardDescriptor nd{K::kNextafter, out, out, bl, out, bl};
  EXPECT_FALSE(reference::binary_backward(nd, g, a, b).has_value());
}

// ------------------------------------------------------------------ validation
DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

template <class Result>
void expect_error(const Result& result, const std::string& needle) {
  ASSERT_FALSE(result.has_value()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(result.error().code(), Code::kInvalidArgument) << result.error().to_string();
  EXPECT_NE(result.error().message().find(needle), std::string::npos) << result.error().message();
}

TEST(BinaryValidation, BinaryPlanNamesFieldAndValue) {
  const auto c = caps90();
  auto f32 = TensorLayout::contiguous(DType::kF32, {4, 8});
  auto f16 = TensorLayout::contiguous(DType::kF16, {4, 8});
  auto i32 = TensorLayout::contiguous(DType::kI32, {4, 8});
  auto b8 = TensorLayout::contiguous(DType::kBool, {4, 8});
  auto other = TensorLayout::contiguous(DType::kI32, {4, 9});
  // wrong dtype
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kPow, i32, i32, i32}),
               "a.dtype = i32 is not supported by binary kind pow (f64, f32, f16, bf16)");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kShiftLeft, f32, f32, f32}),
               "a.dtype = f32 is not supported by binary kind shift_left (i64, i32, i16, i8, u8)");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kAdd, b8, b8, b8}),
               "a.dtype = bool is not supported by binary kind add");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kLogicalAnd, f32, f32, f32}),
               "out.dtype = f32 must be bool for binary kind logical_and");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kMaximum, i32, i32, b8}),
               "out.dtype = bool must be i32 for binary kind maximum");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kAtan2, f32, f16, f32}),
               "b.dtype = f16 differs from a.dtype = f32 (mixed dtypes are refused");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kLogicalOr, f32, i32, b8}),
               "b.dtype = i32 differs from a.dtype = f32");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{static_cast<K>(99), f32, f32, f32}),
               "kind = 99 is not a BinaryKind");
  // mismatched shapes, bad stride
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kRemainder, i32, other, i32}), "do not broadcast");
  auto bcast_out = TensorLayout::strided(DType::kI32, {4, 8}, {0, 1});
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{K::kBitwiseAnd, i32, i32, bcast_out}),
               "out = i32[4,8]{0,1} maps several elements to one address");
  // accepted: every kind on a dtype it takes
  for (int i = 0; i < kNumBinaryKinds; ++i) {
    const auto k = static_cast<K>(i);
    const auto& info = binary_kind_info(k);
    for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32, DType::kI16, DType::kI8,
                    DType::kU8, DType::kBool}) {
      const bool takes = dtype_is_floating(t) ? info.floating : (t == DType::kBool ? info.boolean : info.integer);
      auto l = TensorLayout::contiguous(t, {4, 8});
      auto o = TensorLayout::contiguous(info.to_bool ? DType::kBool : t, {4, 8});
      auto p = BinaryPlan::select_for_caps(c, BinaryDescriptor{k, l, l, o});
      EXPECT_EQ(p.has_value(), takes) << info.name << " on " << dtype_name(t) << (p ? "" : ": " + p.error().to_string());
      if (p) EXPECT_NE(p->sku().name().find("vec16_contig"), std::string::npos) << p->sku().name();
    }
  }
}

TEST(BinaryValidation, BackwardNamesFieldAndValue) {
  const auto c = caps90();
  auto f32 = TensorLayout::contiguous(DType::kF32, {4, 8});
  auto i32 = TensorLayout::contiguous(DType::kI32, {4, 8});
  auto row = TensorLayout::contiguous(DType::kF32, {8});
  expect_error(BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{K::kNextafter, f32, f32, f32, f32, f32}),
               "kind = nextafter has no backward (not differentiable)");
  expect_error(BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{K::kBitwiseAnd, i32, i32, i32, i32, i32}),
               "kind = bitwise_and has no backward");
  expect_error(BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{K::kMaximum, i32, i32, i32, i32, i32}),
               "grad_out.dtype = i32 is not supported by binary_backward (f64, f32, f16, bf16)");
  expect_error(BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{K::kAtan2, f32, f32, row, f32, f32}),
               "grad_b = f32[4,8] does not have the shape of b = f32[8]");
  // every differentiable kind selects, with the reduction (and its workspace) for a broadcast b
  for (int i = 0; i < kNumBinaryKinds; ++i) {
    const auto k = static_cast<K>(i);
    if (!binary_kind_info(k).differentiable) continue;
    auto plain = BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{k, f32, f32, f32, f32, f32});
    ASSERT_TRUE(plain.has_value()) << binary_kind_name(k);
    EXPECT_EQ(plain->workspace_size(), 0u);
    auto reduce = BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{k, f32, f32, row, f32, row});
    ASSERT_TRUE(reduce.has_value()) << binary_kind_name(k);
    EXPECT_NE(reduce->sku().name().find("bcast_reduce"), std::string::npos) << reduce->sku().name();
    EXPECT_GT(reduce->workspace_size(), 0u);
  }
}

// bcast_reduce_rows_vec16: which row-broadcast problems it takes (first in the order), its
// workspace, and why it refuses the others (which the general reductions still run).
std::string rows_vec16_rejection(const BinaryBackwardDescriptor& d) {
  auto reports = BinaryBackwardPlan::candidates(caps90(), d);
  EXPECT_TRUE(reports.has_value());
  if (!reports) return "?";
  for (const auto& r : reports.value())
    if (r.sku.impl == std::string("bcast_reduce_rows_vec16")) return r.rejection;
  ADD_FAILURE() << "no bcast_reduce_rows_vec16 candidate";
  return "?";
}

TEST(BinaryBackwardSkus, RowsVec16TakesBiasGradients) {
  const auto c = caps90();
  const DType t = DType::kBF16;
  auto g = TensorLayout::contiguous(t, {16384, 8192});
  auto bias = TensorLayout::contiguous(t, {8192});
  for (K k : {K::kAdd, K::kSub, K::kMul, K::kDiv, K::kAtan2}) {
    for (int which : {2, 1}) {
      BinaryBackwardDescriptor d{k, g, g, bias, g, bias, which != 1, true};
      auto p = BinaryBackwardPlan::select_for_caps(c, d);
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      EXPECT_EQ(p->sku().impl, std::string("bcast_reduce_rows_vec16")) << d.to_string();
      // 1024 vectors of 8 = 64 column blocks of 16; 3 waves x 4 blocks x 132 SMs / 64 = 24
      // chunks of 683 rows, f32 sums
      EXPECT_EQ(p->workspace_size(), std::size_t{24} * 8192 * 4) << d.to_string();
    }
  }
  // the broadcast operand on the a side, rank 3, every float dtype
  for (DType u : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    auto out = TensorLayout::contiguous(u, {3, 1000, 64});
    auto row = TensorLayout::contiguous(u, {64});
    auto p = BinaryBackwardPlan::select_for_caps(c, BinaryBackwardDescriptor{K::kMul, out, row, out, row, out});
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, std::string("bcast_reduce_rows_vec16"));
    EXPECT_GT(p->workspace_size(), 0u);
    EXPECT_EQ(p->workspace_size() % kWorkspaceAlignment, 0u);
  }
}

TEST(BinaryBackwardSkus, RowsVec16RefusesWithReasons) {
  const DType t = DType::kBF16;
  auto g = TensorLayout::contiguous(t, {257, 1024});
  auto bias = TensorLayout::contiguous(t, {1024});
  auto expect_rejection = [](const BinaryBackwardDescriptor& d, const std::string& needle) {
    const std::string why = rows_vec16_rejection(d);
    EXPECT_NE(why.find(needle), std::string::npos) << d.to_string() << ": '" << why << "'";
    auto p = BinaryBackwardPlan::select_for_caps(caps90(), d);  // another SKU takes it
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_NE(p->sku().impl, std::string("bcast_reduce_rows_vec16"));
  };
  expect_rejection(BinaryBackwardDescriptor{K::kAdd, g, g, g, g, g}, "no requested gradient needs a reduction");
  expect_rejection(BinaryBackwardDescriptor{K::kAdd, g, g, bias, g, bias, true, false},
                   "no requested gradient needs a reduction");
  auto col = TensorLayout::contiguous(t, {257, 1});
  auto row = TensorLayout::contiguous(t, {1, 1024});
  expect_rejection(BinaryBackwardDescriptor{K::kMul, g, col, row, col, row}, "both gradients need a reduction");
  // reduced over the last dim: the kept dim is not unit-stride
  auto g256 = TensorLayout::contiguous(t, {256, 1024});
  auto col256 = TensorLayout::contiguous(t, {256, 1});
  expect_rejection(BinaryBackwardDescriptor{K::kAdd, g256, g256, col256, g256, col256},
                   "grad_out = bf16[256,1024] is not one unit-stride run over the kept dims");
  auto odd = TensorLayout::contiguous(t, {257, 1031});
  auto odd_bias = TensorLayout::contiguous(t, {1031});
  expect_rejection(BinaryBackwardDescriptor{K::kAdd, odd, odd, odd_bias, odd, odd_bias},
                   "cols = 1031 is not a multiple of the 8-element vector");
  auto bias8 = TensorLayout::contiguous(t, {1024}, 8);
  expect_rejection(BinaryBackwardDescriptor{K::kMul, g, g, bias8, g, bias}, "b.alignment = 8 < 16 bytes");
  expect_rejection(BinaryBackwardDescriptor{K::kAdd, g, g, bias, g, bias8}, "grad_b.alignment = 8 < 16 bytes");
  auto g3 = TensorLayout::strided(t, {3, 1000, 64}, {70000, 64, 1}, 16);
  auto bias64 = TensorLayout::contiguous(t, {64});
  expect_rejection(BinaryBackwardDescriptor{K::kAdd, g3, g3, bias64, g3, bias64},
                   "does not collapse the reduced dims to one row stride");
  auto padded = TensorLayout::strided(t, {33, 128}, {132, 1}, 16);
  auto bias128 = TensorLayout::contiguous(t, {128});
  expect_rejection(BinaryBackwardDescriptor{K::kMul, TensorLayout::contiguous(t, {33, 128}), padded, bias128,
                                            TensorLayout::contiguous(t, {33, 128}), bias128},
                   "a row stride 132 is not a multiple of 8");
}

TEST(BinaryValidation, CmpNamesFieldAndValue) {
  const auto c = caps90();
  auto f32 = TensorLayout::contiguous(DType::kF32, {4, 8});
  auto b8 = TensorLayout::contiguous(DType::kBool, {4, 8});
  auto e4 = TensorLayout::contiguous(DType::kE4M3, {4, 8});
  using C = BinaryCmpKind;
  expect_error(BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{C::kEq, 0, 0, false, f32, f32, f32}),
               "out.dtype = f32 must be bool (binary_cmp)");
  expect_error(BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{C::kLt, 0, 0, false, e4, e4, b8}),
               "a.dtype = e4m3 is not supported by binary_cmp");
  expect_error(BinaryCmpPlan::select_for_caps(
                   c, BinaryCmpDescriptor{C::kEq, 0, 0, false, f32, TensorLayout::contiguous(DType::kF16, {4, 8}), b8}),
               "b.dtype = f16 differs from a.dtype = f32");
  expect_error(BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{C::kIsclose, -1, 0, false, f32, f32, b8}),
               "rtol = -1.000000 must be finite and >= 0");
  expect_error(BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{C::kIsclose, 0, kNaN, false, f32, f32, b8}),
               "atol = nan must be finite and >= 0");
  expect_error(BinaryCmpPlan::select_for_caps(
                   c, BinaryCmpDescriptor{C::kGe, 0, 0, false, f32, TensorLayout::contiguous(DType::kF32, {5}), b8}),
               "do not broadcast");
  expect_error(BinaryCmpPlan::select_for_caps(
                   c, BinaryCmpDescriptor{C::kGe, 0, 0, false, f32, f32, TensorLayout::contiguous(DType::kBool, {8})}),
               "out = bool[8] does not have the shape of broadcast(a, b)");
  expect_error(BinaryCmpPlan::select_for_caps(
                   c, BinaryCmpDescriptor{C::kGe, 0, 0, false, f32, f32, TensorLayout::strided(DType::kBool, {4, 8}, {1, 0})}),
               "maps several elements to one address");
  expect_error(BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{static_cast<C>(9), 0, 0, false, f32, f32, b8}),
               "kind = 9 is not a BinaryCmpKind");
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32, DType::kI16, DType::kI8,
                  DType::kU8, DType::kBool}) {
    auto l = TensorLayout::contiguous(t, {64, 64});
    auto p = BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{C::kIsclose, 1e-5, 1e-8, false, l, l,
                                                                   TensorLayout::contiguous(DType::kBool, {64, 64})});
    ASSERT_TRUE(p.has_value()) << dtype_name(t);
    EXPECT_NE(p->sku().name().find("vec16_contig"), std::string::npos) << p->sku().name();
    // a bias-shaped b picks the row path
    auto row = TensorLayout::contiguous(t, {64});
    auto pr = BinaryCmpPlan::select_for_caps(c, BinaryCmpDescriptor{C::kEq, 0, 0, false, l, row,
                                                                    TensorLayout::contiguous(DType::kBool, {64, 64})});
    ASSERT_TRUE(pr.has_value());
    EXPECT_NE(pr->sku().name().find("vec16_rows"), std::string::npos) << pr->sku().name();
  }
}

TEST(BinaryValidation, ParamNamesFieldAndValue) {
  const auto c = caps90();
  auto f32 = TensorLayout::contiguous(DType::kF32, {4, 8});
  auto i32 = TensorLayout::contiguous(DType::kI32, {4, 8});
  auto row = TensorLayout::contiguous(DType::kF32, {8});
  auto bad_w = TensorLayout::contiguous(DType::kF32, {3});
  using P = BinaryParamKind;
  expect_error(BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{P::kLerp, kNaN, f32, f32, {}, f32}),
               "scalar = nan is not finite (kind lerp)");
  expect_error(BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{P::kAddAlpha, 2, i32, i32, {}, i32}),
               "a.dtype = i32 is not supported by binary_param (f64, f32, f16, bf16)");
  expect_error(BinaryParamPlan::select_for_caps(
                   c, BinaryParamDescriptor{P::kLerpTensor, 0, f32, f32, TensorLayout::contiguous(DType::kF16, {8}), f32}),
               "weight.dtype = f16 differs from a.dtype = f32");
  expect_error(BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{P::kLerpTensor, 0, f32, f32, bad_w, f32}),
               "do not broadcast");
  expect_error(BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{P::kLerpTensor, 0, row, row, row, f32}),
               "out = f32[4,8] does not have the shape of broadcast(a, b, weight)");
  expect_error(BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{static_cast<P>(7), 0, f32, f32, {}, f32}),
               "kind = 7 is not a BinaryParamKind");
  auto ok = BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{P::kLerpTensor, 0, f32, row, row, f32});
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  EXPECT_NE(ok->sku().name().find("vec16_rows"), std::string::npos) << ok->sku().name();
  // the scalar kinds ignore `weight` (a default layout)
  EXPECT_TRUE(BinaryParamPlan::select_for_caps(c, BinaryParamDescriptor{P::kSubAlpha, -3, f32, row, {}, f32}).has_value());

  // backward
  BinaryParamBackwardDescriptor bd{P::kLerpTensor, 0, f32, f32, f32, f32, f32, f32, f32};
  EXPECT_TRUE(BinaryParamBackwardPlan::select_for_caps(c, bd).has_value());
  auto bad = bd;
  bad.grad_weight = row;
  expect_error(BinaryParamBackwardPlan::select_for_caps(c, bad),
               "grad_weight = f32[8] does not have the shape of grad_out = f32[4,8]");
  bad = bd;
  bad.grad_a = TensorLayout::contiguous(DType::kF16, {4, 8});
  expect_error(BinaryParamBackwardPlan::select_for_caps(c, bad), "grad_a.dtype = f16 differs from grad_out.dtype = f32");
  bad = bd;
  bad.grad_b = TensorLayout::strided(DType::kF32, {4, 8}, {0, 1});
  expect_error(BinaryParamBackwardPlan::select_for_caps(c, bad), "grad_b = f32[4,8]{0,1} maps several elements");
  bad = bd;
  bad.grad_out = TensorLayout::contiguous(DType::kF32, {4, 9});
  expect_error(BinaryParamBackwardPlan::select_for_caps(c, bad), "grad_out = f32[4,9] does not have the shape of");
  bad = bd;
  bad.kind = P::kAddAlpha;
  bad.scalar = kInf;
  expect_error(BinaryParamBackwardPlan::select_for_caps(c, bad), "scalar = inf is not finite (kind add_alpha)");
  // broadcast inputs into full-shape gradients: the row path for both maps
  BinaryParamBackwardDescriptor bb{P::kLerpTensor, 0, f32, f32, row, row, f32, f32, f32};
  auto pb = BinaryParamBackwardPlan::select_for_caps(c, bb);
  ASSERT_TRUE(pb.has_value()) << pb.error().to_string();
  EXPECT_NE(pb->sku().name().find("vec16_rows"), std::string::npos) << pb->sku().name();
  EXPECT_EQ(pb->workspace_size(), 0u);
}

TEST(BinaryValidation, DescriptorsHashAndPrint) {
  auto f32 = TensorLayout::contiguous(DType::kF32, {4, 8});
  auto b8 = TensorLayout::contiguous(DType::kBool, {4, 8});
  BinaryCmpDescriptor x{BinaryCmpKind::kIsclose, 1e-5, 1e-8, false, f32, f32, b8}, y = x;
  y.equal_nan = true;
  EXPECT_NE(x, y);
  EXPECT_NE(x.hash(), y.hash());
  EXPECT_NE(x.to_string().find("isclose(rtol="), std::string::npos) << x.to_string();
  BinaryParamDescriptor p{BinaryParamKind::kLerp, 0.25, f32, f32, {}, f32}, q = p;
  q.scalar = 0.5;
  EXPECT_NE(p.hash(), q.hash());
  EXPECT_NE(p.to_string().find("lerp(weight=0.250000"), std::string::npos) << p.to_string();
  BinaryParamBackwardDescriptor bd{BinaryParamKind::kLerpTensor, 0, f32, f32, f32, f32, f32, f32, f32};
  EXPECT_NE(bd.to_string().find("grad_weight="), std::string::npos) << bd.to_string();
  EXPECT_EQ(BinaryDescriptor({K::kXlogy, f32, f32, f32}).to_string().substr(0, 6), "xlogy(");
}

}  // namespace
}  // namespace baracuda
