// SdpaDecodePlan and KvCacheAppendPlan on the CPU: the oracle on known values (one key, equal
// scores, empty rows, softcap, ALiBi, sliding window, GQA mapping, paged == contiguous with
// shuffled pages), against reference::sdpa on the equivalent dense problems, its naive twin
// against exact, select's SKUs and split choice from caps
// alone (sm_80 / sm_89 / sm_90), the candidate lists with each rejection's reason, the
// select-time refusals naming field and value, and the run-time argument checks (null,
// misaligned, aliasing) on fake pointers.
// Filter: --gtest_filter='*Decode*:*KvCache*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/decode_shared.hpp"
#include "baracuda/baracuda.hpp"
#include "baracuda/reference/attention.hpp"
#include "baracuda/reference/decode.hpp"
#include "select_refusals.hpp"

namespace baracuda {
namespace {

using reference::DecodeShape;
using reference::HostTensor;

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

// Host operands of a decode descriptor, random q / caches in [-1, 1], seqlens and a block
// table whose pages are a random permutation.
struct HostDecode {
  SdpaDecodeDescriptor d;
  HostTensor q, k, v, bt, seqlens, alibi;
  HostDecode(const SdpaDecodeDescriptor& desc, const std::vector<std::int32_t>& lens, std::mt19937_64& rng)
      : d(desc), q(desc.q), k(desc.k_cache), v(desc.v_cache), bt(desc.block_table), seqlens(desc.seqlens_k), alibi(desc.alibi_slopes) {
    reference::fill_random(q, rng, -1, 1, false);
    reference::fill_random(k, rng, -1, 1, false);
    reference::fill_random(v, rng, -1, 1, false);
    for (std::size_t b = 0; b < lens.size(); ++b) seqlens.set(static_cast<std::int64_t>(b), lens[b]);
    if (desc.paged()) {
      std::vector<std::int32_t> pages(static_cast<std::size_t>(desc.k_cache.shape[0]));
      std::iota(pages.begin(), pages.end(), 0);
      std::shuffle(pages.begin(), pages.end(), rng);
      for (std::int64_t i = 0; i < desc.block_table.numel(); ++i) bt.set(i, pages[static_cast<std::size_t>(i) % pages.size()]);
    }
    if (desc.alibi_slopes.rank) reference::fill_random(alibi, rng, 0.01, 0.5, false);
  }
  Expected<reference::DecodeResult> run() const {
    return reference::sdpa_decode(d, q, k, v, d.paged() ? &bt : nullptr, seqlens, d.alibi_slopes.rank ? &alibi : nullptr);
  }
};

// num_pages = 0: a contiguous cache of `page` rows per sequence.
DecodeShape shape(DType t, std::int64_t b, std::int64_t sq, std::int64_t hq, std::int64_t hkv, std::int64_t dim,
                  std::int64_t page, std::int64_t max_pages, std::int64_t num_pages) {
  return num_pages > 0 ? reference::decode_shape(t, b, sq, hq, hkv, dim, page, max_pages, true, num_pages - b * max_pages)
                       : reference::decode_shape(t, b, sq, hq, hkv, dim, page, 1, false);
}

// ------------------------------------------------------------------------ reference
TEST(DecodeReference, OneKeyEqualScoresAndEmptyRows) {
  std::mt19937_64 rng(1);
  // f64, contiguous cache of 4 rows, 2 sequences: lengths 1 and 0; q = 0 gives equal scores.
  auto d = reference::decode_descriptor(shape(DType::kF64, 2, 1, 2, 1, 8, 4, 1, 0));
  HostDecode h(d, {1, 0}, rng);
  auto r = h.run();
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  const double s0 = [&] {
    double dot = 0;
    for (int c = 0; c < 8; ++c) dot += h.q.get(c) * h.k.get(c);
    return dot / std::sqrt(8.0);
  }();
  for (int c = 0; c < 8; ++c) EXPECT_DOUBLE_EQ(r->o.exact[c], h.v.get(c));  // one key: o = v
  EXPECT_DOUBLE_EQ(r->lse.exact[0], s0);                                    // lse = the one score
  for (int c = 0; c < 16; ++c) EXPECT_EQ(r->o.exact[16 + c], 0.0);          // sequence 1 sees no key
  EXPECT_EQ(r->lse.exact[2], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r->lse.exact[3], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r->empty, (std::vector<std::uint8_t>{0, 0, 1, 1}));
  // q = 0: every score 0, o = mean of the visible values, lse = log(len)
  auto d3 = reference::decode_descriptor(shape(DType::kF64, 1, 1, 1, 1, 4, 8, 1, 0));
  HostDecode z(d3, {5}, rng);
  for (int c = 0; c < 4; ++c) z.q.set(c, 0.0);
  auto rz = z.run().value();
  for (int c = 0; c < 4; ++c) {
    double mean = 0;
    for (int j = 0; j < 5; ++j) mean += z.v.get(j * 4 + c) / 5;
    EXPECT_NEAR(rz.o.exact[c], mean, 1e-15);
  }
  EXPECT_NEAR(rz.lse.exact[0], std::log(5.0), 1e-15);
}

TEST(DecodeReference, CausalMultiTokenWindowSoftcapAlibi) {
  std::mt19937_64 rng(2);
  // Sq = 3 tokens on a length-5 sequence: token t sees keys 0 .. 2 + t (bottom-right causal).
  auto d = reference::decode_descriptor(shape(DType::kF64, 1, 3, 1, 1, 4, 8, 1, 0));
  d.options.scale = 0.5;
  HostDecode h(d, {5}, rng);
  for (int c = 0; c < 4; ++c) h.q.set(c, 0.0), h.q.set(4 + c, 0.0), h.q.set(8 + c, 0.0);  // equal scores
  auto r = h.run().value();
  for (int t = 0; t < 3; ++t) EXPECT_NEAR(r.lse.exact[t], std::log(3.0 + t), 1e-15) << t;
  // window_left = 1: token t sees keys 1 + t .. 2 + t
  d.options.window_left = 1;
  HostDecode w(d, {5}, rng);
  for (int c = 0; c < 12; ++c) w.q.set(c, 0.0);
  auto rw = w.run().value();
  for (int t = 0; t < 3; ++t) {
    EXPECT_NEAR(rw.lse.exact[t], std::log(2.0), 1e-15);
    EXPECT_NEAR(rw.o.exact[t * 4], 0.5 * (w.v.get((1 + t) * 4) + w.v.get((2 + t) * 4)), 1e-15);
  }
  // not causal: every token sees all 5 keys
  d.options.window_left = -1;
  d.options.causal = false;
  HostDecode nc(d, {5}, rng);
  for (int c = 0; c < 12; ++c) nc.q.set(c, 0.0);
  auto rn = nc.run().value();
  for (int t = 0; t < 3; ++t) EXPECT_NEAR(rn.lse.exact[t], std::log(5.0), 1e-15);
  // seqlen 1 < Sq = 3 with causal: tokens 0 and 1 see nothing, token 2 sees key 0
  d.options.causal = true;
  HostDecode s1(d, {1}, rng);
  auto r1 = s1.run().value();
  EXPECT_EQ(r1.empty, (std::vector<std::uint8_t>{1, 1, 0}));
  // softcap bounds every score: lse <= log(len) + cap; ALiBi subtracts slope * distance
  auto dc = reference::decode_descriptor(shape(DType::kF64, 1, 1, 1, 1, 4, 8, 1, 0));
  dc.options.softcap = 0.25;
  dc.options.scale = 100;
  HostDecode c(dc, {4}, rng);
  EXPECT_LE(c.run().value().lse.exact[0], std::log(4.0) + 0.25 + 1e-12);
  auto da = reference::decode_descriptor(shape(DType::kF64, 1, 1, 1, 1, 4, 8, 1, 0));
  da.alibi_slopes = TensorLayout::contiguous(DType::kF32, {1});
  HostDecode a(da, {3}, rng);
  for (int c2 = 0; c2 < 4; ++c2) a.q.set(c2, 0.0);
  a.alibi.set(0, 0.5);
  // scores 0 - 0.5 * (2 - j) for j = 0, 1, 2
  EXPECT_NEAR(a.run().value().lse.exact[0], std::log(std::exp(-1.0) + std::exp(-0.5) + 1.0), 1e-15);
}

TEST(DecodeReference, PagedEqualsContiguousAndGqaMapping) {
  std::mt19937_64 rng(3);
  // Paged (page 16, shuffled pages) and contiguous caches holding the same rows agree exactly.
  const std::vector<std::int32_t> lens = {17, 1, 40};
  auto dp = reference::decode_descriptor(shape(DType::kF32, 3, 2, 8, 2, 16, 16, 3, 9));
  HostDecode p(dp, lens, rng);
  auto dc = reference::decode_descriptor(shape(DType::kF32, 3, 2, 8, 2, 16, 48, 1, 0));
  HostDecode c(dc, lens, rng);
  for (std::int64_t i = 0; i < p.q.layout().numel(); ++i) c.q.set(i, p.q.get(i));
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t j = 0; j < 48; ++j) {
      const std::int64_t page = static_cast<std::int64_t>(p.bt.get(b * 3 + j / 16));
      for (std::int64_t x = 0; x < 2 * 16; ++x) {  // Hkv * D elements of the row
        c.k.set((b * 48 + j) * 32 + x, p.k.get((page * 16 + j % 16) * 32 + x));
        c.v.set((b * 48 + j) * 32 + x, p.v.get((page * 16 + j % 16) * 32 + x));
      }
    }
  auto rp = p.run().value(), rc = c.run().value();
  EXPECT_EQ(rp.o.exact, rc.o.exact);
  EXPECT_EQ(rp.lse.exact, rc.lse.exact);
  EXPECT_EQ(rp.o.naive, rc.o.naive);
  // GQA: query heads 0..3 read KV head 0, 4..7 KV head 1: with KV head 1 zeroed (keys and
  // values) heads 4..7 give o = 0 and lse = log(len), heads 0..3 do not.
  for (std::int64_t i = 0; i < c.k.layout().numel(); ++i)
    if ((i / 16) % 2 == 1) c.k.set(i, 0.0), c.v.set(i, 0.0);
  auto rg = c.run().value();
  for (std::int64_t hq = 0; hq < 8; ++hq) {
    const double lse = rg.lse.exact[(2 * 8 + hq) * 2 + 1];  // sequence 2, token 1 (sees 40 keys)
    if (hq >= 4) EXPECT_NEAR(lse, std::log(40.0), 1e-12) << hq;
    else EXPECT_GT(std::fabs(lse - std::log(40.0)), 1e-6) << hq;
  }
}

TEST(DecodeReference, NaiveTracksExactPerDtype) {
  std::mt19937_64 rng(4);
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    auto d = reference::decode_descriptor(shape(t, 2, 4, 8, 2, 64, 16, 8, 20));
    HostDecode h(d, {100, 37}, rng);
    auto r = h.run().value();
    double err = 0, mx = 0;
    for (std::size_t i = 0; i < r.o.exact.size(); ++i) {
      err = std::max(err, std::fabs(r.o.naive[i] - r.o.exact[i]));
      mx = std::max(mx, std::fabs(r.o.exact[i]));
    }
    const double eps = t == DType::kBF16 ? 1.0 / 128 : (t == DType::kF16 ? 1.0 / 1024 : 1e-6);
    EXPECT_GT(mx, 0.01);
    EXPECT_LT(err, 4 * eps) << "naive is a same-precision implementation, not a different function";
    if (t != DType::kF32) EXPECT_GT(err, 0.0);
    // the comparison accepts the naive result itself and rejects a shifted one
    HostTensor got(d.o), lse(d.lse);
    for (std::int64_t i = 0; i < got.layout().numel(); ++i) got.set(i, r.o.naive[static_cast<std::size_t>(i)]);
    for (std::int64_t i = 0; i < lse.layout().numel(); ++i) lse.set(i, r.lse.exact[static_cast<std::size_t>(i)]);
    auto ok = reference::compare_decode(got, &lse, r);
    EXPECT_TRUE(ok.ok) << ok.detail;
    got.set(5, got.get(5) + 0.25);
    EXPECT_FALSE(reference::compare_decode(got, &lse, r).ok);
  }
}

// The decode oracle against the attention oracle (reference::sdpa, an independent
// implementation): sequence b's decode is the dense attention of its Sq tokens over its
// min(max(len, 0), capacity) keys gathered from the pages, bottom-right aligned (qpos_t =
// len - Sq + t), causal (window_right 0) or not, window_left, softcap, scale, ALiBi [Hq] /
// [B, Hq], GQA. o and lse agree to 1e-12 (both in double); rows without keys are o = 0 and
// lse = -inf in both. Lengths below Sq, past the capacity and negative (read as 0).
TEST(DecodeReference, MatchesTheSdpaReference) {
  std::mt19937_64 rng(6);
  struct Variant {
    const char* what;
    SdpaDecodeOptions opt;
    int alibi;
  };
  const Variant variants[] = {
      {"causal", {}, 0},
      {"causal window 5", {.window_left = 5}, 0},
      {"not causal", {.causal = false}, 0},
      {"not causal window 7", {.causal = false, .window_left = 7}, 0},
      {"softcap 3 scale 0.3", {.scale = 0.3, .softcap = 3.0}, 0},
      {"alibi [Hq]", {}, 1},
      {"alibi [B, Hq] window 9 not causal", {.causal = false, .window_left = 9}, 2},
  };
  struct Geometry {
    DecodeShape s;
    std::vector<std::int32_t> lens;
  };
  const Geometry geometries[] = {
      {shape(DType::kBF16, 4, 4, 8, 2, 16, 16, 3, 14), {2, 17, 48, 60}},  // paged, capacity 48: 60 reads 48
      {shape(DType::kF32, 3, 1, 6, 1, 8, 40, 1, 0), {-4, 1, 40}},          // contiguous, MQA
      {shape(DType::kF16, 2, 16, 4, 4, 8, 32, 2, 5), {9, 64}},             // 16 tokens, 9 keys: 7 see nothing
  };
  for (const Geometry& geo : geometries)
    for (const Variant& v : variants) {
      SCOPED_TRACE(std::string(v.what) + " " + std::string(dtype_name(geo.s.dtype)));
      DecodeShape sh = geo.s;
      sh.alibi = v.alibi;
      auto d = reference::decode_descriptor(sh);
      d.options = v.opt;
      HostDecode h(d, geo.lens, rng);
      auto r = h.run();
      ASSERT_TRUE(r.has_value()) << r.error().to_string();
      const std::int64_t B = sh.batch, Sq = sh.sq, Hq = sh.hq, Hkv = sh.hkv, D = sh.d;
      const std::int64_t ps = d.k_cache.shape[1], cap = d.paged() ? ps * d.block_table.shape[1] : ps;
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t L = std::clamp<std::int64_t>(geo.lens[static_cast<std::size_t>(b)], 0, cap);
        auto o_at = [&](std::int64_t t, std::int64_t hq, std::int64_t c) {
          return r->o.exact[static_cast<std::size_t>(((b * Sq + t) * Hq + hq) * D + c)];
        };
        auto lse_at = [&](std::int64_t hq, std::int64_t t) { return r->lse.exact[static_cast<std::size_t>((b * Hq + hq) * Sq + t)]; };
        if (L == 0) {  // no keys: every row is empty
          for (std::int64_t hq = 0; hq < Hq; ++hq)
            for (std::int64_t t = 0; t < Sq; ++t) {
              EXPECT_EQ(lse_at(hq, t), -std::numeric_limits<double>::infinity());
              for (std::int64_t c = 0; c < D; ++c) EXPECT_EQ(o_at(t, hq, c), 0.0);
            }
          continue;
        }
        SdpaDescriptor f;
        f.q = f.o = TensorLayout::contiguous(sh.dtype, {1, Hq, Sq, D});
        f.k = f.v = TensorLayout::contiguous(sh.dtype, {1, Hkv, L, D});
        f.lse = TensorLayout::contiguous(DType::kF32, {1, Hq, Sq});
        f.options.scale = v.opt.scale;
        f.options.softcap = v.opt.softcap;
        f.options.causal = v.opt.causal;
        f.options.align = CausalAlign::kBottomRight;
        f.options.window_left = v.opt.window_left;
        if (v.alibi) f.alibi_slopes = TensorLayout::contiguous(DType::kF32, {Hq});
        HostTensor q(f.q), k(f.k), vv(f.v), al(f.alibi_slopes.rank ? f.alibi_slopes : TensorLayout::contiguous(DType::kF32, {1}));
        for (std::int64_t t = 0; t < Sq; ++t)
          for (std::int64_t hq = 0; hq < Hq; ++hq)
            for (std::int64_t c = 0; c < D; ++c) q.set((hq * Sq + t) * D + c, h.q.get(((b * Sq + t) * Hq + hq) * D + c));
        for (std::int64_t j = 0; j < L; ++j) {
          const std::int64_t page = d.paged() ? static_cast<std::int64_t>(h.bt.get(b * d.block_table.shape[1] + j / ps)) : b;
          for (std::int64_t kh = 0; kh < Hkv; ++kh)
            for (std::int64_t c = 0; c < D; ++c) {
              const std::int64_t src = ((page * ps + j % ps) * Hkv + kh) * D + c;
              k.set((kh * L + j) * D + c, h.k.get(src));
              vv.set((kh * L + j) * D + c, h.v.get(src));
            }
        }
        for (std::int64_t hq = 0; v.alibi && hq < Hq; ++hq) al.set(hq, h.alibi.get(v.alibi == 2 ? b * Hq + hq : hq));
        auto w = reference::sdpa(f, {&q, &k, &vv, nullptr, nullptr, v.alibi ? &al : nullptr});
        ASSERT_TRUE(w.has_value()) << w.error().to_string();
        for (std::int64_t hq = 0; hq < Hq; ++hq)
          for (std::int64_t t = 0; t < Sq; ++t) {
            const double want_lse = w->lse.exact[static_cast<std::size_t>(hq * Sq + t)];
            if (std::isinf(want_lse)) EXPECT_EQ(lse_at(hq, t), want_lse) << "b " << b << " t " << t;
            else EXPECT_NEAR(lse_at(hq, t), want_lse, 1e-12 * (1 + std::fabs(want_lse))) << "b " << b << " t " << t;
            for (std::int64_t c = 0; c < D; ++c) {
              const double want_o = w->o.exact[static_cast<std::size_t>((hq * Sq + t) * D + c)];
              EXPECT_NEAR(o_at(t, hq, c), want_o, 1e-12 * (1 + std::fabs(want_o))) << "b " << b << " t " << t << " hq " << hq;
            }
          }
      }
    }
}

TEST(KvCacheReference, AppendWritesOnlyTargetSlots) {
  std::mt19937_64 rng(5);
  DecodeShape s = shape(DType::kBF16, 2, 3, 1, 2, 8, 4, 3, 6);
  auto d = reference::append_descriptor(s);
  HostTensor kn(d.k_new), vn(d.v_new), kc(d.k_cache), vc(d.v_cache), bt(d.block_table), lens(d.cache_seqlens);
  reference::fill_random(kn, rng, -1, 1, false);
  reference::fill_random(vn, rng, -1, 1, false);
  for (std::int64_t i = 0; i < 6; ++i) bt.set(i, 5 - i);  // seq 0: pages 5 4 3, seq 1: pages 2 1 0
  lens.set(0, 3);   // positions 3, 4, 5: page 5 row 3, page 4 rows 0, 1
  lens.set(1, 11);  // positions 11, 12, 13: page 0 row 3, then past capacity 12: skipped
  HostTensor before = kc;
  ASSERT_TRUE(reference::kv_cache_append(d, kn, vn, kc, vc, &bt, lens).is_ok());
  auto row = [&](std::int64_t page, std::int64_t r) { return (page * 4 + r) * 16; };  // Hkv * D = 16
  auto newrow = [&](std::int64_t b, std::int64_t sidx) { return (b * 3 + sidx) * 16; };
  std::vector<std::pair<std::int64_t, std::int64_t>> written = {{row(5, 3), newrow(0, 0)}, {row(4, 0), newrow(0, 1)},
                                                                {row(4, 1), newrow(0, 2)}, {row(0, 3), newrow(1, 0)}};
  std::vector<bool> touched(static_cast<std::size_t>(kc.layout().numel()), false);
  for (auto [dst, src] : written)
    for (int x = 0; x < 16; ++x) {
      EXPECT_EQ(kc.get(dst + x), kn.get(src + x));
      EXPECT_EQ(vc.get(dst + x), vn.get(src + x));
      touched[static_cast<std::size_t>(dst + x)] = true;
    }
  for (std::int64_t i = 0; i < kc.layout().numel(); ++i) {
    if (touched[static_cast<std::size_t>(i)]) continue;
    ASSERT_EQ(std::memcmp(static_cast<const char*>(kc.data()) + 2 * i, static_cast<const char*>(before.data()) + 2 * i, 2), 0) << i;
  }
}

// ------------------------------------------------------------------------ select
TEST(DecodeSelect, SkusFromCapsAndSplits) {
  for (int sm : {80, 89, 90}) {
    SCOPED_TRACE(sm);
    // The must-show shape: B 64, KV 4096 (page 16), 32 / 8 heads, d128: no split needed.
    auto big = reference::decode_descriptor(shape(DType::kBF16, 64, 1, 32, 8, 128, 16, 256, 64 * 256));
    // Every arch: the tensor-core kernel (first by measurement), 512 CTAs, no split.
    auto p = SdpaDecodePlan::select_for_caps(caps(sm), big);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().name(), "paged_decode.fwd.mma_splitkv[bf16,f32].sm80+");
    EXPECT_EQ(p->workspace_size(), 0u);
    // Forced on sm_90, the bulk-copy kernel: one CTA per (sequence, 8 KV heads) and SM: 64 CTAs
    // x 2 splits = 128 of 132 SMs, partials f32 [2, 64, 1, 32, 128] + lse [2, 64, 1, 32].
    if (sm >= 90) {
      PlanPreference pref;
      pref.force_sku = "paged_decode.fwd.bulk_splitkv*";
      auto b = SdpaDecodePlan::select_for_caps(caps(sm), big, pref);
      ASSERT_TRUE(b.has_value()) << b.error().to_string();
      EXPECT_EQ(b->sku().name(), "paged_decode.fwd.bulk_splitkv[bf16,f32].sm90+");
      EXPECT_EQ(b->workspace_size(), 2u * 64 * 32 * 128 * 4 + 2u * 64 * 32 * 4);
    }
    // One sequence of 32k keys: the KV length is split over CTAs, partials in the workspace.
    auto one = reference::decode_descriptor(shape(DType::kF16, 1, 1, 32, 8, 128, 256, 128, 128));
    auto q = SdpaDecodePlan::select_for_caps(caps(sm), one);
    ASSERT_TRUE(q.has_value()) << q.error().to_string();
    EXPECT_EQ(q->sku().name(), "paged_decode.fwd.mma_splitkv[f16,f32].sm80+");
    EXPECT_GT(q->workspace_size(), 0u);
    // B8 x 8k keys (page 16), 64 / 8 heads: 3 stages split the KV length 4 ways (256 CTAs, 2 an
    // SM); on sm_90 2 stages take over (3 CTAs an SM: 6 splits, 384 CTAs of 396 slots), the
    // partials f32 [splits, 8, 1, 64, 128] + lse [splits, 8, 1, 64].
    auto mid = reference::decode_descriptor(shape(DType::kBF16, 8, 1, 64, 8, 128, 16, 512, 8 * 512));
    auto m = SdpaDecodePlan::select_for_caps(caps(sm), mid);
    ASSERT_TRUE(m.has_value()) << m.error().to_string();
    if (sm >= 90) EXPECT_EQ(m->workspace_size(), std::size_t{6} * 8 * 64 * (128 * 4 + 4));
    // More than 16 query rows per KV head (GQA 4 x 8 tokens): the mma kernel on every arch.
    auto spec = reference::decode_descriptor(shape(DType::kBF16, 64, 8, 32, 8, 128, 16, 256, 64 * 256));
    auto sp = SdpaDecodePlan::select_for_caps(caps(sm), spec);
    ASSERT_TRUE(sp.has_value()) << sp.error().to_string();
    EXPECT_EQ(sp->sku().name(), "paged_decode.fwd.mma_splitkv[bf16,f32].sm80+");
    // f32 and f64: the general kernel only
    for (DType t : {DType::kF32, DType::kF64}) {
      auto r = SdpaDecodePlan::select_for_caps(caps(sm), reference::decode_descriptor(shape(t, 2, 4, 8, 2, 96, 7, 0, 0)));
      ASSERT_TRUE(r.has_value()) << r.error().to_string();
      EXPECT_EQ(r->sku().name(), std::string("paged_decode.fwd.simt_warp_row[") + std::string(dtype_name(t)) + "," +
                                     std::string(dtype_name(t)) + "].sm80+");
    }
  }
}

TEST(DecodeSelect, CandidateListsNameEachRejection) {
  struct Case {
    DecodeShape s;
    std::string bulk;  // "" = accepts (sm_90)
    std::string mma;   // "" = accepts
    std::string simt;  // "" = accepts
  };
  const std::vector<Case> cases = {
      {shape(DType::kBF16, 4, 1, 32, 8, 128, 16, 4, 16), "", "", ""},
      {shape(DType::kF16, 4, 16, 8, 1, 64, 32, 4, 16), "Hq / Hkv * Sq = 128 query rows per KV head > 16", "", ""},
      {shape(DType::kF16, 4, 16, 8, 8, 64, 32, 4, 16), "", "", ""},  // 16 rows: one m16 tile
      {shape(DType::kF16, 4, 1, 6, 6, 64, 32, 4, 16), "", "", ""},   // Hkv 6: 2 heads per CTA
      {shape(DType::kBF16, 4, 1, 8, 8, 256, 16, 4, 16), "D = 256: the bulk-copy kernel is built for D in {64, 128}", "", ""},
      {shape(DType::kF32, 4, 1, 8, 8, 128, 16, 4, 16), "q.dtype = f32: the bulk-copy kernel takes f16 or bf16",
       "q.dtype = f32: the tensor-core kernel takes f16 or bf16", ""},
      {shape(DType::kBF16, 4, 1, 8, 8, 96, 16, 4, 16), "D = 96: the bulk-copy kernel",
       "D = 96: the tensor-core kernel is built for D in {64, 128, 256}", ""},
      {shape(DType::kBF16, 4, 1, 8, 8, 128, 8, 4, 16), "", "k_cache.shape[1] = page_size = 8 is not a multiple of 16", ""},
      {shape(DType::kBF16, 4, 1, 8, 8, 640, 16, 4, 16), "D = 640", "D = 640", "D = 640 > 512"},
  };
  for (const auto& c : cases) {
    const auto d = reference::decode_descriptor(c.s);
    SCOPED_TRACE(d.to_string());
    auto reports = SdpaDecodePlan::candidates(caps(90), d);
    ASSERT_TRUE(reports.has_value()) << reports.error().to_string();
    ASSERT_EQ(reports->size(), 3u);
    EXPECT_EQ((*reports)[0].sku.impl, "mma_splitkv");
    EXPECT_EQ((*reports)[1].sku.impl, "bulk_splitkv");
    EXPECT_EQ((*reports)[2].sku.impl, "simt_warp_row");
    for (int i = 0; i < 3; ++i) {
      const std::string& want = i == 0 ? c.mma : (i == 1 ? c.bulk : c.simt);
      const std::string& got = (*reports)[static_cast<std::size_t>(i)].rejection;
      if (want.empty()) EXPECT_EQ(got, "") << i;
      else EXPECT_NE(got.find(want), std::string::npos) << i << ": " << got;
    }
  }
  // The bulk-copy kernel needs sm_90 (cp.async.bulk).
  const auto must = reference::decode_descriptor(shape(DType::kBF16, 4, 1, 32, 8, 128, 16, 4, 16));
  for (int sm : {80, 89}) {
    auto r = SdpaDecodePlan::candidates(caps(sm), must).value();
    EXPECT_EQ(r[0].rejection, "");
    EXPECT_NE(r[1].rejection.find("< 90: cp.async.bulk needs sm_90+"), std::string::npos) << r[1].rejection;
  }
  // 16-byte cache rows: a stride that is not a multiple of 8 elements
  auto d = reference::decode_descriptor(shape(DType::kBF16, 2, 1, 8, 8, 64, 16, 2, 4));
  d.k_cache = TensorLayout::strided(DType::kBF16, {4, 16, 8, 64}, {16 * 8 * 68, 8 * 68, 68, 1});
  d.v_cache = d.k_cache;
  auto r = SdpaDecodePlan::candidates(caps(90), d).value();
  EXPECT_NE(r[0].rejection.find("k_cache.strides[2] = 68 is not a multiple of 8"), std::string::npos) << r[0].rejection;
  EXPECT_NE(r[1].rejection.find("k_cache.strides[2] = 68 is not a multiple of 8"), std::string::npos) << r[1].rejection;
  d.k_cache = d.v_cache = TensorLayout::strided(DType::kBF16, {4, 16, 8, 64}, {16 * 8 * 64, 8 * 64, 64, 1}, 8);
  r = SdpaDecodePlan::candidates(caps(90), d).value();
  EXPECT_NE(r[0].rejection.find("k_cache.alignment = 8 < 16 bytes"), std::string::npos) << r[0].rejection;
  EXPECT_NE(r[1].rejection.find("k_cache.alignment = 8 < 16 bytes"), std::string::npos) << r[1].rejection;
  EXPECT_EQ(r[2].rejection, "");
  // KV heads not packed in the token row (head stride 2 D): one copy per row is impossible.
  d.k_cache = d.v_cache = TensorLayout::strided(DType::kBF16, {4, 16, 8, 64}, {16 * 8 * 128, 8 * 128, 128, 1});
  r = SdpaDecodePlan::candidates(caps(90), d).value();
  EXPECT_EQ(r[0].rejection, "");
  EXPECT_NE(r[1].rejection.find("k_cache.strides[2] = 128 != D = 64"), std::string::npos) << r[1].rejection;
}

TEST(KvCacheSelect, SkusAndCandidateLists) {
  auto d = reference::append_descriptor(shape(DType::kBF16, 4, 1, 1, 8, 128, 16, 4, 16));
  auto p = KvCacheAppendPlan::select_for_caps(caps(90), d);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "kv_cache_append.fwd.vec16[bf16,bf16].sm80+");
  EXPECT_EQ(p->workspace_size(), 0u);
  // D * 2 bytes = 6: only the elementwise copy
  auto odd = reference::append_descriptor(shape(DType::kF16, 2, 3, 1, 2, 3, 5, 0, 0));
  auto r = KvCacheAppendPlan::candidates(caps(90), odd).value();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NE(r[0].rejection.find("D * element size = 6 bytes is not a multiple of 16"), std::string::npos) << r[0].rejection;
  EXPECT_EQ(r[1].rejection, "");
  EXPECT_EQ(r[1].sku.name(), "kv_cache_append.fwd.elementwise[f16,f16].sm80+");
  // i8 and f64 caches are copies too
  for (DType t : {DType::kI8, DType::kF64, DType::kE4M3}) {
    auto q = KvCacheAppendPlan::select_for_caps(caps(80), reference::append_descriptor(shape(t, 2, 2, 1, 2, 64, 16, 2, 4)));
    ASSERT_TRUE(q.has_value()) << q.error().to_string();
    EXPECT_EQ(q->sku().impl, "vec16");
  }
  // a strided k_new whose row stride is not whole 16-byte units
  auto s = d;
  s.k_new = TensorLayout::strided(DType::kBF16, {4, 1, 8, 128}, {8 * 132, 8 * 132, 132, 1});
  r = KvCacheAppendPlan::candidates(caps(90), s).value();
  EXPECT_NE(r[0].rejection.find("k_new.strides[2] = 132 elements"), std::string::npos) << r[0].rejection;
}

// ------------------------------------------------------------------------ refusals
TEST(DecodeRefusals, SelectNamesFieldAndValue) {
  using D = SdpaDecodeDescriptor;
  auto valid = reference::decode_descriptor(shape(DType::kBF16, 3, 2, 8, 2, 64, 16, 4, 12));
  valid.alibi_slopes = TensorLayout::contiguous(DType::kF32, {8});
  test::expect_select_refusals<SdpaDecodePlan>(
      valid,
      {
          {"dtype", [](D& d) { d.q.dtype = d.o.dtype = d.k_cache.dtype = d.v_cache.dtype = DType::kI32; }, "q.dtype = i32"},
          {"dtype", [](D& d) { d.k_cache.dtype = DType::kF16; }, "k_cache.dtype = f16 differs from q.dtype = bf16"},
          {"dtype", [](D& d) { d.v_cache.dtype = DType::kF32; }, "v_cache.dtype = f32 differs from q.dtype = bf16"},
          {"dtype", [](D& d) { d.o.dtype = DType::kF32; }, "o.dtype = f32"},
          {"dtype", [](D& d) { d.lse.dtype = DType::kBF16; }, "lse.dtype = bf16: lse is f32"},
          {"dtype", [](D& d) { d.block_table.dtype = DType::kI64; }, "block_table.dtype = i64: block_table is i32"},
          {"dtype", [](D& d) { d.seqlens_k.dtype = DType::kI64; }, "seqlens_k.dtype = i64: seqlens_k is i32"},
          {"dtype", [](D& d) { d.alibi_slopes.dtype = DType::kBF16; }, "alibi_slopes.dtype = bf16"},
          {"shape", [](D& d) { d.q = d.o = TensorLayout::contiguous(DType::kBF16, {3, 8, 64}); }, "q.rank = 3"},
          {"shape", [](D& d) { d.q = d.o = TensorLayout::contiguous(DType::kBF16, {3, 17, 8, 64}); },
           "q.shape[1] = Sq = 17 is outside 1 .. 16"},
          {"shape", [](D& d) { d.q = d.o = TensorLayout::contiguous(DType::kBF16, {3, 2, 5, 64}); },
           "q.shape[2] = Hq = 5 is not a multiple of k_cache.shape[2] = Hkv = 2"},
          {"shape", [](D& d) { d.k_cache = d.v_cache = TensorLayout::contiguous(DType::kBF16, {12, 16, 2, 32}); },
           "k_cache.shape[3] = 32 differs from q.shape[3] = D = 64"},
          {"shape", [](D& d) { d.v_cache = TensorLayout::contiguous(DType::kBF16, {12, 32, 2, 64}); },
           "v_cache.shape[1] = 32 differs from k_cache.shape[1] = 16"},
          {"shape", [](D& d) { d.block_table = TensorLayout::contiguous(DType::kI32, {2, 4}); },
           "block_table.shape[0] = 2 differs from B = 3"},
          {"shape", [](D& d) { d.block_table = TensorLayout{}; }, "k_cache.shape[0] = 12 differs from B = 3"},
          {"shape", [](D& d) { d.k_cache = d.v_cache = TensorLayout::contiguous(DType::kBF16, {12, 0, 2, 64}); },
           "k_cache.shape[1] = page_size = 0"},
          {"shape", [](D& d) { d.seqlens_k = TensorLayout::contiguous(DType::kI32, {4}); }, "seqlens_k.shape[0] = 4 differs from B = 3"},
          {"shape", [](D& d) { d.block_table = TensorLayout::contiguous(DType::kI32, {3, std::int64_t{1} << 28}); },
           "block_table.shape[1] * page_size = 268435456 * 16 positions per sequence exceed 2^31"},
          {"shape", [](D& d) { d.o = TensorLayout::contiguous(DType::kBF16, {3, 2, 8, 63}); }, "o"},
          {"shape", [](D& d) { d.lse = TensorLayout::contiguous(DType::kF32, {3, 2, 8}); }, "is not [B, Hq, Sq] = [3, 8, 2]"},
          {"shape", [](D& d) { d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {4}); }, "is neither [Hq] nor [B, Hq]"},
          {"stride", [](D& d) { d.q = TensorLayout::strided(DType::kBF16, {3, 2, 8, 64}, {1024, 512, 64, 2}); },
           "q.strides[3] = 2: the head dim must be contiguous"},
          {"stride", [](D& d) { d.k_cache = TensorLayout::strided(DType::kBF16, {12, 16, 2, 64}, {4096, 256, 1, 2}); },
           "k_cache.strides[3] = 2"},
          {"stride", [](D& d) { d.o = TensorLayout::strided(DType::kBF16, {3, 2, 8, 64}, {0, 512, 64, 1}); },
           "maps several elements to one address"},
          {"options", [](D& d) { d.options.scale = -1; }, "options.scale = -1"},
          {"options", [](D& d) { d.options.softcap = std::nan(""); }, "options.softcap = nan"},
          {"options", [](D& d) { d.options.window_left = -2; }, "options.window_left = -2"},
          {"alignment", [](D& d) { d.q.alignment = 1; }, "q.alignment = 1 bytes is below its element size 2"},
      });
}

TEST(KvCacheRefusals, SelectNamesFieldAndValue) {
  using D = KvCacheAppendDescriptor;
  test::expect_select_refusals<KvCacheAppendPlan>(
      reference::append_descriptor(shape(DType::kBF16, 3, 2, 1, 2, 64, 16, 4, 12)),
      {
          {"dtype", [](D& d) { d.k_new.dtype = d.v_new.dtype = DType::kS4; }, "k_new.dtype = s4"},
          {"dtype", [](D& d) { d.v_new.dtype = DType::kF16; }, "v_new.dtype = f16"},
          {"dtype", [](D& d) { d.k_cache.dtype = DType::kF16; }, "k_cache.dtype = f16 differs from k_new.dtype = bf16"},
          {"dtype", [](D& d) { d.cache_seqlens.dtype = DType::kU32; }, "cache_seqlens.dtype = u32"},
          {"shape", [](D& d) { d.k_new = d.v_new = TensorLayout::contiguous(DType::kBF16, {3, 2, 64}); }, "k_new.rank = 3"},
          {"shape", [](D& d) { d.v_new = TensorLayout::contiguous(DType::kBF16, {3, 1, 2, 64}); }, "v_new"},
          {"shape", [](D& d) { d.k_new = d.v_new = TensorLayout::contiguous(DType::kBF16, {3, 2, 4, 64}); },
           "k_cache.shape[2] = Hkv = 2 differs from k_new.shape[2] = 4"},
          {"shape", [](D& d) { d.k_cache = d.v_cache = TensorLayout::contiguous(DType::kBF16, {12, 16, 2, 128}); },
           "k_cache.shape[3] = 128 differs from k_new.shape[3] = D = 64"},
          {"shape", [](D& d) { d.block_table = TensorLayout::contiguous(DType::kI32, {3}); }, "block_table.rank = 1"},
          {"shape", [](D& d) { d.cache_seqlens = TensorLayout::contiguous(DType::kI32, {2}); }, "cache_seqlens.shape[0] = 2"},
          {"stride", [](D& d) { d.v_new = TensorLayout::strided(DType::kBF16, {3, 2, 2, 64}, {256, 128, 64, 2}); },
           "v_new.strides[3] = 2"},
          {"stride", [](D& d) { d.k_cache = TensorLayout::strided(DType::kBF16, {12, 16, 2, 64}, {2048, 0, 64, 1}); },
           "k_cache = "},
      });
}

// Stride and layout cases with the full message (field and value): an output whose strides map
// two elements to one address, a head dim that is not contiguous, declared alignments below the
// element size or not a power of two.
TEST(DecodeRefusals, SelectStridesNameFieldAndValue) {
  using D = SdpaDecodeDescriptor;
  auto valid = reference::decode_descriptor(shape(DType::kBF16, 3, 2, 8, 2, 64, 16, 4, 12));
  test::expect_select_refusals<SdpaDecodePlan>(
      valid,
      {
          {"stride", [](D& d) { d.o.strides[0] = 0; }, "o = bf16[3,2,8,64]{0,512,64,1} maps several elements to one address"},
          {"stride", [](D& d) { d.lse.strides[2] = 0; }, "lse = f32[3,8,2]{16,2,0} maps several elements to one address"},
          {"stride", [](D& d) { d.o.strides[3] = 2; }, "o.strides[3] = 2: the head dim must be contiguous (stride 1)"},
          {"stride", [](D& d) { d.v_cache.strides[3] = 4; }, "v_cache.strides[3] = 4: the head dim must be contiguous (stride 1)"},
          {"alignment", [](D& d) { d.k_cache.alignment = 1; }, "k_cache.alignment = 1 bytes is below its element size 2"},
          {"alignment", [](D& d) { d.block_table.alignment = 2; }, "block_table.alignment = 2 bytes is below its element size 4"},
          {"alignment", [](D& d) { d.seqlens_k.alignment = 1; }, "seqlens_k.alignment = 1 bytes is below its element size 4"},
          {"alignment", [](D& d) { d.lse.alignment = 2; }, "lse.alignment = 2 bytes is below its element size 4"},
          {"alignment", [](D& d) { d.v_cache.alignment = 48; }, "v_cache.alignment = 48 is not a power of two"},
          {"shape", [](D& d) { d.q.shape[0] = -3; }, "q.shape[0] = -3 is negative"},
      });
}

TEST(KvCacheRefusals, SelectStridesNameFieldAndValue) {
  using D = KvCacheAppendDescriptor;
  test::expect_select_refusals<KvCacheAppendPlan>(
      reference::append_descriptor(shape(DType::kBF16, 3, 2, 1, 2, 64, 16, 4, 12)),
      {
          {"stride", [](D& d) { d.k_cache.strides[1] = 0; },
           "k_cache = bf16[12,16,2,64]{2048,0,64,1} maps several elements to one address"},
          {"stride", [](D& d) { d.v_cache.strides[0] = 0; },
           "v_cache = bf16[12,16,2,64]{0,128,64,1} maps several elements to one address"},
          {"stride", [](D& d) { d.k_new.strides[3] = 3; }, "k_new.strides[3] = 3: the head dim must be contiguous (stride 1)"},
          {"stride", [](D& d) { d.k_cache.strides[3] = 2; }, "k_cache.strides[3] = 2: the head dim must be contiguous (stride 1)"},
          {"alignment", [](D& d) { d.k_new.alignment = 1; }, "k_new.alignment = 1 bytes is below its element size 2"},
          {"alignment", [](D& d) { d.cache_seqlens.alignment = 2; }, "cache_seqlens.alignment = 2 bytes is below its element size 4"},
          {"alignment", [](D& d) { d.block_table.alignment = 3; }, "block_table.alignment = 3 is not a power of two"},
          {"dtype", [](D& d) { d.block_table.dtype = DType::kI64; }, "block_table.dtype = i64: block_table is i32"},
          {"dtype", [](D& d) { d.v_cache.dtype = DType::kF16; }, "v_cache.dtype = f16 differs from k_new.dtype = bf16"},
          {"shape", [](D& d) { d.v_cache = TensorLayout::contiguous(DType::kBF16, {12, 8, 2, 64}); },
           "v_cache.shape[1] = 8 differs from k_cache.shape[1] = 16"},
          {"shape", [](D& d) { d.block_table = TensorLayout::contiguous(DType::kI32, {2, 4}); },
           "block_table.shape[0] = 2 differs from B = 3"},
      });
}

// The workspace column: SdpaDecodePlan's split SKUs keep their partials in the workspace (the
// GPU refusal table's shape, B 1 x 8192 keys, splits on sm_90 caps, so its workspace rows run);
// simt_warp_row and both KvCacheAppendPlan SKUs never take one.
TEST(DecodeRefusals, WorkspaceOfEverySku) {
  const auto table = reference::decode_descriptor(shape(DType::kBF16, 1, 1, 8, 2, 128, 256, 32, 35));
  auto reports = SdpaDecodePlan::candidates(caps(90), table).value();
  ASSERT_EQ(reports.size(), 3u);
  for (const auto& r : reports) {
    SCOPED_TRACE(r.sku.name());
    EXPECT_EQ(r.rejection, "");
    if (r.sku.impl == "simt_warp_row") EXPECT_EQ(r.workspace_bytes, 0u);
    else EXPECT_GT(r.workspace_bytes, 0u);
  }
  for (const auto& s : {shape(DType::kF32, 2, 4, 8, 2, 96, 7, 0, 0), shape(DType::kF64, 3, 1, 4, 4, 512, 16, 4, 12),
                        shape(DType::kBF16, 1, 1, 32, 8, 128, 256, 128, 128)}) {
    auto r = SdpaDecodePlan::candidates(caps(90), reference::decode_descriptor(s)).value();
    EXPECT_EQ(r[2].sku.impl, "simt_warp_row");
    EXPECT_EQ(r[2].workspace_bytes, 0u) << reference::decode_descriptor(s).to_string();
  }
}

TEST(KvCacheRefusals, NoSkuTakesWorkspace) {
  for (const auto& s : {shape(DType::kBF16, 3, 2, 1, 2, 64, 16, 4, 12), shape(DType::kF16, 2, 3, 1, 2, 3, 5, 0, 0),
                        shape(DType::kF64, 4, 16, 1, 8, 128, 16, 4, 16)}) {
    const auto d = reference::append_descriptor(s);
    SCOPED_TRACE(d.to_string());
    for (const auto& r : KvCacheAppendPlan::candidates(caps(90), d).value()) EXPECT_EQ(r.workspace_bytes, 0u) << r.sku.name();
    for (const char* force : {"kv_cache_append.fwd.vec16*", "kv_cache_append.fwd.elementwise*"}) {
      PlanPreference pref;
      pref.force_sku = force;
      auto p = KvCacheAppendPlan::select_for_caps(caps(90), d, pref);
      if (p) EXPECT_EQ(p->workspace_size(), 0u) << force;
    }
  }
}

TEST(DecodeRefusals, RunArgsNullMisalignedAliasing) {
  const auto d = reference::decode_descriptor(shape(DType::kBF16, 2, 1, 4, 2, 64, 16, 2, 4));
  alignas(256) static std::uint16_t q[2 * 4 * 64], o[2 * 4 * 64], k[4 * 16 * 2 * 64], v[4 * 16 * 2 * 64];
  alignas(256) static std::int32_t bt[4], lens[2];
  alignas(256) static float lse[8];
  const SdpaDecodeArgs ok{.q = q, .k_cache = k, .v_cache = v, .block_table = bt, .seqlens_k = lens, .o = o, .lse = lse};
  EXPECT_TRUE(attention::check_decode_args(d, ok).is_ok());
  struct Case {
    std::function<void(SdpaDecodeArgs&)> change;
    Code code;
    std::string needle;
  };
  auto at = [](const void* p, int off) { return static_cast<char*>(const_cast<void*>(p)) + off; };
  const std::vector<Case> cases = {
      {[](auto& x) { x.q = nullptr; }, Code::kInvalidArgument, "args.q is null"},
      {[](auto& x) { x.k_cache = nullptr; }, Code::kInvalidArgument, "args.k_cache is null"},
      {[](auto& x) { x.v_cache = nullptr; }, Code::kInvalidArgument, "args.v_cache is null"},
      {[](auto& x) { x.block_table = nullptr; }, Code::kInvalidArgument, "args.block_table is null"},
      {[](auto& x) { x.seqlens_k = nullptr; }, Code::kInvalidArgument, "args.seqlens_k is null"},
      {[](auto& x) { x.o = nullptr; }, Code::kInvalidArgument, "args.o is null"},
      {[](auto& x) { x.lse = nullptr; }, Code::kInvalidArgument, "args.lse is null"},
      {[&](auto& x) { x.k_cache = at(k, 2); }, Code::kMisaligned, "is not aligned to k_cache.alignment = 16 bytes"},
      {[&](auto& x) { x.o = at(o, 8); }, Code::kMisaligned, "is not aligned to o.alignment = 16 bytes"},
      {[](auto& x) { x.o = const_cast<void*>(x.q); }, Code::kInvalidArgument, "args.o overlaps args.q"},
      {[](auto& x) { x.o = const_cast<void*>(x.k_cache); }, Code::kInvalidArgument, "args.o overlaps args.k_cache"},
      {[&](auto& x) { x.lse = reinterpret_cast<float*>(o); }, Code::kInvalidArgument, "args.o and args.lse overlap"},
      {[](auto& x) { x.lse = reinterpret_cast<float*>(const_cast<std::int32_t*>(x.seqlens_k)); }, Code::kInvalidArgument,
       "args.lse overlaps args.seqlens_k"},
  };
  for (const auto& cs : cases) {
    SdpaDecodeArgs x = ok;
    cs.change(x);
    const Status st = attention::check_decode_args(d, x);
    EXPECT_EQ(st.code(), cs.code) << cs.needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(cs.needle), std::string::npos) << st.message();
  }
  // without lse / block table those pointers are not read (null fine)
  auto plain = reference::decode_descriptor(shape(DType::kBF16, 2, 1, 4, 2, 64, 16, 1, 0));
  plain.lse = TensorLayout{};
  SdpaDecodeArgs nol = ok;
  nol.lse = nullptr;
  nol.block_table = nullptr;
  EXPECT_TRUE(attention::check_decode_args(plain, nol).is_ok());
  // ... and passing them anyway is refused, not ignored (as SdpaPlan does)
  const std::pair<std::function<void(SdpaDecodeArgs&)>, std::string> unused[] = {
      {[](auto& x) { x.lse = lse; }, "args.lse is set but the descriptor has no lse"},
      {[](auto& x) { x.block_table = bt; }, "args.block_table is set but the descriptor has no block_table"},
      {[](auto& x) { x.alibi_slopes = lse; }, "args.alibi_slopes is set but the descriptor has no alibi_slopes"}};
  for (const auto& [change, needle] : unused) {
    SdpaDecodeArgs x = nol;
    change(x);
    const Status st = attention::check_decode_args(plain, x);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  }
}

TEST(KvCacheRefusals, RunArgsNullMisalignedAliasing) {
  const auto d = reference::append_descriptor(shape(DType::kBF16, 2, 1, 1, 2, 64, 16, 2, 4));
  alignas(256) static std::uint16_t kn[2 * 2 * 64], vn[2 * 2 * 64], kc[4 * 16 * 2 * 64], vc[4 * 16 * 2 * 64];
  alignas(256) static std::int32_t bt[4], lens[2];
  const KvCacheAppendArgs ok{.k_new = kn, .v_new = vn, .k_cache = kc, .v_cache = vc, .block_table = bt, .cache_seqlens = lens};
  EXPECT_TRUE(attention::check_append_args(d, ok).is_ok());
  struct Case {
    std::function<void(KvCacheAppendArgs&)> change;
    Code code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](auto& x) { x.k_new = nullptr; }, Code::kInvalidArgument, "args.k_new is null"},
      {[](auto& x) { x.v_cache = nullptr; }, Code::kInvalidArgument, "args.v_cache is null"},
      {[](auto& x) { x.block_table = nullptr; }, Code::kInvalidArgument, "args.block_table is null"},
      {[](auto& x) { x.cache_seqlens = nullptr; }, Code::kInvalidArgument, "args.cache_seqlens is null"},
      {[&](auto& x) { x.v_new = reinterpret_cast<char*>(vn) + 2; }, Code::kMisaligned, "v_new.alignment = 16 bytes"},
      {[](auto& x) { x.v_cache = x.k_cache; }, Code::kInvalidArgument, "args.k_cache and args.v_cache overlap"},
      {[](auto& x) { x.k_new = x.k_cache; }, Code::kInvalidArgument, "args.k_cache overlaps args.k_new"},
      {[](auto& x) { x.cache_seqlens = static_cast<const std::int32_t*>(x.v_cache); }, Code::kInvalidArgument,
       "args.v_cache overlaps args.cache_seqlens"},
  };
  for (const auto& cs : cases) {
    KvCacheAppendArgs x = ok;
    cs.change(x);
    const Status st = attention::check_append_args(d, x);
    EXPECT_EQ(st.code(), cs.code) << cs.needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(cs.needle), std::string::npos) << st.message();
  }
  // a contiguous cache (no block table in the descriptor) refuses a block_table pointer
  const auto contiguous = reference::append_descriptor(shape(DType::kBF16, 2, 1, 1, 2, 64, 16, 2, 0));
  KvCacheAppendArgs x = ok;
  x.block_table = nullptr;
  EXPECT_TRUE(attention::check_append_args(contiguous, x).is_ok());
  x.block_table = bt;
  const Status st = attention::check_append_args(contiguous, x);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("args.block_table is set but the descriptor has no block_table"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace baracuda
