// GumbelSoftmaxPlan / SparsemaxPlan (and their backward) on the CPU: the oracle (Philox
// known answers, the Gumbel noise's moments, known values, PyTorch's hard / straight-through
// rules, sparsemax's projection properties and non-finite rows, every backward against
// central finite differences of its forward, gumbel with fixed noise), the dispatch decision
// from caps, and select-time refusals naming the field and its value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gumbel_softmax.hpp"
#include "baracuda/reference/sparsemax.hpp"
#include "select_refusals.hpp"

namespace baracuda::reference {
namespace {

TensorLayout c64(std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kF64, s); }
std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Random123's known-answer vectors for philox4x32 with 10 rounds (kat_vectors).
TEST(GumbelReference, PhiloxKnownAnswers) {
  using A4 = std::array<std::uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (A4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (A4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// The noise the plan draws is Gumbel(0, 1): mean = Euler's gamma, variance = pi^2 / 6, and
// P(g <= 0) = exp(-1); (seed, offset) select independent streams; u stays inside (0, 1).
TEST(GumbelReference, PhiloxNoiseIsGumbel) {
  const auto l = c64({200000});
  HostTensor x(l);
  for (std::int64_t i = 0; i < l.numel(); ++i) x.set(i, 0.0);
  for (DType t : {DType::kF32, DType::kF64}) {
    auto lt = TensorLayout::contiguous(t, {200000});
    HostTensor xt(lt);
    for (std::int64_t i = 0; i < lt.numel(); ++i) xt.set(i, 0.0);
    auto r = gumbel_softmax(GumbelSoftmaxDescriptor{.x = lt, .y = lt}, xt, nullptr, 1234, 7).value();
    double mean = 0, var = 0, below = 0;
    for (double g : r.g) mean += g;
    mean /= static_cast<double>(r.g.size());
    for (double g : r.g) {
      var += (g - mean) * (g - mean);
      below += g <= 0;
    }
    var /= static_cast<double>(r.g.size());
    below /= static_cast<double>(r.g.size());
    // standard errors: mean 1.28 / sqrt(n) = 0.0029, variance ~0.011, proportion 0.0011
    EXPECT_NEAR(mean, 0.5772156649, 0.015) << dtype_name(t);
    EXPECT_NEAR(var, 1.6449340668, 0.06) << dtype_name(t);
    EXPECT_NEAR(below, std::exp(-1.0), 0.006) << dtype_name(t);
    auto r2 = gumbel_softmax(GumbelSoftmaxDescriptor{.x = lt, .y = lt}, xt, nullptr, 1234, 8).value();
    int same = 0;
    for (std::size_t i = 0; i < r.g.size(); ++i) same += r.g[i] == r2.g[i];
    EXPECT_LT(same, 10) << "offset 7 and 8 drew the same noise";
  }
  for (std::uint64_t i = 0; i < 4096; ++i) {
    const double u = gumbel_uniform(DType::kBF16, ~0ull, ~0ull - i, static_cast<std::int64_t>(i * 977));
    EXPECT_TRUE(u > 0 && u < 1);
  }
}

// Known values with caller noise; hard gives the one-hot of the first argmax of z.
TEST(GumbelReference, KnownValuesWithNoise) {
  const auto l = c64({2, 3});
  HostTensor x(l), g(l);
  const double xv[6] = {1, 2, 3, 0, 0, 0}, gv[6] = {0.5, 0, -0.5, 1, 1, 0};
  for (int i = 0; i < 6; ++i) {
    x.set(i, xv[i]);
    g.set(i, gv[i]);
  }
  GumbelSoftmaxDescriptor d{.x = l, .y = l, .y_soft = l, .noise = l, .tau = 2.0, .noise_source = GumbelNoise::kTensor};
  auto soft = gumbel_softmax(d, x, &g, 0, 0).value();
  const double s = std::exp(0.75) + std::exp(1.0) + std::exp(1.25);
  EXPECT_NEAR(soft.y.exact[0], std::exp(0.75) / s, 1e-15);
  EXPECT_NEAR(soft.y.exact[2], std::exp(1.25) / s, 1e-15);
  d.hard = true;
  d.save_soft = true;
  auto hard = gumbel_softmax(d, x, &g, 0, 0).value();
  const double want[6] = {0, 0, 1, 1, 0, 0};  // row 1: a tie of z = 0.5 at 0 and 1: the first
  for (int i = 0; i < 6; ++i) EXPECT_EQ(hard.y.exact[at(i)], want[i]) << i;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(hard.y_soft.exact[at(i)], soft.y.exact[at(i)]) << i;
}

// L = sum(w * y_soft(x)) with the noise fixed; the backward of (w, y_soft) must be dL/dx by
// central differences. Hard mode's gradient is the same (straight-through): the backward
// takes the y_soft the hard forward saved.
TEST(GumbelReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-2, 2);
  const auto l = c64({2, 5, 3});
  for (bool hard : {false, true})
    for (int axis : {1, -1, 0})
      for (double tau : {1.0, 0.3}) {
        HostTensor x(l), g(l), w(l), ys(l);
        for (std::int64_t i = 0; i < 30; ++i) {
          x.set(i, u(rng));
          g.set(i, u(rng));
          w.set(i, u(rng));
        }
        GumbelSoftmaxDescriptor fd{.x = l, .y = l, .y_soft = l, .noise = l, .axis = axis, .tau = tau, .hard = hard,
                                   .save_soft = hard, .noise_source = GumbelNoise::kTensor};
        auto loss = [&](const HostTensor& xx) {
          auto r = gumbel_softmax(fd, xx, &g, 0, 0).value();
          double s = 0;
          for (std::int64_t i = 0; i < 30; ++i) s += w.get(i) * r.y_soft.exact[at(i)];
          return s;
        };
        auto fy = gumbel_softmax(fd, x, &g, 0, 0).value();
        for (std::int64_t i = 0; i < 30; ++i) ys.set(i, fy.y_soft.exact[at(i)]);
        auto gx = gumbel_softmax_backward(GumbelSoftmaxBackwardDescriptor{l, l, l, axis, tau}, w, ys).value();
        const double h = 1e-6;
        for (std::int64_t i = 0; i < 30; ++i) {
          HostTensor xp = x, xm = x;
          xp.set(i, x.get(i) + h);
          xm.set(i, x.get(i) - h);
          EXPECT_NEAR(gx.exact[at(i)], (loss(xp) - loss(xm)) / (2 * h), 1e-7)
              << (hard ? "hard" : "soft") << " axis " << axis << " tau " << tau << " i " << i;
        }
      }
}

TEST(SparsemaxReference, KnownValuesAndProjection) {
  const auto l = c64({3, 3});
  HostTensor x(l);
  const double v[9] = {1, 0.5, -1, 10, 10, 10, 0.2, 3.0, -4};
  for (int i = 0; i < 9; ++i) x.set(i, v[i]);
  auto y = sparsemax(SparsemaxDescriptor{l, l, -1}, x).value();
  const double want[9] = {0.75, 0.25, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1, 0};
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(y.exact[at(i)], want[i], 1e-15) << i;
  // random rows: y >= 0, sums to 1, and shifting x leaves y unchanged
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-3, 3);
  const auto r = c64({7, 50});
  HostTensor a(r), b(r);
  for (std::int64_t i = 0; i < r.numel(); ++i) {
    a.set(i, u(rng));
    b.set(i, a.get(i) + 1000.0);
  }
  auto ya = sparsemax(SparsemaxDescriptor{r, r, 1}, a).value(), yb = sparsemax(SparsemaxDescriptor{r, r, 1}, b).value();
  for (int row = 0; row < 7; ++row) {
    double s = 0;
    int support = 0;
    for (int k = 0; k < 50; ++k) {
      const double e = ya.exact[at(row * 50 + k)];
      EXPECT_GE(e, 0.0);
      s += e;
      support += e > 0;
      EXPECT_NEAR(e, yb.exact[at(row * 50 + k)], 1e-12);
    }
    EXPECT_NEAR(s, 1.0, 1e-14);
    EXPECT_GE(support, 1);
  }
}

// A row with a NaN or +inf, or only -inf, is NaN; -inf elements of a finite row give 0.
TEST(SparsemaxReference, NonFiniteRows) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto l = c64({4, 2});
  HostTensor x(l);
  const double v[8] = {-inf, -inf, 1.0, -inf, std::nan(""), 0.0, inf, 0.0};
  for (int i = 0; i < 8; ++i) x.set(i, v[i]);
  auto y = sparsemax(SparsemaxDescriptor{l, l, 1}, x).value();
  EXPECT_TRUE(std::isnan(y.exact[0]) && std::isnan(y.exact[1]));
  EXPECT_EQ(y.exact[2], 1.0);
  EXPECT_EQ(y.exact[3], 0.0);
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(y.exact[at(i)])) << i;
}

// L = sum(w * sparsemax(x)); random rows (no element within h of the threshold) with
// supports of several elements.
TEST(SparsemaxReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(-0.4, 0.4);
  const auto l = c64({2, 6, 3});
  for (int axis : {1, -1, 0}) {
    HostTensor x(l), w(l), y(l);
    for (std::int64_t i = 0; i < 36; ++i) {
      x.set(i, u(rng));
      w.set(i, u(rng));
    }
    const SparsemaxDescriptor fd{l, l, axis};
    auto loss = [&](const HostTensor& xx) {
      auto r = sparsemax(fd, xx).value();
      double s = 0;
      for (std::int64_t i = 0; i < 36; ++i) s += w.get(i) * r.exact[at(i)];
      return s;
    };
    auto fy = sparsemax(fd, x).value();
    int in_support = 0;
    for (std::int64_t i = 0; i < 36; ++i) {
      y.set(i, fy.exact[at(i)]);
      in_support += fy.exact[at(i)] > 0;
    }
    EXPECT_GT(in_support, 18) << "the check should see supports of several elements";
    auto gx = sparsemax_backward(SparsemaxBackwardDescriptor{l, l, l, axis}, w, y).value();
    const double h = 1e-7;
    for (std::int64_t i = 0; i < 36; ++i) {
      HostTensor xp = x, xm = x;
      xp.set(i, x.get(i) + h);
      xm.set(i, x.get(i) - h);
      EXPECT_NEAR(gx.exact[at(i)], (loss(xp) - loss(xm)) / (2 * h), 1e-6) << "axis " << axis << " i " << i;
    }
  }
}

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }
template <class PlanT>
std::string impl_for(int sm, const typename PlanT::Descriptor& d) {
  auto p = PlanT::select_for_caps(caps(sm), d);
  if (p) EXPECT_EQ(p->workspace_size(), 0u) << p->sku().name();
  return p ? p->sku().impl : "ERROR " + p.error().to_string();
}

TEST(GumbelSparsemaxPlanSelect, RowLengthsAndAxes) {
  auto bf = [](std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kBF16, s); };
  auto gum = [](TensorLayout l, int axis = -1) { return GumbelSoftmaxDescriptor{.x = l, .y = l, .axis = axis}; };
  auto gbwd = [](TensorLayout l, int axis = -1) { return GumbelSoftmaxBackwardDescriptor{l, l, l, axis}; };
  auto spm = [](TensorLayout l, int axis = -1) { return SparsemaxDescriptor{l, l, axis}; };
  auto sbwd = [](TensorLayout l, int axis = -1) { return SparsemaxBackwardDescriptor{l, l, l, axis}; };
  for (int sm : {80, 89, 90}) {
    EXPECT_EQ(impl_for<GumbelSoftmaxPlan>(sm, gum(bf({4096, 1000}))), "warp_row_vec16");
    EXPECT_EQ(impl_for<GumbelSoftmaxPlan>(sm, gum(bf({16384, 8192}))), "block_row_vec16");
    EXPECT_EQ(impl_for<GumbelSoftmaxBackwardPlan>(sm, gbwd(bf({16384, 8192}))), "block_row_vec16");
    EXPECT_EQ(impl_for<GumbelSoftmaxPlan>(sm, gum(bf({4096, 131072}))), "block_loop");
    EXPECT_EQ(impl_for<SparsemaxPlan>(sm, spm(bf({16384, 8192}))), "block_row_vec16");
    EXPECT_EQ(impl_for<SparsemaxPlan>(sm, spm(bf({4, 16384}))), "block_row_vec16");
    EXPECT_EQ(impl_for<SparsemaxBackwardPlan>(sm, sbwd(bf({4, 16384}))), "block_row_vec16");
    EXPECT_EQ(impl_for<SparsemaxPlan>(sm, spm(bf({2, 262144}))), "block_loop");
    EXPECT_EQ(impl_for<SparsemaxPlan>(sm, spm(bf({33, 7}))), "block_loop");  // not a whole vector
    EXPECT_EQ(impl_for<SparsemaxPlan>(sm, spm(bf({8, 64, 49}), 1)), "block_loop");  // strided axis
    EXPECT_EQ(impl_for<SparsemaxBackwardPlan>(sm, sbwd(bf({64, 512}))), "warp_row_vec16");
  }
  // the caller's noise tensor must also be unit-stride and aligned for the register rows
  const auto x = bf({64, 512});
  GumbelSoftmaxDescriptor d{.x = x, .y = x, .noise = TensorLayout::strided(DType::kBF16, {64, 512}, {1, 64}),
                            .noise_source = GumbelNoise::kTensor};
  auto reports = GumbelSoftmaxPlan::candidates(caps(90), d).value();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_NE(reports[0].rejection.find("noise stride along axis 1 = 64 (register rows need 1)"), std::string::npos)
      << reports[0].rejection;
  EXPECT_TRUE(reports[2].rejection.empty());
  auto p = GumbelSoftmaxPlan::select_for_caps(caps(90), gum(bf({4096, 131072})));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->sku().name(), "gumbel_softmax.fwd.block_loop[bf16,f32].sm80+");
  // the backward runs softmax's backward table, named as gumbel_softmax's
  auto gb = GumbelSoftmaxBackwardPlan::select_for_caps(caps(90), gbwd(bf({4096, 131072})));
  ASSERT_TRUE(gb.has_value());
  EXPECT_EQ(gb->sku().name(), "gumbel_softmax.bwd.tma_row_vec16[bf16,f32].sm90+");
  auto gb80 = GumbelSoftmaxBackwardPlan::select_for_caps(caps(80), gbwd(bf({4096, 131072})));
  ASSERT_TRUE(gb80.has_value());
  EXPECT_EQ(gb80->sku().impl, "split_row_vec16");
  EXPECT_GT(gb80->workspace_size(), 0u);
  EXPECT_EQ(impl_for<GumbelSoftmaxBackwardPlan>(90, gbwd(bf({8, 64, 49}), 1)), "column");  // strided axis
  auto q = SparsemaxBackwardPlan::select_for_caps(caps(90), sbwd(TensorLayout::contiguous(DType::kF64, {4, 64})));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->sku().name(), "sparsemax.bwd.warp_row_vec16[f64,f64].sm80+");
}

}  // namespace
}  // namespace baracuda::reference

namespace baracuda {
namespace {

using test::expect_select_refusals;

TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

TEST(SelectRefusals, GumbelSoftmaxPlan) {
  using D = GumbelSoftmaxDescriptor;
  const auto x = contig(DType::kF32, {2, 3, 4});
  const D valid{.x = x, .y = x, .y_soft = x, .noise = x, .axis = 1, .tau = 0.5, .hard = true, .save_soft = true,
                .noise_source = GumbelNoise::kTensor};
  expect_select_refusals<GumbelSoftmaxPlan>(
      valid,
      {{"dtype", [](D& d) { d.y = contig(DType::kF16, {2, 3, 4}); }, "y.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.noise = contig(DType::kBF16, {2, 3, 4}); }, "noise.dtype = bf16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.y_soft = contig(DType::kF64, {2, 3, 4}); }, "y_soft.dtype = f64 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.x = d.y = d.y_soft = d.noise = contig(DType::kI32, {2, 3, 4}); },
        "x.dtype = i32 is not supported by gumbel_softmax"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {2, 3, 5}); }, "y = f32[2,3,5] does not have the shape of x = f32[2,3,4]"},
       {"shape", [](D& d) { d.noise = contig(DType::kF32, {2, 4, 4}); }, "noise = f32[2,4,4] does not have the shape of x"},
       {"shape", [](D& d) { d.y_soft = contig(DType::kF32, {3, 4}); }, "y_soft = f32[3,4] does not have the shape of x"},
       {"axis", [](D& d) { d.axis = 3; }, "axis = 3 is out of range for x of rank 3 (needs -3..2)"},
       {"axis", [](D& d) { d.axis = -4; }, "axis = -4 is out of range for x of rank 3"},
       {"tau", [](D& d) { d.tau = 0; }, "tau = 0 must be > 0 and finite"},
       {"tau", [](D& d) { d.tau = -1.5; }, "tau = -1.5 must be > 0 and finite"},
       {"tau", [](D& d) { d.tau = std::nan(""); }, "tau = nan must be > 0 and finite"},
       {"tau", [](D& d) { d.tau = std::numeric_limits<double>::infinity(); }, "tau = inf must be > 0 and finite"},
       {"hard", [](D& d) { d.hard = false; }, "save_soft = true needs hard = true"},
       {"noise", [](D& d) { d.noise_source = static_cast<GumbelNoise>(9); }, "noise_source = 9 is not a GumbelNoise"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF32, {2, 3, 4}, {0, 4, 1}); },
        "y = f32[2,3,4]{0,4,1} maps several elements to one address"},
       {"stride", [](D& d) { d.y_soft = TensorLayout::strided(DType::kF32, {2, 3, 4}, {12, 0, 1}); },
        "y_soft = f32[2,3,4]{12,0,1} maps several elements to one address"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF32, {2, 3, 4}, {std::int64_t{1} << 62, 4, 1}); },
        "x = f32[2,3,4]{4611686018427387904,4,1} is too large for 64-bit indexing"}});
  // unused operands are not validated: a soft Philox descriptor ignores y_soft and noise
  D soft{.x = x, .y = x, .y_soft = contig(DType::kI32, {9}), .noise = contig(DType::kU8, {1})};
  EXPECT_TRUE(GumbelSoftmaxPlan::select_for_caps(DeviceCaps::for_arch(90).value(), soft).has_value());
}

TEST(SelectRefusals, GumbelSoftmaxBackwardPlan) {
  using D = GumbelSoftmaxBackwardDescriptor;
  const auto x = contig(DType::kBF16, {2, 3, 4});
  expect_select_refusals<GumbelSoftmaxBackwardPlan>(
      D{x, x, x, -1, 0.7},
      {{"dtype", [](D& d) { d.y_soft = contig(DType::kF16, {2, 3, 4}); }, "y_soft.dtype = f16 differs from grad_y.dtype = bf16"},
       {"dtype", [](D& d) { d.grad_y = d.y_soft = d.grad_x = contig(DType::kU8, {2, 3, 4}); },
        "grad_y.dtype = u8 is not supported by gumbel_softmax_backward"},
       {"shape", [](D& d) { d.grad_x = contig(DType::kBF16, {2, 4, 4}); }, "grad_x = bf16[2,4,4] does not have the shape of grad_y"},
       {"axis", [](D& d) { d.axis = 5; }, "axis = 5 is out of range for grad_y of rank 3"},
       {"tau", [](D& d) { d.tau = -0.0; }, "must be > 0 and finite"},
       {"shape", [](D& d) { d.y_soft = contig(DType::kBF16, {2, 3, 3}); }, "y_soft = bf16[2,3,3] does not have the shape of grad_y"},
       {"dtype", [](D& d) { d.grad_x = contig(DType::kF32, {2, 3, 4}); }, "grad_x.dtype = f32 differs from grad_y.dtype = bf16"},
       {"stride", [](D& d) { d.y_soft = TensorLayout::strided(DType::kBF16, {2, 3, 4}, {std::int64_t{1} << 62, 4, 1}); },
        "y_soft = bf16[2,3,4]{4611686018427387904,4,1} is too large for 64-bit indexing"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kBF16, {2, 3, 4}, {12, 0, 1}); },
        "grad_x = bf16[2,3,4]{12,0,1} maps several elements to one address"}});
}

TEST(SelectRefusals, SparsemaxPlan) {
  using D = SparsemaxDescriptor;
  const auto x = contig(DType::kF16, {2, 3, 4});
  expect_select_refusals<SparsemaxPlan>(
      D{x, x, 0},
      {{"dtype", [](D& d) { d.y = contig(DType::kBF16, {2, 3, 4}); }, "y.dtype = bf16 differs from x.dtype = f16"},
       {"dtype", [](D& d) { d.x = d.y = contig(DType::kI64, {2, 3, 4}); }, "x.dtype = i64 is not supported by sparsemax"},
       {"shape", [](D& d) { d.y = contig(DType::kF16, {2, 3}); }, "y = f16[2,3] does not have the shape of x = f16[2,3,4]"},
       {"axis", [](D& d) { d.axis = 3; }, "axis = 3 is out of range for x of rank 3 (needs -3..2)"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF16, {2, 3, 4}, {4, 4, 1}); },
        "y = f16[2,3,4]{4,4,1} maps several elements to one address"},
       {"axis", [](D& d) { d.axis = -4; }, "axis = -4 is out of range for x of rank 3 (needs -3..2)"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF16, {2, 3, 4}, {std::int64_t{1} << 62, 4, 1}); },
        "x = f16[2,3,4]{4611686018427387904,4,1} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, SparsemaxBackwardPlan) {
  using D = SparsemaxBackwardDescriptor;
  const auto x = contig(DType::kF64, {5, 7});
  expect_select_refusals<SparsemaxBackwardPlan>(
      D{x, x, x, -2},
      {{"dtype", [](D& d) { d.y = contig(DType::kF32, {5, 7}); }, "y.dtype = f32 differs from grad_y.dtype = f64"},
       {"dtype", [](D& d) { d.grad_y = d.y = d.grad_x = contig(DType::kBool, {5, 7}); },
        "grad_y.dtype = bool is not supported by sparsemax_backward"},
       {"shape", [](D& d) { d.y = contig(DType::kF64, {7, 5}); }, "y = f64[7,5] does not have the shape of grad_y = f64[5,7]"},
       {"axis", [](D& d) { d.axis = 2; }, "axis = 2 is out of range for grad_y of rank 2 (needs -2..1)"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kF64, {5, 7}, {0, 1}); },
        "grad_x = f64[5,7]{0,1} maps several elements to one address"},
       {"dtype", [](D& d) { d.grad_x = contig(DType::kBF16, {5, 7}); }, "grad_x.dtype = bf16 differs from grad_y.dtype = f64"},
       {"shape", [](D& d) { d.grad_x = contig(DType::kF64, {5, 8}); }, "grad_x = f64[5,8] does not have the shape of grad_y = f64[5,7]"}});
}

}  // namespace
}  // namespace baracuda
