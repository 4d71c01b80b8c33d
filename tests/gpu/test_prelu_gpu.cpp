// GPU tests of PReluPlan / PReluBackwardPlan against reference::prelu(_backward): every
// dtype, per-channel and single weights, contiguous / strided / channels-last-like /
// edge shapes, in place, grad_x only / grad_weight only, determinism of the weight
// gradient (two runs, identical bits), every accepting SKU, poisoned outputs and guard
// bytes; and the run-time refusals (null, misaligned, aliasing, workspace too small), also
// of the rows_vec16 SKU ([rows, C] layouts).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "baracuda/reference/prelu.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct PReluCase {
  std::string name;
  TensorLayout x, w;
  bool in_place = false;
};

std::vector<PReluCase> prelu_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  return {
      {"nchw", c({8, 16, 33, 17}), c({16})},
      {"nc_rows", c({257, 1024}), c({1024})},
      {"nc_odd", c({257, 1031}), c({1031})},
      {"single_weight", c({8, 16, 33, 17}), c({1})},
      {"scalar_weight", c({4097}), c(std::vector<std::int64_t>{})},
      {"rank1_x", c({7}), c({1})},
      {"empty", c({0, 16, 3}), c({16})},
      {"one_channel", c({64, 1, 129}), c({1})},
      {"many_channels", c({3, 5000, 7}), c({5000})},
      {"big", c({32, 256, 64, 64}), c({256})},
      {"channels_last", TensorLayout::strided(t, {4, 24, 9, 11}, {24 * 99, 1, 11 * 24, 24}), c({24})},
      {"strided_weight", c({5, 12, 31}), TensorLayout::strided(t, {12}, {3})},
      {"in_place", c({8, 16, 33, 17}), c({16}), true},
      // channel dim innermost ([rows, C]): rows_vec16 accepts these too
      {"rows_narrow", c({4096, 8}), c({8})},
      {"rows_trailing_one", c({300, 64, 1}), c({64})},
      {"rows_partial_block", c({2000, 24}), c({24})},
      {"rows_padded", TensorLayout::strided(t, {100, 64}, {72, 1}), c({64})},
      {"rows_many_chunks", c({600, 4096}), c({4096})},
      {"rows_in_place", c({513, 256}), c({256}), true},
      {"rows_ragged_cols", c({521, 1048}), c({1048})},  // 131 vectors of 8: the last 16-vector column block partly out of range
  };
}

class PReluGpu : public ::testing::TestWithParam<DType> {};

TEST_P(PReluGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : prelu_cases(t)) {
    SCOPED_TRACE(c.name);
    const TensorLayout y = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
    PReluDescriptor d{c.x, c.w, y};
    HostTensor hx(c.x), hw(c.w), hy(y);
    fill_random(hx, -4, 4, Fill::kWithEdges);
    fill_random(hw, -1, 1);
    auto want = reference::prelu(d, hx, hw);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream()), dw(hw, test_stream()), dy(hy, test_stream());
    void* y_ptr = c.in_place ? dx.data() : dy.data();
    for_each_sku<PReluPlan>(
        d,
        [&] {
          dx.upload(hx, test_stream());
          dy.poison(0xFF, test_stream());
        },
        [&](const PReluPlan& p, Workspace ws) {
          return p.run(test_stream(), ws, PReluArgs{.x = dx.data(), .weight = dw.data(), .y = y_ptr});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
        });
  }
}

TEST_P(PReluGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : prelu_cases(t))
    for (int which : {2, 0, 1}) {  // both, grad_x only, grad_weight only
      SCOPED_TRACE(c.name + " which=" + std::to_string(which));
      const TensorLayout gx = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());  // in place: over grad_y
      const TensorLayout gw = TensorLayout::contiguous(t, c.w.shape_span());
      PReluBackwardDescriptor d{c.x, c.x, c.w, gx, gw, which != 1, which != 0};
      HostTensor hg(c.x), hx(c.x), hw(c.w), hgx(gx), hgw(gw);
      fill_random(hg, -4, 4, Fill::kWithEdges);
      fill_random(hx, -4, 4, Fill::kWithEdges);
      fill_random(hw, -1, 1);
      auto want = reference::prelu_backward(d, hg, hx, hw);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dg(hg, test_stream()), dx(hx, test_stream()), dw(hw, test_stream()), dgx(hgx, test_stream()),
          dgw(hgw, test_stream());
      void* gx_ptr = c.in_place ? dg.data() : dgx.data();
      std::vector<unsigned char> first_bits;
      for_each_sku<PReluBackwardPlan>(
          d,
          [&] {
            dg.upload(hg, test_stream());
            dgx.poison(0xFF, test_stream());
            dgw.poison(0xFF, test_stream());
          },
          [&](const PReluBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws,
                         PReluBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .grad_x = gx_ptr,
                                           .grad_weight = dgw.data()});
          },
          [&](const std::string& sku) {
            if (d.compute_grad_x) {
              ASSERT_TRUE((c.in_place ? dg : dgx).download(hgx, test_stream()));
              EXPECT_TRUE(check_close(hgx, want->grad_x, sku + " grad_x " + d.to_string()));
            }
            if (d.compute_grad_weight) {
              ASSERT_TRUE(dgw.download(hgw, test_stream()));
              EXPECT_TRUE(check_close(hgw, want->grad_weight, sku + " grad_weight " + d.to_string()));
            }
          });
      if (d.compute_grad_weight && !c.in_place) {  // determinism: the default SKU twice gives the same bits
        auto plan = PReluBackwardPlan::select(test_stream(), d);
        ASSERT_TRUE(plan.has_value());
        HostTensor runs[2] = {HostTensor(gw), HostTensor(gw)};
        for (int r = 0; r < 2; ++r) {
          dgw.poison(r == 0 ? 0x00 : 0xFF, test_stream());
          ASSERT_TRUE(plan->run(test_stream(), test_workspace(plan->workspace_size()),
                                PReluBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(),
                                                  .grad_x = gx_ptr, .grad_weight = dgw.data()}));
          ASSERT_TRUE(dgw.download(runs[r], test_stream()));
        }
        EXPECT_EQ(std::memcmp(runs[0].storage(), runs[1].storage(), gw.numel() == 0 ? 0 : runs[0].storage_bytes()), 0)
            << plan->sku().name() << ": weight gradient not deterministic";
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, PReluGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Run-time refusals of the SKU that select picks for x / w (want_impl): null, pointers off
// their declared 16-byte alignment, unsafe aliasing, workspace too small; the outputs keep
// their poison.
void expect_run_refusals(const TensorLayout& x, const TensorLayout& w, const std::string& want_impl) {
  PReluBackwardDescriptor d{x, x, w, x, w};
  auto plan = PReluBackwardPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  ASSERT_EQ(plan->sku().impl, want_impl);
  HostTensor hx(x), hw(w), hgx(x), hgw(w);
  fill_random(hx, -2, 2);
  fill_random(hw, -1, 1);
  DeviceTensor dg(hx, test_stream()), dx(hx, test_stream()), dw(hw, test_stream()), dgx(hgx, test_stream()),
      dgw(hgw, test_stream());
  dgx.poison(0x5A, test_stream());
  dgw.poison(0x5A, test_stream());
  const Workspace ws = test_workspace(plan->workspace_size());
  const PReluBackwardArgs ok{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .grad_x = dgx.data(),
                            .grad_weight = dgw.data()};
  auto expect_refused = [&](PReluBackwardArgs a, Workspace wsp, const char* needle) {
    const Status st = plan->run(test_stream(), wsp, a);
    EXPECT_FALSE(st.is_ok()) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.to_string();
  };
  // "args.<field> = 0x... is not aligned to <field>.alignment = 16 bytes"
  auto expect_misaligned = [&](PReluBackwardArgs a, const char* field) {
    expect_refused(a, ws, "is not aligned");
    expect_refused(a, ws, ("aligned to " + std::string(field) + ".alignment = 16").c_str());
  };
  auto offset = [](void* p, int bytes) { return static_cast<char*>(p) + bytes; };
  PReluBackwardArgs misaligned[4] = {ok, ok, ok, ok};
  misaligned[0].grad_weight = offset(dgw.data(), 2);
  misaligned[1].x = offset(dx.data(), 4);
  misaligned[2].grad_x = offset(dgx.data(), 4);
  misaligned[3].weight = offset(dw.data(), 8);
  const char* misaligned_field[4] = {"grad_weight", "x", "grad_x", "weight"};
  for (int k = 0; k < 4; ++k) expect_misaligned(misaligned[k], misaligned_field[k]);
  PReluBackwardArgs a = ok;
  a.x = nullptr;
  expect_refused(a, ws, "args.x is null");
  a = ok;
  a.grad_weight = dx.data();  // grad_weight inside x
  expect_refused(a, ws, "unsafe aliasing");
  expect_refused(ok, Workspace{ws.data, plan->workspace_size() - 1}, "workspace");
  ASSERT_TRUE(dgx.download(hgx, test_stream()));
  ASSERT_TRUE(dgw.download(hgw, test_stream()));
  for (std::size_t i = 0; i < hgx.storage_bytes(); ++i) ASSERT_EQ(static_cast<unsigned>(hgx.storage()[i]), 0x5Au);
  for (std::size_t i = 0; i < hgw.storage_bytes(); ++i) ASSERT_EQ(static_cast<unsigned>(hgw.storage()[i]), 0x5Au);
}

TEST(PReluGpuRefusals, LeaveOutputsUntouched) {
  BARACUDA_REQUIRE_GPU();
  expect_run_refusals(TensorLayout::contiguous(DType::kF32, {4, 8, 16}), TensorLayout::contiguous(DType::kF32, {8}),
                      "chunked_reduce_i64");
}

// rows_vec16 ([rows, C]) checks the 16-byte alignment it was selected for at run() too.
TEST(PReluGpuRefusals, RowsVec16LeavesOutputsUntouched) {
  BARACUDA_REQUIRE_GPU();
  expect_run_refusals(TensorLayout::contiguous(DType::kF32, {64, 32}), TensorLayout::contiguous(DType::kF32, {32}),
                      "rows_vec16");
}

// Both plans, table-driven: null, misaligned and aliased pointers name their field, and the
// backward's workspace (the deterministic grad_weight reduction) is refused too small, null
// or misaligned; outputs poisoned and untouched after.
TEST(PReluGpuRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kF32, {4, 8, 16});
  const auto w = TensorLayout::contiguous(DType::kF32, {8});
  auto fwd = PReluPlan::select(test_stream(), PReluDescriptor{x, w, x});
  auto bwd = PReluBackwardPlan::select(test_stream(), PReluBackwardDescriptor{x, x, w, x, w});
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->workspace_size(), 0u);
  const std::size_t need = bwd->workspace_size();
  ASSERT_GT(need, 0u);
  HostTensor hx(x), hw(w);
  fill_random(hx, -2, 2);
  fill_random(hw, -1, 1);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream()), dw(hw, test_stream());
  Untouched y(x), gx(x), gw(w);
  const void *xp = dx.data(), *gp = dg.data(), *wp = dw.data();
  void* x_row1 = static_cast<float*>(dx.data()) + 16;  // overlaps x one row on
  void* g_row1 = static_cast<float*>(dg.data()) + 16;
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const PReluBackwardArgs bargs{.grad_y = gp, .x = xp, .weight = wp, .grad_x = gx.data(), .grad_weight = gw.data()};
  auto bwd_with = [&](PReluBackwardArgs a, Workspace wsp) { return bwd->run(test_stream(), wsp, a); };
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w) { return bwd_with(bargs, w); }, ws, need);
  rows.insert(rows.end(),
      {
          {"forward null weight", [&] { return fwd->run(s, {}, {.x = xp, .weight = nullptr, .y = y.data()}); }, kBad,
           "args.weight is null"},
          {"forward misaligned x", [&] { return fwd->run(s, {}, {.x = static_cast<const char*>(xp) + 4, .weight = wp, .y = y.data()}); },
           kMis, "not aligned to x.alignment = 16"},
          {"forward y over x", [&] { return fwd->run(s, {}, {.x = xp, .weight = wp, .y = x_row1}); }, kBad,
           "args.y overlaps args.x"},
          {"backward null grad_y", [&] { auto a = bargs; a.grad_y = nullptr; return bwd_with(a, {ws.data, need}); }, kBad,
           "args.grad_y is null"},
          {"backward misaligned grad_weight", [&] {
             auto a = bargs;
             a.grad_weight = static_cast<char*>(gw.data()) + 4;
             return bwd_with(a, {ws.data, need});
           }, kMis, "not aligned to grad_weight.alignment = 16"},
          {"backward grad_x over grad_y", [&] { auto a = bargs; a.grad_x = g_row1; return bwd_with(a, {ws.data, need}); }, kBad,
           "args.grad_x overlaps args.grad_y"},
          {"backward grad_x inside grad_weight", [&] { auto a = bargs; a.grad_x = gw.data(); return bwd_with(a, {ws.data, need}); },
           kBad, "args.grad_weight and args.grad_x overlap"},
      });
  expect_run_refusals(rows, {&y, &gx, &gw});
}

}  // namespace
}  // namespace baracuda::test
