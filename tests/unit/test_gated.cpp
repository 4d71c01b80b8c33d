// GatedActivationPlan on the CPU: the oracle against known values and torch's split
// conventions, its backward against central finite differences, and select-time
// acceptance / refusals naming field and value.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gated.hpp"

namespace baracuda::reference {
namespace {

const GatedKind kKinds[] = {GatedKind::kGlu, GatedKind::kReglu, GatedKind::kSwiglu, GatedKind::kGegluErf, GatedKind::kGegluTanh};

TEST(GatedReference, KnownValues) {
  EXPECT_DOUBLE_EQ(gated_value<double>(GatedKind::kGlu, 0.0, 3.0), 1.5);  // sigmoid(0) * 3
  EXPECT_DOUBLE_EQ(gated_value<double>(GatedKind::kReglu, -2.0, 3.0), 0.0);
  EXPECT_DOUBLE_EQ(gated_value<double>(GatedKind::kReglu, 2.0, 3.0), 6.0);
  EXPECT_NEAR(gated_value<double>(GatedKind::kSwiglu, 1.0, 2.0), 2.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(gated_value<double>(GatedKind::kGegluErf, 1.0, 2.0), 2.0 * 0.8413447460685429, 1e-15);
  EXPECT_NEAR(gated_value<double>(GatedKind::kGegluTanh, 1.0, 2.0), 2.0 * 0.8411919906082768, 1e-14);
  EXPECT_TRUE(std::isnan(gated_value<double>(GatedKind::kReglu, std::nan(""), 1.0)));  // relu propagates NaN
  for (auto k : kKinds) EXPECT_EQ(parse_gated_kind(gated_kind_name(k)), k);
  EXPECT_EQ(parse_gated_kind("geglu"), GatedKind::kGegluErf);
  EXPECT_FALSE(parse_gated_kind("gelu").has_value());
}

TEST(GatedReference, PackedHalvesFollowGateHalf) {
  // x = [[a0, a1, b0, b1]]: kSecond (torch glu): y = a * act(b); kFirst (vLLM): y = act(a) * b.
  auto xl = TensorLayout::contiguous(DType::kF64, {1, 4});
  auto yl = TensorLayout::contiguous(DType::kF64, {1, 2});
  HostTensor x(xl);
  const double v[] = {0.5, -1.0, 2.0, 0.25};
  for (int i = 0; i < 4; ++i) x.set(i, v[i]);
  for (auto half : {GateHalf::kSecond, GateHalf::kFirst}) {
    GatedActivationDescriptor d{GatedKind::kSwiglu, GatedInput::kPacked, half, xl, {}, {}, yl};
    auto r = gated_activation(d, &x, nullptr, nullptr);
    ASSERT_TRUE(r.has_value()) << r.error().to_string();
    for (int j = 0; j < 2; ++j) {
      const double gate = half == GateHalf::kSecond ? v[2 + j] : v[j], up = half == GateHalf::kSecond ? v[j] : v[2 + j];
      EXPECT_DOUBLE_EQ(r->exact[static_cast<std::size_t>(j)], gated_value<double>(GatedKind::kSwiglu, gate, up));
    }
  }
}

// d/dgate and d/dup of act(gate) * up by central differences, against the backward.
TEST(GatedReference, BackwardMatchesFiniteDifferences) {
  const double xs[] = {-3.1, -1.2, -0.3, 0.2, 0.7, 1.9, 4.2};
  const double ups[] = {-1.7, 0.4, 2.3};
  for (auto k : kKinds)
    for (double gate : xs)
      for (double up : ups) {
        const double g = 0.75, h = 1e-6;
        auto [dg, du] = gated_grads<double>(k, g, gate, up);
        const double fd_gate = g * (gated_value<double>(k, gate + h, up) - gated_value<double>(k, gate - h, up)) / (2 * h);
        const double fd_up = g * (gated_value<double>(k, gate, up + h) - gated_value<double>(k, gate, up - h)) / (2 * h);
        EXPECT_NEAR(dg, fd_gate, 1e-7 * (1 + std::fabs(fd_gate))) << gated_kind_name(k) << " gate=" << gate << " up=" << up;
        EXPECT_NEAR(du, fd_up, 1e-7 * (1 + std::fabs(fd_up))) << gated_kind_name(k) << " gate=" << gate << " up=" << up;
      }
  auto [dg0, du0] = gated_grads<double>(GatedKind::kReglu, 1.0, 0.0, 2.0);  // relu'(0) = 0, as torch
  EXPECT_EQ(dg0, 0.0);
  EXPECT_EQ(du0, 0.0);
}

TEST(GatedReference, PackedBackwardInterleavesHalves) {
  auto xl = TensorLayout::contiguous(DType::kF64, {2, 6});
  auto gl = TensorLayout::contiguous(DType::kF64, {2, 3});
  HostTensor x(xl), gy(gl);
  for (int i = 0; i < 12; ++i) x.set(i, 0.3 * i - 1.7);
  for (int i = 0; i < 6; ++i) gy.set(i, 0.5 + 0.1 * i);
  GatedActivationBackwardDescriptor d{GatedKind::kGegluTanh, GatedInput::kPacked, GateHalf::kFirst, gl, xl, {}, {}, xl, {}, {}};
  auto r = gated_activation_backward(d, gy, &x, nullptr, nullptr);
  ASSERT_TRUE(r.has_value());
  for (int row = 0; row < 2; ++row)
    for (int c = 0; c < 3; ++c) {
      auto [dg, du] = gated_grads<double>(GatedKind::kGegluTanh, gy.get(row * 3 + c), x.get(row * 6 + c), x.get(row * 6 + 3 + c));
      EXPECT_EQ(r->grad_x.exact[static_cast<std::size_t>(row * 6 + c)], dg);
      EXPECT_EQ(r->grad_x.exact[static_cast<std::size_t>(row * 6 + 3 + c)], du);
    }
}

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

TEST(GatedPlanSelect, PackedRowsSplitContig) {
  auto x = TensorLayout::contiguous(DType::kBF16, {4096, 2 * 1024});
  auto y = TensorLayout::contiguous(DType::kBF16, {4096, 1024});
  auto packed = GatedActivationPlan::select_for_caps(caps90(), GatedActivationDescriptor{GatedKind::kSwiglu, GatedInput::kPacked,
                                                                                        GateHalf::kFirst, x, {}, {}, y});
  ASSERT_TRUE(packed.has_value()) << packed.error().to_string();
  EXPECT_EQ(packed->sku().impl, "vec16_rows");
  auto split = GatedActivationPlan::select_for_caps(caps90(), GatedActivationDescriptor{GatedKind::kSwiglu, GatedInput::kSplit,
                                                                                       GateHalf::kSecond, {}, y, y, y});
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->sku().impl, "vec16_contig");
  EXPECT_EQ(split->sku().family, "gated");
  // D = 1001 bf16: the second half starts 2002 bytes in (2-byte aligned): strided
  auto x2 = TensorLayout::contiguous(DType::kBF16, {64, 2 * 1001});
  auto y2 = TensorLayout::contiguous(DType::kBF16, {64, 1001});
  auto odd = GatedActivationPlan::select_for_caps(caps90(), GatedActivationDescriptor{GatedKind::kGlu, GatedInput::kPacked,
                                                                                     GateHalf::kSecond, x2, {}, {}, y2});
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->sku().impl, "strided_i32");
  GatedActivationBackwardDescriptor bd{GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, y, x, {}, {}, x, {}, {}};
  auto bwd = GatedActivationBackwardPlan::select_for_caps(caps90(), bd);
  ASSERT_TRUE(bwd.has_value()) << bwd.error().to_string();
  EXPECT_EQ(bwd->sku().impl, "vec16_rows");
}

TEST(GatedPlanSelect, RefusalsNameFieldAndValue) {
  auto x = TensorLayout::contiguous(DType::kF32, {8, 16});
  auto y = TensorLayout::contiguous(DType::kF32, {8, 8});
  auto fwd = [&](GatedActivationDescriptor d, const char* needle) {
    auto p = GatedActivationPlan::select_for_caps(caps90(), d);
    ASSERT_FALSE(p.has_value()) << d.to_string();
    EXPECT_NE(p.error().message().find(needle), std::string::npos) << p.error().to_string();
  };
  fwd({GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, TensorLayout::contiguous(DType::kF32, {8, 15}), {}, {}, y},
      "x.shape[1] = 15 is odd");
  fwd({GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, x, {}, {}, TensorLayout::contiguous(DType::kF32, {8, 7})},
      "y = f32[8,7] is not x = f32[8,16] with the last dim halved");
  fwd({GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, TensorLayout::contiguous(DType::kBF16, {8, 16}), {}, {}, y},
      "x.dtype = bf16 differs from y.dtype = f32");
  fwd({GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, TensorLayout::contiguous(DType::kI32, {8, 16}), {}, {},
       TensorLayout::contiguous(DType::kI32, {8, 8})},
      "y.dtype = i32 is not supported by gated");
  fwd({static_cast<GatedKind>(9), GatedInput::kPacked, GateHalf::kSecond, x, {}, {}, y}, "kind = 9");
  fwd({GatedKind::kGlu, static_cast<GatedInput>(4), GateHalf::kSecond, x, {}, {}, y}, "input = 4");
  fwd({GatedKind::kGlu, GatedInput::kPacked, static_cast<GateHalf>(3), x, {}, {}, y}, "gate_half = 3");
  fwd({GatedKind::kGlu, GatedInput::kSplit, GateHalf::kSecond, {}, y, TensorLayout::contiguous(DType::kF32, {8, 3}), y},
      "up.shape[1] = 3 cannot broadcast to 8");
  fwd({GatedKind::kGlu, GatedInput::kSplit, GateHalf::kSecond, {}, y, y, TensorLayout::strided(DType::kF32, {8, 8}, {0, 1})},
      "y = ");
  auto bwd = [&](GatedActivationBackwardDescriptor d, const char* needle) {
    auto p = GatedActivationBackwardPlan::select_for_caps(caps90(), d);
    ASSERT_FALSE(p.has_value()) << d.to_string();
    EXPECT_NE(p.error().message().find(needle), std::string::npos) << p.error().to_string();
  };
  bwd({GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, y, x, {}, {}, TensorLayout::contiguous(DType::kF32, {8, 18}), {}, {}},
      "grad_y = f32[8,8] is not grad_x = f32[8,18] with the last dim halved");
  bwd({GatedKind::kSwiglu, GatedInput::kSplit, GateHalf::kSecond, y, {}, TensorLayout::contiguous(DType::kF32, {8}), y, {}, y, y},
      "gate = f32[8] does not have the shape of grad_y");
}

}  // namespace
}  // namespace baracuda::reference
