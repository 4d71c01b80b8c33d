// CPU unit tests of the flash SDPA backend's probes (src/attention/flash_sdpa.cpp): which
// descriptors the flash_mma SKUs accept, the reasons they refuse the rest, SKU names and the
// backward workspace. Selection is forced onto the flash SKUs (force_sku) so the cuDNN
// backend's answers do not interfere. GPU behaviour: tests/gpu/test_sdpa_gpu.cpp forces every
// SKU that accepts each case.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/attention.hpp"
#include "select_refusals.hpp"

namespace baracuda {
namespace {

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

PlanPreference flash_only(const char* impl = "flash_mma*") {
  PlanPreference p;
  p.force_sku = std::string("sdpa.*.") + impl;
  return p;
}

SdpaDescriptor dense(DType t, std::int64_t b, std::int64_t hq, std::int64_t hkv, std::int64_t sq, std::int64_t skv,
                     std::int64_t d) {
  SdpaDescriptor x;
  x.q = TensorLayout::contiguous(t, {b, hq, sq, d});
  x.k = TensorLayout::contiguous(t, {b, hkv, skv, d});
  x.v = TensorLayout::contiguous(t, {b, hkv, skv, d});
  x.o = TensorLayout::contiguous(t, {b, hq, sq, d});
  x.lse = TensorLayout::contiguous(DType::kF32, {b, hq, sq});
  return x;
}

// 3 packed bf16 sequences (Tq 400, Tk 500), 8 query / 4 KV heads, d128.
void make_varlen(SdpaDescriptor& d) {
  d.options.varlen = true;
  d.options.batch = 3;
  d.options.max_seqlen_q = 200;
  d.options.max_seqlen_k = 300;
  d.q = TensorLayout::contiguous(DType::kBF16, {400, 8, 128});
  d.o = d.q;
  d.k = TensorLayout::contiguous(DType::kBF16, {500, 4, 128});
  d.v = d.k;
  d.lse = TensorLayout::contiguous(DType::kF32, {8, 400});
}

SdpaBackwardDescriptor backward_of(const SdpaDescriptor& f) {
  SdpaBackwardDescriptor d;
  d.q = f.q, d.k = f.k, d.v = f.v, d.o = f.o, d.grad_o = f.o, d.lse = f.lse;
  d.grad_q = f.q, d.grad_k = f.k, d.grad_v = f.v;
  d.bias = f.bias, d.mask = f.mask, d.alibi_slopes = f.alibi_slopes;
  d.options = f.options;
  return d;
}

template <class Plan, class Desc>
std::string refusal(const Desc& d, const PlanPreference& pref = flash_only()) {
  auto p = Plan::select_for_caps(caps(90), d, pref);
  if (p.has_value()) return "";
  return p.error().message();
}

TEST(FlashSdpaProbe, AcceptsEveryHeadDimAndDtype) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    for (std::int64_t d : {64, 96, 128, 192, 256}) {
      auto desc = dense(t, 2, 8, 2, 100, 77, d);
      auto p = SdpaPlan::select_for_caps(caps(80), desc, flash_only());
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      EXPECT_EQ(p->sku().name(), std::string("sdpa.fwd.flash_mma[") + std::string(dtype_name(t)) + ",f32].sm80+");
      EXPECT_EQ(p->workspace_size(), 0u);
      auto f = FlashSdpaPlan::select_for_caps(caps(90), FlashSdpaDescriptor{desc}, flash_only());
      ASSERT_TRUE(f.has_value()) << f.error().to_string();
    }
  }
}

TEST(FlashSdpaProbe, SharedMemoryLimitOfTheDevice) {
  // sm_89 allows 99 KB per block: the d64 / d96 kernels fit, the larger forward tiles do not.
  auto small = SdpaPlan::select_for_caps(caps(89), dense(DType::kF16, 1, 2, 2, 64, 64, 64), flash_only());
  ASSERT_TRUE(small.has_value()) << small.error().to_string();
  auto big = SdpaPlan::select_for_caps(caps(89), dense(DType::kF16, 1, 2, 2, 64, 64, 256), flash_only());
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message().find("bytes of shared memory per block"), std::string::npos) << big.error().message();
}

TEST(FlashSdpaProbe, WgmmaSkuIsSm90OnlyAndOrderedLast) {
  auto d = dense(DType::kBF16, 2, 8, 8, 256, 256, 128);
  d.options.causal = true;
  auto p = SdpaPlan::select_for_caps(caps(90), d, flash_only("flash_wgmma[*"));
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "sdpa.fwd.flash_wgmma[bf16,f32].sm90a");
  EXPECT_FALSE(SdpaPlan::select_for_caps(caps(80), d, flash_only("flash_wgmma[*")).has_value());
  // Unforced, flash_mma (earlier in the table) wins.
  auto any = SdpaPlan::select_for_caps(caps(90), d, flash_only());
  ASSERT_TRUE(any.has_value());
  EXPECT_EQ(any->sku().impl, "flash_mma");
  auto d96 = dense(DType::kBF16, 2, 8, 8, 256, 256, 96);
  EXPECT_NE(refusal<SdpaPlan>(d96, flash_only("flash_wgmma*")).find("head dim = 96"), std::string::npos);
  auto cap = d;
  cap.options.softcap = 10;
  EXPECT_NE(refusal<SdpaPlan>(cap, flash_only("flash_wgmma*")).find("plain score path"), std::string::npos);
}

TEST(FlashSdpaProbe, WgmmaWsSkuTakesDenseTmaLayoutsOnly) {
  auto d = dense(DType::kBF16, 2, 8, 2, 300, 300, 64);
  d.options.causal = true;
  d.options.align = CausalAlign::kBottomRight;
  auto p = SdpaPlan::select_for_caps(caps(90), d, flash_only("flash_wgmma_ws*"));
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "sdpa.fwd.flash_wgmma_ws[bf16,f32].sm90a");
  EXPECT_EQ(p->workspace_size(), 256u);  // the persistent kernel's tile counter
  EXPECT_FALSE(SdpaPlan::select_for_caps(caps(80), d, flash_only("flash_wgmma_ws*")).has_value());
  // Under a workspace cap below the counter the wgmma_ws SKU is refused; flash_mma takes the case.
  PlanPreference no_ws = flash_only("flash_*");
  no_ws.max_workspace_bytes = 0;
  auto capped = SdpaPlan::select_for_caps(caps(90), d, no_ws);
  ASSERT_TRUE(capped.has_value()) << capped.error().to_string();
  EXPECT_EQ(capped->sku().impl, "flash_mma");
  // A bshd view of q is a legal TMA layout.
  auto bshd = dense(DType::kF16, 2, 8, 8, 128, 128, 128);
  bshd.q = TensorLayout::strided(DType::kF16, {2, 8, 128, 128}, {128 * 8 * 128, 128, 8 * 128, 1});
  EXPECT_TRUE(SdpaPlan::select_for_caps(caps(90), bshd, flash_only("flash_wgmma_ws*")).has_value());
  // Among the wgmma SKUs the warp-specialized one is tried first (measured faster).
  auto any = SdpaPlan::select_for_caps(caps(90), d, flash_only("flash_wgmma*"));
  ASSERT_TRUE(any.has_value());
  EXPECT_EQ(any->sku().impl, "flash_wgmma_ws");
  // K shared by every batch entry (stride 0): TMA cannot express it.
  auto bcast = dense(DType::kBF16, 2, 8, 8, 128, 128, 128);
  bcast.k = TensorLayout::strided(DType::kBF16, {2, 8, 128, 128}, {0, 128 * 128, 128, 1});
  EXPECT_NE(refusal<SdpaPlan>(bcast, flash_only("flash_wgmma_ws*")).find("k batch stride = 0"), std::string::npos)
      << refusal<SdpaPlan>(bcast, flash_only("flash_wgmma_ws*"));
  auto vl = dense(DType::kBF16, 1, 8, 4, 1, 1, 128);
  make_varlen(vl);
  EXPECT_NE(refusal<SdpaPlan>(vl, flash_only("flash_wgmma_ws*")).find("varlen"), std::string::npos);
  auto d96 = dense(DType::kBF16, 2, 8, 8, 256, 256, 96);
  EXPECT_NE(refusal<SdpaPlan>(d96, flash_only("flash_wgmma_ws*")).find("head dim = 96"), std::string::npos);
  // 65535 x 65535 work tiles: more than the persistent kernel's 32-bit tile counter.
  auto many = dense(DType::kBF16, 65535, 65535, 65535, 1, 1, 64);
  EXPECT_NE(refusal<SdpaPlan>(many, flash_only("flash_wgmma_ws*")).find("work tiles in 32 bits"), std::string::npos)
      << refusal<SdpaPlan>(many, flash_only("flash_wgmma_ws*"));
}

TEST(FlashSdpaProbe, AcceptsTheOptions) {
  auto base = dense(DType::kBF16, 2, 8, 4, 128, 256, 128);
  std::vector<std::pair<const char*, std::function<void(SdpaDescriptor&)>>> cases = {
      {"causal top-left", [](SdpaDescriptor& d) { d.options.causal = true; }},
      {"causal bottom-right",
       [](SdpaDescriptor& d) {
         d.options.causal = true;
         d.options.align = CausalAlign::kBottomRight;
       }},
      {"window", [](SdpaDescriptor& d) { d.options.window_left = 32, d.options.window_right = 8; }},
      {"softcap", [](SdpaDescriptor& d) { d.options.softcap = 30; }},
      {"dropout", [](SdpaDescriptor& d) { d.options.dropout_p = 0.1; }},
      {"alibi", [](SdpaDescriptor& d) { d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {8}); }},
      {"bias f32 broadcast", [](SdpaDescriptor& d) { d.bias = TensorLayout::contiguous(DType::kF32, {1, 8, 128, 256}); }},
      {"bias bf16", [](SdpaDescriptor& d) { d.bias = TensorLayout::contiguous(DType::kBF16, {2, 8, 128, 256}); }},
      {"no lse", [](SdpaDescriptor& d) { d.lse = TensorLayout{}; }},
      {"strided heads (bshd view)",
       [](SdpaDescriptor& d) { d.q = TensorLayout::strided(DType::kBF16, {2, 8, 128, 128}, {128 * 8 * 128, 128, 8 * 128, 1}); }},
      {"varlen", [](SdpaDescriptor& d) { make_varlen(d); }},
  };
  for (auto& [name, change] : cases) {
    auto d = base;
    change(d);
    SCOPED_TRACE(name);
    EXPECT_EQ(refusal<SdpaPlan>(d), "");
    if (d.lse.rank > 0) EXPECT_EQ(refusal<SdpaBackwardPlan>(backward_of(d)), "");
  }
}

TEST(FlashSdpaProbe, RefusesWithTheReason) {
  auto base = dense(DType::kF16, 2, 8, 2, 64, 64, 64);
  struct Case {
    const char* name;
    std::function<void(SdpaDescriptor&)> change;
    const char* needle;
  };
  std::vector<Case> cases = {
      {"f32", [](SdpaDescriptor& d) { d.q.dtype = d.k.dtype = d.v.dtype = d.o.dtype = DType::kF32; }, "q.dtype = f32"},
      {"head dim 80",
       [](SdpaDescriptor& d) {
         d.q = TensorLayout::contiguous(DType::kF16, {2, 8, 64, 80});
         d.o = d.q;
         d.k = TensorLayout::contiguous(DType::kF16, {2, 2, 64, 80});
         d.v = d.k;
       },
       "head dim = 80"},
      {"dk != dv",
       [](SdpaDescriptor& d) {
         d.v = TensorLayout::contiguous(DType::kF16, {2, 2, 64, 128});
         d.o = TensorLayout::contiguous(DType::kF16, {2, 8, 64, 128});
       },
       "Dk = 64 != Dv = 128"},
      {"bool mask", [](SdpaDescriptor& d) { d.mask = TensorLayout::contiguous(DType::kU8, {64, 64}); }, "mask given"},
      {"head dim strided",
       [](SdpaDescriptor& d) { d.k = TensorLayout::strided(DType::kF16, {2, 2, 64, 64}, {2 * 64 * 128, 64 * 128, 128, 2}); },
       "k.strides[3] = 2"},
      {"row stride not 16-byte",
       [](SdpaDescriptor& d) { d.v = TensorLayout::strided(DType::kF16, {2, 2, 64, 64}, {2 * 64 * 68, 64 * 68, 68, 1}); },
       "v.strides[2] = 68"},
      {"alignment 8", [](SdpaDescriptor& d) { d.o.alignment = 8; }, "o.alignment = 8"},
      {"bias dtype", [](SdpaDescriptor& d) { d.bias = TensorLayout::contiguous(DType::kBF16, {64, 64}); }, "bias.dtype = bf16"},
      {"negative stride",
       [](SdpaDescriptor& d) { d.q = TensorLayout::strided(DType::kF16, {2, 8, 64, 64}, {8 * 64 * 64, 64 * 64, -64, 1}); },
       "q.strides[2] = -64"},
  };
  for (const auto& c : cases) {
    auto d = base;
    c.change(d);
    SCOPED_TRACE(c.name);
    const std::string why = refusal<SdpaPlan>(d);
    EXPECT_NE(why.find(c.needle), std::string::npos) << "wanted '" << c.needle << "' in\n" << why;
  }
}

TEST(FlashSdpaProbe, BackwardSkusAndWorkspace) {
  auto f = dense(DType::kBF16, 2, 8, 2, 100, 64, 128);
  auto d = backward_of(f);
  auto atomic = SdpaBackwardPlan::select_for_caps(caps(90), d, flash_only());
  ASSERT_TRUE(atomic.has_value()) << atomic.error().to_string();
  EXPECT_EQ(atomic->sku().name(), "sdpa.bwd.flash_mma_atomic[bf16,f32].sm80+");
  EXPECT_FALSE(atomic->sku().precision.deterministic);
  // Delta (f32 per query row and head) + the f32 dQ accumulator, each rounded to 256 bytes.
  const std::size_t delta = (2 * 8 * 100 * 4 + 255) / 256 * 256;
  const std::size_t accum = (2 * 8 * 100 * 128 * 4 + 255) / 256 * 256;
  EXPECT_EQ(atomic->workspace_size(), delta + accum);

  PlanPreference det = flash_only();
  det.deterministic = true;
  auto p = SdpaBackwardPlan::select_for_caps(caps(90), d, det);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "sdpa.bwd.flash_mma_det[bf16,f32].sm80+");
  EXPECT_TRUE(p->sku().precision.deterministic);
  EXPECT_EQ(p->workspace_size(), delta);

  auto gb = d;
  gb.bias = TensorLayout::contiguous(DType::kF32, {100, 64});
  gb.grad_bias = gb.bias;
  EXPECT_NE(refusal<SdpaBackwardPlan>(gb).find("grad_bias wanted"), std::string::npos);
  auto nolse = d;
  nolse.lse = TensorLayout{};
  EXPECT_NE(refusal<SdpaBackwardPlan>(nolse), "");
  auto bad = d;
  bad.grad_k = TensorLayout::strided(DType::kBF16, {2, 2, 64, 128}, {2 * 64 * 136, 64 * 136, 132, 1});
  EXPECT_NE(refusal<SdpaBackwardPlan>(bad).find("grad_k.strides[2] = 132"), std::string::npos);
  auto wrong = d;
  wrong.grad_q.dtype = DType::kF16;
  EXPECT_NE(refusal<SdpaBackwardPlan>(wrong).find("grad_q.dtype = f16"), std::string::npos);
}

// ---------------------------------------------------------------- select-time refusals of the Flash plans
// FlashSdpaPlan / FlashSdpaBackwardPlan (unforced: the cuDNN SKU and ours): the descriptor
// checks they share with SdpaPlan refuse with kInvalidArgument, naming field and value.
FlashSdpaDescriptor flash_valid() { return FlashSdpaDescriptor{dense(DType::kBF16, 2, 8, 2, 64, 64, 64)}; }
FlashSdpaBackwardDescriptor flash_valid_bwd() { return FlashSdpaBackwardDescriptor{backward_of(flash_valid())}; }

TEST(FlashSdpaRefusals, SelectNamesFieldAndValue) {
  using D = FlashSdpaDescriptor;
  test::expect_select_refusals<FlashSdpaPlan>(
      flash_valid(),
      {
          {"dtype", [](D& d) { d.q.dtype = d.k.dtype = d.v.dtype = d.o.dtype = DType::kI32; }, "q.dtype = i32 (sdpa takes"},
          {"dtype", [](D& d) { d.k.dtype = DType::kF16; }, "k.dtype = f16, expected bf16 (q, k, v and o share one dtype)"},
          {"dtype", [](D& d) { d.o.dtype = DType::kF32; }, "o.dtype = f32, expected bf16"},
          {"dtype", [](D& d) { d.lse.dtype = DType::kBF16; }, "lse.dtype = bf16, expected f32"},
          {"shape", [](D& d) { d.v = TensorLayout::contiguous(DType::kBF16, {2, 2, 63, 64}); },
           "v.shape[2] = 63 != k.shape[2] (Skv) = 64"},
          {"shape", [](D& d) { d.o = TensorLayout::contiguous(DType::kBF16, {2, 4, 64, 64}); },
           "o.shape[1] = 4 != q.shape[1] (query heads) = 8"},
          {"shape", [](D& d) { d.k = d.v = TensorLayout::contiguous(DType::kBF16, {2, 3, 64, 64}); },
           "k.shape[1] = 3 does not divide q.shape[1] = 8"},
          {"shape", [](D& d) { d.lse = TensorLayout::contiguous(DType::kF32, {2, 8, 63}); }, "lse.shape[2] = 63 != q.shape[2] (Sq) = 64"},
          {"stride", [](D& d) { d.o.strides[2] = 0; }, "o = bf16[2,8,64,64]{32768,4096,0,1} maps several elements to one address"},
          {"stride", [](D& d) { d.lse.strides[2] = 0; }, "lse = f32[2,8,64]{512,64,0} maps several elements to one address"},
          {"layout", [](D& d) { d.q.alignment = 12; }, "q.alignment = 12 is not a power of two"},
      });
  using B = FlashSdpaBackwardDescriptor;
  test::expect_select_refusals<FlashSdpaBackwardPlan>(
      flash_valid_bwd(),
      {
          {"dtype", [](B& d) { d.grad_v.dtype = DType::kF16; }, "grad_v.dtype = f16, expected bf16 (gradients have q's dtype)"},
          {"dtype",
           [](B& d) {
             for (auto* t : {&d.q, &d.k, &d.v, &d.o, &d.grad_o, &d.grad_q, &d.grad_k, &d.grad_v}) t->dtype = DType::kE4M3;
           },
           "q.dtype = e4m3 (sdpa takes f64, f32, f16, bf16; e4m3 is forward only)"},
          {"shape", [](B& d) { d.grad_q = TensorLayout::contiguous(DType::kBF16, {2, 8, 64, 32}); },
           "grad_q = bf16[2,8,64,32] does not have the shape of q = bf16[2,8,64,64]"},
          {"shape", [](B& d) { d.lse = {}; }, "lse.rank = 0: the backward needs the forward's logsumexp"},
          {"stride", [](B& d) { d.grad_k.strides[2] = 0; },
           "grad_k = bf16[2,2,64,64]{8192,4096,0,1} maps several elements to one address"},
      });
}

// What no fused SKU takes: select refuses with kNotSupported and the error lists each
// candidate's reason, the cuDNN SKU's and ours (their texts differ; both name field and value).
TEST(FlashSdpaRefusals, NoFusedSkuNamesFieldAndValue) {
  struct Case {
    const char* category;
    std::function<void(SdpaDescriptor&)> change;
    const char* cudnn;  // the cuDNN SKU's reason
    const char* ours;   // the flash SKUs' reason
  };
  const std::vector<Case> cases = {
      {"dtype", [](SdpaDescriptor& d) { d.q.dtype = d.k.dtype = d.v.dtype = d.o.dtype = DType::kF32; },
       "q.dtype = f32: cuDNN fused attention takes f16 and bf16", "q.dtype = f32: the flash SKUs take f16 and bf16"},
      {"dtype", [](SdpaDescriptor& d) { d.mask = TensorLayout::contiguous(DType::kU8, {64, 64}); },
       "mask given: cuDNN's SDPA takes no bool mask", "mask given: the flash SKUs take no bool mask"},
      {"stride",
       [](SdpaDescriptor& d) { d.k = TensorLayout::strided(DType::kBF16, {2, 2, 64, 64}, {2 * 64 * 128, 64 * 128, 128, 2}); },
       "k.strides[3] = 2: cuDNN needs the head dim contiguous", "k.strides[3] = 2: the flash SKUs need a contiguous head dim"},
      {"stride",
       [](SdpaDescriptor& d) { d.v = TensorLayout::strided(DType::kBF16, {2, 2, 64, 64}, {2 * 64 * 68, 64 * 68, 68, 1}); },
       "v.strides[2] = 68: cuDNN needs positive strides that keep 16-byte rows",
       "v.strides[2] = 68 elements: the flash SKUs need 16-byte aligned rows"},
      {"stride",
       [](SdpaDescriptor& d) { d.q = TensorLayout::strided(DType::kBF16, {2, 8, 64, 64}, {8 * 64 * 64, 64 * 64, -64, 1}); },
       "q.strides[2] = -64: cuDNN needs positive strides", "q.strides[2] = -64: the flash SKUs take no negative strides"},
      {"alignment", [](SdpaDescriptor& d) { d.o.alignment = 8; }, "o.alignment = 8: cuDNN needs 16-byte aligned data",
       "o.alignment = 8 bytes: the flash SKUs need 16"},
  };
  auto expect_both = [](const Status& st, const Case& c) {
    EXPECT_EQ(st.code(), Code::kNotSupported) << st.to_string();
    EXPECT_NE(st.message().find(c.cudnn), std::string::npos) << "wanted '" << c.cudnn << "' in\n" << st.message();
    EXPECT_NE(st.message().find(c.ours), std::string::npos) << "wanted '" << c.ours << "' in\n" << st.message();
  };
  for (const Case& c : cases) {
    FlashSdpaDescriptor d = flash_valid();
    c.change(d);
    SCOPED_TRACE(std::string(c.category) + ": " + d.to_string());
    auto p = FlashSdpaPlan::select_for_caps(caps(90), d);
    ASSERT_FALSE(p.has_value()) << "accepted by " << p->sku().name();
    expect_both(p.error(), c);
    FlashSdpaBackwardDescriptor g{backward_of(d)};
    auto q = FlashSdpaBackwardPlan::select_for_caps(caps(90), g);
    ASSERT_FALSE(q.has_value()) << "accepted by " << q->sku().name();
    expect_both(q.error(), c);
  }
  // The backward's own: gradients the SKUs cannot write, the bias gradient.
  auto g = flash_valid_bwd();
  g.grad_k = TensorLayout::strided(DType::kBF16, {2, 2, 64, 64}, {2 * 64 * 136, 64 * 136, 132, 1});
  auto r = FlashSdpaBackwardPlan::select_for_caps(caps(90), g);
  ASSERT_FALSE(r.has_value());
  expect_both(r.error(), {"stride", nullptr, "grad_k.strides[2] = 132: cuDNN needs positive strides",
                          "grad_k.strides[2] = 132 elements: the flash SKUs need 16-byte aligned rows"});
  g = flash_valid_bwd();
  g.bias = g.grad_bias = TensorLayout::contiguous(DType::kBF16, {64, 64});
  r = FlashSdpaBackwardPlan::select_for_caps(caps(90), g);
  ASSERT_FALSE(r.has_value());
  expect_both(r.error(), {"grad_bias", nullptr, "grad_bias given: the cuDNN SKU does not compute the bias gradient",
                          "grad_bias wanted: the flash SKUs do not return the bias gradient"});
}

}  // namespace
}  // namespace baracuda
