// Unit tests (no GPU) of the ternary group: the reference's known values, finite
// differences of every backward (scalar formulas and the broadcast sums of whole tensors),
// the dispatch decision, and the select-time refusals naming field and value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/host_tensor.hpp"
#include "baracuda/reference/ternary.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr TernaryKind kAllKinds[] = {TernaryKind::kClamp, TernaryKind::kFma, TernaryKind::kAddcmul, TernaryKind::kAddcdiv};

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }
TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

HostTensor tensor(DType t, std::initializer_list<std::int64_t> shape, std::initializer_list<double> values) {
  HostTensor h(contig(t, shape));
  std::int64_t i = 0;
  for (double v : values) h.set(i++, v);
  return h;
}

// ------------------------------------------------------------------ known values
TEST(TernaryReference, ClampFollowsTorch) {
  using reference::ternary_value;
  EXPECT_EQ(ternary_value<double>(TernaryKind::kClamp, 5, 0, 3, 1), 3);
  EXPECT_EQ(ternary_value<double>(TernaryKind::kClamp, -5, 0, 3, 1), 0);
  EXPECT_EQ(ternary_value<double>(TernaryKind::kClamp, 2, 0, 3, 1), 2);
  EXPECT_EQ(ternary_value<double>(TernaryKind::kClamp, 2, 4, 1, 1), 1);  // min > max: max
  EXPECT_TRUE(std::isnan(ternary_value<double>(TernaryKind::kClamp, kNaN, 0, 3, 1)));
  EXPECT_TRUE(std::isnan(ternary_value<double>(TernaryKind::kClamp, 1, kNaN, 3, 1)));
  EXPECT_TRUE(std::isnan(ternary_value<double>(TernaryKind::kClamp, 1, 0, kNaN, 1)));
  EXPECT_EQ(ternary_value<double>(TernaryKind::kClamp, kInf, 0, 3, 1), 3);
  EXPECT_TRUE(std::signbit(ternary_value<double>(TernaryKind::kClamp, -0.0, 0.0, 1, 1)));  // equal: x kept
  EXPECT_EQ(reference::clamp_int(-7, -3, 4), -3);
  EXPECT_EQ(reference::clamp_int(9, -3, 4), 4);
  EXPECT_EQ(reference::clamp_int(9, 5, 4), 4);
}

TEST(TernaryReference, FmaRoundsOnceAddcmulTwice) {
  // a * b = 1 - 2^-46 exactly; in f32 the product rounds to 1, so a separate multiply and
  // add gives 0 while a fused one keeps -2^-46.
  const float a = 1.0f + std::ldexp(1.0f, -23), b = 1.0f - std::ldexp(1.0f, -23);
  EXPECT_EQ(reference::ternary_value<float>(TernaryKind::kFma, a, b, -1.0f, 1.0f), -std::ldexp(1.0f, -46));
  // addcmul(input=-1, t1=a, t2=b, value=1): (1 * a) * b rounds to 1, then + -1 = 0 (no contraction)
  EXPECT_EQ(reference::ternary_value<float>(TernaryKind::kAddcmul, -1.0f, a, b, 1.0f), 0.0f);
  EXPECT_EQ(reference::ternary_value<double>(TernaryKind::kAddcmul, 1, 2, 3, 0.5), 4);
  EXPECT_EQ(reference::ternary_value<double>(TernaryKind::kAddcdiv, 1, 3, 4, 2), 2.5);
  EXPECT_TRUE(std::isinf(reference::ternary_value<double>(TernaryKind::kAddcdiv, 1, 3, 0, 2)));
}

TEST(TernaryReference, TensorOpsBroadcast) {
  auto out = contig(DType::kF32, {2, 3});
  auto a = tensor(DType::kF32, {2, 3}, {-5, 0.5, 5, 1, 2, 3});
  auto lo = tensor(DType::kF32, {3}, {0, 0, 0});
  auto hi = tensor(DType::kF32, {2, 1}, {1, 2.5});
  auto r = reference::ternary(TernaryDescriptor{TernaryKind::kClamp, 1, a.layout(), lo.layout(), hi.layout(), out}, a, lo, hi);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exact, (std::vector<double>{0, 0.5, 1, 1, 2, 2.5}));
  auto ai = tensor(DType::kI8, {4}, {-100, 3, 100, 7});
  auto li = tensor(DType::kI8, {}, {-5});
  auto hii = tensor(DType::kI8, {}, {50});
  auto ri = reference::ternary(
      TernaryDescriptor{TernaryKind::kClamp, 1, ai.layout(), li.layout(), hii.layout(), contig(DType::kI8, {4})}, ai, li, hii);
  ASSERT_TRUE(ri.has_value());
  EXPECT_EQ(ri->exact, (std::vector<double>{-5, 3, 50, 7}));
}

TEST(TernaryReference, WhereAffineFill) {
  auto cond = tensor(DType::kBool, {3}, {1, 0, 1});
  auto a = tensor(DType::kF16, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = tensor(DType::kF16, {}, {-1});
  auto w = reference::where(WhereDescriptor{cond.layout(), a.layout(), b.layout(), contig(DType::kF16, {2, 3})}, cond, a, b);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->exact, (std::vector<double>{1, -1, 3, 4, -1, 6}));
  // where backward: grad_a (shape [2, 3]) = g where cond; grad_b (scalar) = sum of g where !cond
  auto g = tensor(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  WhereBackwardDescriptor wb{cond.layout(), g.layout(), contig(DType::kF32, {2, 3}), contig(DType::kF32, {})};
  auto wg = reference::where_backward(wb, cond, g);
  ASSERT_TRUE(wg.has_value());
  EXPECT_EQ(wg->grad_a.exact, (std::vector<double>{1, 0, 3, 4, 0, 6}));
  EXPECT_EQ(wg->grad_b.exact, (std::vector<double>{7}));
  // affine on u8 wraps: 3 * 100 + 7 = 307 -> 51; on i8: 2 * 100 + 0 = 200 -> -56
  auto xu = tensor(DType::kU8, {1}, {100});
  auto au = reference::affine(AffineDescriptor{3, 7, xu.layout(), xu.layout()}, xu);
  ASSERT_TRUE(au.has_value());
  EXPECT_EQ(au->exact[0], 51);
  auto xi = tensor(DType::kI8, {1}, {100});
  EXPECT_EQ(reference::affine(AffineDescriptor{2, 0, xi.layout(), xi.layout()}, xi)->exact[0], -56);
  auto xf = tensor(DType::kF32, {2}, {1.5, -2});
  auto af = reference::affine(AffineDescriptor{2, 0.25, xf.layout(), xf.layout()}, xf);
  EXPECT_EQ(af->exact, (std::vector<double>{3.25, -3.75}));
  // fill: bf16 through f32 (1/3 rounds to 0.333984375), bool(NaN) = true, integers exact
  EXPECT_EQ(reference::fill(FillDescriptor{contig(DType::kBF16, {2}), 1.0 / 3})->exact[0], 0.333984375);
  EXPECT_EQ(reference::fill(FillDescriptor{contig(DType::kBool, {1}), kNaN})->exact[0], 1);
  EXPECT_EQ(reference::fill(FillDescriptor{contig(DType::kI16, {1}), -32768})->exact[0], -32768);
  EXPECT_EQ(reference::fill(FillDescriptor{contig(DType::kE4M3, {1}), 300})->exact[0], 288);
  EXPECT_TRUE(std::isnan(reference::fill(FillDescriptor{contig(DType::kE4M3, {1}), 1000})->exact[0]));  // overflow: NaN
}

// ------------------------------------------------------------------ finite differences
// The scalar gradient formulas against central differences of the forward, g = 1.
TEST(TernaryReference, ScalarGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-3, 3);
  for (TernaryKind k : kAllKinds)
    for (int trial = 0; trial < 200; ++trial) {
      double x[3] = {u(rng), u(rng), u(rng)};
      if (k == TernaryKind::kAddcdiv && std::fabs(x[2]) < 0.3) x[2] = 0.3 + std::fabs(x[2]);
      if (k == TernaryKind::kClamp) {  // away from the kinks x = min, x = max, min = max
        if (std::fabs(x[0] - x[1]) < 0.05 || std::fabs(x[0] - x[2]) < 0.05 || std::fabs(x[1] - x[2]) < 0.05) continue;
      }
      const double value = 0.75;
      for (int which = 0; which < 3; ++which) {
        auto f = [&](double v) {
          double y[3] = {x[0], x[1], x[2]};
          y[which] = v;
          return reference::ternary_value<double>(k, y[0], y[1], y[2], value);
        };
        const double h = 1e-6 * std::max(1.0, std::fabs(x[which]));
        const double fd = (f(x[which] + h) - f(x[which] - h)) / (2 * h);
        const double grad = reference::ternary_grad<double>(k, which, 1.0, x[0], x[1], x[2], value);
        EXPECT_NEAR(grad, fd, 1e-6 * std::max(1.0, std::fabs(fd))) << ternary_kind_name(k) << " operand " << which;
      }
    }
}

// Whole tensors with broadcasting: d/d(operand[j]) of L = sum_i g_i * out_i, by central
// differences of reference::ternary, against reference::ternary_backward (which sums over
// the broadcast dims).
TEST(TernaryReference, BroadcastBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  const auto out = contig(DType::kF64, {2, 3});
  const TensorLayout layouts[3] = {contig(DType::kF64, {2, 3}), contig(DType::kF64, {3}), contig(DType::kF64, {2, 1})};
  for (TernaryKind k : kAllKinds)
    for (int perm = 0; perm < 3; ++perm) {  // rotate which operand is broadcast how
      const TensorLayout la = layouts[perm % 3], lb = layouts[(perm + 1) % 3], lc = layouts[(perm + 2) % 3];
      HostTensor a(la), b(lb), c(lc), g(out);
      reference::fill_random(a, rng, -2, 2, false);
      reference::fill_random(b, rng, -2, 2, false);
      reference::fill_random(c, rng, 0.5, 2, false);
      reference::fill_random(g, rng, -1, 1, false);
      if (k == TernaryKind::kClamp) {  // bounds: min in [-2, -0.5], max in [0.5, 2], x away from both
        for (std::int64_t i = 0; i < b.layout().numel(); ++i) b.set(i, -0.5 - std::fabs(b.get(i)) * 0.75);
        for (std::int64_t i = 0; i < a.layout().numel(); ++i) a.set(i, a.get(i) * 1.2);
      }
      TernaryDescriptor fd{k, 0.75, la, lb, lc, out};
      TernaryBackwardDescriptor bd{k, 0.75, out, la, lb, lc, la, lb, lc};
      auto grads = reference::ternary_backward(bd, g, a, b, c);
      ASSERT_TRUE(grads.has_value());
      HostTensor* ops[3] = {&a, &b, &c};
      for (int which = 0; which < 3; ++which) {
        HostTensor& t = *ops[which];
        for (std::int64_t j = 0; j < t.layout().numel(); ++j) {
          const double v = t.get(j);
          auto loss = [&](double x) {
            t.set(j, x);
            auto r = reference::ternary(fd, a, b, c).value();
            double l = 0;
            for (std::int64_t i = 0; i < out.numel(); ++i) l += g.get(i) * r.exact[static_cast<std::size_t>(i)];
            return l;
          };
          const double h = 1e-6;
          const double num = (loss(v + h) - loss(v - h)) / (2 * h);
          t.set(j, v);
          const double got = grads->grad[static_cast<std::size_t>(which)].exact[static_cast<std::size_t>(j)];
          EXPECT_NEAR(got, num, 1e-6 * std::max(1.0, std::fabs(num)))
              << ternary_kind_name(k) << " perm " << perm << " operand " << which << " element " << j;
        }
      }
    }
}

TEST(TernaryReference, WhereBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(13);
  auto cond = tensor(DType::kBool, {2, 1}, {1, 0});
  const auto out = contig(DType::kF64, {2, 3});
  HostTensor a(contig(DType::kF64, {3})), b(out), g(out);
  reference::fill_random(a, rng, -2, 2, false);
  reference::fill_random(b, rng, -2, 2, false);
  reference::fill_random(g, rng, -1, 1, false);
  WhereDescriptor fd{cond.layout(), a.layout(), b.layout(), out};
  WhereBackwardDescriptor bd{cond.layout(), out, a.layout(), b.layout()};
  auto grads = reference::where_backward(bd, cond, g);
  ASSERT_TRUE(grads.has_value());
  HostTensor* ops[2] = {&a, &b};
  for (int which = 0; which < 2; ++which) {
    HostTensor& t = *ops[which];
    for (std::int64_t j = 0; j < t.layout().numel(); ++j) {
      const double v = t.get(j);
      auto loss = [&](double x) {
        t.set(j, x);
        auto r = reference::where(fd, cond, a, b).value();
        double l = 0;
        for (std::int64_t i = 0; i < out.numel(); ++i) l += g.get(i) * r.exact[static_cast<std::size_t>(i)];
        return l;
      };
      const double num = (loss(v + 1e-6) - loss(v - 1e-6)) / 2e-6;
      t.set(j, v);
      const auto& r = which == 0 ? grads->grad_a : grads->grad_b;
      EXPECT_NEAR(r.exact[static_cast<std::size_t>(j)], num, 1e-7) << "operand " << which << " element " << j;
    }
  }
}

// ------------------------------------------------------------------ dispatch
TEST(TernaryDispatch, PathsAndWorkspace) {
  auto c = caps90();
  auto big = contig(DType::kBF16, {4096, 8192});
  auto plan = TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kAddcmul, 0.5, big, big, big, big});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().name(), "ternary.fwd.vec16_contig[bf16,f32].sm80+");
  auto row = contig(DType::kBF16, {8192});
  auto clamp = TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kClamp, 1, big, row, row, big});
  ASSERT_TRUE(clamp.has_value());
  EXPECT_EQ(clamp->sku().impl, "vec16_rows");
  // backward: no broadcast -> one contiguous map per gradient, no workspace
  auto bwd = TernaryBackwardPlan::select_for_caps(
      c, TernaryBackwardDescriptor{TernaryKind::kFma, 1, big, big, big, big, big, big, big});
  ASSERT_TRUE(bwd.has_value());
  EXPECT_EQ(bwd->sku().impl, "vec16_contig");
  EXPECT_EQ(bwd->workspace_size(), 0u);
  // a broadcast operand: strided map into the workspace, then the two-pass sum
  auto rb = TernaryBackwardPlan::select_for_caps(
      c, TernaryBackwardDescriptor{TernaryKind::kClamp, 1, big, big, row, row, big, row, row});
  ASSERT_TRUE(rb.has_value());
  EXPECT_EQ(rb->sku().impl, "strided_i32");
  EXPECT_GE(rb->workspace_size(), static_cast<std::size_t>(4096) * 8192 * 4);
  EXPECT_EQ(rb->workspace_size() % kWorkspaceAlignment, 0u);
  auto cond = contig(DType::kBool, {4096, 8192});
  auto where = WherePlan::select_for_caps(c, WhereDescriptor{cond, big, big, big});
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->sku().name(), "where.fwd.vec16_contig[bf16,bf16].sm80+");
  auto fill = FillPlan::select_for_caps(c, FillDescriptor{TensorLayout::strided(DType::kE4M3, {64, 64}, {1, 64}), 2});
  ASSERT_TRUE(fill.has_value());
  EXPECT_EQ(fill->sku().impl, "strided_i32");
  auto affine = AffinePlan::select_for_caps(c, AffineDescriptor{2, 1, big, big});
  ASSERT_TRUE(affine.has_value());
  EXPECT_EQ(affine->sku().impl, "vec16_contig");
  auto wb = WhereBackwardPlan::select_for_caps(c, WhereBackwardDescriptor{cond, big, row, big});
  ASSERT_TRUE(wb.has_value());
  EXPECT_EQ(wb->sku().impl, "vec16_contig");  // both maps read dense cond and grad_out
  EXPECT_GT(wb->workspace_size(), 0u);
}

// ------------------------------------------------------------------ refusals
void expect_error(const auto& result, const std::string& needle) {
  ASSERT_FALSE(result.has_value()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(result.error().code(), Code::kInvalidArgument) << result.error().to_string();
  EXPECT_NE(result.error().message().find(needle), std::string::npos) << result.error().message();
}

TEST(TernaryValidation, NamesFieldAndValue) {
  auto c = caps90();
  auto f32 = contig(DType::kF32, {4, 8});
  auto f16 = contig(DType::kF16, {4, 8});
  auto i32 = contig(DType::kI32, {4, 8});
  auto other = contig(DType::kF32, {4, 9});
  auto bad_align = TensorLayout::contiguous(DType::kF32, {4, 8}, 3);
  auto overlapping = TensorLayout::strided(DType::kF32, {4, 8}, {0, 1});
  // ternary
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kFma, 1, i32, i32, i32, i32}),
               "a.dtype = i32 is not supported by ternary kind fma");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kClamp, 1, f32, f16, f32, f32}),
               "b.dtype = f16 differs from a.dtype = f32");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kClamp, 1, f32, f32, other, f32}), "c");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kClamp, 1, f32, f32, f32, other}),
               "out = f32[4,9]");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kAddcmul, kNaN, f32, f32, f32, f32}),
               "value = nan is not finite");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{static_cast<TernaryKind>(9), 1, f32, f32, f32, f32}),
               "kind = 9 is not a TernaryKind");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kClamp, 1, f32, f32, f32, overlapping}),
               "out = f32[4,8]{0,1} maps several elements to one address");
  expect_error(TernaryPlan::select_for_caps(c, TernaryDescriptor{TernaryKind::kClamp, 1, bad_align, f32, f32, f32}),
               "alignment");
  // ternary backward
  expect_error(TernaryBackwardPlan::select_for_caps(
                   c, TernaryBackwardDescriptor{TernaryKind::kClamp, 1, i32, i32, i32, i32, i32, i32, i32}),
               "grad_out.dtype = i32");
  expect_error(TernaryBackwardPlan::select_for_caps(
                   c, TernaryBackwardDescriptor{TernaryKind::kFma, 1, f32, f32, f32, f32, other, f32, f32}),
               "grad_a = f32[4,9] does not have the shape of a = f32[4,8]");
  expect_error(TernaryBackwardPlan::select_for_caps(
                   c, TernaryBackwardDescriptor{TernaryKind::kFma, 1, f32, f32, f32, f32, f32, f16, f32}),
               "grad_b.dtype = f16");
  expect_error(TernaryBackwardPlan::select_for_caps(
                   c, TernaryBackwardDescriptor{TernaryKind::kFma, 1, f32, f32, f32, f32, f32, f32, overlapping}),
               "grad_c");
  // where
  expect_error(WherePlan::select_for_caps(c, WhereDescriptor{f32, f32, f32, f32}), "cond.dtype = f32 must be bool");
  auto cond = contig(DType::kBool, {4, 8});
  expect_error(WherePlan::select_for_caps(c, WhereDescriptor{cond, f32, f16, f32}), "b.dtype = f16 differs from a.dtype");
  expect_error(WherePlan::select_for_caps(c, WhereDescriptor{cond, f32, other, f32}), "b");
  expect_error(WherePlan::select_for_caps(c, WhereDescriptor{cond, contig(DType::kC64, {4, 8}), contig(DType::kC64, {4, 8}),
                                                             contig(DType::kC64, {4, 8})}),
               "a.dtype = c64 is not supported by where");
  expect_error(WhereBackwardPlan::select_for_caps(c, WhereBackwardDescriptor{cond, i32, i32, i32}), "grad_out.dtype = i32");
  expect_error(WhereBackwardPlan::select_for_caps(c, WhereBackwardDescriptor{cond, f32, other, f32}), "grad_a");
  expect_error(WhereBackwardPlan::select_for_caps(c, WhereBackwardDescriptor{cond, f32, f32, overlapping}), "grad_b");
  // affine
  expect_error(AffinePlan::select_for_caps(c, AffineDescriptor{1.5, 0, i32, i32}), "alpha = 1.5 must be an integer");
  expect_error(AffinePlan::select_for_caps(c, AffineDescriptor{1, kInf, f32, f32}), "beta = inf is not finite");
  expect_error(AffinePlan::select_for_caps(c, AffineDescriptor{1, 0, f32, f16}), "y.dtype = f16 differs from x.dtype");
  expect_error(AffinePlan::select_for_caps(c, AffineDescriptor{1, 0, contig(DType::kBool, {2}), contig(DType::kBool, {2})}),
               "x.dtype = bool is not supported by affine");
  expect_error(AffinePlan::select_for_caps(c, AffineDescriptor{1, 0, other, f32}), "x");
  // fill
  expect_error(FillPlan::select_for_caps(c, FillDescriptor{contig(DType::kU8, {4}), 256}),
               "value = 256 is not an integer in the range of y.dtype = u8");
  expect_error(FillPlan::select_for_caps(c, FillDescriptor{contig(DType::kI32, {4}), 0.5}), "value = 0.5");
  expect_error(FillPlan::select_for_caps(c, FillDescriptor{overlapping, 1}), "y = f32[4,8]{0,1} maps several elements");
  expect_error(FillPlan::select_for_caps(c, FillDescriptor{contig(DType::kS4, {4}), 1}), "y.dtype = s4 is not supported by fill");
}

}  // namespace
}  // namespace baracuda
