// The cuDNN SDPA SKUs on the CPU (no GPU, no cuDNN call): what their probes accept and refuse
// through SdpaPlan / SdpaBackwardPlan::candidates on sm90 caps (each refusal naming the field),
// the SKU names and precision flags, the reported workspace, and select_for_caps choosing the
// cuDNN SKU first when it accepts. Graph building and numerics are checked on the GPU by the
// SDPA suite (tests/gpu/test_sdpa_gpu.cpp forces every accepting SKU).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/cudnn_sdpa_common.hpp"
#include "attention/sdpa_problem.hpp"
#include "baracuda/baracuda.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/attention.hpp"
#include "../sdpa_test_descriptors.hpp"

namespace baracuda {
namespace {

DeviceCaps caps(int sm = 90) { return test::caps_for(sm); }
using test::mha;
using test::t4;

// bf16, B 2, Hq 8, Hkv 2 (GQA), Sq 128, Skv 256, Dk 128, Dv 64, lse returned.
SdpaDescriptor dense(DType t = DType::kBF16) { return mha(t, 2, 8, 2, 128, 256, 128, 64); }

SdpaDescriptor varlen() {
  SdpaDescriptor d;
  d.q = TensorLayout::contiguous(DType::kF16, {300, 8, 64});
  d.k = TensorLayout::contiguous(DType::kF16, {500, 4, 64});
  d.v = TensorLayout::contiguous(DType::kF16, {500, 4, 64});
  d.o = TensorLayout::contiguous(DType::kF16, {300, 8, 64});
  d.lse = TensorLayout::contiguous(DType::kF32, {8, 300});
  d.options.varlen = true;
  d.options.batch = 4;
  d.options.max_seqlen_q = 128;
  d.options.max_seqlen_k = 200;
  return d;
}

template <class Plan, class Desc>
CandidateReport report_of(const Desc& d, const std::string& impl, const PlanPreference& pref = {}, int sm = 90) {
  auto reports = Plan::candidates(caps(sm), d, pref);
  EXPECT_TRUE(reports.has_value()) << reports.error().to_string();
  if (!reports) return {};
  for (const auto& r : reports.value())
    if (r.sku.backend == Backend::kCudnn && r.sku.impl == impl) return r;
  ADD_FAILURE() << "no cuDNN SKU '" << impl << "' among the candidates of " << d.to_string();
  return {};
}
CandidateReport fwd(const SdpaDescriptor& d, int sm = 90) { return report_of<SdpaPlan>(d, "cudnn_fused", {}, sm); }
CandidateReport bwd(const SdpaDescriptor& f, const char* impl = "cudnn_fused", const PlanPreference& pref = {}) {
  return report_of<SdpaBackwardPlan>(reference::sdpa_backward_of(f), impl, pref);
}

// ---------------------------------------------------------------- accepted

TEST(CudnnSdpa, SkuNamesAndPrecision) {
  const auto f = fwd(dense());
  EXPECT_EQ(f.rejection, "");
  EXPECT_EQ(f.sku.name(), "sdpa.fwd.cudnn_fused[bf16,f32].sm80+");
  EXPECT_TRUE(f.sku.precision.deterministic);
  EXPECT_TRUE(f.sku.graph_capturable);
  const auto b = bwd(dense());
  EXPECT_EQ(b.rejection, "");
  EXPECT_EQ(b.sku.name(), "sdpa.bwd.cudnn_fused[bf16,f32].sm80+");
  EXPECT_FALSE(b.sku.precision.deterministic) << "dQ is accumulated with atomics";
  const auto bd = bwd(dense(), "cudnn_fused_deterministic");
  EXPECT_EQ(bd.rejection, "");
  EXPECT_EQ(bd.sku.name(), "sdpa.bwd.cudnn_fused_deterministic[bf16,f32].sm80+");
  EXPECT_TRUE(bd.sku.precision.deterministic);
  EXPECT_EQ(fwd(dense(DType::kF16)).sku.name(), "sdpa.fwd.cudnn_fused[f16,f32].sm80+");
}

TEST(CudnnSdpa, AcceptsTheFusedFeatureSet) {
  const auto accepts = [](const SdpaDescriptor& d, const char* what) {
    EXPECT_EQ(fwd(d).rejection, "") << what;
    EXPECT_EQ(bwd(d).rejection, "") << what;
  };
  accepts(dense(), "GQA, Dk 128 != Dv 64");
  auto d = dense(DType::kF16);
  d.options.causal = true;
  accepts(d, "causal top-left");
  d.options.align = CausalAlign::kBottomRight;
  accepts(d, "causal bottom-right (Sq <= Skv)");
  d.options.window_left = 32;
  accepts(d, "sliding window, bottom-right");
  d = dense();
  d.options.window_left = 16;
  d.options.window_right = 8;
  accepts(d, "two-sided window, top-left");
  d = dense();
  d.bias = TensorLayout::contiguous(DType::kBF16, {1, 8, 128, 256});
  accepts(d, "bias broadcast over batch");
  d.bias = TensorLayout::contiguous(DType::kBF16, {128, 256});
  d.options.causal = true;
  accepts(d, "bias broadcast over batch and heads, causal");
  d = dense();
  d.options.dropout_p = 0.1;
  accepts(d, "dropout");
  d = dense();
  d.options.scale = 0.3;
  d.lse = {};
  EXPECT_EQ(fwd(d).rejection, "") << "no lse";
  accepts(mha(DType::kBF16, 2, 8, 2, 128, 256, 256, 256), "head dim 256");
  d = dense();
  // q as a [B, S, H, D] buffer viewed as [B, H, S, D] (BSHD strides).
  d.q = TensorLayout::strided(DType::kBF16, {2, 8, 128, 128}, {128 * 8 * 128, 128, 8 * 128, 1});
  accepts(d, "BSHD strides");
  accepts(varlen(), "varlen GQA");
  auto v = varlen();
  v.options.causal = true;
  v.options.align = CausalAlign::kBottomRight;
  accepts(v, "varlen causal bottom-right");
}

TEST(CudnnSdpa, WorkspaceCoversAuxAndFrontendBuffers) {
  namespace cs = attention::cudnn_sdpa;
  // Dense forward without dropout: no aux tensors, only the engine margin.
  EXPECT_EQ(fwd(dense()).workspace_bytes, cs::kEngineWorkspaceMargin);
  // Backward: packed lse copy + padding lengths (Skv 256 % 128 == 0: none) + dQ accumulator +
  // softmax sum + the GQA dK / dV allowance + margin.
  const std::size_t rows = 2 * 8 * 128;
  const std::size_t gqa = 2 * 2 * 256 * (128 + 64) * 4;
  const std::size_t expect = cs::align_up(rows * 4) + rows * 128 * 4 + rows * 4 + gqa + cs::kEngineWorkspaceMargin;
  EXPECT_EQ(bwd(dense()).workspace_bytes, expect);
  // Varlen forward: lengths, 5 ragged offset arrays, [Tq, Hq] stats.
  const auto v = fwd(varlen());
  EXPECT_EQ(v.workspace_bytes,
            2 * cs::align_up(4 * 4) + 5 * cs::align_up(5 * 4) + cs::align_up(300 * 8 * 4) + cs::kEngineWorkspaceMargin);
}

TEST(CudnnSdpa, SelectForCapsPrefersCudnn) {
  auto plan = SdpaPlan::select_for_caps(caps(), dense());
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().backend, Backend::kCudnn);
  auto fplan = FlashSdpaPlan::select_for_caps(caps(), FlashSdpaDescriptor{dense()});
  ASSERT_TRUE(fplan.has_value()) << fplan.error().to_string();
  EXPECT_EQ(fplan->sku().backend, Backend::kCudnn);
  PlanPreference det;
  det.deterministic = true;
  auto bplan = SdpaBackwardPlan::select_for_caps(caps(), reference::sdpa_backward_of(dense()), det);
  ASSERT_TRUE(bplan.has_value()) << bplan.error().to_string();
  EXPECT_EQ(bplan->sku().impl, "cudnn_fused_deterministic");
  const auto nd = bwd(dense(), "cudnn_fused", det);
  EXPECT_NE(nd.rejection.find("deterministic"), std::string::npos) << nd.rejection;
}

// ---------------------------------------------------------------- refused

struct Case {
  const char* what;
  SdpaDescriptor d;
  const char* field;  // the rejection must name it
  int sm = 90;
};

std::vector<Case> forward_refusals() {
  std::vector<Case> c;
  c.push_back({"f32", dense(DType::kF32), "q.dtype = f32"});
  c.push_back({"f64", dense(DType::kF64), "q.dtype = f64"});
  {
    auto d = dense();
    d.q.dtype = d.k.dtype = d.v.dtype = d.o.dtype = DType::kE4M3;
    c.push_back({"e4m3 (not wired in)", d, "q.dtype = e4m3"});
  }
  {
    auto d = dense();
    d.q = t4(DType::kBF16, 2, 8, 128, 264);
    d.k = t4(DType::kBF16, 2, 2, 256, 264);
    c.push_back({"head dim 264", d, "q head dim = 264"});
  }
  {
    auto d = dense();
    d.v = t4(DType::kBF16, 2, 2, 256, 60);
    d.o = t4(DType::kBF16, 2, 8, 128, 60);
    c.push_back({"Dv not a multiple of 8", d, "v head dim = 60"});
  }
  {
    auto d = dense();
    d.mask = TensorLayout::contiguous(DType::kU8, {128, 256});
    c.push_back({"bool mask", d, "mask"});
  }
  {
    auto d = dense();
    d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {8});
    c.push_back({"alibi", d, "alibi_slopes"});
  }
  {
    auto d = dense();
    d.options.softcap = 30;
    c.push_back({"softcap", d, "options.softcap"});
  }
  {
    auto d = dense();
    d.bias = TensorLayout::contiguous(DType::kF32, {1, 8, 128, 256});
    c.push_back({"f32 bias", d, "bias.dtype = f32"});
  }
  {
    auto d = dense();
    d.bias = TensorLayout::contiguous(DType::kBF16, {2, 1, 1, 256});
    c.push_back({"bias broadcast over queries", d, "bias.shape"});
  }
  {
    auto d = dense();
    d.q = TensorLayout::strided(DType::kBF16, {2, 8, 128, 128}, {8 * 128 * 256, 128 * 256, 256, 2});
    c.push_back({"head dim not contiguous", d, "q.strides[3] = 2"});
  }
  {
    auto d = dense();
    d.k = TensorLayout::strided(DType::kBF16, {2, 2, 256, 128}, {2 * 256 * 132, 256 * 132, 132, 1});
    c.push_back({"k rows not 16-byte", d, "k.strides[2] = 132"});
  }
  {
    auto d = dense();
    d.v.alignment = 8;
    c.push_back({"v 8-byte aligned", d, "v.alignment = 8"});
  }
  {
    auto d = dense();
    d.options.causal = true;
    d.options.align = CausalAlign::kBottomRight;
    d.options.dropout_p = 0.2;
    c.push_back({"bottom-right with dropout", d, "options.align = bottom_right with dropout"});
  }
  {
    auto d = dense();
    d.options.causal = true;
    d.options.align = CausalAlign::kBottomRight;
    d.bias = TensorLayout::contiguous(DType::kBF16, {128, 256});
    c.push_back({"bottom-right with bias", d, "options.align = bottom_right with bias"});
  }
  {
    auto d = mha(DType::kBF16, 2, 8, 2, 256, 128, 128, 64);  // Sq 256 > Skv 128
    d.options.window_left = 64;
    c.push_back({"window with Sq > Skv", d, "with options.window_left"});
    d.options.window_left = -1;
    d.options.causal = true;
    d.options.align = CausalAlign::kBottomRight;
    c.push_back({"bottom-right with Sq > Skv", d, "with bottom-right alignment"});
  }
  c.push_back({"varlen on sm80", varlen(), "options.varlen on sm80", 80});
  return c;
}

TEST(CudnnSdpa, ForwardRefusalsNameTheField) {
  for (const Case& c : forward_refusals()) {
    const auto r = fwd(c.d, c.sm);
    EXPECT_NE(r.rejection, "") << c.what;
    EXPECT_NE(r.rejection.find(c.field), std::string::npos) << c.what << ": '" << r.rejection << "'";
    EXPECT_EQ(r.workspace_bytes, 0u) << c.what;
  }
}

// The dense forward hands the caller's lse to cuDNN: an lse promised only 4-byte aligned goes to
// the flash SKUs instead (the backward reads lse through its own packed copy: no such rule).
TEST(CudnnSdpa, ForwardRefusesAnLseBelow16ByteAlignment) {
  auto d = dense();
  ASSERT_GT(d.lse.rank, 0);
  EXPECT_EQ(fwd(d).rejection, "");
  d.lse.alignment = 4;
  const auto r = fwd(d);
  EXPECT_NE(r.rejection.find("lse.alignment = 4"), std::string::npos) << r.rejection;
  EXPECT_EQ(bwd(d).rejection, "");
}

TEST(CudnnSdpa, BackwardRefusalsNameTheField) {
  for (const Case& c : forward_refusals()) {
    if (c.sm != 90 || c.d.q.dtype == DType::kE4M3) continue;  // e4m3 has no backward
    const auto r = bwd(c.d);
    EXPECT_NE(r.rejection.find(c.field), std::string::npos) << c.what << ": '" << r.rejection << "'";
  }
  {
    auto g = reference::sdpa_backward_of(dense());
    g.bias = TensorLayout::contiguous(DType::kBF16, {1, 8, 128, 256});
    g.grad_bias = g.bias;
    const auto r = report_of<SdpaBackwardPlan>(g, "cudnn_fused");
    EXPECT_NE(r.rejection.find("grad_bias"), std::string::npos) << r.rejection;
  }
  {
    const auto d = mha(DType::kBF16, 4, 8, 8, 1, 1, 64, 64);  // Sq = Skv = 1
    EXPECT_EQ(fwd(d).rejection, "");
    EXPECT_NE(bwd(d).rejection.find("sq = skv = 1"), std::string::npos) << bwd(d).rejection;
  }
  {
    const auto d = mha(DType::kBF16, 8, 16, 16, 4096, 4096, 128, 128);  // dP: 8 x 16 x 4096 x 4096 bf16 = 4 GiB
    EXPECT_EQ(bwd(d).rejection, "");
    const auto r = bwd(d, "cudnn_fused_deterministic");
    EXPECT_NE(r.rejection.find("materializes dP"), std::string::npos) << r.rejection;
  }
}

TEST(CudnnSdpa, BandAndEmptyRows) {
  namespace cs = attention::cudnn_sdpa;
  auto d = dense();
  d.options.causal = true;
  auto p = attention::make_sdpa_problem(d);
  auto b = cs::band_of(p);
  EXPECT_EQ(b.right, 0);
  EXPECT_EQ(b.left, -1);
  EXPECT_FALSE(cs::dense_has_empty_rows(p));
  d.options.window_left = 100000;  // wider than the problem: dropped
  p = attention::make_sdpa_problem(d);
  EXPECT_EQ(cs::band_of(p).left, -1);
  // Top-left window in a problem with Sq > Skv + window: the last rows see nothing.
  auto e = mha(DType::kBF16, 1, 1, 1, 64, 16, 64, 64);
  e.options.window_left = 8;
  e.options.window_right = 0;
  EXPECT_TRUE(cs::dense_has_empty_rows(attention::make_sdpa_problem(e)));
}

}  // namespace
}  // namespace baracuda
