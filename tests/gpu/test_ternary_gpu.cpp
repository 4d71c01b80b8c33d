// GPU tests of the ternary group against baracuda::reference: TernaryPlan (every kind x
// floating dtype, clamp on the integer dtypes), TernaryBackwardPlan (every kind, every
// subset of gradients, broadcast operands reduced), WherePlan (every real dtype, bit-exact),
// WhereBackwardPlan, AffinePlan (floating and integer) and FillPlan (every real dtype):
// contiguous, strided, broadcast, negative-stride, in-place and edge shapes, under every SKU
// that accepts the case, on poisoned outputs with guard bytes; then the run-time refusals
// (null, misaligned, aliasing, workspace) that must leave the outputs untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/reference/ternary.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }
TensorLayout strided(DType t, std::initializer_list<std::int64_t> s, std::initializer_list<std::int64_t> st, int align = 16) {
  return TensorLayout::strided(t, s, st, align);
}
std::string pname(DType t) { return std::string(dtype_name(t)); }
TensorLayout dense_like(const TensorLayout& l) { return TensorLayout::contiguous(l.dtype, l.shape_span()); }

const DType kFloatTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};
const DType kIntTypes[] = {DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8};
const DType kAllTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2,
                           DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8, DType::kBool};
const TernaryKind kKinds[] = {TernaryKind::kClamp, TernaryKind::kFma, TernaryKind::kAddcmul, TernaryKind::kAddcdiv};

// Three inputs broadcast into out; in_place: out aliases a (same layout).
struct Case3 {
  std::string name;
  TensorLayout a, b, c, out;
  bool in_place = false;
};

std::vector<Case3> ternary_cases(DType t) {
  std::vector<Case3> cs;
  for (auto s : std::vector<std::vector<std::int64_t>>{{0}, {1}, {7}, {1009}, {4097}, {33, 129}, {3, 5, 7, 11}, {257, 1031}}) {
    auto l = TensorLayout::contiguous(t, s);
    std::string n = "contig[";
    for (auto d : s) n += std::to_string(d) + ",";
    cs.push_back({n + "]", l, l, l, l});
  }
  auto out = contig(t, {257, 1031});
  cs.push_back({"bounds_row", out, contig(t, {1031}), contig(t, {1031}), out});
  cs.push_back({"bounds_row_vec", contig(t, {257, 1024}), contig(t, {1024}), contig(t, {1, 1024}), contig(t, {257, 1024})});
  cs.push_back({"bounds_col_scalar", out, contig(t, {257, 1}), contig(t, {}), out});
  cs.push_back({"outer3", contig(t, {257, 1}), contig(t, {1, 1031}), contig(t, {1}), out});
  cs.push_back({"rank4_broadcast", contig(t, {3, 1, 7, 1}), contig(t, {5, 1, 11}), contig(t, {3, 5, 1, 11}), contig(t, {3, 5, 7, 11})});
  const auto m = contig(t, {33, 129});
  cs.push_back({"transposed_a", strided(t, {33, 129}, {1, 33}), m, m, m});
  cs.push_back({"sliced_b", m, strided(t, {33, 129}, {258, 2}), m, m});
  cs.push_back({"negative_c", m, m, strided(t, {33, 129}, {129, -1}), m});
  cs.push_back({"transposed_out", m, m, m, strided(t, {33, 129}, {1, 33})});
  cs.push_back({"padded_rows", strided(t, {33, 128}, {144, 1}), contig(t, {128}), strided(t, {33, 128}, {136, 1}), contig(t, {33, 128})});
  cs.push_back({"align2", m, m, m, TensorLayout::contiguous(t, {33, 129}, 2)});
  cs.push_back({"zero_rows", contig(t, {0, 5}), contig(t, {5}), contig(t, {1, 5}), contig(t, {0, 5})});
  cs.push_back({"in_place", out, out, contig(t, {1031}), out, true});
  if (t == DType::kBF16) cs.push_back({"large", contig(t, {8192, 4099}), contig(t, {4099}), contig(t, {8192, 4099}), contig(t, {8192, 4099})});
  return cs;
}

// Inputs per kind: clamp bounds overlap so that some min > max; addcdiv divisors kept off 0
// in the plain values (edges still bring +-0, inf, NaN and subnormals).
void fill_inputs(TernaryKind k, HostTensor& a, HostTensor& b, HostTensor& c) {
  fill_random(a, -4, 4, Fill::kWithEdges);
  if (k == TernaryKind::kClamp) {
    fill_random(b, -3, 1, Fill::kWithEdges);
    fill_random(c, -1, 3, Fill::kWithEdges);
  } else if (k == TernaryKind::kAddcdiv) {
    fill_random(b, -4, 4, Fill::kWithEdges);
    fill_random(c, 0.5, 4, Fill::kWithEdges);
  } else {
    fill_random(b, -4, 4, Fill::kWithEdges);
    fill_random(c, -4, 4, Fill::kWithEdges);
  }
}

// ------------------------------------------------------------------------------- ternary forward
class TernaryGpu : public ::testing::TestWithParam<std::tuple<TernaryKind, DType>> {};

void check_ternary(const TernaryDescriptor& d, const Case3& c, const HostTensor& ha, const HostTensor& hb,
                   const HostTensor& hc, const reference::Result& want, bool exact) {
  DeviceTensor da(ha, test_stream()), db(hb, test_stream()), dc(hc, test_stream());
  HostTensor ho(c.out);
  DeviceTensor dout(ho, test_stream());
  void* out_ptr = c.in_place ? da.data() : dout.data();
  for_each_sku<TernaryPlan>(
      d,
      [&] {
        da.upload(ha, test_stream());
        if (!c.in_place) dout.poison(0xFF, test_stream());
      },
      [&](const TernaryPlan& p, Workspace ws) {
        return p.run(test_stream(), ws, TernaryArgs{.a = da.data(), .b = db.data(), .c = dc.data(), .out = out_ptr});
      },
      [&](const std::string& sku) {
        ASSERT_TRUE((c.in_place ? da : dout).download(ho, test_stream()));
        if (exact) EXPECT_TRUE(check_exact(ho, want, sku + " " + d.to_string()));
        else EXPECT_TRUE(check_close(ho, want, sku + " " + d.to_string()));
      });
}

TEST_P(TernaryGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (double value : {1.0, -0.75}) {
    if (value != 1.0 && (kind == TernaryKind::kClamp || kind == TernaryKind::kFma)) continue;
    for (const auto& c : ternary_cases(t)) {
      SCOPED_TRACE(c.name + " value=" + std::to_string(value));
      TernaryDescriptor d{kind, value, c.a, c.b, c.c, c.out};
      HostTensor ha(c.a), hb(c.b), hc(c.c);
      fill_inputs(kind, ha, hb, hc);
      auto want = reference::ternary(d, ha, hb, hc);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      check_ternary(d, c, ha, hb, hc, want.value(), false);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, TernaryGpu, ::testing::Combine(::testing::ValuesIn(kKinds), ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) {
                           return std::string(ternary_kind_name(std::get<0>(info.param))) + "_" + pname(std::get<1>(info.param));
                         });

// clamp on integers: exact, extremes included, min > max in places.
struct IntRange {
  double lo, hi;
};
IntRange int_range(DType t) {
  switch (t) {
    case DType::kU8: return {0, 255};
    case DType::kI8: return {-128, 127};
    case DType::kI16: return {-32768, 32767};
    case DType::kI32: return {-2147483648.0, 2147483647.0};
    default: return {-9.2e18, 9.2e18};
  }
}

class TernaryIntGpu : public ::testing::TestWithParam<DType> {};

TEST_P(TernaryIntGpu, ClampEveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const IntRange r = int_range(t);
  for (const auto& c : ternary_cases(t)) {
    SCOPED_TRACE(c.name);
    TernaryDescriptor d{TernaryKind::kClamp, 1, c.a, c.b, c.c, c.out};
    HostTensor ha(c.a), hb(c.b), hc(c.c);
    fill_random(ha, r.lo, r.hi);
    fill_random(hb, r.lo, r.lo + (r.hi - r.lo) * 0.6);
    fill_random(hc, r.lo + (r.hi - r.lo) * 0.4, r.hi);
    if (ha.layout().numel() > 1) {
      ha.set(0, r.lo);
      ha.set(1, r.hi);
    }
    auto want = reference::ternary(d, ha, hb, hc);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_ternary(d, c, ha, hb, hc, want.value(), true);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TernaryIntGpu, ::testing::ValuesIn(kIntTypes),
                         [](const auto& info) { return pname(info.param); });

// ------------------------------------------------------------------------------- ternary backward
class TernaryBackwardGpu : public ::testing::TestWithParam<std::tuple<TernaryKind, DType>> {};

TEST_P(TernaryBackwardGpu, EveryLayoutEverySubsetEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  const bool subsets[][3] = {{true, true, true}, {true, false, false}, {false, true, true}, {false, false, true}};
  for (const auto& c : ternary_cases(t)) {
    if (c.name == "large" && kind != TernaryKind::kClamp) continue;  // the oracle's time: one kind is enough
    for (const auto& sub : subsets) {
      SCOPED_TRACE(c.name + " grads=" + std::to_string(sub[0]) + std::to_string(sub[1]) + std::to_string(sub[2]));
      const TensorLayout out = c.out;  // grad_out laid out like the forward output
      TensorLayout gl[3] = {dense_like(c.a), dense_like(c.b), dense_like(c.c)};
      TernaryBackwardDescriptor d{kind, -0.75, out, c.a, c.b, c.c, gl[0], gl[1], gl[2], sub[0], sub[1], sub[2]};
      HostTensor hg(out), ha(c.a), hb(c.b), hc(c.c);
      HostTensor hgr[3] = {HostTensor(gl[0]), HostTensor(gl[1]), HostTensor(gl[2])};
      fill_random(hg, -2, 2);
      fill_inputs(kind, ha, hb, hc);
      auto want = reference::ternary_backward(d, hg, ha, hb, hc);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dg(hg, test_stream()), da(ha, test_stream()), db(hb, test_stream()), dc(hc, test_stream());
      DeviceTensor dgr[3] = {DeviceTensor(hgr[0], test_stream()), DeviceTensor(hgr[1], test_stream()),
                             DeviceTensor(hgr[2], test_stream())};
      // in place: grad_a overwrites grad_out when both have the identical layout
      const bool in_place = c.in_place && sub[0] && gl[0] == out;
      void* ga = in_place ? dg.data() : dgr[0].data();
      for_each_sku<TernaryBackwardPlan>(
          d,
          [&] {
            dg.upload(hg, test_stream());
            for (auto& x : dgr) x.poison(0xFF, test_stream());
          },
          [&](const TernaryBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws,
                         TernaryBackwardArgs{.grad_out = dg.data(), .a = da.data(), .b = db.data(), .c = dc.data(),
                                             .grad_a = ga, .grad_b = dgr[1].data(), .grad_c = dgr[2].data()});
          },
          [&](const std::string& sku) {
            for (int k = 0; k < 3; ++k) {
              if (!sub[k]) continue;
              DeviceTensor& src = k == 0 && in_place ? dg : dgr[k];
              ASSERT_TRUE(src.download(hgr[k], test_stream()));
              EXPECT_TRUE(check_close(hgr[k], want->grad[static_cast<std::size_t>(k)],
                                      sku + " grad " + std::to_string(k) + " " + d.to_string()));
            }
          });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, TernaryBackwardGpu,
                         ::testing::Combine(::testing::ValuesIn(kKinds), ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) {
                           return std::string(ternary_kind_name(std::get<0>(info.param))) + "_" + pname(std::get<1>(info.param));
                         });

// The backward kinds that do not read an operand accept a null pointer for it.
TEST(TernaryBackwardGpuNull, UnreadOperandsMayBeNull) {
  BARACUDA_REQUIRE_GPU();
  auto l = contig(DType::kF32, {64, 33});
  TernaryBackwardDescriptor d{TernaryKind::kAddcmul, 2, l, l, l, l, l, l, l};
  HostTensor hg(l), hb(l), hc(l), hx(l), h0(l), h1(l), h2(l);
  fill_random(hg, -1, 1);
  fill_random(hb, -1, 1);
  fill_random(hc, -1, 1);
  auto want = reference::ternary_backward(d, hg, hx, hb, hc).value();
  DeviceTensor dg(hg, test_stream()), db(hb, test_stream()), dc(hc, test_stream()), d0(h0, test_stream()),
      d1(h1, test_stream()), d2(h2, test_stream());
  auto plan = TernaryBackwardPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value());
  ASSERT_TRUE(plan->run(test_stream(), {}, {.grad_out = dg.data(), .a = nullptr, .b = db.data(), .c = dc.data(),
                                            .grad_a = d0.data(), .grad_b = d1.data(), .grad_c = d2.data()}));
  ASSERT_TRUE(d0.download(h0, test_stream()));
  ASSERT_TRUE(d1.download(h1, test_stream()));
  ASSERT_TRUE(d2.download(h2, test_stream()));
  EXPECT_TRUE(check_close(h0, want.grad[0], "grad_a"));
  EXPECT_TRUE(check_close(h1, want.grad[1], "grad_b"));
  EXPECT_TRUE(check_close(h2, want.grad[2], "grad_c"));
}

// ------------------------------------------------------------------------------- where
void fill_cond(HostTensor& cond) {
  for (std::int64_t i = 0; i < cond.layout().numel(); ++i) cond.set(i, static_cast<double>(rng()() & 1));
}

std::vector<Case3> where_cases(DType t) {  // a = cond, b = a, c = b of the where
  const DType b = DType::kBool;
  std::vector<Case3> cs;
  for (auto s : std::vector<std::vector<std::int64_t>>{{0}, {1}, {7}, {1009}, {4097}, {33, 129}, {257, 1031}})
    cs.push_back({"contig" + std::to_string(s.size()) + "_" + std::to_string(s.back()), TensorLayout::contiguous(b, s),
                  TensorLayout::contiguous(t, s), TensorLayout::contiguous(t, s), TensorLayout::contiguous(t, s)});
  auto out = contig(t, {257, 1031});
  cs.push_back({"cond_row", contig(b, {1031}), out, out, out});
  cs.push_back({"cond_col_b_scalar", contig(b, {257, 1}), out, contig(t, {}), out});
  cs.push_back({"outer", contig(b, {257, 1031}), contig(t, {257, 1}), contig(t, {1, 1031}), out});
  const auto m = contig(t, {33, 129});
  cs.push_back({"transposed_cond", strided(b, {33, 129}, {1, 33}), m, m, m});
  cs.push_back({"negative_a", contig(b, {33, 129}), strided(t, {33, 129}, {129, -1}), m, m});
  cs.push_back({"sliced_b", contig(b, {33, 129}), m, strided(t, {33, 129}, {258, 2}), m});
  cs.push_back({"transposed_out", contig(b, {33, 129}), m, m, strided(t, {33, 129}, {1, 33})});
  cs.push_back({"align2", contig(b, {33, 129}), m, m, TensorLayout::contiguous(t, {33, 129}, 2)});
  cs.push_back({"zero_rows", contig(b, {0, 5}), contig(t, {5}), contig(t, {0, 5}), contig(t, {0, 5})});
  cs.push_back({"in_place", contig(b, {257, 1031}), out, contig(t, {1031}), out, true});
  if (t == DType::kBF16 || t == DType::kU8)
    cs.push_back({"large", contig(b, {8192, 4099}), contig(t, {8192, 4099}), contig(t, {8192, 4099}), contig(t, {8192, 4099})});
  return cs;
}

void fill_values(HostTensor& h) {
  const DType t = h.layout().dtype;
  if (t == DType::kBool) fill_cond(h);
  else if (dtype_is_integer(t)) fill_random(h, t == DType::kU8 ? 0 : -100, 100);
  else fill_random(h, -4, 4, Fill::kWithEdges);
}

class WhereGpu : public ::testing::TestWithParam<DType> {};

TEST_P(WhereGpu, EveryLayoutEverySkuBitExact) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : where_cases(t)) {
    SCOPED_TRACE(c.name);
    WhereDescriptor d{c.a, c.b, c.c, c.out};
    HostTensor hcond(c.a), ha(c.b), hb(c.c), ho(c.out);
    fill_cond(hcond);
    fill_values(ha);
    fill_values(hb);
    auto want = reference::where(d, hcond, ha, hb);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dcond(hcond, test_stream()), da(ha, test_stream()), db(hb, test_stream()), dout(ho, test_stream());
    void* out_ptr = c.in_place ? da.data() : dout.data();
    for_each_sku<WherePlan>(
        d,
        [&] {
          da.upload(ha, test_stream());
          if (!c.in_place) dout.poison(0xFF, test_stream());
        },
        [&](const WherePlan& p, Workspace ws) {
          return p.run(test_stream(), ws, WhereArgs{.cond = dcond.data(), .a = da.data(), .b = db.data(), .out = out_ptr});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? da : dout).download(ho, test_stream()));
          EXPECT_TRUE(check_exact(ho, want.value(), sku + " " + d.to_string()));
        });
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, WhereGpu, ::testing::ValuesIn(kAllTypes), [](const auto& info) { return pname(info.param); });

class WhereBackwardGpu : public ::testing::TestWithParam<DType> {};

TEST_P(WhereBackwardGpu, EveryLayoutEverySubsetEverySku) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : where_cases(t)) {
    for (int which : {2, 0, 1}) {
      SCOPED_TRACE(c.name + " which=" + std::to_string(which));
      const TensorLayout out = c.in_place ? c.out : dense_like(c.out);
      const TensorLayout ga = dense_like(c.b), gb = dense_like(c.c);
      WhereBackwardDescriptor d{c.a, out, ga, gb, which != 1, which != 0};
      HostTensor hcond(c.a), hg(out), hga(ga), hgb(gb);
      fill_cond(hcond);
      fill_random(hg, -2, 2, Fill::kWithEdges);
      auto want = reference::where_backward(d, hcond, hg);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dcond(hcond, test_stream()), dg(hg, test_stream()), dga(hga, test_stream()), dgb(hgb, test_stream());
      const bool in_place = c.in_place && which != 1 && ga == out;
      void* ga_ptr = in_place ? dg.data() : dga.data();
      for_each_sku<WhereBackwardPlan>(
          d,
          [&] {
            dg.upload(hg, test_stream());
            dga.poison(0xFF, test_stream());
            dgb.poison(0xFF, test_stream());
          },
          [&](const WhereBackwardPlan& p, Workspace ws) {
            return p.run(test_stream(), ws,
                         WhereBackwardArgs{.cond = dcond.data(), .grad_out = dg.data(), .grad_a = ga_ptr, .grad_b = dgb.data()});
          },
          [&](const std::string& sku) {
            if (which != 1) {
              ASSERT_TRUE((in_place ? dg : dga).download(hga, test_stream()));
              EXPECT_TRUE(check_close(hga, want->grad_a, sku + " grad_a " + d.to_string()));
            }
            if (which != 0) {
              ASSERT_TRUE(dgb.download(hgb, test_stream()));
              EXPECT_TRUE(check_close(hgb, want->grad_b, sku + " grad_b " + d.to_string()));
            }
          });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, WhereBackwardGpu, ::testing::ValuesIn(kFloatTypes),
                         [](const auto& info) { return pname(info.param); });

// ------------------------------------------------------------------------------- affine
struct Case1 {
  std::string name;
  TensorLayout x, y;
  bool in_place = false;
};
std::vector<Case1> map1_cases(DType t) {
  std::vector<Case1> cs;
  for (auto s : std::vector<std::vector<std::int64_t>>{{0}, {1}, {7}, {1009}, {4097}, {33, 129}, {3, 5, 7, 11}, {257, 1031}})
    cs.push_back({"contig" + std::to_string(s.size()) + "_" + std::to_string(s.back()), TensorLayout::contiguous(t, s),
                  TensorLayout::contiguous(t, s)});
  const auto m = contig(t, {33, 129});
  cs.push_back({"transposed_x", strided(t, {33, 129}, {1, 33}), m});
  cs.push_back({"sliced_x", strided(t, {33, 129}, {258, 2}), m});
  cs.push_back({"broadcast_row", contig(t, {129}), m});
  cs.push_back({"negative_stride", strided(t, {33, 129}, {129, -1}), m});
  cs.push_back({"padded_rows", strided(t, {33, 128}, {144, 1}), contig(t, {33, 128})});
  cs.push_back({"transposed_y", m, strided(t, {33, 129}, {1, 33})});
  cs.push_back({"sliced_y", m, strided(t, {33, 129}, {258, 2})});
  cs.push_back({"align2", m, TensorLayout::contiguous(t, {33, 129}, 2)});
  cs.push_back({"in_place", contig(t, {257, 1031}), contig(t, {257, 1031}), true});
  if (t == DType::kBF16) cs.push_back({"large", contig(t, {8192, 4099}), contig(t, {8192, 4099})});
  return cs;
}

class AffineGpu : public ::testing::TestWithParam<DType> {};

TEST_P(AffineGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const bool integer = dtype_is_integer(t);
  for (auto [alpha, beta] : integer ? std::vector<std::pair<double, double>>{{3, -7}, {-1, 0}, {1000003, 12345}}
                                    : std::vector<std::pair<double, double>>{{1.5, -0.25}, {-3, 1e-3}, {0.1, 0}}) {
    for (const auto& c : map1_cases(t)) {
      SCOPED_TRACE(c.name + " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta));
      AffineDescriptor d{alpha, beta, c.x, c.y};
      HostTensor hx(c.x), hy(c.y);
      if (integer) {
        const IntRange r = int_range(t);
        fill_random(hx, r.lo, r.hi);
      } else {
        fill_random(hx, -4, 4, Fill::kWithEdges);
      }
      auto want = reference::affine(d, hx);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
      void* y_ptr = c.in_place ? dx.data() : dy.data();
      for_each_sku<AffinePlan>(
          d,
          [&] {
            dx.upload(hx, test_stream());
            if (!c.in_place) dy.poison(0xFF, test_stream());
          },
          [&](const AffinePlan& p, Workspace ws) { return p.run(test_stream(), ws, AffineArgs{.x = dx.data(), .y = y_ptr}); },
          [&](const std::string& sku) {
            ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
            if (integer) EXPECT_TRUE(check_exact(hy, want.value(), sku + " " + d.to_string()));
            else EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
          });
    }
  }
}

const DType kAffineTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64,
                              DType::kI32, DType::kI16, DType::kI8,  DType::kU8};
INSTANTIATE_TEST_SUITE_P(Dtypes, AffineGpu, ::testing::ValuesIn(kAffineTypes), [](const auto& info) { return pname(info.param); });

// ------------------------------------------------------------------------------- fill
class FillGpu : public ::testing::TestWithParam<DType> {};

TEST_P(FillGpu, EveryLayoutEverySkuBitExact) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  std::vector<double> values;
  if (t == DType::kBool) values = {1, 0};
  else if (t == DType::kU8) values = {200, 0};
  else if (dtype_is_integer(t)) values = {-7, 100};
  else values = {1.0 / 3, -2.5, -0.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  for (double v : values)
    for (const auto& c : map1_cases(t)) {
      if (c.in_place) continue;
      SCOPED_TRACE(c.name + " value=" + std::to_string(v));
      FillDescriptor d{c.y, v};
      HostTensor hy(c.y);
      auto want = reference::fill(d);
      ASSERT_TRUE(want.has_value());
      DeviceTensor dy(hy, test_stream());
      for_each_sku<FillPlan>(
          d, [&] { dy.poison(0xA7, test_stream()); },
          [&](const FillPlan& p, Workspace ws) { return p.run(test_stream(), ws, FillArgs{.y = dy.data()}); },
          [&](const std::string& sku) {
            ASSERT_TRUE(dy.download(hy, test_stream()));
            EXPECT_TRUE(check_exact(hy, want.value(), sku + " " + d.to_string()));
            // the gaps of a sliced layout keep their poison
            if (c.name == "sliced_y") {
              const auto* bytes = reinterpret_cast<const unsigned char*>(hy.storage());
              const std::size_t esize = dtype_size(t);
              EXPECT_EQ(bytes[esize], 0xA7) << "a gap between sliced elements was written";
            }
          });
    }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FillGpu, ::testing::ValuesIn(kAllTypes), [](const auto& info) { return pname(info.param); });

// ------------------------------------------------------------------------------- refusals
// Untouched and expect_refused: gpu_harness.hpp.
TEST(TernaryRefusals, ForwardPlansCheckArgsBeforeLaunch) {
  BARACUDA_REQUIRE_GPU();
  auto l = contig(DType::kF32, {64, 64});
  auto bl = contig(DType::kBool, {64, 64});
  HostTensor hx(l), hc(bl);
  fill_random(hx, -1, 1);
  DeviceTensor dx(hx, test_stream()), dcond(hc, test_stream()), dx2(hx, test_stream());
  Untouched out(l);
  auto* shifted = static_cast<float*>(dx.data()) + 64;  // overlaps dx one row on
  const void* misaligned = static_cast<char*>(dx.data()) + 4;
  // ternary
  auto tp = TernaryPlan::select(test_stream(), TernaryDescriptor{TernaryKind::kClamp, 1, l, l, l, l});
  ASSERT_TRUE(tp.has_value());
  expect_refused(tp->run(test_stream(), {}, {.a = dx.data(), .b = nullptr, .c = dx.data(), .out = out.data()}),
                 Code::kInvalidArgument, "args.b is null");
  expect_refused(tp->run(test_stream(), {}, {.a = dx.data(), .b = dx.data(), .c = misaligned, .out = out.data()}),
                 Code::kMisaligned, "is not aligned to c.alignment = 16 bytes");
  expect_refused(tp->run(test_stream(), {}, {.a = dx.data(), .b = dx.data(), .c = dx.data(), .out = shifted}),
                 Code::kInvalidArgument, "unsafe aliasing");
  // where
  auto wp = WherePlan::select(test_stream(), WhereDescriptor{bl, l, l, l});
  ASSERT_TRUE(wp.has_value());
  expect_refused(wp->run(test_stream(), {}, {.cond = nullptr, .a = dx.data(), .b = dx.data(), .out = out.data()}),
                 Code::kInvalidArgument, "args.cond is null");
  expect_refused(wp->run(test_stream(), {}, {.cond = dcond.data(), .a = misaligned, .b = dx.data(), .out = out.data()}),
                 Code::kMisaligned, "a.alignment");
  expect_refused(wp->run(test_stream(), {}, {.cond = dcond.data(), .a = dx.data(), .b = dx2.data(), .out = shifted}),
                 Code::kInvalidArgument, "unsafe aliasing");
  // affine
  auto ap = AffinePlan::select(test_stream(), AffineDescriptor{2, 1, l, l});
  ASSERT_TRUE(ap.has_value());
  expect_refused(ap->run(test_stream(), {}, {.x = dx.data(), .y = nullptr}), Code::kInvalidArgument, "args.y is null");
  expect_refused(ap->run(test_stream(), {}, {.x = misaligned, .y = out.data()}), Code::kMisaligned, "x.alignment");
  expect_refused(ap->run(test_stream(), {}, {.x = dx.data(), .y = shifted}), Code::kInvalidArgument, "unsafe aliasing");
  // fill
  auto fp = FillPlan::select(test_stream(), FillDescriptor{l, 3});
  ASSERT_TRUE(fp.has_value());
  expect_refused(fp->run(test_stream(), {}, {.y = nullptr}), Code::kInvalidArgument, "args.y is null");
  expect_refused(fp->run(test_stream(), {}, {.y = static_cast<char*>(out.data()) + 4}), Code::kMisaligned, "y.alignment");
  EXPECT_TRUE(out.check());
}

TEST(TernaryRefusals, BackwardWorkspaceAndAliasing) {
  BARACUDA_REQUIRE_GPU();
  auto out = contig(DType::kBF16, {256, 128});
  auto row = contig(DType::kBF16, {128});
  TernaryBackwardDescriptor d{TernaryKind::kClamp, 1, out, out, row, row, out, row, row};
  auto plan = TernaryBackwardPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value());
  ASSERT_GT(plan->workspace_size(), 0u);
  HostTensor hg(out), hx(out), hr(row);
  fill_random(hg, -1, 1);
  fill_random(hx, -1, 1);
  fill_random(hr, -1, 1);
  DeviceTensor dg(hg, test_stream()), dx(hx, test_stream()), dlo(hr, test_stream()), dhi(hr, test_stream());
  Untouched ga(out), gb(row), gc(row);
  TernaryBackwardArgs args{.grad_out = dg.data(), .a = dx.data(), .b = dlo.data(), .c = dhi.data(),
                           .grad_a = ga.data(), .grad_b = gb.data(), .grad_c = gc.data()};
  Workspace small = test_workspace(plan->workspace_size());
  small.bytes = plan->workspace_size() - 1;
  expect_refused(plan->run(test_stream(), small, args), Code::kWorkspaceTooSmall, "workspace.bytes = ");
  Workspace ws = test_workspace(plan->workspace_size());
  expect_refused(plan->run(test_stream(), {nullptr, ws.bytes}, args), Code::kInvalidArgument, "workspace.data is null");
  auto alias = args;
  alias.grad_b = static_cast<char*>(dx.data()) + 64;  // a reduced gradient over an input
  expect_refused(plan->run(test_stream(), ws, alias), Code::kInvalidArgument, "unsafe aliasing");
  auto null_c = args;
  null_c.c = nullptr;  // clamp reads max
  expect_refused(plan->run(test_stream(), ws, null_c), Code::kInvalidArgument, "args.c is null");
  auto overlap = args;
  overlap.grad_c = ga.data();
  expect_refused(plan->run(test_stream(), ws, overlap), Code::kInvalidArgument, "overlap");
  EXPECT_TRUE(ga.check());
  EXPECT_TRUE(gb.check());
  EXPECT_TRUE(gc.check());
  // two gradients written in place over two inputs cannot both run last
  TernaryBackwardDescriptor same{TernaryKind::kFma, 1, out, out, out, out, out, out, out, true, true, false};
  auto sp = TernaryBackwardPlan::select(test_stream(), same);
  ASSERT_TRUE(sp.has_value());
  DeviceTensor db(hx, test_stream());
  expect_refused(sp->run(test_stream(), {}, {.grad_out = dg.data(), .a = dx.data(), .b = db.data(), .c = nullptr,
                                             .grad_a = dx.data(), .grad_b = db.data()}),
                 Code::kInvalidArgument, "both overwrite inputs");
  // where backward: workspace and null cond
  auto bl = contig(DType::kBool, {256, 128});
  WhereBackwardDescriptor wd{bl, out, row, out};
  auto wp = WhereBackwardPlan::select(test_stream(), wd);
  ASSERT_TRUE(wp.has_value());
  ASSERT_GT(wp->workspace_size(), 0u);
  HostTensor hc(bl);
  DeviceTensor dcond(hc, test_stream());
  WhereBackwardArgs wargs{.cond = dcond.data(), .grad_out = dg.data(), .grad_a = gb.data(), .grad_b = ga.data()};
  Workspace wsmall = test_workspace(wp->workspace_size());
  wsmall.bytes = wp->workspace_size() - 1;
  expect_refused(wp->run(test_stream(), wsmall, wargs), Code::kWorkspaceTooSmall, "workspace.bytes = ");
  auto wnull = wargs;
  wnull.cond = nullptr;
  expect_refused(wp->run(test_stream(), test_workspace(wp->workspace_size()), wnull), Code::kInvalidArgument,
                 "args.cond is null");
  EXPECT_TRUE(ga.check());
  EXPECT_TRUE(gb.check());
}

// The six plans of this file, table-driven: a null, a misaligned and an unsafely aliased
// pointer each (FillPlan has no input to alias), and for the two backward plans (whose
// broadcast operands are reduced through the workspace) a workspace too small, null and
// misaligned; outputs poisoned and untouched after.
TEST(TernaryRefusals, EveryPlanRunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto l = contig(DType::kF32, {64, 64});
  const auto row = contig(DType::kF32, {64});
  const auto bl = contig(DType::kBool, {64, 64});
  HostTensor hx(l), hr(row), hc(bl);
  fill_random(hx, -1, 1);
  fill_random(hr, -1, 1);
  DeviceTensor dg(hx, test_stream()), da(hx, test_stream()), db(hx, test_stream()), dc(hx, test_stream());
  DeviceTensor dlo(hr, test_stream()), dhi(hr, test_stream()), dcond(hc, test_stream());
  Untouched out(l), ga(l), gb(row), gc(row), wga(row), wgb(l);
  const void *g = dg.data(), *a = da.data(), *b = db.data(), *c = dc.data(), *cond = dcond.data();
  const void* b_plus4 = static_cast<const char*>(b) + 4;  // breaks the promised 16 bytes
  const void* hi_plus4 = static_cast<const char*>(dhi.data()) + 4;
  const void* cond_plus1 = static_cast<const char*>(cond) + 1;
  void* out_plus4 = static_cast<char*>(out.data()) + 4;
  void* a_row1 = static_cast<float*>(da.data()) + 64;  // overlaps a one row on
  void* c_row1 = static_cast<float*>(dc.data()) + 64;
  void* g_row1 = static_cast<float*>(dg.data()) + 64;
  auto ter = TernaryPlan::select(test_stream(), TernaryDescriptor{TernaryKind::kClamp, 1, l, l, l, l});
  auto tbw = TernaryBackwardPlan::select(test_stream(),
                                         TernaryBackwardDescriptor{TernaryKind::kClamp, 1, l, l, row, row, l, row, row});
  auto whr = WherePlan::select(test_stream(), WhereDescriptor{bl, l, l, l});
  auto wbw = WhereBackwardPlan::select(test_stream(), WhereBackwardDescriptor{bl, l, row, l});
  auto aff = AffinePlan::select(test_stream(), AffineDescriptor{2, 1, l, l});
  auto fil = FillPlan::select(test_stream(), FillDescriptor{l, 3});
  ASSERT_TRUE(ter && tbw && whr && wbw && aff && fil);
  const std::size_t tneed = tbw->workspace_size(), wneed = wbw->workspace_size();
  ASSERT_GT(tneed, 0u);
  ASSERT_GT(wneed, 0u);
  for (std::size_t ws : {ter->workspace_size(), whr->workspace_size(), aff->workspace_size(), fil->workspace_size()})
    EXPECT_EQ(ws, 0u);
  const Workspace ws = test_workspace(std::max(tneed, wneed) + kWorkspaceAlignment);
  const TernaryBackwardArgs targs{.grad_out = g, .a = a, .b = dlo.data(), .c = dhi.data(),
                                  .grad_a = ga.data(), .grad_b = gb.data(), .grad_c = gc.data()};
  auto tbw_with = [&](TernaryBackwardArgs args, Workspace wsp) { return tbw->run(test_stream(), wsp, args); };
  const WhereBackwardArgs wargs{.cond = cond, .grad_out = g, .grad_a = wga.data(), .grad_b = wgb.data()};
  auto wbw_with = [&](WhereBackwardArgs args, Workspace wsp) { return wbw->run(test_stream(), wsp, args); };
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w) { return tbw_with(targs, w); }, ws, tneed);
  for (auto& r : workspace_refusals("where backward", [&](Workspace w) { return wbw_with(wargs, w); }, ws, wneed))
    rows.push_back(std::move(r));
  rows.insert(rows.end(),
      {
          {"ternary null a", [&] { return ter->run(s, {}, {.a = nullptr, .b = b, .c = c, .out = out.data()}); }, kBad,
           "args.a is null"},
          {"ternary misaligned b", [&] { return ter->run(s, {}, {.a = a, .b = b_plus4, .c = c, .out = out.data()}); }, kMis,
           "not aligned to b.alignment = 16"},
          {"ternary out over c", [&] { return ter->run(s, {}, {.a = a, .b = b, .c = c, .out = c_row1}); }, kBad,
           "args.out overlaps args.c"},
          {"backward null grad_out", [&] { auto t = targs; t.grad_out = nullptr; return tbw_with(t, {ws.data, tneed}); }, kBad,
           "args.grad_out is null"},
          {"backward misaligned c", [&] { auto t = targs; t.c = hi_plus4; return tbw_with(t, {ws.data, tneed}); }, kMis,
           "not aligned to c.alignment = 16"},
          {"backward grad_a over a", [&] { auto t = targs; t.grad_a = a_row1; return tbw_with(t, {ws.data, tneed}); }, kBad,
           "args.grad_a overlaps args.a"},
          {"where null b", [&] { return whr->run(s, {}, {.cond = cond, .a = a, .b = nullptr, .out = out.data()}); }, kBad,
           "args.b is null"},
          {"where misaligned out", [&] { return whr->run(s, {}, {.cond = cond, .a = a, .b = b, .out = out_plus4}); }, kMis,
           "not aligned to out.alignment = 16"},
          {"where out over a", [&] { return whr->run(s, {}, {.cond = cond, .a = a, .b = b, .out = a_row1}); }, kBad,
           "args.out overlaps args.a"},
          {"where backward null grad_out", [&] { auto w = wargs; w.grad_out = nullptr; return wbw_with(w, {ws.data, wneed}); },
           kBad, "args.grad_out is null"},
          {"where backward misaligned cond", [&] { auto w = wargs; w.cond = cond_plus1; return wbw_with(w, {ws.data, wneed}); },
           kMis, "not aligned to cond.alignment = 16"},
          {"where backward grad_b over grad_out", [&] { auto w = wargs; w.grad_b = g_row1; return wbw_with(w, {ws.data, wneed}); },
           kBad, "args.grad_b overlaps args.grad_out"},
          {"affine null x", [&] { return aff->run(s, {}, {.x = nullptr, .y = out.data()}); }, kBad, "args.x is null"},
          {"affine misaligned y", [&] { return aff->run(s, {}, {.x = a, .y = out_plus4}); }, kMis, "not aligned to y.alignment = 16"},
          {"affine y over x", [&] { return aff->run(s, {}, {.x = a, .y = a_row1}); }, kBad, "args.y overlaps args.x"},
          {"fill null y", [&] { return fil->run(s, {}, {.y = nullptr}); }, kBad, "args.y is null"},
          {"fill misaligned y", [&] { return fil->run(s, {}, {.y = out_plus4}); }, kMis, "not aligned to y.alignment = 16"},
      });
  expect_run_refusals(rows, {&out, &ga, &gb, &gc, &wga, &wgb});
}

}  // namespace
}  // namespace baracuda::test
