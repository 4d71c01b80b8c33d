// GPU tests of KvCacheAppendPlan against reference::kv_cache_append (bit-exact: a copy).
// Fresh random inputs per run (seed printed on failure): random bytes in the whole storage of
// both caches before each run (so every byte outside the target slots has a known value), the
// new keys / values random, block tables mapping every slot to a distinct page in a random
// order; after the run every byte of both caches' storage (row gaps of strided caches
// included) and the guard bytes around them are compared with the reference applied to the
// same initial bytes: nothing outside the target slots is written. Every case runs under
// every SKU that accepts it (vec16, elementwise). Cases: dtypes bf16, f16, f32, f64, i8, u8,
// e4m3; D = 1, 3, 8, 64, 128, 256; S_new = 1, 4, 16; paged (page 16, 32, 256) and contiguous;
// write positions at 0, inside a page, across page boundaries, ending exactly at the capacity,
// running past it (those tokens skipped) and negative (skipped); page sizes 48 / 80 and
// block-table entries outside the cache (skipped); strided k_new / v_new (views
// of a fused projection) and caches with gaps; the run-time refusals with both caches untouched.
// Filter: --gtest_filter='*Decode*:*KvCache*'.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "baracuda/reference/decode.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct Case {
  DType dtype;
  std::int64_t batch, s_new, hkv, d, page, max_pages;
  bool paged = true;
  std::vector<std::int32_t> starts;  // cache_seqlens (write positions)
  bool strided = false;
  bool bad_pages = false;  // some block-table entries outside [0, num_pages): those tokens are skipped
};

KvCacheAppendDescriptor desc_of(const Case& c) {
  auto d = reference::append_descriptor(
      reference::decode_shape(c.dtype, c.batch, c.s_new, 1, c.hkv, c.d, c.page, c.max_pages, c.paged, c.paged ? 2 : 0));
  if (c.strided) {  // k_new / v_new inside a fused [B, S_new, Hq + 2 Hkv, D] (Hq = 4 Hkv); caches with row gaps
    const std::int64_t W = 6 * c.hkv, P = d.k_cache.shape[0], ps = d.k_cache.shape[1];
    d.k_new = d.v_new = TensorLayout::strided(c.dtype, {c.batch, c.s_new, c.hkv, c.d}, {c.s_new * W * c.d, W * c.d, c.d, 1});
    d.k_cache = TensorLayout::strided(c.dtype, {P, ps, c.hkv, c.d}, {ps * 2 * c.hkv * c.d, 2 * c.hkv * c.d, c.d, 1});
    d.v_cache = TensorLayout::strided(c.dtype, {P, ps, c.hkv, c.d}, {ps * 3 * c.hkv * c.d, 3 * c.hkv * c.d, c.d, 1});
  }
  return d;
}

void random_bytes(HostTensor& t) {
  auto* p = reinterpret_cast<unsigned char*>(t.storage());
  for (std::size_t i = 0; i < t.storage_bytes(); ++i) p[i] = static_cast<unsigned char>(rng()());
}

int run_case(const Case& c) {
  const KvCacheAppendDescriptor d = desc_of(c);
  SCOPED_TRACE(d.to_string() + " seed " + std::to_string(test_seed()));
  HostTensor kn(d.k_new), vn(d.v_new), kc(d.k_cache), vc(d.v_cache), bt(d.block_table), starts(d.cache_seqlens);
  random_bytes(kn);
  random_bytes(vn);
  random_bytes(kc);
  random_bytes(vc);
  if (d.paged()) reference::fill_block_table(bt, d.k_cache.shape[0], rng());
  if (c.bad_pages)  // sequence b's slot b % max_pages maps to no page: -1 or num_pages + b
    for (std::int64_t b = 0; b < c.batch; ++b)
      bt.set(b * c.max_pages + b % c.max_pages, b % 2 ? -1.0 : static_cast<double>(d.k_cache.shape[0] + b));
  for (std::int64_t b = 0; b < c.batch; ++b) starts.set(b, c.starts[static_cast<std::size_t>(b)]);
  HostTensor want_k = kc, want_v = vc;
  EXPECT_TRUE(reference::kv_cache_append(d, kn, vn, want_k, want_v, d.paged() ? &bt : nullptr, starts).is_ok());
  const Stream& s = test_stream();
  DeviceTensor dkn(kn, s), dvn(vn, s), dkc(kc, s), dvc(vc, s), dstarts(starts, s);
  std::unique_ptr<DeviceTensor> dbt;
  if (d.paged()) dbt = std::make_unique<DeviceTensor>(bt, s);
  HostTensor got_k(d.k_cache), got_v(d.v_cache);
  return for_each_sku<KvCacheAppendPlan>(
      d,
      [&] {
        dkc.upload(kc, s);
        dvc.upload(vc, s);
      },
      [&](const KvCacheAppendPlan& p, Workspace ws) {
        return p.run(s, ws,
                     {.k_new = dkn.data(),
                      .v_new = dvn.data(),
                      .k_cache = dkc.data(),
                      .v_cache = dvc.data(),
                      .block_table = dbt ? static_cast<const std::int32_t*>(dbt->data()) : nullptr,
                      .cache_seqlens = static_cast<const std::int32_t*>(dstarts.data())});
      },
      [&](const std::string& sku) {
        SCOPED_TRACE(sku);
        ASSERT_TRUE(dkc.download(got_k, s)) << "guard bytes around k_cache";
        ASSERT_TRUE(dvc.download(got_v, s)) << "guard bytes around v_cache";
        EXPECT_EQ(std::memcmp(got_k.storage(), want_k.storage(), got_k.storage_bytes()), 0) << "k_cache bytes differ";
        EXPECT_EQ(std::memcmp(got_v.storage(), want_v.storage(), got_v.storage_bytes()), 0) << "v_cache bytes differ";
      });
}

TEST(KvCacheGpu, EveryDtypeAndSku) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kE4M3}) {
    runs += run_case({t, 3, 1, 8, 128, 16, 8, true, {0, 17, 127}});
    runs += run_case({t, 2, 4, 2, 64, 32, 2, false, {3, 60}});
  }
  RecordProperty("skus_run", runs);
}

TEST(KvCacheGpu, PositionsAcrossPagesAndCapacity) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  // capacity 4 x 16 = 64: starts at 0, mid-page, across a page boundary, ending exactly at the
  // capacity (48 + 16), running past it (60: 4 written, 12 skipped), at it (64) and negative
  const std::vector<std::int32_t> starts = {0, 5, 14, 48, 60, 64, -3, 31};
  for (std::int64_t s_new : {1, 4, 16})
    for (DType t : {DType::kBF16, DType::kF32}) runs += run_case({t, 8, s_new, 4, 128, 16, 4, true, starts});
  runs += run_case({DType::kF16, 8, 16, 2, 64, 16, 4, false, starts});  // contiguous, S_max = 64
  for (std::int32_t page : {32, 256}) runs += run_case({DType::kBF16, 3, 16, 2, 128, page, 2, true, {0, page - 3, 2 * page - 16}});
  RecordProperty("skus_run", runs);
}

TEST(KvCacheGpu, OddHeadDimsAndStridedViews) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t dim : {1, 3, 8, 256}) runs += run_case({DType::kF16, 2, 3, 3, dim, 16, 3, true, {0, 30}});
  for (DType t : {DType::kBF16, DType::kF32, DType::kI8}) {
    Case c{t, 3, 4, 2, 128, 16, 4, true, {0, 14, 61}};
    c.strided = true;
    runs += run_case(c);
  }
  RecordProperty("skus_run", runs);
}

// Page sizes that are multiples of 16 but not powers of two (48, 80), writes across their
// boundaries; and block-table entries outside [0, num_pages) (-1, num_pages + b): the tokens
// that land in such a slot are skipped (baracuda/ops/kv_cache.hpp), nothing else is written.
TEST(KvCacheGpu, OddPageSizesAndPagesOutsideTheCache) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int32_t page : {48, 80})
    for (DType t : {DType::kBF16, DType::kF32})
      runs += run_case({t, 4, 16, 2, 128, page, 3, true, {0, page - 5, 2 * page - 16, 3 * page - 9}});
  for (std::int64_t s_new : {1, 16}) {
    Case c{DType::kF16, 6, s_new, 4, 64, 16, 4, true, {0, 3, 14, 20, 40, 60}};
    c.bad_pages = true;
    runs += run_case(c);
  }
  RecordProperty("skus_run", runs);
}

void refusal_table(const char* force) {
  SCOPED_TRACE(force);
  const KvCacheAppendDescriptor d = desc_of({DType::kBF16, 2, 1, 2, 128, 16, 2, true, {0, 5}});
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = KvCacheAppendPlan::select(test_stream(), d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  const Stream& s = test_stream();
  HostTensor kn(d.k_new), vn(d.v_new), bt(d.block_table), starts(d.cache_seqlens);
  random_bytes(kn);
  random_bytes(vn);
  reference::fill_block_table(bt, d.k_cache.shape[0], rng());
  DeviceTensor dkn(kn, s), dvn(vn, s), dbt(bt, s), dstarts(starts, s);
  Untouched kc(d.k_cache), vc(d.v_cache);
  const KvCacheAppendArgs ok{.k_new = dkn.data(),
                             .v_new = dvn.data(),
                             .k_cache = kc.data(),
                             .v_cache = vc.data(),
                             .block_table = static_cast<const std::int32_t*>(dbt.data()),
                             .cache_seqlens = static_cast<const std::int32_t*>(dstarts.data())};
  const Code bad = Code::kInvalidArgument;
  expect_arg_run_refusals<KvCacheAppendArgs>(
      "kv_cache_append", ok, [&](Workspace w, const KvCacheAppendArgs& a) { return plan->run(s, w, a); },
      test_workspace(kWorkspaceAlignment), plan->workspace_size(),
      {
          {"null k_new", [](KvCacheAppendArgs& a) { a.k_new = nullptr; }, bad, "args.k_new is null"},
          {"null v_cache", [](KvCacheAppendArgs& a) { a.v_cache = nullptr; }, bad, "args.v_cache is null"},
          {"null block_table", [](KvCacheAppendArgs& a) { a.block_table = nullptr; }, bad, "args.block_table is null"},
          {"null cache_seqlens", [](KvCacheAppendArgs& a) { a.cache_seqlens = nullptr; }, bad, "args.cache_seqlens is null"},
          {"misaligned k_new", [](KvCacheAppendArgs& a) { a.k_new = static_cast<const char*>(a.k_new) + 2; }, Code::kMisaligned,
           "is not aligned to k_new.alignment = 16 bytes"},
          {"caches overlap", [](KvCacheAppendArgs& a) { a.v_cache = static_cast<char*>(a.k_cache) + 256; }, bad,
           "args.k_cache and args.v_cache overlap"},
          {"k_new inside k_cache", [](KvCacheAppendArgs& a) { a.k_new = a.k_cache; }, bad, "args.k_cache overlaps args.k_new"},
          {"seqlens inside v_cache", [](KvCacheAppendArgs& a) { a.cache_seqlens = static_cast<const std::int32_t*>(a.v_cache); },
           bad, "args.v_cache overlaps args.cache_seqlens"},
      },
      {&kc, &vc});
}

TEST(KvCacheGpuRefusals, RunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  refusal_table("kv_cache_append.fwd.vec16*");
  refusal_table("kv_cache_append.fwd.elementwise*");
}

// A contiguous cache (no block table) under every SKU: workspace_size() is 0 (asserted: no
// workspace rows), and null / misaligned / aliased pointers of the operands the paged table
// leaves out are refused; both caches keep their poison. A moved pointer lies inside the
// allocation it aliases.
void contiguous_refusal_table(const char* force) {
  SCOPED_TRACE(force);
  const KvCacheAppendDescriptor d = desc_of({DType::kF16, 2, 3, 2, 64, 32, 1, false, {0, 7}});
  ASSERT_FALSE(d.paged());
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = KvCacheAppendPlan::select(test_stream(), d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  ASSERT_EQ(plan->workspace_size(), 0u);
  const Stream& s = test_stream();
  HostTensor kn(d.k_new), vn(d.v_new), starts(d.cache_seqlens);
  random_bytes(kn);
  random_bytes(vn);
  DeviceTensor dkn(kn, s), dvn(vn, s), dstarts(starts, s);
  Untouched kc(d.k_cache), vc(d.v_cache);
  const KvCacheAppendArgs ok{.k_new = dkn.data(),
                             .v_new = dvn.data(),
                             .k_cache = kc.data(),
                             .v_cache = vc.data(),
                             .cache_seqlens = static_cast<const std::int32_t*>(dstarts.data())};
  const Code bad = Code::kInvalidArgument, mis = Code::kMisaligned;
  auto at = [](const void* p, int off) { return static_cast<char*>(const_cast<void*>(p)) + off; };
  expect_arg_run_refusals<KvCacheAppendArgs>(
      "kv_cache_append", ok, [&](Workspace w, const KvCacheAppendArgs& a) { return plan->run(s, w, a); }, Workspace{}, 0,
      {
          {"null v_new", [](KvCacheAppendArgs& a) { a.v_new = nullptr; }, bad, "args.v_new is null"},
          {"null k_cache", [](KvCacheAppendArgs& a) { a.k_cache = nullptr; }, bad, "args.k_cache is null"},
          {"misaligned v_cache", [&](KvCacheAppendArgs& a) { a.v_cache = at(a.v_cache, 8); }, mis,
           "is not aligned to v_cache.alignment = 16 bytes"},
          {"misaligned cache_seqlens",
           [&](KvCacheAppendArgs& a) { a.cache_seqlens = reinterpret_cast<const std::int32_t*>(at(a.cache_seqlens, 2)); }, mis,
           "is not aligned to cache_seqlens.alignment = 16 bytes"},
          {"v_new inside v_cache", [](KvCacheAppendArgs& a) { a.v_new = a.v_cache; }, bad, "args.v_cache overlaps args.v_new"},
          {"k_new partly over k_cache", [&](KvCacheAppendArgs& a) { a.k_new = at(a.k_cache, 128); }, bad,
           "args.k_cache overlaps args.k_new"},
          {"cache_seqlens inside k_cache", [](KvCacheAppendArgs& a) { a.cache_seqlens = static_cast<const std::int32_t*>(a.k_cache); },
           bad, "args.k_cache overlaps args.cache_seqlens"},
          {"v_cache = k_cache", [](KvCacheAppendArgs& a) { a.v_cache = a.k_cache; }, bad, "args.k_cache and args.v_cache overlap"},
      },
      {&kc, &vc});
}

TEST(KvCacheGpuRefusals, ContiguousCacheRunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  contiguous_refusal_table("kv_cache_append.fwd.vec16*");
  contiguous_refusal_table("kv_cache_append.fwd.elementwise*");
}

}  // namespace
}  // namespace baracuda::test
