// THE SDPA GPU suite (filter `*Sdpa*`): SdpaPlan / SdpaBackwardPlan (and FlashSdpaPlan /
// FlashSdpaBackwardPlan where they accept) against reference::sdpa(_backward) (attention in
// double; tolerance: compare.hpp's rule against the naive same-precision twin). For every case
// each candidate SKU that accepts the descriptor is forced in turn (general, flash*, cudnn*),
// on poisoned outputs with guard bytes.
//
// Cases: every dtype; head dims 64, 96, 128, 192, 256, 40 and d_k != d_v; causal top-left /
// bottom-right, sliding window, GQA 1 / 4 / MQA; sequence lengths 1, 17, 128, 1000 and 4096
// (once, causal); varlen with empty sequences; broadcast bias (f32 and q's dtype, with its
// gradient), bool mask, ALiBi ([Hq] and [B, Hq]), softcap; fully masked rows (o = 0,
// lse = -inf, zero gradients); dropout (exact vs the reference's keep mask on our SKUs;
// cuDNN SKUs use their own generator: statistics and replay only); strided views ([B, S, H, D]
// memory viewed as [B, H, S, D]); backward for all. Dropout statistics and replay for every
// SKU; run-time refusals with outputs untouched: tables run under every SKU of SdpaPlan /
// SdpaBackwardPlan and FlashSdpaPlan / FlashSdpaBackwardPlan (cuDNN and ours), and the
// optional operands (bias, mask, ALiBi, grad_bias, varlen cu_seqlens).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/attention.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct SdpaCase {
  std::string name;
  std::int64_t B = 1, Hq = 2, Hkv = 2, Sq = 17, Skv = 17, Dk = 64, Dv = 64;
  SdpaOptions opt;
  std::vector<std::int64_t> bias;  // shape; empty: none
  bool bias_f32 = true;
  bool grad_bias = false;
  bool bias_neg_inf = false;       // -inf bias entries (a mask as an additive bias), whole rows too
  std::vector<std::int64_t> mask;  // shape; empty: none
  bool mask_holes = false;         // whole query rows masked out
  int alibi = 0;                   // 0 none, 1 [Hq], 2 [B, Hq]
  bool strided = false;            // [B, S, H, D] memory viewed as [B, H, S, D]
  std::vector<std::int32_t> seqlens_q, seqlens_k;  // varlen
  bool backward = true;
};

bool is_cudnn(const std::string& sku) { return sku.find("cudnn") != std::string::npos; }

TensorLayout operand(DType t, const SdpaCase& c, std::int64_t H, std::int64_t S, std::int64_t D, std::int64_t tokens) {
  if (c.opt.varlen) return TensorLayout::contiguous(t, {tokens, H, D});
  if (c.strided) return TensorLayout::strided(t, {c.B, H, S, D}, {S * H * D, D, H * D, 1});
  return TensorLayout::contiguous(t, {c.B, H, S, D});
}

struct Built {
  SdpaDescriptor fwd;
  SdpaBackwardDescriptor bwd;
  std::int64_t tq = 0, tk = 0;
  std::vector<std::int32_t> cu_q, cu_k;
};

Built build(DType t, const SdpaCase& c) {
  Built b;
  SdpaDescriptor& d = b.fwd;
  d.options = c.opt;
  if (c.opt.varlen) {
    b.cu_q.push_back(0);
    b.cu_k.push_back(0);
    for (std::size_t s = 0; s < c.seqlens_q.size(); ++s) {
      b.cu_q.push_back(b.cu_q.back() + c.seqlens_q[s]);
      b.cu_k.push_back(b.cu_k.back() + c.seqlens_k[s]);
    }
    b.tq = b.cu_q.back();
    b.tk = b.cu_k.back();
    d.options.batch = static_cast<std::int64_t>(c.seqlens_q.size());
    d.options.max_seqlen_q = c.Sq;
    d.options.max_seqlen_k = c.Skv;
  }
  d.q = operand(t, c, c.Hq, c.Sq, c.Dk, b.tq);
  d.k = operand(t, c, c.Hkv, c.Skv, c.Dk, b.tk);
  d.v = operand(t, c, c.Hkv, c.Skv, c.Dv, b.tk);
  d.o = operand(t, c, c.Hq, c.Sq, c.Dv, b.tq);
  d.lse = c.opt.varlen ? TensorLayout::contiguous(DType::kF32, {c.Hq, b.tq})
                       : TensorLayout::contiguous(DType::kF32, {c.B, c.Hq, c.Sq});
  if (!c.bias.empty()) d.bias = TensorLayout::contiguous(c.bias_f32 ? DType::kF32 : t, c.bias);
  if (!c.mask.empty()) d.mask = TensorLayout::contiguous(DType::kU8, c.mask);
  if (c.alibi == 1) d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {c.Hq});
  if (c.alibi == 2)
    d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {c.opt.varlen ? d.options.batch : c.B, c.Hq});
  b.bwd = reference::sdpa_backward_of(d, c.grad_bias);
  return b;
}

HostTensor i32_tensor(const std::vector<std::int32_t>& v) {
  HostTensor h(TensorLayout::contiguous(DType::kI32, {static_cast<std::int64_t>(v.size())}, 4));
  for (std::size_t i = 0; i < v.size(); ++i) h.set(static_cast<std::int64_t>(i), v[i]);
  return h;
}

// Every candidate SKU of `d` that accepts, forced and selected (the replay tests run each twice,
// which gpu_harness's for_each_sku does not).
template <class PlanT>
std::vector<PlanT> forced_plans(const typename PlanT::Descriptor& d) {
  std::vector<PlanT> plans;
  auto reports = PlanT::candidates(test_caps(), d);
  EXPECT_TRUE(reports.has_value()) << (reports ? "" : reports.error().to_string());
  if (!reports) return plans;
  for (const auto& r : *reports) {
    if (!r.rejection.empty()) continue;
    PlanPreference pref;
    pref.force_sku = r.sku.name();
    auto plan = PlanT::select(test_stream(), d, pref);
    EXPECT_TRUE(plan.has_value()) << r.sku.name() << ": " << (plan ? "" : plan.error().to_string());
    if (plan) plans.push_back(std::move(*plan));
  }
  EXPECT_FALSE(plans.empty()) << "no SKU accepts " << d.to_string();
  return plans;
}

constexpr std::uint64_t kSeed = 0x1234abcd5678ull, kOffset = 0x9ull << 32 | 77;

// Whether `sku` is checked value by value in this case (cuDNN's dropout is its own generator).
bool exact_check(const SdpaCase& c, const std::string& sku) { return !(c.opt.dropout_p > 0 && is_cudnn(sku)); }

void run_case(DType t, const SdpaCase& c) {
  SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)));
  const Built b = build(t, c);
  const SdpaDescriptor& d = b.fwd;
  HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o), hlse(d.lse);
  fill_random(hq, -3, 3);
  fill_random(hk, -1, 1);
  fill_random(hv, -1, 1);
  HostTensor hbias(d.bias.rank ? d.bias : TensorLayout::contiguous(DType::kF32, {1}));
  HostTensor hmask(d.mask.rank ? d.mask : TensorLayout::contiguous(DType::kU8, {1}));
  HostTensor halibi(d.alibi_slopes.rank ? d.alibi_slopes : TensorLayout::contiguous(DType::kF32, {1}));
  fill_random(hbias, -2, 2);
  if (c.bias_neg_inf && d.bias.rank >= 2) {  // every fourth entry, and every fifth query row whole
    const std::int64_t skv = d.bias.shape[d.bias.rank - 1], sq = d.bias.shape[d.bias.rank - 2];
    for (std::int64_t i = 0; i < hbias.layout().numel(); ++i)
      if (i % 4 == 0 || (i / skv) % sq % 5 == 1) hbias.set(i, -std::numeric_limits<double>::infinity());
  }
  for (std::int64_t i = 0; i < hmask.layout().numel(); ++i) hmask.set(i, (rng()() % 4) != 0);
  if (c.mask_holes && d.mask.rank > 0) {  // every third query row sees nothing
    const std::int64_t skv = d.mask.shape[d.mask.rank - 1], sq = d.mask.shape[d.mask.rank - 2];
    for (std::int64_t i = 0; i < hmask.layout().numel(); ++i)
      if ((i / skv) % sq % 3 == 1) hmask.set(i, 0);
  }
  for (std::int64_t i = 0; i < halibi.layout().numel(); ++i) halibi.set(i, 0.05 * static_cast<double>(1 + i % 7));
  reference::SdpaHostInputs in{&hq, &hk, &hv, d.bias.rank ? &hbias : nullptr, d.mask.rank ? &hmask : nullptr,
                               d.alibi_slopes.rank ? &halibi : nullptr};
  in.cu_seqlens_q = b.cu_q;
  in.cu_seqlens_k = b.cu_k;
  const std::int64_t B = c.opt.varlen ? d.options.batch : c.B;
  const auto keep = reference::sdpa_dropout_keep(B, c.Hq, c.Sq, c.Skv, c.opt.dropout_p, kSeed, kOffset);
  in.keep = &keep;
  auto want = reference::sdpa(d, in);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();

  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dlse(hlse, s), dbias(hbias, s), dmask(hmask, s),
      dalibi(halibi, s);
  HostTensor hcu_q = i32_tensor(b.cu_q.empty() ? std::vector<std::int32_t>{0} : b.cu_q);
  HostTensor hcu_k = i32_tensor(b.cu_k.empty() ? std::vector<std::int32_t>{0} : b.cu_k);
  DeviceTensor dcu_q(hcu_q, s), dcu_k(hcu_k, s);
  SdpaArgs args{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(),
                .lse = static_cast<float*>(dlse.data())};
  if (d.bias.rank) args.bias = dbias.data();
  if (d.mask.rank) args.mask = static_cast<const std::uint8_t*>(dmask.data());
  if (d.alibi_slopes.rank) args.alibi_slopes = static_cast<const float*>(dalibi.data());
  if (c.opt.varlen) {
    args.cu_seqlens_q = static_cast<const std::int32_t*>(dcu_q.data());
    args.cu_seqlens_k = static_cast<const std::int32_t*>(dcu_k.data());
  }
  args.seed = kSeed;
  args.offset = kOffset;

  auto verify_fwd = [&](const std::string& sku) {
    ASSERT_TRUE(dout.download(ho, s));
    ASSERT_TRUE(dlse.download(hlse, s));
    if (!exact_check(c, sku)) return;  // dropout on cuDNN: statistics / replay tests below
    EXPECT_TRUE(check_close(ho, want->o, sku + " o " + d.to_string()));
    EXPECT_TRUE(check_close(hlse, want->lse, sku + " lse " + d.to_string()));
  };
  auto reset_fwd = [&] {
    dout.poison(0xFF, s);
    dlse.poison(0xFF, s);
  };
  for_each_sku<SdpaPlan>(d, reset_fwd, [&](const SdpaPlan& p, Workspace ws) { return p.run(s, ws, args); }, verify_fwd);
  FlashSdpaDescriptor fd;
  static_cast<SdpaDescriptor&>(fd) = d;
  if (auto fp = FlashSdpaPlan::select(s, fd); fp.has_value()) {
    reset_fwd();
    ASSERT_TRUE(fp->run(s, test_workspace(fp->workspace_size()), args)) << fp->sku().name();
    verify_fwd("FlashSdpaPlan " + fp->sku().name());
  }
  if (!c.backward) return;

  // Backward from the reference's o (rounded to the dtype) and lse.
  const SdpaBackwardDescriptor& g = b.bwd;
  HostTensor href_o(d.o), href_lse(d.lse), hgo(d.o), hgq(g.grad_q), hgk(g.grad_k), hgv(g.grad_v);
  for (std::int64_t i = 0; i < d.o.numel(); ++i) href_o.set(i, want->o.exact[static_cast<std::size_t>(i)]);
  for (std::int64_t i = 0; i < d.lse.numel(); ++i) href_lse.set(i, want->lse.exact[static_cast<std::size_t>(i)]);
  fill_random(hgo, -1, 1);
  HostTensor hgb(g.grad_bias.rank ? g.grad_bias : TensorLayout::contiguous(DType::kF32, {1}));
  auto gwant = reference::sdpa_backward(g, in, href_o, hgo);
  ASSERT_TRUE(gwant.has_value()) << gwant.error().to_string();
  DeviceTensor dro(href_o, s), drl(href_lse, s), dgo(hgo, s), dgq(hgq, s), dgk(hgk, s), dgv(hgv, s), dgb(hgb, s);
  SdpaBackwardArgs ba{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dro.data(), .grad_o = dgo.data(),
                      .lse = static_cast<const float*>(drl.data()), .grad_q = dgq.data(), .grad_k = dgk.data(),
                      .grad_v = dgv.data()};
  ba.bias = args.bias;
  ba.mask = args.mask;
  ba.alibi_slopes = args.alibi_slopes;
  if (g.grad_bias.rank) ba.grad_bias = dgb.data();
  ba.cu_seqlens_q = args.cu_seqlens_q;
  ba.cu_seqlens_k = args.cu_seqlens_k;
  ba.seed = kSeed;
  ba.offset = kOffset;
  auto verify_bwd = [&](const std::string& sku) {
    ASSERT_TRUE(dgq.download(hgq, s));
    ASSERT_TRUE(dgk.download(hgk, s));
    ASSERT_TRUE(dgv.download(hgv, s));
    if (g.grad_bias.rank) ASSERT_TRUE(dgb.download(hgb, s));
    if (!exact_check(c, sku)) return;
    EXPECT_TRUE(check_close(hgq, gwant->grad_q, sku + " grad_q " + g.to_string()));
    EXPECT_TRUE(check_close(hgk, gwant->grad_k, sku + " grad_k " + g.to_string()));
    EXPECT_TRUE(check_close(hgv, gwant->grad_v, sku + " grad_v " + g.to_string()));
    if (g.grad_bias.rank) EXPECT_TRUE(check_close(hgb, gwant->grad_bias, sku + " grad_bias " + g.to_string()));
  };
  auto reset_bwd = [&] {
    dgq.poison(0xFF, s);
    dgk.poison(0xFF, s);
    dgv.poison(0xFF, s);
    dgb.poison(0xFF, s);
  };
  for_each_sku<SdpaBackwardPlan>(
      g, reset_bwd, [&](const SdpaBackwardPlan& p, Workspace ws) { return p.run(s, ws, ba); }, verify_bwd);
  FlashSdpaBackwardDescriptor fg;
  static_cast<SdpaBackwardDescriptor&>(fg) = g;
  if (auto fp = FlashSdpaBackwardPlan::select(s, fg); fp.has_value()) {
    reset_bwd();
    ASSERT_TRUE(fp->run(s, test_workspace(fp->workspace_size()), ba)) << fp->sku().name();
    verify_bwd("FlashSdpaBackwardPlan " + fp->sku().name());
  }
}

SdpaOptions causal(CausalAlign a) {
  SdpaOptions o;
  o.causal = true;
  o.align = a;
  return o;
}
SdpaOptions window(std::int64_t l, std::int64_t r, CausalAlign a = CausalAlign::kTopLeft) {
  SdpaOptions o;
  o.window_left = l;
  o.window_right = r;
  o.align = a;
  return o;
}
SdpaOptions softcap(double cap) {
  SdpaOptions o;
  o.softcap = cap;
  o.scale = 0.5;
  return o;
}
SdpaOptions dropout(double p, bool is_causal = false) {
  SdpaOptions o;
  o.dropout_p = p;
  o.causal = is_causal;
  return o;
}
SdpaOptions varlen() {
  SdpaOptions o;
  o.varlen = true;
  return o;
}

// The options and masks on small shapes: every dtype runs these.
std::vector<SdpaCase> option_cases() {
  const auto BR = CausalAlign::kBottomRight, TL = CausalAlign::kTopLeft;
  std::vector<SdpaCase> v;
  v.push_back({.name = "plain", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 33, .Skv = 47});
  v.push_back({.name = "causal_tl", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 40, .Skv = 70, .opt = causal(TL)});
  v.push_back({.name = "causal_br", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 40, .Skv = 70, .opt = causal(BR)});
  v.push_back({.name = "causal_br_sq_gt_skv", .B = 1, .Hq = 2, .Hkv = 1, .Sq = 50, .Skv = 20, .opt = causal(BR)});
  // Whole 128-row query blocks that see no key (rows < 280) next to blocks that do: the
  // persistent flash_wgmma_ws walks both kinds of work tile in one CTA.
  v.push_back({.name = "causal_br_empty_blocks", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 300, .Skv = 20, .opt = causal(BR)});
  v.push_back({.name = "window", .B = 1, .Hq = 4, .Hkv = 2, .Sq = 64, .Skv = 64, .opt = window(8, 3)});
  v.push_back({.name = "window_left_br", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 30, .Skv = 90, .opt = window(16, -1, BR)});
  v.push_back({.name = "gqa4", .B = 2, .Hq = 8, .Hkv = 2, .Sq = 33, .Skv = 33, .opt = causal(BR)});
  v.push_back({.name = "mqa", .B = 1, .Hq = 6, .Hkv = 1, .Sq = 20, .Skv = 45});
  v.push_back({.name = "bias_full_grad", .B = 2, .Hq = 2, .Hkv = 1, .Sq = 19, .Skv = 37, .bias = {2, 2, 19, 37}, .grad_bias = true});
  v.push_back({.name = "bias_bcast_grad", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 19, .Skv = 37, .bias = {4, 1, 37}, .bias_f32 = false,
               .grad_bias = true});
  v.push_back({.name = "bias_rows", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 21, .Skv = 40, .opt = causal(TL), .bias = {21, 40}});
  // -inf in the additive bias (the mask form fused kernels take): single entries and fully
  // masked query rows (o = 0, lse = -inf; the gradient of a -inf entry is 0), per-head and
  // broadcast [Sq, Skv] with its summed gradient.
  v.push_back({.name = "bias_neg_inf_rows", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 40, .Skv = 64, .opt = causal(TL),
               .bias = {1, 4, 40, 64}, .bias_f32 = false, .bias_neg_inf = true});
  v.push_back({.name = "bias_neg_inf_bcast_grad", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 40, .Skv = 64, .bias = {40, 64},
               .grad_bias = true, .bias_neg_inf = true});
  v.push_back({.name = "mask_holes", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 24, .Skv = 50, .mask = {2, 1, 24, 50}, .mask_holes = true});
  v.push_back({.name = "mask_bias_alibi", .B = 1, .Hq = 4, .Hkv = 4, .Sq = 30, .Skv = 30, .opt = causal(TL), .bias = {1, 4, 30, 30},
               .grad_bias = true, .mask = {30, 30}, .alibi = 1});
  v.push_back({.name = "alibi_per_batch", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 17, .Skv = 64, .opt = causal(BR), .alibi = 2});
  v.push_back({.name = "softcap", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 40, .Skv = 40, .opt = softcap(5.0)});
  v.push_back({.name = "dropout", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 37, .Skv = 50, .opt = dropout(0.2)});
  v.push_back({.name = "dropout_causal", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 64, .Skv = 64, .opt = dropout(0.5, true)});
  v.push_back({.name = "strided", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 33, .Skv = 45, .opt = causal(BR), .strided = true});
  v.push_back({.name = "seq1", .B = 3, .Hq = 2, .Hkv = 2, .Sq = 1, .Skv = 1});
  // Dense length 17 that every SKU takes (flash_wgmma_ws and cudnn_fused saw 17 only in other
  // shapes, flash_wgmma only as one varlen sequence).
  v.push_back({.name = "s17", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 17, .Skv = 17, .opt = causal(TL)});
  v.push_back({.name = "decode_like", .B = 2, .Hq = 8, .Hkv = 2, .Sq = 1, .Skv = 129, .opt = causal(BR)});
  v.push_back({.name = "varlen", .Hq = 4, .Hkv = 2, .Sq = 40, .Skv = 50, .opt = varlen(), .seqlens_q = {17, 0, 40, 5},
               .seqlens_k = {30, 10, 50, 0}});
  SdpaOptions vc = varlen();
  vc.causal = true;
  vc.align = BR;
  v.push_back({.name = "varlen_causal_br", .Hq = 2, .Hkv = 1, .Sq = 33, .Skv = 33, .opt = vc, .alibi = 2,
               .seqlens_q = {1, 33, 0, 20}, .seqlens_k = {9, 33, 4, 20}});
  // `baracuda check`'s varlen problem: top-left causal with Sq_b > Skv_b, a sequence without
  // queries, Sq_b < Skv_b (each diagonal starts at its own sequence's first token).
  SdpaOptions vt = varlen();
  vt.causal = true;
  v.push_back({.name = "varlen_causal_tl", .Hq = 4, .Hkv = 2, .Sq = 25, .Skv = 30, .opt = vt, .seqlens_q = {15, 0, 25},
               .seqlens_k = {10, 5, 30}});
  SdpaOptions vd = varlen();
  vd.dropout_p = 0.25;
  vd.window_left = 7;
  v.push_back({.name = "varlen_dropout_window", .Hq = 2, .Hkv = 2, .Sq = 30, .Skv = 30, .opt = vd, .seqlens_q = {30, 12},
               .seqlens_k = {25, 30}});
  return v;
}

// Head dims (the fused SKUs' 64..256, odd ones, d_k != d_v) and lengths 128 / 1000. f64 (the
// general SKU only, whose code paths do not depend on the dtype) takes a reduced list so that it
// runs quickly: head dims 64 / 128 / 256 and the odd ones, lengths 128 / 300.
std::vector<SdpaCase> size_cases(DType t) {
  const auto BR = CausalAlign::kBottomRight;
  const bool reduced = t == DType::kF64;
  const std::int64_t long_s = reduced ? 300 : 1000;
  std::vector<SdpaCase> v;
  for (std::int64_t dh : {64, 96, 128, 192, 256}) {
    if (reduced && (dh == 96 || dh == 192)) continue;
    v.push_back({.name = "d" + std::to_string(dh), .B = 1, .Hq = 4, .Hkv = 2, .Sq = 128, .Skv = 128, .Dk = dh, .Dv = dh,
                 .opt = causal(BR)});
  }
  v.push_back({.name = "d40", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 70, .Skv = 70, .Dk = 40, .Dv = 40});
  v.push_back({.name = "dk72_dv40", .B = 1, .Hq = 4, .Hkv = 1, .Sq = 50, .Skv = 80, .Dk = 72, .Dv = 40});
  v.push_back({.name = "dk128_dv64", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 64, .Skv = 64, .Dk = 128, .Dv = 64, .opt = causal(BR)});
  v.push_back({.name = "s" + std::to_string(long_s), .B = 1, .Hq = 4, .Hkv = 2, .Sq = long_s, .Skv = long_s, .Dk = 64,
               .Dv = 64});
  v.push_back({.name = "s" + std::to_string(long_s) + "_causal", .B = 1, .Hq = 2, .Hkv = 2, .Sq = long_s, .Skv = long_s,
               .Dk = 128, .Dv = 128, .opt = causal(BR)});
  return v;
}

class SdpaGpu : public ::testing::TestWithParam<DType> {};

TEST_P(SdpaGpu, OptionsForwardBackward) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : option_cases()) run_case(GetParam(), c);
}

TEST_P(SdpaGpu, HeadDimsAndLengths) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : size_cases(GetParam())) run_case(GetParam(), c);
}

INSTANTIATE_TEST_SUITE_P(Types, SdpaGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Sequence length 4096 once (bf16, causal, few heads), forward and backward.
TEST(SdpaGpuLong, Seq4096) {
  BARACUDA_REQUIRE_GPU();
  run_case(DType::kBF16, {.name = "s4096", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 4096, .Skv = 4096, .Dk = 64, .Dv = 64,
                          .opt = causal(CausalAlign::kBottomRight)});
}

// Dropout statistics and replay for every SKU: q = k = 0 (uniform p = 1 / Skv) and v = I
// (Dv = Skv), so o_ij = keep_ij / (Skv (1 - p)) exposes the mask. Kept fraction within 5
// sigma of 1 - p, kept values exact, same seed -> same bits (forward and backward), another
// seed -> another mask, the device {seed, offset} pointer overrides the host values; our SKUs
// also match the contract's rule element for element.
TEST(SdpaGpuDropout, StatisticsAndReplay) {
  BARACUDA_REQUIRE_GPU();
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(t));
    const std::int64_t B = 2, H = 4, Sq = 128, S = 64;
    const double p = 0.3;
    SdpaDescriptor d;
    d.q = TensorLayout::contiguous(t, {B, H, Sq, S});
    d.k = d.v = TensorLayout::contiguous(t, {B, H, S, S});
    d.o = TensorLayout::contiguous(t, {B, H, Sq, S});
    d.lse = TensorLayout::contiguous(DType::kF32, {B, H, Sq});
    d.options.dropout_p = p;
    HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o), ho2(d.o), hlse(d.lse);
    for (std::int64_t i = 0; i < d.v.numel(); ++i) hv.set(i, (i / S) % S == i % S ? 1.0 : 0.0);
    const Stream& s = test_stream();
    DeviceTensor dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dlse(hlse, s);
    const auto keep = reference::sdpa_dropout_keep(B, H, Sq, S, p, 11, 22);
    HostTensor hseed(TensorLayout::contiguous(DType::kI64, {2}, 8));
    hseed.set(0, 11);
    hseed.set(1, 22);
    DeviceTensor dseed(hseed, s);
    auto run = [&](const SdpaPlan& plan, std::uint64_t seed, HostTensor& out) {
      dout.poison(0xFF, s);
      SdpaArgs a{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .lse = static_cast<float*>(dlse.data())};
      a.seed = seed;
      a.offset = 22;
      EXPECT_TRUE(plan.run(s, test_workspace(plan.workspace_size()), a));
      EXPECT_TRUE(dout.download(out, s));
    };
    for (const SdpaPlan& plan : forced_plans<SdpaPlan>(d)) {
      SCOPED_TRACE(plan.sku().name());
      run(plan, 11, ho);
      run(plan, 11, ho2);
      EXPECT_EQ(std::memcmp(ho.storage(), ho2.storage(), ho.storage_bytes()), 0) << "same seed, different bits";
      const double kept_value = 1.0 / (static_cast<double>(S) * (1 - p));
      std::int64_t kept = 0, mismatch = 0, bad_value = 0;
      for (std::int64_t i = 0; i < d.o.numel(); ++i) {
        const double x = ho.get(i);
        const bool k = x != 0;
        kept += k;
        if (k && std::fabs(x - kept_value) > 1e-2 * kept_value) ++bad_value;
        if (k != (keep[static_cast<std::size_t>(i)] != 0)) ++mismatch;
      }
      const double n = static_cast<double>(d.o.numel()), frac = static_cast<double>(kept) / n;
      EXPECT_NEAR(frac, 1 - p, 5 * std::sqrt(p * (1 - p) / n));
      EXPECT_EQ(bad_value, 0);
      if (!is_cudnn(plan.sku().name())) EXPECT_EQ(mismatch, 0) << "our SKUs follow the contract's Philox rule";
      run(plan, 12, ho2);
      EXPECT_NE(std::memcmp(ho.storage(), ho2.storage(), ho.storage_bytes()), 0) << "another seed, same mask";
      // The device {seed, offset} overrides the host values (graph replays), on every SKU:
      // host seed 999 / offset 0 with the device pair {11, 22} gives seed 11's bits.
      dout.poison(0xFF, s);
      SdpaArgs a{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .lse = static_cast<float*>(dlse.data())};
      a.seed = 999;
      a.philox_seed_offset = static_cast<const std::uint64_t*>(dseed.data());
      ASSERT_TRUE(plan.run(s, test_workspace(plan.workspace_size()), a));
      ASSERT_TRUE(dout.download(ho2, s));
      EXPECT_EQ(std::memcmp(ho.storage(), ho2.storage(), ho.storage_bytes()), 0) << "philox_seed_offset not used";
    }
  }
}

// The backward replays the forward's mask: two runs with one seed give the same bits on
// every backward SKU (our general backward is deterministic by construction).
TEST(SdpaGpuDropout, BackwardReplay) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kBF16;
  SdpaBackwardDescriptor g;
  g.q = g.grad_q = g.o = g.grad_o = TensorLayout::contiguous(t, {1, 4, 96, 64});
  g.k = g.grad_k = g.v = g.grad_v = TensorLayout::contiguous(t, {1, 4, 80, 64});
  g.lse = TensorLayout::contiguous(DType::kF32, {1, 4, 96});
  g.options.dropout_p = 0.4;
  HostTensor hq(g.q), hk(g.k), hv(g.v), ho(g.o), hgo(g.o), hlse(g.lse), a1(g.grad_q), a2(g.grad_q);
  fill_random(hq, -2, 2);
  fill_random(hk, -1, 1);
  fill_random(hv, -1, 1);
  fill_random(ho, -1, 1);
  fill_random(hgo, -1, 1);
  fill_random(hlse, 3, 5);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dgo(hgo, s), dlse(hlse, s), gq(a1, s), gk(hk, s), gv(hv, s);
  SdpaBackwardArgs a{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .grad_o = dgo.data(),
                     .lse = static_cast<const float*>(dlse.data()), .grad_q = gq.data(), .grad_k = gk.data(),
                     .grad_v = gv.data()};
  a.seed = 5;
  for (const SdpaBackwardPlan& p : forced_plans<SdpaBackwardPlan>(g)) {
    SCOPED_TRACE(p.sku().name());
    const SdpaBackwardPlan* plan = &p;
    for (HostTensor* out : {&a1, &a2}) {
      gq.poison(0xFF, s);
      ASSERT_TRUE(plan->run(s, test_workspace(plan->workspace_size()), a));
      ASSERT_TRUE(gq.download(*out, s));
    }
    if (p.sku().precision.deterministic)
      EXPECT_EQ(std::memcmp(a1.storage(), a2.storage(), a1.storage_bytes()), 0) << "grad_q differs between replays";
  }
}

// Run-time refusals before any launch; every output keeps its poison.
TEST(SdpaGpuRefusals, LeaveOutputsUntouched) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kF32;
  const auto q = TensorLayout::contiguous(t, {1, 2, 16, 32}), kv = TensorLayout::contiguous(t, {1, 2, 24, 32});
  const auto lse = TensorLayout::contiguous(DType::kF32, {1, 2, 16});
  SdpaDescriptor d;
  d.q = d.o = q;
  d.k = d.v = kv;
  d.lse = lse;
  SdpaBackwardDescriptor g;
  g.q = g.o = g.grad_o = g.grad_q = q;
  g.k = g.v = g.grad_k = g.grad_v = kv;
  g.lse = lse;
  PlanPreference pref;
  pref.force_sku = "sdpa.*.general*";
  auto fwd = SdpaPlan::select(test_stream(), d, pref);
  auto bwd = SdpaBackwardPlan::select(test_stream(), g, pref);
  ASSERT_TRUE(fwd && bwd);
  const std::size_t need = bwd->workspace_size();
  ASSERT_GT(need, 0u);
  HostTensor hq(q), hkv(kv), hl(lse);
  fill_random(hq, -1, 1);
  fill_random(hkv, -1, 1);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hkv, s), dv(hkv, s), dobw(hq, s), dgo(hq, s), dl(hl, s);
  Untouched o(q), ol(lse), gq(q), gk(kv), gv(kv);
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const SdpaArgs fa{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = o.data(), .lse = static_cast<float*>(ol.data())};
  const SdpaBackwardArgs ba{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dobw.data(), .grad_o = dgo.data(),
                            .lse = static_cast<const float*>(dl.data()), .grad_q = gq.data(), .grad_k = gk.data(),
                            .grad_v = gv.data()};
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  auto off = [](const void* p, int bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; };
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w2) { return bwd->run(s, w2, ba); }, ws, need);
  rows.insert(rows.end(), {
      {"forward null q", [&] { auto a = fa; a.q = nullptr; return fwd->run(s, {}, a); }, kBad, "args.q is null"},
      {"forward null o", [&] { auto a = fa; a.o = nullptr; return fwd->run(s, {}, a); }, kBad, "args.o is null"},
      {"forward misaligned k", [&] { auto a = fa; a.k = off(dk.data(), 4); return fwd->run(s, {}, a); }, kMis,
       "not aligned to k.alignment = 16"},
      {"forward o over q", [&] { auto a = fa; a.o = off(dq.data(), 64); return fwd->run(s, {}, a); }, kBad,
       "args.o overlaps args.q"},
      {"forward lse inside o", [&] { auto a = fa; a.lse = static_cast<float*>(o.data()); return fwd->run(s, {}, a); }, kBad,
       "args.o and args.lse overlap"},
      {"forward bias without descriptor", [&] { auto a = fa; a.bias = dq.data(); return fwd->run(s, {}, a); }, kBad,
       "args.bias is set but the descriptor has no bias"},
      {"forward cu_seqlens on dense", [&] {
         auto a = fa;
         a.cu_seqlens_q = static_cast<const std::int32_t*>(dl.data());
         return fwd->run(s, {}, a);
       }, kBad, "args.cu_seqlens_q is set but options.varlen = false"},
      {"forward misaligned seed pointer", [&] {
         auto a = fa;
         a.philox_seed_offset = reinterpret_cast<const std::uint64_t*>(off(dl.data(), 4));
         return fwd->run(s, {}, a);
       }, kMis, "args.philox_seed_offset"},
      {"backward null lse", [&] { auto a = ba; a.lse = nullptr; return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.lse is null"},
      {"backward misaligned grad_v", [&] { auto a = ba; a.grad_v = off(gv.data(), 8); return bwd->run(s, {ws.data, need}, a); },
       kMis, "not aligned to grad_v.alignment = 16"},
      {"backward grad_k = grad_v", [&] { auto a = ba; a.grad_v = gk.data(); return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.grad_k and args.grad_v overlap"},
      {"backward grad_q over grad_o", [&] { auto a = ba; a.grad_q = dgo.data(); return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.grad_q overlaps args.grad_o"},
  });
  expect_run_refusals(rows, {&o, &ol, &gq, &gk, &gv});
}

// Varlen: null cu_seqlens are refused; outputs untouched.
TEST(SdpaGpuRefusals, VarlenNullSeqlens) {
  BARACUDA_REQUIRE_GPU();
  SdpaDescriptor d;
  d.q = d.o = TensorLayout::contiguous(DType::kBF16, {30, 2, 64});
  d.k = d.v = TensorLayout::contiguous(DType::kBF16, {40, 2, 64});
  d.options.varlen = true;
  d.options.batch = 2;
  d.options.max_seqlen_q = 20;
  d.options.max_seqlen_k = 30;
  auto fwd = SdpaPlan::select(test_stream(), d);
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  HostTensor hq(d.q), hk(d.k);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hk, s);
  Untouched o(d.o);
  const HostTensor hcu = i32_tensor({0, 10, 30});
  DeviceTensor dcu(hcu, s);
  SdpaArgs a{.q = dq.data(), .k = dk.data(), .v = dk.data(), .o = o.data()};
  a.cu_seqlens_q = static_cast<const std::int32_t*>(dcu.data());
  std::vector<RunRefusal> rows = {
      {"null cu_seqlens_k", [&] { return fwd->run(s, test_workspace(fwd->workspace_size()), a); }, Code::kInvalidArgument,
       "args.cu_seqlens_k is null"},
  };
  expect_run_refusals(rows, {&o});
}

// ------------------------------------------------------------------------ run-time refusal tables, every SKU
// bf16 attention, q / o [1, 4, 64, 64], k / v [1, 2, 64, 64] (GQA 2), lse f32 [1, 4, 64]; with
// `extras` also an additive bf16 bias [64, 64] and dropout 0.1 (the wgmma SKUs refuse those;
// cuDNN's forward then has aux workspace for its seed). Every SKU of PlanT that accepts it
// (general, flash_mma, flash_wgmma_ws / flash_wgmma on sm_90, cudnn_fused*), forced in turn,
// refuses null, misaligned and aliased pointers and, where it takes workspace, a too-small,
// null or misaligned one, each with its code and field, before any launch: the outputs keep
// their poison. A moved pointer always lands inside the allocation it aliases (so the refusal
// names that operand and no neighbouring allocation).
SdpaDescriptor refusal_descriptor(bool extras) {
  SdpaDescriptor d;
  d.q = d.o = TensorLayout::contiguous(DType::kBF16, {1, 4, 64, 64});
  d.k = d.v = TensorLayout::contiguous(DType::kBF16, {1, 2, 64, 64});
  d.lse = TensorLayout::contiguous(DType::kF32, {1, 4, 64});
  if (extras) {
    d.bias = TensorLayout::contiguous(DType::kBF16, {64, 64});
    d.options.dropout_p = 0.1;
  }
  return d;
}

void* moved(const void* p, int bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; }

// Runs `table` on every SKU of PlanT that accepts `d`; returns the SKU names run.
template <class PlanT>
std::vector<std::string> run_on_every_sku(const typename PlanT::Descriptor& d, const typename PlanT::Arguments& ok,
                                          const std::vector<ArgRefusalRow<typename PlanT::Arguments>>& table,
                                          const std::vector<Untouched*>& outputs,
                                          const std::function<void(const std::string& impl, std::size_t need)>& check_workspace) {
  using Args = typename PlanT::Arguments;
  std::vector<std::string> ran;
  for (const PlanT& plan : forced_plans<PlanT>(d)) {
    SCOPED_TRACE(plan.sku().name());
    const std::size_t need = plan.workspace_size();
    check_workspace(plan.sku().impl, need);
    expect_arg_run_refusals<Args>(
        plan.sku().name(), ok, [&](Workspace w, const Args& a) { return plan.run(test_stream(), w, a); },
        test_workspace(need + kWorkspaceAlignment), need, table, outputs);
    ran.push_back(plan.sku().name());
  }
  return ran;
}

template <class PlanT>
std::vector<std::string> forward_refusal_table(bool extras) {
  SCOPED_TRACE(extras ? "bias + dropout" : "plain");
  const SdpaDescriptor sd = refusal_descriptor(extras);
  typename PlanT::Descriptor d;
  static_cast<SdpaDescriptor&>(d) = sd;
  HostTensor hq(sd.q), hkv(sd.k), hb(extras ? sd.bias : TensorLayout::contiguous(DType::kBF16, {1}));
  fill_random(hq, -1, 1);
  fill_random(hkv, -1, 1);
  fill_random(hb, -1, 1);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hkv, s), dv(hkv, s), db(hb, s);
  Untouched o(sd.o), lse(sd.lse);
  SdpaArgs ok{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = o.data(), .lse = static_cast<float*>(lse.data())};
  if (extras) ok.bias = db.data();
  const Code bad = Code::kInvalidArgument, mis = Code::kMisaligned;
  std::vector<ArgRefusalRow<SdpaArgs>> table = {
      {"null q", [](SdpaArgs& a) { a.q = nullptr; }, bad, "args.q is null"},
      {"null k", [](SdpaArgs& a) { a.k = nullptr; }, bad, "args.k is null"},
      {"null v", [](SdpaArgs& a) { a.v = nullptr; }, bad, "args.v is null"},
      {"null o", [](SdpaArgs& a) { a.o = nullptr; }, bad, "args.o is null"},
      {"null lse", [](SdpaArgs& a) { a.lse = nullptr; }, bad, "args.lse is null"},
      {"misaligned q", [](SdpaArgs& a) { a.q = moved(a.q, 2); }, mis, "is not aligned to q.alignment = 16 bytes"},
      {"misaligned v", [](SdpaArgs& a) { a.v = moved(a.v, 8); }, mis, "is not aligned to v.alignment = 16 bytes"},
      {"misaligned o", [](SdpaArgs& a) { a.o = moved(a.o, 4); }, mis, "is not aligned to o.alignment = 16 bytes"},
      {"misaligned lse", [](SdpaArgs& a) { a.lse = static_cast<float*>(moved(a.lse, 4)); }, mis,
       "is not aligned to lse.alignment = 16 bytes"},
      {"o partly over q", [](SdpaArgs& a) { a.o = moved(a.q, 64); }, bad, "args.o overlaps args.q"},
      {"k inside o", [](SdpaArgs& a) { a.k = a.o; }, bad, "args.o overlaps args.k"},
      {"v inside o", [](SdpaArgs& a) { a.v = moved(a.o, 1024); }, bad, "args.o overlaps args.v"},
      {"lse inside o", [](SdpaArgs& a) { a.lse = static_cast<float*>(a.o); }, bad, "args.o and args.lse overlap"},
      {"lse inside q", [](SdpaArgs& a) { a.lse = static_cast<float*>(const_cast<void*>(a.q)); }, bad, "args.lse overlaps args.q"},
  };
  if (extras)
    table.insert(table.end(), {
        {"null bias", [](SdpaArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
        {"misaligned bias", [](SdpaArgs& a) { a.bias = moved(a.bias, 2); }, mis, "is not aligned to bias.alignment = 16 bytes"},
        {"bias inside o", [](SdpaArgs& a) { a.bias = a.o; }, bad, "args.o overlaps args.bias"},
    });
  // Workspace: none for general, flash_mma and flash_wgmma; flash_wgmma_ws's tile counter;
  // cuDNN's aux (the dropout seed) and graph buffers.
  auto check_workspace = [&](const std::string& impl, std::size_t need) {
    if (impl == "general" || impl == "flash_mma" || impl == "flash_wgmma") EXPECT_EQ(need, 0u);
    if (impl == "flash_wgmma_ws" || (impl == "cudnn_fused" && extras)) EXPECT_GT(need, 0u);
  };
  return run_on_every_sku<PlanT>(d, ok, table, {&o, &lse}, check_workspace);
}

template <class PlanT>
std::vector<std::string> backward_refusal_table(bool extras) {
  SCOPED_TRACE(extras ? "bias + dropout" : "plain");
  const SdpaBackwardDescriptor sg = reference::sdpa_backward_of(refusal_descriptor(extras));
  typename PlanT::Descriptor g;
  static_cast<SdpaBackwardDescriptor&>(g) = sg;
  HostTensor hq(sg.q), hkv(sg.k), hl(sg.lse), hb(extras ? sg.bias : TensorLayout::contiguous(DType::kBF16, {1}));
  fill_random(hq, -1, 1);
  fill_random(hkv, -1, 1);
  fill_random(hl, 1, 2);
  fill_random(hb, -1, 1);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hkv, s), dv(hkv, s), dout(hq, s), dgo(hq, s), dl(hl, s), db(hb, s);
  Untouched gq(sg.grad_q), gk(sg.grad_k), gv(sg.grad_v);
  SdpaBackwardArgs ok{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .grad_o = dgo.data(),
                      .lse = static_cast<const float*>(dl.data()), .grad_q = gq.data(), .grad_k = gk.data(),
                      .grad_v = gv.data()};
  if (extras) ok.bias = db.data();
  const Code bad = Code::kInvalidArgument, mis = Code::kMisaligned;
  using A = SdpaBackwardArgs;
  std::vector<ArgRefusalRow<A>> table = {
      {"null q", [](A& a) { a.q = nullptr; }, bad, "args.q is null"},
      {"null k", [](A& a) { a.k = nullptr; }, bad, "args.k is null"},
      {"null v", [](A& a) { a.v = nullptr; }, bad, "args.v is null"},
      {"null o", [](A& a) { a.o = nullptr; }, bad, "args.o is null"},
      {"null grad_o", [](A& a) { a.grad_o = nullptr; }, bad, "args.grad_o is null"},
      {"null lse", [](A& a) { a.lse = nullptr; }, bad, "args.lse is null"},
      {"null grad_q", [](A& a) { a.grad_q = nullptr; }, bad, "args.grad_q is null"},
      {"null grad_k", [](A& a) { a.grad_k = nullptr; }, bad, "args.grad_k is null"},
      {"null grad_v", [](A& a) { a.grad_v = nullptr; }, bad, "args.grad_v is null"},
      {"misaligned k", [](A& a) { a.k = moved(a.k, 2); }, mis, "is not aligned to k.alignment = 16 bytes"},
      {"misaligned grad_o", [](A& a) { a.grad_o = moved(a.grad_o, 4); }, mis, "is not aligned to grad_o.alignment = 16 bytes"},
      {"misaligned lse", [](A& a) { a.lse = static_cast<const float*>(moved(a.lse, 4)); }, mis,
       "is not aligned to lse.alignment = 16 bytes"},
      {"misaligned grad_q", [](A& a) { a.grad_q = moved(a.grad_q, 8); }, mis, "is not aligned to grad_q.alignment = 16 bytes"},
      {"misaligned grad_v", [](A& a) { a.grad_v = moved(a.grad_v, 2); }, mis, "is not aligned to grad_v.alignment = 16 bytes"},
      {"q inside grad_q", [](A& a) { a.q = a.grad_q; }, bad, "args.grad_q overlaps args.q"},
      {"grad_k partly over v", [](A& a) { a.grad_k = moved(a.v, 32); }, bad, "args.grad_k overlaps args.v"},
      {"grad_v = grad_k", [](A& a) { a.grad_v = a.grad_k; }, bad, "args.grad_k and args.grad_v overlap"},
      {"lse inside grad_v", [](A& a) { a.lse = static_cast<const float*>(a.grad_v); }, bad, "args.grad_v overlaps args.lse"},
      {"grad_o inside grad_q", [](A& a) { a.grad_o = a.grad_q; }, bad, "args.grad_q overlaps args.grad_o"},
      {"o partly over grad_q", [](A& a) { a.o = moved(a.grad_q, 128); }, bad, "args.grad_q overlaps args.o"},
  };
  if (extras)
    table.insert(table.end(), {
        {"null bias", [](A& a) { a.bias = nullptr; }, bad, "args.bias is null"},
        {"misaligned bias", [](A& a) { a.bias = moved(a.bias, 4); }, mis, "is not aligned to bias.alignment = 16 bytes"},
        {"bias inside grad_q", [](A& a) { a.bias = a.grad_q; }, bad, "args.grad_q overlaps args.bias"},
    });
  // Every backward SKU takes workspace (delta per query row; the atomic dQ accumulator; cuDNN's
  // packed lse copy and graph buffers), so the workspace rows always run.
  auto check_workspace = [](const std::string&, std::size_t need) { EXPECT_GT(need, 0u); };
  return run_on_every_sku<PlanT>(g, ok, table, {&gq, &gk, &gv}, check_workspace);
}

bool any_of(const std::vector<std::string>& skus, const char* impl) {
  for (const auto& n : skus)
    if (n.find(impl) != std::string::npos) return true;
  return false;
}

TEST(SdpaGpuRefusals, RunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  for (bool extras : {false, true}) {
    const auto f = forward_refusal_table<SdpaPlan>(extras);
    const auto b = backward_refusal_table<SdpaBackwardPlan>(extras);
    for (const char* impl : {".general[", ".flash_mma", ".cudnn_fused"}) {
      EXPECT_TRUE(any_of(f, impl)) << "forward: no " << impl << " SKU ran";
      EXPECT_TRUE(any_of(b, impl)) << "backward: no " << impl << " SKU ran";
    }
  }
}

// The Flash plans (the fused SKUs only): the cuDNN SKU and ours each refuse the whole table.
TEST(FlashSdpaGpuRefusals, RunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  for (bool extras : {false, true}) {
    const auto f = forward_refusal_table<FlashSdpaPlan>(extras);
    const auto b = backward_refusal_table<FlashSdpaBackwardPlan>(extras);
    for (const char* impl : {".flash_mma", ".cudnn_fused"}) {
      EXPECT_TRUE(any_of(f, impl)) << "forward: no " << impl << " SKU ran";
      EXPECT_TRUE(any_of(b, impl)) << "backward: no " << impl << " SKU ran";
    }
    EXPECT_FALSE(any_of(f, ".general[")) << "the Flash plan ran a general SKU";
    if (test_caps().sm >= 90 && !extras) EXPECT_TRUE(any_of(f, ".flash_wgmma_ws")) << "no flash_wgmma_ws SKU ran";
  }
}

// The optional operands on the general SKU (the one SKU that takes them all): bias, bool mask,
// ALiBi slopes and the bias gradient; then the varlen cu_seqlens under every SKU that takes
// varlen. Null, misaligned and aliased; the outputs keep their poison.
TEST(SdpaGpuRefusals, OptionalOperandsRunTable) {
  BARACUDA_REQUIRE_GPU();
  SdpaDescriptor d;
  d.q = d.o = TensorLayout::contiguous(DType::kF32, {2, 4, 16, 32});
  d.k = d.v = TensorLayout::contiguous(DType::kF32, {2, 2, 24, 32});
  d.lse = TensorLayout::contiguous(DType::kF32, {2, 4, 16});
  d.bias = TensorLayout::contiguous(DType::kF32, {16, 24});
  d.mask = TensorLayout::contiguous(DType::kU8, {2, 1, 16, 24});
  d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {4});
  const SdpaBackwardDescriptor g = reference::sdpa_backward_of(d, true);
  PlanPreference pref;
  pref.force_sku = "sdpa.*.general*";
  auto fwd = SdpaPlan::select(test_stream(), d, pref);
  auto bwd = SdpaBackwardPlan::select(test_stream(), g, pref);
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  ASSERT_TRUE(bwd.has_value()) << bwd.error().to_string();
  HostTensor hq(d.q), hkv(d.k), hl(d.lse), hb(d.bias), hm(d.mask), ha(d.alibi_slopes);
  for (HostTensor* h : {&hq, &hkv, &hl, &hb, &ha}) fill_random(*h, 0.1, 1);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hkv, s), dv(hkv, s), dout(hq, s), dgo(hq, s), dl(hl, s), db(hb, s), dm(hm, s), da(ha, s);
  Untouched o(d.o), lse(d.lse), gq(g.grad_q), gk(g.grad_k), gv(g.grad_v), gb(g.grad_bias);
  const Code bad = Code::kInvalidArgument, mis = Code::kMisaligned;
  const auto* mask = static_cast<const std::uint8_t*>(dm.data());
  const auto* alibi = static_cast<const float*>(da.data());
  const SdpaArgs fa{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = o.data(), .lse = static_cast<float*>(lse.data()),
                    .bias = db.data(), .mask = mask, .alibi_slopes = alibi};
  expect_arg_run_refusals<SdpaArgs>(
      "forward", fa, [&](Workspace w, const SdpaArgs& a) { return fwd->run(s, w, a); },
      test_workspace(fwd->workspace_size() + kWorkspaceAlignment), fwd->workspace_size(),
      {
          {"null bias", [](SdpaArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
          {"null mask", [](SdpaArgs& a) { a.mask = nullptr; }, bad, "args.mask is null"},
          {"null alibi_slopes", [](SdpaArgs& a) { a.alibi_slopes = nullptr; }, bad, "args.alibi_slopes is null"},
          {"misaligned bias", [](SdpaArgs& a) { a.bias = moved(a.bias, 4); }, mis, "is not aligned to bias.alignment = 16 bytes"},
          {"misaligned mask", [](SdpaArgs& a) { a.mask = static_cast<const std::uint8_t*>(moved(a.mask, 1)); }, mis,
           "is not aligned to mask.alignment = 16 bytes"},
          {"misaligned alibi_slopes", [](SdpaArgs& a) { a.alibi_slopes = static_cast<const float*>(moved(a.alibi_slopes, 4)); },
           mis, "is not aligned to alibi_slopes.alignment = 16 bytes"},
          {"mask inside o", [](SdpaArgs& a) { a.mask = static_cast<const std::uint8_t*>(a.o); }, bad, "args.o overlaps args.mask"},
          {"alibi_slopes inside lse", [](SdpaArgs& a) { a.alibi_slopes = a.lse; }, bad, "args.lse overlaps args.alibi_slopes"},
          {"bias inside o", [](SdpaArgs& a) { a.bias = moved(a.o, 256); }, bad, "args.o overlaps args.bias"},
      },
      {&o, &lse});
  SdpaBackwardArgs ba{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .grad_o = dgo.data(),
                      .lse = static_cast<const float*>(dl.data()), .grad_q = gq.data(), .grad_k = gk.data(),
                      .grad_v = gv.data(), .bias = db.data(), .mask = mask, .alibi_slopes = alibi, .grad_bias = gb.data()};
  using A = SdpaBackwardArgs;
  expect_arg_run_refusals<A>(
      "backward", ba, [&](Workspace w, const A& a) { return bwd->run(s, w, a); },
      test_workspace(bwd->workspace_size() + kWorkspaceAlignment), bwd->workspace_size(),
      {
          {"null grad_bias", [](A& a) { a.grad_bias = nullptr; }, bad, "args.grad_bias is null"},
          {"null mask", [](A& a) { a.mask = nullptr; }, bad, "args.mask is null"},
          {"misaligned grad_bias", [](A& a) { a.grad_bias = moved(a.grad_bias, 4); }, mis,
           "is not aligned to grad_bias.alignment = 16 bytes"},
          {"misaligned alibi_slopes", [](A& a) { a.alibi_slopes = static_cast<const float*>(moved(a.alibi_slopes, 8)); }, mis,
           "is not aligned to alibi_slopes.alignment = 16 bytes"},
          {"grad_bias inside grad_q", [](A& a) { a.grad_bias = a.grad_q; }, bad, "args.grad_q and args.grad_bias overlap"},
          {"bias inside grad_bias", [](A& a) { a.bias = a.grad_bias; }, bad, "args.grad_bias overlaps args.bias"},
          {"mask inside grad_k", [](A& a) { a.mask = static_cast<const std::uint8_t*>(a.grad_k); }, bad,
           "args.grad_k overlaps args.mask"},
          {"alibi_slopes inside grad_v", [](A& a) { a.alibi_slopes = static_cast<const float*>(a.grad_v); }, bad,
           "args.grad_v overlaps args.alibi_slopes"},
      },
      {&gq, &gk, &gv, &gb});

  // varlen (f16 d64: general, flash_mma and, on sm_90, cudnn_fused take it; each forced):
  // cu_seqlens (i32 [B + 1], 4-byte aligned) null, misaligned, inside an output.
  SdpaDescriptor v;
  v.q = v.o = TensorLayout::contiguous(DType::kF16, {30, 2, 64});
  v.k = v.v = TensorLayout::contiguous(DType::kF16, {40, 2, 64});
  v.lse = TensorLayout::contiguous(DType::kF32, {2, 30});
  v.options.varlen = true;
  v.options.batch = 2;
  v.options.max_seqlen_q = 20;
  v.options.max_seqlen_k = 30;
  const SdpaBackwardDescriptor vg = reference::sdpa_backward_of(v);
  HostTensor hvq(v.q), hvk(v.k), hvl(v.lse);
  const HostTensor hcq = i32_tensor({0, 10, 30}), hck = i32_tensor({0, 30, 40});
  DeviceTensor vq(hvq, s), vk(hvk, s), vdo(hvq, s), vl(hvl, s), cq(hcq, s), ck(hck, s);
  Untouched vo(v.o), vlse(v.lse), vgq(vg.grad_q), vgk(vg.grad_k), vgv(vg.grad_v);
  const auto* cuq = static_cast<const std::int32_t*>(cq.data());
  const auto* cuk = static_cast<const std::int32_t*>(ck.data());
  const SdpaArgs va{.q = vq.data(), .k = vk.data(), .v = vk.data(), .o = vo.data(), .lse = static_cast<float*>(vlse.data()),
                    .cu_seqlens_q = cuq, .cu_seqlens_k = cuk};
  const std::vector<ArgRefusalRow<SdpaArgs>> vf_rows = {
      {"null cu_seqlens_q", [](SdpaArgs& a) { a.cu_seqlens_q = nullptr; }, bad, "args.cu_seqlens_q is null (options.varlen = true)"},
      {"misaligned cu_seqlens_q", [](SdpaArgs& a) { a.cu_seqlens_q = static_cast<const std::int32_t*>(moved(a.cu_seqlens_q, 2)); },
       mis, "is not aligned to cu_seqlens_q.alignment = 4 bytes"},
      {"cu_seqlens_k inside o", [](SdpaArgs& a) { a.cu_seqlens_k = static_cast<const std::int32_t*>(a.o); }, bad,
       "args.o overlaps args.cu_seqlens_k"},
  };
  const auto vf = run_on_every_sku<SdpaPlan>(v, va, vf_rows, {&vo, &vlse}, [](const std::string&, std::size_t) {});
  EXPECT_TRUE(any_of(vf, ".general[") && any_of(vf, ".flash_mma"));
  const SdpaBackwardArgs vba{.q = vq.data(), .k = vk.data(), .v = vk.data(), .o = vdo.data(), .grad_o = vdo.data(),
                             .lse = static_cast<const float*>(vl.data()), .grad_q = vgq.data(), .grad_k = vgk.data(),
                             .grad_v = vgv.data(), .cu_seqlens_q = cuq, .cu_seqlens_k = cuk};
  const std::vector<ArgRefusalRow<A>> vb_rows = {
      {"null cu_seqlens_k", [](A& a) { a.cu_seqlens_k = nullptr; }, bad, "args.cu_seqlens_k is null (options.varlen = true)"},
      {"misaligned cu_seqlens_k", [](A& a) { a.cu_seqlens_k = static_cast<const std::int32_t*>(moved(a.cu_seqlens_k, 1)); }, mis,
       "is not aligned to cu_seqlens_k.alignment = 4 bytes"},
      {"cu_seqlens_q inside grad_q", [](A& a) { a.cu_seqlens_q = static_cast<const std::int32_t*>(a.grad_q); }, bad,
       "args.grad_q overlaps args.cu_seqlens_q"},
  };
  const auto vb = run_on_every_sku<SdpaBackwardPlan>(vg, vba, vb_rows, {&vgq, &vgk, &vgv}, [](const std::string&, std::size_t) {});
  EXPECT_TRUE(any_of(vb, ".general[") && any_of(vb, ".flash_mma"));
}

// ------------------------------------------------------------------------ the e4m3 forward
// SdpaPlan / FlashSdpaPlan with e4m3 q, k, v, o (per-tensor descales, scale_o, amax_o) against
// reference::sdpa_fp8 (attention in double on stored * descale). Fresh random real values
// quantized with amax / 448 descales (rounded to f32: the device reads f32 scalars); scale_o =
// headroom * 448 / amax of the exact o. Every SKU that accepts e4m3 is forced (fp8_dequant
// only, for now), through both plans, with the inner bf16 plan steered by skip_skus (its
// default, cuDNN where it accepts; our flash kernels; SdpaPlan's general kernels). Checks: o read
// back as stored / scale_o with the family's rule against the naive twin (bf16 dequant, the bf16
// attention twin, e4m3 quantize of o), every stored code finite and |.| <= 448 (satfinite; a
// saturating case too), lse as the bf16 path checks it, amax_o bit-exact against max |o| of the
// inner plan's bf16 o (the workspace's o region, docs/attention.md) and within the reference's
// bound, amax untouched when not asked for, guard bytes; dropout exact on our inner SKUs
// (cuDNN's generator: replay only), replay on every variant.

struct Fp8Case {
  std::string name;
  std::int64_t B = 1, Hq = 2, Hkv = 2, Sq = 17, Skv = 17, D = 64;
  SdpaOptions opt;
  bool bias = false;        // f32 [Sq, Skv]
  bool strided = false;     // [B, S, H, D] memory viewed as [B, H, S, D] (q, k, v and o)
  double headroom = 0.9;    // scale_o = headroom * 448 / amax_o; > 1 saturates the largest values
  std::vector<std::int32_t> seqlens_q, seqlens_k;  // varlen
};

TensorLayout fp8_operand(const Fp8Case& c, std::int64_t H, std::int64_t S, std::int64_t tokens) {
  const DType t = DType::kE4M3;
  if (c.opt.varlen) return TensorLayout::contiguous(t, {tokens, H, c.D});
  if (c.strided) return TensorLayout::strided(t, {c.B, H, S, c.D}, {S * H * c.D, c.D, H * c.D, 1});
  return TensorLayout::contiguous(t, {c.B, H, S, c.D});
}

HostTensor f32_scalar(double v) {
  HostTensor h(TensorLayout::contiguous(DType::kF32, {1}, 4));
  h.set(0, v);
  return h;
}

// Real values uniform in [-r, r] stored as e4m3 with a per-tensor descale = amax / 448 (as an
// f32, the value the device reads); returns the descale.
double quantize_random(HostTensor& h, double r) {
  const std::int64_t n = h.layout().numel();
  std::uniform_real_distribution<double> u(-r, r);
  std::vector<double> x(static_cast<std::size_t>(n));
  double amax = 0;
  for (auto& v : x) amax = std::max(amax, std::fabs(v = u(rng())));
  const double descale = amax > 0 ? static_cast<double>(static_cast<float>(amax / 448)) : 1.0;
  for (std::int64_t i = 0; i < n; ++i) h.set(i, x[static_cast<std::size_t>(i)] / descale, Fp8Overflow::kSaturate);
  return descale;
}

// Byte offset of the o region in the composite's workspace: q, k, v bf16 buffers, each rounded
// up to 256 bytes (docs/attention.md).
std::size_t fp8_o_region(const SdpaDescriptor& d) {
  std::size_t at = 0;
  for (const auto* t : {&d.q, &d.k, &d.v}) at += (static_cast<std::size_t>(t->numel()) * 2 + 255) / 256 * 256;
  return at;
}

SdpaDescriptor fp8_inner_descriptor(SdpaDescriptor d) {
  for (auto* t : {&d.q, &d.k, &d.v, &d.o}) *t = TensorLayout::contiguous(DType::kBF16, t->shape_span(), 256);
  return d;
}

void run_fp8_case(const Fp8Case& c) {
  SCOPED_TRACE(c.name);
  SdpaDescriptor d;
  d.options = c.opt;
  std::vector<std::int32_t> cu_q{0}, cu_k{0};
  std::int64_t tq = 0, tk = 0;
  if (c.opt.varlen) {
    for (std::size_t i = 0; i < c.seqlens_q.size(); ++i) {
      cu_q.push_back(cu_q.back() + c.seqlens_q[i]);
      cu_k.push_back(cu_k.back() + c.seqlens_k[i]);
    }
    tq = cu_q.back();
    tk = cu_k.back();
    d.options.batch = static_cast<std::int64_t>(c.seqlens_q.size());
    d.options.max_seqlen_q = c.Sq;
    d.options.max_seqlen_k = c.Skv;
  }
  d.q = fp8_operand(c, c.Hq, c.Sq, tq);
  d.k = fp8_operand(c, c.Hkv, c.Skv, tk);
  d.v = fp8_operand(c, c.Hkv, c.Skv, tk);
  d.o = fp8_operand(c, c.Hq, c.Sq, tq);
  d.lse = c.opt.varlen ? TensorLayout::contiguous(DType::kF32, {c.Hq, tq})
                       : TensorLayout::contiguous(DType::kF32, {c.B, c.Hq, c.Sq});
  if (c.bias) d.bias = TensorLayout::contiguous(DType::kF32, {c.Sq, c.Skv});
  HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o), ho2(d.o), hlse(d.lse);
  HostTensor hbias(c.bias ? d.bias : TensorLayout::contiguous(DType::kF32, {1}));
  fill_random(hbias, -2, 2);
  reference::SdpaFp8HostScales sc;
  sc.descale_q = quantize_random(hq, 3);
  sc.descale_k = quantize_random(hk, 1);
  sc.descale_v = quantize_random(hv, 1);
  reference::SdpaHostInputs in{&hq, &hk, &hv, c.bias ? &hbias : nullptr};
  in.cu_seqlens_q = c.opt.varlen ? cu_q : std::vector<std::int32_t>{};
  in.cu_seqlens_k = c.opt.varlen ? cu_k : std::vector<std::int32_t>{};
  const std::int64_t B = c.opt.varlen ? d.options.batch : c.B;
  const auto keep = reference::sdpa_dropout_keep(B, c.Hq, c.Sq, c.Skv, c.opt.dropout_p, kSeed, kOffset);
  in.keep = &keep;
  auto want = reference::sdpa_fp8(d, in, sc);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const double scale_o =
      want->amax_o > 0 ? static_cast<double>(static_cast<float>(c.headroom * 448 / want->amax_o)) : 1.0;
  reference::sdpa_fp8_set_scale_o(*want, scale_o);
  // Saturating: the reference o is satfinite(exact o * scale_o) / scale_o where it overflows.
  reference::Result want_o = want->o;
  std::int64_t saturated = 0;
  for (std::size_t i = 0; i < want_o.exact.size(); ++i)
    if (std::fabs(want_o.exact[i] * scale_o) > 448) {
      want_o.exact[i] = std::copysign(448.0, want_o.exact[i]) / scale_o;
      ++saturated;
    }
  if (c.headroom > 1) EXPECT_GT(saturated, 0) << "the saturating case saturates nothing";

  const Stream& s = test_stream();
  HostTensor hdq = f32_scalar(sc.descale_q), hdk = f32_scalar(sc.descale_k), hdv = f32_scalar(sc.descale_v),
             hso = f32_scalar(scale_o), hamax = f32_scalar(0);
  DeviceTensor dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dlse(hlse, s), dbias(hbias, s), ddq(hdq, s), ddk(hdk, s),
      ddv(hdv, s), dso(hso, s), damax(hamax, s);
  HostTensor hcu_q = i32_tensor(cu_q), hcu_k = i32_tensor(cu_k);
  DeviceTensor dcu_q(hcu_q, s), dcu_k(hcu_k, s);
  SdpaArgs args{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .lse = static_cast<float*>(dlse.data())};
  if (c.bias) args.bias = dbias.data();
  if (c.opt.varlen) {
    args.cu_seqlens_q = static_cast<const std::int32_t*>(dcu_q.data());
    args.cu_seqlens_k = static_cast<const std::int32_t*>(dcu_k.data());
  }
  args.seed = kSeed;
  args.offset = kOffset;
  args.fp8.descale_q = static_cast<const float*>(ddq.data());
  args.fp8.descale_k = static_cast<const float*>(ddk.data());
  args.fp8.descale_v = static_cast<const float*>(ddv.data());
  args.fp8.scale_o = static_cast<const float*>(dso.data());
  args.fp8.amax_o = static_cast<float*>(damax.data());

  const std::int64_t n_o = d.o.numel();
  const std::size_t o_at = fp8_o_region(d);
  auto verify = [&](const std::string& what, Workspace ws, bool exact_values) {
    ASSERT_TRUE(dout.download(ho, s)) << what;
    ASSERT_TRUE(dlse.download(hlse, s)) << what;
    ASSERT_TRUE(damax.download(hamax, s)) << what;
    HostTensor deq(TensorLayout::contiguous(DType::kF64, d.o.shape_span()));
    std::int64_t bad_codes = 0;
    for (std::int64_t i = 0; i < n_o; ++i) {
      const double x = ho.get(i);
      if (!(std::fabs(x) <= 448)) ++bad_codes;  // NaN (0x7F / 0xFF, also the poison) or out of range
      deq.set(i, x / scale_o);
    }
    EXPECT_EQ(bad_codes, 0) << what << ": stored codes not finite (satfinite) or not written";
    // amax_o: exactly max |o| of the inner plan's bf16 o, and near the reference's.
    std::vector<std::uint16_t> o16(static_cast<std::size_t>(n_o));
    if (n_o > 0) ASSERT_TRUE(copy_to_host(o16.data(), static_cast<char*>(ws.data) + o_at, o16.size() * 2, s)) << what;
    float m = 0;
    for (std::uint16_t b : o16) m = std::max(m, std::fabs(bf16_bits_to_f32(b)));
    float got_amax;
    std::memcpy(&got_amax, hamax.data(), 4);
    EXPECT_EQ(got_amax, m) << what << ": amax_o is not max |o| of the bf16 o";
    if (!exact_values) return;  // cuDNN's dropout: another keep mask than the reference's
    EXPECT_LE(std::fabs(got_amax - want->amax_o), want->amax_bound) << what << ": amax_o " << got_amax << " want "
                                                                    << want->amax_o;
    EXPECT_TRUE(check_close(deq, want_o, what + " o " + d.to_string()));
    EXPECT_TRUE(check_close(hlse, want->lse, what + " lse " + d.to_string()));
  };
  auto reset = [&] {
    dout.poison(0xFF, s);
    dlse.poison(0xFF, s);
    damax.poison(0xFF, s);
  };

  struct Inner {
    const char* what;
    std::vector<std::string> skip;
  };
  const std::vector<Inner> inners = {{"default inner", {}}, {"flash inner", {"*cudnn*"}}, {"general inner", {"*cudnn*", "*flash*"}}};
  int ran = 0;
  auto run_plans = [&]<class PlanT>(const char* plan_name) {
    typename PlanT::Descriptor pd;
    static_cast<SdpaDescriptor&>(pd) = d;
    auto reports = PlanT::candidates(test_caps(), pd);
    ASSERT_TRUE(reports.has_value()) << reports.error().to_string();
    for (const auto& r : *reports) {
      if (!r.rejection.empty()) continue;
      for (const Inner& inner : inners) {
        PlanPreference pref;
        pref.force_sku = r.sku.name();
        pref.skip_skus = inner.skip;
        const std::string what = std::string(plan_name) + " " + r.sku.name() + " " + inner.what;
        SCOPED_TRACE(what);
        auto plan = PlanT::select(s, pd, pref);
        // The inner plan this preference gives (the same select the composite runs).
        typename PlanT::Descriptor id;
        static_cast<SdpaDescriptor&>(id) = fp8_inner_descriptor(d);
        PlanPreference ipref;
        ipref.skip_skus = inner.skip;
        ipref.deterministic = ipref.require_graph_capturable = true;
        auto iplan = PlanT::select(s, id, ipref);
        if (!iplan) {  // e.g. no fused SKU without cuDNN and flash: the composite refuses too
          EXPECT_FALSE(plan.has_value()) << "accepted without an inner plan";
          continue;
        }
        ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
        EXPECT_EQ(plan->sku().name(), r.sku.name());
        const std::string label = what + " (inner " + iplan->sku().name() + ")";
        const Workspace ws = test_workspace(plan->workspace_size());
        EXPECT_EQ(plan->workspace_size(), o_at + (static_cast<std::size_t>(n_o) * 2 + 255) / 256 * 256 +
                                              iplan->workspace_size());
        reset();
        ASSERT_TRUE(plan->run(s, ws, args)) << label;
        verify(label, ws, !(c.opt.dropout_p > 0 && is_cudnn(iplan->sku().name())));
        ++ran;
        // Without amax_o: the buffer keeps its poison, o is the same.
        damax.poison(0xFF, s);
        SdpaArgs no_amax = args;
        no_amax.fp8.amax_o = nullptr;
        dout.poison(0xFF, s);
        ASSERT_TRUE(plan->run(s, ws, no_amax)) << label;
        ASSERT_TRUE(dout.download(ho2, s));
        ASSERT_TRUE(damax.download(hamax, s));
        std::uint32_t bits;
        std::memcpy(&bits, hamax.data(), 4);
        EXPECT_EQ(bits, 0xFFFFFFFFu) << label << ": amax_o written without args.fp8.amax_o";
        EXPECT_EQ(std::memcmp(ho.storage(), ho2.storage(), ho.storage_bytes()), 0) << label << ": o differs between runs";
        if (c.opt.dropout_p > 0) {  // replay: another seed gives another o
          SdpaArgs other = args;
          other.seed = kSeed + 1;
          ASSERT_TRUE(plan->run(s, ws, other)) << label;
          ASSERT_TRUE(dout.download(ho2, s));
          EXPECT_NE(std::memcmp(ho.storage(), ho2.storage(), ho.storage_bytes()), 0) << label << ": another seed, same o";
        }
      }
    }
  };
  run_plans.template operator()<SdpaPlan>("SdpaPlan");
  run_plans.template operator()<FlashSdpaPlan>("FlashSdpaPlan");
  EXPECT_GE(ran, 2) << "the e4m3 forward ran under fewer than two plans";
}

std::vector<Fp8Case> fp8_cases() {
  const auto BR = CausalAlign::kBottomRight, TL = CausalAlign::kTopLeft;
  std::vector<Fp8Case> v;
  v.push_back({.name = "s1_d64", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 1, .Skv = 1, .D = 64});
  v.push_back({.name = "s17_d128_causal_gqa4", .B = 2, .Hq = 8, .Hkv = 2, .Sq = 17, .Skv = 17, .D = 128, .opt = causal(BR)});
  v.push_back({.name = "s128_d64_causal_tl", .B = 1, .Hq = 4, .Hkv = 4, .Sq = 128, .Skv = 128, .D = 64, .opt = causal(TL)});
  v.push_back({.name = "s128_d128", .B = 2, .Hq = 2, .Hkv = 1, .Sq = 128, .Skv = 128, .D = 128});
  v.push_back({.name = "s1000_d128_mqa", .B = 1, .Hq = 2, .Hkv = 1, .Sq = 1000, .Skv = 1000, .D = 128});
  v.push_back({.name = "s1000_d64_causal", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 1000, .Skv = 1000, .D = 64, .opt = causal(BR)});
  v.push_back({.name = "decode_like", .B = 2, .Hq = 8, .Hkv = 2, .Sq = 1, .Skv = 129, .D = 128, .opt = causal(BR)});
  v.push_back({.name = "bias_f32", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 33, .Skv = 47, .D = 64, .bias = true});
  v.push_back({.name = "dropout", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 37, .Skv = 50, .D = 64, .opt = dropout(0.2)});
  v.push_back({.name = "strided", .B = 2, .Hq = 4, .Hkv = 2, .Sq = 33, .Skv = 45, .D = 128, .opt = causal(BR), .strided = true});
  v.push_back({.name = "saturating", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 64, .Skv = 64, .D = 64, .headroom = 3});
  // An empty sequence on each side: (0 queries, 10 keys) and (5 queries, 0 keys: o = 0, lse = -inf).
  v.push_back({.name = "varlen_empty", .Hq = 4, .Hkv = 2, .Sq = 40, .Skv = 50, .D = 64, .opt = varlen(),
               .seqlens_q = {17, 0, 40, 5}, .seqlens_k = {30, 10, 50, 0}});
  SdpaOptions vc = varlen();
  vc.causal = true;
  vc.align = BR;
  v.push_back({.name = "varlen_causal_d128", .Hq = 2, .Hkv = 1, .Sq = 33, .Skv = 33, .D = 128, .opt = vc,
               .seqlens_q = {1, 33, 0, 20}, .seqlens_k = {9, 33, 4, 20}});
  return v;
}

TEST(SdpaFp8Gpu, ForwardEverySkuBothPlans) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : fp8_cases()) run_fp8_case(c);
}

// Run-time refusals of the e4m3 forward, under every SKU of SdpaPlan and FlashSdpaPlan that
// accepts it: the fp8 scale pointers (null, misaligned, amax_o aliasing), amax_s (not produced),
// the shared operand checks, and the workspace (too small / null / misaligned; the composite
// always needs one); outputs (o, lse, amax_o) untouched. Then fp8 pointers on a bf16 plan.
template <class PlanT>
std::vector<std::string> fp8_refusal_table() {
  SdpaDescriptor sd;
  sd.q = sd.o = TensorLayout::contiguous(DType::kE4M3, {1, 4, 64, 64});
  sd.k = sd.v = TensorLayout::contiguous(DType::kE4M3, {1, 2, 64, 64});
  sd.lse = TensorLayout::contiguous(DType::kF32, {1, 4, 64});
  typename PlanT::Descriptor d;
  static_cast<SdpaDescriptor&>(d) = sd;
  HostTensor hq(sd.q), hkv(sd.k), one = f32_scalar(0.01);
  fill_random(hq, -100, 100);
  fill_random(hkv, -100, 100);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hkv, s), dv(hkv, s), ddq(one, s), ddk(one, s), ddv(one, s), dso(one, s), dstray(one, s);
  Untouched o(sd.o), lse(sd.lse), amax(TensorLayout::contiguous(DType::kF32, {1}, 4));
  SdpaArgs ok{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = o.data(), .lse = static_cast<float*>(lse.data())};
  ok.fp8.descale_q = static_cast<const float*>(ddq.data());
  ok.fp8.descale_k = static_cast<const float*>(ddk.data());
  ok.fp8.descale_v = static_cast<const float*>(ddv.data());
  ok.fp8.scale_o = static_cast<const float*>(dso.data());
  ok.fp8.amax_o = static_cast<float*>(amax.data());
  float* stray = static_cast<float*>(dstray.data());
  const Code bad = Code::kInvalidArgument, mis = Code::kMisaligned, unsupported = Code::kNotSupported;
  using A = SdpaArgs;
  const auto f = [](const void* p, int bytes) { return static_cast<float*>(moved(p, bytes)); };
  std::vector<ArgRefusalRow<A>> table = {
      {"null descale_q", [](A& a) { a.fp8.descale_q = nullptr; }, bad, "args.fp8.descale_q is null"},
      {"null descale_k", [](A& a) { a.fp8.descale_k = nullptr; }, bad, "args.fp8.descale_k is null"},
      {"null descale_v", [](A& a) { a.fp8.descale_v = nullptr; }, bad, "args.fp8.descale_v is null"},
      {"null scale_o", [](A& a) { a.fp8.scale_o = nullptr; }, bad, "args.fp8.scale_o is null"},
      {"amax_s given", [stray](A& a) { a.fp8.amax_s = stray; }, unsupported, "args.fp8.amax_s is set"},
      {"misaligned descale_v", [f](A& a) { a.fp8.descale_v = f(a.fp8.descale_v, 2); }, mis,
       "is not aligned to fp8.descale_v.alignment = 4 bytes"},
      {"misaligned scale_o", [f](A& a) { a.fp8.scale_o = f(a.fp8.scale_o, 1); }, mis,
       "is not aligned to fp8.scale_o.alignment = 4 bytes"},
      {"misaligned amax_o", [f](A& a) { a.fp8.amax_o = f(a.fp8.amax_o, 2); }, mis,
       "is not aligned to fp8.amax_o.alignment = 4 bytes"},
      {"amax_o inside o", [f](A& a) { a.fp8.amax_o = f(a.o, 64); }, bad, "args.o and args.fp8.amax_o overlap"},
      {"amax_o inside lse", [](A& a) { a.fp8.amax_o = a.lse; }, bad, "args.lse and args.fp8.amax_o overlap"},
      {"amax_o = scale_o", [](A& a) { a.fp8.amax_o = const_cast<float*>(a.fp8.scale_o); }, bad,
       "args.fp8.amax_o overlaps args.fp8.scale_o"},
      {"amax_o inside q", [f](A& a) { a.fp8.amax_o = f(a.q, 128); }, bad, "args.fp8.amax_o overlaps args.q"},
      {"descale_k inside o", [f](A& a) { a.fp8.descale_k = f(a.o, 256); }, bad, "args.o overlaps args.fp8.descale_k"},
      {"null q", [](A& a) { a.q = nullptr; }, bad, "args.q is null"},
      {"misaligned k", [](A& a) { a.k = moved(a.k, 8); }, mis, "is not aligned to k.alignment = 16 bytes"},
      {"o over v", [](A& a) { a.o = moved(a.v, 64); }, bad, "args.o overlaps args.v"},
      {"lse inside o", [](A& a) { a.lse = static_cast<float*>(a.o); }, bad, "args.o and args.lse overlap"},
  };
  // Workspace: the four bf16 buffers (4 x 32 KiB and 2 x 16 KiB here) + the inner plan's.
  auto check_workspace = [](const std::string&, std::size_t need) { EXPECT_GE(need, 2 * 32768u + 2 * 16384u); };
  return run_on_every_sku<PlanT>(d, ok, table, {&o, &lse, &amax}, check_workspace);
}

TEST(SdpaFp8GpuRefusals, RunTableEverySkuBothPlans) {
  BARACUDA_REQUIRE_GPU();
  EXPECT_TRUE(any_of(fp8_refusal_table<SdpaPlan>(), ".fp8_dequant["));
  EXPECT_TRUE(any_of(fp8_refusal_table<FlashSdpaPlan>(), ".fp8_dequant["));
  // fp8 scales on a bf16 plan belong to nothing: refused, nothing written.
  SdpaDescriptor d = refusal_descriptor(false);
  auto plan = SdpaPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor hq(d.q), hkv(d.k), one = f32_scalar(1);
  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hkv, s), dsc(one, s);
  Untouched o(d.o), lse(d.lse);
  const SdpaArgs ok{.q = dq.data(), .k = dk.data(), .v = dk.data(), .o = o.data(), .lse = static_cast<float*>(lse.data())};
  const Workspace ws = test_workspace(plan->workspace_size());
  auto* sc = static_cast<float*>(dsc.data());
  std::vector<RunRefusal> rows;
  for (int which = 0; which < 8; ++which) {
    static const char* names[] = {"descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o", "amax_s", "amax_o"};
    rows.push_back({std::string("bf16 with fp8.") + names[which],
                    [&, which, sc] {
                      SdpaArgs a = ok;
                      const float** in[] = {&a.fp8.descale_q, &a.fp8.descale_k, &a.fp8.descale_v, &a.fp8.descale_s,
                                            &a.fp8.scale_s, &a.fp8.scale_o};
                      if (which < 6) *in[which] = sc;
                      else if (which == 6) a.fp8.amax_s = sc;
                      else a.fp8.amax_o = sc;
                      return plan->run(s, ws, a);
                    },
                    Code::kInvalidArgument, std::string("args.fp8.") + names[which] + " is set but q.dtype = bf16"});
  }
  expect_run_refusals(rows, {&o, &lse});
}

}  // namespace
}  // namespace baracuda::test
