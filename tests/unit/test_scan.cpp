// ScanPlan / ScanBackwardPlan on the CPU: the oracle (known values, PyTorch's tie and NaN
// rules for cummax / cummin, integer promotion and wrap, reverse scans, every backward
// against central finite differences of the forward), the dispatch decision from caps
// (which SKU takes which row length / axis on sm80 and sm90), and select-time refusals
// naming the field and its value. Run-time refusals (null, misaligned, aliasing, workspace)
// need a device: ScanGpuRefusals in tests/gpu/test_scan_gpu.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/scan.hpp"
#include "select_refusals.hpp"
#include "torch_values.hpp"

namespace baracuda::reference {
namespace {

TensorLayout c64(std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kF64, s); }
TensorLayout i64l(std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kI64, s); }

HostTensor filled(const TensorLayout& l, const std::vector<double>& v) {
  HostTensor t(l);
  for (std::size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
  return t;
}

TEST(ScanReference, KnownValues) {
  auto l = c64({4});
  auto x = filled(l, {1, 2, 3, 4});
  auto s = scan(ScanDescriptor{l, l, {}, -1, ScanKind::kCumsum}, x).value();
  EXPECT_EQ(s.values.exact, (std::vector<double>{1, 3, 6, 10}));
  auto rs = scan(ScanDescriptor{l, l, {}, 0, ScanKind::kCumsum, true}, x).value();
  EXPECT_EQ(rs.values.exact, (std::vector<double>{10, 9, 7, 4}));
  auto p = scan(ScanDescriptor{l, l, {}, 0, ScanKind::kCumprod}, x).value();
  EXPECT_EQ(p.values.exact, (std::vector<double>{1, 2, 6, 24}));
  auto lse = scan(ScanDescriptor{l, l, {}, 0, ScanKind::kLogcumsumexp}, x).value();
  EXPECT_NEAR(lse.values.exact[1], std::log(std::exp(1.0) + std::exp(2.0)), 1e-15);
  EXPECT_NEAR(lse.values.exact[3], std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0)), 1e-14);
}

// torch.cummax / cummin: the last index among equal extrema (>= / <=); a NaN wins from where
// it appears and every later NaN takes the index; -0 and +0 tie.
TEST(ScanReference, CummaxTiesAndNaN) {
  const double nan = std::nan("");
  auto l = c64({8});
  auto x = filled(l, {1, 3, 3, 2, nan, 5, nan, 7});
  auto m = scan(ScanDescriptor{l, l, i64l({8}), 0, ScanKind::kCummax}, x).value();
  EXPECT_EQ(m.indices, (std::vector<std::int64_t>{0, 1, 2, 2, 4, 4, 6, 6}));
  EXPECT_EQ(m.values.exact[3], 3.0);
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(m.values.exact[static_cast<std::size_t>(i)])) << i;
  auto y = filled(l, {4, 2, 2, 5, 1, 1, -0.0, 0.0});
  auto n = scan(ScanDescriptor{l, l, i64l({8}), 0, ScanKind::kCummin}, y).value();
  EXPECT_EQ(n.indices, (std::vector<std::int64_t>{0, 1, 2, 2, 4, 5, 6, 7}));
  // reverse: the flipped scan; ties go to the lowest original position (last in scan order)
  auto r = scan(ScanDescriptor{l, l, i64l({8}), 0, ScanKind::kCummin, true}, y).value();
  EXPECT_EQ(r.indices[0], 6);
  EXPECT_EQ(r.indices[7], 7);
}

// torch promotes integer cumsum / cumprod to i64 and wraps on overflow.
TEST(ScanReference, IntegerPromotionAndWrap) {
  auto xi = TensorLayout::contiguous(DType::kI32, {3});
  auto yi = i64l({3});
  HostTensor x(xi);
  x.set(0, 2147483647.0);
  x.set(1, 2147483647.0);
  x.set(2, -5.0);
  auto s = scan(ScanDescriptor{xi, yi, {}, 0, ScanKind::kCumsum}, x).value();
  EXPECT_EQ(s.ints, (std::vector<std::int64_t>{2147483647LL, 4294967294LL, 4294967289LL}));
  HostTensor big(yi);
  const std::int64_t vals[3] = {std::int64_t{1} << 62, 4, 3};
  for (int i = 0; i < 3; ++i) std::memcpy(static_cast<std::int64_t*>(big.data()) + i, &vals[i], 8);
  auto p = scan(ScanDescriptor{yi, yi, {}, 0, ScanKind::kCumprod}, big).value();
  EXPECT_EQ(p.ints[1], 0);  // 2^64 wraps to 0
  EXPECT_EQ(p.ints[2], 0);
}

// Integer cummax / cummin (torch keeps the dtype): exact values beyond 2^53, the last index
// among equal extrema, reverse.
TEST(ScanReference, IntegerCummaxCummin) {
  auto l = i64l({6});
  HostTensor x(l);
  const std::int64_t big = (std::int64_t{1} << 62) + 1;
  const std::int64_t vals[6] = {-7, big, big - 1, big, std::numeric_limits<std::int64_t>::min(), 3};
  for (int i = 0; i < 6; ++i) std::memcpy(static_cast<std::int64_t*>(x.data()) + i, &vals[i], 8);
  auto m = scan(ScanDescriptor{l, l, i64l({6}), 0, ScanKind::kCummax}, x).value();
  EXPECT_EQ(m.ints, (std::vector<std::int64_t>{-7, big, big, big, big, big}));
  EXPECT_EQ(m.indices, (std::vector<std::int64_t>{0, 1, 1, 3, 3, 3}));
  auto n = scan(ScanDescriptor{l, l, i64l({6}), 0, ScanKind::kCummin}, x).value();
  EXPECT_EQ(n.ints[3], -7);
  EXPECT_EQ(n.ints[4], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(n.indices, (std::vector<std::int64_t>{0, 0, 0, 0, 4, 4}));
  auto r = scan(ScanDescriptor{l, l, i64l({6}), 0, ScanKind::kCummax, true}, x).value();
  EXPECT_EQ(r.indices, (std::vector<std::int64_t>{1, 1, 3, 3, 5, 5}));
  auto xi = TensorLayout::contiguous(DType::kI32, {6});
  EXPECT_FALSE(scan(ScanDescriptor{xi, xi, {}, 0, ScanKind::kLogcumsumexp}, HostTensor(xi)).has_value());
}

// L = sum(g * scan(x)); dL/dx by central differences must match scan_backward.
void check_backward_fd(ScanKind kind, int axis, bool reverse, bool with_zero) {
  SCOPED_TRACE(std::string(scan_kind_name(kind)) + " axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
  std::mt19937_64 rng(17 + static_cast<int>(kind) * 3 + axis);
  std::uniform_real_distribution<double> u(-2, 2), pos(0.5, 1.5);
  auto l = c64({2, 5, 3});
  auto il = i64l({2, 5, 3});
  HostTensor x(l), g(l), y(l), ix(il);
  for (std::int64_t i = 0; i < 30; ++i) {
    x.set(i, kind == ScanKind::kCumprod ? (u(rng) < 0 ? -pos(rng) : pos(rng)) : u(rng));
    g.set(i, u(rng));
  }
  if (with_zero) x.set(4, 0.0);
  const bool idx = kind == ScanKind::kCummax || kind == ScanKind::kCummin;
  const ScanDescriptor fd{l, l, il, axis, kind, reverse};
  auto loss = [&](const HostTensor& xx) {
    auto r = scan(fd, xx).value();
    double s = 0;
    for (std::int64_t i = 0; i < 30; ++i) s += g.get(i) * r.values.exact[static_cast<std::size_t>(i)];
    return s;
  };
  auto fy = scan(fd, x).value();
  for (std::int64_t i = 0; i < 30; ++i) {
    y.set(i, fy.values.exact[static_cast<std::size_t>(i)]);
    if (idx) std::memcpy(static_cast<std::int64_t*>(ix.data()) + i, &fy.indices[static_cast<std::size_t>(i)], 8);
  }
  auto gx = scan_backward(ScanBackwardDescriptor{l, l, l, il, l, axis, kind, reverse}, g, &x, &y, &ix).value();
  const double h = 1e-6;
  for (std::int64_t i = 0; i < 30; ++i) {
    HostTensor xp = x, xm = x;
    xp.set(i, x.get(i) + h);
    xm.set(i, x.get(i) - h);
    const double want = (loss(xp) - loss(xm)) / (2 * h);
    EXPECT_NEAR(gx.exact[static_cast<std::size_t>(i)], want, 1e-6 * (1 + std::fabs(want))) << "element " << i;
  }
}

TEST(ScanReference, BackwardMatchesFiniteDifferences) {
  for (auto kind : {ScanKind::kCumsum, ScanKind::kCumprod, ScanKind::kCummax, ScanKind::kCummin, ScanKind::kLogcumsumexp})
    for (int axis : {1, -1, 0})
      for (bool reverse : {false, true}) check_backward_fd(kind, axis, reverse, false);
  // cumprod with a zero in x: the gradient still follows the product rule (no division)
  for (int axis : {1, 0})
    for (bool reverse : {false, true}) check_backward_fd(ScanKind::kCumprod, axis, reverse, true);
}

// The kernel's cumprod backward with two zeros: positions after the first zero get 0, the
// first zero gets y_{z-1} * (g_z + sum_{j>z} g_j prod x_{z+1..j}).
TEST(ScanReference, CumprodBackwardZeros) {
  auto l = c64({5});
  auto x = filled(l, {2, 0, 3, 0, 5});
  auto g = filled(l, {1, 1, 1, 1, 1});
  auto f = scan(ScanDescriptor{l, l, {}, 0, ScanKind::kCumprod}, x).value();
  auto y = filled(l, f.values.exact);
  auto gx = scan_backward(ScanBackwardDescriptor{l, l, l, {}, l, 0, ScanKind::kCumprod}, g, &x, &y, nullptr).value();
  // dy1/dx1 = 2, dy2/dx1 = 2*3 = 6, dy3/dx1 = 0 (x3 = 0), dy4/dx1 = 0
  EXPECT_EQ(gx.exact[1], 8.0);
  EXPECT_EQ(gx.exact[0], 0.0 + 1.0);  // only y0 depends on x0 without a zero factor
  EXPECT_EQ(gx.exact[2], 0.0);
  EXPECT_EQ(gx.exact[3], 0.0);  // y3 = x0 x1 x2 x3 has x1 = 0
  EXPECT_EQ(gx.exact[4], 0.0);
}

// PyTorch parity of edge values (torch 2.15 CPU, session 36 audit; docs/coverage.md lists the
// disagreements, left out here: {} = not listed): torch.cumsum / cumprod / cummax / cummin /
// logcumsumexp of a 1-D x along dim 0, the indices, and autograd's gradient for grad_y = g.
TEST(ScanReference, TorchEdgeValues) {
  using test::kInf;
  using test::kNaN;
  struct Case {
    ScanKind kind;
    std::vector<double> x, g, y, idx, gx;
  };
  const Case cases[] = {
      {ScanKind::kCumsum, {1, kInf, -kInf, 2}, {1, 1, 1, 1}, {1, kInf, kNaN, kNaN}, {}, {4, 3, 2, 1}},
      {ScanKind::kCumsum, {-0.0, -0.0}, {1, 1}, {0, 0}, {}, {2, 1}},
      {ScanKind::kCumprod, {2, 0, kInf, 3}, {1, 1, 1, 1}, {2, 0, kNaN, kNaN}, {}, {}},
      {ScanKind::kCumprod, {2, 0, 3, 0, 5}, {1, 2, 3, 4, 5}, {2, 0, 0, 0, 0}, {}, {1, 22, 0, 0, 0}},
      {ScanKind::kCumprod, {kInf, 0, 1}, {1, 1, 1}, {kInf, kNaN, kNaN}, {}, {}},
      {ScanKind::kCumprod, {kNaN, 2}, {1, 1}, {kNaN, kNaN}, {}, {}},
      {ScanKind::kCumprod, {-0.0, 2}, {1, 1}, {-0.0, -0.0}, {}, {3, -0.0}},
      {ScanKind::kCummax, {0, -0.0}, {1, 2}, {0, -0.0}, {0, 1}, {1, 2}},
      {ScanKind::kCummax, {-kInf, -kInf}, {1, 2}, {-kInf, -kInf}, {0, 1}, {1, 2}},
      {ScanKind::kCummax, {1, kNaN, 2, kNaN}, {1, 2, 3, 4}, {1, kNaN, kNaN, kNaN}, {0, 1, 1, 3}, {1, 5, 0, 4}},
      {ScanKind::kCummax, {kInf, kInf, -kInf}, {1, 2, 3}, {kInf, kInf, kInf}, {0, 1, 1}, {1, 5, 0}},
      {ScanKind::kCummax, {kNaN, -kInf}, {1, 2}, {kNaN, kNaN}, {0, 0}, {3, 0}},
      {ScanKind::kCummin, {0, -0.0}, {1, 2}, {0, -0.0}, {0, 1}, {1, 2}},
      {ScanKind::kCummin, {-kInf, -kInf}, {1, 2}, {-kInf, -kInf}, {0, 1}, {1, 2}},
      {ScanKind::kCummin, {1, kNaN, 2, kNaN}, {1, 2, 3, 4}, {1, kNaN, kNaN, kNaN}, {0, 1, 1, 3}, {1, 5, 0, 4}},
      {ScanKind::kCummin, {kInf, kInf, -kInf}, {1, 2, 3}, {kInf, kInf, -kInf}, {0, 1, 2}, {1, 2, 3}},
      {ScanKind::kCummin, {kNaN, -kInf}, {1, 2}, {kNaN, kNaN}, {0, 0}, {3, 0}},
      {ScanKind::kLogcumsumexp, {-kInf, -kInf, 0, kInf, kNaN, 1}, {1, 1, 1, 1, 1, 1}, {-kInf, -kInf, 0, kInf, kNaN, kNaN}, {}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
      {ScanKind::kLogcumsumexp, {kInf, kInf}, {1, 1}, {kInf, kInf}, {}, {kNaN, kNaN}},
      {ScanKind::kLogcumsumexp, {kInf, -kInf}, {1, 1}, {kInf, kInf}, {}, {kNaN, 0}},
      {ScanKind::kLogcumsumexp, {-kInf, 0}, {1, 1}, {-kInf, 0}, {}, {kNaN, 1}},
      {ScanKind::kLogcumsumexp, {-kInf, 0}, {-1, 2}, {-kInf, 0}, {}, {kNaN, 2}},
      {ScanKind::kLogcumsumexp, {-kInf, -kInf}, {1, 1}, {-kInf, -kInf}, {}, {kNaN, kNaN}},
      {ScanKind::kLogcumsumexp, {1000, 1000}, {1, 1}, {1000, 1000.6931471805599}, {}, {1.5000000000000275, 0.5000000000000275}},
      {ScanKind::kLogcumsumexp, {0, 1, 2}, {1, 0, -1}, {0, 1.3132616875182228, 2.40760596444438}, {}, {0.9099694268296196, -0.2447284710547977, -0.665240955774822}},
      {ScanKind::kLogcumsumexp, {0, -kInf, 2}, {1, -2, 0.5}, {0, 0, 2.1269280110429727}, {}, {-0.9403985389889412, 0, 0.44039853898894116}}
  };
  for (const auto& c : cases) {
    const auto n = static_cast<std::int64_t>(c.x.size());
    const auto l = c64({n});
    const auto il = i64l({n});
    const bool idx = c.kind == ScanKind::kCummax || c.kind == ScanKind::kCummin;
    const std::string what = std::string(scan_kind_name(c.kind)) + " x = " + test::list_string(c.x);
    const auto x = filled(l, c.x);
    const auto r = scan(ScanDescriptor{l, l, idx ? il : TensorLayout{}, 0, c.kind}, x).value();
    test::expect_torch_values(r.values.exact, c.y, what);
    HostTensor y(l), ix(il);
    for (std::int64_t i = 0; i < n; ++i) {
      y.set(i, r.values.exact[static_cast<std::size_t>(i)]);
      if (idx) std::memcpy(static_cast<std::int64_t*>(ix.data()) + i, &r.indices[static_cast<std::size_t>(i)], 8);
    }
    if (idx) test::expect_torch_values(std::vector<double>(r.indices.begin(), r.indices.end()), c.idx, what + " indices");
    if (c.gx.empty()) continue;
    const auto gx = scan_backward(ScanBackwardDescriptor{l, l, l, il, l, 0, c.kind}, filled(l, c.g), &x, &y, &ix).value();
    test::expect_torch_values(gx.exact, c.gx, what + " backward");
  }
}

}  // namespace
}  // namespace baracuda::reference

namespace baracuda {
namespace {

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }
TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

std::string chosen(int sm, const ScanDescriptor& d, const PlanPreference& pref = {}) {
  auto p = ScanPlan::select_for_caps(caps(sm), d, pref);
  return p ? p->sku().impl : "refused: " + p.error().to_string();
}

TEST(ScanDispatch, RowLengthsAndAxes) {
  for (int sm : {80, 89, 90}) {
    SCOPED_TRACE(sm);
    auto big = contig(DType::kF32, {16384, 8192});
    EXPECT_EQ(chosen(sm, {big, big}), "block_row_vec16");
    auto one = contig(DType::kF32, {1, std::int64_t{1} << 28});
    EXPECT_EQ(chosen(sm, {one, one}), "cub");  // one f32 row: CUB's scan
    auto one16 = contig(DType::kBF16, {1, std::int64_t{1} << 28});
    EXPECT_EQ(chosen(sm, {one16, one16}), "lookback_vec16");
    auto mid = contig(DType::kBF16, {4096, 1024});
    EXPECT_EQ(chosen(sm, {mid, mid}), "warp_row_vec16");
    auto odd = contig(DType::kF32, {100, 7});
    EXPECT_EQ(chosen(sm, {odd, odd}), "warp_row");
    auto col = contig(DType::kF32, {64, 128});
    EXPECT_EQ(chosen(sm, {col, col, {}, 0}), "column");
    // a long strided axis over too few rows for a thread each: segments in three passes
    EXPECT_EQ(chosen(sm, {big, big, {}, 0}), "column_split");
    auto tall = contig(DType::kF32, {1 << 20, 4096});
    EXPECT_EQ(chosen(sm, {tall, tall, {}, 0}), "column_split");  // 4096 rows, 33 segments
    auto wide = contig(DType::kF32, {64, 1 << 20});
    EXPECT_EQ(chosen(sm, {wide, wide, {}, 0}), "column");  // 2^20 rows: a thread each
    // i32 cumsum writes i64 with 4-element vectors
    auto xi = contig(DType::kI32, {64, 4096}), yi = contig(DType::kI64, {64, 4096});
    EXPECT_EQ(chosen(sm, {xi, yi}), "block_row_vec16");
    // cummax with indices
    auto xm = contig(DType::kF16, {64, 512}), im = contig(DType::kI64, {64, 512});
    EXPECT_EQ(chosen(sm, {xm, xm, im, -1, ScanKind::kCummax}), "warp_row_vec16");
  }
}

TEST(ScanDispatch, DeterministicExcludesFloatLookback) {
  auto one = contig(DType::kF32, {1, std::int64_t{1} << 20});
  PlanPreference det;
  det.deterministic = true;
  auto p = ScanPlan::select_for_caps(caps(90), {one, one}, det);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_NE(p->sku().impl, "lookback_vec16");
  EXPECT_TRUE(p->sku().precision.deterministic);
  // integer and max scans stay deterministic on the look-back
  auto xi = contig(DType::kI64, {1, std::int64_t{1} << 20});
  auto q = ScanPlan::select_for_caps(caps(90), {xi, xi}, det);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->sku().impl, "lookback_vec16");
  EXPECT_GT(q->workspace_size(), 0u);
}

// cub (first for one contiguous f32 / f64 row, session 12): cumsum of one contiguous f32 / f64
// row, either direction and the backward; a workspace for CUB's tile states (here, without
// a device, the plan's bound); never deterministic for floats; other kinds, dtypes, several
// rows and strided axes refused.
TEST(ScanDispatch, CubCumsum) {
  PlanPreference cub;
  cub.force_sku = "*.cub[*";
  const std::int64_t n = std::int64_t{1} << 28;
  for (DType t : {DType::kF32, DType::kF64})
    for (bool reverse : {false, true}) {
      auto one = contig(t, {1, n});
      auto p = ScanPlan::select_for_caps(caps(90), ScanDescriptor{one, one, {}, -1, ScanKind::kCumsum, reverse}, cub);
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      EXPECT_EQ(p->sku().impl, "cub");
      EXPECT_FALSE(p->sku().precision.deterministic);
      EXPECT_GE(p->workspace_size(), static_cast<std::size_t>(n / 3072) * 8);  // CUB's sm_90 f32 tiles, 8 bytes each
      EXPECT_EQ(p->workspace_size() % kWorkspaceAlignment, 0u);
    }
  auto rank1 = contig(DType::kF32, {1000});
  EXPECT_TRUE(ScanBackwardPlan::select_for_caps(caps(90), ScanBackwardDescriptor{rank1, rank1, rank1, {}, rank1}, cub)
                  .has_value());
  auto refused = [&](const ScanDescriptor& d) { return !ScanPlan::select_for_caps(caps(90), d, cub).has_value(); };
  auto bf = contig(DType::kBF16, {1, 4096}), two = contig(DType::kF32, {2, 4096});
  auto strided = TensorLayout::strided(DType::kF32, {4096}, {2});
  auto f = contig(DType::kF32, {1, 4096}), idx = contig(DType::kI64, {1, 4096});
  EXPECT_TRUE(refused({bf, bf}));
  EXPECT_TRUE(refused({two, two}));
  EXPECT_TRUE(refused({f, f, idx, -1, ScanKind::kCummax}));
  EXPECT_TRUE(refused({strided, contig(DType::kF32, {4096})}));  // one row, a strided axis
  PlanPreference det = cub;
  det.deterministic = true;
  EXPECT_FALSE(ScanPlan::select_for_caps(caps(90), {f, f}, det).has_value());
  // the default for one f32 row, unless determinism is asked for
  auto one = contig(DType::kF32, {1, n});
  EXPECT_EQ(chosen(90, {one, one}), "cub");
  PlanPreference det_only;
  det_only.deterministic = true;
  auto other = ScanPlan::select_for_caps(caps(90), ScanDescriptor{one, one}, det_only);
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->sku().impl, "cub");
}

TEST(ScanDispatch, BackwardKinds) {
  auto l = contig(DType::kF32, {64, 1000});
  auto il = contig(DType::kI64, {64, 1000});
  auto sku = [&](ScanKind k) {
    auto p = ScanBackwardPlan::select_for_caps(caps(90), ScanBackwardDescriptor{l, l, l, il, l, -1, k});
    return p ? p->sku().impl : p.error().to_string();
  };
  EXPECT_EQ(sku(ScanKind::kCumsum), "warp_row_vec16");
  EXPECT_EQ(sku(ScanKind::kCumprod), "warp_row");  // reads x, y and grad_y: scalar loads
  EXPECT_EQ(sku(ScanKind::kCummax), "warp_row");
  EXPECT_EQ(sku(ScanKind::kLogcumsumexp), "warp_row");
  auto t = TensorLayout::strided(DType::kF32, {64, 1000}, {1, 64});
  auto p = ScanBackwardPlan::select_for_caps(caps(90), ScanBackwardDescriptor{t, t, t, il, t, -1, ScanKind::kCumprod});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->sku().impl, "column_split");  // 64 rows: the axis in segments
  EXPECT_GT(p->workspace_size(), 0u);
  EXPECT_EQ(p->sku().name().find("cumprod"), 0u) << p->sku().name();
}

// The logcumsumexp backward's tile kernels sum in f32 for f32 / f16 / bf16 rows (tree sums of
// its linear (m, s) states, kernels/scan.cuh LseBwdOp), its sequential column kernels in f64;
// f64 rows in f64, and the other kinds as their dtype.
TEST(ScanDispatch, LogcumsumexpBackwardComputeType) {
  auto compute = [&](DType t, ScanKind k, const char* force = "") {
    const auto l = contig(t, {4, 262144});
    const auto il = contig(DType::kI64, {4, 262144});
    PlanPreference pref;
    pref.force_sku = force;
    auto p = ScanBackwardPlan::select_for_caps(caps(90), ScanBackwardDescriptor{l, l, l, il, l, -1, k}, pref);
    EXPECT_TRUE(p.has_value()) << p.error().to_string();
    return p ? p->sku().compute : DType::kU8;
  };
  EXPECT_EQ(compute(DType::kF32, ScanKind::kLogcumsumexp), DType::kF32);
  EXPECT_EQ(compute(DType::kF64, ScanKind::kLogcumsumexp), DType::kF64);
  EXPECT_EQ(compute(DType::kF16, ScanKind::kLogcumsumexp), DType::kF32);
  EXPECT_EQ(compute(DType::kBF16, ScanKind::kLogcumsumexp), DType::kF32);
  EXPECT_EQ(compute(DType::kF32, ScanKind::kCumsum), DType::kF32);
  EXPECT_EQ(compute(DType::kF32, ScanKind::kCumprod), DType::kF32);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_EQ(compute(t, ScanKind::kLogcumsumexp, "*.column[*"), DType::kF64) << dtype_name(t);
    EXPECT_EQ(compute(t, ScanKind::kLogcumsumexp, "*.column_split[*"), DType::kF64) << dtype_name(t);
    EXPECT_EQ(compute(t, ScanKind::kLogcumsumexp, "*.block_row[*"), DType::kF32) << dtype_name(t);
    EXPECT_EQ(compute(t, ScanKind::kCumprod, "*.column[*"), DType::kF32) << dtype_name(t);
  }
}

TEST(ScanSelectRefusals, ScanPlan) {
  using test::Refusal;
  auto x = contig(DType::kF32, {4, 8});
  auto il = contig(DType::kI64, {4, 8});
  const ScanDescriptor valid{x, x, il, -1, ScanKind::kCummax};
  std::vector<Refusal<ScanDescriptor>> cases = {
      {"dtype", [](ScanDescriptor& d) { d.x.dtype = d.y.dtype = DType::kI32; d.kind = ScanKind::kLogcumsumexp; },
       "x.dtype = i32: logcumsumexp takes f64, f32, f16, bf16"},
      {"dtype", [](ScanDescriptor& d) { d.x.dtype = d.y.dtype = DType::kU8; }, "x.dtype = u8"},
      {"dtype", [](ScanDescriptor& d) { d.y.dtype = DType::kF16; }, "y.dtype = f16 must be f32"},
      {"dtype", [](ScanDescriptor& d) { d.indices.dtype = DType::kI32; }, "indices.dtype = i32 must be i64"},
      {"shape", [](ScanDescriptor& d) { d.y = TensorLayout::contiguous(DType::kF32, {4, 9}); }, "y = f32[4,9]"},
      {"shape", [](ScanDescriptor& d) { d.indices = TensorLayout::contiguous(DType::kI64, {8, 4}); }, "indices = i64[8,4]"},
      {"axis", [](ScanDescriptor& d) { d.axis = 2; }, "axis = 2 is out of range"},
      {"axis", [](ScanDescriptor& d) { d.axis = -3; }, "axis = -3 is out of range"},
      {"stride", [](ScanDescriptor& d) { d.y = TensorLayout::strided(DType::kF32, {4, 8}, {0, 1}); }, "maps several elements to one address"},
      {"stride", [](ScanDescriptor& d) { d.indices = TensorLayout::strided(DType::kI64, {4, 8}, {0, 1}); }, "maps several elements to one address"},
      {"kind", [](ScanDescriptor& d) { d.kind = static_cast<ScanKind>(9); }, "kind = 9"},
      // the whole message: field, value and rule
      {"dtype", [](ScanDescriptor& d) { d.x.dtype = d.y.dtype = DType::kU8; }, "x.dtype = u8: cummax takes f64, f32, f16, bf16, i32, i64"},
      {"shape", [](ScanDescriptor& d) { d.y = TensorLayout::contiguous(DType::kF32, {4, 9}); },
       "y = f32[4,9] does not have the shape of x = f32[4,8]"},
      {"shape", [](ScanDescriptor& d) { d.indices = TensorLayout::contiguous(DType::kI64, {8, 4}); },
       "indices = i64[8,4] does not have the shape of x = f32[4,8]"},
      {"axis", [](ScanDescriptor& d) { d.axis = 2; }, "axis = 2 is out of range for x of rank 2 (needs -2..1)"},
      {"stride", [](ScanDescriptor& d) { d.y = TensorLayout::strided(DType::kF32, {4, 8}, {0, 1}); },
       "y = f32[4,8]{0,1} maps several elements to one address"},
      {"stride", [](ScanDescriptor& d) { d.indices = TensorLayout::strided(DType::kI64, {4, 8}, {0, 1}); },
       "indices = i64[4,8]{0,1} maps several elements to one address"},
      {"stride", [](ScanDescriptor& d) { d.x.strides[0] = std::int64_t{1} << 61; },
       "x = f32[4,8]{2305843009213693952,1} is too large for 64-bit indexing"},
  };
  test::expect_select_refusals<ScanPlan>(valid, cases);
  // integer cumsum must write i64 (torch's promotion)
  auto xi = contig(DType::kI32, {4, 8});
  std::vector<Refusal<ScanDescriptor>> ints = {
      {"dtype", [](ScanDescriptor& d) { d.y.dtype = DType::kI32; }, "y.dtype = i32 must be i64"},
  };
  test::expect_select_refusals<ScanPlan>(ScanDescriptor{xi, contig(DType::kI64, {4, 8})}, ints);
  // integer cummax / cummin write x's dtype (torch keeps it)
  std::vector<Refusal<ScanDescriptor>> int_max = {
      {"dtype", [](ScanDescriptor& d) { d.y.dtype = DType::kI64; }, "y.dtype = i64 must be i32"},
  };
  test::expect_select_refusals<ScanPlan>(ScanDescriptor{xi, xi, il, -1, ScanKind::kCummax}, int_max);
}

TEST(ScanSelectRefusals, ScanBackwardPlan) {
  using test::Refusal;
  auto x = contig(DType::kBF16, {4, 8});
  auto il = contig(DType::kI64, {4, 8});
  const ScanBackwardDescriptor valid{x, x, x, il, x, 1, ScanKind::kCumprod};
  std::vector<Refusal<ScanBackwardDescriptor>> cases = {
      {"dtype", [](ScanBackwardDescriptor& d) { d.grad_y.dtype = d.grad_x.dtype = DType::kI64; }, "grad_y.dtype = i64: cumprod backward takes f64, f32, f16, bf16"},
      {"dtype", [](ScanBackwardDescriptor& d) { d.grad_x.dtype = DType::kF32; }, "grad_x.dtype = f32 must be bf16"},
      {"dtype", [](ScanBackwardDescriptor& d) { d.y.dtype = DType::kF32; }, "y.dtype = f32"},
      {"shape", [](ScanBackwardDescriptor& d) { d.x = TensorLayout::contiguous(DType::kBF16, {4, 7}); }, "x = bf16[4,7]"},
      {"axis", [](ScanBackwardDescriptor& d) { d.axis = 5; }, "axis = 5 is out of range"},
      {"stride", [](ScanBackwardDescriptor& d) { d.grad_x = TensorLayout::strided(DType::kBF16, {4, 8}, {0, 1}); }, "maps several elements to one address"},
      // the whole message: field, value and rule
      {"dtype", [](ScanBackwardDescriptor& d) { d.x.dtype = DType::kF32; }, "x.dtype = f32 differs from grad_y.dtype = bf16"},
      {"dtype", [](ScanBackwardDescriptor& d) { d.y.dtype = DType::kF16; }, "y.dtype = f16 differs from grad_y.dtype = bf16"},
      {"shape", [](ScanBackwardDescriptor& d) { d.x = TensorLayout::contiguous(DType::kBF16, {4, 7}); },
       "x = bf16[4,7] does not have the shape of grad_y = bf16[4,8]"},
      {"shape", [](ScanBackwardDescriptor& d) { d.grad_x = TensorLayout::contiguous(DType::kBF16, {4, 9}); },
       "grad_x = bf16[4,9] does not have the shape of grad_y = bf16[4,8]"},
      {"axis", [](ScanBackwardDescriptor& d) { d.axis = -3; }, "axis = -3 is out of range for grad_y of rank 2 (needs -2..1)"},
      {"stride", [](ScanBackwardDescriptor& d) { d.grad_x = TensorLayout::strided(DType::kBF16, {4, 8}, {0, 1}); },
       "grad_x = bf16[4,8]{0,1} maps several elements to one address"},
      {"stride", [](ScanBackwardDescriptor& d) { d.grad_y.strides[0] = std::int64_t{1} << 61; },
       "grad_y = bf16[4,8]{2305843009213693952,1} is too large for 64-bit indexing"},
      {"stride", [](ScanBackwardDescriptor& d) { d.y.strides[0] = std::int64_t{1} << 61; },
       "y = bf16[4,8]{2305843009213693952,1} is too large for 64-bit indexing"},
  };
  test::expect_select_refusals<ScanBackwardPlan>(valid, cases);
  std::vector<Refusal<ScanBackwardDescriptor>> idx = {
      {"dtype", [](ScanBackwardDescriptor& d) { d.indices.dtype = DType::kF32; }, "indices.dtype = f32 must be i64"},
      {"shape", [](ScanBackwardDescriptor& d) { d.indices = TensorLayout::contiguous(DType::kI64, {4, 9}); }, "indices = i64[4,9]"},
      {"shape", [](ScanBackwardDescriptor& d) { d.indices = TensorLayout::contiguous(DType::kI64, {4, 9}); },
       "indices = i64[4,9] does not have the shape of grad_y = bf16[4,8]"},
      {"stride", [](ScanBackwardDescriptor& d) { d.indices.strides[0] = std::int64_t{1} << 61; },
       "indices = i64[4,8]{2305843009213693952,1} is too large for 64-bit indexing"},
  };
  auto vmax = valid;
  vmax.kind = ScanKind::kCummax;
  test::expect_select_refusals<ScanBackwardPlan>(vmax, idx);
}

// A forced SKU that cannot take the descriptor is an error with its reason.
TEST(ScanSelectRefusals, ForcedSkuReasons) {
  auto t = TensorLayout::strided(DType::kF32, {64, 100}, {1, 64});
  PlanPreference pref;
  pref.force_sku = "*block_row_vec16*";
  auto p = ScanPlan::select_for_caps(caps(90), ScanDescriptor{t, contig(DType::kF32, {64, 100})}, pref);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message().find("x stride along axis 1 = 64 (tile kernels need 1)"), std::string::npos)
      << p.error().message();
  auto odd = contig(DType::kF32, {3, 1001});
  auto q = ScanPlan::select_for_caps(caps(90), ScanDescriptor{odd, odd}, pref);
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.error().message().find("row length 1001 is not a multiple of the 4-element vector"), std::string::npos);
}

}  // namespace
}  // namespace baracuda
