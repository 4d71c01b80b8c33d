// GPU tests of SoftmaxPlan / SoftmaxBackwardPlan against reference::softmax(_backward): every
// dtype, softmax and log_softmax, axes last / middle / first, rows of 1, 7, 1000, 4096, 65536
// and 262144 elements, many rows, strided views (padded rows, permuted kept dims, a
// transposed axis), strided y / grad_x, in place (y over x, grad_x over grad_y or y), empty
// tensors; every accepting SKU forced in turn, poisoned
// outputs and guard bytes; PyTorch's non-finite rows; and the run-time refusals (null,
// misaligned, aliasing, workspace too small) with outputs untouched.
// Filter: --gtest_filter='Softmax*'
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/reference/softmax.hpp"
#include "axis_cases.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

using SoftmaxCase = AxisCase;
// ... and for tma_row: more rows than its persistent blocks hold in flight (every stage
// refilled several times, alone and split over clusters), two kept dims with padded rows
std::vector<AxisCase> softmax_cases(DType t) {
  std::vector<AxisCase> cases = axis_cases(t);
  cases.push_back({"tma_stage_wrap", TensorLayout::contiguous(t, {2400, 8192})});
  cases.push_back({"tma_cluster_wrap", TensorLayout::contiguous(t, {300, 65536})});
  cases.push_back({"tma_strided_kept", TensorLayout::strided(t, {6, 50, 4096}, {60 * 4608, 4608, 1})});
  return cases;
}

class SoftmaxGpu : public ::testing::TestWithParam<DType> {};

TEST_P(SoftmaxGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : softmax_cases(t))
    for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
      SCOPED_TRACE(c.name + " " + softmax_kind_name(kind));
      const TensorLayout y = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
      SoftmaxDescriptor d{c.x, y, c.axis, kind};
      HostTensor hx(c.x), hy(y);
      fill_random(hx, -20, 10);
      auto want = reference::softmax(d, hx);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
      void* y_ptr = c.in_place ? dx.data() : dy.data();
      for_each_sku<SoftmaxPlan>(
          d,
          [&] {
            dx.upload(hx, test_stream());
            dy.poison(0xFF, test_stream());
          },
          [&](const SoftmaxPlan& p, Workspace ws) {
            return p.run(test_stream(), ws, SoftmaxArgs{.x = dx.data(), .y = y_ptr});
          },
          [&](const std::string& sku) {
            ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
            EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
          });
    }
}

TEST_P(SoftmaxGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : softmax_cases(t))
    for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
      SCOPED_TRACE(c.name + " " + softmax_kind_name(kind));
      const TensorLayout gx = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());  // in place: over grad_y
      const TensorLayout yl = TensorLayout::contiguous(t, c.x.shape_span());
      SoftmaxBackwardDescriptor d{c.x, yl, gx, c.axis, kind};
      // y: the forward of random x (rounded to the dtype), as autograd would hold it
      HostTensor hx(yl), hy(yl), hg(c.x), hgx(gx);
      fill_random(hx, -20, 10);
      fill_random(hg, -2, 2);
      auto fy = reference::softmax(SoftmaxDescriptor{yl, yl, c.axis, kind}, hx);
      ASSERT_TRUE(fy.has_value());
      for (std::int64_t i = 0; i < yl.numel(); ++i) hy.set(i, fy->exact[static_cast<std::size_t>(i)]);
      auto want = reference::softmax_backward(d, hg, hy);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dg(hg, test_stream()), dy(hy, test_stream()), dgx(hgx, test_stream());
      void* gx_ptr = c.in_place ? dg.data() : dgx.data();
      for_each_sku<SoftmaxBackwardPlan>(
          d,
          [&] {
            dg.upload(hg, test_stream());
            dgx.poison(0xFF, test_stream());
          },
          [&](const SoftmaxBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws, SoftmaxBackwardArgs{.grad_y = dg.data(), .y = dy.data(), .grad_x = gx_ptr});
          },
          [&](const std::string& sku) {
            ASSERT_TRUE((c.in_place ? dg : dgx).download(hgx, test_stream()));
            EXPECT_TRUE(check_close(hgx, want.value(), sku + " " + d.to_string()));
          });
    }
}

// PyTorch's rows: all -inf (NaN), one -inf among finite values (0 / -inf), a NaN (row NaN),
// a +inf (row NaN), a large-magnitude row (no overflow), for row lengths on every path.
TEST_P(SoftmaxGpu, NonFiniteRows) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::int64_t len : {7, 1000, 8192, 65536}) {
    const auto l = TensorLayout::contiguous(t, {6, len});
    HostTensor hx(l), hy(l);
    fill_random(hx, -5, 5);
    for (std::int64_t k = 0; k < len; ++k) hx.set(k, -inf);  // row 0: all -inf
    hx.set(len + len / 2, -inf);                             // row 1: one -inf
    hx.set(2 * len + len / 3, std::nan(""));                 // row 2: NaN
    hx.set(3 * len + len - 1, inf);                          // row 3: +inf
    for (std::int64_t k = 0; k < len; ++k) hx.set(4 * len + k, t == DType::kF16 ? 60000.0 - k % 7 : 1e30 - k);  // row 4: huge
    for (std::int64_t k = 0; k < len / 2; ++k) hx.set(5 * len + k, -inf);  // row 5: a first half of -inf (whole slices)
    for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
      SoftmaxDescriptor d{l, l, -1, kind};
      auto want = reference::softmax(d, hx);
      ASSERT_TRUE(want.has_value());
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
      for_each_sku<SoftmaxPlan>(
          d, [&] { dy.poison(0xFF, test_stream()); },
          [&](const SoftmaxPlan& p, Workspace ws) { return p.run(test_stream(), ws, SoftmaxArgs{.x = dx.data(), .y = dy.data()}); },
          [&](const std::string& sku) {
            ASSERT_TRUE(dy.download(hy, test_stream()));
            EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
            EXPECT_TRUE(std::isnan(hy.get(0)) && std::isnan(hy.get(len - 1))) << sku << ": all -inf row";
            EXPECT_TRUE(std::isnan(hy.get(2 * len))) << sku << ": NaN row";
            EXPECT_TRUE(std::isnan(hy.get(3 * len))) << sku << ": +inf row";
            EXPECT_EQ(hy.get(5 * len), kind == SoftmaxKind::kSoftmax ? 0.0 : -inf) << sku << ": half -inf row";
            EXPECT_TRUE(std::isfinite(hy.get(6 * len - 1))) << sku << ": half -inf row";
          });
    }
  }
}

// Strided outputs (the axis cases write dense y and grad_x): y padded, transposed or permuted
// along the last and the first axis, up to 65536-element rows (cluster / tma / split rows);
// the backward with y and grad_x strided, and grad_x over y in place (the identical layout:
// the header allows grad_x over grad_y or y; Backward covers grad_y). Every SKU.
TEST_P(SoftmaxGpu, StridedOutputsAndInPlaceOverY) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  struct Case {
    TensorLayout x;
    int axis;
    TensorLayout y;   // forward y; the backward's y
    TensorLayout gx;  // the backward's grad_x (besides in place over y)
  };
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  auto st = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> str) { return TensorLayout::strided(t, s, str); };
  const std::vector<Case> cases = {
      {c({64, 256}), -1, st({64, 256}, {384, 1}), st({64, 256}, {1, 64})},
      {c({256, 64}), -1, st({256, 64}, {1, 256}), st({256, 64}, {72, 1})},
      {c({3, 65536}), -1, st({3, 65536}, {65600, 1}), st({3, 65536}, {65536 + 128, 1})},
      {c({37, 5, 6}), 0, st({37, 5, 6}, {1, 222, 37}), st({37, 5, 6}, {40, 8, 1})},
      {c({17, 1000}), 1, st({17, 1000}, {1008, 1}), st({17, 1000}, {1, 17})},
  };
  for (const auto& cs : cases)
    for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
      SoftmaxDescriptor d{cs.x, cs.y, cs.axis, kind};
      SCOPED_TRACE(d.to_string());
      HostTensor hx(cs.x), hy(cs.y);
      fill_random(hx, -20, 10);
      auto want = reference::softmax(d, hx);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
      for_each_sku<SoftmaxPlan>(
          d, [&] { dy.poison(0xFF, test_stream()); },
          [&](const SoftmaxPlan& p, Workspace ws) { return p.run(test_stream(), ws, SoftmaxArgs{.x = dx.data(), .y = dy.data()}); },
          [&](const std::string& sku) {
            ASSERT_TRUE(dy.download(hy, test_stream()));
            EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
          });
      // backward from y as the forward stores it (rounded to the dtype), grad_y dense
      for (std::int64_t i = 0; i < cs.y.numel(); ++i) hy.set(i, want->exact[static_cast<std::size_t>(i)]);
      const TensorLayout gl = c(std::vector<std::int64_t>(cs.x.shape_span().begin(), cs.x.shape_span().end()));
      HostTensor hg(gl);
      fill_random(hg, -2, 2);
      for (bool over_y : {false, true}) {
        SoftmaxBackwardDescriptor bd{gl, cs.y, over_y ? cs.y : cs.gx, cs.axis, kind};
        SCOPED_TRACE(bd.to_string() + (over_y ? " grad_x over y" : ""));
        auto bwant = reference::softmax_backward(bd, hg, hy);
        ASSERT_TRUE(bwant.has_value()) << bwant.error().to_string();
        HostTensor hgx(bd.grad_x);
        DeviceTensor dg(hg, test_stream()), dys(hy, test_stream()), dgx(hgx, test_stream());
        for_each_sku<SoftmaxBackwardPlan>(
            bd,
            [&] {
              dys.upload(hy, test_stream());
              dgx.poison(0xFF, test_stream());
            },
            [&](const SoftmaxBackwardPlan& p, Workspace ws) {
              return p.run(test_stream(), ws,
                           SoftmaxBackwardArgs{.grad_y = dg.data(), .y = dys.data(), .grad_x = over_y ? dys.data() : dgx.data()});
            },
            [&](const std::string& sku) {
              ASSERT_TRUE((over_y ? dys : dgx).download(hgx, test_stream()));
              EXPECT_TRUE(check_close(hgx, bwant.value(), sku + " " + bd.to_string()));
            });
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, SoftmaxGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Run-time refusals of the SKU forced by `force` on [rows, len] f32: null, misaligned,
// aliasing, and the workspace (split_row); outputs poisoned and untouched after.
void softmax_run_refusals(std::int64_t rows, std::int64_t len, const std::string& force) {
  const auto x = TensorLayout::contiguous(DType::kF32, {rows, len});
  PlanPreference pref;
  pref.force_sku = force;
  auto fwd = SoftmaxPlan::select(test_stream(), SoftmaxDescriptor{x, x}, pref);
  auto bwd = SoftmaxBackwardPlan::select(test_stream(), SoftmaxBackwardDescriptor{x, x, x}, pref);
  ASSERT_TRUE(fwd && bwd) << (fwd ? bwd.error().to_string() : fwd.error().to_string());
  HostTensor hx(x);
  fill_random(hx, -2, 2);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream());
  Untouched y(x), gx(x);
  const void *xp = dx.data(), *gp = dg.data();
  void* x_row1 = static_cast<float*>(dx.data()) + len;
  const std::size_t fneed = fwd->workspace_size(), bneed = bwd->workspace_size();
  // split_row keeps its slice statistics in the workspace; the other SKUs need none
  const bool split = force.find("split_row") != std::string::npos;
  EXPECT_EQ(fneed > 0, split) << fwd->sku().name() << " workspace " << fneed;
  EXPECT_EQ(bneed > 0, split) << bwd->sku().name() << " workspace " << bneed;
  const Workspace ws = test_workspace(std::max(fneed, bneed) + kWorkspaceAlignment);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const SoftmaxBackwardArgs bargs{.grad_y = gp, .y = xp, .grad_x = gx.data()};
  void* g_row1 = static_cast<float*>(dg.data()) + len;
  auto mis = [](const void* p) { return static_cast<const char*>(p) + 4; };
  std::vector<RunRefusal> rows_ = {
      {"forward null x", [&] { return fwd->run(s, ws, {.x = nullptr, .y = y.data()}); }, kBad, "args.x is null"},
      {"forward null y", [&] { return fwd->run(s, ws, {.x = xp, .y = nullptr}); }, kBad, "args.y is null"},
      {"forward misaligned x", [&] { return fwd->run(s, ws, {.x = static_cast<const char*>(xp) + 4, .y = y.data()}); },
       kMis, "not aligned to x.alignment = 16"},
      {"forward y over x shifted", [&] { return fwd->run(s, ws, {.x = xp, .y = x_row1}); }, kBad, "args.y overlaps args.x"},
      {"backward null y", [&] { auto a = bargs; a.y = nullptr; return bwd->run(s, ws, a); }, kBad, "args.y is null"},
      {"backward misaligned grad_x", [&] {
         auto a = bargs;
         a.grad_x = static_cast<char*>(gx.data()) + 4;
         return bwd->run(s, ws, a);
       }, kMis, "not aligned to grad_x.alignment = 16"},
      // (one row past x's buffer, so the check may name the next allocation first)
      {"backward grad_x over y shifted", [&] { auto a = bargs; a.grad_x = x_row1; return bwd->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args."},
      // every other pointer of both plans: null, misaligned (4 bytes: below the declared 16)
      {"forward misaligned y", [&] { return fwd->run(s, ws, {.x = xp, .y = const_cast<char*>(mis(y.data()))}); }, kMis,
       "not aligned to y.alignment = 16"},
      {"backward null grad_y", [&] { auto a = bargs; a.grad_y = nullptr; return bwd->run(s, ws, a); }, kBad,
       "args.grad_y is null"},
      {"backward null grad_x", [&] { auto a = bargs; a.grad_x = nullptr; return bwd->run(s, ws, a); }, kBad,
       "args.grad_x is null"},
      {"backward misaligned grad_y", [&] { auto a = bargs; a.grad_y = mis(a.grad_y); return bwd->run(s, ws, a); }, kMis,
       "not aligned to grad_y.alignment = 16"},
      {"backward misaligned y", [&] { auto a = bargs; a.y = mis(a.y); return bwd->run(s, ws, a); }, kMis,
       "not aligned to y.alignment = 16"},
      {"backward grad_x over grad_y shifted", [&] { auto a = bargs; a.grad_x = g_row1; return bwd->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args.grad_y without the identical layout"},
  };
  if (fneed > 0) {
    auto w = workspace_refusals("forward", [&](Workspace wsp) { return fwd->run(s, wsp, {.x = xp, .y = y.data()}); }, ws, fneed);
    rows_.insert(rows_.end(), w.begin(), w.end());
  }
  if (bneed > 0) {
    auto w = workspace_refusals("backward", [&](Workspace wsp) { return bwd->run(s, wsp, bargs); }, ws, bneed);
    rows_.insert(rows_.end(), w.begin(), w.end());
  }
  expect_run_refusals(rows_, {&y, &gx});
}

TEST(SoftmaxGpuRefusals, WarpRow) {
  BARACUDA_REQUIRE_GPU();
  softmax_run_refusals(8, 64, "*warp_row_vec16*");
}
TEST(SoftmaxGpuRefusals, SplitRowWorkspace) {
  BARACUDA_REQUIRE_GPU();
  softmax_run_refusals(4, 20000, "*split_row_vec16*");
}
TEST(SoftmaxGpuRefusals, Column) {
  BARACUDA_REQUIRE_GPU();
  softmax_run_refusals(8, 64, "*column*");
}

}  // namespace
}  // namespace baracuda::test
