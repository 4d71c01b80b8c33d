// GPU tests of BinGemmPlan against reference::bin_gemm (exact: integer op, every element
// bit-exact). Fresh random inputs per run (seed printed on failure): every byte of A's and
// B's storage is random, including the bits past K in each row's last word and the ld padding
// words (the kernels must mask them, never assume zero), and C is random over the whole int32
// range (so accumulate wraps). Every case runs under every SKU (mma_b1, popc_tile), D
// poisoned (0xFF) before each run, guard bytes around every device tensor, D's ld padding
// checked untouched. Cases: the three ops x accumulate off / on / in place (C == D); square,
// skinny (M = 1..16, N = 1..16), odd (primes; K = 1, 31, 32, 33, 255, 257, 1000), ld padding,
// tile edges (127, 128, 129), M = 0; a large 4096 x 4096 x 8192 product; and the run-time
// refusals (null, misaligned, aliasing) with D untouched.
// Filter: --gtest_filter='*BinGemm*'.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "baracuda/reference/gemm_bin.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;
constexpr auto R = MatrixOrder::kRowMajor;

enum class Acc { kOff, kSeparate, kInPlace };

struct Case {
  std::int64_t m, n, k;
  BinGemmOp op = BinGemmOp::kXnorDot;
  Acc acc = Acc::kOff;
  std::int64_t pad_a = 0, pad_b = 0, pad_d = 0;  // ld padding (words / elements)
  DType words = DType::kU32;
};

BinGemmDescriptor desc_of(const Case& c) {
  const std::int64_t w = (c.k + 31) / 32;
  BinGemmDescriptor d;
  d.a = MatrixLayout{c.words, c.m, w, w + c.pad_a, R, 4};
  d.b = MatrixLayout{c.words, c.n, w, w + c.pad_b, R, 4};
  d.d = MatrixLayout{DType::kI32, c.m, c.n, c.n + c.pad_d, R, 4};
  d.k = c.k;
  d.op = c.op;
  d.accumulate = c.acc != Acc::kOff;
  return d;
}

void fill_bits(HostTensor& t) {
  auto* p = reinterpret_cast<unsigned char*>(t.storage());
  for (std::size_t i = 0; i < t.storage_bytes(); ++i) p[i] = static_cast<unsigned char>(rng()());
}

// Runs one case under every SKU that accepts it; returns the number of SKUs run.
int run_case(const Case& c) {
  const BinGemmDescriptor d = desc_of(c);
  SCOPED_TRACE(d.to_string() + (c.acc == Acc::kInPlace ? " in place" : "") + " seed " + std::to_string(test_seed()));
  HostTensor ha(d.a.as_tensor()), hb(d.b.as_tensor()), hc(d.d.as_tensor()), hd(d.d.as_tensor());
  fill_bits(ha);
  fill_bits(hb);
  fill_bits(hc);
  const Stream& st = test_stream();
  DeviceTensor da(ha, st), db(hb, st), dc(hc, st), dd(hd, st);
  auto want = reference::bin_gemm(d, ha, hb, &hc);
  EXPECT_TRUE(want.has_value());
  if (!want) return 0;
  const bool in_place = c.acc == Acc::kInPlace;
  return for_each_sku<BinGemmPlan>(
      d,
      [&] {
        if (in_place) dd.upload(hc, st);  // D starts as C (its ld padding keeps C's random bytes)
        else dd.poison(0xFF, st);
      },
      [&](const BinGemmPlan& p, Workspace ws) {
        const void* cp = c.acc == Acc::kOff ? nullptr : (in_place ? dd.data() : dc.data());
        return p.run(st, ws, {.a = da.data(), .b = db.data(), .c = cp, .d = dd.data()});
      },
      [&](const std::string& sku) {
        SCOPED_TRACE(sku);
        EXPECT_TRUE(dd.download(hd, st)) << "guard bytes around d";
        auto cmp = reference::compare_bin_gemm(hd, d.d, *want);
        EXPECT_TRUE(cmp.ok) << cmp.detail;
        if (in_place) {
          HostTensor pad = hd;  // the ld padding still holds C's bytes
          for (std::int64_t i = 0; i < d.d.numel(); ++i) {
            pad.set(i, 0.0);
            hc.set(i, 0.0);
          }
          EXPECT_EQ(std::memcmp(pad.storage(), hc.storage(), pad.storage_bytes()), 0) << "d's ld padding was written";
          fill_bits(hc);  // hc's logical elements were zeroed above: restore random C for the next SKU
          want = reference::bin_gemm(d, ha, hb, &hc);
        } else {
          EXPECT_TRUE(quant_padding_untouched(hd, 0xFF));
        }
      });
}

const BinGemmOp kOps[] = {BinGemmOp::kXnorDot, BinGemmOp::kXnorCount, BinGemmOp::kAndCount};

TEST(BinGemmGpu, EveryOpAndAccumulateMode) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (BinGemmOp op : kOps)
    for (Acc acc : {Acc::kOff, Acc::kSeparate, Acc::kInPlace}) {
      runs += run_case({256, 256, 1024, op, acc});
      runs += run_case({131, 257, 1000, op, acc, 3, 1, 5});
    }
  RecordProperty("skus_run", runs);
}

TEST(BinGemmGpu, OddKMasking) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t k : {1, 2, 31, 32, 33, 63, 255, 256, 257, 511, 1000, 4097})
    for (BinGemmOp op : kOps) runs += run_case({37, 53, k, op, k % 2 ? Acc::kSeparate : Acc::kOff});
  RecordProperty("skus_run", runs);
}

TEST(BinGemmGpu, SkinnyAndTileEdges) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t m : {1, 2, 3, 7, 8, 15, 16}) {
    runs += run_case({m, 4096, 2048, BinGemmOp::kXnorDot});
    runs += run_case({m, 333, 129, BinGemmOp::kAndCount, Acc::kSeparate});
    runs += run_case({333, m, 77, BinGemmOp::kXnorCount, Acc::kInPlace});  // skinny N
  }
  for (std::int64_t e : {127, 128, 129})
    for (BinGemmOp op : kOps) runs += run_case({e, 2 * e + 1, 3 * e, op, Acc::kSeparate});
  runs += run_case({1, 1, 1, BinGemmOp::kXnorDot});
  runs += run_case({1, 1, 1, BinGemmOp::kAndCount, Acc::kInPlace});
  RecordProperty("skus_run", runs);
}

TEST(BinGemmGpu, PaddedLeadingDimensionsAndI32Words) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  runs += run_case({97, 101, 600, BinGemmOp::kXnorDot, Acc::kOff, 7, 13, 3});
  runs += run_case({200, 64, 8192, BinGemmOp::kAndCount, Acc::kSeparate, 1, 64, 1});
  runs += run_case({64, 200, 33, BinGemmOp::kXnorCount, Acc::kInPlace, 100, 2, 17});
  runs += run_case({211, 223, 1023, BinGemmOp::kXnorDot, Acc::kSeparate, 0, 0, 0, DType::kI32});
  RecordProperty("skus_run", runs);
}

TEST(BinGemmGpu, LargeSquare) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  runs += run_case({4096, 4096, 8192, BinGemmOp::kXnorDot});
  runs += run_case({1024, 1536, 65536 + 31, BinGemmOp::kAndCount, Acc::kSeparate});  // long K, partial word
  RecordProperty("skus_run", runs);
}

// Both SKUs (mma_b1, popc_tile) take every case: each case runs exactly twice, one run per
// SKU forced (the three ops, every accumulate mode, skinny M and N, odd K, padded lds).
TEST(BinGemmGpu, EverySkuForcedOnEveryCase) {
  BARACUDA_REQUIRE_GPU();
  const Case cases[] = {{64, 64, 256, BinGemmOp::kXnorDot},
                        {5, 131, 97, BinGemmOp::kAndCount, Acc::kSeparate},
                        {131, 3, 33, BinGemmOp::kXnorCount, Acc::kInPlace},
                        {97, 101, 600, BinGemmOp::kXnorDot, Acc::kOff, 7, 13, 3}};
  for (const Case& c : cases) EXPECT_EQ(run_case(c), 2) << "M " << c.m << " N " << c.n << " K " << c.k;
}

TEST(BinGemmGpu, EmptyM) {
  BARACUDA_REQUIRE_GPU();
  run_case({0, 64, 128, BinGemmOp::kXnorDot, Acc::kSeparate});
}

// ------------------------------------------------------------------------ run-time refusals
void refusal_table(const char* force) {
  SCOPED_TRACE(force);
  const BinGemmDescriptor d = desc_of({40, 72, 300, BinGemmOp::kXnorDot, Acc::kSeparate});
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = BinGemmPlan::select(test_stream(), d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  const Stream& s = test_stream();
  HostTensor ha(d.a.as_tensor()), hb(d.b.as_tensor()), hc(d.d.as_tensor());
  fill_bits(ha);
  fill_bits(hb);
  fill_bits(hc);
  DeviceTensor da(ha, s), db(hb, s), dc(hc, s);
  Untouched out(d.d.as_tensor());
  const BinGemmArgs ok{.a = da.data(), .b = db.data(), .c = dc.data(), .d = out.data()};
  const std::size_t need = plan->workspace_size();
  EXPECT_EQ(need, 0u);  // no workspace, so no workspace rows (BinGemmSelect.SkusFromCaps asserts it from caps)
  const Code bad = Code::kInvalidArgument;
  expect_arg_run_refusals<BinGemmArgs>(
      "bin_gemm", ok, [&](Workspace w, const BinGemmArgs& a) { return plan->run(s, w, a); },
      test_workspace(need + kWorkspaceAlignment), need,
      {
          {"null a", [](BinGemmArgs& a) { a.a = nullptr; }, bad, "args.a is null"},
          {"null b", [](BinGemmArgs& a) { a.b = nullptr; }, bad, "args.b is null"},
          {"null c", [](BinGemmArgs& a) { a.c = nullptr; }, bad, "args.c is null"},
          {"null d", [](BinGemmArgs& a) { a.d = nullptr; }, bad, "args.d is null"},
          {"misaligned a", [&](BinGemmArgs& a) { a.a = static_cast<const char*>(da.data()) + 2; }, Code::kMisaligned,
           "is not aligned to a.alignment = 4 bytes"},
          {"misaligned c", [&](BinGemmArgs& a) { a.c = static_cast<const char*>(dc.data()) + 1; }, Code::kMisaligned,
           "is not aligned to c.alignment = 4 bytes"},
          {"d aliases a", [](BinGemmArgs& a) { a.a = a.d; }, bad, "args.d overlaps args.a"},
          {"d aliases b", [](BinGemmArgs& a) { a.b = a.d; }, bad, "args.d overlaps args.b"},
          {"c overlaps d partly", [](BinGemmArgs& a) { a.c = static_cast<const std::int32_t*>(a.d) + 1; }, bad,
           "args.d overlaps args.c"},
      },
      {&out});
}

TEST(BinGemmGpuRefusals, RunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  refusal_table("bin_gemm.fwd.mma_b1*");
  refusal_table("bin_gemm.fwd.popc_tile*");
}

}  // namespace
}  // namespace baracuda::test
