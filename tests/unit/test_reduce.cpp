// The reduction family on the CPU: the oracle (known values, PyTorch's NaN / empty rules,
// arg tie rule), the backward of the reference against central finite differences, the
// dispatch decision from caps (which SKU takes which layout), and select-time refusals
// naming the field and its value (wrong dtype, bad axis, shape mismatch with keepdim, an
// output mapping two elements to one address, an input too large for 64-bit indexing; the
// backward's zero workspace). Run-time refusals (null, misaligned, aliasing, workspace) need
// a device: ReduceRefusals in tests/gpu/test_reduce_gpu.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/reduce.hpp"
#include "select_refusals.hpp"
#include "torch_values.hpp"

namespace baracuda::reference {
namespace {

const double kInf = std::numeric_limits<double>::infinity();
TensorLayout c64(std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kF64, s); }

ReduceDescriptor rdesc(const TensorLayout& x, ReduceAxes axes, bool keepdim, ReduceKind k, double p = 2, double corr = 1) {
  ReduceDescriptor d{x, reduced_layout(x, axes, keepdim, x.dtype).value(), axes, keepdim, k, p, corr};
  return d;
}

HostTensor tensor(const TensorLayout& l, std::vector<double> v) {
  HostTensor t(l);
  for (std::size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
  return t;
}

TEST(ReduceReference, KnownValues) {
  auto l = c64({2, 3});
  auto x = tensor(l, {1, 2, 3, 4, 5, 6});
  auto sum1 = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kSum), x).value();
  EXPECT_EQ(sum1.exact, (std::vector<double>{6, 15}));
  auto sum0 = reduce(rdesc(l, ReduceAxes::of({0}), true, ReduceKind::kSum), x).value();
  EXPECT_EQ(sum0.exact, (std::vector<double>{5, 7, 9}));
  auto all = reduce(rdesc(l, ReduceAxes::all(), false, ReduceKind::kProd), x).value();
  EXPECT_EQ(all.exact[0], 720);
  auto mean = reduce(rdesc(l, ReduceAxes::of({-1}), false, ReduceKind::kMean), x).value();
  EXPECT_EQ(mean.exact, (std::vector<double>{2, 5}));
  auto var = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kVar), x).value();
  EXPECT_NEAR(var.exact[0], 1.0, 1e-15);
  auto var0 = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kVar, 2, 0), x).value();
  EXPECT_NEAR(var0.exact[0], 2.0 / 3.0, 1e-15);
  auto sd = reduce(rdesc(l, ReduceAxes::all(), false, ReduceKind::kStd), x).value();
  EXPECT_NEAR(sd.exact[0], std::sqrt(3.5), 1e-15);
  auto n2 = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kNorm, 2), x).value();
  EXPECT_NEAR(n2.exact[0], std::sqrt(14.0), 1e-15);
  auto n1 = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kNorm, 1), x).value();
  EXPECT_EQ(n1.exact[1], 15);
  auto ninf = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kNorm, kInf), x).value();
  EXPECT_EQ(ninf.exact[1], 6);
  auto n3 = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kNorm, 3), x).value();
  EXPECT_NEAR(n3.exact[0], std::cbrt(36.0), 1e-14);
  auto lse = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kLogSumExp), x).value();
  EXPECT_NEAR(lse.exact[0], std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-14);
  auto amax = reduce(rdesc(l, ReduceAxes::of({0, 1}), false, ReduceKind::kAmax), x).value();
  EXPECT_EQ(amax.exact[0], 6);
}

TEST(ReduceReference, NanAndEmpty) {
  auto l = c64({2, 2});
  auto x = tensor(l, {1, std::nan(""), 3, 4});
  auto mx = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kAmax), x).value();
  EXPECT_TRUE(std::isnan(mx.exact[0]));
  EXPECT_EQ(mx.exact[1], 4);
  auto mn = reduce(rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kMin), x).value();
  EXPECT_TRUE(std::isnan(mn.exact[0]));
  auto e = c64({3, 0});
  HostTensor ex(e);
  auto s = reduce(rdesc(e, ReduceAxes::of({1}), false, ReduceKind::kSum), ex).value();
  EXPECT_EQ(s.exact, (std::vector<double>{0, 0, 0}));
  auto pr = reduce(rdesc(e, ReduceAxes::of({1}), false, ReduceKind::kProd), ex).value();
  EXPECT_EQ(pr.exact[0], 1);
  auto mean = reduce(rdesc(e, ReduceAxes::of({1}), false, ReduceKind::kMean), ex).value();
  EXPECT_TRUE(std::isnan(mean.exact[0]));
  auto lse = reduce(rdesc(e, ReduceAxes::of({1}), false, ReduceKind::kLogSumExp), ex).value();
  EXPECT_EQ(lse.exact[0], -kInf);
  auto lx = tensor(c64({3}), {kInf, 1, 2});
  auto lse_inf = reduce(rdesc(c64({3}), ReduceAxes::all(), false, ReduceKind::kLogSumExp), lx).value();
  EXPECT_EQ(lse_inf.exact[0], kInf);
}

TEST(ReduceReference, ArgTieAndNanRules) {
  auto l = c64({6});
  auto x = tensor(l, {1, 5, 5, -2, -2, 0});
  ArgReduceDescriptor am{l, TensorLayout::contiguous(DType::kI64, {}), ReduceAxes::all(), false, ArgReduceKind::kArgmax};
  EXPECT_EQ(arg_reduce(am, x).value().exact[0], 1);
  am.kind = ArgReduceKind::kArgmin;
  EXPECT_EQ(arg_reduce(am, x).value().exact[0], 3);
  auto xn = tensor(l, {1, std::nan(""), 5, std::nan(""), -2, 0});
  EXPECT_EQ(arg_reduce(am, xn).value().exact[0], 1);  // NaN counts as the extreme
  am.kind = ArgReduceKind::kArgmax;
  EXPECT_EQ(arg_reduce(am, xn).value().exact[0], 1);
}

TEST(ReduceReference, BoolCountTrace) {
  auto l = c64({2, 3});
  auto x = tensor(l, {0, -0.0, std::nan(""), 1, 2, 3});
  BoolReduceDescriptor any{l, TensorLayout::contiguous(DType::kBool, {2}), ReduceAxes::of({1}), false, BoolReduceKind::kAny};
  EXPECT_EQ(bool_reduce(any, x).value().exact, (std::vector<double>{1, 1}));
  any.kind = BoolReduceKind::kAll;
  EXPECT_EQ(bool_reduce(any, x).value().exact, (std::vector<double>{0, 1}));
  CountReduceDescriptor cnt{l, TensorLayout::contiguous(DType::kI64, {3}), ReduceAxes::of({0}), false};
  EXPECT_EQ(count_reduce(cnt, x).value().exact, (std::vector<double>{1, 1, 2}));
  auto m = tensor(l, {1, 2, 3, 4, 5, 6});
  TraceDescriptor tr{l, TensorLayout::contiguous(DType::kF64, {})};
  EXPECT_EQ(trace(tr, m).value().exact[0], 6);
}

TEST(ReduceReference, IntegerSumWrapsInI64) {
  auto l = TensorLayout::contiguous(DType::kI32, {4});
  HostTensor x(l);
  for (int i = 0; i < 4; ++i) x.set(i, 2147483647.0);
  ReduceDescriptor d{l, TensorLayout::contiguous(DType::kI64, {}), ReduceAxes::all(), false, ReduceKind::kSum};
  EXPECT_EQ(reduce(d, x).value().exact[0], 4.0 * 2147483647.0);
}

// L = sum(g * f(x)): dL/dx by central differences (h = 1e-6) must match the reference's
// backward given y = f(x), element by element (1e-6 relative).
void expect_backward_matches_fd(const ReduceDescriptor& d, const HostTensor& x, const HostTensor& g) {
  const TensorLayout& l = d.x;
  auto y = reduce(d, x).value();
  HostTensor yt(d.y);
  for (std::size_t i = 0; i < y.exact.size(); ++i) yt.set(static_cast<std::int64_t>(i), y.exact[i]);
  ReduceBackwardDescriptor bd{d.y, l, d.y, l, d.axes, d.keepdim, d.kind, d.p, d.correction};
  auto gx = reduce_backward(bd, g, x, yt).value();
  const double h = 1e-6;
  for (std::int64_t i = 0; i < l.numel(); ++i) {
    auto loss = [&](double delta) {
      HostTensor xp(l);
      for (std::int64_t j = 0; j < l.numel(); ++j) xp.set(j, x.get(j) + (j == i ? delta : 0.0));
      auto r = reduce(d, xp).value();
      double s = 0;
      for (std::size_t k = 0; k < r.exact.size(); ++k) s += g.get(static_cast<std::int64_t>(k)) * r.exact[k];
      return s;
    };
    const double fd = (loss(h) - loss(-h)) / (2 * h);
    EXPECT_NEAR(gx.exact[static_cast<std::size_t>(i)], fd, 1e-6 * (1 + std::fabs(fd))) << "element " << i;
  }
}

// The kinds above over inner, outer, several and all dims.
TEST(ReduceReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  auto l = c64({3, 4, 2});
  struct Case {
    ReduceKind kind;
    double p;
    ReduceAxes axes;
    bool keepdim;
  };
  const Case cases[] = {
      {ReduceKind::kSum, 2, ReduceAxes::of({1}), false},   {ReduceKind::kMean, 2, ReduceAxes::of({0, 2}), true},
      {ReduceKind::kProd, 2, ReduceAxes::of({1}), false},  {ReduceKind::kAmax, 2, ReduceAxes::of({2}), false},
      {ReduceKind::kAmin, 2, ReduceAxes::all(), false},    {ReduceKind::kNorm, 2, ReduceAxes::of({1}), false},
      {ReduceKind::kNorm, 1, ReduceAxes::of({1}), true},   {ReduceKind::kNorm, 3, ReduceAxes::of({0}), false},
      {ReduceKind::kNorm, 0.5, ReduceAxes::of({2}), false}, {ReduceKind::kNorm, kInf, ReduceAxes::of({1}), false},
      {ReduceKind::kLogSumExp, 2, ReduceAxes::of({1, 2}), false}, {ReduceKind::kVar, 2, ReduceAxes::of({1}), false},
      {ReduceKind::kStd, 2, ReduceAxes::of({0}), true},
  };
  for (const auto& c : cases) {
    auto d = rdesc(l, c.axes, c.keepdim, c.kind, c.p);
    SCOPED_TRACE(d.to_string());
    HostTensor x(l);
    for (std::int64_t i = 0; i < l.numel(); ++i) x.set(i, (i % 2 ? -1.0 : 1.0) * u(rng));
    HostTensor g(d.y);
    for (std::int64_t i = 0; i < d.y.numel(); ++i) g.set(i, u(rng) - 1.25);
    expect_backward_matches_fd(d, x, g);
  }
}

// The kinds and options BackwardMatchesFiniteDifferences leaves out: max / min (amax / amin's
// aliases), norm p = -inf, negative and fractional p, p = 0 (a zero gradient), var / std with
// corrections 0, 2 and 0.5, over inner, outer, several and all dims with keepdim; prod with
// one and two zeros in a group (a multilinear function: central differences are exact there,
// and torch's zero rules must agree with them).
TEST(ReduceReference, BackwardMatchesFiniteDifferencesMoreKinds) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  auto l = c64({3, 4, 2});
  struct Case {
    ReduceKind kind;
    double p;
    double corr;
    ReduceAxes axes;
    bool keepdim;
  };
  const Case cases[] = {
      {ReduceKind::kMax, 2, 1, ReduceAxes::of({1}), false},     {ReduceKind::kMin, 2, 1, ReduceAxes::of({0, 2}), true},
      {ReduceKind::kMax, 2, 1, ReduceAxes::all(), false},       {ReduceKind::kNorm, -kInf, 1, ReduceAxes::of({1}), false},
      {ReduceKind::kNorm, -1.5, 1, ReduceAxes::of({2}), true},  {ReduceKind::kNorm, 0.5, 1, ReduceAxes::all(), false},
      {ReduceKind::kNorm, 0, 1, ReduceAxes::of({1}), false},    {ReduceKind::kNorm, 4, 1, ReduceAxes::of({0, 1}), false},
      {ReduceKind::kVar, 2, 0, ReduceAxes::of({1}), false},     {ReduceKind::kVar, 2, 2, ReduceAxes::of({0, 2}), true},
      {ReduceKind::kStd, 2, 0, ReduceAxes::of({1}), false},     {ReduceKind::kStd, 2, 0.5, ReduceAxes::all(), false},
      {ReduceKind::kStd, 2, 2, ReduceAxes::of({-1, 0}), false}, {ReduceKind::kAmin, 2, 1, ReduceAxes::of({0}), true},
  };
  for (const auto& c : cases) {
    auto d = rdesc(l, c.axes, c.keepdim, c.kind, c.p, c.corr);
    SCOPED_TRACE(d.to_string());
    HostTensor x(l);  // distinct magnitudes: no ties of x or |x|
    for (std::int64_t i = 0; i < l.numel(); ++i) x.set(i, (i % 2 ? -1.0 : 1.0) * (u(rng) + 0.01 * static_cast<double>(i)));
    HostTensor g(d.y);
    for (std::int64_t i = 0; i < d.y.numel(); ++i) g.set(i, u(rng) - 1.25);
    expect_backward_matches_fd(d, x, g);
  }
  // prod: groups of 4 along dim 1 with no, one and two zeros (groups (0, 0), (1, 1), (2, 0)...)
  auto d = rdesc(l, ReduceAxes::of({1}), false, ReduceKind::kProd);
  for (int zeros : {1, 2}) {
    SCOPED_TRACE(std::to_string(zeros) + " zeros");
    HostTensor x(l);
    for (std::int64_t i = 0; i < l.numel(); ++i) x.set(i, (i % 3 ? -1.0 : 1.0) * u(rng));
    for (std::int64_t a = 0; a < 3; ++a)
      for (std::int64_t b = 0; b < 2; ++b)
        for (int z = 0; z < (a == 0 ? 0 : zeros); ++z) x.set(a * 8 + (z + a) % 4 * 2 + b, 0.0);
    HostTensor g(d.y);
    for (std::int64_t i = 0; i < d.y.numel(); ++i) g.set(i, u(rng) - 1.25);
    expect_backward_matches_fd(d, x, g);
  }
}

// amax with ties: the gradient splits evenly (torch.amax); prod with one zero: only the zero
// gets the product of the others.
TEST(ReduceReference, BackwardTiesAndZeros) {
  auto l = c64({4});
  auto x = tensor(l, {3, 1, 3, 2});
  auto s = TensorLayout::contiguous(DType::kF64, {});
  auto g = tensor(s, {1.0});
  auto y = tensor(s, {3.0});
  ReduceBackwardDescriptor bd{s, l, s, l, ReduceAxes::all(), false, ReduceKind::kAmax};
  EXPECT_EQ(reduce_backward(bd, g, x, y).value().exact, (std::vector<double>{0.5, 0, 0.5, 0}));
  auto xz = tensor(l, {3, 0, 2, 2});
  auto yz = tensor(s, {0.0});
  bd.kind = ReduceKind::kProd;
  EXPECT_EQ(reduce_backward(bd, g, xz, yz).value().exact, (std::vector<double>{0, 12, 0, 0}));
}

// PyTorch's edge values (torch 2.15, CPU, checked this session): linalg.vector_norm p = 0.5 on
// [0, 1, -2] has gradient [0, 2.4142, -1.7071] (|x|^(p-1) masked to 0 at x == 0); p = +-inf with
// a NaN in the group is NaN forward and 0 everywhere backward (the mask |x| == y || isnan(x)
// picks the NaNs, torch.sign(NaN) = 0); var along a dim with n - correction = 0 is
// (2 / 0) g (x - mean): +-inf, NaN where x == mean; n - correction < 0 stays finite (negative);
// over every dim (dim=None) torch takes another rule (below).
TEST(ReduceReference, BackwardTorchEdgeValues) {
  auto l = c64({3});
  auto s = TensorLayout::contiguous(DType::kF64, {});
  auto g = tensor(s, {1.0});
  ReduceBackwardDescriptor bd{s, l, s, l, ReduceAxes::all(), false, ReduceKind::kNorm, 0.5};
  auto x = tensor(l, {0, 1, -2});
  auto y = tensor(s, {std::pow(1 + std::sqrt(2.0), 2)});
  auto half = reduce_backward(bd, g, x, y).value().exact;
  EXPECT_EQ(half[0], 0.0);
  EXPECT_NEAR(half[1], 2.414213562373095, 1e-12);
  EXPECT_NEAR(half[2], -1.707106781186548, 1e-12);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto l5 = c64({5});
  auto xn = tensor(l5, {3, nan, -3, 1, nan});
  auto yn = tensor(s, {nan});
  for (double p : {inf, -inf}) {
    ReduceBackwardDescriptor nd{s, l5, s, l5, ReduceAxes::all(), false, ReduceKind::kNorm, p};
    EXPECT_EQ(reduce_backward(nd, g, xn, yn).value().exact, (std::vector<double>{0, 0, 0, 0, 0})) << p;
    ReduceDescriptor fd{l5, s, ReduceAxes::all(), false, ReduceKind::kNorm, p};
    EXPECT_TRUE(std::isnan(reduce(fd, xn).value().exact[0])) << p;
  }
  auto l2 = c64({2, 2});
  auto s2 = c64({2});
  auto xv = tensor(l2, {1, 2, 5, 5});
  auto g2 = tensor(s2, {1, 1});
  ReduceBackwardDescriptor vd{s2, l2, s2, l2, ReduceAxes::of({1}), false, ReduceKind::kVar, 2, 2};
  auto yv = tensor(s2, {inf, nan});
  auto v0 = reduce_backward(vd, g2, xv, yv).value().exact;
  EXPECT_EQ(v0[0], -inf);
  EXPECT_EQ(v0[1], inf);
  EXPECT_TRUE(std::isnan(v0[2]) && std::isnan(v0[3]));
  vd.correction = 3;
  EXPECT_EQ(reduce_backward(vd, g2, xv, yv).value().exact, (std::vector<double>{1, -1, 0, 0}));
  // Over every dim (axes all = torch's dim=None; a rank-0 x too), n - correction <= 0: torch's
  // var_backward gives g * (x == mean ? NaN : inf) (x.var(correction=4) on [[1, 2], [5, 5]]: all
  // inf; with g = -1 all -inf; x.var(correction=3.5) is finite: [-9, -5, 7, 7]); std gives NaN.
  ReduceBackwardDescriptor ad{s, l2, s, l2, ReduceAxes::all(), false, ReduceKind::kVar, 2, 4};
  auto ya = tensor(s, {inf});
  EXPECT_EQ(reduce_backward(ad, g, xv, ya).value().exact, (std::vector<double>{inf, inf, inf, inf}));
  EXPECT_EQ(reduce_backward(ad, tensor(s, {-1.0}), xv, ya).value().exact, (std::vector<double>{-inf, -inf, -inf, -inf}));
  ad.correction = 5;
  EXPECT_EQ(reduce_backward(ad, g, xv, ya).value().exact, (std::vector<double>{inf, inf, inf, inf}));
  ad.correction = 3.5;
  EXPECT_EQ(reduce_backward(ad, g, xv, tensor(s, {25.5})).value().exact, (std::vector<double>{-9, -5, 7, 7}));
  auto xeq = tensor(l2, {3, 3, 3, 3});
  ad.correction = 4;
  const auto eq = reduce_backward(ad, g, xeq, tensor(s, {nan})).value().exact;
  for (double v : eq) EXPECT_TRUE(std::isnan(v));
  ad.kind = ReduceKind::kStd;
  const auto sd = reduce_backward(ad, g, xv, ya).value().exact;
  for (double v : sd) EXPECT_TRUE(std::isnan(v));
  ReduceBackwardDescriptor r0{s, s, s, s, ReduceAxes::of({0}), false, ReduceKind::kVar, 2, 2};  // rank-0 x, dim 0
  EXPECT_TRUE(std::isnan(reduce_backward(r0, g, tensor(s, {2.0}), tensor(s, {nan})).value().exact[0]));
}

// max / min backward as torch 2.15 (CPU): along a dim (torch.max(x, dim)) all of g goes to the
// returned index, the first maximum or the first NaN; over every dim (torch.max(x)) it splits
// evenly among the maxima, or among the NaNs when the result is NaN; amax keeps its own rule
// (an even split among x == y; a NaN result gives NaN everywhere).
TEST(ReduceReference, MaxMinBackwardFollowTorchIndices) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto l = c64({2, 3});
  auto s2 = c64({2});
  auto g2 = tensor(s2, {1, 1});
  ReduceBackwardDescriptor dim{s2, l, s2, l, ReduceAxes::of({1}), false, ReduceKind::kMax};
  EXPECT_EQ(reduce_backward(dim, g2, tensor(l, {2, 1, 2, 0, 0, 0}), tensor(s2, {2, 0})).value().exact,
            (std::vector<double>{1, 0, 0, 1, 0, 0}));
  dim.kind = ReduceKind::kMin;  // min([1, NaN, NaN]) = NaN at index 1; min([3, 1, 1]) = 1 at index 1
  EXPECT_EQ(reduce_backward(dim, g2, tensor(l, {1, nan, nan, 3, 1, 1}), tensor(s2, {nan, 1})).value().exact,
            (std::vector<double>{0, 1, 0, 0, 1, 0}));
  auto l4 = c64({4});
  auto s = TensorLayout::contiguous(DType::kF64, {});
  auto g = tensor(s, {1.0});
  ReduceBackwardDescriptor all{s, l4, s, l4, ReduceAxes::all(), false, ReduceKind::kMax};
  EXPECT_EQ(reduce_backward(all, g, tensor(l4, {1, nan, 3, nan}), tensor(s, {nan})).value().exact,
            (std::vector<double>{0, 0.5, 0, 0.5}));
  EXPECT_EQ(reduce_backward(all, g, tensor(l4, {3, 1, 3, 2}), tensor(s, {3})).value().exact,
            (std::vector<double>{0.5, 0, 0.5, 0}));
  all.kind = ReduceKind::kAmax;
  const auto amax_nan = reduce_backward(all, g, tensor(l4, {1, nan, 3, nan}), tensor(s, {nan})).value().exact;
  for (double v : amax_nan) EXPECT_TRUE(std::isnan(v));
}

// PyTorch parity of edge values (torch 2.15 CPU, session 36 audit; docs/coverage.md lists the
// disagreements, which are left out here): forward over every dim of a 1-D x (rows = 2: along
// dim 1 of [2, n]) and the backward with grad_y = 1. torch: sum / mean / prod / amax / amin /
// max / min, linalg.vector_norm(ord=p), logsumexp, var / std(correction=c), autograd for the
// backward ({} = not listed: torch disagrees). argmax / argmin, any / all / count_nonzero and
// integer sum / prod below.
TEST(ReduceReference, TorchEdgeValues) {
  using test::kNaN;
  struct Case {
    ReduceKind kind;
    double p, corr;
    std::int64_t rows;
    std::vector<double> x, y, gx;
  };
  const Case cases[] = {
      {ReduceKind::kSum, 2, 1, 1, {kInf, -kInf, 1}, {kNaN}, {1, 1, 1}},
      {ReduceKind::kSum, 2, 1, 1, {-0.0, -0.0}, {0}, {1, 1}},
      {ReduceKind::kSum, 2, 1, 1, {1e+308, 1e+308}, {kInf}, {1, 1}},
      {ReduceKind::kSum, 2, 1, 1, {kNaN, 1}, {kNaN}, {1, 1}},
      {ReduceKind::kMean, 2, 1, 1, {kInf, -kInf}, {kNaN}, {0.5, 0.5}},
      {ReduceKind::kMean, 2, 1, 1, {kInf, 1}, {kInf}, {0.5, 0.5}},
      {ReduceKind::kProd, 2, 1, 1, {0, kInf}, {kNaN}, {kInf, 0}},
      {ReduceKind::kProd, 2, 1, 1, {-0.0, 1}, {-0.0}, {1, 0}},
      {ReduceKind::kProd, 2, 1, 1, {1e+200, 1e+200}, {kInf}, {kInf, kInf}},
      {ReduceKind::kProd, 2, 1, 1, {kInf, 2}, {kInf}, {kNaN, kInf}},
      {ReduceKind::kProd, 2, 1, 1, {kNaN, 0}, {kNaN}, {0, kNaN}},
      {ReduceKind::kProd, 2, 1, 1, {0, 0, 2}, {0}, {0, 0, 0}},
      {ReduceKind::kProd, 2, 1, 1, {1e-200, 1e-200}, {0}, {0, 0}},
      {ReduceKind::kAmax, 2, 1, 1, {-0.0, 0}, {-0.0}, {0.5, 0.5}},
      {ReduceKind::kAmax, 2, 1, 1, {0, -0.0}, {0}, {0.5, 0.5}},
      {ReduceKind::kAmax, 2, 1, 1, {-kInf, -kInf}, {-kInf}, {0.5, 0.5}},
      {ReduceKind::kAmax, 2, 1, 1, {kNaN, kInf}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kAmax, 2, 1, 1, {1, kNaN, 3, kNaN}, {kNaN}, {kNaN, kNaN, kNaN, kNaN}},
      {ReduceKind::kAmax, 2, 1, 1, {2, 1, 2}, {2}, {0.5, 0, 0.5}},
      {ReduceKind::kAmax, 2, 1, 2, {2, 1, 2, 0, 0, 0}, {2, 0}, {0.5, 0, 0.5, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333}},
      {ReduceKind::kAmax, 2, 1, 2, {1, kNaN, kNaN, 0}, {kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN}},
      {ReduceKind::kAmin, 2, 1, 1, {-0.0, 0}, {-0.0}, {0.5, 0.5}},
      {ReduceKind::kAmin, 2, 1, 1, {0, -0.0}, {0}, {0.5, 0.5}},
      {ReduceKind::kAmin, 2, 1, 1, {-kInf, -kInf}, {-kInf}, {0.5, 0.5}},
      {ReduceKind::kAmin, 2, 1, 1, {kNaN, kInf}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kAmin, 2, 1, 1, {1, kNaN, 3, kNaN}, {kNaN}, {kNaN, kNaN, kNaN, kNaN}},
      {ReduceKind::kAmin, 2, 1, 1, {2, 1, 2}, {1}, {0, 1, 0}},
      {ReduceKind::kAmin, 2, 1, 2, {2, 1, 2, 0, 0, 0}, {1, 0}, {0, 1, 0, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333}},
      {ReduceKind::kAmin, 2, 1, 2, {1, kNaN, kNaN, 0}, {kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN}},
      {ReduceKind::kMax, 2, 1, 1, {-0.0, 0}, {-0.0}, {0.5, 0.5}},
      {ReduceKind::kMax, 2, 1, 1, {0, -0.0}, {0}, {0.5, 0.5}},
      {ReduceKind::kMax, 2, 1, 1, {-kInf, -kInf}, {-kInf}, {0.5, 0.5}},
      {ReduceKind::kMax, 2, 1, 1, {kNaN, kInf}, {kNaN}, {}},
      {ReduceKind::kMax, 2, 1, 1, {1, kNaN, 3, kNaN}, {kNaN}, {}},
      {ReduceKind::kMax, 2, 1, 1, {2, 1, 2}, {2}, {0.5, 0, 0.5}},
      {ReduceKind::kMax, 2, 1, 2, {2, 1, 2, 0, 0, 0}, {2, 0}, {}},
      {ReduceKind::kMax, 2, 1, 2, {1, kNaN, kNaN, 0}, {kNaN, kNaN}, {}},
      {ReduceKind::kMin, 2, 1, 1, {-0.0, 0}, {-0.0}, {0.5, 0.5}},
      {ReduceKind::kMin, 2, 1, 1, {0, -0.0}, {0}, {0.5, 0.5}},
      {ReduceKind::kMin, 2, 1, 1, {-kInf, -kInf}, {-kInf}, {0.5, 0.5}},
      {ReduceKind::kMin, 2, 1, 1, {kNaN, kInf}, {kNaN}, {}},
      {ReduceKind::kMin, 2, 1, 1, {1, kNaN, 3, kNaN}, {kNaN}, {}},
      {ReduceKind::kMin, 2, 1, 1, {2, 1, 2}, {1}, {0, 1, 0}},
      {ReduceKind::kMin, 2, 1, 2, {2, 1, 2, 0, 0, 0}, {1, 0}, {}},
      {ReduceKind::kMin, 2, 1, 2, {1, kNaN, kNaN, 0}, {kNaN, kNaN}, {}},
      {ReduceKind::kNorm, 0, 1, 1, {0, -0.0, 3, -4}, {2}, {0, 0, 0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {kInf, 1}, {2}, {0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {kNaN, 1}, {2}, {0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {1e+200, 1e+200}, {2}, {0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {1e-200, 1e-200}, {2}, {0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {-kInf, 2}, {2}, {0, 0}},
      {ReduceKind::kNorm, 0, 1, 1, {2, -2}, {2}, {0, 0}},
      {ReduceKind::kNorm, 1, 1, 1, {0, -0.0, 3, -4}, {7}, {0, 0, 1, -1}},
      {ReduceKind::kNorm, 1, 1, 1, {kInf, 1}, {kInf}, {1, 1}},
      {ReduceKind::kNorm, 1, 1, 1, {kNaN, 1}, {kNaN}, {0, 1}},
      {ReduceKind::kNorm, 1, 1, 1, {1e+200, 1e+200}, {2e+200}, {1, 1}},
      {ReduceKind::kNorm, 1, 1, 1, {1e-200, 1e-200}, {2e-200}, {1, 1}},
      {ReduceKind::kNorm, 1, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, 1, 1, 1, {-kInf, 2}, {kInf}, {-1, 1}},
      {ReduceKind::kNorm, 1, 1, 1, {2, -2}, {4}, {1, -1}},
      {ReduceKind::kNorm, 2, 1, 1, {0, -0.0, 3, -4}, {5}, {0, -0.0, 0.6, -0.8}},
      {ReduceKind::kNorm, 2, 1, 1, {kInf, 1}, {kInf}, {kNaN, 0}},
      {ReduceKind::kNorm, 2, 1, 1, {kNaN, 1}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kNorm, 2, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, 2, 1, 1, {-kInf, 2}, {kInf}, {kNaN, 0}},
      {ReduceKind::kNorm, 2, 1, 1, {2, -2}, {2.8284271247461903}, {0.7071067811865475, -0.7071067811865475}},
      {ReduceKind::kNorm, kInf, 1, 1, {0, -0.0, 3, -4}, {4}, {0, 0, 0, -1}},
      {ReduceKind::kNorm, kInf, 1, 1, {kInf, 1}, {kInf}, {1, 0}},
      {ReduceKind::kNorm, kInf, 1, 1, {kNaN, 1}, {kNaN}, {0, 0}},
      {ReduceKind::kNorm, kInf, 1, 1, {1e+200, 1e+200}, {1e+200}, {0.5, 0.5}},
      {ReduceKind::kNorm, kInf, 1, 1, {1e-200, 1e-200}, {1e-200}, {0.5, 0.5}},
      {ReduceKind::kNorm, kInf, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, kInf, 1, 1, {-kInf, 2}, {kInf}, {-1, 0}},
      {ReduceKind::kNorm, kInf, 1, 1, {2, -2}, {2}, {0.5, -0.5}},
      {ReduceKind::kNorm, -kInf, 1, 1, {0, -0.0, 3, -4}, {0}, {0, 0, 0, -0.0}},
      {ReduceKind::kNorm, -kInf, 1, 1, {kInf, 1}, {1}, {0, 1}},
      {ReduceKind::kNorm, -kInf, 1, 1, {kNaN, 1}, {kNaN}, {0, 0}},
      {ReduceKind::kNorm, -kInf, 1, 1, {1e+200, 1e+200}, {1e+200}, {0.5, 0.5}},
      {ReduceKind::kNorm, -kInf, 1, 1, {1e-200, 1e-200}, {1e-200}, {0.5, 0.5}},
      {ReduceKind::kNorm, -kInf, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, -kInf, 1, 1, {-kInf, 2}, {2}, {-0.0, 1}},
      {ReduceKind::kNorm, -kInf, 1, 1, {2, -2}, {2}, {0.5, -0.5}},
      {ReduceKind::kNorm, 0.5, 1, 1, {0, -0.0, 3, -4}, {13.928203230275509}, {0, 0, 2.1547005383792515, -1.8660254037844386}},
      {ReduceKind::kNorm, 0.5, 1, 1, {kInf, 1}, {kInf}, {kNaN, kInf}},
      {ReduceKind::kNorm, 0.5, 1, 1, {kNaN, 1}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kNorm, 0.5, 1, 1, {1e+200, 1e+200}, {4e+200}, {2, 2}},
      {ReduceKind::kNorm, 0.5, 1, 1, {1e-200, 1e-200}, {4e-200}, {2, 2}},
      {ReduceKind::kNorm, 0.5, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, 0.5, 1, 1, {-kInf, 2}, {kInf}, {kNaN, kInf}},
      {ReduceKind::kNorm, 0.5, 1, 1, {2, -2}, {8}, {2, -2}},
      {ReduceKind::kNorm, 3, 1, 1, {0, -0.0, 3, -4}, {4.497941445275415}, {0, -0.0, 0.4448513517305355, -0.790846847520952}},
      {ReduceKind::kNorm, 3, 1, 1, {kInf, 1}, {kInf}, {kNaN, 0}},
      {ReduceKind::kNorm, 3, 1, 1, {kNaN, 1}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kNorm, 3, 1, 1, {0, 0}, {0}, {0, 0}},
      {ReduceKind::kNorm, 3, 1, 1, {-kInf, 2}, {kInf}, {kNaN, 0}},
      {ReduceKind::kNorm, 3, 1, 1, {2, -2}, {2.5198420997897464}, {0.6299605249474366, -0.6299605249474366}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {kInf, -kInf}, {kInf}, {kNaN, 0}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {-kInf, -kInf}, {-kInf}, {kNaN, kNaN}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {kNaN, kInf}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {kInf, kInf}, {kInf}, {kNaN, kNaN}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {1000, 1000}, {1000.6931471805599}, {0.5000000000000275, 0.5000000000000275}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {-1000, -1000}, {-999.3068528194401}, {0.5000000000000275, 0.5000000000000275}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {-kInf, 0}, {0}, {0, 1}},
      {ReduceKind::kLogSumExp, 2, 1, 1, {kNaN, -kInf}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kVar, 2, 1, 1, {kInf, 1}, {kNaN}, {kNaN, -kInf}},
      {ReduceKind::kVar, 2, 1, 1, {1e+200, -1e+200}, {kInf}, {2e+200, -2e+200}},
      {ReduceKind::kVar, 2, 1, 1, {1e-200, -1e-200}, {0}, {2e-200, -2e-200}},
      {ReduceKind::kVar, 2, 1, 1, {kNaN, 1}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kVar, 2, 1, 1, {2, 2, 2}, {0}, {0, 0, 0}},
      {ReduceKind::kVar, 2, 0, 1, {1, 2}, {0.25}, {-0.5, 0.5}},
      {ReduceKind::kStd, 2, 1, 1, {kInf, 1}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kStd, 2, 1, 1, {kNaN, 1}, {kNaN}, {kNaN, kNaN}},
      {ReduceKind::kStd, 2, 1, 1, {2, 2, 2}, {0}, {0, 0, 0}},
      {ReduceKind::kStd, 2, 0, 1, {1, 2}, {0.5}, {-0.5, 0.5}}
  };
  for (const auto& c : cases) {
    const auto n = static_cast<std::int64_t>(c.x.size()) / c.rows;
    const auto xl = c.rows == 1 ? c64({n}) : c64({c.rows, n});
    const auto axes = c.rows == 1 ? ReduceAxes::all() : ReduceAxes::of({1});
    const auto d = rdesc(xl, axes, false, c.kind, c.p, c.corr);
    const std::string what = d.to_string() + " x = " + test::list_string(c.x);
    const auto xt = tensor(xl, c.x);
    const auto y = reduce(d, xt).value().exact;
    test::expect_torch_values(y, c.y, what);
    if (c.gx.empty()) continue;
    HostTensor yt(d.y), g(d.y);
    for (std::int64_t i = 0; i < d.y.numel(); ++i) {
      yt.set(i, y[static_cast<std::size_t>(i)]);
      g.set(i, 1.0);
    }
    const ReduceBackwardDescriptor bd{d.y, xl, d.y, xl, axes, false, c.kind, c.p, c.corr};
    test::expect_torch_values(reduce_backward(bd, g, xt, yt).value().exact, c.gx, what + " backward");
  }
  // torch.argmax / argmin of a 1-D x: the first NaN wins both, ties (-0 / +0 too) the first
  struct ArgCase {
    std::vector<double> x;
    double argmax, argmin;
  };
  const ArgCase args[] = {
      {{kNaN, kNaN}, 0, 0},
      {{1, kNaN}, 1, 1},
      {{-0.0, 0}, 0, 0},
      {{0, -0.0}, 0, 0},
      {{kInf, kInf}, 0, 0},
      {{-kInf, -kInf, 1}, 2, 0},
      {{1, 2, kNaN, kInf, -kInf}, 2, 2}
  };
  for (const auto& c : args) {
    const auto xl = c64({static_cast<std::int64_t>(c.x.size())});
    ArgReduceDescriptor am{xl, TensorLayout::contiguous(DType::kI64, {}), ReduceAxes::all(), false, ArgReduceKind::kArgmax};
    const auto xt = tensor(xl, c.x);
    EXPECT_EQ(arg_reduce(am, xt).value().exact[0], c.argmax) << test::list_string(c.x);
    am.kind = ArgReduceKind::kArgmin;
    EXPECT_EQ(arg_reduce(am, xt).value().exact[0], c.argmin) << test::list_string(c.x);
  }
  // x.any(), x.all(), torch.count_nonzero(x): empty, NaN, -0, a subnormal, +-inf
  struct BoolCase {
    std::vector<double> x, any_all_count;
  };
  const BoolCase bools[] = {
      {{}, {0, 1, 0}},
      {{kNaN}, {1, 1, 1}},
      {{-0.0}, {0, 0, 0}},
      {{0, 1e-320}, {1, 0, 1}},
      {{kInf, -kInf}, {1, 1, 2}}
  };
  for (const auto& c : bools) {
    const auto xl = c64({static_cast<std::int64_t>(c.x.size())});
    const auto xt = tensor(xl, c.x);
    BoolReduceDescriptor b{xl, TensorLayout::contiguous(DType::kBool, {}), ReduceAxes::all(), false, BoolReduceKind::kAny};
    const double any = bool_reduce(b, xt).value().exact[0];
    b.kind = BoolReduceKind::kAll;
    const double all = bool_reduce(b, xt).value().exact[0];
    const CountReduceDescriptor cd{xl, TensorLayout::contiguous(DType::kI64, {}), ReduceAxes::all(), false};
    EXPECT_EQ((std::vector<double>{any, all, count_reduce(cd, xt).value().exact[0]}), c.any_all_count) << test::list_string(c.x);
  }
  // integers: torch.tensor([65536, 65536], dtype=int32).prod() = 4294967296 (int64);
  // [-2^31, -1] int32 .prod() = 2147483648; [2^63 - 1, 1] int64 .sum() wraps to -2^63
  const auto i32 = TensorLayout::contiguous(DType::kI32, {2});
  const auto i64 = TensorLayout::contiguous(DType::kI64, {2});
  const auto s64 = TensorLayout::contiguous(DType::kI64, {});
  HostTensor a(i32), m(i32), w(i64);
  a.set(0, 65536);
  a.set(1, 65536);
  m.set(0, -2147483648.0);
  m.set(1, -1);
  const std::int64_t wv[2] = {std::numeric_limits<std::int64_t>::max(), 1};
  std::memcpy(w.data(), wv, sizeof wv);
  EXPECT_EQ(reduce(ReduceDescriptor{i32, s64, ReduceAxes::all(), false, ReduceKind::kProd}, a).value().exact[0], 4294967296.0);
  EXPECT_EQ(reduce(ReduceDescriptor{i32, s64, ReduceAxes::all(), false, ReduceKind::kProd}, m).value().exact[0], 2147483648.0);
  EXPECT_EQ(reduce(ReduceDescriptor{i64, s64, ReduceAxes::all(), false, ReduceKind::kSum}, w).value().exact[0], -9223372036854775808.0);
}

}  // namespace
}  // namespace baracuda::reference

namespace baracuda {
namespace {

DeviceCaps sm90() { return DeviceCaps::for_arch(90).value(); }

ReduceDescriptor rd(const TensorLayout& x, ReduceAxes axes, bool keepdim = false, ReduceKind k = ReduceKind::kSum) {
  return ReduceDescriptor{x, reduced_layout(x, axes, keepdim, x.dtype).value(), axes, keepdim, k};
}
std::string chosen(const ReduceDescriptor& d) {
  auto p = ReducePlan::select_for_caps(sm90(), d);
  if (!p) return "error: " + p.error().to_string();
  return p->sku().impl;
}

TEST(ReduceDispatch, PicksByLayout) {
  const auto bf = DType::kBF16;
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {16384, 8192}), ReduceAxes::of({1}))), "block_row_vec16");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {16384, 512}), ReduceAxes::of({1}))), "warp_row_vec16");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {16384, 7}), ReduceAxes::of({1}))), "warp_row");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {4, 1000001}), ReduceAxes::of({1}))), "split_row");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {2048, 3001}), ReduceAxes::of({1}))), "block_row");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {4, 131072}), ReduceAxes::of({1}))), "split_row_vec16");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(DType::kF32, {1LL << 28}), ReduceAxes::all())), "split_row_vec16");
  // sums over the leading dims: the elementwise column reduction; other ops the column kernel
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {16384, 8192}), ReduceAxes::of({0}))), "column_stream_vec16");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {16384, 8192}), ReduceAxes::of({0}), false, ReduceKind::kMean)),
            "column_vec16");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {4, 16384, 8192}), ReduceAxes::of({1}))), "column_vec16");  // outer kept dim
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {64, 100, 7}), ReduceAxes::of({1}))), "column");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(bf, {8, 16, 32}), ReduceAxes::of({0, 2}))), "generic");
  // middle axes that merge: [8, (16, 32), 4] -> one reduced dim of stride 4 (column)
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(DType::kF32, {8, 16, 32, 4}), ReduceAxes::of({1, 2}))), "column_vec16");
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(DType::kF32, {16, 32, 4}), ReduceAxes::of({0, 1}))), "column_stream_vec16");
  // several trailing axes collapse into one row
  EXPECT_EQ(chosen(rd(TensorLayout::contiguous(DType::kF32, {8, 16, 32}), ReduceAxes::of({1, 2}))), "warp_row_vec16");
}

TEST(ReduceDispatch, SplitWorkspaceAndDeterministic) {
  auto d = rd(TensorLayout::contiguous(DType::kF32, {1LL << 28}), ReduceAxes::all());
  auto p = ReducePlan::select_for_caps(sm90(), d);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_GT(p->workspace_size(), 0u);
  EXPECT_TRUE(p->sku().precision.deterministic);
  EXPECT_EQ(p->sku().name().find("sum.fwd.split_row_vec16[f32,f32"), 0u) << p->sku().name();
  PlanPreference pref;
  pref.max_workspace_bytes = 0;
  auto q = ReducePlan::select_for_caps(sm90(), d, pref);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->sku().impl, "block_row_vec16");
}

// column_stream: the column reduction's row chunks (about three waves of 4 blocks an SM of
// 16 column vectors) as slices, their f32 partial sums in the workspace.
TEST(ReduceDispatch, ColumnStreamWorkspace) {
  auto d = rd(TensorLayout::contiguous(DType::kBF16, {16384, 8192}), ReduceAxes::of({0}));
  auto p = ReducePlan::select_for_caps(sm90(), d);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name().find("sum.fwd.column_stream_vec16[bf16,f32"), 0u) << p->sku().name();
  const std::size_t chunks = 132 * 4 * 3 / 64;  // 64 column blocks of 16 vectors
  EXPECT_EQ(p->workspace_size(), chunks * 8192u * 4u);
  PlanPreference pref;
  pref.max_workspace_bytes = 0;
  auto q = ReducePlan::select_for_caps(sm90(), d, pref);
  ASSERT_TRUE(q.has_value());
  EXPECT_NE(q->sku().impl, "column_stream_vec16");
}

TEST(ReduceDispatch, OtherPlans) {
  auto x = TensorLayout::contiguous(DType::kF16, {64, 1000});
  ArgReduceDescriptor a{x, TensorLayout::contiguous(DType::kI64, {64}), ReduceAxes::of({1}), false, ArgReduceKind::kArgmax};
  auto pa = ArgReducePlan::select_for_caps(sm90(), a);
  ASSERT_TRUE(pa.has_value()) << pa.error().to_string();
  EXPECT_EQ(pa->sku().family, "argmax");
  BoolReduceDescriptor b{x, TensorLayout::contiguous(DType::kBool, {1000}), ReduceAxes::of({0}), false, BoolReduceKind::kAll};
  EXPECT_TRUE(BoolReducePlan::select_for_caps(sm90(), b).has_value());
  CountReduceDescriptor c{x, TensorLayout::contiguous(DType::kI64, {}), ReduceAxes::all(), false};
  EXPECT_TRUE(CountReducePlan::select_for_caps(sm90(), c).has_value());
  TraceDescriptor t{TensorLayout::contiguous(DType::kI32, {5, 7}), TensorLayout::contiguous(DType::kI64, {})};
  auto pt = TracePlan::select_for_caps(sm90(), t);
  ASSERT_TRUE(pt.has_value()) << pt.error().to_string();
  EXPECT_EQ(pt->sku().impl, "generic");
  ReduceBackwardDescriptor bd{TensorLayout::contiguous(DType::kF16, {64}), x, TensorLayout::contiguous(DType::kF16, {64}), x,
                              ReduceAxes::of({1}), false, ReduceKind::kVar};
  auto pb = ReduceBackwardPlan::select_for_caps(sm90(), bd);
  ASSERT_TRUE(pb.has_value()) << pb.error().to_string();
  EXPECT_EQ(pb->sku().impl, "group");
}

using test::expect_select_refusals;
using test::Refusal;

TEST(SelectRefusals, ReducePlan) {
  const auto x = TensorLayout::contiguous(DType::kF32, {4, 6, 8});
  const auto valid = rd(x, ReduceAxes::of({1}), false, ReduceKind::kSum);
  expect_select_refusals<ReducePlan>(
      valid, {
                 {"dtype", [](auto& d) { d.x.dtype = d.y.dtype = DType::kI8; }, "x.dtype = i8"},
                 {"dtype", [](auto& d) { d.y.dtype = DType::kF16; }, "y.dtype = f16"},
                 {"dtype", [](auto& d) { d.x.dtype = DType::kI32; d.y.dtype = DType::kI32; }, "y.dtype = i32"},
                 {"dtype", [](auto& d) { d.kind = ReduceKind::kMean; d.x.dtype = DType::kI32; d.y.dtype = DType::kI64; }, "x.dtype = i32"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({3}); }, "axes[0] = 3"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({-4}); }, "axes[0] = -4"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({1, -2}); }, "axes[1] = -2 repeats dim 1"},
                 {"shape", [](auto& d) { d.keepdim = true; }, "y.shape = [4,8]"},
                 {"shape", [](auto& d) { d.y = TensorLayout::contiguous(DType::kF32, {4, 1, 8}); }, "y.shape = [4,1,8]"},
                 {"stride", [](auto& d) { d.y.strides[1] = 0; }, "y"},
                 {"empty", [](auto& d) { d.kind = ReduceKind::kAmax; d.x.shape[1] = 0; d.x = TensorLayout::contiguous(DType::kF32, {4, 0, 8}); }, "zero elements"},
                 {"param", [](auto& d) { d.kind = ReduceKind::kNorm; d.p = std::nan(""); }, "p = nan"},
                 // the whole message: field, value and rule
                 {"dtype", [](auto& d) { d.x.dtype = d.y.dtype = DType::kI8; },
                  "x.dtype = i8 is not supported by reduce kind sum (f64, f32, f16, bf16, i64, i32)"},
                 {"dtype", [](auto& d) { d.y.dtype = DType::kF16; }, "y.dtype = f16 but reduce kind sum writes f32"},
                 {"shape", [](auto& d) { d.keepdim = true; }, "y.shape = [4,8] but reducing x = [4,6,8] with keepdim gives [4,1,8]"},
                 {"stride", [](auto& d) { d.y.strides[1] = 0; }, "y = f32[4,8]{8,0} maps several elements to one address"},
                 {"stride", [](auto& d) { d.x.strides[0] = std::int64_t{1} << 61; },
                  "x = f32[4,6,8]{2305843009213693952,8,1} is too large for 64-bit indexing"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({0, 1, 2, 0, 1, 2, 0, 1, 2}); }, "axes.count = 9 is not in 0..8"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({3}); }, "axes[0] = 3 is out of range for x of rank 3 (needs -3..2)"},
             });
}

TEST(SelectRefusals, ReduceBackwardPlan) {
  const auto x = TensorLayout::contiguous(DType::kBF16, {4, 6});
  const auto y = TensorLayout::contiguous(DType::kBF16, {4});
  ReduceBackwardDescriptor valid{y, x, y, x, ReduceAxes::of({1}), false, ReduceKind::kAmax};
  expect_select_refusals<ReduceBackwardPlan>(
      valid, {
                 {"dtype", [](auto& d) { d.x.dtype = d.grad_x.dtype = DType::kI32; }, "x.dtype = i32"},
                 {"dtype", [](auto& d) { d.grad_y.dtype = DType::kF32; }, "grad_y"},
                 {"shape", [](auto& d) { d.grad_x = TensorLayout::contiguous(DType::kBF16, {4, 7}); }, "grad_x = bf16[4,7]"},
                 {"shape", [](auto& d) { d.keepdim = true; }, "y.shape = [4]"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({2}); }, "axes[0] = 2"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({0, 0}); }, "axes[1] = 0 repeats dim 0"},
                 {"stride", [](auto& d) { d.grad_x.strides[0] = 0; }, "grad_x"},
                 // the whole message: field, value and rule
                 {"dtype", [](auto& d) { d.x.dtype = d.grad_x.dtype = DType::kI32; },
                  "x.dtype = i32 is not supported by amax_backward (f64, f32, f16, bf16)"},
                 {"dtype", [](auto& d) { d.grad_y.dtype = DType::kF32; }, "grad_y.dtype = f32 differs from x.dtype = bf16"},
                 {"dtype", [](auto& d) { d.y.dtype = DType::kF16; }, "y.dtype = f16 differs from x.dtype = bf16"},
                 {"dtype", [](auto& d) { d.grad_x.dtype = DType::kF32; }, "grad_x.dtype = f32 differs from x.dtype = bf16"},
                 {"shape", [](auto& d) { d.grad_x = TensorLayout::contiguous(DType::kBF16, {4, 7}); },
                  "grad_x = bf16[4,7] does not have the shape of x = bf16[4,6]"},
                 {"shape", [](auto& d) { d.grad_y = TensorLayout::contiguous(DType::kBF16, {5}); },
                  "grad_y.shape = [5] but reducing x = [4,6] without keepdim gives [4]"},
                 {"stride", [](auto& d) { d.grad_x.strides[0] = 0; }, "grad_x = bf16[4,6]{0,1} maps several elements to one address"},
                 {"stride", [](auto& d) { d.x.strides[0] = std::int64_t{1} << 61; },
                  "x = bf16[4,6]{2305843009213693952,1} is too large for 64-bit indexing"},
                 {"axis", [](auto& d) { d.axes = ReduceAxes::of({-3}); }, "axes[0] = -3 is out of range for x of rank 2 (needs -2..1)"},
                 {"empty", [](auto& d) { d.x = d.grad_x = TensorLayout::contiguous(DType::kBF16, {4, 0}); },
                  "amax_backward of x = bf16[4,0] reduces over zero elements"},
             });
}

// The backward has one candidate (`group`, a block per kept element) and never asks for a
// workspace: every kind, reduced dims inner / outer / all, keepdim, a strided x.
TEST(SelectRefusals, ReduceBackwardPlanNeedsNoWorkspace) {
  const auto x = TensorLayout::contiguous(DType::kF32, {2, 262144});
  const auto xs = TensorLayout::strided(DType::kF32, {512, 300}, {1, 512});
  for (auto kind : {ReduceKind::kSum, ReduceKind::kMean, ReduceKind::kProd, ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kAmax,
                    ReduceKind::kAmin, ReduceKind::kNorm, ReduceKind::kLogSumExp, ReduceKind::kVar, ReduceKind::kStd})
    for (const auto& [xl, axes, keepdim] : {std::tuple{x, ReduceAxes::of({1}), false}, std::tuple{x, ReduceAxes::of({0}), true},
                                            std::tuple{x, ReduceAxes::all(), false}, std::tuple{xs, ReduceAxes::of({0}), false}}) {
      const auto y = reduced_layout(xl, axes, keepdim, xl.dtype).value();
      const ReduceBackwardDescriptor d{y, xl, y, TensorLayout::contiguous(DType::kF32, xl.shape_span()), axes, keepdim, kind};
      auto p = ReduceBackwardPlan::select_for_caps(sm90(), d);
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      EXPECT_EQ(p->workspace_size(), 0u) << d.to_string();
    }
}

TEST(SelectRefusals, ArgBoolCountTracePlans) {
  const auto x = TensorLayout::contiguous(DType::kF32, {4, 6});
  ArgReduceDescriptor a{x, TensorLayout::contiguous(DType::kI64, {4}), ReduceAxes::of({1}), false, ArgReduceKind::kArgmin};
  expect_select_refusals<ArgReducePlan>(
      a, {
             {"dtype", [](auto& d) { d.y.dtype = DType::kI32; }, "y.dtype = i32"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kU8; }, "x.dtype = u8"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({0, 1}); }, "axes = [0,1]"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({5}); }, "axes[0] = 5"},
             {"shape", [](auto& d) { d.keepdim = true; }, "y.shape = [4]"},
             {"empty", [](auto& d) { d.x = TensorLayout::contiguous(DType::kF32, {4, 0}); }, "zero elements"},
             {"dtype", [](auto& d) { d.y.dtype = DType::kI32; }, "y.dtype = i32 but argmin writes i64"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kU8; }, "x.dtype = u8 is not supported by argmin (f64, f32, f16, bf16, i64, i32)"},
             {"shape", [](auto& d) { d.y = TensorLayout::contiguous(DType::kI64, {6}); },
              "y.shape = [6] but reducing x = [4,6] without keepdim gives [4]"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({0, 1}); }, "axes = [0,1]: argmin takes one axis or all axes"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({5}); }, "axes[0] = 5 is out of range for x of rank 2 (needs -2..1)"},
             {"stride", [](auto& d) { d.y.strides[0] = 0; }, "y = i64[4]{0} maps several elements to one address"},
             {"stride", [](auto& d) { d.x.strides[0] = std::int64_t{1} << 61; },
              "x = f32[4,6]{2305843009213693952,1} is too large for 64-bit indexing"},
             {"empty", [](auto& d) { d.x = TensorLayout::contiguous(DType::kF32, {4, 0}); },
              "argmin of x = f32[4,0] reduces over zero elements"},
         });
  BoolReduceDescriptor b{x, TensorLayout::contiguous(DType::kBool, {6}), ReduceAxes::of({0}), false, BoolReduceKind::kAny};
  expect_select_refusals<BoolReducePlan>(
      b, {
             {"dtype", [](auto& d) { d.y.dtype = DType::kU8; }, "y.dtype = u8"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kS4; }, "x.dtype = s4"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({-3}); }, "axes[0] = -3"},
             {"shape", [](auto& d) { d.y = TensorLayout::contiguous(DType::kBool, {4}); }, "y.shape = [4]"},
             {"dtype", [](auto& d) { d.y.dtype = DType::kU8; }, "y.dtype = u8 but any writes bool"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kS4; }, "x.dtype = s4 is not supported by any (f64, f32, f16, bf16"},
             {"shape", [](auto& d) { d.y = TensorLayout::contiguous(DType::kBool, {4}); },
              "y.shape = [4] but reducing x = [4,6] without keepdim gives [6]"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({-3}); }, "axes[0] = -3 is out of range for x of rank 2 (needs -2..1)"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({0, -2}); }, "axes[1] = -2 repeats dim 0"},
             {"stride", [](auto& d) { d.y.strides[0] = 0; }, "y = bool[6]{0} maps several elements to one address"},
             {"stride", [](auto& d) { d.x.strides[0] = std::int64_t{1} << 61; },
              "x = f32[4,6]{2305843009213693952,1} is too large for 64-bit indexing"},
         });
  CountReduceDescriptor c{x, TensorLayout::contiguous(DType::kI64, {}), ReduceAxes::all(), false};
  expect_select_refusals<CountReducePlan>(
      c, {
             {"dtype", [](auto& d) { d.y.dtype = DType::kI32; }, "y.dtype = i32"},
             {"shape", [](auto& d) { d.keepdim = true; }, "y.shape = []"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({1, 1}); }, "repeats dim 1"},
             {"dtype", [](auto& d) { d.y.dtype = DType::kI32; }, "y.dtype = i32 but count_nonzero writes i64"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kS4; }, "x.dtype = s4 is not supported by count_nonzero (f64, f32, f16, bf16"},
             {"shape", [](auto& d) { d.keepdim = true; }, "y.shape = [] but reducing x = [4,6] with keepdim gives [1,1]"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({1, 1}); }, "axes[1] = 1 repeats dim 1"},
             {"axis", [](auto& d) { d.axes = ReduceAxes::of({2}); }, "axes[0] = 2 is out of range for x of rank 2 (needs -2..1)"},
             {"stride", [](auto& d) { d.axes = ReduceAxes::of({0}); d.y = TensorLayout::strided(DType::kI64, {6}, {0}); },
              "y = i64[6]{0} maps several elements to one address"},
             {"stride", [](auto& d) { d.x.strides[0] = std::int64_t{1} << 61; },
              "x = f32[4,6]{2305843009213693952,1} is too large for 64-bit indexing"},
         });
  TraceDescriptor t{x, TensorLayout::contiguous(DType::kF32, {})};
  expect_select_refusals<TracePlan>(
      t, {
             {"dtype", [](auto& d) { d.y.dtype = DType::kF64; }, "y.dtype = f64"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kU8; }, "x.dtype = u8"},
             {"shape", [](auto& d) { d.x = TensorLayout::contiguous(DType::kF32, {4, 6, 2}); }, "x.rank = 3"},
             {"shape", [](auto& d) { d.y = TensorLayout::contiguous(DType::kF32, {1}); }, "y.rank = 1"},
             {"dtype", [](auto& d) { d.y.dtype = DType::kF64; }, "y.dtype = f64 but trace writes f32"},
             {"dtype", [](auto& d) { d.x.dtype = d.y.dtype = DType::kI32; }, "y.dtype = i32 but trace of i32 writes i64"},
             {"dtype", [](auto& d) { d.x.dtype = DType::kU8; }, "x.dtype = u8 is not supported by trace (f64, f32, f16, bf16, i64, i32)"},
             {"shape", [](auto& d) { d.x = TensorLayout::contiguous(DType::kF32, {24}); }, "x.rank = 1 but trace needs a 2-D x"},
             {"shape", [](auto& d) { d.y = TensorLayout::contiguous(DType::kF32, {1}); }, "y.rank = 1 but trace writes a rank-0 y"},
             {"stride", [](auto& d) { d.x.strides[0] = std::int64_t{1} << 61; },
              "x = f32[4,6]{2305843009213693952,1} is too large for 64-bit indexing"},
         });
}

}  // namespace
}  // namespace baracuda
