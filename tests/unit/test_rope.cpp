// RopePlan / RopeBackwardPlan and AlibiPlan / AlibiBackwardPlan on the CPU: HF's inv_freq rules
// against values computed with HF's formulas (transformers' modeling_rope_utils, evaluated in
// Python doubles), the ALiBi slopes, the oracle's identities (backward = transpose, position 0
// = identity, caches = computed tables, slope gradient by finite differences), select-time
// refusals naming field and value, and the candidate listing.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/alibi.hpp"
#include "baracuda/ops/rope.hpp"
#include "baracuda/reference/alibi.hpp"
#include "baracuda/reference/rope.hpp"
#include "select_refusals.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::fabs(want)) << what;
}

// ---------------------------------------------------------------- inv_freq rules
TEST(RopeInvFreq, DefaultIsThetaPower) {
  auto inv = rope_inv_freq(RopeOptions{}, 64);
  ASSERT_TRUE(inv.has_value());
  ASSERT_EQ(inv->size(), 32u);
  for (int i = 0; i < 32; ++i) expect_rel((*inv)[static_cast<std::size_t>(i)], std::pow(10000.0, -2.0 * i / 64), "i=" + std::to_string(i));
  RopeOptions lin;
  lin.scaling = RopeScaling::kLinear;
  lin.factor = 4;
  auto l = rope_inv_freq(lin, 64).value();
  for (int i = 0; i < 32; ++i) expect_rel(l[static_cast<std::size_t>(i)], (*inv)[static_cast<std::size_t>(i)] / 4, "linear");
  EXPECT_EQ(rope_attention_factor(lin), 1.0);
}

// Values from HF's formulas (transformers _compute_llama3_parameters, Llama 3.1: theta 500000,
// factor 8, low 1, high 4, original 8192, head dim 128).
TEST(RopeInvFreq, Llama3MatchesHF) {
  RopeOptions o;
  o.theta = 500000;
  o.scaling = RopeScaling::kLlama3;
  o.factor = 8;
  o.low_freq_factor = 1;
  o.high_freq_factor = 4;
  o.original_max_position = 8192;
  auto inv = rope_inv_freq(o, 128);
  ASSERT_TRUE(inv.has_value()) << inv.error().to_string();
  const std::pair<int, double> want[] = {{0, 1.0},
                                         {10, 0.12868737343265052},
                                         {20, 0.016560440080994446},
                                         {30, 0.0013718935677611381},
                                         {40, 3.428102195952591e-05},
                                         {50, 4.411534674558404e-06},
                                         {63, 3.068925988914511e-07}};
  for (auto [i, v] : want) expect_rel((*inv)[static_cast<std::size_t>(i)], v, "llama3 i=" + std::to_string(i));
  EXPECT_EQ(rope_attention_factor(o), 1.0);
}

// HF _compute_yarn_parameters: theta 10000, factor 4, original 4096, beta 32 / 1, dim 128
// (correction range [20, 46]); attention factor 0.1 ln 4 + 1.
TEST(RopeInvFreq, YarnMatchesHF) {
  RopeOptions o;
  o.scaling = RopeScaling::kYarn;
  o.factor = 4;
  o.original_max_position = 4096;
  auto inv = rope_inv_freq(o, 128);
  ASSERT_TRUE(inv.has_value()) << inv.error().to_string();
  const std::pair<int, double> want[] = {{0, 1.0},
                                         {10, 0.23713737056616555},
                                         {15, 0.1154781984689458},
                                         {16, 0.1},
                                         {20, 0.056234132519034905},
                                         {25, 0.023434552639377708},
                                         {30, 0.009488517882700576},
                                         {40, 0.0013378867023789293},
                                         {63, 2.8869549617236455e-05}};
  for (auto [i, v] : want) expect_rel((*inv)[static_cast<std::size_t>(i)], v, "yarn i=" + std::to_string(i));
  expect_rel(rope_attention_factor(o), 1.138629436111989, "yarn mscale");
  o.attention_factor = 0.5;
  EXPECT_EQ(rope_attention_factor(o), 0.5);
}

TEST(RopeInvFreq, NtkScalesTheBase) {
  RopeOptions o;
  o.scaling = RopeScaling::kNtk;
  o.factor = 4;
  auto inv = rope_inv_freq(o, 128).value();
  expect_rel(inv[1], 0.8471171851512068, "ntk i=1");
  expect_rel(inv[63], 2.8869549617236452e-05, "ntk i=63");
}

TEST(RopeInvFreq, RefusalsNameTheOption) {
  RopeOptions o;
  o.theta = -1;
  EXPECT_NE(rope_inv_freq(o, 64).error().message().find("options.theta = -1"), std::string::npos);
  o = {};
  o.scaling = RopeScaling::kYarn;
  o.factor = 4;
  EXPECT_NE(rope_inv_freq(o, 64).error().message().find("options.original_max_position = 0"), std::string::npos);
  o.scaling = RopeScaling::kLlama3;
  o.original_max_position = 8192;
  o.high_freq_factor = 1;
  EXPECT_NE(rope_inv_freq(o, 64).error().message().find("options.high_freq_factor = 1"), std::string::npos);
  EXPECT_NE(rope_inv_freq(RopeOptions{}, 63).error().message().find("rotary_dim = 63"), std::string::npos);
}

// ---------------------------------------------------------------- ALiBi slopes
TEST(AlibiSlopes, PowerOfTwoAndClosestPowerRule) {
  auto s8 = alibi_slopes(8);
  ASSERT_EQ(s8.size(), 8u);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s8[static_cast<std::size_t>(h)], std::ldexp(1.0f, -(h + 1)));
  // 12 heads: the 8 slopes of 8 heads, then slopes 1, 3, 5, 7 of 16 heads (2^-0.5, 2^-1.5, ...)
  auto s12 = alibi_slopes(12);
  ASSERT_EQ(s12.size(), 12u);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s12[static_cast<std::size_t>(h)], s8[static_cast<std::size_t>(h)]);
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(s12[static_cast<std::size_t>(8 + k)], static_cast<float>(std::pow(2.0, -0.5 - k)));
  EXPECT_EQ(alibi_slopes(1), std::vector<float>{0.00390625f});  // 2^-8
  EXPECT_TRUE(alibi_slopes(0).empty());
}

// ---------------------------------------------------------------- oracle identities
void fill(HostTensor& t, std::mt19937_64& rng, double lo = -2, double hi = 2) {
  reference::fill_random(t, rng, lo, hi, false);
}

// The backward is the transpose: <R x, g> = <x, R^T g> (exact results, both styles, partial
// rotary, YaRN's attention factor, q + k).
TEST(RopeReference, BackwardIsTheTranspose) {
  std::mt19937_64 rng(11);
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
    const auto xl = TensorLayout::contiguous(DType::kF64, {2, 5, 3, 12});
    const auto kl = TensorLayout::contiguous(DType::kF64, {2, 5, 1, 12});
    RopeDescriptor d{.x = xl, .y = xl, .x2 = kl, .y2 = kl};
    d.options.style = style;
    d.options.rotary_dim = 8;
    d.options.scaling = RopeScaling::kYarn;
    d.options.factor = 2;
    d.options.original_max_position = 64;
    d.options.position_offset = 3;
    RopeBackwardDescriptor bd{.grad_y = xl, .grad_x = xl, .grad_y2 = kl, .grad_x2 = kl};
    bd.options = d.options;
    HostTensor x(xl), k(kl), g(xl), gk(kl);
    fill(x, rng);
    fill(k, rng);
    fill(g, rng);
    fill(gk, rng);
    auto y = reference::rope(d, {.x = &x, .x2 = &k}).value();
    auto gx = reference::rope_backward(bd, {.x = &g, .x2 = &gk}).value();
    double lhs = 0, rhs = 0;
    for (std::int64_t i = 0; i < xl.numel(); ++i) {
      lhs += y.y.exact[static_cast<std::size_t>(i)] * g.get(i);
      rhs += x.get(i) * gx.y.exact[static_cast<std::size_t>(i)];
    }
    for (std::int64_t i = 0; i < kl.numel(); ++i) {
      lhs += y.y2.exact[static_cast<std::size_t>(i)] * gk.get(i);
      rhs += k.get(i) * gx.y2.exact[static_cast<std::size_t>(i)];
    }
    EXPECT_NEAR(lhs, rhs, 1e-12 * (std::fabs(lhs) + 1)) << rope_style_name(style);
    // pass-through dims 8..11 are copies
    for (std::int64_t i = 8; i < xl.numel(); i += 12) EXPECT_EQ(y.y.exact[static_cast<std::size_t>(i)], x.get(i));
  }
}

// Position 0 is the identity; a cos / sin cache built from inv_freq gives the computed result;
// [B, H, S, D] with [B, S] position ids equals [B, S, H, D] with the same ids.
TEST(RopeReference, CachesLayoutsAndPositions) {
  std::mt19937_64 rng(12);
  const std::int64_t B = 2, S = 6, H = 3, D = 8;
  const auto bshd = TensorLayout::contiguous(DType::kF64, {B, S, H, D});
  const auto bhsd = TensorLayout::contiguous(DType::kF64, {B, H, S, D});
  const auto ids_l = TensorLayout::contiguous(DType::kI64, {B, S});
  HostTensor x(bshd), xt(bhsd), ids(ids_l);
  fill(x, rng);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t s = 0; s < S; ++s) {
      ids.set(b * S + s, static_cast<double>((b * 7 + s * 3) % 10));
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t e = 0; e < D; ++e) xt.set(((b * H + h) * S + s) * D + e, x.get(((b * S + s) * H + h) * D + e));
    }
  RopeDescriptor d{.x = bshd, .y = bshd, .position_ids = ids_l};
  auto y = reference::rope(d, {.x = &x, .position_ids = &ids}).value();
  RopeDescriptor dt{.x = bhsd, .y = bhsd, .position_ids = ids_l};
  dt.options.seq_axis = 2;
  auto yt = reference::rope(dt, {.x = &xt, .position_ids = &ids}).value();
  const auto inv = rope_inv_freq(d.options, D).value();
  const auto cl = TensorLayout::contiguous(DType::kF64, {10, D / 2});
  HostTensor cc(cl), ss(cl);
  for (std::int64_t p = 0; p < 10; ++p)
    for (std::int64_t i = 0; i < D / 2; ++i) {
      cc.set(p * D / 2 + i, std::cos(static_cast<double>(p) * inv[static_cast<std::size_t>(i)]));
      ss.set(p * D / 2 + i, std::sin(static_cast<double>(p) * inv[static_cast<std::size_t>(i)]));
    }
  RopeDescriptor dc = d;
  dc.cos = dc.sin = cl;
  auto yc = reference::rope(dc, {.x = &x, .position_ids = &ids, .cos = &cc, .sin = &ss}).value();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t e = 0; e < D; ++e) {
          const auto i = static_cast<std::size_t>(((b * S + s) * H + h) * D + e);
          const auto it = static_cast<std::size_t>(((b * H + h) * S + s) * D + e);
          EXPECT_NEAR(y.y.exact[i], yt.y.exact[it], 1e-15);
          EXPECT_NEAR(y.y.exact[i], yc.y.exact[i], 1e-14);
          if (ids.get(b * S + s) == 0) EXPECT_EQ(y.y.exact[i], x.get(static_cast<std::int64_t>(i)));
        }
  // a position outside the cache gives NaN in the rotated elements
  ids.set(0, 10);
  auto bad = reference::rope(dc, {.x = &x, .position_ids = &ids, .cos = &cc, .sin = &ss}).value();
  EXPECT_TRUE(std::isnan(bad.y.exact[0]));
}

// d/dslope of sum(g * alibi(s)) by central differences equals the backward's grad_slopes.
TEST(AlibiReference, SlopeGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(13);
  for (bool per_batch : {false, true})
    for (CausalAlign a : {CausalAlign::kBottomRight, CausalAlign::kTopLeft}) {
      const auto sl = TensorLayout::contiguous(DType::kF64, {2, 3, 4, 6});
      const auto pl = TensorLayout::contiguous(DType::kF32, per_batch ? std::vector<std::int64_t>{2, 3} : std::vector<std::int64_t>{3});
      HostTensor s(sl), g(sl), slopes(pl);
      fill(s, rng);
      fill(g, rng);
      fill(slopes, rng, 0.1, 1);
      AlibiDescriptor d{.s = sl, .y = sl, .slopes = pl, .align = a};
      auto loss = [&](const HostTensor& sp) {
        auto y = reference::alibi(d, &s, sp).value();
        double t = 0;
        for (std::int64_t i = 0; i < sl.numel(); ++i) t += g.get(i) * y.exact[static_cast<std::size_t>(i)];
        return t;
      };
      AlibiBackwardDescriptor bd{.grad_y = sl, .grad_s = sl, .grad_slopes = TensorLayout::contiguous(DType::kF32, pl.shape_span()), .align = a};
      auto gr = reference::alibi_backward(bd, g).value();
      for (std::int64_t k = 0; k < pl.numel(); ++k) {
        // the loss is linear in the slope: a wide difference is exact up to rounding
        HostTensor sp = slopes, sm = slopes;
        sp.set(k, slopes.get(k) + 0.5);
        sm.set(k, slopes.get(k) - 0.5);
        const double fd = (loss(sp) - loss(sm)) / (sp.get(k) - sm.get(k));
        EXPECT_NEAR(gr.grad_slopes.exact[static_cast<std::size_t>(k)], fd, 1e-9) << k;
      }
      for (std::int64_t i = 0; i < sl.numel(); ++i) EXPECT_EQ(gr.grad_s.exact[static_cast<std::size_t>(i)], g.get(i));
      // bias alone + s = the add
      AlibiDescriptor bias = d;
      bias.s = {};
      auto yb = reference::alibi(bias, nullptr, slopes).value();
      auto ys = reference::alibi(d, &s, slopes).value();
      for (std::int64_t i = 0; i < sl.numel(); ++i)
        EXPECT_NEAR(ys.exact[static_cast<std::size_t>(i)], s.get(i) + yb.exact[static_cast<std::size_t>(i)], 1e-15);
    }
}

// ---------------------------------------------------------------- select: candidates and refusals
TEST(RopePlanSelect, CandidatesAndSkus) {
  const auto x = TensorLayout::contiguous(DType::kBF16, {8, 4096, 32, 128});
  const auto k = TensorLayout::contiguous(DType::kBF16, {8, 4096, 8, 128});
  const auto cache = TensorLayout::contiguous(DType::kF32, {4096, 64});
  RopeDescriptor d{.x = x, .y = x, .x2 = k, .y2 = k, .cos = cache, .sin = cache};
  auto p = RopePlan::select_for_caps(caps90(), d);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "rope.fwd.vec16[bf16,f32].sm80+");
  EXPECT_EQ(p->workspace_size(), 0u);
  auto reports = RopePlan::candidates(caps90(), d).value();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1].sku.impl, "strided");
  EXPECT_TRUE(reports[1].rejection.empty());
  // a head dim that is not unit-stride: only the strided SKU
  const auto xt = TensorLayout::strided(DType::kF32, {2, 16, 4, 64}, {4096, 1, 16 * 64 * 2, 16 * 2});
  RopeDescriptor ds{.x = xt, .y = TensorLayout::contiguous(DType::kF32, {2, 16, 4, 64})};
  auto rs = RopePlan::candidates(caps90(), ds).value();
  EXPECT_NE(rs[0].rejection.find("x head-dim stride 32 (needs 1)"), std::string::npos) << rs[0].rejection;
  auto ps = RopePlan::select_for_caps(caps90(), ds);
  ASSERT_TRUE(ps.has_value());
  EXPECT_EQ(ps->sku().name(), "rope.fwd.strided[f32,f32].sm80+");
  // interleaved f64 with rotary_dim 6: R % 2 == 0 suffices for its 2-element vectors
  RopeDescriptor di{.x = TensorLayout::contiguous(DType::kF64, {3, 5, 10}), .y = TensorLayout::contiguous(DType::kF64, {3, 5, 10})};
  di.options.seq_axis = 0;
  di.options.style = RopeStyle::kInterleaved;
  di.options.rotary_dim = 6;
  EXPECT_EQ(RopePlan::select_for_caps(caps90(), di)->sku().name(), "rope.fwd.vec16[f64,f64].sm80+");
  di.options.style = RopeStyle::kNeox;  // R / 2 = 3 is not a whole 2-element vector
  EXPECT_EQ(RopePlan::select_for_caps(caps90(), di)->sku().name(), "rope.fwd.strided[f64,f64].sm80+");
  RopeBackwardDescriptor bd{.grad_y = x, .grad_x = x};
  EXPECT_EQ(RopeBackwardPlan::select_for_caps(caps90(), bd)->sku().name(), "rope.bwd.vec16[bf16,f32].sm80+");
  EXPECT_NE(d.hash(), RopeDescriptor{}.hash());
  EXPECT_NE(d.to_string().find("style=neox"), std::string::npos);
}

TEST(RopePlanSelect, RefusalsNameFieldAndValue) {
  const auto x = TensorLayout::contiguous(DType::kF16, {2, 16, 4, 64});
  const auto ids = TensorLayout::contiguous(DType::kI32, {2, 16});
  const auto cache = TensorLayout::contiguous(DType::kF32, {32, 32});
  using D = RopeDescriptor;
  const D valid{.x = x, .y = x, .position_ids = ids, .cos = cache, .sin = cache};
  test::expect_select_refusals<RopePlan>(
      valid,
      {
          {"dtype", [](D& d) { d.x.dtype = d.y.dtype = DType::kI32; }, "x.dtype = i32"},
          {"dtype", [](D& d) { d.y.dtype = DType::kBF16; }, "y.dtype = bf16"},
          {"dtype", [](D& d) { d.position_ids.dtype = DType::kF32; }, "position_ids.dtype = f32"},
          {"dtype", [](D& d) { d.cos.dtype = d.sin.dtype = DType::kBF16; }, "cos.dtype = bf16"},
          {"shape", [](D& d) { d.y = TensorLayout::contiguous(DType::kF16, {2, 16, 4, 32}); }, "y = f16[2,16,4,32]"},
          {"shape", [](D& d) { d.position_ids = TensorLayout::contiguous(DType::kI32, {3, 16}); }, "position_ids = i32[3,16]"},
          {"shape", [](D& d) { d.cos = d.sin = TensorLayout::contiguous(DType::kF32, {32, 16}); }, "cos = f32[32,16]"},
          {"shape", [](D& d) { d.sin = TensorLayout{}; }, "cos is given without sin"},
          {"shape", [](D& d) {
             d.x2 = TensorLayout::contiguous(DType::kF16, {2, 8, 1, 64});
             d.y2 = d.x2;
           }, "x2 = f16[2,8,1,64]"},
          {"shape", [](D& d) { d.y2 = d.x; }, "y2 = f16[2,16,4,64] is given without x2"},
          {"shape", [](D& d) { d.x = d.y = TensorLayout::contiguous(DType::kF16, {16, 64}); }, "x.rank = 2"},
          {"axis", [](D& d) { d.options.seq_axis = 0; }, "options.seq_axis = 0"},
          {"axis", [](D& d) { d.options.rotary_dim = 30 + 1; }, "options.rotary_dim = 31"},
          {"axis", [](D& d) { d.options.rotary_dim = 128; }, "options.rotary_dim = 128"},
          {"axis", [](D& d) {
             d.position_ids = {};
             d.options.position_offset = 20;
           }, "options.position_offset = 20 + S = 16 exceeds the cache's max_pos = 32"},
          {"option", [](D& d) {
             d.cos = d.sin = {};
             d.options.theta = 0;
           }, "options.theta = 0"},
          {"option", [](D& d) {
             d.cos = d.sin = {};
             d.options.scaling = RopeScaling::kLlama3;
             d.options.factor = 8;
           }, "options.original_max_position = 0"},
          {"stride", [](D& d) { d.y.strides[2] = 0; }, "y"},
      });
}

TEST(RopePlanSelect, BackwardRefusals) {
  const auto g = TensorLayout::contiguous(DType::kBF16, {2, 4, 16, 32});
  using D = RopeBackwardDescriptor;
  D valid{.grad_y = g, .grad_x = g};
  valid.options.seq_axis = 2;
  test::expect_select_refusals<RopeBackwardPlan>(
      valid, {
                 {"dtype", [](D& d) { d.grad_x.dtype = DType::kF32; }, "grad_x.dtype = f32"},
                 {"shape", [](D& d) { d.grad_x = TensorLayout::contiguous(DType::kBF16, {2, 4, 16, 16}); }, "grad_x = bf16[2,4,16,16]"},
                 {"axis", [](D& d) { d.options.seq_axis = 3; }, "options.seq_axis = 3"},
                 {"option", [](D& d) { d.options.position_offset = -1; }, "options.position_offset = -1"},
             });
}

// Stride / layout cases with the full message: an output whose strides map two elements to
// one address (y, y2, grad_x, grad_x2), alignments that are not powers of two, and the
// backward's own dtype / shape / axis cases (RopePlanSelect.BackwardRefusals has four).
TEST(RopePlanSelect, StridesNameFieldAndValue) {
  const auto x = TensorLayout::contiguous(DType::kF16, {2, 16, 4, 64});
  const auto k = TensorLayout::contiguous(DType::kF16, {2, 16, 2, 64});
  const auto cache = TensorLayout::contiguous(DType::kF32, {32, 32});
  using D = RopeDescriptor;
  test::expect_select_refusals<RopePlan>(
      D{.x = x, .y = x, .x2 = k, .y2 = k, .cos = cache, .sin = cache},
      {
          {"stride", [](D& d) { d.y.strides[2] = 0; }, "y = f16[2,16,4,64]{4096,256,0,1} maps several elements to one address"},
          {"stride", [](D& d) { d.y2.strides[1] = 0; }, "y2 = f16[2,16,2,64]{2048,0,64,1} maps several elements to one address"},
          {"layout", [](D& d) { d.x.alignment = 3; }, "x.alignment = 3 is not a power of two"},
          {"layout", [](D& d) { d.sin.alignment = 6; }, "sin.alignment = 6 is not a power of two"},
          {"dtype", [](D& d) { d.x2.dtype = DType::kBF16; }, "x2.dtype = bf16 differs from x.dtype = f16"},
          {"dtype", [](D& d) { d.y2.dtype = DType::kF32; }, "y2.dtype = f32 differs from x2.dtype = f16"},
          {"dtype", [](D& d) { d.sin.dtype = DType::kF16; }, "sin.dtype = f16 differs from cos.dtype = f32"},
          {"shape", [](D& d) { d.y2 = TensorLayout::contiguous(DType::kF16, {2, 16, 4, 64}); },
           "y2 = f16[2,16,4,64] does not have the shape of x2 = f16[2,16,2,64]"},
          {"shape", [](D& d) { d.sin = TensorLayout::contiguous(DType::kF32, {16, 32}); },
           "sin = f32[16,32] does not have the shape of cos = f32[32,32]"},
          {"axis", [](D& d) { d.options.style = static_cast<RopeStyle>(4); }, "options.style = 4 is not a RopeStyle"},
      });
  const auto g = TensorLayout::contiguous(DType::kBF16, {2, 4, 16, 32});
  const auto g2 = TensorLayout::contiguous(DType::kBF16, {2, 2, 16, 32});
  using B = RopeBackwardDescriptor;
  B valid{.grad_y = g, .grad_x = g, .grad_y2 = g2, .grad_x2 = g2};
  valid.options.seq_axis = 2;
  test::expect_select_refusals<RopeBackwardPlan>(
      valid,
      {
          {"stride", [](B& d) { d.grad_x.strides[0] = 0; }, "grad_x = bf16[2,4,16,32]{0,512,32,1} maps several elements to one address"},
          {"stride", [](B& d) { d.grad_x2.strides[2] = 0; }, "grad_x2 = bf16[2,2,16,32]{1024,512,0,1} maps several elements to one address"},
          {"layout", [](B& d) { d.grad_y.alignment = 12; }, "grad_y.alignment = 12 is not a power of two"},
          {"dtype", [](B& d) { d.grad_y.dtype = d.grad_x.dtype = d.grad_y2.dtype = d.grad_x2.dtype = DType::kI32; },
           "grad_y.dtype = i32 is not supported by rope_backward (f64, f32, f16, bf16)"},
          {"dtype", [](B& d) { d.grad_y2.dtype = DType::kF16; }, "grad_y2.dtype = f16 differs from grad_y.dtype = bf16"},
          {"dtype", [](B& d) { d.position_ids = TensorLayout::contiguous(DType::kU32, {16}); }, "position_ids.dtype = u32 must be i32 or i64"},
          {"dtype",
           [](B& d) { d.cos = d.sin = TensorLayout::contiguous(DType::kF16, {16, 16}); },
           "cos.dtype = f16 must be f32 or x's dtype bf16"},
          {"shape", [](B& d) { d.grad_y2 = TensorLayout::contiguous(DType::kBF16, {2, 2, 8, 32}); },
           "grad_y2 = bf16[2,2,8,32] must match grad_y = bf16[2,4,16,32] in every dim but the head dim"},
          {"shape", [](B& d) { d.grad_y2 = {}; }, "grad_x2 = bf16[2,2,16,32] is given without grad_y2"},
          {"shape", [](B& d) { d.position_ids = TensorLayout::contiguous(DType::kI64, {3}); },
           "position_ids = i64[3] must be [S] = [16] or [B, S] = [2, 16]"},
          {"shape", [](B& d) { d.cos = d.sin = TensorLayout::contiguous(DType::kF32, {16, 8}); },
           "cos = f32[16,8] must be [max_pos, rotary_dim / 2 = 16]"},
          {"axis", [](B& d) { d.options.rotary_dim = 64; }, "options.rotary_dim = 64 (R = 64) must be even, >= 2, <= the head dim 32"},
          {"axis", [](B& d) { d.options.seq_axis = 0; }, "options.seq_axis = 0 for grad_y of rank 4 (needs 1 or 2)"},
          {"axis",
           [](B& d) { d.cos = d.sin = TensorLayout::contiguous(DType::kF32, {8, 16}); },
           "options.position_offset = 0 + S = 16 exceeds the cache's max_pos = 8"},
      });
}

// The workspace column: no RoPE SKU takes workspace (vec16 and strided, both directions, with
// and without caches / position ids / a second tensor).
TEST(RopePlanSelect, NoSkuTakesWorkspace) {
  const auto x = TensorLayout::contiguous(DType::kBF16, {2, 16, 4, 64});
  const auto k = TensorLayout::contiguous(DType::kBF16, {2, 16, 2, 64});
  const auto cache = TensorLayout::contiguous(DType::kF32, {32, 32});
  const auto ids = TensorLayout::contiguous(DType::kI64, {2, 16});
  const auto xt = TensorLayout::strided(DType::kF32, {2, 16, 4, 64}, {4096, 1, 16 * 64 * 2, 16 * 2});
  const std::vector<RopeDescriptor> fwd = {
      {.x = x, .y = x},
      {.x = x, .y = x, .x2 = k, .y2 = k, .position_ids = ids, .cos = cache, .sin = cache},
      {.x = xt, .y = TensorLayout::contiguous(DType::kF32, {2, 16, 4, 64})},
  };
  for (const auto& d : fwd) {
    SCOPED_TRACE(d.to_string());
    for (const auto& r : RopePlan::candidates(caps90(), d).value()) EXPECT_EQ(r.workspace_bytes, 0u) << r.sku.name();
    EXPECT_EQ(RopePlan::select_for_caps(caps90(), d)->workspace_size(), 0u);
    const RopeBackwardDescriptor b{.grad_y = d.x, .grad_x = d.y, .grad_y2 = d.x2, .grad_x2 = d.y2,
                                   .position_ids = d.position_ids, .cos = d.cos, .sin = d.sin};
    for (const auto& r : RopeBackwardPlan::candidates(caps90(), b).value()) EXPECT_EQ(r.workspace_bytes, 0u) << r.sku.name();
    EXPECT_EQ(RopeBackwardPlan::select_for_caps(caps90(), b)->workspace_size(), 0u);
  }
}

TEST(AlibiPlanSelect, CandidatesWorkspaceAndSkus) {
  const auto s = TensorLayout::contiguous(DType::kBF16, {8, 16, 2048, 2048});
  const auto sl = TensorLayout::contiguous(DType::kF32, {16});
  auto p = AlibiPlan::select_for_caps(caps90(), AlibiDescriptor{.s = s, .y = s, .slopes = sl});
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "alibi.fwd.vec16_rows[bf16,f32].sm80+");
  EXPECT_EQ(p->workspace_size(), 0u);
  const auto odd = TensorLayout::contiguous(DType::kBF16, {2, 4, 5, 7});
  auto r = AlibiPlan::candidates(caps90(), AlibiDescriptor{.y = odd, .slopes = TensorLayout::contiguous(DType::kF32, {4})}).value();
  EXPECT_NE(r[0].rejection.find("Skv = 7 is not a multiple of the 8-element vector"), std::string::npos) << r[0].rejection;
  EXPECT_TRUE(r[1].rejection.empty());
  AlibiBackwardDescriptor bd{.grad_y = s, .grad_s = s, .grad_slopes = TensorLayout::contiguous(DType::kF32, {8, 16})};
  auto b = AlibiBackwardPlan::select_for_caps(caps90(), bd);
  ASSERT_TRUE(b.has_value()) << b.error().to_string();
  EXPECT_EQ(b->sku().name(), "alibi.bwd.vec16_rows[bf16,f64].sm80+");
  EXPECT_GT(b->workspace_size(), 0u);
  EXPECT_EQ(b->workspace_size() % kWorkspaceAlignment, 0u);
  EXPECT_TRUE(b->sku().precision.deterministic);
  bd.grad_slopes = {};
  EXPECT_EQ(AlibiBackwardPlan::select_for_caps(caps90(), bd)->workspace_size(), 0u);
}

TEST(AlibiPlanSelect, RefusalsNameFieldAndValue) {
  const auto s = TensorLayout::contiguous(DType::kF32, {2, 4, 8, 16});
  const auto sl = TensorLayout::contiguous(DType::kF32, {4});
  using D = AlibiDescriptor;
  test::expect_select_refusals<AlibiPlan>(
      D{.s = s, .y = s, .slopes = sl},
      {
          {"dtype", [](D& d) { d.s.dtype = d.y.dtype = DType::kI8; }, "y.dtype = i8"},
          {"dtype", [](D& d) { d.s.dtype = DType::kF16; }, "s.dtype = f16"},
          {"dtype", [](D& d) { d.slopes.dtype = DType::kBF16; }, "slopes.dtype = bf16 must be f32"},
          {"shape", [](D& d) { d.slopes = TensorLayout::contiguous(DType::kF32, {3}); }, "slopes = f32[3]"},
          {"shape", [](D& d) { d.slopes = TensorLayout::contiguous(DType::kF32, {4, 4}); }, "slopes = f32[4,4]"},
          {"shape", [](D& d) { d.slopes = {}; }, "slopes are absent"},
          {"shape", [](D& d) { d.s = TensorLayout::contiguous(DType::kF32, {2, 4, 8, 15}); }, "s = f32[2,4,8,15]"},
          {"shape", [](D& d) { d.y = d.s = TensorLayout::contiguous(DType::kF32, {4, 8, 16}); }, "y = f32[4,8,16]"},
          {"stride", [](D& d) { d.y.strides[0] = 0; }, "y"},
      });
  using B = AlibiBackwardDescriptor;
  test::expect_select_refusals<AlibiBackwardPlan>(
      B{.grad_y = s, .grad_s = s, .grad_slopes = sl},
      {
          {"dtype", [](B& d) { d.grad_slopes.dtype = DType::kF64; }, "grad_slopes.dtype = f64 must be f32"},
          {"shape", [](B& d) { d.grad_s = TensorLayout::contiguous(DType::kF32, {2, 4, 8, 8}); }, "grad_s = f32[2,4,8,8]"},
          {"shape", [](B& d) { d.grad_s = d.grad_slopes = {}; }, "nothing to compute"},
          {"stride", [](B& d) { d.grad_slopes = TensorLayout::strided(DType::kF32, {4}, {0}); }, "grad_slopes"},
      });
}

// Alibi stride / layout and the backward's dtype / shape / option cases with the full message
// (AlibiPlanSelect.RefusalsNameFieldAndValue names the overlapping outputs by field alone).
TEST(AlibiPlanSelect, StridesDtypesAndShapesNameFieldAndValue) {
  const auto s = TensorLayout::contiguous(DType::kF32, {2, 4, 8, 16});
  const auto sl = TensorLayout::contiguous(DType::kF32, {4});
  using D = AlibiDescriptor;
  test::expect_select_refusals<AlibiPlan>(
      D{.s = s, .y = s, .slopes = sl},
      {
          {"stride", [](D& d) { d.y.strides[0] = 0; }, "y = f32[2,4,8,16]{0,128,16,1} maps several elements to one address"},
          {"layout", [](D& d) { d.y.alignment = 5; }, "y.alignment = 5 is not a power of two"},
          {"layout", [](D& d) { d.slopes.alignment = 0; }, "slopes.alignment = 0 is not a power of two"},
          {"axis", [](D& d) { d.align = static_cast<CausalAlign>(3); }, "align = 3 is not a CausalAlign"},
          {"shape", [](D& d) { d.slopes = TensorLayout::contiguous(DType::kF32, {3, 4}); },
           "slopes = f32[3,4] must be [H] = [4] or [B, H] = [2, 4]"},
      });
  using B = AlibiBackwardDescriptor;
  test::expect_select_refusals<AlibiBackwardPlan>(
      B{.grad_y = s, .grad_s = s, .grad_slopes = sl},
      {
          {"stride", [](B& d) { d.grad_s.strides[2] = 0; }, "grad_s = f32[2,4,8,16]{512,128,0,1} maps several elements to one address"},
          {"stride", [](B& d) { d.grad_slopes = TensorLayout::strided(DType::kF32, {4}, {0}); },
           "grad_slopes = f32[4]{0} maps several elements to one address"},
          {"dtype", [](B& d) { d.grad_y.dtype = d.grad_s.dtype = DType::kI8; },
           "grad_y.dtype = i8 is not supported by alibi_backward (f64, f32, f16, bf16)"},
          {"dtype", [](B& d) { d.grad_s.dtype = DType::kF16; }, "grad_s.dtype = f16 differs from grad_y.dtype = f32"},
          {"shape", [](B& d) { d.grad_y = d.grad_s = TensorLayout::contiguous(DType::kF32, {4, 8, 16}); },
           "grad_y = f32[4,8,16] must be [B, H, Sq, Skv] (rank 4)"},
          {"shape", [](B& d) { d.grad_slopes = TensorLayout::contiguous(DType::kF32, {2, 3}); },
           "grad_slopes = f32[2,3] must be [H] = [4] or [B, H] = [2, 4]"},
          {"axis", [](B& d) { d.align = static_cast<CausalAlign>(9); }, "align = 9 is not a CausalAlign"},
      });
}

// The workspace column of AlibiPlan: no SKU of the forward takes workspace (only the backward's
// slope gradient does; AlibiPlanSelect.CandidatesWorkspaceAndSkus).
TEST(AlibiPlanSelect, ForwardTakesNoWorkspace) {
  const auto sl = TensorLayout::contiguous(DType::kF32, {2, 4});
  for (const auto& y : {TensorLayout::contiguous(DType::kBF16, {2, 4, 16, 64}), TensorLayout::contiguous(DType::kF64, {2, 4, 5, 7}),
                        TensorLayout::strided(DType::kF32, {2, 4, 8, 8}, {256, 1, 32, 4})}) {
    for (bool with_s : {false, true}) {
      const AlibiDescriptor d{.s = with_s ? y : TensorLayout{}, .y = y, .slopes = sl};
      SCOPED_TRACE(d.to_string());
      for (const auto& r : AlibiPlan::candidates(caps90(), d).value()) EXPECT_EQ(r.workspace_bytes, 0u) << r.sku.name();
      EXPECT_EQ(AlibiPlan::select_for_caps(caps90(), d)->workspace_size(), 0u);
    }
  }
}

}  // namespace
}  // namespace baracuda
