// GPU tests of Int4GemmPlan against reference::int4_gemm (exact dequantization, f64 sums;
// tolerance documented in baracuda/reference/gemm_int4.hpp: the weight's one rounding to the
// activation dtype, f32 accumulation over K, the output rounding). Fresh random inputs per
// run (seed printed on failure): packed weights are random bytes (every nibble value), zero
// points random integers 0..16, scales positive, x and bias uniform in [-1, 1]. Every case
// runs under every SKU that accepts it (w4a16_streamk for M <= 16 at group 128 or K, w4a16_bulk
// on sm_90+, w4a16_stream and w4a16_gemv for M <= 16, dequant_cublaslt for all),
// with y poisoned (0xFF: NaN), guard bytes around every device tensor and y's ld padding
// checked untouched. Cases: M in {1, 2, 7, 13, 16, 17, 31, 128}, odd N (97, 333, 1001, ...),
// K a multiple of each group size (32, 64, 128, K), s4 and u4 + zeros, bias on / off, f16 and
// bf16, padded lds (x.ld odd: the scalar staging path of the decode kernel), a large N that
// needs no split-K and a small N that splits K 30+ ways, the empty M = 0; and the run-time
// refusals (null, misaligned, aliasing, too-small workspace) with y untouched; tiled weights
// (w_layout = kTiled16x128) under the two SKUs that read them.
// Filter: --gtest_filter='*Int4Gemm*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "baracuda/reference/gemm_int4.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;
constexpr auto R = MatrixOrder::kRowMajor;

struct Case {
  std::int64_t m, n, k, group;
  DType w = DType::kS4;
  DType act = DType::kBF16;
  bool bias = false;
  std::int64_t pad_x = 0, pad_w = 0, pad_y = 0;  // ld padding in elements
  std::int64_t scale_shift = 0;  // scales / zeros this many elements past a 16-byte boundary
  bool tiled = false;            // w_layout = kTiled16x128 (random bytes are a valid tiled weight)
};

Int4GemmDescriptor desc_of(const Case& c) {
  Int4GemmDescriptor d;
  d.x = MatrixLayout{c.act, c.m, c.k, c.k + c.pad_x, R, c.pad_x % 8 == 0 ? 16 : 2};
  d.w = MatrixLayout{c.w, c.n, c.k, c.k + c.pad_w, R, 16};
  d.y = MatrixLayout{c.act, c.m, c.n, c.n + c.pad_y, R, c.pad_y % 8 == 0 ? 16 : 2};
  d.group_size = c.group;
  d.zeros = c.w == DType::kU4;
  d.bias = c.bias;
  if (c.tiled) d.w_layout = Int4WeightLayout::kTiled16x128;
  return d;
}

// Host inputs of one case, random.
struct Inputs {
  HostTensor x, w, scales, zeros, bias;
  explicit Inputs(const Int4GemmDescriptor& d)
      : x(d.x.as_tensor()),
        w(d.w.as_tensor()),
        scales(TensorLayout::contiguous(d.x.dtype, {d.n(), d.groups()})),
        zeros(TensorLayout::contiguous(d.x.dtype, {d.n(), d.groups()})),
        bias(TensorLayout::contiguous(d.x.dtype, {std::max<std::int64_t>(d.n(), 1)})) {
    fill_random(x, -1, 1);
    auto* wb = reinterpret_cast<unsigned char*>(w.storage());
    for (std::size_t i = 0; i < w.storage_bytes(); ++i) wb[i] = static_cast<unsigned char>(rng()());
    // |y| stays O(1): s ~ 1 / (8 sqrt(K))
    const double s = 1.0 / (8.0 * std::sqrt(static_cast<double>(std::max<std::int64_t>(d.k(), 1))));
    fill_random(scales, 0.25 * s, 2 * s);
    std::uniform_int_distribution<int> z(0, 16);
    for (std::int64_t i = 0; i < zeros.layout().numel(); ++i) zeros.set(i, z(rng()));
    fill_random(bias, -1, 1);
  }
};

// `t` behind `shift` leading zeros (a device copy whose element 0 sits `shift` elements past
// the 16-byte aligned base).
HostTensor shifted(const HostTensor& t, std::int64_t shift) {
  HostTensor s(TensorLayout::contiguous(t.layout().dtype, {t.layout().numel() + shift}));
  for (std::int64_t i = 0; i < shift; ++i) s.set(i, 0.0);
  for (std::int64_t i = 0; i < t.layout().numel(); ++i) s.set(i + shift, t.get(i));
  return s;
}

// The impl of a SKU name ("int4_gemm.fwd.w4a16_gemv[...]" -> "w4a16_gemv").
std::string impl_of(const std::string& sku) {
  const std::size_t b = sku.find(".fwd.") + 5;
  return sku.substr(b, sku.find('[') - b);
}

// Runs one case under every SKU that accepts it; returns the number of SKUs run. `tally`
// (optional) counts the runs per SKU impl.
int run_case(const Case& c, std::map<std::string, int>* tally = nullptr) {
  const Int4GemmDescriptor d = desc_of(c);
  SCOPED_TRACE(d.to_string() + " scale_shift " + std::to_string(c.scale_shift) + " seed " + std::to_string(test_seed()));
  Inputs in(d);
  HostTensor hy(d.y.as_tensor());
  const Stream& st = test_stream();
  DeviceTensor dx(in.x, st), dw(in.w, st), ds(shifted(in.scales, c.scale_shift), st), dz(shifted(in.zeros, c.scale_shift), st),
      db(in.bias, st), dy(hy, st);
  const std::size_t shift_bytes = static_cast<std::size_t>(c.scale_shift) * 2;
  const void* scales = static_cast<const char*>(ds.data()) + shift_bytes;
  const void* zeros = static_cast<const char*>(dz.data()) + shift_bytes;
  auto want = reference::int4_gemm(d, in.x, in.w, in.scales, &in.zeros, &in.bias);
  EXPECT_TRUE(want.has_value());
  if (!want) return 0;
  return for_each_sku<Int4GemmPlan>(
      d, [&] { dy.poison(0xFF, st); },
      [&](const Int4GemmPlan& p, Workspace ws) {
        return p.run(st, ws, {.x = dx.data(), .w = dw.data(), .scales = scales, .zeros = zeros, .bias = db.data(), .y = dy.data()});
      },
      [&](const std::string& sku) {
        SCOPED_TRACE(sku);
        EXPECT_TRUE(dy.download(hy, st)) << "guard bytes around y";
        auto cmp = reference::compare_quant_gemm(hy, d.y, *want);
        EXPECT_TRUE(cmp.ok) << cmp.detail;
        EXPECT_TRUE(quant_padding_untouched(hy, 0xFF));
        if (tally) ++(*tally)[impl_of(sku)];
      });
}

TEST(Int4GemmGpu, EveryMWeightTypeBiasAndDtype) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t m : {1, 2, 7, 13, 16, 17, 31, 128})
    for (DType w : {DType::kS4, DType::kU4})
      for (DType act : {DType::kBF16, DType::kF16})
        for (bool bias : {false, true}) runs += run_case({m, 333, 640, 128, w, act, bias});
  RecordProperty("skus_run", runs);
}

TEST(Int4GemmGpu, GroupSizesAndOddShapes) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t group : {32, 64, 128}) {
    runs += run_case({5, 97, group * 7, group, DType::kU4, DType::kF16, true});
    runs += run_case({16, 1001, group * 11, group, DType::kS4, DType::kBF16, false});
    runs += run_case({37, 211, group * 3, group, DType::kU4, DType::kBF16, true});
  }
  // group = K (per-channel scales), K not a multiple of 128 (a partial last chunk)
  runs += run_case({3, 129, 160, 160, DType::kU4, DType::kBF16, true});
  runs += run_case({11, 255, 1184, 1184, DType::kS4, DType::kF16, true});
  RecordProperty("skus_run", runs);
}

TEST(Int4GemmGpu, PaddedLeadingDimensions) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  // x.ld % 8 != 0: the decode kernel stages x with 2-byte loads; w rows padded by 32 / 64
  runs += run_case({7, 300, 512, 64, DType::kU4, DType::kBF16, true, 3, 32, 5});
  runs += run_case({16, 96, 256, 32, DType::kS4, DType::kF16, false, 8, 64, 8});
  runs += run_case({1, 513, 384, 128, DType::kS4, DType::kBF16, true, 1, 0, 1});
  runs += run_case({64, 200, 256, 128, DType::kU4, DType::kF16, true, 16, 32, 3});
  RecordProperty("skus_run", runs);
}

TEST(Int4GemmGpu, SplitKAndNoSplit) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  // small N, long K: many K slices reduced in the workspace
  runs += run_case({4, 64, 8192, 128, DType::kS4, DType::kBF16, true});
  runs += run_case({16, 128, 4096, 64, DType::kU4, DType::kF16, false});
  // N large enough to fill the device without splitting K (one slice: direct epilogue)
  runs += run_case({2, 70001, 256, 128, DType::kU4, DType::kBF16, true});
  // a realistic layer shape at decode sizes
  runs += run_case({16, 4096, 4096, 128, DType::kS4, DType::kBF16, true});
  runs += run_case({1, 4096, 4096, 128, DType::kU4, DType::kF16, false});
  RecordProperty("skus_run", runs);
}

// w4a16_stream's pipeline edges: slices of fewer chunks than its 3 stages, chunk counts not a
// multiple of 3, a partial last chunk, group = K a power of two (group index shift) and not,
// and its bench shapes' launch shapes at a smaller N (split 2 / 4 / 8 / 16 ways).
TEST(Int4GemmGpu, StreamPipelineEdges) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  runs += run_case({1, 300, 128, 128, DType::kS4, DType::kBF16, true});    // one chunk
  runs += run_case({9, 257, 256, 64, DType::kU4, DType::kF16, false});     // two chunks
  runs += run_case({16, 515, 896, 32, DType::kS4, DType::kF16, true});     // seven chunks
  runs += run_case({2, 300, 4096, 4096, DType::kS4, DType::kBF16, true});  // group = K = 2^12
  runs += run_case({8, 1000, 1120, 1120, DType::kU4, DType::kBF16, true}); // group = K, not 2^n; partial chunk
  runs += run_case({1, 2048, 8192, 128, DType::kS4, DType::kBF16, false});
  runs += run_case({16, 2048, 8192, 128, DType::kU4, DType::kBF16, true, 8, 0, 24});
  RecordProperty("skus_run", runs);
}

// w4a16_bulk's pipeline (kernels/int4_bulk.cuh): scales / zeros bulk-copied with the weights
// (G % 8 == 0) over whole and partial 1024-k stages (K = 1280 at group 32: a last stage of 256 k,
// two active consumer warps; K = 1536 at group 64: 512 k), every M from 1 to 16 (NT = 1 / 2, the
// tile partials' M rows), odd N (a last tile past N), the ring wrapping many times (N = 6000,
// K = 8192: several tiles of 8 stages per CTA at M = 1, 2 K slices at M >= 12), both CTA forms
// (2 per SM of one consumer group; 1 per SM of two groups taking alternate stages, also across
// tile ends: K = 3072), and scales / zeros 2 or 6 bytes past a 16-byte boundary (then read
// from global memory instead).
TEST(Int4GemmGpu, BulkStagesRingAndScales) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t m = 1; m <= 16; ++m)
    runs += run_case({m, 333, 1024, 128, m % 2 ? DType::kS4 : DType::kU4, m % 3 ? DType::kBF16 : DType::kF16, m % 4 == 0});
  runs += run_case({5, 77, 1280, 32, DType::kU4, DType::kF16, true});
  runs += run_case({16, 200, 1280, 32, DType::kS4, DType::kBF16, false});
  runs += run_case({9, 130, 1536, 64, DType::kU4, DType::kBF16, true});
  runs += run_case({1, 6000, 8192, 128, DType::kS4, DType::kBF16, true});
  runs += run_case({16, 6000, 8192, 128, DType::kU4, DType::kF16, true});
  runs += run_case({12, 6000, 8192, 128, DType::kS4, DType::kF16, false});
  runs += run_case({13, 700, 3072, 64, DType::kU4, DType::kBF16, true});  // 3 stages a tile: groups alternate across tiles
  runs += run_case({7, 700, 3072, 128, DType::kS4, DType::kF16, true});
  runs += run_case({3, 500, 2048, 128, DType::kU4, DType::kBF16, true, 0, 0, 0, 1});
  runs += run_case({16, 500, 2048, 64, DType::kS4, DType::kF16, false, 3, 0, 0, 3});
  RecordProperty("skus_run", runs);
}

// w4a16_streamk's work split (kernels/int4_streamk.cuh; it takes weights of at least 8 units of
// 16 rows x 128 k per warp: N x K >= 16896 x 2048 on the H200): warp ranges that start and end
// inside tiles, tiles met by up to 9 warps (8 units per warp: N = 4224 x K = 8192), several K
// slices (X slices of at most 64 KB: M = 5 and 8 at K = 8192 take two, M = 9 three with a
// shorter last one, M = 12 and 16 four), a last tile past N (N % 16 != 0), a partial last chunk (K = 8288 = group), group =
// K = 16384 (a power of two), x.ld odd (scalar X staging), M from 1 to 16, both weight kinds,
// f16 and bf16, bias on and off.
TEST(Int4GemmGpu, StreamKRangesSlotsAndSlices) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t m : {1, 2, 3, 5, 8, 9, 12, 16})
    runs += run_case({m, 8800 + 16 * m + (m % 3), 8192, 128, m % 2 ? DType::kS4 : DType::kU4,
                      m % 3 ? DType::kBF16 : DType::kF16, m % 4 == 1});
  runs += run_case({1, 4224, 8192, 128, DType::kS4, DType::kBF16, true});
  runs += run_case({4, 4400, 8288, 8288, DType::kU4, DType::kF16, true});
  runs += run_case({2, 1100, 16384, 16384, DType::kS4, DType::kBF16, false});
  runs += run_case({3, 4400, 8192, 128, DType::kS4, DType::kF16, true, 5, 0, 3});
  RecordProperty("skus_run", runs);
}

// w4a16_onepass's work split (kernels/int4_onepass.cuh): blocks (clusters of K-slice blocks)
// own whole tiles, the 16 warps of a block split its units, so a tile is finished by one warp
// (straight into y, or into the block's tile sums) or cut by warp boundaries into up to 16
// slots (N = 4096 x K = 4096 at M = 1: 1-2 tiles a block, 2-4 units a warp) added after the
// loop; the slices of a cluster (M = 9: 3 slices, the last one shorter at K = 8320; M = 16: 4)
// added in slice order through distributed shared memory. Forced, against the reference; then
// the same case twice must give the same bits (the sums' order is fixed).
TEST(Int4GemmGpu, OnePassTilesSlotsAndSlices) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  const struct {
    std::int64_t m, n, k, group;
    DType w, act;
    bool bias, tiled;
  } cases[] = {
      {1, 4096, 4096, 128, DType::kS4, DType::kBF16, false, false},   // many warps a tile
      {1, 28688 + 3, 8192, 128, DType::kU4, DType::kF16, true, false},  // 13-14 tiles a block, N % 16 = 3
      {2, 4400, 8192, 8192, DType::kS4, DType::kBF16, true, true},
      {7, 9000, 8192, 128, DType::kU4, DType::kBF16, false, false},   // 7 x 8224 x 2 bytes of X > 64 KB: 2 slices
      {9, 5000, 8320, 128, DType::kS4, DType::kF16, true, false},     // 3 slices, the last shorter
      {16, 28672, 8192, 128, DType::kS4, DType::kBF16, true, false},  // 4 slices, 54-55 tiles a cluster
      {16, 4112, 4096, 4096, DType::kU4, DType::kBF16, false, true},  // tiled: N % 16 == 0
  };
  for (const auto& c : cases) {
    Case cs{c.m, c.n, c.k, c.group, c.w, c.act, c.bias};
    cs.tiled = c.tiled;
    const Int4GemmDescriptor d = desc_of(cs);
    SCOPED_TRACE(d.to_string() + " seed " + std::to_string(test_seed()));
    PlanPreference pref;
    pref.force_sku = "int4_gemm.fwd.w4a16_onepass*";
    auto plan = Int4GemmPlan::select(test_stream(), d, pref);
    const bool sliced = c.m > 4;  // X over 64 KB at K >= 8192 (or M = 16 at 4096): a cluster
    if (sliced && test_caps().sm < 90) {
      EXPECT_FALSE(plan.has_value());
      continue;
    }
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    EXPECT_EQ(plan->workspace_size(), 0u);
    Inputs in(d);
    const Stream& st = test_stream();
    DeviceTensor dx(in.x, st), dw(in.w, st), ds(in.scales, st), dz(in.zeros, st), db(in.bias, st);
    HostTensor hy(d.y.as_tensor()), hy2(d.y.as_tensor());
    DeviceTensor dy(hy, st);
    auto want = reference::int4_gemm(d, in.x, in.w, in.scales, &in.zeros, &in.bias);
    ASSERT_TRUE(want.has_value());
    const Int4GemmArgs args{.x = dx.data(), .w = dw.data(), .scales = ds.data(), .zeros = dz.data(), .bias = db.data(),
                            .y = dy.data()};
    dy.poison(0xFF, st);
    ASSERT_TRUE(plan->run(st, Workspace{}, args).is_ok());
    ASSERT_TRUE(dy.download(hy, st)) << "guard bytes around y";
    auto cmp = reference::compare_quant_gemm(hy, d.y, *want);
    EXPECT_TRUE(cmp.ok) << cmp.detail;
    dy.poison(0xFF, st);
    ASSERT_TRUE(plan->run(st, Workspace{}, args).is_ok());
    ASSERT_TRUE(dy.download(hy2, st));
    EXPECT_EQ(std::memcmp(hy.storage(), hy2.storage(), hy.storage_bytes()), 0) << "two runs differ";
    ++runs;
  }
  RecordProperty("skus_run", runs);
}

// Tiled weights (w_layout = kTiled16x128): under w4a16_streamk (one and several K slices,
// warp ranges across tiles, the fewer-blocks launch of a small weight) and dequant_cublaslt
// (every M), against the reference, which reads the tiled bytes by its own formula.
TEST(Int4GemmGpu, TiledWeights) {
  BARACUDA_REQUIRE_GPU();
  int runs = 0;
  for (std::int64_t m : {1, 5, 16})
    runs += run_case({m, 8800 + 16 * m, 8192, 128, m % 2 ? DType::kS4 : DType::kU4, m == 5 ? DType::kF16 : DType::kBF16,
                      m != 5, 0, 0, 0, 0, true});
  runs += run_case({1, 4096, 4096, 128, DType::kU4, DType::kBF16, true, 0, 0, 0, 0, true});
  runs += run_case({16, 4096, 4096, 4096, DType::kS4, DType::kF16, false, 0, 0, 3, 0, true});
  runs += run_case({3, 96, 256, 64, DType::kU4, DType::kBF16, true, 5, 0, 0, 0, true});
  runs += run_case({64, 256, 512, 128, DType::kS4, DType::kBF16, true, 0, 0, 0, 0, true});
  RecordProperty("skus_run", runs);
  // streamk + dequant for the five M <= 16 cases at group 128 / K, dequant for the two others,
  // and onepass for the five (sm_90+) or the two whose X fits one K slice (M = 1)
  EXPECT_EQ(runs, 12 + (test_caps().sm >= 90 ? 5 : 2));
}

// Every SKU forced on one set of cases, with the SKUs pinned (per case from sm_90 caps in
// Int4GemmSelect.EverySkuForcedCasesFromCaps): a decode-sized weight that every M <= 16
// kernel takes (4 x 4400 x 8192, group 128: w4a16_onepass, w4a16_streamk, w4a16_stream,
// w4a16_gemv, w4a16_bulk on sm_90+, dequant_cublaslt), M = 9 (one-pass deferred, forced),
// group 64 (no chunk-scale kernels), M = 17 (dequant_cublaslt alone), and tiled weights
// (w4a16_onepass, w4a16_streamk, dequant_cublaslt). Per-SKU run counts in the property skus.
TEST(Int4GemmGpu, EverySkuForced) {
  BARACUDA_REQUIRE_GPU();
  std::map<std::string, int> rows, tiled;
  run_case({4, 4400, 8192, 128, DType::kU4, DType::kF16, true}, &rows);
  run_case({9, 4400, 8192, 128, DType::kS4, DType::kBF16, false}, &rows);
  run_case({3, 320, 1024, 64, DType::kS4, DType::kBF16, true}, &rows);
  run_case({17, 96, 256, 128, DType::kU4, DType::kF16, true}, &rows);
  run_case({1, 4224, 8192, 128, DType::kS4, DType::kBF16, true, 0, 0, 0, 0, true}, &tiled);
  run_case({5, 4400, 8192, 128, DType::kU4, DType::kF16, false, 0, 0, 0, 0, true}, &tiled);
  const bool sm90 = test_caps().sm >= 90;
  // stream-K needs >= 8 units per warp: 275 tiles x 64 chunks >= 8 x 16 x sm_count
  const bool streamk = test_caps().sm_count <= 137;
  std::set<std::string> want_rows = {"w4a16_stream", "w4a16_gemv", "dequant_cublaslt"}, want_tiled = {"dequant_cublaslt"};
  if (sm90) want_rows.insert({"w4a16_bulk", "w4a16_onepass"}), want_tiled.insert("w4a16_onepass");
  if (streamk) want_rows.insert("w4a16_streamk"), want_tiled.insert("w4a16_streamk");
  std::string counts;
  for (auto [tally, want, what] : {std::tuple{&rows, &want_rows, "row-major"}, std::tuple{&tiled, &want_tiled, "tiled"}}) {
    std::set<std::string> got;
    for (const auto& [impl, n] : *tally) {
      got.insert(impl);
      counts += std::string(what) + ":" + impl + "=" + std::to_string(n) + " ";
    }
    EXPECT_EQ(got, *want) << what << " weights, SKUs run: " << counts;
  }
  RecordProperty("skus", counts);
}

TEST(Int4GemmGpu, EmptyM) {
  BARACUDA_REQUIRE_GPU();
  run_case({0, 64, 128, 128, DType::kS4, DType::kBF16, true});
}

// ------------------------------------------------------------------------ run-time refusals
// What a SKU's workspace is for the table's case: any, none (no workspace rows), or some
// (the workspace rows must run).
enum class Ws { kAny, kNone, kSome };

void refusal_table(const char* force, Case c = {4, 96, 256, 64, DType::kU4, DType::kF16, true}, Ws ws = Ws::kAny) {
  SCOPED_TRACE(force);
  const Int4GemmDescriptor d = desc_of(c);
  PlanPreference pref;
  pref.force_sku = force;
  auto plan = Int4GemmPlan::select(test_stream(), d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  Inputs in(d);
  const Stream& s = test_stream();
  DeviceTensor dx(in.x, s), dw(in.w, s), ds(in.scales, s), dz(in.zeros, s), db(in.bias, s);
  Untouched y(d.y.as_tensor());
  const Int4GemmArgs ok{.x = dx.data(), .w = dw.data(), .scales = ds.data(), .zeros = dz.data(), .bias = db.data(), .y = y.data()};
  const std::size_t need = plan->workspace_size();
  if (ws == Ws::kNone) {
    EXPECT_EQ(need, 0u);
  } else if (ws == Ws::kSome) {
    ASSERT_GT(need, 0u);
  }
  const Code bad = Code::kInvalidArgument;
  expect_arg_run_refusals<Int4GemmArgs>(
      "int4_gemm", ok, [&](Workspace w, const Int4GemmArgs& a) { return plan->run(s, w, a); },
      test_workspace(need + kWorkspaceAlignment), need,
      {
          {"null x", [](Int4GemmArgs& a) { a.x = nullptr; }, bad, "args.x is null"},
          {"null w", [](Int4GemmArgs& a) { a.w = nullptr; }, bad, "args.w is null"},
          {"null scales", [](Int4GemmArgs& a) { a.scales = nullptr; }, bad, "args.scales is null"},
          {"null zeros", [](Int4GemmArgs& a) { a.zeros = nullptr; }, bad, "args.zeros is null"},
          {"null bias", [](Int4GemmArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
          {"null y", [](Int4GemmArgs& a) { a.y = nullptr; }, bad, "args.y is null"},
          {"misaligned w", [&](Int4GemmArgs& a) { a.w = static_cast<const char*>(dw.data()) + 8; }, Code::kMisaligned,
           "is not aligned to w.alignment = 16 bytes"},
          {"misaligned x", [&](Int4GemmArgs& a) { a.x = static_cast<const char*>(dx.data()) + 2; }, Code::kMisaligned,
           "is not aligned to x.alignment = 16 bytes"},
          {"misaligned zeros", [&](Int4GemmArgs& a) { a.zeros = static_cast<const char*>(dz.data()) + 1; }, Code::kMisaligned,
           "is not aligned to zeros.alignment = 2 bytes"},
          {"y aliases x", [](Int4GemmArgs& a) { a.x = a.y; }, bad, "args.y overlaps args.x"},
          {"y aliases scales", [](Int4GemmArgs& a) { a.scales = a.y; }, bad, "args.y overlaps args.scales"},
      },
      {&y});
}

TEST(Int4GemmGpuRefusals, RunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  // M = 4, N = 96: split-K, so it has workspace rows (Int4GemmRefusals.RunTableShapesFromCaps)
  refusal_table("int4_gemm.fwd.w4a16_gemv*", {4, 96, 256, 64, DType::kU4, DType::kF16, true}, Ws::kSome);
  refusal_table("int4_gemm.fwd.w4a16_stream[*");
  // stream-K takes weights of >= 8 units per warp: 275 tiles x 64 chunks >= 8 x 16 x 132
  if (test_caps().sm_count <= 132)
    refusal_table("int4_gemm.fwd.w4a16_streamk*", {4, 4400, 8192, 128, DType::kU4, DType::kF16, true});
  if (test_caps().sm >= 90) refusal_table("int4_gemm.fwd.w4a16_bulk*");
  // the one-pass kernel: no workspace; its 4 x 4400 x 8192 case fits sm_90's clusters
  if (test_caps().sm >= 90)
    refusal_table("int4_gemm.fwd.w4a16_onepass*", {4, 4400, 8192, 128, DType::kU4, DType::kF16, true}, Ws::kNone);
  refusal_table("int4_gemm.fwd.dequant_cublaslt*");
}

}  // namespace
}  // namespace baracuda::test
