// GPU tests of GatedActivationPlan / backward against reference::gated_activation(_backward):
// every kind x dtype, packed (both gate halves) and split inputs, contiguous / strided /
// broadcast / edge shapes, packed grad_x in place over x, every accepting SKU, poisoned
// outputs and guard bytes; and the run-time refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/reference/gated.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

const GatedKind kKinds[] = {GatedKind::kGlu, GatedKind::kReglu, GatedKind::kSwiglu, GatedKind::kGegluErf, GatedKind::kGegluTanh};
const DType kTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};

TensorLayout contig(DType t, std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

struct PackedCase {
  std::string name;
  TensorLayout x, y;  // x = [..., 2D], y = [..., D]
  TensorLayout grad_x;
  bool grad_in_place = false;  // backward: grad_x aliases x
};

std::vector<PackedCase> packed_cases(DType t) {
  std::vector<PackedCase> cs;
  for (std::vector<std::int64_t> s : std::vector<std::vector<std::int64_t>>{
           {0, 4}, {1, 2}, {7, 10}, {33, 258}, {257, 2048}, {3, 5, 128}, {4097, 16}, {2, 1031 * 2}}) {
    std::vector<std::int64_t> h = s;
    h.back() /= 2;
    std::string n = "contig[";
    for (auto d : s) n += std::to_string(d) + ",";
    cs.push_back({n + "]", contig(t, s), contig(t, h), contig(t, s)});
  }
  cs.push_back({"transposed_x", TensorLayout::strided(t, {33, 258}, {1, 33}), contig(t, {33, 129}), contig(t, {33, 258})});
  cs.push_back({"padded_rows", TensorLayout::strided(t, {33, 256}, {272, 1}), contig(t, {33, 128}),
                TensorLayout::strided(t, {33, 256}, {264, 1})});
  cs.push_back({"transposed_y", contig(t, {33, 258}), TensorLayout::strided(t, {33, 129}, {1, 33}), contig(t, {33, 258})});
  cs.push_back({"grad_in_place", contig(t, {257, 2048}), contig(t, {257, 1024}), contig(t, {257, 2048}), true});
  return cs;
}

class GatedGpu : public ::testing::TestWithParam<std::tuple<GatedKind, DType>> {};

TEST_P(GatedGpu, PackedForward) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (auto half : {GateHalf::kSecond, GateHalf::kFirst})
    for (const auto& c : packed_cases(t)) {
      SCOPED_TRACE(c.name + (half == GateHalf::kFirst ? " gate=first" : " gate=second"));
      GatedActivationDescriptor d{kind, GatedInput::kPacked, half, c.x, {}, {}, c.y};
      HostTensor hx(c.x), hy(c.y);
      fill_random(hx, -4, 4, Fill::kWithEdges);
      auto want = reference::gated_activation(d, &hx, nullptr, nullptr);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
      for_each_sku<GatedActivationPlan>(
          d, [&] { dy.poison(0xFF, test_stream()); },
          [&](const GatedActivationPlan& p, Workspace ws) {
            return p.run(test_stream(), ws, GatedActivationArgs{.x = dx.data(), .y = dy.data()});
          },
          [&](const std::string& sku) {
            ASSERT_TRUE(dy.download(hy, test_stream()));
            EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
          });
    }
}

TEST_P(GatedGpu, SplitForward) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  struct SplitCase {
    std::string name;
    TensorLayout gate, up, y;
  };
  const auto y = contig(t, {257, 1031});
  const SplitCase cases[] = {
      {"contig", y, y, y},
      {"contig_vec", contig(t, {257, 1024}), contig(t, {257, 1024}), contig(t, {257, 1024})},
      {"edge_0", contig(t, {0}), contig(t, {0}), contig(t, {0})},
      {"edge_1", contig(t, {1}), contig(t, {1}), contig(t, {1})},
      {"broadcast_gate", contig(t, {1031}), y, y},
      {"broadcast_up_col", y, contig(t, {257, 1}), y},
      {"transposed_up", y, TensorLayout::strided(t, {257, 1031}, {1, 257}), y},
      // gate[0][0] sits 1030 elements into its buffer: only element alignment is promised
      {"negative_gate", TensorLayout::strided(t, {257, 1031}, {1031, -1}, static_cast<int>(dtype_size(t))), y, y},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    GatedActivationDescriptor d{kind, GatedInput::kSplit, GateHalf::kSecond, {}, c.gate, c.up, c.y};
    HostTensor hg(c.gate), hu(c.up), hy(c.y);
    fill_random(hg, -4, 4, Fill::kWithEdges);
    fill_random(hu, -4, 4, Fill::kWithEdges);
    auto want = reference::gated_activation(d, nullptr, &hg, &hu);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dg(hg, test_stream()), du(hu, test_stream()), dy(hy, test_stream());
    for_each_sku<GatedActivationPlan>(
        d, [&] { dy.poison(0xFF, test_stream()); },
        [&](const GatedActivationPlan& p, Workspace ws) {
          return p.run(test_stream(), ws, GatedActivationArgs{.gate = dg.data(), .up = du.data(), .y = dy.data()});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy.download(hy, test_stream()));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
        });
  }
}

TEST_P(GatedGpu, PackedBackward) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (auto half : {GateHalf::kSecond, GateHalf::kFirst})
    for (const auto& c : packed_cases(t)) {
      SCOPED_TRACE(c.name + (half == GateHalf::kFirst ? " gate=first" : " gate=second"));
      const TensorLayout gy = contig(t, std::vector<std::int64_t>(c.y.shape.begin(), c.y.shape.begin() + c.y.rank));
      GatedActivationBackwardDescriptor d{kind, GatedInput::kPacked, half, gy, c.x, {}, {}, c.grad_x, {}, {}};
      HostTensor hgy(gy), hx(c.x), hgx(c.grad_x);
      fill_random(hgy, -4, 4, Fill::kWithEdges);
      fill_random(hx, -4, 4, Fill::kWithEdges);
      auto want = reference::gated_activation_backward(d, hgy, &hx, nullptr, nullptr);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dgy(hgy, test_stream()), dx(hx, test_stream()), dgx(hgx, test_stream());
      void* gx_ptr = c.grad_in_place ? dx.data() : dgx.data();
      for_each_sku<GatedActivationBackwardPlan>(
          d,
          [&] {
            dx.upload(hx, test_stream());
            dgx.poison(0xFF, test_stream());
          },
          [&](const GatedActivationBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws,
                         GatedActivationBackwardArgs{.grad_y = dgy.data(), .x = dx.data(), .grad_x = gx_ptr});
          },
          [&](const std::string& sku) {
            ASSERT_TRUE((c.grad_in_place ? dx : dgx).download(hgx, test_stream()));
            EXPECT_TRUE(check_close(hgx, want->grad_x, sku + " " + d.to_string()));
          });
    }
}

TEST_P(GatedGpu, SplitBackward) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (const auto& l : {contig(t, {257, 1031}), contig(t, {257, 1024}), TensorLayout::strided(t, {257, 1031}, {1, 257})}) {
    SCOPED_TRACE(l.to_string());
    const auto o = contig(t, {257, 1031 - (l.shape[1] == 1024 ? 7 : 0)});
    GatedActivationBackwardDescriptor d{kind, GatedInput::kSplit, GateHalf::kSecond, o, {}, l, o, {}, o, l};
    HostTensor hgy(o), hg(l), hu(o), hgg(o), hgu(l);
    fill_random(hgy, -4, 4, Fill::kWithEdges);
    fill_random(hg, -4, 4, Fill::kWithEdges);
    fill_random(hu, -4, 4, Fill::kWithEdges);
    auto want = reference::gated_activation_backward(d, hgy, nullptr, &hg, &hu);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dgy(hgy, test_stream()), dg(hg, test_stream()), du(hu, test_stream()), dgg(hgg, test_stream()),
        dgu(hgu, test_stream());
    for_each_sku<GatedActivationBackwardPlan>(
        d,
        [&] {
          dgg.poison(0xFF, test_stream());
          dgu.poison(0xFF, test_stream());
        },
        [&](const GatedActivationBackwardPlan& p, Workspace ws) {
          return p.run(test_stream(), ws,
                       GatedActivationBackwardArgs{.grad_y = dgy.data(), .gate = dg.data(), .up = du.data(),
                                                   .grad_gate = dgg.data(), .grad_up = dgu.data()});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE(dgg.download(hgg, test_stream()));
          ASSERT_TRUE(dgu.download(hgu, test_stream()));
          EXPECT_TRUE(check_close(hgg, want->grad_gate, sku + " grad_gate " + d.to_string()));
          EXPECT_TRUE(check_close(hgu, want->grad_up, sku + " grad_up " + d.to_string()));
        });
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, GatedGpu, ::testing::Combine(::testing::ValuesIn(kKinds), ::testing::ValuesIn(kTypes)),
                         [](const auto& info) {
                           return std::string(gated_kind_name(std::get<0>(info.param))) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

TEST(GatedGpuRefusals, NullMisalignedAliasingLeaveOutputUntouched) {
  BARACUDA_REQUIRE_GPU();
  const auto x = contig(DType::kBF16, {64, 256});
  const auto y = contig(DType::kBF16, {64, 128});
  GatedActivationDescriptor d{GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kFirst, x, {}, {}, y};
  auto plan = GatedActivationPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor hx(x), hy(y);
  fill_random(hx, -4, 4);
  DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
  dy.poison(0x5A, test_stream());
  const Status null_x = plan->run(test_stream(), {}, GatedActivationArgs{.x = nullptr, .y = dy.data()});
  EXPECT_NE(null_x.message().find("args.x is null"), std::string::npos) << null_x.to_string();
  const Status mis = plan->run(test_stream(), {}, GatedActivationArgs{.x = static_cast<char*>(dx.data()) + 2, .y = dy.data()});
  EXPECT_EQ(mis.code(), Code::kMisaligned) << mis.to_string();
  const Status alias = plan->run(test_stream(), {}, GatedActivationArgs{.x = dx.data(), .y = static_cast<char*>(dx.data()) + 16});
  EXPECT_NE(alias.message().find("unsafe aliasing"), std::string::npos) << alias.to_string();
  ASSERT_TRUE(dy.download(hy, test_stream()));
  for (std::size_t i = 0; i < hy.storage_bytes(); ++i) ASSERT_EQ(static_cast<unsigned>(hy.storage()[i]), 0x5Au) << i;
}

// Both plans, packed and split, table-driven: null, misaligned and aliased pointers name
// their field (no gated plan has a workspace); outputs poisoned and untouched after.
TEST(GatedGpuRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto x = contig(DType::kBF16, {64, 256});
  const auto h = contig(DType::kBF16, {64, 128});
  using GI = GatedInput;
  auto fwd = GatedActivationPlan::select(test_stream(), {GatedKind::kSwiglu, GI::kPacked, GateHalf::kFirst, x, {}, {}, h});
  auto fsp = GatedActivationPlan::select(test_stream(), {GatedKind::kGlu, GI::kSplit, GateHalf::kSecond, {}, h, h, h});
  auto bwd = GatedActivationBackwardPlan::select(
      test_stream(), {GatedKind::kGegluTanh, GI::kPacked, GateHalf::kSecond, h, x, {}, {}, x, {}, {}});
  auto bsp = GatedActivationBackwardPlan::select(
      test_stream(), {GatedKind::kReglu, GI::kSplit, GateHalf::kSecond, h, {}, h, h, {}, h, h});
  ASSERT_TRUE(fwd && fsp && bwd && bsp);
  for (std::size_t ws : {fwd->workspace_size(), fsp->workspace_size(), bwd->workspace_size(), bsp->workspace_size()})
    EXPECT_EQ(ws, 0u);
  HostTensor hx(x), hh(h);
  fill_random(hx, -4, 4);
  fill_random(hh, -4, 4);
  DeviceTensor dx(hx, test_stream()), dg(hh, test_stream()), du(hh, test_stream()), dgy(hh, test_stream());
  Untouched y(h), gx(x), ggate(h), gup(h);
  const void *xp = dx.data(), *gate = dg.data(), *up = du.data(), *gy = dgy.data();
  void* x_plus16 = static_cast<char*>(dx.data()) + 16;
  void* up_row1 = static_cast<char*>(du.data()) + 256;  // one bf16 row of 128 on
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  expect_run_refusals(
      {
          {"packed null x", [&] { return fwd->run(s, {}, {.x = nullptr, .y = y.data()}); }, kBad, "args.x is null"},
          {"packed misaligned y", [&] { return fwd->run(s, {}, {.x = xp, .y = static_cast<char*>(y.data()) + 2}); }, kMis,
           "not aligned to y.alignment = 16"},
          {"packed y over x", [&] { return fwd->run(s, {}, {.x = xp, .y = x_plus16}); }, kBad, "args.y overlaps args.x"},
          {"split null up", [&] { return fsp->run(s, {}, {.gate = gate, .up = nullptr, .y = y.data()}); }, kBad,
           "args.up is null"},
          {"split misaligned gate", [&] { return fsp->run(s, {}, {.gate = static_cast<const char*>(gate) + 2, .up = up, .y = y.data()}); },
           kMis, "not aligned to gate.alignment = 16"},
          {"split y over up", [&] { return fsp->run(s, {}, {.gate = gate, .up = up, .y = up_row1}); }, kBad,
           "args.y overlaps args.up"},
          {"backward null grad_y", [&] { return bwd->run(s, {}, {.grad_y = nullptr, .x = xp, .grad_x = gx.data()}); }, kBad,
           "args.grad_y is null"},
          {"backward misaligned x", [&] { return bwd->run(s, {}, {.grad_y = gy, .x = static_cast<const char*>(xp) + 2, .grad_x = gx.data()}); },
           kMis, "not aligned to x.alignment = 16"},
          {"backward grad_x over x", [&] { return bwd->run(s, {}, {.grad_y = gy, .x = xp, .grad_x = x_plus16}); }, kBad,
           "args.grad_x overlaps args.x"},
          {"split backward null gate", [&] {
             return bsp->run(s, {}, {.grad_y = gy, .gate = nullptr, .up = up, .grad_gate = ggate.data(), .grad_up = gup.data()});
           }, kBad, "args.gate is null"},
          {"split backward misaligned grad_up", [&] {
             return bsp->run(s, {}, {.grad_y = gy, .gate = gate, .up = up, .grad_gate = ggate.data(),
                                     .grad_up = static_cast<char*>(gup.data()) + 2});
           }, kMis, "not aligned to grad_up.alignment = 16"},
          {"split backward grad_up inside grad_gate", [&] {
             return bsp->run(s, {}, {.grad_y = gy, .gate = gate, .up = up, .grad_gate = ggate.data(), .grad_up = ggate.data()});
           }, kBad, "args.grad_gate and args.grad_up overlap"},
      },
      {&y, &gx, &ggate, &gup});
}

}  // namespace
}  // namespace baracuda::test
