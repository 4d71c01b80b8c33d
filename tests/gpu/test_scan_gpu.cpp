// GPU tests of ScanPlan / ScanBackwardPlan against reference::scan(_backward): every kind x
// dtype (f64, f32, f16, bf16; i32 / i64 for cumsum and cumprod, written as i64, and for
// cummax and cummin, written as x's dtype), forward and reverse, axes last / middle / first,
// rows of 1, 7, 1000, 4096, 65536 and 262144 elements, many rows, one row of 2^26 (cumsum,
// cummax, integer cumsum), strided views (padded rows, permuted kept dims, a transposed axis),
// in place, empty tensors; every accepting SKU forced in turn, poisoned outputs and guard
// bytes; PyTorch's tie / NaN rules of cummax / cummin (bit-exact values and indices; integer
// extremes among runs of ties); strided y / indices / grad_x / saved x and y; and the run-time refusals (null, misaligned, aliasing,
// workspace too small) with outputs untouched.
// Filter: --gtest_filter='*Scan*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/reference/scan.hpp"
#include "axis_cases.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

bool is_maxmin(ScanKind k) { return k == ScanKind::kCummax || k == ScanKind::kCummin; }
bool is_int(DType t) { return t == DType::kI32 || t == DType::kI64; }

using ScanCase = AxisCase;
std::vector<AxisCase> scan_cases(DType t) { return axis_cases(t); }

// Inputs per kind: products near 1 (no overflow over 262144 factors), signed sums, a wide
// range for max / min (16-bit types tie often), moderate exponents for logcumsumexp.
void fill_for(ScanKind k, HostTensor& h) {
  if (is_int(h.layout().dtype)) {
    if (k == ScanKind::kCumprod) fill_random(h, -3, 3);  // wraps: compared bit-exact
    else fill_random(h, -1000, 1000);
    return;
  }
  switch (k) {
    case ScanKind::kCumsum: fill_random(h, -1, 1); break;
    case ScanKind::kCumprod: fill_random(h, 0.995, 1.005); break;
    case ScanKind::kLogcumsumexp: fill_random(h, -5, 5); break;
    default: fill_random(h, -100, 100); break;
  }
}

// y: x's dtype, i64 for integer cumsum / cumprod (torch's promotion).
TensorLayout out_layout(ScanKind k, const TensorLayout& x) {
  const bool promotes = is_int(x.dtype) && !is_maxmin(k);
  return TensorLayout::contiguous(promotes ? DType::kI64 : x.dtype, x.shape_span());
}

// Exact integer element i of h (i32 or i64), also beyond 2^53.
void set_int(HostTensor& h, std::int64_t i, std::int64_t v) {
  const std::int64_t off = reference::offset_of(h.layout(), i);
  if (h.layout().dtype == DType::kI64) std::memcpy(static_cast<std::int64_t*>(h.data()) + off, &v, 8);
  else h.set(i, static_cast<double>(v));
}

// cummax / cummin edge inputs. Floating: +-0, +-inf, NaN, subnormals, huge and tiny values
// sprinkled in. Integer: values in -3..3 (long runs of ties) with the dtype's min and max and
// values next to them sprinkled in.
void fill_edges(HostTensor& h) {
  const DType t = h.layout().dtype;
  if (!is_int(t)) {
    fill_random(h, -100, 100, Fill::kWithEdges);
    return;
  }
  fill_random(h, -3, 3);
  using I32 = std::numeric_limits<std::int32_t>;
  using I64 = std::numeric_limits<std::int64_t>;
  const std::int64_t lo = t == DType::kI32 ? I32::min() : I64::min(), hi = t == DType::kI32 ? I32::max() : I64::max();
  const std::int64_t specials[6] = {lo, lo + 1, hi, hi - 1, hi, lo};
  const std::int64_t n = h.layout().numel();
  for (std::int64_t i = 5; i < n; i += 37) set_int(h, i, specials[(i / 37) % 6]);
}

::testing::AssertionResult check_ints(const HostTensor& got, const std::vector<std::int64_t>& want, const std::string& what) {
  const std::int64_t n = got.layout().numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t g = reference::load_as_int64(got.layout().dtype, got.data(), reference::offset_of(got.layout(), i));
    if (g != want[static_cast<std::size_t>(i)])
      return ::testing::AssertionFailure() << what << ": element " << i << " = " << g << ", want "
                                           << want[static_cast<std::size_t>(i)] << " (seed " << test_seed() << ")";
  }
  return ::testing::AssertionSuccess();
}

// One forward case under every accepting SKU (y / indices: contiguous unless `y_layout` /
// `idx_layout` give strides for them).
void run_forward(ScanKind kind, const TensorLayout& x, int axis, bool reverse, bool in_place, bool edges = false,
                 const TensorLayout* y_layout = nullptr, const TensorLayout* idx_layout = nullptr) {
  const bool idx = is_maxmin(kind);
  const TensorLayout y = in_place ? x : y_layout ? *y_layout : out_layout(kind, x);
  const TensorLayout il = idx_layout ? *idx_layout : TensorLayout::contiguous(DType::kI64, x.shape_span());
  ScanDescriptor d{x, y, idx ? il : TensorLayout{}, axis, kind, reverse};
  HostTensor hx(x), hy(y), hi(il);
  if (edges) fill_edges(hx);
  else fill_for(kind, hx);
  auto want = reference::scan(d, hx);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  DeviceTensor dx(hx, test_stream()), dy(hy, test_stream()), di(hi, test_stream());
  void* y_ptr = in_place ? dx.data() : dy.data();
  for_each_sku<ScanPlan>(
      d,
      [&] {
        dx.upload(hx, test_stream());
        dy.poison(0xFF, test_stream());
        di.poison(0xFF, test_stream());
      },
      [&](const ScanPlan& p, Workspace ws) {
        return p.run(test_stream(), ws, ScanArgs{.x = dx.data(), .y = y_ptr, .indices = idx ? di.data() : nullptr});
      },
      [&](const std::string& sku) {
        const std::string what = sku + " " + d.to_string();
        ASSERT_TRUE((in_place ? dx : dy).download(hy, test_stream()));
        if (is_int(x.dtype)) EXPECT_TRUE(check_ints(hy, want->ints, what));
        else if (idx) EXPECT_TRUE(check_exact(hy, want->values, what));
        else EXPECT_TRUE(check_close(hy, want->values, what));
        if (idx) {
          ASSERT_TRUE(di.download(hi, test_stream()));
          EXPECT_TRUE(check_ints(hi, want->indices, what + " indices"));
        }
      });
}

// One backward case: y and indices from the forward (y rounded to the dtype, as autograd
// holds it), under every accepting SKU (x and y: contiguous unless `xy_layout` gives their
// strides; grad_x: unless `gx_layout` does).
void run_backward(ScanKind kind, const TensorLayout& g, int axis, bool reverse, bool in_place,
                  const TensorLayout* xy_layout = nullptr, const TensorLayout* gx_layout = nullptr) {
  const DType t = g.dtype;
  const TensorLayout l = xy_layout ? *xy_layout : TensorLayout::contiguous(t, g.shape_span());
  const TensorLayout il = TensorLayout::contiguous(DType::kI64, g.shape_span());
  const TensorLayout gx = in_place ? g : gx_layout ? *gx_layout : TensorLayout::contiguous(t, g.shape_span());
  ScanBackwardDescriptor d{g, l, l, il, gx, axis, kind, reverse};
  HostTensor hg(g), hx(l), hy(l), hi(il), hgx(gx);
  // cumprod's gradient sums up to len products of ~e^+-5 over the long rows: small g keeps
  // f16 away from its overflow threshold (an element rounding to 65504 or inf is a coin flip)
  if (kind == ScanKind::kCumprod) fill_random(hg, -0.01, 0.01);
  else fill_random(hg, -2, 2);
  fill_for(kind, hx);
  auto fwd = reference::scan(ScanDescriptor{l, l, il, axis, kind, reverse}, hx);
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  for (std::int64_t i = 0; i < l.numel(); ++i) {
    hy.set(i, fwd->values.exact[static_cast<std::size_t>(i)]);
    if (is_maxmin(kind)) std::memcpy(static_cast<std::int64_t*>(hi.data()) + i, &fwd->indices[static_cast<std::size_t>(i)], 8);
  }
  auto want = reference::scan_backward(d, hg, &hx, &hy, &hi);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  DeviceTensor dg(hg, test_stream()), dx(hx, test_stream()), dy(hy, test_stream()), di(hi, test_stream()),
      dgx(hgx, test_stream());
  void* gx_ptr = in_place ? dg.data() : dgx.data();
  for_each_sku<ScanBackwardPlan>(
      d,
      [&] {
        dg.upload(hg, test_stream());
        dgx.poison(0xFF, test_stream());
      },
      [&](const ScanBackwardPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     ScanBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .y = dy.data(), .indices = di.data(), .grad_x = gx_ptr});
      },
      [&](const std::string& sku) {
        ASSERT_TRUE((in_place ? dg : dgx).download(hgx, test_stream()));
        EXPECT_TRUE(check_close(hgx, want.value(), sku + " " + d.to_string()));
      });
}

const ScanKind kAllKinds[] = {ScanKind::kCumsum, ScanKind::kCumprod, ScanKind::kCummax, ScanKind::kCummin,
                              ScanKind::kLogcumsumexp};

class ScanGpu : public ::testing::TestWithParam<DType> {};

TEST_P(ScanGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (ScanKind kind : kAllKinds) {
    if (is_int(t) && kind == ScanKind::kLogcumsumexp) continue;
    for (const auto& c : scan_cases(t))
      for (bool reverse : {false, true}) {
        if (c.in_place && (is_int(t) || is_maxmin(kind))) continue;  // y's dtype differs / indices
        SCOPED_TRACE(c.name + " " + scan_kind_name(kind) + (reverse ? " reverse" : ""));
        run_forward(kind, c.x, c.axis, reverse, c.in_place);
      }
  }
}

// The backward scans and non-finite inputs: floating dtypes only (integer scans have no
// backward, and integers are finite).
class ScanGpuFloat : public ::testing::TestWithParam<DType> {};

TEST_P(ScanGpuFloat, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (ScanKind kind : kAllKinds)
    for (const auto& c : scan_cases(t))
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(c.name + " " + scan_kind_name(kind) + "_backward" + (reverse ? " reverse" : ""));
        run_backward(kind, c.x, c.axis, reverse, c.in_place);
      }
}

// cummax / cummin with +-0, +-inf, NaN, subnormals and huge values sprinkled in (integers:
// the dtype's extremes among long runs of ties): values and indices bit-exact (PyTorch's >= /
// <= ties, NaN sticks and later NaNs take the index).
TEST_P(ScanGpu, MaxMinEdges) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (std::int64_t len : {7, 1000, 8192, 100000})
    for (ScanKind kind : {ScanKind::kCummax, ScanKind::kCummin})
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(std::to_string(len) + " " + scan_kind_name(kind));
        run_forward(kind, TensorLayout::contiguous(t, {4, len}), -1, reverse, false, true);
      }
}

// Non-finite values in sums and logcumsumexp: NaN propagates, +inf then -inf gives NaN,
// logcumsumexp keeps -inf / +inf as torch's helper does.
TEST_P(ScanGpuFloat, NonFinite) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::int64_t len : {7, 1000, 8192, 100000}) {
    const auto l = TensorLayout::contiguous(t, {4, len});
    for (ScanKind kind : {ScanKind::kCumsum, ScanKind::kLogcumsumexp, ScanKind::kCumprod}) {
      ScanDescriptor d{l, l, {}, -1, kind};
      HostTensor hx(l), hy(l);
      fill_for(kind, hx);
      hx.set(len / 2, std::nan(""));            // row 0: NaN from the middle
      hx.set(len + len / 3, inf);               // row 1: +inf, then -inf
      hx.set(len + len / 3 + 1, -inf);
      for (std::int64_t k = 0; k < len; k += 3) hx.set(2 * len + k, -inf);  // row 2: many -inf
      hx.set(3 * len + len - 1, inf);           // row 3: +inf at the end
      auto want = reference::scan(d, hx);
      ASSERT_TRUE(want.has_value());
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
      for_each_sku<ScanPlan>(
          d, [&] { dy.poison(0xFF, test_stream()); },
          [&](const ScanPlan& p, Workspace ws) { return p.run(test_stream(), ws, ScanArgs{.x = dx.data(), .y = dy.data()}); },
          [&](const std::string& sku) {
            ASSERT_TRUE(dy.download(hy, test_stream()));
            EXPECT_TRUE(check_close(hy, want->values, sku + " " + d.to_string()));
            EXPECT_TRUE(std::isnan(hy.get(len - 1))) << sku << ": NaN row";
          });
    }
  }
}

// cumprod with zeros in x: forward and the division-free backward.
// (integer cumprod with zeros is in Forward: x in -3..3)
TEST_P(ScanGpuFloat, CumprodZeros) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (std::int64_t len : {7, 1000, 8192}) {
    const auto l = TensorLayout::contiguous(t, {6, len});
    ScanBackwardDescriptor d{l, l, l, {}, l, -1, ScanKind::kCumprod};
    HostTensor hg(l), hx(l), hy(l), hgx(l);
    fill_random(hg, -2, 2);
    fill_for(ScanKind::kCumprod, hx);
    for (std::int64_t r = 0; r < 6; ++r) {
      hx.set(r * len + (r * len / 7) % len, 0.0);
      if (r % 2) hx.set(r * len + len - 1 - r, 0.0);
    }
    auto fwd = reference::scan(ScanDescriptor{l, l, {}, -1, ScanKind::kCumprod}, hx).value();
    for (std::int64_t i = 0; i < l.numel(); ++i) hy.set(i, fwd.values.exact[static_cast<std::size_t>(i)]);
    auto want = reference::scan_backward(d, hg, &hx, &hy, nullptr).value();
    DeviceTensor dg(hg, test_stream()), dx(hx, test_stream()), dy(hy, test_stream()), dgx(hgx, test_stream());
    for_each_sku<ScanBackwardPlan>(
        d, [&] { dgx.poison(0xFF, test_stream()); },
        [&](const ScanBackwardPlan& p, Workspace ws) {
          return p.run(test_stream(), ws, ScanBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .y = dy.data(), .grad_x = dgx.data()});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE(dgx.download(hgx, test_stream()));
          EXPECT_TRUE(check_close(hgx, want, sku + " " + d.to_string()));
        });
  }
}

// Strided outputs (the axis cases read strided x but write dense y): y and indices
// transposed or padded, along the last and the first axis; the backward with x, y and
// grad_x strided (grad_y dense) for the floating dtypes. Every kind, both directions.
TEST_P(ScanGpu, StridedOutputs) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const DType yt = is_int(t) ? DType::kI64 : t;
  struct Case {
    TensorLayout x;
    int axis;
    std::vector<std::int64_t> y_strides, idx_strides;
  };
  const std::vector<Case> cases = {
      {TensorLayout::contiguous(t, {64, 300}), -1, {1, 64}, {1, 64}},    // y / indices transposed
      {TensorLayout::contiguous(t, {300, 64}), 0, {72, 1}, {1, 300}},    // y padded rows, indices transposed
      {TensorLayout::strided(t, {256, 64}, {1, 256}), 1, {80, 1}, {65, 1}},  // x transposed, y / indices padded
      {TensorLayout::contiguous(t, {3, 20000}), -1, {20008, 1}, {1, 3}},  // look-back rows, y padded
  };
  for (const auto& c : cases)
    for (ScanKind kind : kAllKinds) {
      if (is_int(t) && kind == ScanKind::kLogcumsumexp) continue;
      const std::vector<std::int64_t> shape(c.x.shape_span().begin(), c.x.shape_span().end());
      const TensorLayout y = TensorLayout::strided(is_maxmin(kind) ? t : yt, shape, c.y_strides);
      const TensorLayout il = TensorLayout::strided(DType::kI64, shape, c.idx_strides);
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(c.x.to_string() + " -> " + y.to_string() + " " + scan_kind_name(kind) + (reverse ? " reverse" : ""));
        run_forward(kind, c.x, c.axis, reverse, false, false, &y, &il);
        if (is_int(t)) continue;
        const TensorLayout xy = TensorLayout::strided(t, shape, c.idx_strides);
        run_backward(kind, TensorLayout::contiguous(t, shape), c.axis, reverse, false, &xy, &y);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, ScanGpu,
                         ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(Types, ScanGpuFloat, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// One row of 2^26: the look-back (and the column kernel) on f32 / bf16 cumsum, f32 cummax,
// i64 cumsum, and f32 cumsum backward.
TEST(ScanGpuLong, OneRowOf2To26) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t n = std::int64_t{1} << 26;
  run_forward(ScanKind::kCumsum, TensorLayout::contiguous(DType::kF32, {1, n}), -1, false, false);
  run_forward(ScanKind::kCumsum, TensorLayout::contiguous(DType::kBF16, {1, n}), -1, true, false);
  run_forward(ScanKind::kCummax, TensorLayout::contiguous(DType::kF32, {1, n}), -1, false, false);
  run_forward(ScanKind::kCumsum, TensorLayout::contiguous(DType::kI64, {1, n}), -1, false, false);
  run_backward(ScanKind::kCumsum, TensorLayout::contiguous(DType::kF32, {1, n}), -1, false, false);
}

// Whether the SKUs of a refusal table need a workspace: kSome asserts that every plan of
// the table has one (and adds its rows), kNone that none has.
enum class Ws { kAny, kNone, kSome };

// Run-time refusals of the SKU forced by `force` (the backward's: `bwd_force`, default the
// same) on [rows, len] f32: null, misaligned, aliasing, and the workspace (look-back,
// column_split); outputs poisoned and untouched after. Plans: cummax forward, cumprod
// backward (reads grad_y, x, y) and cummax backward (reads grad_y, indices).
void scan_run_refusals(std::int64_t rows, std::int64_t len, const std::string& force, Ws want = Ws::kAny,
                       const std::string& bwd_force = "") {
  SCOPED_TRACE(force + (bwd_force.empty() ? "" : " / " + bwd_force));
  const auto x = TensorLayout::contiguous(DType::kF32, {rows, len});
  const auto il = TensorLayout::contiguous(DType::kI64, {rows, len});
  PlanPreference pref, bpref;
  pref.force_sku = force;
  bpref.force_sku = bwd_force.empty() ? force : bwd_force;
  auto fwd = ScanPlan::select(test_stream(), ScanDescriptor{x, x, il, -1, ScanKind::kCummax}, pref);
  auto bwd = ScanBackwardPlan::select(test_stream(), ScanBackwardDescriptor{x, x, x, il, x, -1, ScanKind::kCumprod}, bpref);
  ASSERT_TRUE(fwd && bwd) << (fwd ? bwd.error().to_string() : fwd.error().to_string());
  auto bmax = ScanBackwardPlan::select(test_stream(), ScanBackwardDescriptor{x, x, x, il, x, -1, ScanKind::kCummax}, bpref);
  ASSERT_TRUE(bmax.has_value()) << bmax.error().to_string();
  HostTensor hx(x);
  fill_random(hx, -2, 2);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream()), dfy(hx, test_stream()), dind(HostTensor(il), test_stream());
  Untouched y(x), idx(il), gx(x);
  const void *xp = dx.data(), *gp = dg.data(), *fyp = dfy.data();
  void* x_row1 = static_cast<float*>(dx.data()) + len;
  const std::size_t fneed = fwd->workspace_size(), bneed = bwd->workspace_size(), mneed = bmax->workspace_size();
  for (const std::size_t need : {fneed, bneed, mneed}) {
    if (want == Ws::kSome) {
      EXPECT_GT(need, 0u);
    } else if (want == Ws::kNone) {
      EXPECT_EQ(need, 0u);
    }
  }
  const Workspace ws = test_workspace(std::max({fneed, bneed, mneed}) + kWorkspaceAlignment);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const ScanArgs fargs{.x = xp, .y = y.data(), .indices = idx.data()};
  const ScanBackwardArgs bargs{.grad_y = gp, .x = xp, .y = fyp, .grad_x = gx.data()};
  const ScanBackwardArgs margs{.grad_y = gp, .indices = dind.data(), .grad_x = gx.data()};
  std::vector<RunRefusal> rows_ = {
      {"forward null x", [&] { auto a = fargs; a.x = nullptr; return fwd->run(s, ws, a); }, kBad, "args.x is null"},
      {"forward null y", [&] { auto a = fargs; a.y = nullptr; return fwd->run(s, ws, a); }, kBad, "args.y is null"},
      {"forward null indices", [&] { auto a = fargs; a.indices = nullptr; return fwd->run(s, ws, a); }, kBad,
       "args.indices is null"},
      {"forward misaligned x", [&] { auto a = fargs; a.x = static_cast<const char*>(xp) + 4; return fwd->run(s, ws, a); },
       kMis, "not aligned to x.alignment = 16"},
      {"forward y over x shifted", [&] { auto a = fargs; a.y = x_row1; return fwd->run(s, ws, a); }, kBad,
       "args.y overlaps args.x"},
      {"forward indices over y", [&] { auto a = fargs; a.indices = y.data(); return fwd->run(s, ws, a); }, kBad, "overlap"},
      {"backward null y", [&] { auto a = bargs; a.y = nullptr; return bwd->run(s, ws, a); }, kBad, "args.y is null"},
      {"backward misaligned grad_x", [&] {
         auto a = bargs;
         a.grad_x = static_cast<char*>(gx.data()) + 4;
         return bwd->run(s, ws, a);
       }, kMis, "not aligned to grad_x.alignment = 16"},
      {"backward grad_x over y", [&] { auto a = bargs; a.grad_x = const_cast<void*>(fyp); return bwd->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args.y"},
      // every other pointer null and a byte off; the overlaps named in full
      {"forward misaligned y", [&] { auto a = fargs; a.y = static_cast<char*>(a.y) + 1; return fwd->run(s, ws, a); }, kMis,
       "is not aligned to y.alignment = 16 bytes"},
      {"forward misaligned indices", [&] { auto a = fargs; a.indices = static_cast<char*>(a.indices) + 8; return fwd->run(s, ws, a); },
       kMis, "is not aligned to indices.alignment = 16 bytes"},
      {"forward indices over y, in full", [&] { auto a = fargs; a.indices = y.data(); return fwd->run(s, ws, a); }, kBad,
       "args.y and args.indices overlap (outputs must be distinct)"},
      {"forward y over x shifted, in full",
       [&] { auto a = fargs; a.y = static_cast<float*>(dx.data()) + 8; return fwd->run(s, ws, a); }, kBad,
       "args.y overlaps args.x without the identical layout"},
      {"backward null grad_y", [&] { auto a = bargs; a.grad_y = nullptr; return bwd->run(s, ws, a); }, kBad, "args.grad_y is null"},
      {"backward null x", [&] { auto a = bargs; a.x = nullptr; return bwd->run(s, ws, a); }, kBad, "args.x is null"},
      {"backward null grad_x", [&] { auto a = bargs; a.grad_x = nullptr; return bwd->run(s, ws, a); }, kBad, "args.grad_x is null"},
      {"backward misaligned grad_y", [&] { auto a = bargs; a.grad_y = static_cast<const char*>(gp) + 4; return bwd->run(s, ws, a); },
       kMis, "is not aligned to grad_y.alignment = 16 bytes"},
      {"backward misaligned x", [&] { auto a = bargs; a.x = static_cast<const char*>(xp) + 2; return bwd->run(s, ws, a); }, kMis,
       "is not aligned to x.alignment = 16 bytes"},
      {"backward misaligned y", [&] { auto a = bargs; a.y = static_cast<const char*>(fyp) + 4; return bwd->run(s, ws, a); }, kMis,
       "is not aligned to y.alignment = 16 bytes"},
      // grad_x may alias grad_y only: over x it is refused even with x's identical layout
      {"backward grad_x on x", [&] { auto a = bargs; a.grad_x = const_cast<void*>(xp); return bwd->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args.x (grad_x may alias only grad_y)"},
      {"backward grad_x on y", [&] { auto a = bargs; a.grad_x = const_cast<void*>(fyp); return bwd->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args.y (grad_x may alias only grad_y)"},
      {"backward grad_x over grad_y shifted", [&] {
         auto a = bargs;
         a.grad_x = static_cast<float*>(const_cast<void*>(gp)) + len;
         return bwd->run(s, ws, a);
       }, kBad, "args.grad_x overlaps args.grad_y without the identical layout"},
      {"cummax backward null indices", [&] { auto a = margs; a.indices = nullptr; return bmax->run(s, ws, a); }, kBad,
       "args.indices is null"},
      {"cummax backward misaligned indices", [&] {
         auto a = margs;
         a.indices = static_cast<const char*>(dind.data()) + 8;
         return bmax->run(s, ws, a);
       }, kMis, "is not aligned to indices.alignment = 16 bytes"},
      {"cummax backward grad_x over indices", [&] { auto a = margs; a.grad_x = dind.data(); return bmax->run(s, ws, a); }, kBad,
       "args.grad_x overlaps args.indices without the identical layout"},
  };
  if (fneed > 0) {
    auto w = workspace_refusals("forward", [&](Workspace wsp) { return fwd->run(s, wsp, fargs); }, ws, fneed);
    rows_.insert(rows_.end(), w.begin(), w.end());
  }
  if (bneed > 0) {
    auto w = workspace_refusals("backward", [&](Workspace wsp) { return bwd->run(s, wsp, bargs); }, ws, bneed);
    rows_.insert(rows_.end(), w.begin(), w.end());
  }
  if (mneed > 0) {
    auto w = workspace_refusals("cummax backward", [&](Workspace wsp) { return bmax->run(s, wsp, margs); }, ws, mneed);
    rows_.insert(rows_.end(), w.begin(), w.end());
  }
  expect_run_refusals(rows_, {&y, &idx, &gx});
}

// The cub SKU (cumsum of one contiguous f32 row, both directions): CUB's temporary storage
// is the workspace; every row is refused before CUB is called.
void scan_cub_run_refusals() {
  const auto x = TensorLayout::contiguous(DType::kF32, {1, 4096});
  PlanPreference pref;
  pref.force_sku = "*.cub[*";
  auto fwd = ScanPlan::select(test_stream(), ScanDescriptor{x, x, {}}, pref);
  auto bwd = ScanBackwardPlan::select(test_stream(), ScanBackwardDescriptor{x, x, x, {}, x}, pref);
  ASSERT_TRUE(fwd && bwd) << (fwd ? bwd.error().to_string() : fwd.error().to_string());
  const std::size_t fneed = fwd->workspace_size(), bneed = bwd->workspace_size();
  ASSERT_GT(fneed, 0u);
  ASSERT_GT(bneed, 0u);
  DeviceTensor dx(HostTensor(x), test_stream()), dg(HostTensor(x), test_stream());
  Untouched y(x), gx(x);
  const void *xp = dx.data(), *gp = dg.data();
  const Workspace ws = test_workspace(std::max(fneed, bneed) + kWorkspaceAlignment);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const ScanArgs fargs{.x = xp, .y = y.data()};
  const ScanBackwardArgs bargs{.grad_y = gp, .grad_x = gx.data()};
  std::vector<RunRefusal> rows = {
      {"cub null x", [&] { auto a = fargs; a.x = nullptr; return fwd->run(s, ws, a); }, kBad, "args.x is null"},
      {"cub null y", [&] { auto a = fargs; a.y = nullptr; return fwd->run(s, ws, a); }, kBad, "args.y is null"},
      {"cub misaligned x", [&] { auto a = fargs; a.x = static_cast<const char*>(xp) + 4; return fwd->run(s, ws, a); }, kMis,
       "is not aligned to x.alignment = 16 bytes"},
      {"cub misaligned y", [&] { auto a = fargs; a.y = static_cast<char*>(a.y) + 4; return fwd->run(s, ws, a); }, kMis,
       "is not aligned to y.alignment = 16 bytes"},
      {"cub y over x shifted", [&] { auto a = fargs; a.y = static_cast<float*>(dx.data()) + 8; return fwd->run(s, ws, a); }, kBad,
       "args.y overlaps args.x without the identical layout"},
      {"cub backward null grad_y", [&] { auto a = bargs; a.grad_y = nullptr; return bwd->run(s, ws, a); }, kBad,
       "args.grad_y is null"},
      {"cub backward null grad_x", [&] { auto a = bargs; a.grad_x = nullptr; return bwd->run(s, ws, a); }, kBad,
       "args.grad_x is null"},
      {"cub backward misaligned grad_x", [&] { auto a = bargs; a.grad_x = static_cast<char*>(a.grad_x) + 4; return bwd->run(s, ws, a); },
       kMis, "is not aligned to grad_x.alignment = 16 bytes"},
      {"cub backward grad_x over grad_y shifted", [&] {
         auto a = bargs;
         a.grad_x = static_cast<float*>(dg.data()) + 8;
         return bwd->run(s, ws, a);
       }, kBad, "args.grad_x overlaps args.grad_y without the identical layout"},
  };
  auto w = workspace_refusals("cub forward", [&](Workspace wsp) { return fwd->run(s, wsp, fargs); }, ws, fneed);
  rows.insert(rows.end(), w.begin(), w.end());
  w = workspace_refusals("cub backward", [&](Workspace wsp) { return bwd->run(s, wsp, bargs); }, ws, bneed);
  rows.insert(rows.end(), w.begin(), w.end());
  expect_run_refusals(rows, {&y, &gx});
}

TEST(ScanGpuRefusals, WarpRow) {
  BARACUDA_REQUIRE_GPU();
  scan_run_refusals(8, 64, "*warp_row*", Ws::kNone);
}
TEST(ScanGpuRefusals, LookbackWorkspace) {
  BARACUDA_REQUIRE_GPU();
  scan_run_refusals(4, 20000, "*lookback*", Ws::kSome);
}
TEST(ScanGpuRefusals, Column) {
  BARACUDA_REQUIRE_GPU();
  scan_run_refusals(8, 64, "*column*", Ws::kNone);
}

// Every SKU of both directions (a vec16 forward SKU beside its scalar backward: the
// backward kinds here read several operands, scalar loads only) and cub; the workspace rows
// wherever the SKU has one (look-back, column_split, cub).
TEST(ScanGpuRefusals, EverySkuRunTable) {
  BARACUDA_REQUIRE_GPU();
  scan_run_refusals(8, 64, "*.warp_row_vec16[*", Ws::kNone, "*.warp_row[*");
  scan_run_refusals(8, 64, "*.warp_row[*", Ws::kNone);
  scan_run_refusals(8, 64, "*.block_row_vec16[*", Ws::kNone, "*.block_row[*");
  scan_run_refusals(8, 64, "*.block_row[*", Ws::kNone);
  scan_run_refusals(4, 20000, "*.lookback_vec16[*", Ws::kSome, "*.lookback[*");
  scan_run_refusals(4, 20000, "*.lookback[*", Ws::kSome);
  scan_run_refusals(4, 20000, "*.column_split[*", Ws::kSome);
  scan_run_refusals(8, 64, "*.column[*", Ws::kNone);
  scan_cub_run_refusals();
}

}  // namespace
}  // namespace baracuda::test
