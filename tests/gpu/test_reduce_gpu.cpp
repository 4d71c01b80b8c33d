// GPU tests of the reduction family against reference::reduce & co: every kind x dtype, axes
// last / middle / first / several / all, rows of 1, 7, 1000, 4096, 65536 and 262144 elements,
// many rows, strided views (padded rows, a transposed axis, permuted dims), keepdim, rank 0,
// empty reductions; every accepting SKU forced in turn, poisoned outputs and guard bytes;
// the backward against reference::reduce_backward; NaN propagation; integer sums; the
// run-time refusals (null, misaligned, aliasing, workspace too small) of every plan with
// outputs untouched.
// Filter: --gtest_filter='*Reduce*'
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/reference/reduce.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct ReduceCase {
  std::string name;
  TensorLayout x;
  ReduceAxes axes;
  bool keepdim = false;
};

std::vector<ReduceCase> reduce_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  auto st = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> str) { return TensorLayout::strided(t, s, str); };
  using A = ReduceAxes;
  return {
      {"len1", c({64, 1}), A::of({1})},
      {"len7", c({33, 7}), A::of({1})},
      {"len1000", c({17, 1000}), A::of({-1})},
      {"len4096", c({9, 4096}), A::of({1})},
      {"len65536", c({3, 65536}), A::of({1})},
      {"len262144", c({2, 262144}), A::of({1})},
      {"len_odd", c({5, 3001}), A::of({1})},
      {"many_rows", c({40000, 33}), A::of({1})},
      {"many_rows_vec", c({20000, 64}), A::of({1})},
      {"axis_first", c({1000, 48}), A::of({0})},
      {"axis_first_long", c({65536, 16}), A::of({0})},
      {"axis_first_odd", c({777, 5}), A::of({0})},
      {"axis_first_wide", c({1500, 4096}), A::of({0})},  // column_stream: blocks of 16 vectors, row chunks
      {"axis_middle", c({4, 37, 19}), A::of({1})},
      {"axis_middle_long", c({3, 5000, 8}), A::of({1})},
      {"several", c({6, 5, 4, 3}), A::of({0, 2})},
      {"several_trailing", c({7, 16, 32}), A::of({1, 2})},
      {"several_middle_merge", c({8, 16, 32, 4}), A::of({1, 2})},
      {"all", c({33, 65}), A::all()},
      {"all_long", c({300000}), A::all()},
      {"keepdim", c({5, 6, 7}), A::of({1}), true},
      {"keepdim_all", c({5, 6, 7}), A::all(), true},
      {"padded_rows", st({64, 256}, {512, 1}), A::of({1})},
      {"transposed_axis", st({256, 64}, {1, 256}), A::of({1})},
      {"permuted", st({8, 16, 128}, {128, 1024, 1}), A::of({0, 2})},
      {"rank0", c({}), A::all()},
      {"empty_len", c({16, 0}), A::of({1})},
      {"empty_rows", c({0, 16}), A::of({1})},
  };
}

struct KindCase {
  ReduceKind kind;
  double p = 2;
  double correction = 1;
};
const KindCase kKinds[] = {
    {ReduceKind::kSum},  {ReduceKind::kMean},      {ReduceKind::kProd},        {ReduceKind::kAmax},
    {ReduceKind::kMin},  {ReduceKind::kNorm, 1},   {ReduceKind::kNorm, 2},     {ReduceKind::kNorm, 3},
    {ReduceKind::kNorm, 0}, {ReduceKind::kNorm, std::numeric_limits<double>::infinity()},
    {ReduceKind::kLogSumExp}, {ReduceKind::kVar, 2, 1}, {ReduceKind::kStd, 2, 0},
};

bool no_identity(const KindCase& k) {
  return k.kind == ReduceKind::kAmax || k.kind == ReduceKind::kMin || k.kind == ReduceKind::kMax ||
         k.kind == ReduceKind::kAmin || (k.kind == ReduceKind::kNorm && std::isinf(k.p));
}

void fill_for(HostTensor& h, ReduceKind k) {
  if (k == ReduceKind::kProd) fill_random(h, 0.99, 1.01);
  else fill_random(h, -3, 3);
}

// Runs every accepting SKU of `d` on x (poisoned y), checks y against `want` (exact or close).
template <class PlanT, class ArgsT>
void check_every_sku(const typename PlanT::Descriptor& d, const DeviceTensor& dx, const TensorLayout& y,
                     const reference::Result& want, bool exact) {
  HostTensor hy(y);
  DeviceTensor dy(hy, test_stream());
  for_each_sku<PlanT>(
      d, [&] { dy.poison(0xFF, test_stream()); },
      [&](const PlanT& p, Workspace ws) { return p.run(test_stream(), ws, ArgsT{.x = dx.data(), .y = dy.data()}); },
      [&](const std::string& sku) {
        ASSERT_TRUE(dy.download(hy, test_stream()));
        if (exact) EXPECT_TRUE(check_exact(hy, want, sku + " " + d.to_string()));
        else EXPECT_TRUE(check_close(hy, want, sku + " " + d.to_string()));
      });
}

class ReduceGpu : public ::testing::TestWithParam<DType> {};

TEST_P(ReduceGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : reduce_cases(t))
    for (const auto& k : kKinds) {
      if (no_identity(k) && c.x.numel() == 0 && c.name == "empty_len") continue;  // refused (tested on the CPU)
      const TensorLayout y = reduced_layout(c.x, c.axes, c.keepdim, t).value();
      ReduceDescriptor d{c.x, y, c.axes, c.keepdim, k.kind, k.p, k.correction};
      SCOPED_TRACE(c.name + " " + d.to_string());
      HostTensor hx(c.x);
      fill_for(hx, k.kind);
      auto want = reference::reduce(d, hx);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream());
      check_every_sku<ReducePlan, ReduceArgs>(d, dx, y, want.value(), false);
    }
}

TEST_P(ReduceGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : reduce_cases(t))
    for (const auto& k : kKinds) {
      if (c.x.numel() == 0 || k.kind == ReduceKind::kMin) continue;
      if (c.x.numel() > 300000 && k.kind != ReduceKind::kSum && k.kind != ReduceKind::kVar) continue;
      const TensorLayout yl = reduced_layout(c.x, c.axes, c.keepdim, t).value();
      const TensorLayout gx = TensorLayout::contiguous(t, c.x.shape_span());
      ReduceDescriptor fd{c.x, yl, c.axes, c.keepdim, k.kind, k.p, k.correction};
      ReduceBackwardDescriptor d{yl, c.x, yl, gx, c.axes, c.keepdim, k.kind, k.p, k.correction};
      SCOPED_TRACE(c.name + " " + d.to_string());
      HostTensor hx(c.x), hy(yl), hg(yl), hgx(gx);
      fill_for(hx, k.kind);
      fill_random(hg, -2, 2);
      auto fy = reference::reduce(fd, hx);
      ASSERT_TRUE(fy.has_value());
      for (std::int64_t i = 0; i < yl.numel(); ++i) hy.set(i, fy->exact[static_cast<std::size_t>(i)]);
      auto want = reference::reduce_backward(d, hg, hx, hy);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream()), dg(hg, test_stream()), dgx(hgx, test_stream());
      for_each_sku<ReduceBackwardPlan>(
          d, [&] { dgx.poison(0xFF, test_stream()); },
          [&](const ReduceBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws,
                         ReduceBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .y = dy.data(), .grad_x = dgx.data()});
          },
          [&](const std::string& sku) {
            ASSERT_TRUE(dgx.download(hgx, test_stream()));
            EXPECT_TRUE(check_close(hgx, want.value(), sku + " " + d.to_string()));
          });
    }
}

// NaN propagates through amax / amin (torch.amax) and logsumexp, on every path; +inf and an
// all -inf row (row 2) keep torch's results.
TEST_P(ReduceGpu, NanPropagation) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (std::int64_t len : {7, 1000, 8192, 262144}) {
    const auto l = TensorLayout::contiguous(t, {4, len});
    HostTensor hx(l);
    fill_random(hx, -5, 5);
    hx.set(len + len / 2, std::nan(""));
    hx.set(3 * len + len - 1, std::nan(""));
    hx.set(len / 3, INFINITY);
    for (std::int64_t i = 0; i < len; ++i) hx.set(2 * len + i, -INFINITY);
    for (auto kind : {ReduceKind::kAmax, ReduceKind::kAmin, ReduceKind::kLogSumExp}) {
      for (int axis : {0, 1}) {
        ReduceDescriptor d{l, reduced_layout(l, ReduceAxes::of({axis}), false, t).value(), ReduceAxes::of({axis}), false, kind};
        HostTensor hy(d.y);
        auto want = reference::reduce(d, hx);
        DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
        for_each_sku<ReducePlan>(
            d, [&] { dy.poison(0xFF, test_stream()); },
            [&](const ReducePlan& p, Workspace ws) { return p.run(test_stream(), ws, ReduceArgs{.x = dx.data(), .y = dy.data()}); },
            [&](const std::string& sku) {
              ASSERT_TRUE(dy.download(hy, test_stream()));
              EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
              if (axis == 1) EXPECT_TRUE(std::isnan(hy.get(1)) && std::isnan(hy.get(3))) << sku;
            });
      }
    }
  }
}

// argmax / argmin (ties to the first index, NaN wins), any / all, count_nonzero: exact.
TEST_P(ReduceGpu, ArgBoolCount) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : reduce_cases(t)) {
    if (c.axes.count > 1) continue;
    SCOPED_TRACE(c.name);
    HostTensor hx(c.x);
    fill_random(hx, -3, 3);
    // ties and zeros: round half the elements to integers in [-3, 3]
    for (std::int64_t i = 0; i < c.x.numel(); i += 2) hx.set(i, std::round(hx.get(i)));
    if (c.x.numel() > 10) hx.set(c.x.numel() / 3, std::nan(""));
    DeviceTensor dx(hx, test_stream());
    if (c.x.numel() > 0 || c.name == "empty_rows")
      for (auto kind : {ArgReduceKind::kArgmax, ArgReduceKind::kArgmin}) {
        ArgReduceDescriptor d{c.x, reduced_layout(c.x, c.axes, c.keepdim, DType::kI64).value(), c.axes, c.keepdim, kind};
        auto want = reference::arg_reduce(d, hx);
        ASSERT_TRUE(want.has_value());
        check_every_sku<ArgReducePlan, ArgReduceArgs>(d, dx, d.y, want.value(), true);
      }
    for (auto kind : {BoolReduceKind::kAny, BoolReduceKind::kAll}) {
      BoolReduceDescriptor d{c.x, reduced_layout(c.x, c.axes, c.keepdim, DType::kBool).value(), c.axes, c.keepdim, kind};
      auto want = reference::bool_reduce(d, hx);
      ASSERT_TRUE(want.has_value());
      check_every_sku<BoolReducePlan, BoolReduceArgs>(d, dx, d.y, want.value(), true);
    }
    CountReduceDescriptor d{c.x, reduced_layout(c.x, c.axes, c.keepdim, DType::kI64).value(), c.axes, c.keepdim};
    auto want = reference::count_reduce(d, hx);
    ASSERT_TRUE(want.has_value());
    check_every_sku<CountReducePlan, CountReduceArgs>(d, dx, d.y, want.value(), true);
  }
}

TEST_P(ReduceGpu, Trace) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (auto x : {TensorLayout::contiguous(t, {7, 5}), TensorLayout::contiguous(t, {1000, 1000}),
                 TensorLayout::strided(t, {64, 300}, {1, 64}), TensorLayout::contiguous(t, {0, 4})}) {
    TraceDescriptor d{x, TensorLayout::contiguous(t, {})};
    HostTensor hx(x);
    fill_random(hx, -3, 3);
    auto want = reference::trace(d, hx);
    ASSERT_TRUE(want.has_value());
    DeviceTensor dx(hx, test_stream());
    check_every_sku<TracePlan, TraceArgs>(d, dx, d.y, want.value(), false);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ReduceGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Integer sum / prod (i32, i64 into i64, wrapping): exact.
TEST(ReduceIntGpu, SumProdArg) {
  BARACUDA_REQUIRE_GPU();
  for (DType t : {DType::kI32, DType::kI64})
    for (const auto& c : reduce_cases(t)) {
      SCOPED_TRACE(c.name);
      for (auto kind : {ReduceKind::kSum, ReduceKind::kProd}) {
      HostTensor hx(c.x);
      fill_random(hx, -1000, 1000);
      // prod: factors -1, 1, 2 keep every wrapped i64 product (0 or +-2^k) exact in a double
      if (kind == ReduceKind::kProd)
        for (std::int64_t i = 0; i < c.x.numel(); ++i) hx.set(i, std::fmod(std::fabs(hx.get(i)), 3.0) < 1 ? -1 : (std::fmod(std::fabs(hx.get(i)), 3.0) < 2 ? 1 : 2));
      DeviceTensor dx(hx, test_stream());
        ReduceDescriptor d{c.x, reduced_layout(c.x, c.axes, c.keepdim, DType::kI64).value(), c.axes, c.keepdim, kind};
        auto want = reference::reduce(d, hx);
        ASSERT_TRUE(want.has_value()) << want.error().to_string();
        check_every_sku<ReducePlan, ReduceArgs>(d, dx, d.y, want.value(), true);
      }
    }
}

// argmax / argmin where the row kernels take a chunk of loaded elements at once
// (ArgOp::add_chunk): dense ties (integers in [-3, 3]), and in float rows 0..3 NaNs and
// some +-inf at random positions, so that the first NaN, the first of tied extremes and
// the tail loop (odd lengths) decide across and inside chunks; i32 / i64 rows too. Exact.
TEST(ReduceArgGpu, ChunkTiesNansInfs) {
  BARACUDA_REQUIRE_GPU();
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64})
    for (std::vector<std::int64_t> shape : std::vector<std::vector<std::int64_t>>{
             {12, 4096}, {4, 65536}, {8, 3001}, {2, 262144}, {300, 2048}, {64, 1040}}) {
      const TensorLayout x = TensorLayout::contiguous(t, shape);
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + x.to_string());
      HostTensor hx(x);
      fill_random(hx, -3.49, 3.49);
      const std::int64_t rows = shape[0], n = shape[1];
      for (std::int64_t i = 0; i < rows * n; ++i) hx.set(i, std::round(hx.get(i)));
      if (!dtype_is_integer(t))
        for (std::int64_t r = 0; r < rows; ++r) {
          std::uniform_int_distribution<std::int64_t> pos(0, n - 1);
          for (std::int64_t k = 0; k < r % 4; ++k) hx.set(r * n + pos(rng()), std::nan(""));
          if (r % 3 == 1)
            for (int k = 0; k < 3; ++k) hx.set(r * n + pos(rng()), k == 1 ? -INFINITY : INFINITY);
        }
      DeviceTensor dx(hx, test_stream());
      for (auto kind : {ArgReduceKind::kArgmax, ArgReduceKind::kArgmin}) {
        ArgReduceDescriptor d{x, reduced_layout(x, ReduceAxes::of({1}), false, DType::kI64).value(), ReduceAxes::of({1}),
                              false, kind};
        auto want = reference::arg_reduce(d, hx);
        ASSERT_TRUE(want.has_value());
        check_every_sku<ArgReducePlan, ArgReduceArgs>(d, dx, d.y, want.value(), true);
      }
    }
}

// Run-time refusals on [2, 262144] f32 under split_row_vec16 (workspace) and a ReduceBackward
// plan: null, misaligned, aliasing, workspace; outputs poisoned and untouched after.
TEST(ReduceRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kF32, {2, 262144});
  const auto y = TensorLayout::contiguous(DType::kF32, {2});
  PlanPreference pref;
  pref.force_sku = "*split_row_vec16*";
  auto fwd = ReducePlan::select(test_stream(), ReduceDescriptor{x, y, ReduceAxes::of({1})}, pref);
  auto bwd = ReduceBackwardPlan::select(test_stream(),
                                        ReduceBackwardDescriptor{y, x, y, x, ReduceAxes::of({1}), false, ReduceKind::kStd});
  ASSERT_TRUE(fwd && bwd) << (fwd ? bwd.error().to_string() : fwd.error().to_string());
  ASSERT_GT(fwd->workspace_size(), 0u);
  HostTensor hx(x), hy(y);
  fill_random(hx, -2, 2);
  fill_random(hy, 1, 2);
  DeviceTensor dx(hx, test_stream()), dyin(hy, test_stream());
  Untouched out(y), gx(x);
  const void* xp = dx.data();
  const std::size_t need = fwd->workspace_size();
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const ReduceBackwardArgs bargs{.grad_y = dyin.data(), .x = xp, .y = dyin.data(), .grad_x = gx.data()};
  std::vector<RunRefusal> rows = {
      {"null x", [&] { return fwd->run(s, ws, {.x = nullptr, .y = out.data()}); }, kBad, "args.x is null"},
      {"null y", [&] { return fwd->run(s, ws, {.x = xp, .y = nullptr}); }, kBad, "args.y is null"},
      {"misaligned x", [&] { return fwd->run(s, ws, {.x = static_cast<const char*>(xp) + 4, .y = out.data()}); }, kMis,
       "not aligned to x.alignment = 16"},
      {"y inside x", [&] { return fwd->run(s, ws, {.x = xp, .y = static_cast<float*>(dx.data()) + 8}); }, kBad,
       "args.y overlaps args.x"},
      {"backward null y", [&] { auto a = bargs; a.y = nullptr; return bwd->run(s, ws, a); }, kBad, "args.y is null"},
      {"backward null x", [&] { auto a = bargs; a.x = nullptr; return bwd->run(s, ws, a); }, kBad, "args.x is null"},
      {"backward misaligned grad_x", [&] {
         auto a = bargs;
         a.grad_x = static_cast<char*>(gx.data()) + 4;
         return bwd->run(s, ws, a);
       }, kMis, "not aligned to grad_x.alignment = 16"},
      {"backward grad_x over grad_y", [&] { auto a = bargs; a.grad_y = gx.data(); return bwd->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args.grad_y"},
  };
  auto wrows = workspace_refusals(
      "split_row_vec16", [&](Workspace w) { return fwd->run(s, w, {.x = xp, .y = out.data()}); }, ws, need);
  rows.insert(rows.end(), wrows.begin(), wrows.end());
  expect_run_refusals(rows, {&out, &gx});
}

// The forward plans share the args {x, y}: under the SKU `force` selects (empty: the
// default), a null x / y, x / y a byte off their 16-byte alignment, y over x (another
// layout), and the workspace rows of a split SKU (`split`: it must need a workspace, else
// none); y poisoned and untouched after.
template <class PlanT, class ArgsT>
void forward_run_refusals(const typename PlanT::Descriptor& d, const std::string& force, bool split) {
  SCOPED_TRACE(d.to_string() + " " + force);
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = PlanT::select(test_stream(), d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  const std::size_t need = plan->workspace_size();
  if (split) {
    ASSERT_GT(need, 0u) << plan->sku().name();
  } else {
    ASSERT_EQ(need, 0u) << plan->sku().name();
  }
  DeviceTensor dx(HostTensor(d.x), test_stream());
  Untouched y(d.y);
  const void* xp = dx.data();
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  auto run = [&](const void* x, void* yp, Workspace w) { return plan->run(s, w, ArgsT{.x = x, .y = yp}); };
  std::vector<RunRefusal> rows = {
      {"null x", [&] { return run(nullptr, y.data(), ws); }, kBad, "args.x is null"},
      {"null y", [&] { return run(xp, nullptr, ws); }, kBad, "args.y is null"},
      {"misaligned x", [&] { return run(static_cast<const char*>(xp) + 1, y.data(), ws); }, kMis,
       "is not aligned to x.alignment = 16 bytes"},
      {"misaligned y", [&] { return run(xp, static_cast<char*>(y.data()) + 1, ws); }, kMis,
       "is not aligned to y.alignment = 16 bytes"},
      {"y over x", [&] { return run(xp, dx.data(), ws); }, kBad, "args.y overlaps args.x without the identical layout"},
  };
  if (need > 0) {
    auto w = workspace_refusals(plan->sku().name(), [&](Workspace wsp) { return run(xp, y.data(), wsp); }, ws, need);
    rows.insert(rows.end(), w.begin(), w.end());
  }
  expect_run_refusals(rows, {&y});
}

// ReduceBackwardPlan of std (reads grad_y, x and y): each pointer null and a byte off, grad_x
// over each input; workspace_size() is 0 (one candidate, `group`, never splits).
void backward_run_refusals() {
  const auto x = TensorLayout::contiguous(DType::kF32, {64, 1000});
  const auto y = TensorLayout::contiguous(DType::kF32, {64});
  auto plan = ReduceBackwardPlan::select(test_stream(),
                                         ReduceBackwardDescriptor{y, x, y, x, ReduceAxes::of({1}), false, ReduceKind::kStd});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  ASSERT_EQ(plan->workspace_size(), 0u) << plan->sku().name();
  // y's buffer is x's size: grad_x laid over it stays inside it
  DeviceTensor dg(HostTensor(y), test_stream()), dx(HostTensor(x), test_stream()), dy(HostTensor(x), test_stream());
  Untouched gx(x);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const ReduceBackwardArgs ok{.grad_y = dg.data(), .x = dx.data(), .y = dy.data(), .grad_x = gx.data()};
  auto off = [](const void* p, std::ptrdiff_t bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; };
  auto row = [&](const char* what, std::function<void(ReduceBackwardArgs&)> change, Code code, std::string needle) {
    return RunRefusal{what, [&s, &plan, ok, change] {
                        auto a = ok;
                        change(a);
                        return plan->run(s, Workspace{}, a);
                      },
                      code, std::move(needle)};
  };
  const std::vector<RunRefusal> rows = {
      row("null grad_y", [](auto& a) { a.grad_y = nullptr; }, kBad, "args.grad_y is null"),
      row("null x", [](auto& a) { a.x = nullptr; }, kBad, "args.x is null (std_backward reads x)"),
      row("null y", [](auto& a) { a.y = nullptr; }, kBad, "args.y is null (std_backward reads y)"),
      row("null grad_x", [](auto& a) { a.grad_x = nullptr; }, kBad, "args.grad_x is null"),
      row("misaligned grad_y", [&](auto& a) { a.grad_y = off(a.grad_y, 4); }, kMis, "is not aligned to grad_y.alignment = 16 bytes"),
      row("misaligned x", [&](auto& a) { a.x = off(a.x, 4); }, kMis, "is not aligned to x.alignment = 16 bytes"),
      row("misaligned y", [&](auto& a) { a.y = off(a.y, 2); }, kMis, "is not aligned to y.alignment = 16 bytes"),
      row("misaligned grad_x", [&](auto& a) { a.grad_x = off(a.grad_x, 8); }, kMis, "is not aligned to grad_x.alignment = 16 bytes"),
      row("grad_x over x shifted", [&](auto& a) { a.grad_x = off(a.x, 32); }, kBad,
          "args.grad_x overlaps args.x without the identical layout"),
      row("grad_x over y", [&](auto& a) { a.grad_x = off(a.y, 0); }, kBad, "args.grad_x overlaps args.y without the identical layout"),
      row("grad_x over grad_y", [&](auto& a) { a.grad_x = off(a.grad_y, 0); }, kBad,
          "args.grad_x overlaps args.grad_y without the identical layout"),
  };
  expect_run_refusals(rows, {&gx});
}

// Every plan of the family: the forward plans under a SKU with a workspace (split_row_vec16,
// column_stream_vec16, trace's generic split of a 9000-element diagonal: x is the
// [9000, 9000] view with strides {1, 1}, 18000 elements) and one without (warp_row), and the
// backward (no workspace).
TEST(ReduceRefusals, EveryPlanRunTable) {
  BARACUDA_REQUIRE_GPU();
  auto c = [](DType t, std::initializer_list<std::int64_t> shape) { return TensorLayout::contiguous(t, shape); };
  const auto x = c(DType::kF32, {2, 262144});
  const auto one = ReduceAxes::of({1});
  forward_run_refusals<ReducePlan, ReduceArgs>(ReduceDescriptor{x, c(DType::kF32, {2}), one}, "*.split_row_vec16[*", true);
  forward_run_refusals<ReducePlan, ReduceArgs>(
      ReduceDescriptor{c(DType::kBF16, {1500, 4096}), c(DType::kBF16, {4096}), ReduceAxes::of({0})}, "*.column_stream_vec16[*", true);
  forward_run_refusals<ReducePlan, ReduceArgs>(ReduceDescriptor{c(DType::kF32, {8, 64}), c(DType::kF32, {8}), one, false,
                                                                ReduceKind::kVar},
                                               "*.warp_row[*", false);
  forward_run_refusals<ArgReducePlan, ArgReduceArgs>(
      ArgReduceDescriptor{x, c(DType::kI64, {2}), one, false, ArgReduceKind::kArgmax}, "*.split_row_vec16[*", true);
  forward_run_refusals<ArgReducePlan, ArgReduceArgs>(
      ArgReduceDescriptor{c(DType::kF16, {8, 64}), c(DType::kI64, {8}), one, false, ArgReduceKind::kArgmin}, "*.warp_row[*", false);
  forward_run_refusals<BoolReducePlan, BoolReduceArgs>(
      BoolReduceDescriptor{x, c(DType::kBool, {2}), one, false, BoolReduceKind::kAny}, "*.split_row_vec16[*", true);
  forward_run_refusals<BoolReducePlan, BoolReduceArgs>(
      BoolReduceDescriptor{c(DType::kI32, {8, 64}), c(DType::kBool, {8}), one, false, BoolReduceKind::kAll}, "*.warp_row[*", false);
  forward_run_refusals<CountReducePlan, CountReduceArgs>(
      CountReduceDescriptor{c(DType::kF16, {2, 262144}), c(DType::kI64, {2}), one, false}, "*.split_row_vec16[*", true);
  forward_run_refusals<CountReducePlan, CountReduceArgs>(
      CountReduceDescriptor{c(DType::kU8, {8, 64}), c(DType::kI64, {8}), one, false}, "*.warp_row[*", false);
  forward_run_refusals<TracePlan, TraceArgs>(
      TraceDescriptor{TensorLayout::strided(DType::kF32, {9000, 9000}, {1, 1}), c(DType::kF32, {})}, "", true);
  forward_run_refusals<TracePlan, TraceArgs>(TraceDescriptor{c(DType::kI32, {7, 5}), c(DType::kI64, {})}, "", false);
  backward_run_refusals();
}

}  // namespace
}  // namespace baracuda::test
