// Unit tests (no GPU): descriptor validation and the dispatch decision of every elementwise
// plan on sm80 / sm89 / sm90 caps, and every PlanPreference field.
#include <gtest/gtest.h>

#include "baracuda/baracuda.hpp"
#include "core/plan_impl.hpp"  // detail::preference_rejection

namespace baracuda {
namespace {

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

UnaryDescriptor gelu_bf16(std::int64_t m, std::int64_t n) {
  auto t = TensorLayout::contiguous(DType::kBF16, {m, n});
  return UnaryDescriptor{UnaryKind::kGeluErf, t, t};
}

class DispatchOnArch : public ::testing::TestWithParam<int> {};

TEST_P(DispatchOnArch, ContiguousPicksVectorPath) {
  auto plan = UnaryPlan::select_for_caps(caps(GetParam()), gelu_bf16(4096, 8192));
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().name(), "unary.fwd.vec16_contig[bf16,f32].sm80+");
  EXPECT_EQ(plan->workspace_size(), 0u);
}

TEST_P(DispatchOnArch, StridedPicksIndex32ThenIndex64) {
  auto x = TensorLayout::strided(DType::kF32, {1000, 1000}, {1, 1000});
  auto y = TensorLayout::contiguous(DType::kF32, {1000, 1000});
  auto plan = UnaryPlan::select_for_caps(caps(GetParam()), UnaryDescriptor{UnaryKind::kExp, x, y});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().impl, "strided_i32");
  auto big_x = TensorLayout::strided(DType::kBF16, {70000, 40000}, {1, 70000});
  auto big_y = TensorLayout::contiguous(DType::kBF16, {70000, 40000});
  auto big = UnaryPlan::select_for_caps(caps(GetParam()), UnaryDescriptor{UnaryKind::kExp, big_x, big_y});
  ASSERT_TRUE(big.has_value()) << big.error().to_string();
  EXPECT_EQ(big->sku().impl, "strided_i64");
}

TEST_P(DispatchOnArch, BroadcastBiasAddAndItsBackward) {
  auto out = TensorLayout::contiguous(DType::kBF16, {4096, 1024});
  auto bias = TensorLayout::contiguous(DType::kBF16, {1024});
  auto fwd = BinaryPlan::select_for_caps(caps(GetParam()), BinaryDescriptor{BinaryKind::kAdd, out, bias, out});
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  EXPECT_EQ(fwd->sku().impl, "vec16_rows");
  BinaryBackwardDescriptor bd{BinaryKind::kAdd, out, out, bias, out, bias};
  auto bwd = BinaryBackwardPlan::select_for_caps(caps(GetParam()), bd);
  ASSERT_TRUE(bwd.has_value()) << bwd.error().to_string();
  EXPECT_EQ(bwd->sku().impl, "bcast_reduce_rows_vec16");
  EXPECT_GT(bwd->workspace_size(), 0u);
  EXPECT_EQ(bwd->workspace_size() % kWorkspaceAlignment, 0u);
  // a row that is not a whole number of 16-byte vectors: the split-index reduction
  auto odd_out = TensorLayout::contiguous(DType::kBF16, {4096, 1031});
  auto odd_bias = TensorLayout::contiguous(DType::kBF16, {1031});
  auto odd = BinaryBackwardPlan::select_for_caps(caps(GetParam()),
                                                 BinaryBackwardDescriptor{BinaryKind::kAdd, odd_out, odd_out, odd_bias,
                                                                          odd_out, odd_bias});
  ASSERT_TRUE(odd.has_value()) << odd.error().to_string();
  EXPECT_EQ(odd->sku().impl, "bcast_reduce_split_i64");
  EXPECT_GT(odd->workspace_size(), 0u);
  BinaryBackwardDescriptor same{BinaryKind::kMul, out, out, out, out, out};
  auto plain = BinaryBackwardPlan::select_for_caps(caps(GetParam()), same);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->sku().impl, "vec16_contig");
  EXPECT_EQ(plain->workspace_size(), 0u);
}

TEST_P(DispatchOnArch, CastAndMisalignedFallback) {
  auto x = TensorLayout::contiguous(DType::kF32, {4096, 8192});
  auto y = TensorLayout::contiguous(DType::kE4M3, {4096, 8192});
  auto plan = CastPlan::select_for_caps(caps(GetParam()), CastDescriptor{x, y});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().name(), "cast.fwd.vec16_contig[f32,f32,e4m3].sm80+");
  x.alignment = 4;
  auto unaligned = CastPlan::select_for_caps(caps(GetParam()), CastDescriptor{x, y});
  ASSERT_TRUE(unaligned.has_value());
  EXPECT_EQ(unaligned->sku().impl, "strided_i32");
  EXPECT_NE(unaligned->describe().find("x.alignment = 4 < 16 bytes"), std::string::npos) << unaligned->describe();
}

INSTANTIATE_TEST_SUITE_P(Archs, DispatchOnArch, ::testing::Values(80, 89, 90),
                         [](const auto& info) { return "sm" + std::to_string(info.param); });

TEST(Preference, ForcedSkuThatCannotRunIsAnErrorWithItsReason) {
  auto x = TensorLayout::strided(DType::kF32, {64, 64}, {1, 64});
  auto y = TensorLayout::contiguous(DType::kF32, {64, 64});
  PlanPreference pref;
  pref.force_sku = "unary.fwd.vec16_contig*";
  auto plan = UnaryPlan::select_for_caps(caps(90), UnaryDescriptor{UnaryKind::kRelu, x, y}, pref);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), Code::kNotSupported);
  const auto& m = plan.error().message();
  EXPECT_NE(m.find("vec16_contig[f32,f32].sm80+: x is not dense"), std::string::npos) << m;
  EXPECT_NE(m.find("strided_i32[f32,f32].sm80+: not matched by PlanPreference.force_sku"), std::string::npos) << m;
}

TEST(Preference, ForceSkipBackendWorkspaceDeterminismCapture) {
  auto d = gelu_bf16(128, 128);
  PlanPreference force;
  force.force_sku = "*strided_i64*";
  EXPECT_EQ(UnaryPlan::select_for_caps(caps(90), d, force)->sku().impl, "strided_i64");
  PlanPreference skip;
  skip.skip_skus = {"*vec16*"};
  EXPECT_EQ(UnaryPlan::select_for_caps(caps(90), d, skip)->sku().impl, "strided_i32");
  PlanPreference no_hand;
  no_hand.backends = kAllBackends & ~backend_bit(Backend::kHand);
  auto none = UnaryPlan::select_for_caps(caps(90), d, no_hand);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("backend hand excluded by PlanPreference.backends"), std::string::npos);
  // Deterministic and capture-safe kernels pass those filters.
  PlanPreference strict;
  strict.deterministic = true;
  strict.require_graph_capturable = true;
  EXPECT_TRUE(UnaryPlan::select_for_caps(caps(90), d, strict).has_value());
  // max_workspace_bytes removes the reduction backward, the only one that can run it.
  auto out = TensorLayout::contiguous(DType::kF32, {512, 64});
  auto bias = TensorLayout::contiguous(DType::kF32, {64});
  BinaryBackwardDescriptor bd{BinaryKind::kAdd, out, out, bias, out, bias};
  PlanPreference tight;
  tight.max_workspace_bytes = 16;
  auto bw = BinaryBackwardPlan::select_for_caps(caps(90), bd, tight);
  ASSERT_FALSE(bw.has_value());
  EXPECT_NE(bw.error().message().find("PlanPreference.max_workspace_bytes = 16"), std::string::npos)
      << bw.error().message();
}

TEST(Preference, CandidatesListEveryVerdict) {
  auto reports = UnaryPlan::candidates(caps(80), gelu_bf16(8, 8));
  ASSERT_TRUE(reports.has_value());
  ASSERT_EQ(reports->size(), 4u);
  EXPECT_EQ((*reports)[0].sku.impl, "vec16_contig");
  EXPECT_TRUE((*reports)[0].rejection.empty()) << (*reports)[0].rejection;
  EXPECT_EQ((*reports)[1].sku.impl, "vec16_rows");
  EXPECT_EQ((*reports)[1].rejection, "the operands do not collapse to [rows, cols] (rank 1)");
  EXPECT_EQ((*reports)[2].sku.impl, "strided_i32");
  EXPECT_TRUE((*reports)[2].rejection.empty());
  EXPECT_TRUE((*reports)[3].rejection.empty());
}

TEST(Dispatch, RowVectorPathTakesPaddedRowsAndRefusesRaggedOnes) {
  // rows padded to a leading dimension of 1032 elements: dense inside each row
  auto padded = TensorLayout::strided(DType::kBF16, {64, 1024}, {1032, 1});
  auto dense = TensorLayout::contiguous(DType::kBF16, {64, 1024});
  PlanPreference rows;
  rows.force_sku = "*vec16_rows*";
  auto plan = UnaryPlan::select_for_caps(caps(90), UnaryDescriptor{UnaryKind::kSilu, padded, dense}, rows);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().impl, "vec16_rows");
  // a row stride that is not a whole number of 16-byte vectors
  auto ragged = TensorLayout::strided(DType::kBF16, {64, 1024}, {1030, 1});
  auto reports = UnaryPlan::candidates(caps(90), UnaryDescriptor{UnaryKind::kSilu, ragged, dense});
  ASSERT_TRUE(reports.has_value());
  EXPECT_EQ((*reports)[1].rejection, "x row stride 1030 is not a non-negative multiple of 8");
  // cols not a multiple of the vector width
  auto odd = TensorLayout::contiguous(DType::kF32, {64, 1031});
  auto bias = TensorLayout::contiguous(DType::kF32, {1031});
  auto r2 = BinaryPlan::candidates(caps(90), BinaryDescriptor{BinaryKind::kAdd, odd, bias, odd});
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ((*r2)[1].rejection, "cols = 1031 is not a multiple of the 4-element vector");
}

TEST(Validation, NamesFieldAndValue) {
  auto f32 = TensorLayout::contiguous(DType::kF32, {4, 8});
  auto i32 = TensorLayout::contiguous(DType::kI32, {4, 8});
  auto f16 = TensorLayout::contiguous(DType::kF16, {4, 8});
  auto other = TensorLayout::contiguous(DType::kF32, {4, 9});
  auto expect_error = [](const auto& result, Code code, const std::string& needle) {
    ASSERT_FALSE(result.has_value()) << "expected an error containing '" << needle << "'";
    EXPECT_EQ(result.error().code(), code) << result.error().to_string();
    EXPECT_NE(result.error().message().find(needle), std::string::npos) << result.error().message();
  };
  auto c = caps(90);
  // wrong dtype
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kRelu, i32, i32}), Code::kInvalidArgument,
               "x.dtype = i32 is not supported by unary");
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kRelu, f32, f16}), Code::kInvalidArgument,
               "y.dtype = f16 must be f32 for unary kind relu");
  // kinds outside their dtypes, parameters, plan kind
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kPopcount, f32, f32}), Code::kInvalidArgument,
               "x.dtype = f32 is not supported by unary kind popcount (i64, i32, i16, i8, u8)");
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kIsnan, f32, f32}), Code::kInvalidArgument,
               "y.dtype = f32 must be bool for unary kind isnan");
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kPow, f32, f32}), Code::kInvalidArgument,
               "kind = pow needs parameters: use UnaryParamPlan");
  expect_error(UnaryParamPlan::select_for_caps(c, UnaryParamDescriptor{UnaryKind::kRelu, {}, f32, f32}),
               Code::kInvalidArgument, "kind = relu takes no parameters");
  expect_error(UnaryParamPlan::select_for_caps(c, UnaryParamDescriptor{UnaryKind::kCelu, {0, 0, 0}, f32, f32}),
               Code::kInvalidArgument, "params.a = 0.000000 (alpha) must not be 0 (kind celu)");
  expect_error(UnaryParamPlan::select_for_caps(c, UnaryParamDescriptor{UnaryKind::kHardtanh, {2, 1, 0}, f32, f32}),
               Code::kInvalidArgument, "params.a = 2.000000 (min_val) must be <= params.b (max_val)");
  expect_error(UnaryBackwardPlan::select_for_caps(c, UnaryBackwardDescriptor{UnaryKind::kIsnan, f32, f32, f32}),
               Code::kInvalidArgument, "kind = isnan has no backward");
  expect_error(CastPlan::select_for_caps(c, CastDescriptor{TensorLayout::contiguous(DType::kU32, {4, 8}), f32}),
               Code::kInvalidArgument, "x.dtype = u32 is not supported by cast");  // i32 casts since issue 3
  // mismatched shapes
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kRelu, other, f32}), Code::kInvalidArgument,
               "x.shape[1] = 9 cannot broadcast to 8");
  expect_error(BinaryPlan::select_for_caps(c, BinaryDescriptor{BinaryKind::kAdd, f32, other, f32}),
               Code::kInvalidArgument, "do not broadcast");
  expect_error(BinaryPlan::select_for_caps(
                   c, BinaryDescriptor{BinaryKind::kAdd, f32, TensorLayout::contiguous(DType::kF32, {8}), other}),
               Code::kInvalidArgument, "out = f32[4,9] does not have the shape of broadcast(a, b)");
  expect_error(UnaryBackwardPlan::select_for_caps(c, UnaryBackwardDescriptor{UnaryKind::kSilu, f32, other, f32}),
               Code::kInvalidArgument, "x = f32[4,9] does not have the shape of grad_in");
  // bad stride: an output with a broadcast (stride 0) dim
  auto y_bcast = TensorLayout::strided(DType::kF32, {4, 8}, {0, 1});
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{UnaryKind::kRelu, f32, y_bcast}), Code::kInvalidArgument,
               "y = f32[4,8]{0,1} maps several elements to one address");
  // bad kind / mode
  expect_error(UnaryPlan::select_for_caps(c, UnaryDescriptor{static_cast<UnaryKind>(200), f32, f32}),
               Code::kInvalidArgument, "kind = 200 is not a UnaryKind");
  expect_error(CastPlan::select_for_caps(c, CastDescriptor{f32, f16, static_cast<Fp8Overflow>(7)}),
               Code::kInvalidArgument, "fp8_overflow = 7");
  // grad shape
  BinaryBackwardDescriptor bd{BinaryKind::kMul, f32, f32, f32, other, f32};
  expect_error(BinaryBackwardPlan::select_for_caps(c, bd), Code::kInvalidArgument,
               "grad_a = f32[4,9] does not have the shape of a");
}

TEST(Descriptors, HashAndEquality) {
  auto a = gelu_bf16(16, 16), b = gelu_bf16(16, 16), c = gelu_bf16(16, 17);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, c);
  EXPECT_NE(a.hash(), c.hash());
  CastDescriptor x{a.x, a.y}, y{a.x, a.y, Fp8Overflow::kSaturate};
  EXPECT_NE(x, y);
  EXPECT_NE(x.hash(), y.hash());
}

TEST(Plan, CapsOnlyPlanRefusesToRun) {
  auto plan = UnaryPlan::select_for_caps(caps(90), gelu_bf16(4, 4));
  ASSERT_TRUE(plan.has_value());
  Status st = plan->run(Stream{}, {}, UnaryArgs{});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("select_for_caps"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace baracuda

namespace baracuda {
namespace {

// Every PlanPreference field against a synthetic SKU, through the shared filter every
// family's select() applies (src/core/plan_impl.hpp).
TEST(Preference, EveryFieldIsHonoured) {
  KernelSku sku;
  sku.family = "synthetic";
  sku.impl = "tile";
  const auto c90 = caps(90), c80 = caps(80);
  auto reason = [&](const KernelSku& s, const PlanPreference& p, const DeviceCaps& c = caps(90), std::size_t ws = 0) {
    return detail::preference_rejection(s, ws, c, p, false);
  };
  EXPECT_EQ(reason(sku, {}), "");
  PlanPreference p;
  p.force_sku = "other.*";
  EXPECT_NE(reason(sku, p).find("PlanPreference.force_sku"), std::string::npos);
  p = {};
  p.skip_skus = {"synthetic.fwd.*"};
  EXPECT_NE(reason(sku, p).find("PlanPreference.skip_skus"), std::string::npos);
  p = {};
  p.backends = backend_bit(Backend::kCublasLt);
  EXPECT_NE(reason(sku, p).find("PlanPreference.backends"), std::string::npos);
  KernelSku nondet = sku;
  nondet.precision.deterministic = false;
  p = {};
  EXPECT_EQ(reason(nondet, p), "");
  p.deterministic = true;
  EXPECT_NE(reason(nondet, p).find("PlanPreference.deterministic"), std::string::npos);
  KernelSku uncapturable = sku;
  uncapturable.graph_capturable = false;
  p = {};
  EXPECT_EQ(reason(uncapturable, p), "");
  p.require_graph_capturable = true;
  EXPECT_NE(reason(uncapturable, p).find("require_graph_capturable"), std::string::npos);
  // Each math-mode flag of a SKU is refused until its PlanPreference::math field allows it.
  struct MathCase {
    bool PrecisionInfo::*sku_flag;
    bool MathMode::*allow;
    const char* field;
  };
  for (const MathCase& m : {MathCase{&PrecisionInfo::uses_tf32, &MathMode::allow_tf32, "allow_tf32"},
                            MathCase{&PrecisionInfo::reduced_precision_reduction,
                                     &MathMode::allow_reduced_precision_reduction, "allow_reduced_precision_reduction"},
                            MathCase{&PrecisionInfo::fast_math, &MathMode::allow_fast_math, "allow_fast_math"}}) {
    KernelSku flagged = sku;
    flagged.precision.*m.sku_flag = true;
    p = {};
    EXPECT_NE(reason(flagged, p).find(m.field), std::string::npos) << m.field;
    p.math.*m.allow = true;
    EXPECT_EQ(reason(flagged, p), "") << m.field;
  }
  p = {};
  p.max_workspace_bytes = 100;
  EXPECT_EQ(reason(sku, p, c90, 100), "");
  EXPECT_NE(reason(sku, p, c90, 101).find("max_workspace_bytes = 100"), std::string::npos);
  KernelSku hopper = sku;
  hopper.min_sm = 90;
  hopper.arch_specific = true;
  EXPECT_EQ(reason(hopper, {}, c90), "");
  EXPECT_EQ(reason(hopper, {}, c80), "needs sm90+, device is sm80");
  KernelSku ada = sku;
  ada.min_sm = 89;
  EXPECT_EQ(reason(ada, {}, caps(89)), "");
  EXPECT_EQ(reason(ada, {}, c80), "needs sm89+, device is sm80");
}

}  // namespace
}  // namespace baracuda
