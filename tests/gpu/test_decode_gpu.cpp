// GPU tests of SdpaDecodePlan against reference::sdpa_decode (flash-attn's rule: max error
// <= 3x the naive same-precision implementation's + atol; empty rows exactly o = 0, lse =
// -inf; no NaN; see baracuda/reference/decode.hpp). Fresh random inputs per run (seed printed
// on failure): q in [-3, 3], caches in [-1, 1], block tables mapping every slot to a distinct
// page in a random order, every cache row no sequence uses set to NaN (a kernel that reads
// past seqlen or an unmapped page shows it), o and lse poisoned (NaN) before every run, guard
// bytes around every device tensor. Every case runs under every SKU that accepts it
// (bulk_splitkv on sm_90+, mma_splitkv, simt_warp_row). Cases: every dtype; seqlen_k 0, 1, 15, 16, 17, 63, 64, 65,
// 300, not multiples of the page size; Sq = 1, 4, 16; GQA ratios 1, 4, 8 and MQA; D = 64,
// 128, 256 and odd D (simt); page sizes 16, 32, 256 and contiguous caches; softcap, ALiBi
// ([Hq] and [B, Hq]), sliding windows, non-causal, explicit scale; strided q / o / lse /
// caches / block table / seqlens (o's padding checked untouched); long contexts that split
// the KV length over CTAs; page sizes 48 / 80 / 112 (multiples of 16, not powers of two); Sq 2,
// 3, 5, 7, 11, 13; lengths past the capacity or negative and block-table entries outside the
// cache (clamped / read as zeros); bitwise determinism of the split combine; KvCacheAppendPlan then
// SdpaDecodePlan captured in one CUDA graph and replayed with new inputs; the run-time
// refusals with o and lse untouched.
// Filter: --gtest_filter='*Decode*:*KvCache*'.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "baracuda/reference/decode.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::DecodeShape;
using reference::HostTensor;

// Paged caches get 3 pages no sequence maps.
DecodeShape shape(DType t, std::int64_t b, std::int64_t sq, std::int64_t hq, std::int64_t hkv, std::int64_t dim,
                  std::int64_t page, std::int64_t max_pages, bool paged = true) {
  return reference::decode_shape(t, b, sq, hq, hkv, dim, page, max_pages, paged, paged ? 3 : 0);
}

struct Case {
  DecodeShape s;
  std::vector<std::int32_t> lens;
  SdpaDecodeOptions opt{};
  bool strided = false;
  bool expect_split = false;  // the default plan splits the KV length (workspace > 0)
  bool bad_pages = false;     // some block-table entries outside [0, num_pages): read as zeros
};

// Sequence b's slot b % max_pages (and slot 0 of odd b) maps to no page: -1 or num_pages + b.
void break_pages(HostTensor& bt, std::int64_t num_pages) {
  const std::int64_t B = bt.layout().shape[0], M = bt.layout().shape[1];
  for (std::int64_t b = 0; b < B; ++b) {
    bt.set(b * M + b % M, b % 2 ? -1.0 : static_cast<double>(num_pages + b));
    if (b % 2) bt.set(b * M, static_cast<double>(num_pages));
  }
}

// q inside a fused [B, Sq, Hq + 2 Hkv, D] projection, o with 8 padding elements per row, lse
// as the transposed view of [B, Sq, Hq], caches with a gap between rows, a block table with
// 3 spare slots per row, seqlens every other int.
void make_strided(SdpaDecodeDescriptor& d) {
  const std::int64_t B = d.q.shape[0], Sq = d.q.shape[1], Hq = d.q.shape[2], D = d.q.shape[3];
  const std::int64_t Hkv = d.k_cache.shape[2], P = d.k_cache.shape[0], ps = d.k_cache.shape[1];
  const std::int64_t W = Hq + 2 * Hkv;
  d.q = TensorLayout::strided(d.q.dtype, {B, Sq, Hq, D}, {Sq * W * D, W * D, D, 1});
  d.o = TensorLayout::strided(d.o.dtype, {B, Sq, Hq, D}, {Sq * Hq * (D + 8), Hq * (D + 8), D + 8, 1});
  if (d.lse.rank) d.lse = TensorLayout::strided(DType::kF32, {B, Hq, Sq}, {Sq * Hq, 1, Hq});
  d.k_cache = d.v_cache = TensorLayout::strided(d.k_cache.dtype, {P, ps, Hkv, D}, {ps * 2 * Hkv * D, 2 * Hkv * D, D, 1});
  if (d.block_table.rank) {
    const std::int64_t M = d.block_table.shape[1];
    d.block_table = TensorLayout::strided(DType::kI32, {B, M}, {M + 3, 1});
  }
  d.seqlens_k = TensorLayout::strided(DType::kI32, {B}, {2});
}

// Device copies of a case's operands.
struct Operands {
  SdpaDecodeDescriptor d;
  HostTensor q, k, v, bt, lens, alibi, o, lse;
  std::unique_ptr<DeviceTensor> dq, dk, dv, dbt, dlens, dalibi, dout, dlse;
  reference::DecodeResult want;

  explicit Operands(const Case& c) : d(desc_of(c)), q(d.q), k(d.k_cache), v(d.v_cache), bt(d.block_table), lens(d.seqlens_k),
                                     alibi(d.alibi_slopes), o(d.o), lse(d.lse) {
    fill_random(q, -3, 3);
    fill_random(k, -1, 1);
    fill_random(v, -1, 1);
    if (d.paged()) reference::fill_block_table(bt, d.k_cache.shape[0], rng());
    if (c.bad_pages) break_pages(bt, d.k_cache.shape[0]);
    for (std::size_t b = 0; b < c.lens.size(); ++b) lens.set(static_cast<std::int64_t>(b), c.lens[b]);
    reference::poison_unused_rows(k, d.paged() ? &bt : nullptr, c.lens);
    reference::poison_unused_rows(v, d.paged() ? &bt : nullptr, c.lens);
    if (d.alibi_slopes.rank) fill_random(alibi, 0.01, 0.5);
    auto r = reference::sdpa_decode(d, q, k, v, d.paged() ? &bt : nullptr, lens, d.alibi_slopes.rank ? &alibi : nullptr);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
    if (r) want = std::move(r.value());
    const Stream& s = test_stream();
    dq = std::make_unique<DeviceTensor>(q, s);
    dk = std::make_unique<DeviceTensor>(k, s);
    dv = std::make_unique<DeviceTensor>(v, s);
    dlens = std::make_unique<DeviceTensor>(lens, s);
    dout = std::make_unique<DeviceTensor>(o, s);
    if (d.paged()) dbt = std::make_unique<DeviceTensor>(bt, s);
    if (d.alibi_slopes.rank) dalibi = std::make_unique<DeviceTensor>(alibi, s);
    if (d.lse.rank) dlse = std::make_unique<DeviceTensor>(lse, s);
  }
  static SdpaDecodeDescriptor desc_of(const Case& c) {
    auto d = reference::decode_descriptor(c.s);
    d.options = c.opt;
    if (c.strided) make_strided(d);
    return d;
  }
  SdpaDecodeArgs args() const {
    return {.q = dq->data(),
            .k_cache = dk->data(),
            .v_cache = dv->data(),
            .block_table = dbt ? static_cast<const std::int32_t*>(dbt->data()) : nullptr,
            .seqlens_k = static_cast<const std::int32_t*>(dlens->data()),
            .o = dout->data(),
            .lse = dlse ? static_cast<float*>(dlse->data()) : nullptr,
            .alibi_slopes = dalibi ? static_cast<const float*>(dalibi->data()) : nullptr};
  }
  void poison() {
    dout->poison(0xFF, test_stream());
    if (dlse) dlse->poison(0xFF, test_stream());
  }
  void verify(const std::string& sku) {
    SCOPED_TRACE(sku);
    ASSERT_TRUE(dout->download(o, test_stream())) << "guard bytes around o";
    if (dlse) ASSERT_TRUE(dlse->download(lse, test_stream())) << "guard bytes around lse";
    auto cmp = reference::compare_decode(o, dlse ? &lse : nullptr, want);
    EXPECT_TRUE(cmp.ok) << cmp.detail;
    EXPECT_TRUE(quant_padding_untouched(o, 0xFF)) << "o's row padding";
  }
};

std::string lens_text(const std::vector<std::int32_t>& lens) {
  std::string s;
  for (auto l : lens) s += (s.empty() ? "" : ",") + std::to_string(l);
  return s;
}

int run_case(const Case& c) {
  Operands op(c);
  SCOPED_TRACE(op.d.to_string() + " lens {" + lens_text(c.lens) + "} seed " + std::to_string(test_seed()));
  if (c.expect_split) {
    auto p = SdpaDecodePlan::select(test_stream(), op.d);
    EXPECT_TRUE(p.has_value() && p->workspace_size() > 0) << "expected the KV length split over CTAs";
  }
  return for_each_sku<SdpaDecodePlan>(
      op.d, [&] { op.poison(); },
      [&](const SdpaDecodePlan& p, Workspace ws) { return p.run(test_stream(), ws, op.args()); },
      [&](const std::string& sku) { op.verify(sku); });
}

// Lengths of B sequences: the edge values first, then random ones up to `cap`.
std::vector<std::int32_t> lengths(std::int64_t batch, std::int64_t cap, std::vector<std::int32_t> first) {
  std::vector<std::int32_t> l;
  for (std::int64_t b = 0; b < batch; ++b)
    l.push_back(b < static_cast<std::int64_t>(first.size())
                    ? std::min<std::int32_t>(first[static_cast<std::size_t>(b)], static_cast<std::int32_t>(cap))
                    : static_cast<std::int32_t>(rng()() % static_cast<std::uint64_t>(cap + 1)));
  return l;
}

const DType kFast[] = {DType::kBF16, DType::kF16};

TEST(DecodeGpu, EveryDtypeAndSku) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32, DType::kF64}) {
    runs += run_case({shape(t, 3, 1, 8, 2, 128, 16, 20), {1, 17, 300}});
    runs += run_case({shape(t, 2, 4, 8, 8, 64, 32, 4, false), {100, 5}});
  }
  RecordProperty("skus_run", runs);
}

TEST(DecodeGpu, SeqlenEdgesAndPageSizes) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  const std::vector<std::int32_t> edges = {0, 1, 15, 16, 17, 63, 64, 65, 127, 129, 300};
  for (DType t : kFast)
    for (std::int64_t page : {16, 32, 256}) {
      runs += run_case({shape(t, 11, 1, 16, 4, 128, page, 512 / page + 1), edges});
      runs += run_case({shape(t, 11, 4, 16, 4, 64, page, 512 / page + 1), edges});
    }
  runs += run_case({shape(DType::kBF16, 11, 2, 8, 2, 128, 16, 32, false), edges});  // contiguous cache
  RecordProperty("skus_run", runs);
}

TEST(DecodeGpu, SpeculativeTokensAndGqaRatios) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t sq : {1, 4, 16})
    for (std::int64_t ratio : {1, 4, 8, 32}) {  // 32: MQA (Hkv = 1)
      const std::int64_t hq = 32, hkv = hq / ratio;
      const DType t = (sq + ratio) % 2 ? DType::kF16 : DType::kBF16;
      runs += run_case({shape(t, 3, sq, hq, hkv, 128, 16, 12), lengths(3, 192, {0, 3, 190})});
    }
  RecordProperty("skus_run", runs);
}

TEST(DecodeGpu, HeadDims) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (DType t : kFast)
    for (std::int64_t dim : {64, 128, 256}) runs += run_case({shape(t, 2, 2, 8, 2, dim, 16, 10), {150, 33}});
  for (std::int64_t dim : {1, 8, 80, 96, 200, 512}) runs += run_case({shape(DType::kF16, 2, 1, 4, 2, dim, 16, 4), {40, 64}});
  RecordProperty("skus_run", runs);
}

TEST(DecodeGpu, SoftcapAlibiWindowScale) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    Case c{shape(t, 3, 4, 8, 2, 128, 16, 24), {5, 200, 381}};
    c.opt.softcap = 5.0;
    c.opt.scale = 1.0;
    runs += run_case(c);
    c.opt = {};
    c.s.alibi = 1;
    runs += run_case(c);
    c.s.alibi = 2;
    c.opt.window_left = 37;
    runs += run_case(c);
    c.s.alibi = 0;
    for (std::int64_t w : {0, 5, 100}) {
      c.opt.window_left = w;
      runs += run_case(c);
    }
    c.opt.window_left = -1;
    c.opt.causal = false;
    c.opt.scale = 0.05;
    runs += run_case(c);
    c.opt.window_left = 10;  // not causal, windowed
    runs += run_case(c);
  }
  RecordProperty("skus_run", runs);
}

TEST(DecodeGpu, StridedViewsAndNoLse) {
  BARACUDA_REQUIRE_GPU();
  std::vector<Case> cases;  // per dtype: strided views; no lse on a contiguous cache (GQA 2, D 64)
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    cases.push_back({shape(t, 3, 3, 8, 2, 128, 16, 12), {0, 77, 190}});
    cases.back().strided = true;
    cases.push_back({shape(t, 2, 1, 8, 4, 64, 32, 4, false), {1, 128}});
    cases.back().s.lse = false;
  }
  int runs = 0;
  for (const Case& c : cases) runs += run_case(c);
  RecordProperty("skus_run", runs);
}

TEST(DecodeGpu, LongContextSplitsTheKvLength) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (DType t : kFast) {
    Case c{shape(t, 2, 1, 32, 8, 128, 256, 24), {6000, 3}};
    c.expect_split = true;
    runs += run_case(c);
    Case w{shape(t, 1, 4, 16, 2, 64, 16, 512), {8191}};  // page 16, window inside one split
    w.expect_split = true;
    w.opt.window_left = 700;
    runs += run_case(w);
  }
  Case big{shape(DType::kBF16, 16, 1, 32, 8, 128, 16, 256), lengths(16, 4096, {4096, 4095, 1})};
  runs += run_case(big);  // the bench shape at a sixteenth of its batch
  RecordProperty("skus_run", runs);
}

// Page sizes that are multiples of 16 but not powers of two (48, 80, 112: the 64-key tiles of
// mma_splitkv cross pages mid-tile, a page index is a true division), under every SKU; lengths
// off the page and the tile; Sq 1 and 5; a split long sequence.
TEST(DecodeGpu, PageSizesNotPowersOfTwo) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t page : {48, 80, 112}) {
    const DType t = page == 80 ? DType::kF16 : DType::kBF16;
    const std::int64_t slots = 700 / page + 1;
    runs += run_case({shape(t, 5, 1, 16, 4, 128, page, slots), lengths(5, page * slots, {1, static_cast<std::int32_t>(page - 1),
                                                                                             static_cast<std::int32_t>(page + 1), 641})});
    runs += run_case({shape(t, 3, 5, 8, 2, 64, page, slots), lengths(3, page * slots, {static_cast<std::int32_t>(2 * page), 4, 699})});
  }
  Case big{shape(DType::kBF16, 2, 1, 32, 8, 128, 48, 130), {6200, 47}};
  big.expect_split = true;
  runs += run_case(big);
  RecordProperty("skus_run", runs);
}

// Query-token counts between the powers of two (Sq 2, 3, 5, 7, 11, 13: rows of a tile that end
// mid-fragment), with GQA 4 and 1 (MHA), under every SKU; a length below Sq (the first tokens
// see nothing) and 0.
TEST(DecodeGpu, OddQueryTokenCounts) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t sq : {2, 3, 5, 7, 11, 13})
    for (std::int64_t ratio : {4, 1}) {
      const DType t = (sq + ratio) % 2 ? DType::kF16 : DType::kBF16;
      runs += run_case({shape(t, 4, sq, 8, 8 / ratio, ratio == 4 ? 128 : 64, 16, 16),
                        lengths(4, 256, {0, static_cast<std::int32_t>(sq - 1), 255})});
    }
  RecordProperty("skus_run", runs);
}

// The device-side contract the host cannot check (baracuda/ops/decode.hpp): a length above the
// cache's capacity is clamped to it, a negative one reads as 0, and a block-table entry outside
// [0, num_pages) reads as a page of zeros; never an out-of-bounds read. Every SKU, paged (page
// 16 and 256, lengths past the capacity of 8 / 2 slots) and contiguous.
TEST(DecodeGpu, OutOfRangeLengthsAndPages) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (DType t : kFast) {
    Case c{shape(t, 4, 2, 8, 2, 128, 16, 8), {-3, 128 + 40, 128, 77}};
    c.bad_pages = true;
    runs += run_case(c);
    Case w{shape(t, 4, 4, 16, 4, 64, 256, 2), {512 + 1, 300, -1, 600}};
    w.bad_pages = true;
    w.opt.window_left = 200;
    runs += run_case(w);
  }
  runs += run_case({shape(DType::kF32, 3, 1, 4, 2, 64, 40, 1, false), {41, -7, 40}});  // contiguous, S_max 40
  RecordProperty("skus_run", runs);
}

// The bulk-copy SKU (sm_90+) over its own axes: heads per CTA 8 / 4 / 2 / 1 (Hkv 8, 16, 4, 2, 6,
// 3, 1), so tiles of 16 .. 128 keys; page sizes 16, 32, 256, pages that are not a multiple
// of 16 (8, 40: each row finds its own page) and contiguous caches; Sq 1 .. 16 up to 16 query
// rows per KV head; D 64 / 128; lengths that are not multiples of the page, the tile or the
// split; strided views; split and unsplit grids. Each case also runs under every other SKU
// that accepts it; on sm_90+ the bulk SKU must be among them.
int run_bulk_case(const Case& c) {
  if (test_caps().sm >= 90) {
    PlanPreference pref;
    pref.force_sku = "paged_decode.fwd.bulk_splitkv*";
    auto p = SdpaDecodePlan::select(test_stream(), Operands::desc_of(c), pref);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().to_string());
  }
  return run_case(c);
}

TEST(DecodeGpu, BulkCopyHeadsPagesAndTokens) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  struct Heads {
    std::int64_t hq, hkv;
  };
  // (Hq, Hkv): 8 heads per CTA (GQA 4), 16 KV heads (2 CTAs per sequence), 4, 2, 6 (2 per
  // CTA), 3 and 1 (1 per CTA, 128-key tiles).
  for (Heads hd : {Heads{32, 8}, Heads{32, 16}, Heads{16, 4}, Heads{16, 2}, Heads{12, 6}, Heads{12, 3}, Heads{8, 1}})
    for (std::int64_t page : {16, 8, 40, 256, 0}) {  // 0: contiguous cache
      const bool paged = page != 0;
      const std::int64_t ps = paged ? page : 320;
      const DType t = (hd.hkv + page) % 2 ? DType::kF16 : DType::kBF16;
      const std::int64_t dim = hd.hkv % 2 ? 64 : 128;
      runs += run_bulk_case({shape(t, 5, 1, hd.hq, hd.hkv, dim, ps, paged ? 320 / ps + 1 : 1, paged),
                             lengths(5, 320, {0, 1, 17, 129, 319})});
    }
  // Speculative tokens: Sq x group = up to 16 rows per KV head.
  for (std::int64_t sq : {2, 3, 4, 8, 16}) {
    const std::int64_t group = 16 / sq;
    runs += run_bulk_case({shape(DType::kBF16, 3, sq, 4 * group, 4, 128, 16, 20), lengths(3, 320, {0, static_cast<std::int32_t>(sq - 1), 301})});
    runs += run_bulk_case({shape(DType::kF16, 3, sq, 2 * group, 2, 64, 32, 10), lengths(3, 320, {2, 33, 320})});
  }
  // Strided views (q in a fused projection, o with padding, caches with a gap between rows).
  for (DType t : kFast) {
    Case c{shape(t, 3, 4, 16, 4, 128, 16, 12), {0, 77, 190}};
    c.strided = true;
    runs += run_bulk_case(c);
  }
  // Split grids: long sequences with lengths off the tile and split boundaries, windows.
  for (DType t : kFast) {
    runs += run_bulk_case({shape(t, 2, 1, 32, 8, 128, 16, 400), {6397, 45}});
    Case w{shape(t, 1, 2, 16, 2, 64, 32, 200), {6393}};
    w.opt.window_left = 1000;
    runs += run_bulk_case(w);
    Case a{shape(t, 3, 4, 16, 4, 128, 256, 12), {5, 2000, 3071}};
    a.s.alibi = 2;
    a.opt.softcap = 8.0;
    runs += run_bulk_case(a);
  }
  RecordProperty("skus_run", runs);
}

// Same inputs, fresh workspace garbage: the split SKU gives the same bits (fixed split, fixed
// combine order).
void split_combine_is_deterministic(const char* force) {
  SCOPED_TRACE(force);
  Operands op({shape(DType::kBF16, 1, 2, 32, 8, 128, 256, 32), {8000}});
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = SdpaDecodePlan::select(test_stream(), op.d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  ASSERT_GT(plan->workspace_size(), 0u);
  std::vector<std::vector<unsigned char>> bits;
  for (int rep = 0; rep < 2; ++rep) {
    Workspace ws = test_workspace(plan->workspace_size());
    ASSERT_TRUE(memset_device(ws.data, rep ? 0x11 : 0xEE, ws.bytes, test_stream()).is_ok());
    op.poison();
    ASSERT_TRUE(plan->run(test_stream(), ws, op.args()).is_ok());
    ASSERT_TRUE(op.dout->download(op.o, test_stream()));
    const auto* p = reinterpret_cast<const unsigned char*>(op.o.storage());
    bits.emplace_back(p, p + op.o.storage_bytes());
  }
  EXPECT_EQ(bits[0], bits[1]);
  op.verify(plan->sku().name());
}

TEST(DecodeGpu, SplitCombineIsDeterministic) {
  BARACUDA_REQUIRE_GPU();
  split_combine_is_deterministic("paged_decode.fwd.mma_splitkv*");
  if (test_caps().sm >= 90) split_combine_is_deterministic("paged_decode.fwd.bulk_splitkv*");
}

// The serving step: append the new tokens' k / v (KvCacheAppendPlan), then decode over the
// cache (SdpaDecodePlan, split-KV for the long sequence), both captured in one CUDA graph;
// replayed twice with fresh q / k_new / v_new and the cache restored, each time against the
// reference append + decode.
TEST(DecodeGpu, AppendThenDecodeInOneGraph) {
  BARACUDA_REQUIRE_GPU();
  const std::vector<std::int32_t> before = {0, 15, 4000}, after = {2, 17, 4002};
  const auto shp = shape(DType::kBF16, 3, 2, 8, 2, 128, 16, 256);
  const auto d = reference::decode_descriptor(shp);
  const auto ad = reference::append_descriptor(shp);
  HostTensor q(d.q), k0(d.k_cache), v0(d.v_cache), bt(d.block_table), lb(d.seqlens_k), la(d.seqlens_k), o(d.o), lse(d.lse);
  HostTensor kn(ad.k_new), vn(ad.v_new);
  fill_random(k0, -1, 1);
  fill_random(v0, -1, 1);
  reference::fill_block_table(bt, d.k_cache.shape[0], rng());
  for (std::int64_t b = 0; b < 3; ++b) lb.set(b, before[static_cast<std::size_t>(b)]), la.set(b, after[static_cast<std::size_t>(b)]);
  reference::poison_unused_rows(k0, &bt, before);
  reference::poison_unused_rows(v0, &bt, before);
  const Stream& s = test_stream();
  DeviceTensor dq(q, s), dk(k0, s), dv(v0, s), dbt(bt, s), dlb(lb, s), dla(la, s), dout(o, s), dlse(lse, s), dkn(kn, s), dvn(vn, s);
  auto append = KvCacheAppendPlan::select(s, ad);
  auto decode = SdpaDecodePlan::select(s, d);
  ASSERT_TRUE(append.has_value()) << append.error().to_string();
  ASSERT_TRUE(decode.has_value()) << decode.error().to_string();
  EXPECT_GT(decode->workspace_size(), 0u) << "the 4002-key sequence should split";
  const Workspace ws = test_workspace(decode->workspace_size());
  const auto* bt_ptr = static_cast<const std::int32_t*>(dbt.data());
  auto step = [&] {
    Status st = append->run(s, {}, {.k_new = dkn.data(), .v_new = dvn.data(), .k_cache = dk.data(), .v_cache = dv.data(),
                                    .block_table = bt_ptr, .cache_seqlens = static_cast<const std::int32_t*>(dlb.data())});
    if (!st) return st;
    return decode->run(s, ws, {.q = dq.data(), .k_cache = dk.data(), .v_cache = dv.data(), .block_table = bt_ptr,
                               .seqlens_k = static_cast<const std::int32_t*>(dla.data()), .o = dout.data(),
                               .lse = static_cast<float*>(dlse.data())});
  };
  ASSERT_TRUE(step().is_ok());  // eager once: loads the kernels and sets their shared-memory limits
  ASSERT_TRUE(s.synchronize().is_ok());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status captured = step();
  ASSERT_EQ(cudaStreamEndCapture(s.handle(), &graph), cudaSuccess);
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay) + " seed " + std::to_string(test_seed()));
    fill_random(q, -3, 3);
    fill_random(kn, -1, 1);
    fill_random(vn, -1, 1);
    HostTensor k = k0, v = v0;
    ASSERT_TRUE(reference::kv_cache_append(ad, kn, vn, k, v, &bt, lb).is_ok());
    auto want = reference::sdpa_decode(d, q, k, v, &bt, la, nullptr);
    ASSERT_TRUE(want.has_value());
    dq.upload(q, s);
    dkn.upload(kn, s);
    dvn.upload(vn, s);
    dk.upload(k0, s);
    dv.upload(v0, s);
    dout.poison(0xFF, s);
    dlse.poison(0xFF, s);
    ASSERT_EQ(cudaGraphLaunch(exec, s.handle()), cudaSuccess);
    ASSERT_TRUE(dout.download(o, s));
    ASSERT_TRUE(dlse.download(lse, s));
    auto cmp = reference::compare_decode(o, &lse, *want);
    EXPECT_TRUE(cmp.ok) << cmp.detail;
    HostTensor got_k(d.k_cache);
    ASSERT_TRUE(dk.download(got_k, s));
    EXPECT_EQ(std::memcmp(got_k.storage(), k.storage(), k.storage_bytes()), 0) << "k_cache after the append";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// ------------------------------------------------------------------------ run-time refusals
using DecodeRow = ArgRefusalRow<SdpaDecodeArgs>;
char* moved(const void* p, int bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; }
const Code kBad = Code::kInvalidArgument;

// Forces `force` on op's descriptor and expects every row refused (plus the workspace rows
// where the plan has workspace), o and lse keeping their poison.
void decode_refusals(const char* force, const Operands& op, const std::vector<DecodeRow>& rows) {
  SCOPED_TRACE(force);
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = SdpaDecodePlan::select(test_stream(), op.d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  const Stream& s = test_stream();
  Untouched out(op.d.o), lse(op.d.lse);
  SdpaDecodeArgs ok = op.args();
  ok.o = out.data();
  ok.lse = static_cast<float*>(lse.data());
  const std::size_t need = plan->workspace_size();
  expect_arg_run_refusals<SdpaDecodeArgs>(
      "paged_decode", ok, [&](Workspace w, const SdpaDecodeArgs& a) { return plan->run(s, w, a); },
      test_workspace(need + kWorkspaceAlignment), need, rows, {&out, &lse});
}

void refusal_table(const char* force) {
  const Operands op({shape(DType::kBF16, 1, 1, 8, 2, 128, 256, 32), {5000}});  // splits: needs workspace
  decode_refusals(force, op, {
      {"null q", [](SdpaDecodeArgs& a) { a.q = nullptr; }, kBad, "args.q is null"},
      {"null k_cache", [](SdpaDecodeArgs& a) { a.k_cache = nullptr; }, kBad, "args.k_cache is null"},
      {"null block_table", [](SdpaDecodeArgs& a) { a.block_table = nullptr; }, kBad, "args.block_table is null"},
      {"null seqlens_k", [](SdpaDecodeArgs& a) { a.seqlens_k = nullptr; }, kBad, "args.seqlens_k is null"},
      {"null o", [](SdpaDecodeArgs& a) { a.o = nullptr; }, kBad, "args.o is null"},
      {"null lse", [](SdpaDecodeArgs& a) { a.lse = nullptr; }, kBad, "args.lse is null"},
      {"misaligned v_cache", [](SdpaDecodeArgs& a) { a.v_cache = moved(a.v_cache, 2); }, Code::kMisaligned,
       "is not aligned to v_cache.alignment = 16 bytes"},
      {"misaligned q", [](SdpaDecodeArgs& a) { a.q = moved(a.q, 4); }, Code::kMisaligned, "is not aligned to q.alignment = 16 bytes"},
      {"o aliases q", [](SdpaDecodeArgs& a) { a.q = a.o; }, kBad, "args.o overlaps args.q"},
      {"o aliases k_cache", [](SdpaDecodeArgs& a) { a.k_cache = a.o; }, kBad, "args.o overlaps args.k_cache"},
      {"lse aliases o", [](SdpaDecodeArgs& a) { a.o = a.lse; }, kBad, "args.o and args.lse overlap"},
  });
}

TEST(DecodeGpuRefusals, RunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  refusal_table("paged_decode.fwd.mma_splitkv*");
  if (test_caps().sm >= 90) refusal_table("paged_decode.fwd.bulk_splitkv*");
  refusal_table("paged_decode.fwd.simt_warp_row*");
}

// The workspace column on this device: the table's shape (B 1, 8192 keys) splits the KV length
// under mma_splitkv and bulk_splitkv (their partials in the workspace: the workspace rows of
// RunTableEverySku run), simt_warp_row takes none.
TEST(DecodeGpuRefusals, WorkspaceOfEverySku) {
  BARACUDA_REQUIRE_GPU();
  const auto d = reference::decode_descriptor(shape(DType::kBF16, 1, 1, 8, 2, 128, 256, 32));
  for (const char* force : {"paged_decode.fwd.mma_splitkv*", "paged_decode.fwd.bulk_splitkv*", "paged_decode.fwd.simt_warp_row*"}) {
    SCOPED_TRACE(force);
    if (test_caps().sm < 90 && std::string(force).find("bulk") != std::string::npos) continue;
    PlanPreference pref;
    pref.force_sku = force;
    auto plan = SdpaDecodePlan::select(test_stream(), d, pref);
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    if (plan->sku().impl == "simt_warp_row") EXPECT_EQ(plan->workspace_size(), 0u);
    else EXPECT_GT(plan->workspace_size(), 0u);
  }
}

// The optional ALiBi slopes ([B, Hq]) over a contiguous cache (no block table) under every SKU:
// null, misaligned, an output over the slopes, the caches or the lengths; o / lse keep their
// poison. A moved pointer lies inside the allocation it aliases.
void alibi_refusal_table(const char* force) {
  DecodeShape sh = shape(DType::kBF16, 2, 2, 8, 2, 64, 64, 1, false);
  sh.alibi = 2;
  const Operands op({sh, {40, 64}});
  ASSERT_FALSE(op.d.paged());
  decode_refusals(force, op, {
      {"null alibi_slopes", [](SdpaDecodeArgs& a) { a.alibi_slopes = nullptr; }, kBad, "args.alibi_slopes is null"},
      {"null v_cache", [](SdpaDecodeArgs& a) { a.v_cache = nullptr; }, kBad, "args.v_cache is null"},
      {"misaligned alibi_slopes", [](SdpaDecodeArgs& a) { a.alibi_slopes = reinterpret_cast<const float*>(moved(a.alibi_slopes, 4)); },
       Code::kMisaligned, "is not aligned to alibi_slopes.alignment = 16 bytes"},
      {"misaligned k_cache", [](SdpaDecodeArgs& a) { a.k_cache = moved(a.k_cache, 2); }, Code::kMisaligned,
       "is not aligned to k_cache.alignment = 16 bytes"},
      {"misaligned seqlens_k", [](SdpaDecodeArgs& a) { a.seqlens_k = reinterpret_cast<const std::int32_t*>(moved(a.seqlens_k, 2)); },
       Code::kMisaligned, "is not aligned to seqlens_k.alignment = 16 bytes"},
      {"alibi_slopes inside o", [](SdpaDecodeArgs& a) { a.alibi_slopes = static_cast<const float*>(a.o); }, kBad,
       "args.o overlaps args.alibi_slopes"},
      {"lse inside k_cache", [](SdpaDecodeArgs& a) { a.lse = static_cast<float*>(const_cast<void*>(a.k_cache)); }, kBad,
       "args.lse overlaps args.k_cache"},
      {"o inside v_cache", [](SdpaDecodeArgs& a) { a.o = moved(a.v_cache, 256); }, kBad, "args.o overlaps args.v_cache"},
      {"seqlens_k inside o", [](SdpaDecodeArgs& a) { a.seqlens_k = static_cast<const std::int32_t*>(a.o); }, kBad,
       "args.o overlaps args.seqlens_k"},
  });
}

TEST(DecodeGpuRefusals, AlibiContiguousCacheRunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  alibi_refusal_table("paged_decode.fwd.mma_splitkv*");
  if (test_caps().sm >= 90) alibi_refusal_table("paged_decode.fwd.bulk_splitkv*");
  alibi_refusal_table("paged_decode.fwd.simt_warp_row*");
}

}  // namespace
}  // namespace baracuda::test
