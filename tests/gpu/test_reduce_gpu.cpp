// GPU tests of the reduction family against reference::reduce & co: every kind x dtype, axes
// last / middle / first / several / all, rows of 1, 7, 1000, 4096, 65536 and 262144 elements,
// many rows, strided views (padded rows, a transposed axis, permuted dims), keepdim, rank 0,
// empty reductions; every accepting SKU forced in turn, poisoned outputs and guard bytes;
// the backward against reference::reduce_backward (also prod with zeros, ties, every kind
// over 262144-element groups, strided grad_x / grad_y / y); max / amin, norm p = -inf, 0.5,
// -1.5, corrections 0 / 1 / 2.5 / 3; strided y, y over x in place; NaN propagation; integer
// sums (wrapping), traces, any / all / count over every dtype they take; the
// run-time refusals (null, misaligned, aliasing, workspace too small) of every plan with
// outputs untouched.
// Filter: --gtest_filter='*Reduce*'
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>
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

// Uniform values in [lo, hi] over h's whole storage: broadcast views (stride 0, overlapping
// strides) have far more logical elements than stored ones.
void fill_storage(HostTensor& h, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  const DType t = h.layout().dtype;
  const auto n = static_cast<std::int64_t>(h.storage_bytes() / dtype_size(t));
  for (std::int64_t i = 0; i < n; ++i) reference::store_from_double(t, h.storage(), i, u(rng()));
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

// The backward of `d` on every SKU: y = the reference forward of x (rounded to y's dtype, as
// autograd holds it), grad_x poisoned, checked against reference::reduce_backward.
void check_backward_every_sku(const ReduceBackwardDescriptor& d, const HostTensor& hx, const HostTensor& hg) {
  const ReduceDescriptor fd{d.x, d.y, d.axes, d.keepdim, d.kind, d.p, d.correction};
  HostTensor hy(d.y), hgx(d.grad_x);
  auto fy = reference::reduce(fd, hx);
  ASSERT_TRUE(fy.has_value()) << fy.error().to_string();
  for (std::int64_t i = 0; i < d.y.numel(); ++i) hy.set(i, fy->exact[static_cast<std::size_t>(i)]);
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

TEST_P(ReduceGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : reduce_cases(t))
    for (const auto& k : kKinds) {
      if (c.x.numel() == 0 || k.kind == ReduceKind::kMin) continue;
      if (c.x.numel() > 300000 && k.kind != ReduceKind::kSum && k.kind != ReduceKind::kVar) continue;
      const TensorLayout yl = reduced_layout(c.x, c.axes, c.keepdim, t).value();
      const TensorLayout gx = TensorLayout::contiguous(t, c.x.shape_span());
      ReduceBackwardDescriptor d{yl, c.x, yl, gx, c.axes, c.keepdim, k.kind, k.p, k.correction};
      SCOPED_TRACE(c.name + " " + d.to_string());
      HostTensor hx(c.x), hg(yl);
      fill_for(hx, k.kind);
      fill_random(hg, -2, 2);
      check_backward_every_sku(d, hx, hg);
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

// Trace's x: a diagonal of stride n + 1 (warp / block rows only see the empty one), a
// transposed x; and two broadcast views whose diagonals reach the other kernels: strides
// {1, 0} make it unit-stride (warp_row at 100, split_row at 20000 elements), strides {1, 1}
// give 9000 elements of stride 2 (generic, split in slices).
std::vector<TensorLayout> trace_cases(DType t) {
  return {TensorLayout::contiguous(t, {7, 5}),          TensorLayout::contiguous(t, {1000, 1000}),
          TensorLayout::strided(t, {64, 300}, {1, 64}), TensorLayout::contiguous(t, {0, 4}),
          TensorLayout::strided(t, {100, 100}, {1, 0}), TensorLayout::strided(t, {20000, 20000}, {1, 0}),
          TensorLayout::strided(t, {9000, 9000}, {1, 1})};
}

// Trace of x's dtype into y_dtype over every trace case, every SKU; inputs in [lo, hi].
void check_trace_every_case(DType t, DType y_dtype, double lo, double hi, bool exact) {
  for (const auto& x : trace_cases(t)) {
    TraceDescriptor d{x, TensorLayout::contiguous(y_dtype, {})};
    SCOPED_TRACE(d.to_string());
    HostTensor hx(x);
    fill_storage(hx, lo, hi);
    auto want = reference::trace(d, hx);
    ASSERT_TRUE(want.has_value());
    DeviceTensor dx(hx, test_stream());
    check_every_sku<TracePlan, TraceArgs>(d, dx, d.y, want.value(), exact);
  }
}

TEST_P(ReduceGpu, Trace) {
  BARACUDA_REQUIRE_GPU();
  check_trace_every_case(GetParam(), GetParam(), -3, 3, false);
}

// The kinds and options the main tables leave out, forward and backward on every SKU: max and
// amin (aliases of amax / min with their own ReduceKind), norm p = -inf (its own kernel op),
// p = 0.5 (the backward's p < 1 branch) and p = -1.5, var with correction 0 and 2.5, std
// with torch's default correction 1 and with 3 (n - correction <= 0 on short rows: inf /
// NaN as torch). Cases: one per SKU family and layout class of reduce_cases (2 x 262144
// included, also for the backward; general p only up to 100000 elements).
TEST_P(ReduceGpu, MoreKindsAndCorrections) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const KindCase more[] = {
      {ReduceKind::kMax},     {ReduceKind::kAmin},       {ReduceKind::kNorm, -std::numeric_limits<double>::infinity()},
      {ReduceKind::kNorm, 0.5}, {ReduceKind::kNorm, -1.5}, {ReduceKind::kVar, 2, 0},
      {ReduceKind::kVar, 2, 2.5}, {ReduceKind::kStd, 2, 1}, {ReduceKind::kStd, 2, 3},
  };
  const std::set<std::string> names = {"len1",        "len7",       "len1000",     "len4096",   "len262144",
                                       "len_odd",     "many_rows",  "axis_first",  "axis_first_long", "axis_middle",
                                       "several",     "all_long",   "keepdim",     "padded_rows", "transposed_axis",
                                       "permuted",    "rank0",      "empty_rows"};
  for (const auto& c : reduce_cases(t)) {
    if (!names.count(c.name)) continue;
    for (const auto& k : more) {
      // general p: the reference's long-double pow costs ~1 us an element; the big cases add
      // no kernel path (p = 3 in Forward takes the same norm op on every SKU)
      const bool general_p = k.kind == ReduceKind::kNorm && !std::isinf(k.p);
      if (general_p && c.x.numel() > 100000) continue;
      const TensorLayout y = reduced_layout(c.x, c.axes, c.keepdim, t).value();
      ReduceDescriptor d{c.x, y, c.axes, c.keepdim, k.kind, k.p, k.correction};
      SCOPED_TRACE(c.name + " " + d.to_string());
      HostTensor hx(c.x);
      fill_random(hx, -3, 3);
      auto want = reference::reduce(d, hx);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream());
      check_every_sku<ReducePlan, ReduceArgs>(d, dx, y, want.value(), false);
      if (c.x.numel() == 0) continue;
      HostTensor hg(y);
      fill_random(hg, -2, 2);
      check_backward_every_sku(
          ReduceBackwardDescriptor{y, c.x, y, TensorLayout::contiguous(t, c.x.shape_span()), c.axes, c.keepdim, k.kind, k.p,
                                   k.correction},
          hx, hg);
    }
  }
}

// The backward where its group statistics decide: prod and norm p = 0.5 / -1.5 with 0, 1 and 2
// zeros in a group (rows 0, 1, 2 mod 3: torch's zero rules), norm +-inf with 0, 1, 2 NaNs, amax / amin / max / min / norm +-inf with dense ties
// (integers in [-3, 3]: the gradient splits evenly among them), along rows (axis 1) and
// columns (axis 0), up to 262144 elements a group; every kind on the 2 x 262144 rows
// Backward skips.
TEST_P(ReduceGpu, BackwardZerosTiesLongGroups) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const double inf = std::numeric_limits<double>::infinity();
  const KindCase tie_kinds[] = {{ReduceKind::kAmax}, {ReduceKind::kAmin}, {ReduceKind::kMax},
                                {ReduceKind::kMin},  {ReduceKind::kNorm, inf}, {ReduceKind::kNorm, -inf}};
  for (std::vector<std::int64_t> shape : std::vector<std::vector<std::int64_t>>{{6, 7}, {6, 1000}, {6, 8192}, {3, 262144}})
    for (int axis : {1, 0}) {
      if (axis == 0 && shape[1] > 8192) continue;
      // axis 0: the same groups laid out as columns of the transposed shape
      const std::int64_t groups = shape[0], n = shape[1];
      const TensorLayout x = axis == 1 ? TensorLayout::contiguous(t, {groups, n}) : TensorLayout::contiguous(t, {n, groups});
      const ReduceAxes ax = ReduceAxes::of({axis});
      const TensorLayout y = reduced_layout(x, ax, false, t).value();
      auto at = [&](std::int64_t g, std::int64_t e) { return axis == 1 ? g * n + e : e * groups + g; };
      HostTensor hg(y);
      fill_random(hg, -2, 2);
      SCOPED_TRACE(x.to_string() + " axis " + std::to_string(axis));
      {  // prod with zeros
        HostTensor hx(x);
        fill_random(hx, 0.99, 1.01);
        for (std::int64_t g = 0; g < groups; ++g)
          for (std::int64_t z = 0; z < g % 3; ++z) hx.set(at(g, (n / 3) * z + (g * 5) % (n / 3 + 1)), 0.0);
        check_backward_every_sku(ReduceBackwardDescriptor{y, x, y, x, ax, false, ReduceKind::kProd}, hx, hg);
        // norm p < 1 with the same zeros: torch's 0 at x == 0 (not 0 * inf); p = -1.5: a zero
        // makes the norm 0 and the whole group's gradient 0
        for (double p : {0.5, -1.5})
          check_backward_every_sku(ReduceBackwardDescriptor{y, x, y, x, ax, false, ReduceKind::kNorm, p}, hx, hg);
      }
      {  // norm +-inf with 0, 1, 2 NaNs a group: y NaN, torch's gradient 0 everywhere in the group
        HostTensor hx(x);
        fill_random(hx, -3, 3);
        for (std::int64_t g = 0; g < groups; ++g)
          for (std::int64_t z = 0; z < g % 3; ++z)
            hx.set(at(g, (n / 3) * z + (g * 7) % (n / 3 + 1)), std::numeric_limits<double>::quiet_NaN());
        for (double p : {inf, -inf})
          check_backward_every_sku(ReduceBackwardDescriptor{y, x, y, x, ax, false, ReduceKind::kNorm, p}, hx, hg);
      }
      HostTensor hx(x);  // ties: integers in -3..3 without 0 (norm -inf's min |x| would be 0, its gradient 0)
      fill_random(hx, -3.49, 3.49);
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        const double v = std::round(hx.get(i));
        hx.set(i, v != 0 ? v : (i % 2 ? 1.0 : -1.0));
      }
      for (const auto& k : tie_kinds)
        check_backward_every_sku(ReduceBackwardDescriptor{y, x, y, x, ax, false, k.kind, k.p}, hx, hg);
      if (n < 262144) continue;
      for (const auto& k : kKinds) {
        HostTensor hk(x);
        fill_for(hk, k.kind);
        check_backward_every_sku(ReduceBackwardDescriptor{y, x, y, x, ax, false, k.kind, k.p, k.correction}, hk, hg);
      }
    }
}

// Strided outputs: y with padded / transposed strides (forward, every kind of the main table,
// and argmax / argmin / any / all / count_nonzero),
// and the backward with grad_x, grad_y and y strided (transposed, padded); y over x in place
// where it is allowed (the identical layout: a reduction of a size-1 dim), grad_x over x in
// place; the empty
// backward (nothing to write, run() succeeds, guards intact).
TEST_P(ReduceGpu, StridedOutputsAndInPlace) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  struct Strided {
    std::string name;
    TensorLayout x;
    ReduceAxes axes;
    TensorLayout y;
  };
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  auto st = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> str) { return TensorLayout::strided(t, s, str); };
  const std::vector<Strided> cases = {
      {"y_padded", c({64, 256}), ReduceAxes::of({1}), st({64}, {3})},
      {"y_transposed", c({8, 16, 128}), ReduceAxes::of({2}), st({8, 16}, {1, 8})},
      {"y_column_padded", c({1000, 48}), ReduceAxes::of({0}), st({48}, {2})},
      {"y_keepdim_strided", c({6, 5, 4}), ReduceAxes::of({1}), st({6, 1, 4}, {1, 1, 6})},
      {"x_and_y_transposed", st({256, 64}, {1, 256}), ReduceAxes::of({0}), st({64}, {5})},
  };
  for (const auto& sc : cases)
    for (const auto& k : kKinds) {
      ReduceDescriptor d{sc.x, sc.y, sc.axes, false, k.kind, k.p, k.correction};
      if (sc.y.rank == sc.x.rank) d.keepdim = true;
      SCOPED_TRACE(sc.name + " " + d.to_string());
      HostTensor hx(sc.x);
      fill_for(hx, k.kind);
      auto want = reference::reduce(d, hx);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream());
      check_every_sku<ReducePlan, ReduceArgs>(d, dx, sc.y, want.value(), false);
      // backward: grad_x transposed (or padded), grad_y / y as the case's y
      std::vector<std::int64_t> gs(sc.x.shape_span().begin(), sc.x.shape_span().end()), gstr(gs.size());
      std::int64_t stride = 1;
      for (std::size_t i = 0; i < gs.size(); ++i) {  // column-major: every dim's stride differs from x's row-major one
        gstr[i] = stride;
        stride *= gs[i] + (i == 0 ? 1 : 0);
      }
      const TensorLayout gx = TensorLayout::strided(t, gs, gstr);
      HostTensor hg(sc.y);
      fill_random(hg, -2, 2);
      check_backward_every_sku(ReduceBackwardDescriptor{sc.y, sc.x, sc.y, gx, sc.axes, d.keepdim, k.kind, k.p, k.correction},
                               hx, hg);
    }
  // argmax / argmin, any / all, count_nonzero into the same strided y's (i64 / bool); exact
  for (const auto& sc : cases) {
    std::vector<std::int64_t> ys(sc.y.shape_span().begin(), sc.y.shape_span().end()),
        ystr(sc.y.strides.begin(), sc.y.strides.begin() + sc.y.rank);
    auto y_of = [&](DType yt) { return TensorLayout::strided(yt, ys, ystr); };
    const bool keep = sc.y.rank == sc.x.rank;
    SCOPED_TRACE(sc.name + " arg / bool / count");
    HostTensor hx(sc.x);
    fill_random(hx, -3.49, 3.49);
    for (std::int64_t i = 0; i < sc.x.numel(); i += 2) hx.set(i, std::round(hx.get(i)));
    DeviceTensor dx(hx, test_stream());
    for (auto kind : {ArgReduceKind::kArgmax, ArgReduceKind::kArgmin}) {
      ArgReduceDescriptor d{sc.x, y_of(DType::kI64), sc.axes, keep, kind};
      auto want = reference::arg_reduce(d, hx);
      ASSERT_TRUE(want.has_value());
      check_every_sku<ArgReducePlan, ArgReduceArgs>(d, dx, d.y, want.value(), true);
    }
    for (auto kind : {BoolReduceKind::kAny, BoolReduceKind::kAll}) {
      BoolReduceDescriptor d{sc.x, y_of(DType::kBool), sc.axes, keep, kind};
      auto want = reference::bool_reduce(d, hx);
      ASSERT_TRUE(want.has_value());
      check_every_sku<BoolReducePlan, BoolReduceArgs>(d, dx, d.y, want.value(), true);
    }
    CountReduceDescriptor d{sc.x, y_of(DType::kI64), sc.axes, keep};
    auto want = reference::count_reduce(d, hx);
    ASSERT_TRUE(want.has_value());
    check_every_sku<CountReducePlan, CountReduceArgs>(d, dx, d.y, want.value(), true);
  }
  // y over x: a reduction of a size-1 dim with keepdim keeps x's layout
  for (auto kind : {ReduceKind::kSum, ReduceKind::kAmax, ReduceKind::kMean, ReduceKind::kProd}) {
    const TensorLayout x = c({300, 1});
    ReduceDescriptor d{x, x, ReduceAxes::of({1}), true, kind};
    SCOPED_TRACE(std::string("in place ") + d.to_string());
    HostTensor hx(x), hy(x);
    fill_random(hx, -3, 3);
    auto want = reference::reduce(d, hx);
    ASSERT_TRUE(want.has_value());
    DeviceTensor dx(hx, test_stream());
    for_each_sku<ReducePlan>(
        d, [&] { dx.upload(hx, test_stream()); },
        [&](const ReducePlan& p, Workspace ws) { return p.run(test_stream(), ws, ReduceArgs{.x = dx.data(), .y = dx.data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dx.download(hy, test_stream()));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
        });
  }
  // grad_x over x in place (the identical layout is allowed): kinds that read x, a row and a column
  for (const auto& [x, axis] : std::vector<std::pair<TensorLayout, int>>{{c({64, 256}), 1}, {c({300, 16}), 0}})
    for (const auto& k : kKinds) {
      if (k.kind == ReduceKind::kSum || k.kind == ReduceKind::kMean) continue;
      const ReduceAxes ax = ReduceAxes::of({axis});
      const TensorLayout y = reduced_layout(x, ax, false, t).value();
      ReduceBackwardDescriptor d{y, x, y, x, ax, false, k.kind, k.p, k.correction};
      SCOPED_TRACE(d.to_string() + " grad_x over x");
      HostTensor hx(x), hy(y), hg(y), hgx(x);
      fill_for(hx, k.kind);
      fill_random(hg, -2, 2);
      auto fy = reference::reduce(ReduceDescriptor{x, y, ax, false, k.kind, k.p, k.correction}, hx);
      ASSERT_TRUE(fy.has_value());
      for (std::int64_t i = 0; i < y.numel(); ++i) hy.set(i, fy->exact[static_cast<std::size_t>(i)]);
      auto want = reference::reduce_backward(d, hg, hx, hy);
      ASSERT_TRUE(want.has_value());
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream()), dg(hg, test_stream());
      for_each_sku<ReduceBackwardPlan>(
          d, [&] { dx.upload(hx, test_stream()); },
          [&](const ReduceBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws,
                         ReduceBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .y = dy.data(), .grad_x = dx.data()});
          },
          [&](const std::string& sku) {
            ASSERT_TRUE(dx.download(hgx, test_stream()));
            EXPECT_TRUE(check_close(hgx, want.value(), sku + " " + d.to_string()));
          });
    }
  // the empty backward: x [16, 0] / [0, 16] (sum, mean, var, std, prod, lse, norm 2)
  for (auto x : {c({16, 0}), c({0, 16})})
    for (const auto& k : kKinds) {
      if (no_identity(k)) continue;
      const TensorLayout y = reduced_layout(x, ReduceAxes::of({1}), false, t).value();
      HostTensor hx(x), hg(y);
      fill_random(hg, -1, 1);
      check_backward_every_sku(ReduceBackwardDescriptor{y, x, y, x, ReduceAxes::of({1}), false, k.kind, k.p, k.correction},
                               hx, hg);
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

// i64 sums that wrap (two's complement, as torch): values k * 2^40 with k in [2^21, 2^22], so
// every partial and wrapped sum is a multiple of 2^40 below 2^63, exact in the reference's
// doubles; rows, columns and all axes, every SKU. Exact.
TEST(ReduceIntGpu, I64SumWraps) {
  BARACUDA_REQUIRE_GPU();
  for (auto [shape, axes] : std::vector<std::pair<std::vector<std::int64_t>, ReduceAxes>>{
           {{8, 1000}, ReduceAxes::of({1})}, {{4, 65536}, ReduceAxes::of({1})}, {{1000, 48}, ReduceAxes::of({0})},
           {{300, 301}, ReduceAxes::all()}}) {
    const TensorLayout x = TensorLayout::contiguous(DType::kI64, shape);
    SCOPED_TRACE(x.to_string() + " axes " + axes.to_string());
    HostTensor hx(x);
    fill_random(hx, 2097152, 4194304);
    for (std::int64_t i = 0; i < x.numel(); ++i) hx.set(i, std::ldexp(std::round(hx.get(i)), 40));
    ReduceDescriptor d{x, reduced_layout(x, axes, false, DType::kI64).value(), axes, false, ReduceKind::kSum};
    auto want = reference::reduce(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream());
    check_every_sku<ReducePlan, ReduceArgs>(d, dx, d.y, want.value(), true);
  }
}

// Integer trace (i32 / i64 -> i64) on every trace case and SKU. Exact.
TEST(ReduceIntGpu, Trace) {
  BARACUDA_REQUIRE_GPU();
  for (DType t : {DType::kI32, DType::kI64}) check_trace_every_case(t, DType::kI64, -1000, 1000, true);
}

// any / all / count_nonzero over every dtype they take (i64, i32, i16, i8, u8, bool, e4m3,
// e5m2; the floating ones in ArgBoolCount) and over several axes for every dtype (ArgBoolCount
// runs one axis or all); argmax / argmin of i32 / i64 over every case of one axis or all
// (columns, strided views, the all-axes flat index: ReduceArgGpu.ChunkTiesNansInfs has rows
// only). Inputs: integers in -3..3 (zeros and dense ties), fp8 with -0.0 and NaN. Exact.
TEST(ReduceIntGpu, BoolCountArgEveryDtype) {
  BARACUDA_REQUIRE_GPU();
  const DType dtypes[] = {DType::kI64, DType::kI32, DType::kI16, DType::kI8,  DType::kU8,  DType::kBool,
                          DType::kE4M3, DType::kE5M2, DType::kF64, DType::kF32, DType::kF16, DType::kBF16};
  for (DType t : dtypes) {
    const bool fp = dtype_is_floating(t);
    const bool wide_float = t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
    for (const auto& c : reduce_cases(t)) {
      if (wide_float && c.axes.count <= 1) continue;  // ArgBoolCount's
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + c.name);
      HostTensor hx(c.x);
      fill_random(hx, -3.49, 3.49);
      for (std::int64_t i = 0; i < c.x.numel(); ++i) hx.set(i, std::round(hx.get(i)));  // -0.0 from round(-0.3)
      if (fp && c.x.numel() > 10) hx.set(c.x.numel() / 3, std::nan(""));
      DeviceTensor dx(hx, test_stream());
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
      if ((t != DType::kI32 && t != DType::kI64) || c.axes.count > 1 || (c.x.numel() == 0 && c.name != "empty_rows")) continue;
      for (auto kind : {ArgReduceKind::kArgmax, ArgReduceKind::kArgmin}) {
        ArgReduceDescriptor ad{c.x, reduced_layout(c.x, c.axes, c.keepdim, DType::kI64).value(), c.axes, c.keepdim, kind};
        auto awant = reference::arg_reduce(ad, hx);
        ASSERT_TRUE(awant.has_value());
        check_every_sku<ArgReducePlan, ArgReduceArgs>(ad, dx, ad.y, awant.value(), true);
      }
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
