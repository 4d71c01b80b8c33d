// Unit tests of the CPU oracle itself: known values, identities, and every backward
// formula against central finite differences of its forward.
#include <gtest/gtest.h>

#include <cmath>

#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {
namespace {

TEST(Reference, KnownUnaryValues) {
  EXPECT_NEAR(unary_value<double>(UnaryKind::kGeluErf, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(unary_value<double>(UnaryKind::kGeluErf, -1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(unary_value<double>(UnaryKind::kGeluTanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(unary_value<double>(UnaryKind::kSilu, 1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(unary_value<double>(UnaryKind::kExp, 1.0), 2.718281828459045, 1e-15);
  EXPECT_EQ(unary_value<double>(UnaryKind::kRelu, -3.0), 0.0);
  EXPECT_EQ(unary_value<double>(UnaryKind::kRelu, 2.5), 2.5);
  EXPECT_TRUE(std::isnan(unary_value<double>(UnaryKind::kRelu, std::nan(""))));
  EXPECT_EQ(unary_value<double>(UnaryKind::kGeluErf, 0.0), 0.0);
  EXPECT_EQ(unary_value<double>(UnaryKind::kExp, -INFINITY), 0.0);
}

TEST(Reference, KnownBinaryValues) {
  EXPECT_EQ(binary_value<double>(BinaryKind::kAdd, 1.5, 2.25), 3.75);
  EXPECT_EQ(binary_value<double>(BinaryKind::kSub, 1.5, 2.25), -0.75);
  EXPECT_EQ(binary_value<double>(BinaryKind::kMul, 1.5, -2.0), -3.0);
  EXPECT_EQ(binary_value<double>(BinaryKind::kDiv, 1.0, 4.0), 0.25);
  EXPECT_TRUE(std::isinf(binary_value<double>(BinaryKind::kDiv, 1.0, 0.0)));
}

// Central differences: f'(x) ~ (f(x+h) - f(x-h)) / 2h, h scaled to x.
double central_diff(double (*f)(double, const void*), const void* ctx, double x) {
  double h = 1e-6 * std::max(1.0, std::fabs(x));
  return (f(x + h, ctx) - f(x - h, ctx)) / (2 * h);
}

TEST(Reference, UnaryBackwardMatchesFiniteDifferences) {
  for (int k = 0; k < kNumUnaryKinds; ++k) {
    auto kind = static_cast<UnaryKind>(k);
    for (double x = -6.0; x <= 6.0; x += 0.37) {
      if (kind == UnaryKind::kRelu && std::fabs(x) < 1e-3) continue;  // kink at 0
      double fd = central_diff([](double v, const void* c) { return unary_value<double>(*static_cast<const UnaryKind*>(c), v); },
                               &kind, x);
      double an = unary_derivative<double>(kind, x);
      EXPECT_NEAR(an, fd, 1e-7 * std::max(1.0, std::fabs(fd))) << unary_kind_name(kind) << " at x = " << x;
    }
  }
}

TEST(Reference, BinaryBackwardMatchesFiniteDifferences) {
  struct Ctx {
    BinaryKind kind;
    double other;
    bool wrt_a;
  };
  for (int k = 0; k < kNumBinaryKinds; ++k) {
    auto kind = static_cast<BinaryKind>(k);
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
