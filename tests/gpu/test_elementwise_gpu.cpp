// GPU tests of the elementwise family against baracuda::reference: every kind x dtype x
// layout case (contiguous, strided, broadcast, negative strides, in-place, declared
// misalignment, edge shapes 0 / 1 / primes / > L2) under every SKU that accepts it, with
// poisoned outputs and guard bytes; a > 2^31-element case; CUDA graph capture and replay;
// and the run-time refusals that must leave outputs untouched.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <vector>

#include "baracuda/reference/domains.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct Case {
  std::string name;
  TensorLayout in0, in1, out;
  bool in_place = false;  // out aliases in0 (same layout)
};

TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }
TensorLayout strided(DType t, std::initializer_list<std::int64_t> s, std::initializer_list<std::int64_t> st, int align = 16) {
  return TensorLayout::strided(t, s, st, align);
}

std::vector<std::vector<std::int64_t>> edge_shapes(DType t) {
  std::vector<std::vector<std::int64_t>> s = {{0}, {1}, {7}, {1009}, {4097}, {33, 129}, {3, 5, 7, 11}, {257, 1031}};
  if (t == DType::kBF16 || t == DType::kF32) s.push_back({8192, 4099});  // > L2
  return s;
}

// Cases for one-input maps (unary, cast): in0 -> out.
std::vector<Case> map1_cases(DType in_t, DType out_t) {
  std::vector<Case> cs;
  for (const auto& s : edge_shapes(in_t)) {
    std::string n = "contig[";
    for (auto d : s) n += std::to_string(d) + ",";
    cs.push_back({n + "]", TensorLayout::contiguous(in_t, s), {}, TensorLayout::contiguous(out_t, s)});
  }
  const auto out = contig(out_t, {33, 129});
  cs.push_back({"transposed_in", strided(in_t, {33, 129}, {1, 33}), {}, out});
  cs.push_back({"sliced_in", strided(in_t, {33, 129}, {258, 2}), {}, out});
  cs.push_back({"broadcast_row", contig(in_t, {129}), {}, out});
  cs.push_back({"broadcast_col", contig(in_t, {33, 1}), {}, out});
  cs.push_back({"negative_stride", strided(in_t, {33, 129}, {129, -1}), {}, out});
  // rows padded to 144 elements (a multiple of every vector width but fp8's 16): vec16_rows
  cs.push_back({"padded_rows", strided(in_t, {33, 128}, {144, 1}), {}, contig(out_t, {33, 128})});
  cs.push_back({"transposed_out", contig(in_t, {33, 129}), {}, strided(out_t, {33, 129}, {1, 33})});
  cs.push_back({"align2", contig(in_t, {33, 129}), {}, TensorLayout::contiguous(out_t, {33, 129}, 2)});
  if (in_t == out_t) cs.push_back({"in_place", contig(in_t, {257, 1031}), {}, contig(out_t, {257, 1031}), true});
  return cs;
}

const DType kFloatTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};

std::string pname(DType t) { return std::string(dtype_name(t)); }

// ------------------------------------------------------------------------------- unary
// Every floating kind runs the short layout list on every dtype and SKU; the kinds that
// carried the foundation (relu, gelu, silu, exp) also run the full list (> L2, primes, ...).
std::vector<Case> map1_quick_cases(DType in_t, DType out_t) {
  std::vector<Case> cs;
  for (auto s : std::vector<std::vector<std::int64_t>>{{0}, {7}, {1009}, {33, 129}})
    cs.push_back({"contig" + std::to_string(s.size()) + "_" + std::to_string(s.back()), TensorLayout::contiguous(in_t, s), {},
                  TensorLayout::contiguous(out_t, s)});
  const auto out = contig(out_t, {33, 129});
  cs.push_back({"transposed_in", strided(in_t, {33, 129}, {1, 33}), {}, out});
  cs.push_back({"broadcast_row", contig(in_t, {129}), {}, out});
  cs.push_back({"padded_rows", strided(in_t, {33, 128}, {144, 1}), {}, contig(out_t, {33, 128})});
  cs.push_back({"align2", contig(in_t, {33, 129}), {}, TensorLayout::contiguous(out_t, {33, 129}, 2)});
  if (in_t == out_t) cs.push_back({"in_place", contig(in_t, {257, 1031}), {}, contig(out_t, {257, 1031}), true});
  return cs;
}

bool full_layouts(UnaryKind k) {
  return k == UnaryKind::kRelu || k == UnaryKind::kGeluErf || k == UnaryKind::kGeluTanh || k == UnaryKind::kSilu ||
         k == UnaryKind::kExp;
}

using reference::unary_input_range;

std::vector<UnaryKind> unary_kinds_where(bool (*pred)(const UnaryKindInfo&)) {
  std::vector<UnaryKind> ks;
  for (int k = 0; k < kNumUnaryKinds; ++k)
    if (pred(unary_kind_info(static_cast<UnaryKind>(k)))) ks.push_back(static_cast<UnaryKind>(k));
  return ks;
}
const std::vector<UnaryKind> kFloatUnary =
    unary_kinds_where([](const UnaryKindInfo& i) { return i.floating && i.plain && !i.to_bool; });
const std::vector<UnaryKind> kDiffUnary =
    unary_kinds_where([](const UnaryKindInfo& i) { return i.differentiable && i.plain; });
const std::vector<UnaryKind> kPredicateUnary = unary_kinds_where([](const UnaryKindInfo& i) { return i.to_bool; });
const std::vector<UnaryKind> kIntUnary = unary_kinds_where([](const UnaryKindInfo& i) { return i.integer; });

// One forward case of a UnaryPlan / UnaryParamPlan under every SKU.
template <class PlanT>
void check_unary_fwd(const typename PlanT::Descriptor& d, const Case& c, const HostTensor& hx, const reference::Result& want,
                     bool exact) {
  DeviceTensor dx(hx, test_stream());
  HostTensor hy(c.out);
  DeviceTensor dy(hy, test_stream());
  void* y_ptr = c.in_place ? dx.data() : dy.data();
  for_each_sku<PlanT>(
      d,
      [&] {
        dx.upload(hx, test_stream());
        if (!c.in_place) dy.poison(0xFF, test_stream());
      },
      [&](const PlanT& p, Workspace ws) { return p.run(test_stream(), ws, UnaryArgs{.x = dx.data(), .y = y_ptr}); },
      [&](const std::string& sku) {
        ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
        if (exact) EXPECT_TRUE(check_exact(hy, want, sku + " " + d.to_string()));
        else EXPECT_TRUE(check_close(hy, want, sku + " " + d.to_string()));
      });
}

template <class PlanT>
void check_unary_bwd(const typename PlanT::Descriptor& d, const Case& c, const HostTensor& hg, const HostTensor& hx,
                     const reference::Result& want) {
  HostTensor hgi(c.out);
  DeviceTensor dg(hg, test_stream()), dx(hx, test_stream()), dgi(hgi, test_stream());
  void* gi_ptr = c.in_place ? dg.data() : dgi.data();  // in place: grad_in overwrites grad_out
  for_each_sku<PlanT>(
      d,
      [&] {
        dg.upload(hg, test_stream());
        dgi.poison(0xFF, test_stream());
      },
      [&](const PlanT& p, Workspace ws) {
        return p.run(test_stream(), ws, UnaryBackwardArgs{.grad_out = dg.data(), .x = dx.data(), .grad_in = gi_ptr});
      },
      [&](const std::string& sku) {
        ASSERT_TRUE((c.in_place ? dg : dgi).download(hgi, test_stream()));
        EXPECT_TRUE(check_close(hgi, want, sku + " " + d.to_string()));
      });
}

std::vector<Case> unary_cases(UnaryKind k, DType in_t, DType out_t) {
  return full_layouts(k) ? map1_cases(in_t, out_t) : map1_quick_cases(in_t, out_t);
}

std::vector<Case> same_shape(std::vector<Case> cs) {
  std::erase_if(cs, [](const Case& c) { return !(c.in0.rank == c.out.rank && c.in0.numel() == c.out.numel()); });
  return cs;
}

class UnaryGpu : public ::testing::TestWithParam<std::tuple<UnaryKind, DType>> {};

TEST_P(UnaryGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  auto [lo, hi] = unary_input_range(kind);
  for (const auto& c : unary_cases(kind, t, t)) {
    SCOPED_TRACE(c.name);
    UnaryDescriptor d{kind, c.in0, c.out};
    HostTensor hx(c.in0);
    fill_random(hx, lo, hi, Fill::kWithEdges);
    auto want = reference::unary(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_fwd<UnaryPlan>(d, c, hx, want.value(), false);
  }
}

std::string kind_dtype_name(UnaryKind k, DType t) { return std::string(unary_kind_name(k)) + "_" + pname(t); }

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryGpu, ::testing::Combine(::testing::ValuesIn(kFloatUnary), ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// Every f16 / bf16 bit pattern (NaNs, infinities, subnormals, both zeros included) through
// every floating kind: the 16-bit contiguous kernels may use fast approximations
// (kernels/unary_fast16.cuh), and this is where they are proven against the oracle.
class UnaryAllPatternsGpu : public ::testing::TestWithParam<std::tuple<UnaryKind, DType>> {};

TEST_P(UnaryAllPatternsGpu, Every16BitInput) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  const Case c{"all_patterns", contig(t, {65536}), {}, contig(t, {65536})};
  UnaryDescriptor d{kind, c.in0, c.out};
  HostTensor hx(c.in0);
  auto* bits = reinterpret_cast<std::uint16_t*>(hx.storage());
  for (std::uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<std::uint16_t>(i);
  auto want = reference::unary(d, hx);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  check_unary_fwd<UnaryPlan>(d, c, hx, want.value(), false);
}

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryAllPatternsGpu,
                         ::testing::Combine(::testing::ValuesIn(kFloatUnary), ::testing::Values(DType::kF16, DType::kBF16)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

class UnaryBackwardGpu : public ::testing::TestWithParam<std::tuple<UnaryKind, DType>> {};

TEST_P(UnaryBackwardGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  auto [lo, hi] = unary_input_range(kind);
  for (const auto& c : same_shape(unary_cases(kind, t, t))) {
    SCOPED_TRACE(c.name);
    // grad_out laid out like the output, x like the input case.
    UnaryBackwardDescriptor d{kind, c.out, c.in0, c.out};
    HostTensor hg(c.out), hx(c.in0);
    fill_random(hg, -2, 2);
    fill_random(hx, lo, hi, Fill::kWithEdges);
    auto want = reference::unary_backward(d, hg, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_bwd<UnaryBackwardPlan>(d, c, hg, hx, want.value());
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryBackwardGpu,
                         ::testing::Combine(::testing::ValuesIn(kDiffUnary), ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// Every f16 / bf16 bit pattern of x (NaNs, infinities, subnormals, both zeros, huge and
// tiny) with random grad_out through the kinds whose 16-bit contiguous backward uses the
// fast forms of kernels/unary_fast16.cuh (has_fast16_grad: tanh, sigmoid, gelu_erf), plus
// the in-place form (grad_in over grad_out), every SKU forced.
class UnaryBackwardAllPatternsGpu : public ::testing::TestWithParam<std::tuple<UnaryKind, DType>> {};

TEST_P(UnaryBackwardAllPatternsGpu, Every16BitInput) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (bool in_place : {false, true}) {
    const Case c{in_place ? "all_patterns_in_place" : "all_patterns", contig(t, {65536}), {}, contig(t, {65536}), in_place};
    SCOPED_TRACE(c.name);
    UnaryBackwardDescriptor d{kind, c.out, c.in0, c.out};
    HostTensor hg(c.out), hx(c.in0);
    fill_random(hg, -2, 2);
    auto* bits = reinterpret_cast<std::uint16_t*>(hx.storage());
    for (std::uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<std::uint16_t>(i);
    auto want = reference::unary_backward(d, hg, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_bwd<UnaryBackwardPlan>(d, c, hg, hx, want.value());
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryBackwardAllPatternsGpu,
                         ::testing::Combine(::testing::Values(UnaryKind::kTanh, UnaryKind::kSigmoid, UnaryKind::kGeluErf),
                                            ::testing::Values(DType::kF16, DType::kBF16)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// Parametric kinds with non-default scalars (pow with integer, fractional and negative exponents).
struct ParamCase {
  std::string name;
  UnaryKind kind;
  UnaryParams params;
};
const std::vector<ParamCase> kParamCases = {
    {"threshold", UnaryKind::kThreshold, {0.5, -2, 0}},  {"leaky_relu", UnaryKind::kLeakyRelu, {0.2, 0, 0}},
    {"elu", UnaryKind::kElu, {1.5, 0, 0}},                {"celu", UnaryKind::kCelu, {0.7, 0, 0}},
    {"hardtanh", UnaryKind::kHardtanh, {-2, 3, 0}},       {"softplus", UnaryKind::kSoftplus, {2, 5, 0}},
    {"pow3", UnaryKind::kPow, {3, 0, 0}},                 {"pow2_5", UnaryKind::kPow, {2.5, 0, 0}},
    {"pow_m1", UnaryKind::kPow, {-1, 0, 0}},              {"pow0_5", UnaryKind::kPow, {0.5, 0, 0}},
    {"pow1_7", UnaryKind::kPow, {1.7, 0, 0}},             {"hardshrink", UnaryKind::kHardshrink, {1.0, 0, 0}},
    {"softshrink", UnaryKind::kSoftshrink, {0.3, 0, 0}},  {"nan_to_num", UnaryKind::kNanToNum, {1, 100, -100}},
    {"logit_eps", UnaryKind::kLogit, {0.05, 0, 0}},
};

class UnaryParamGpu : public ::testing::TestWithParam<std::tuple<int, DType>> {};

TEST_P(UnaryParamGpu, ForwardAndBackwardEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [index, t] = GetParam();
  const ParamCase& pc = kParamCases[static_cast<std::size_t>(index)];
  const double lo = pc.kind == UnaryKind::kLogit ? 0.001 : -6, hi = pc.kind == UnaryKind::kLogit ? 0.999 : 6;
  for (const auto& c : map1_quick_cases(t, t)) {
    SCOPED_TRACE(c.name);
    UnaryParamDescriptor d{pc.kind, pc.params, c.in0, c.out};
    HostTensor hx(c.in0);
    fill_random(hx, lo, hi, Fill::kWithEdges);
    auto want = reference::unary(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_fwd<UnaryParamPlan>(d, c, hx, want.value(), false);
  }
  for (const auto& c : same_shape(map1_quick_cases(t, t))) {
    SCOPED_TRACE(c.name + " backward");
    UnaryParamBackwardDescriptor d{pc.kind, pc.params, c.out, c.in0, c.out};
    HostTensor hg(c.out), hx(c.in0);
    fill_random(hg, -2, 2);
    fill_random(hx, lo, hi, Fill::kWithEdges);
    auto want = reference::unary_backward(d, hg, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_bwd<UnaryParamBackwardPlan>(d, c, hg, hx, want.value());
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryParamGpu,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(kParamCases.size())),
                                            ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) {
                           return kParamCases[static_cast<std::size_t>(std::get<0>(info.param))].name + "_" +
                                  pname(std::get<1>(info.param));
                         });

// Predicates: floating x -> bool y, bit-exact, edge values included.
class UnaryPredicateGpu : public ::testing::TestWithParam<std::tuple<UnaryKind, DType>> {};

TEST_P(UnaryPredicateGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (const auto& c : map1_quick_cases(t, DType::kBool)) {
    SCOPED_TRACE(c.name);
    UnaryDescriptor d{kind, c.in0, c.out};
    HostTensor hx(c.in0);
    fill_random(hx, -3, 3, Fill::kWithEdges);
    if (hx.layout().numel() > 3) hx.set(3, 0.0);  // logical_not's true case
    auto want = reference::unary(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_fwd<UnaryPlan>(d, c, hx, want.value(), true);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryPredicateGpu,
                         ::testing::Combine(::testing::ValuesIn(kPredicateUnary), ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// Integer kinds (and logical_not / bitwise_not on bool): exact, including each dtype's
// extremes (wrap-around of abs and neg).
const DType kIntTypes[] = {DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8, DType::kBool};

class UnaryIntGpu : public ::testing::TestWithParam<std::tuple<UnaryKind, DType>> {};

TEST_P(UnaryIntGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  const UnaryKindInfo& info = unary_kind_info(kind);
  const DType out_t = info.to_bool ? DType::kBool : t;
  double lo = -120, hi = 120, min_v = -128, max_v = 127;
  if (t == DType::kU8) lo = 0, hi = 255, min_v = 0, max_v = 255;
  if (t == DType::kI16) lo = -30000, hi = 30000, min_v = -32768, max_v = 32767;
  if (t == DType::kI32) lo = -2e9, hi = 2e9, min_v = -2147483648.0, max_v = 2147483647.0;
  if (t == DType::kI64) lo = -1e15, hi = 1e15, min_v = -9223372036854775808.0, max_v = -1;
  if (t == DType::kBool) lo = 0, hi = 1, min_v = 0, max_v = 1;
  for (const auto& c : map1_quick_cases(t, out_t)) {
    SCOPED_TRACE(c.name);
    UnaryDescriptor d{kind, c.in0, c.out};
    HostTensor hx(c.in0);
    fill_random(hx, lo, hi);
    const std::int64_t n = hx.layout().numel();
    if (n > 3) {
      hx.set(0, min_v);
      hx.set(1, max_v);
      hx.set(2, 0);
      hx.set(3, t == DType::kU8 || t == DType::kBool ? 1 : -1);
    }
    auto want = reference::unary(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_unary_fwd<UnaryPlan>(d, c, hx, want.value(), true);
  }
}

// every integer kind on every integer dtype, and bool for the kinds that take it
std::vector<std::tuple<UnaryKind, DType>> int_unary_params() {
  std::vector<std::tuple<UnaryKind, DType>> ps;
  for (UnaryKind k : kIntUnary)
    for (DType t : kIntTypes)
      if (t != DType::kBool || unary_kind_info(k).boolean) ps.emplace_back(k, t);
  return ps;
}

INSTANTIATE_TEST_SUITE_P(Kinds, UnaryIntGpu, ::testing::ValuesIn(int_unary_params()),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// Binary plans: test_binary_gpu.cpp.

// ------------------------------------------------------------------------------- cast
// Casts: tests/gpu/test_cast_gpu.cpp (every dtype pair, bit-exact).

// ------------------------------------------------------------------------------- > 2^31 elements
TEST(ElementwiseHuge, ReluBf16Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t n = (std::int64_t{1} << 31) + 4099;
  auto l = TensorLayout::contiguous(DType::kBF16, std::vector<std::int64_t>{n});
  std::vector<std::uint16_t> hx(static_cast<std::size_t>(n)), hy(static_cast<std::size_t>(n));
  std::uint64_t s = test_seed() | 1;
  for (auto& v : hx) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v = static_cast<std::uint16_t>(s);
    if ((v & 0x7F80) == 0x7F80) v &= 0xBFFF;  // no inf/NaN: keep the check a pure bit rule
  }
  auto bytes = static_cast<std::size_t>(n) * 2;
  auto dx = DeviceBuffer::allocate(bytes);
  auto dy = DeviceBuffer::allocate(bytes);
  ASSERT_TRUE(dx && dy);
  ASSERT_TRUE(copy_to_device(dx->data(), hx.data(), bytes, test_stream()));
  UnaryDescriptor d{UnaryKind::kRelu, l, l};
  for (const char* sku : {"unary.fwd.vec16_contig*", "unary.fwd.strided_i64*"}) {
    PlanPreference pref;
    pref.force_sku = sku;
    auto plan = UnaryPlan::select(test_stream(), d, pref);
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    ASSERT_TRUE(memset_device(dy->data(), 0xFF, bytes, test_stream()));
    ASSERT_TRUE(plan->run(test_stream(), {}, UnaryArgs{.x = dx->data(), .y = dy->data()}));
    ASSERT_TRUE(copy_to_host(hy.data(), dy->data(), bytes, test_stream()));
    std::int64_t bad = 0, first = -1;
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint16_t x = hx[static_cast<std::size_t>(i)];
      std::uint16_t want = (x & 0x8000) ? 0 : x;  // negative (and -0) -> +0
      if (hy[static_cast<std::size_t>(i)] != want && bad++ == 0) first = i;
    }
    EXPECT_EQ(bad, 0) << plan->sku().name() << ": first mismatch at " << first << " (seed " << test_seed() << ")";
  }
}

// ------------------------------------------------------------------------------- graph capture
TEST(ElementwiseGraph, CapturedRunReplaysWithNewInputs) {
  BARACUDA_REQUIRE_GPU();
  auto l = TensorLayout::contiguous(DType::kBF16, {513, 1031});
  auto bias = TensorLayout::contiguous(DType::kBF16, {1031});
  BinaryDescriptor d{BinaryKind::kMul, l, bias, l};
  auto plan = BinaryPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value());
  HostTensor ha(l), hb(bias), ho(l);
  fill_random(ha, -3, 3);
  fill_random(hb, -3, 3);
  DeviceTensor da(ha, test_stream()), db(hb, test_stream()), dout(ho, test_stream());
  cudaStream_t s = test_stream().handle();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  Status st = plan->run(test_stream(), {}, BinaryArgs{.a = da.data(), .b = db.data(), .out = dout.data()});
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    fill_random(ha, -3, 3);
    fill_random(hb, -3, 3);
    da.upload(ha, test_stream());
    db.upload(hb, test_stream());
    dout.poison(0xFF, test_stream());
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_TRUE(dout.download(ho, test_stream()));
    auto want = reference::binary(d, ha, hb);
    EXPECT_TRUE(check_close(ho, want.value(), "graph replay " + std::to_string(round)));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// ------------------------------------------------------------------------------- refusals
// Bad args are refused before any launch and the output stays byte-for-byte untouched
// (Untouched, expect_refused: gpu_harness.hpp).
TEST(ElementwiseRefusals, RunChecksArgsBeforeLaunch) {
  BARACUDA_REQUIRE_GPU();
  auto l = TensorLayout::contiguous(DType::kF32, {64, 64});
  auto plan = UnaryPlan::select(test_stream(), UnaryDescriptor{UnaryKind::kSilu, l, l});
  ASSERT_TRUE(plan.has_value());
  HostTensor hx(l);
  fill_random(hx, -1, 1);
  DeviceTensor dx(hx, test_stream());
  Untouched y(l);
  // null pointer
  expect_refused(plan->run(test_stream(), {}, UnaryArgs{.x = nullptr, .y = y.data()}), Code::kInvalidArgument,
                 "args.x is null");
  // misalignment: the descriptor promises 16 bytes
  expect_refused(plan->run(test_stream(), {}, UnaryArgs{.x = static_cast<char*>(dx.data()) + 4, .y = y.data()}),
                 Code::kMisaligned, "is not aligned to x.alignment = 16 bytes");
  // unsafe aliasing: y overlaps x shifted by one row
  expect_refused(plan->run(test_stream(), {}, UnaryArgs{.x = dx.data(), .y = static_cast<float*>(dx.data()) + 64}),
                 Code::kInvalidArgument, "unsafe aliasing");
  EXPECT_TRUE(y.check());
  // wrong device stream for a caps-only plan
  auto caps_plan = UnaryPlan::select_for_caps(test_caps(), UnaryDescriptor{UnaryKind::kSilu, l, l});
  expect_refused(caps_plan->run(test_stream(), {}, UnaryArgs{.x = dx.data(), .y = y.data()}), Code::kInvalidArgument,
                 "select_for_caps");
  EXPECT_TRUE(y.check());
}

TEST(ElementwiseRefusals, BackwardWorkspaceAndAliasing) {
  BARACUDA_REQUIRE_GPU();
  auto out = TensorLayout::contiguous(DType::kBF16, {256, 128});
  auto bias = TensorLayout::contiguous(DType::kBF16, {128});
  BinaryBackwardDescriptor d{BinaryKind::kMul, out, out, bias, out, bias};
  auto plan = BinaryBackwardPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value());
  ASSERT_GT(plan->workspace_size(), 0u);
  HostTensor hg(out), ha(out), hb(bias);
  fill_random(hg, -1, 1);
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  DeviceTensor dg(hg, test_stream()), da(ha, test_stream()), db(hb, test_stream());
  Untouched ga(out), gb(bias);
  BinaryBackwardArgs args{.grad_out = dg.data(), .a = da.data(), .b = db.data(), .grad_a = ga.data(), .grad_b = gb.data()};
  Workspace small = test_workspace(plan->workspace_size());
  small.bytes = plan->workspace_size() - 1;
  expect_refused(plan->run(test_stream(), small, args), Code::kWorkspaceTooSmall, "workspace.bytes = ");
  Workspace ws = test_workspace(plan->workspace_size());
  expect_refused(plan->run(test_stream(), {nullptr, ws.bytes}, args), Code::kInvalidArgument, "workspace.data is null");
  // grad_b aliasing b (different layout from the reduced gradient's point of view: b is read)
  auto alias = args;
  alias.grad_a = dg.data();  // grad_a may alias grad_out only with the identical layout: here it is identical
  alias.grad_b = static_cast<char*>(da.data()) + 64;  // overlaps a
  expect_refused(plan->run(test_stream(), ws, alias), Code::kInvalidArgument, "unsafe aliasing");
  auto null_b = args;
  null_b.b = nullptr;  // mul reads b
  expect_refused(plan->run(test_stream(), ws, null_b), Code::kInvalidArgument, "args.b is null");
  EXPECT_TRUE(ga.check());
  EXPECT_TRUE(gb.check());
}

// The four unary plans, table-driven: a null, a misaligned and an unsafely aliased pointer
// each (no unary plan has a workspace), outputs poisoned and untouched after.
TEST(ElementwiseRefusals, UnaryPlansRunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto l = TensorLayout::contiguous(DType::kF32, {64, 64});
  HostTensor hx(l);
  fill_random(hx, -1, 1);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream());
  Untouched y(l);
  const void* x = dx.data();
  const void* g = dg.data();
  const void* x_plus4 = static_cast<const char*>(x) + 4;       // breaks the promised 16 bytes
  void* y_plus4 = static_cast<char*>(y.data()) + 4;
  void* x_row1 = static_cast<float*>(dx.data()) + 64;          // overlaps x one row on
  void* g_row1 = static_cast<float*>(dg.data()) + 64;
  auto fwd = UnaryPlan::select(test_stream(), UnaryDescriptor{UnaryKind::kRelu, l, l});
  auto bwd = UnaryBackwardPlan::select(test_stream(), UnaryBackwardDescriptor{UnaryKind::kSilu, l, l, l});
  auto pfwd = UnaryParamPlan::select(test_stream(), UnaryParamDescriptor{UnaryKind::kLeakyRelu, {0.1, 0, 0}, l, l});
  auto pbwd = UnaryParamBackwardPlan::select(test_stream(),
                                             UnaryParamBackwardDescriptor{UnaryKind::kElu, {1, 0, 0}, l, l, l});
  ASSERT_TRUE(fwd && bwd && pfwd && pbwd);
  for (std::size_t ws : {fwd->workspace_size(), bwd->workspace_size(), pfwd->workspace_size(), pbwd->workspace_size()})
    EXPECT_EQ(ws, 0u);
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  expect_run_refusals(
      {
          {"unary null x", [&] { return fwd->run(s, {}, {.x = nullptr, .y = y.data()}); }, kBad, "args.x is null"},
          {"unary misaligned y", [&] { return fwd->run(s, {}, {.x = x, .y = y_plus4}); }, kMis, "not aligned to y.alignment = 16"},
          {"unary y over x", [&] { return fwd->run(s, {}, {.x = x, .y = x_row1}); }, kBad, "args.y overlaps args.x"},
          {"backward null grad_out", [&] { return bwd->run(s, {}, {.grad_out = nullptr, .x = x, .grad_in = y.data()}); },
           kBad, "args.grad_out is null"},
          {"backward misaligned x", [&] { return bwd->run(s, {}, {.grad_out = g, .x = x_plus4, .grad_in = y.data()}); },
           kMis, "not aligned to x.alignment = 16"},
          {"backward grad_in over x", [&] { return bwd->run(s, {}, {.grad_out = g, .x = x, .grad_in = x_row1}); },
           kBad, "args.grad_in overlaps args.x without the identical layout"},
          {"param null y", [&] { return pfwd->run(s, {}, {.x = x, .y = nullptr}); }, kBad, "args.y is null"},
          {"param misaligned x", [&] { return pfwd->run(s, {}, {.x = x_plus4, .y = y.data()}); }, kMis,
           "not aligned to x.alignment = 16"},
          {"param y over x", [&] { return pfwd->run(s, {}, {.x = x, .y = x_row1}); }, kBad, "args.y overlaps args.x"},
          {"param backward null x", [&] { return pbwd->run(s, {}, {.grad_out = g, .x = nullptr, .grad_in = y.data()}); },
           kBad, "args.x is null"},
          {"param backward misaligned grad_in", [&] { return pbwd->run(s, {}, {.grad_out = g, .x = x, .grad_in = y_plus4}); },
           kMis, "not aligned to grad_in.alignment = 16"},
          {"param backward grad_in over grad_out", [&] { return pbwd->run(s, {}, {.grad_out = g, .x = x, .grad_in = g_row1}); },
           kBad, "args.grad_in overlaps args.grad_out without the identical layout"},
      },
      {&y});
}

TEST(ElementwiseRefusals, ForcedSkuThatCannotRun) {
  BARACUDA_REQUIRE_GPU();
  auto x = TensorLayout::strided(DType::kBF16, {64, 64}, {1, 64});
  auto y = TensorLayout::contiguous(DType::kBF16, {64, 64});
  PlanPreference pref;
  pref.force_sku = "unary.fwd.vec16_contig[bf16,f32].sm80+";
  auto plan = UnaryPlan::select(test_stream(), UnaryDescriptor{UnaryKind::kGeluTanh, x, y}, pref);
  ASSERT_FALSE(plan.has_value());
  expect_refused(plan.error(), Code::kNotSupported, "vec16_contig[bf16,f32].sm80+: x is not dense");
}

}  // namespace
}  // namespace baracuda::test
