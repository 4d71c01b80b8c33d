// PReluPlan on the CPU: the oracle's rules, its backward (grad_x and the per-channel weight
// gradient) against central finite differences of the forward, and select-time acceptance,
// workspace and refusals naming field and value.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/prelu.hpp"

namespace baracuda::reference {
namespace {

TEST(PReluReference, Rules) {
  EXPECT_EQ(prelu_value<double>(2.0, 0.25), 2.0);
  EXPECT_EQ(prelu_value<double>(-2.0, 0.25), -0.5);
  EXPECT_TRUE(std::signbit(prelu_value<double>(-0.0, 0.25)));  // w * -0
  EXPECT_TRUE(std::isnan(prelu_value<double>(std::nan(""), 0.25)));
  EXPECT_EQ(prelu_grad_x<double>(3.0, 0.0, 0.25), 0.75);  // x = 0 takes the w branch, as torch
  EXPECT_EQ(prelu_grad_w_term<double>(3.0, 0.0), 0.0);
  EXPECT_EQ(prelu_grad_w_term<double>(3.0, -2.0), -6.0);
  EXPECT_EQ(prelu_grad_w_term<double>(3.0, 2.0), 0.0);
}

// Loss L = sum(g * prelu(x, w)); dL/dx and dL/dw by central differences on [2, 3, 4] with a
// per-channel weight and with a single weight.
TEST(PReluReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-2, 2);
  for (bool per_channel : {true, false}) {
    auto xl = TensorLayout::contiguous(DType::kF64, {2, 3, 4});
    auto wl = per_channel ? TensorLayout::contiguous(DType::kF64, {3}) : TensorLayout::contiguous(DType::kF64, {1});
    HostTensor x(xl), g(xl), w(wl);
    for (std::int64_t i = 0; i < 24; ++i) {
      double v = u(rng);
      if (std::fabs(v) < 0.05) v = 0.5;  // keep FD away from the kink
      x.set(i, v);
      g.set(i, u(rng));
    }
    for (std::int64_t c = 0; c < wl.numel(); ++c) w.set(c, u(rng));
    auto loss = [&](const HostTensor& xx, const HostTensor& ww) {
      auto y = prelu(PReluDescriptor{xl, wl, xl}, xx, ww).value();
      double s = 0;
      for (std::int64_t i = 0; i < 24; ++i) s += g.get(i) * y.exact[static_cast<std::size_t>(i)];
      return s;
    };
    auto grads = prelu_backward(PReluBackwardDescriptor{xl, xl, wl, xl, wl}, g, x, w);
    ASSERT_TRUE(grads.has_value());
    const double h = 1e-6;
    for (std::int64_t i = 0; i < 24; ++i) {
      HostTensor xp = x, xm = x;
      xp.set(i, x.get(i) + h);
      xm.set(i, x.get(i) - h);
      const double fd = (loss(xp, w) - loss(xm, w)) / (2 * h);
      EXPECT_NEAR(grads->grad_x.exact[static_cast<std::size_t>(i)], fd, 1e-7) << i;
    }
    for (std::int64_t c = 0; c < wl.numel(); ++c) {
      HostTensor wp = w, wm = w;
      wp.set(c, w.get(c) + h);
      wm.set(c, w.get(c) - h);
      const double fd = (loss(x, wp) - loss(x, wm)) / (2 * h);
      EXPECT_NEAR(grads->grad_weight.exact[static_cast<std::size_t>(c)], fd, 1e-7) << c;
    }
  }
}

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

TEST(PReluPlanSelect, PathsAndWorkspace) {
  auto x = TensorLayout::contiguous(DType::kBF16, {8, 64, 32, 32});
  auto w = TensorLayout::contiguous(DType::kBF16, {64});
  auto fwd = PReluPlan::select_for_caps(caps90(), PReluDescriptor{x, w, x});
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  EXPECT_EQ(fwd->sku().impl, "strided_i32");  // the weight view is not dense
  auto x2 = TensorLayout::contiguous(DType::kBF16, {4096, 1024});
  auto w2 = TensorLayout::contiguous(DType::kBF16, {1024});
  auto rows = PReluPlan::select_for_caps(caps90(), PReluDescriptor{x2, w2, x2});
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->sku().impl, "vec16_rows");
  auto bwd = PReluBackwardPlan::select_for_caps(caps90(), PReluBackwardDescriptor{x, x, w, x, w});
  ASSERT_TRUE(bwd.has_value()) << bwd.error().to_string();
  EXPECT_EQ(bwd->sku().impl, "chunked_reduce_i64");
  EXPECT_GT(bwd->workspace_size(), 0u);
  EXPECT_EQ(bwd->workspace_size() % kWorkspaceAlignment, 0u);
  PReluBackwardDescriptor only_x{x, x, w, x, w, true, false};
  auto bx = PReluBackwardPlan::select_for_caps(caps90(), only_x);
  ASSERT_TRUE(bx.has_value());
  EXPECT_EQ(bx->workspace_size(), 0u);
  auto single = PReluPlan::select_for_caps(caps90(), PReluDescriptor{x, TensorLayout::contiguous(DType::kBF16, std::vector<std::int64_t>{}), x});
  EXPECT_TRUE(single.has_value());
}

// rows_vec16: the channel dim innermost and unit-stride ([N, C], [N, C, 1]) takes it, first in
// the order; other layouts are refused with a reason and run chunked_reduce_i64.
std::string rows_vec16_rejection(const PReluBackwardDescriptor& d) {
  auto reports = PReluBackwardPlan::candidates(caps90(), d);
  EXPECT_TRUE(reports.has_value());
  if (!reports) return "?";
  for (const auto& r : reports.value())
    if (r.sku.impl == std::string("rows_vec16")) return r.rejection;
  ADD_FAILURE() << "no rows_vec16 candidate";
  return "?";
}

TEST(PReluPlanSelect, RowsVec16TakesChannelsInnermost) {
  auto x = TensorLayout::contiguous(DType::kBF16, {16384, 8192});
  auto w = TensorLayout::contiguous(DType::kBF16, {8192});
  for (int which : {2, 0, 1}) {  // both, grad_x only, grad_weight only
    PReluBackwardDescriptor d{x, x, w, x, w, which != 1, which != 0};
    auto p = PReluBackwardPlan::select_for_caps(caps90(), d);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "rows_vec16") << d.to_string();
    EXPECT_EQ(p->sku().name().find("prelu.bwd.rows_vec16"), 0u) << p->sku().name();
    // 1024 vectors of 8 = 64 column blocks of 16; 3 waves x 4 blocks x 132 SMs / 64 = 24 chunks,
    // f32 sums; nothing without the weight gradient
    EXPECT_EQ(p->workspace_size(), which == 0 ? 0u : std::size_t{24} * 8192 * 4) << d.to_string();
  }
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    auto x3 = TensorLayout::contiguous(t, {300, 64, 1});
    auto w3 = TensorLayout::contiguous(t, {64});
    auto padded = TensorLayout::strided(t, {100, 64}, {72, 1});
    for (const auto& d :
         {PReluBackwardDescriptor{x3, x3, w3, x3, w3}, PReluBackwardDescriptor{padded, padded, w3, padded, w3}}) {
      auto p = PReluBackwardPlan::select_for_caps(caps90(), d);
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      EXPECT_EQ(p->sku().impl, "rows_vec16") << d.to_string();
      EXPECT_GT(p->workspace_size(), 0u);
      EXPECT_EQ(p->workspace_size() % kWorkspaceAlignment, 0u);
    }
  }
}

TEST(PReluPlanSelect, RowsVec16RefusesOtherLayoutsWithReasons) {
  const DType t = DType::kBF16;
  auto x = TensorLayout::contiguous(t, {257, 1024});
  auto w = TensorLayout::contiguous(t, {1024});
  auto expect_rejection = [](const PReluBackwardDescriptor& d, const std::string& needle) {
    const std::string why = rows_vec16_rejection(d);
    EXPECT_NE(why.find(needle), std::string::npos) << d.to_string() << ": '" << why << "'";
    auto p = PReluBackwardPlan::select_for_caps(caps90(), d);  // the general SKU takes it
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "chunked_reduce_i64") << d.to_string();
  };
  auto nchw = TensorLayout::contiguous(t, {8, 64, 32, 32});
  auto w64 = TensorLayout::contiguous(t, {64});
  expect_rejection({nchw, nchw, w64, nchw, w64}, "x = bf16[8,64,32,32] has dims of size > 1 after the channel dim 1");
  auto odd = TensorLayout::contiguous(t, {257, 1031});
  auto w_odd = TensorLayout::contiguous(t, {1031});
  expect_rejection({odd, odd, w_odd, odd, w_odd}, "channels = 1031 is not a multiple of the 8-element vector");
  auto one = TensorLayout::contiguous(t, {1});
  expect_rejection({x, x, one, x, one}, "is a single weight");
  auto transposed = TensorLayout::strided(t, {257, 1024}, {1, 257});
  expect_rejection({x, transposed, w, x, w}, "has channel stride 257");
  auto odd_rows = TensorLayout::strided(t, {257, 1024}, {1028, 1});
  expect_rejection({odd_rows, x, w, x, w}, "grad_y row stride 1028 is not a multiple of 8");
  auto x8 = TensorLayout::contiguous(t, {257, 1024}, 8);
  expect_rejection({x, x, w, x8, w}, "grad_x.alignment = 8 < 16 bytes");
  auto w_strided = TensorLayout::strided(t, {1024}, {2});
  expect_rejection({x, x, w_strided, x, w}, "weight = ");
  EXPECT_NE(rows_vec16_rejection({x, x, w_strided, x, w}).find("is not unit-stride"), std::string::npos);
  expect_rejection({x, x, w, x, TensorLayout::contiguous(t, {1024}, 4)}, "grad_weight.alignment = 4 < 16 bytes");
  // grad_x not requested: its layout does not matter
  EXPECT_EQ(rows_vec16_rejection({x, x, w, x8, w, false, true}), "");
}

TEST(PReluPlanSelect, RefusalsNameFieldAndValue) {
  auto x = TensorLayout::contiguous(DType::kF32, {2, 3, 4});
  auto w = TensorLayout::contiguous(DType::kF32, {3});
  auto fwd = [&](PReluDescriptor d, const char* needle) {
    auto p = PReluPlan::select_for_caps(caps90(), d);
    ASSERT_FALSE(p.has_value()) << d.to_string();
    EXPECT_NE(p.error().message().find(needle), std::string::npos) << p.error().to_string();
  };
  fwd({x, TensorLayout::contiguous(DType::kF32, {4}), x}, "weight = f32[4] has 4 elements: needs 1 or x.shape[1] = 3");
  fwd({x, TensorLayout::contiguous(DType::kF32, {3, 1}), x}, "weight.rank = 2");
  fwd({x, TensorLayout::contiguous(DType::kF16, {3}), x}, "weight.dtype = f16 differs from x.dtype = f32");
  fwd({TensorLayout::contiguous(DType::kI32, {2, 3}), TensorLayout::contiguous(DType::kI32, {3}),
       TensorLayout::contiguous(DType::kI32, {2, 3})},
      "x.dtype = i32 is not supported by prelu");
  fwd({x, w, TensorLayout::contiguous(DType::kF32, {2, 3, 5})}, "y = f32[2,3,5] does not have the shape of x");
  fwd({TensorLayout::contiguous(DType::kF32, {5}), TensorLayout::contiguous(DType::kF32, {5}), TensorLayout::contiguous(DType::kF32, {5})},
      "(x has no dim 1)");
  auto bwd = [&](PReluBackwardDescriptor d, const char* needle) {
    auto p = PReluBackwardPlan::select_for_caps(caps90(), d);
    ASSERT_FALSE(p.has_value()) << d.to_string();
    EXPECT_NE(p.error().message().find(needle), std::string::npos) << p.error().to_string();
  };
  bwd({x, x, w, x, w, false, false}, "nothing to compute");
  bwd({x, x, w, x, TensorLayout::contiguous(DType::kF32, {1})}, "grad_weight = f32[1] does not have the shape of weight");
  bwd({x, x, w, TensorLayout::strided(DType::kF32, {2, 3, 4}, {0, 4, 1}), w}, "grad_x = ");
  bwd({TensorLayout::contiguous(DType::kF32, {2, 3, 5}), x, w, x, w}, "grad_y = f32[2,3,5] does not have the shape of x");
}

}  // namespace
}  // namespace baracuda::reference
