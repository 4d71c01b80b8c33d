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
