// Kernel-specific GPU tests of the flash SDPA SKUs (filter `*FlashSdpa*`): shapes that cross
// the flash kernels' tile edges (query blocks of 128 forward / 64 dQ, key tiles of 64 / 32,
// dK/dV steps of 32 / 16 query rows), masks whose band starts and ends mid-tile (the skipped
// and the element-masked tiles), GQA groups walked inside one dK/dV CTA, the two-pass backward
// of head dims 192 / 256, varlen with long and empty sequences, dropout with every option,
// strided outputs with gaps (the gaps stay untouched), and the deterministic backward (bitwise
// equal runs; the atomic SKU agrees within tolerance). Every flash SKU is forced in turn (the
// sm_90a flash_wgmma forward where it accepts) and
// compared with reference::sdpa / sdpa_backward (attention in double; compare.hpp's rule
// against the naive same-precision twin). The general checks (every SKU, every dtype,
// refusals) live in test_sdpa_gpu.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/attention.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct FlashCase {
  std::string name;
  std::int64_t B = 1, Hq = 2, Hkv = 2, Sq = 100, Skv = 100, D = 64;
  SdpaOptions opt;
  std::vector<std::int64_t> bias;  // shape; empty: none (f32)
  int alibi = 0;                   // 0 none, 1 [Hq]
  std::int64_t o_gap = 0;          // extra elements after each o / grad row (a strided view with gaps)
  std::vector<std::int32_t> seqlens_q, seqlens_k;  // varlen
};

constexpr std::uint64_t kSeed = 0xfeedbeefcafe1234ull, kOffset = 0x5ull << 32 | 3;

TensorLayout operand(DType t, const FlashCase& c, std::int64_t H, std::int64_t S, std::int64_t tokens, std::int64_t gap) {
  const std::int64_t row = c.D + gap;
  if (c.opt.varlen) return TensorLayout::strided(t, {tokens, H, c.D}, {H * row, row, 1});
  return TensorLayout::strided(t, {c.B, H, S, c.D}, {H * S * row, S * row, row, 1});
}

HostTensor i32_tensor(const std::vector<std::int32_t>& v) {
  HostTensor h(TensorLayout::contiguous(DType::kI32, {static_cast<std::int64_t>(v.size())}, 4));
  for (std::size_t i = 0; i < v.size(); ++i) h.set(static_cast<std::int64_t>(i), v[i]);
  return h;
}

// Every byte of `h`'s storage outside its logical elements still holds `byte`.
::testing::AssertionResult gaps_untouched(const HostTensor& h, unsigned char byte) {
  std::vector<char> used(h.storage_bytes(), 0);
  const TensorLayout& l = h.layout();
  const std::size_t es = dtype_size(l.dtype);
  for (std::int64_t i = 0; i < l.numel(); ++i) {
    std::int64_t off = 0, rem = i;
    for (int d = l.rank - 1; d >= 0; --d) {
      off += (rem % l.shape[d]) * l.strides[d];
      rem /= l.shape[d];
    }
    const std::size_t b = h.origin_bytes() + static_cast<std::size_t>(off) * es;
    for (std::size_t k = 0; k < es; ++k) used[b + k] = 1;
  }
  for (std::size_t b = 0; b < used.size(); ++b)
    if (!used[b] && static_cast<unsigned char>(h.storage()[b]) != byte)
      return ::testing::AssertionFailure() << "gap byte " << b << " written";
  return ::testing::AssertionSuccess();
}

void run_flash_case(DType t, const FlashCase& c) {
  SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)));
  std::vector<std::int32_t> cu_q{0}, cu_k{0};
  for (std::size_t s = 0; s < c.seqlens_q.size(); ++s) {
    cu_q.push_back(cu_q.back() + c.seqlens_q[s]);
    cu_k.push_back(cu_k.back() + c.seqlens_k[s]);
  }
  SdpaDescriptor d;
  d.options = c.opt;
  if (c.opt.varlen) {
    d.options.batch = static_cast<std::int64_t>(c.seqlens_q.size());
    d.options.max_seqlen_q = c.Sq;
    d.options.max_seqlen_k = c.Skv;
  }
  const std::int64_t tq = cu_q.back(), tk = cu_k.back();
  d.q = operand(t, c, c.Hq, c.Sq, tq, 0);
  d.k = operand(t, c, c.Hkv, c.Skv, tk, 0);
  d.v = operand(t, c, c.Hkv, c.Skv, tk, 8);
  d.o = operand(t, c, c.Hq, c.Sq, tq, c.o_gap);
  d.lse = c.opt.varlen ? TensorLayout::contiguous(DType::kF32, {c.Hq, tq}) : TensorLayout::contiguous(DType::kF32, {c.B, c.Hq, c.Sq});
  if (!c.bias.empty()) d.bias = TensorLayout::contiguous(DType::kF32, c.bias);
  if (c.alibi) d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {c.Hq});

  HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o), hlse(d.lse);
  fill_random(hq, -3, 3);
  fill_random(hk, -1, 1);
  fill_random(hv, -1, 1);
  HostTensor hbias(d.bias.rank ? d.bias : TensorLayout::contiguous(DType::kF32, {1}));
  HostTensor halibi(d.alibi_slopes.rank ? d.alibi_slopes : TensorLayout::contiguous(DType::kF32, {1}));
  fill_random(hbias, -2, 2);
  for (std::int64_t i = 0; i < halibi.layout().numel(); ++i) halibi.set(i, 0.03 * static_cast<double>(1 + i % 5));
  reference::SdpaHostInputs in{&hq, &hk, &hv, d.bias.rank ? &hbias : nullptr, nullptr, d.alibi_slopes.rank ? &halibi : nullptr};
  if (c.opt.varlen) {
    in.cu_seqlens_q = cu_q;
    in.cu_seqlens_k = cu_k;
  }
  const std::int64_t B = c.opt.varlen ? d.options.batch : c.B;
  const auto keep = reference::sdpa_dropout_keep(B, c.Hq, c.Sq, c.Skv, c.opt.dropout_p, kSeed, kOffset);
  in.keep = &keep;
  auto want = reference::sdpa(d, in);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();

  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dlse(hlse, s), dbias(hbias, s), dalibi(halibi, s);
  HostTensor hcu_q = i32_tensor(cu_q), hcu_k = i32_tensor(cu_k);
  DeviceTensor dcu_q(hcu_q, s), dcu_k(hcu_k, s);
  SdpaArgs args{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .lse = static_cast<float*>(dlse.data())};
  if (d.bias.rank) args.bias = dbias.data();
  if (d.alibi_slopes.rank) args.alibi_slopes = static_cast<const float*>(dalibi.data());
  if (c.opt.varlen) {
    args.cu_seqlens_q = static_cast<const std::int32_t*>(dcu_q.data());
    args.cu_seqlens_k = static_cast<const std::int32_t*>(dcu_k.data());
  }
  args.seed = kSeed;
  args.offset = kOffset;

  // flash_mma always; flash_wgmma_ws and flash_wgmma (sm_90a, d64 / d128, plain scores) where
  // they accept. Three patterns: "flash_wgmma*" alone would force flash_wgmma_ws, first in the
  // table, wherever both accept, and the plain wgmma kernel would run on varlen cases only.
  for (const char* sku : {"sdpa.fwd.flash_mma[*", "sdpa.fwd.flash_wgmma_ws[*", "sdpa.fwd.flash_wgmma[*"}) {
    PlanPreference fwd_pref;
    fwd_pref.force_sku = sku;
    auto fp = SdpaPlan::select(s, d, fwd_pref);
    if (!fp.has_value() && std::string(sku).find("wgmma") != std::string::npos) continue;
    ASSERT_TRUE(fp.has_value()) << fp.error().to_string();
    dout.poison(0xFF, s);
    dlse.poison(0xFF, s);
    ASSERT_TRUE(fp->run(s, test_workspace(fp->workspace_size()), args));
    ASSERT_TRUE(dout.download(ho, s));
    ASSERT_TRUE(dlse.download(hlse, s));
    const std::string name = fp->sku().name() + " ";
    EXPECT_TRUE(check_close(ho, want->o, name + "o " + d.to_string()));
    EXPECT_TRUE(check_close(hlse, want->lse, name + "lse " + d.to_string()));
    if (c.o_gap > 0) EXPECT_TRUE(gaps_untouched(ho, 0xFF)) << name;
  }

  // Backward from the reference's o (rounded to the dtype) and lse, for both flash SKUs.
  SdpaBackwardDescriptor g;
  g.q = d.q, g.k = d.k, g.v = d.v, g.o = d.o, g.lse = d.lse;
  g.grad_o = operand(t, c, c.Hq, c.Sq, tq, 0);
  g.grad_q = operand(t, c, c.Hq, c.Sq, tq, c.o_gap);
  g.grad_k = operand(t, c, c.Hkv, c.Skv, tk, c.o_gap);
  g.grad_v = operand(t, c, c.Hkv, c.Skv, tk, 0);
  g.bias = d.bias, g.alibi_slopes = d.alibi_slopes, g.options = d.options;
  HostTensor href_o(d.o), href_lse(d.lse), hgo(g.grad_o), hgq(g.grad_q), hgk(g.grad_k), hgv(g.grad_v);
  const std::vector<double> o_exact = want->o.exact;
  std::int64_t n = 0;
  for (double x : o_exact) href_o.set(n++, x);
  n = 0;
  for (double x : want->lse.exact) href_lse.set(n++, x);
  fill_random(hgo, -1, 1);
  auto gwant = reference::sdpa_backward(g, in, href_o, hgo);
  ASSERT_TRUE(gwant.has_value()) << gwant.error().to_string();
  DeviceTensor dro(href_o, s), drl(href_lse, s), dgo(hgo, s), dgq(hgq, s), dgk(hgk, s), dgv(hgv, s);
  SdpaBackwardArgs ba{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dro.data(), .grad_o = dgo.data(),
                      .lse = static_cast<const float*>(drl.data()), .grad_q = dgq.data(), .grad_k = dgk.data(),
                      .grad_v = dgv.data()};
  ba.bias = args.bias;
  ba.alibi_slopes = args.alibi_slopes;
  ba.cu_seqlens_q = args.cu_seqlens_q;
  ba.cu_seqlens_k = args.cu_seqlens_k;
  ba.seed = kSeed;
  ba.offset = kOffset;
  std::vector<std::vector<std::byte>> det_bytes;
  for (const char* sku : {"sdpa.bwd.flash_mma_atomic*", "sdpa.bwd.flash_mma_det*", "sdpa.bwd.flash_mma_det*"}) {
    PlanPreference pref;
    pref.force_sku = sku;
    auto bp = SdpaBackwardPlan::select(s, g, pref);
    ASSERT_TRUE(bp.has_value()) << bp.error().to_string();
    dgq.poison(0xFF, s);
    dgk.poison(0xFF, s);
    dgv.poison(0xFF, s);
    ASSERT_TRUE(bp->run(s, test_workspace(bp->workspace_size()), ba)) << sku;
    ASSERT_TRUE(dgq.download(hgq, s));
    ASSERT_TRUE(dgk.download(hgk, s));
    ASSERT_TRUE(dgv.download(hgv, s));
    const std::string name = bp->sku().name() + " ";
    EXPECT_TRUE(check_close(hgq, gwant->grad_q, name + "grad_q " + g.to_string()));
    EXPECT_TRUE(check_close(hgk, gwant->grad_k, name + "grad_k " + g.to_string()));
    EXPECT_TRUE(check_close(hgv, gwant->grad_v, name + "grad_v " + g.to_string()));
    if (c.o_gap > 0) {
      EXPECT_TRUE(gaps_untouched(hgq, 0xFF)) << name << "grad_q";
      EXPECT_TRUE(gaps_untouched(hgk, 0xFF)) << name << "grad_k";
    }
    if (bp->sku().precision.deterministic) {  // the two deterministic runs match bit for bit
      std::vector<std::byte> all;
      for (const HostTensor* h : {&hgq, &hgk, &hgv}) all.insert(all.end(), h->storage(), h->storage() + h->storage_bytes());
      det_bytes.push_back(std::move(all));
    }
  }
  ASSERT_EQ(det_bytes.size(), 2u);
  EXPECT_TRUE(det_bytes[0] == det_bytes[1]) << "flash_mma_det is not bitwise reproducible";
}

SdpaOptions opts(bool causal, CausalAlign a = CausalAlign::kTopLeft, std::int64_t wl = -1, std::int64_t wr = -1) {
  SdpaOptions o;
  o.causal = causal;
  o.align = a;
  o.window_left = wl;
  o.window_right = wr;
  return o;
}

std::vector<FlashCase> tile_edge_cases() {
  const auto BR = CausalAlign::kBottomRight, TL = CausalAlign::kTopLeft;
  std::vector<FlashCase> v;
  for (std::int64_t dh : {64, 96, 128, 192, 256}) {
    const std::string d = "_d" + std::to_string(dh);
    v.push_back({.name = "causal_br_multi_block" + d, .B = 2, .Hq = 4, .Hkv = 1, .Sq = 300, .Skv = 333, .D = dh,
                 .opt = opts(true, BR)});
    v.push_back({.name = "window_mid_tile" + d, .B = 1, .Hq = 2, .Hkv = 2, .Sq = 290, .Skv = 290, .D = dh,
                 .opt = opts(false, TL, 70, 9)});
  }
  v.push_back({.name = "causal_tl_skv_gt_sq", .B = 1, .Hq = 3, .Hkv = 1, .Sq = 130, .Skv = 400, .D = 128, .opt = opts(true, TL)});
  v.push_back({.name = "causal_br_sq_gt_skv", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 400, .Skv = 130, .D = 128, .opt = opts(true, BR)});
  v.push_back({.name = "window_right_only", .B = 1, .Hq = 2, .Hkv = 1, .Sq = 200, .Skv = 260, .D = 64,
               .opt = opts(false, BR, -1, 40)});
  v.push_back({.name = "window_beyond_keys", .B = 1, .Hq = 2, .Hkv = 2, .Sq = 150, .Skv = 150, .D = 64,
               .opt = opts(false, TL, 3, 0)});
  v.push_back({.name = "gqa8_long", .B = 1, .Hq = 8, .Hkv = 1, .Sq = 257, .Skv = 190, .D = 128});
  v.push_back({.name = "tiny_keys", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 200, .Skv = 3, .D = 96});
  v.push_back({.name = "gaps", .B = 2, .Hq = 2, .Hkv = 2, .Sq = 70, .Skv = 90, .D = 128, .opt = opts(true, BR), .o_gap = 16});
  return v;
}

std::vector<FlashCase> option_cases() {
  const auto BR = CausalAlign::kBottomRight;
  std::vector<FlashCase> v;
  SdpaOptions all = opts(true, BR);
  all.softcap = 20;
  all.dropout_p = 0.3;
  for (std::int64_t dh : {64, 128, 256})
    v.push_back({.name = "softcap_dropout_alibi_bias_d" + std::to_string(dh), .B = 2, .Hq = 4, .Hkv = 2, .Sq = 150,
                 .Skv = 170, .D = dh, .opt = all, .bias = {2, 1, 150, 170}, .alibi = 1});
  SdpaOptions drop = opts(false);
  drop.dropout_p = 0.1;
  drop.window_left = 50;
  v.push_back({.name = "dropout_window_d192", .B = 1, .Hq = 2, .Hkv = 1, .Sq = 140, .Skv = 140, .D = 192, .opt = drop});
  SdpaOptions vl = opts(true, BR);
  vl.varlen = true;
  v.push_back({.name = "varlen_long_empty_d128", .Hq = 4, .Hkv = 2, .Sq = 300, .Skv = 310, .D = 128, .opt = vl,
               .seqlens_q = {0, 300, 129, 1, 0}, .seqlens_k = {5, 310, 128, 0, 0}});
  SdpaOptions vd = vl;
  vd.dropout_p = 0.2;
  vd.softcap = 10;
  v.push_back({.name = "varlen_dropout_softcap_d64", .Hq = 2, .Hkv = 2, .Sq = 200, .Skv = 200, .D = 64, .opt = vd,
               .seqlens_q = {200, 65}, .seqlens_k = {130, 200}});
  return v;
}

class FlashSdpaGpu : public ::testing::TestWithParam<DType> {};

TEST_P(FlashSdpaGpu, TileEdges) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : tile_edge_cases()) run_flash_case(GetParam(), c);
}

TEST_P(FlashSdpaGpu, OptionsTogether) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : option_cases()) run_flash_case(GetParam(), c);
}

INSTANTIATE_TEST_SUITE_P(Types, FlashSdpaGpu, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace baracuda::test
