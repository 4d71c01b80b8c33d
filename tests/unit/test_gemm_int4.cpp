// Int4GemmPlan on the CPU: the oracle on known values, the GPTQ / AWQ repack helper against
// the reference's independent unpacking (random checkpoints packed the way AutoGPTQ and
// AutoAWQ pack them), select's SKUs and workspace from caps alone (sm_80 / sm_89 / sm_90;
// w4a16_bulk's launch shape and its architecture / shared-memory refusals),
// the select-time refusals naming field and value, the repack refusals, and the run-time
// argument checks (null, misaligned, aliasing) on fake pointers.
// Filter: --gtest_filter='*Int4Gemm*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gemm_int4.hpp"
#include "gemm/int4_onepass_split.hpp"
#include "gemm/quant_checks.hpp"
#include "select_refusals.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;
constexpr auto R = MatrixOrder::kRowMajor;

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

Int4GemmDescriptor i4_desc(std::int64_t m, std::int64_t n, std::int64_t k, DType w = DType::kS4, DType act = DType::kBF16,
                           std::int64_t group = 128) {
  Int4GemmDescriptor d;
  d.x = MatrixLayout{act, m, k, k, R, 16};
  d.w = MatrixLayout{w, n, k, k, R, 16};
  d.y = MatrixLayout{act, m, n, n, R, 16};
  d.group_size = group;
  d.zeros = w == DType::kU4;
  return d;
}

// A descriptor select must refuse on caps(sm) under the forced SKU, naming `needle`.
struct ForcedRefusal {
  Int4GemmDescriptor d;
  int sm;
  const char* needle;
};
void expect_forced_refusals(const PlanPreference& pref, std::initializer_list<ForcedRefusal> refusals) {
  for (const auto& r : refusals) {
    auto q = Int4GemmPlan::select_for_caps(caps(r.sm), r.d, pref);
    ASSERT_FALSE(q.has_value()) << r.needle;
    EXPECT_NE(q.error().message().find(r.needle), std::string::npos) << q.error().message();
  }
}

void set_nibble(HostTensor& w, const MatrixLayout& l, std::int64_t n, std::int64_t k, int v) {
  auto* b = static_cast<unsigned char*>(w.data());
  const std::int64_t e = n * l.ld + k;
  const int sh = 4 * static_cast<int>(e % 2);
  b[e / 2] = static_cast<unsigned char>((b[e / 2] & ~(0xF << sh)) | ((v & 0xF) << sh));
}

// ------------------------------------------------------------------------ reference
TEST(Int4GemmReference, KnownValues) {
  // M = 1, N = 2, K = 32, one group; s4: row 0 all -8 (nibble 0x8), row 1 alternating 7 / -1
  auto d = i4_desc(1, 2, 32, DType::kS4, DType::kF16, 32);
  d.bias = true;
  HostTensor x(d.x.as_tensor()), w(d.w.as_tensor()), s(TensorLayout::contiguous(DType::kF16, {2, 1})),
      b(TensorLayout::contiguous(DType::kF16, {2}));
  for (int k = 0; k < 32; ++k) {
    x.set(k, 1.0 + (k % 2));  // 1, 2, 1, 2, ...
    set_nibble(w, d.w, 0, k, 8);
    set_nibble(w, d.w, 1, k, k % 2 ? 0xF : 7);
  }
  s.set(0, 0.5);
  s.set(1, 0.25);
  b.set(0, 1.0);
  b.set(1, -1.0);
  auto deq = reference::int4_dequant(d, w, s, nullptr);
  EXPECT_EQ(deq[0], -4.0);
  EXPECT_EQ(deq[32], 1.75);
  EXPECT_EQ(deq[33], -0.25);
  auto o = reference::int4_gemm(d, x, w, s, nullptr, &b);
  ASSERT_TRUE(o.has_value());
  // row 0: -4 * (16 * 1 + 16 * 2) + 1 = -191; row 1: 16 * (1.75 * 1 - 0.25 * 2) - 1 = 19
  EXPECT_EQ(o->d, (std::vector<double>{-191.0, 19.0}));
  EXPECT_GT(o->bound[0], 0.0);
  // u4 with zero points: (q - z) * s, q = 3, z = 5 -> -2 * 0.5
  auto du = i4_desc(1, 1, 32, DType::kU4, DType::kBF16, 32);
  HostTensor wu(du.w.as_tensor()), su(TensorLayout::contiguous(DType::kBF16, {1, 1})),
      zu(TensorLayout::contiguous(DType::kBF16, {1, 1}));
  for (int k = 0; k < 32; ++k) set_nibble(wu, du.w, 0, k, 3);
  su.set(0, 0.5);
  zu.set(0, 5.0);
  EXPECT_EQ(reference::int4_dequant(du, wu, su, &zu)[7], -1.0);
}

// ------------------------------------------------------------------------ repack
// Packs q [N][K] and zeros [N][G] the way AutoGPTQ / AutoAWQ write checkpoints.
struct Checkpoint {
  std::vector<std::int32_t> qweight, qzeros;
  std::vector<std::uint16_t> scales;
};
Checkpoint pack_checkpoint(Int4CheckpointFormat f, std::int64_t N, std::int64_t K, std::int64_t group,
                           const std::vector<int>& q, const std::vector<int>& zstored, const std::vector<std::uint16_t>& s) {
  static constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // AutoAWQ's order_map
  const std::int64_t G = K / group;
  Checkpoint c;
  c.scales = s;
  c.qzeros.assign(static_cast<std::size_t>(G * N / 8), 0);
  if (f == Int4CheckpointFormat::kGptq) {
    c.qweight.assign(static_cast<std::size_t>(K / 8 * N), 0);
    for (std::int64_t r = 0; r < K / 8; ++r)
      for (std::int64_t n = 0; n < N; ++n) {
        std::uint32_t word = 0;
        for (int j = 0; j < 8; ++j) word |= static_cast<std::uint32_t>(q[n * K + 8 * r + j]) << (4 * j);
        c.qweight[r * N + n] = static_cast<std::int32_t>(word);
      }
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t cc = 0; cc < N / 8; ++cc) {
        std::uint32_t word = 0;
        for (int j = 0; j < 8; ++j) word |= static_cast<std::uint32_t>(zstored[(8 * cc + j) * G + g]) << (4 * j);
        c.qzeros[g * (N / 8) + cc] = static_cast<std::int32_t>(word);
      }
  } else {
    c.qweight.assign(static_cast<std::size_t>(K * N / 8), 0);
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t cc = 0; cc < N / 8; ++cc) {
        std::uint32_t word = 0;
        for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(q[(8 * cc + kOrder[i]) * K + k]) << (4 * i);
        c.qweight[k * (N / 8) + cc] = static_cast<std::int32_t>(word);
      }
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t cc = 0; cc < N / 8; ++cc) {
        std::uint32_t word = 0;
        for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(zstored[(8 * cc + kOrder[i]) * G + g]) << (4 * i);
        c.qzeros[g * (N / 8) + cc] = static_cast<std::int32_t>(word);
      }
  }
  return c;
}

void check_repack(Int4CheckpointFormat f, std::int64_t N, std::int64_t K, std::int64_t group, DType sdt, bool plus_one) {
  SCOPED_TRACE(std::string(int4_checkpoint_format_name(f)) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
               " group=" + std::to_string(group));
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int> nib(0, 15);
  const std::int64_t G = K / group;
  std::vector<int> q(static_cast<std::size_t>(N * K)), z(static_cast<std::size_t>(N * G));
  for (auto& v : q) v = nib(rng);
  for (auto& v : z) v = nib(rng);
  std::vector<std::uint16_t> s(static_cast<std::size_t>(G * N));
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint16_t>(0x3000 + (rng() & 0x3FF));
  const Checkpoint c = pack_checkpoint(f, N, K, group, q, z, s);
  Int4RepackSource src{.format = f, .k = K, .n = N, .group_size = group, .scale_dtype = sdt, .qweight = c.qweight.data(),
                       .qzeros = c.qzeros.data(), .scales = c.scales.data(), .gptq_zero_plus_one = plus_one};
  const auto ref = reference::int4_unpack_checkpoint(src);
  // the reference's unpacking recovers what was packed
  ASSERT_EQ(ref.q, q);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t g = 0; g < G; ++g) {
      ASSERT_EQ(ref.zero[n * G + g], z[n * G + g] + (f == Int4CheckpointFormat::kGptq && plus_one ? 1 : 0));
      ASSERT_EQ(ref.scale_bits[n * G + g], s[g * N + n]);
    }
  std::vector<std::uint8_t> w(int4_packed_bytes(N, K), 0xAB);
  std::vector<std::uint16_t> rs(int4_group_count(N, K, group)), rz(int4_group_count(N, K, group));
  ASSERT_TRUE(int4_repack(src, {.w = w.data(), .scales = rs.data(), .zeros = rz.data()}).is_ok());
  auto d = int4_repacked_descriptor(src, 1);
  EXPECT_EQ(d.w.dtype, DType::kU4);
  EXPECT_TRUE(d.zeros);
  HostTensor hw(d.w.as_tensor());
  ASSERT_EQ(hw.storage_bytes(), w.size());
  std::memcpy(hw.data(), w.data(), w.size());
  HostTensor hs(TensorLayout::contiguous(sdt, {N, G})), hz(TensorLayout::contiguous(sdt, {N, G}));
  std::memcpy(hs.data(), rs.data(), rs.size() * 2);
  std::memcpy(hz.data(), rz.data(), rz.size() * 2);
  // our packing: byte k / 2 of row n, element k in nibble k % 2
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      ASSERT_EQ((w[n * (K / 2) + k / 2] >> (4 * (k % 2))) & 0xF, ref.q[n * K + k]) << "n=" << n << " k=" << k;
  EXPECT_EQ(rs, ref.scale_bits);
  for (std::int64_t i = 0; i < N * G; ++i) ASSERT_EQ(hz.get(i), ref.zero[i]) << i;
  // and the dequantized weight the plan sees is (q - z) * s of the checkpoint
  const auto deq = reference::int4_dequant(d, hw, hs, &hz);
  for (std::int64_t n = 0; n < N; n += 7)
    for (std::int64_t k = 0; k < K; k += 5) {
      const std::int64_t gi = n * G + k / group;
      const double sv = sdt == DType::kF16 ? f16_bits_to_f32(ref.scale_bits[gi]) : bf16_bits_to_f32(ref.scale_bits[gi]);
      ASSERT_EQ(deq[n * K + k], (ref.q[n * K + k] - ref.zero[gi]) * sv);
    }
}

TEST(Int4GemmRepack, GptqMatchesReferenceUnpacking) {
  check_repack(Int4CheckpointFormat::kGptq, 24, 256, 128, DType::kF16, true);
  check_repack(Int4CheckpointFormat::kGptq, 40, 96, 32, DType::kBF16, false);
  check_repack(Int4CheckpointFormat::kGptq, 8, 64, 64, DType::kF16, true);
  check_repack(Int4CheckpointFormat::kGptq, 16, 160, 160, DType::kF16, true);  // group = K
}

TEST(Int4GemmRepack, AwqMatchesReferenceUnpacking) {
  check_repack(Int4CheckpointFormat::kAwq, 24, 256, 128, DType::kF16, true);
  check_repack(Int4CheckpointFormat::kAwq, 40, 96, 32, DType::kBF16, true);
  check_repack(Int4CheckpointFormat::kAwq, 56, 128, 64, DType::kF16, false);
}

TEST(Int4GemmRepack, RefusalsNameFieldAndValue) {
  std::vector<std::int32_t> qw(64 * 16), qz(16);
  std::vector<std::uint16_t> sc(64);
  std::vector<std::uint8_t> w(64 * 32, 0x5A);
  std::vector<std::uint16_t> s(64), z(64);
  const Int4RepackSource ok{.format = Int4CheckpointFormat::kGptq, .k = 64, .n = 16, .group_size = 32,
                            .qweight = qw.data(), .qzeros = qz.data(), .scales = sc.data()};
  const Int4RepackTarget tgt{.w = w.data(), .scales = s.data(), .zeros = z.data()};
  ASSERT_TRUE(int4_repack(ok, tgt).is_ok());
  std::fill(w.begin(), w.end(), 0x5A);
  struct Case {
    std::function<void(Int4RepackSource&, Int4RepackTarget&)> change;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](auto& s, auto&) { s.k = 48; }, "k = 48"},
      {[](auto& s, auto&) { s.n = 12; }, "n = 12"},
      {[](auto& s, auto&) { s.group_size = 16; }, "group_size = 16"},
      {[](auto& s, auto&) { s.scale_dtype = DType::kF32; }, "scale_dtype = f32"},
      {[](auto& s, auto&) { s.qweight = nullptr; }, "src.qweight is null"},
      {[](auto& s, auto&) { s.qzeros = nullptr; }, "src.qzeros is null"},
      {[](auto&, auto& t) { t.zeros = nullptr; }, "dst.zeros is null"},
  };
  for (const auto& c : cases) {
    Int4RepackSource src = ok;
    Int4RepackTarget t = tgt;
    c.change(src, t);
    const Status st = int4_repack(src, t);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.needle;
    EXPECT_NE(st.message().find(c.needle), std::string::npos) << st.message();
  }
  for (auto b : w) ASSERT_EQ(b, 0x5A) << "a refused repack wrote the target";
}

// ------------------------------------------------------------------------ dispatch
TEST(Int4GemmSelect, SkusAndWorkspaceFromCaps) {
  for (int sm : {80, 89, 90}) {
    SCOPED_TRACE(sm);
    for (std::int64_t m : {1, 7, 16}) {
      auto p = Int4GemmPlan::select_for_caps(caps(sm), i4_desc(m, 28672, 8192));
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      // the one-pass kernel where X fits one K slice (M = 1) or sm_90 sums the slices in a
      // cluster (M = 7: 2 slices); the stream-K kernel for M > 8 (one-pass deferred) and where
      // a sliced X needs a cluster that sm80 / sm89 lack: X slices of <= 64 KB and 16 warp
      // rings of 3-4 KB fit every architecture's shared memory (sm89's 99 KB too)
      const bool onepass = m == 1 || (m <= 8 && sm >= 90);
      EXPECT_EQ(p->sku().name(), onepass ? "int4_gemm.fwd.w4a16_onepass[s4,f32,bf16].sm80+"
                                         : "int4_gemm.fwd.w4a16_streamk[s4,f32,bf16].sm80+");
      PlanPreference old;
      old.force_sku = "int4_gemm.fwd.w4a16_gemv*";
      auto g = Int4GemmPlan::select_for_caps(caps(sm), i4_desc(m, 28672, 8192), old);
      ASSERT_TRUE(g.has_value()) << g.error().to_string();
      EXPECT_EQ(g->sku().impl, "w4a16_gemv");
    }
    auto big = Int4GemmPlan::select_for_caps(caps(sm), i4_desc(2048, 28672, 8192, DType::kU4, DType::kF16));
    ASSERT_TRUE(big.has_value()) << big.error().to_string();
    EXPECT_EQ(big->sku().name(), "int4_gemm.fwd.dequant_cublaslt[u4,f32,f16].sm80+");
    EXPECT_GE(big->workspace_size(), std::size_t{28672} * 8192 * 2);  // the dequantized weight
  }
  // forcing the dequant path for a small M works; the decode kernel refuses M > 16 with a reason
  PlanPreference pref;
  pref.force_sku = "int4_gemm.fwd.dequant_cublaslt*";
  auto p = Int4GemmPlan::select_for_caps(caps(90), i4_desc(3, 256, 512), pref);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().impl, "dequant_cublaslt");
  for (const char* f : {"int4_gemm.fwd.w4a16_gemv*", "int4_gemm.fwd.w4a16_stream[*", "int4_gemm.fwd.w4a16_streamk*",
                        "int4_gemm.fwd.w4a16_bulk*", "int4_gemm.fwd.w4a16_onepass*"}) {
    pref.force_sku = f;
    auto q = Int4GemmPlan::select_for_caps(caps(90), i4_desc(17, 256, 512), pref);
    ASSERT_FALSE(q.has_value()) << f;
    EXPECT_NE(q.error().message().find("M = 17 > 16"), std::string::npos) << q.error().message();
  }
  // split-K: a small N on many SMs needs partial sums in the workspace; a huge N does not
  // (the streaming kernel's launch shape; w4a16_bulk's below)
  PlanPreference stream;
  stream.force_sku = "int4_gemm.fwd.w4a16_stream[*";
  auto small = Int4GemmPlan::select_for_caps(caps(90), i4_desc(4, 256, 4096), stream);
  ASSERT_TRUE(small.has_value());
  EXPECT_GT(small->workspace_size(), 0u);
  EXPECT_EQ(small->workspace_size() % (4 * 256 * 4), 0u);
  auto nomax = Int4GemmPlan::select_for_caps(caps(90), i4_desc(1, 1 << 17, 256), stream);
  ASSERT_TRUE(nomax.has_value());
  EXPECT_EQ(nomax->workspace_size(), 0u);
  // w4a16_stream's launch shape on the H200 (132 SMs, 2 blocks per SM; the model of
  // int4_gemm.cpp stream_config): 28672 x 8192 is 112 row blocks x 2 K slices at M = 1 (one
  // wave of 224 blocks), x 4 at M = 16; 4096 x 4096 is 16 row blocks x 16 (M = 1) or 8 slices
  const struct {
    std::int64_t m, n, k, splits;
  } shapes[] = {{1, 28672, 8192, 2}, {16, 28672, 8192, 4}, {1, 4096, 4096, 16}, {16, 4096, 4096, 8}};
  for (const auto& sh : shapes) {
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k));
    auto st = Int4GemmPlan::select_for_caps(caps(90), i4_desc(sh.m, sh.n, sh.k), stream);
    ASSERT_TRUE(st.has_value()) << st.error().to_string();
    EXPECT_EQ(st->sku().impl, "w4a16_stream");
    EXPECT_EQ(st->workspace_size(), static_cast<std::size_t>(sh.splits * sh.m * sh.n * 4));
  }
}

// w4a16_onepass (int4_gemm.cpp onepass_config) takes the decode shapes without a workspace:
// 28672 x 8192 on the H200 in 1 / 2 / 4 K slices at M = 1 / 8 / 16 (clusters of 2 and 4
// blocks; M = 16's 55 tiles of sums a block fit next to X, the rings and the slots). It refuses
// sliced K below sm_90 (the slices are summed through a cluster's shared memory), group sizes
// below 128, and weights that give a warp fewer than 2 units, naming the numbers.
TEST(Int4GemmSelect, OnePassShapeAndRefusals) {
  PlanPreference op;
  op.force_sku = "int4_gemm.fwd.w4a16_onepass*";
  for (std::int64_t m : {1, 4, 8, 16}) {
    SCOPED_TRACE(m);
    auto p = Int4GemmPlan::select_for_caps(caps(90), i4_desc(m, 28672, 8192), op);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "w4a16_onepass");
    EXPECT_EQ(p->workspace_size(), 0u);
  }
  auto one_slice = Int4GemmPlan::select_for_caps(caps(80), i4_desc(4, 28672, 8192), op);  // X 4 x 8224 x 2 bytes
  ASSERT_TRUE(one_slice.has_value()) << one_slice.error().to_string();
  expect_forced_refusals(
      op, {
              {i4_desc(1, 4096, 4096, DType::kS4, DType::kBF16, 64), 90, "group_size = 64: the one-pass kernel"},
              {i4_desc(16, 28672, 8192), 89, "needs 4 K slices, summed through a thread-block cluster: sm_90+ (device sm_89)"},
              {i4_desc(1, 64, 256), 90, "a block's smallest K slice has 2 units of 16 rows x 128 k < 2 per warp x 16 warps"},
          });
}

// The one-pass kernel's split of a block's units (gemm/int4_onepass_split.hpp), simulated on the
// host for every (tiles, chunks) up to 40 x 70 over 16 warps: each warp walks its range as the
// kernel does (a tile is finished at its last chunk or the range's end) and either finishes the
// tile (whole) or fills its slot 0 / 1; no slot is filled twice; after the loop each cut tile
// has exactly one combining warp, whose contributor walk (w - 1, w, ... while bound(j) <
// end) reads exactly the slots filled for that tile, covering each of its units once.
TEST(Int4GemmSelect, OnePassSplitCoversEveryUnitOnce) {
  constexpr int W = 16;
  for (int tiles = 1; tiles <= 40; ++tiles)
    for (int chunks = 1; chunks <= 70; ++chunks) {
      const int units = tiles * chunks;
      if (units < W) continue;  // select keeps every range non-empty
      const gemm::Int4OnePassSplit sp{units, chunks, W};
      SCOPED_TRACE(std::to_string(tiles) + " tiles x " + std::to_string(chunks) + " chunks");
      std::vector<int> finished(tiles, 0), slot_tile(2 * W, -1), slot_units(2 * W, 0);
      for (int w = 0; w < W; ++w) {
        const int u0 = sp.bound(w), u1 = sp.bound(w + 1);
        ASSERT_LT(u0, u1);
        int run = 0;  // units of the current tile in this range
        for (int u = u0; u < u1; ++u) {
          ++run;
          const int lt = u / chunks;
          if ((u + 1) % chunks != 0 && u + 1 != u1) continue;
          if (sp.whole(lt, u0, u1)) {
            EXPECT_EQ(run, chunks);
            ++finished[lt];
          } else {
            const int s = 2 * w + sp.slot(w, lt);
            ASSERT_EQ(slot_tile[s], -1) << "warp " << w << " fills slot " << s % 2 << " twice";
            slot_tile[s] = lt;
            slot_units[s] = run;
          }
          run = 0;
        }
      }
      int read = 0;
      for (int w = 0; w < W; ++w) {
        const int lt = sp.combined_tile(w);
        if (lt < 0) continue;
        ++finished[lt];
        int covered = 0;
        for (int j = w - 1; j < W && sp.bound(j) < (lt + 1) * chunks; ++j) {
          const int s = 2 * j + sp.slot(j, lt);
          ASSERT_EQ(slot_tile[s], lt) << "combiner " << w << " reads warp " << j << "'s slot " << s % 2;
          covered += slot_units[s];
          ++read;
        }
        EXPECT_EQ(covered, chunks);
      }
      for (int lt = 0; lt < tiles; ++lt) EXPECT_EQ(finished[lt], 1) << "tile " << lt;
      EXPECT_EQ(read, static_cast<int>(std::count_if(slot_tile.begin(), slot_tile.end(), [](int t) { return t >= 0; })));
    }
}

// w4a16_streamk's launch shape from caps alone (int4_gemm.cpp streamk_config): on the H200
// (132 SMs, 227 KB) 28672 x 8192 is one K slice at M = 1 (132 blocks, 2112 warps of 54-55
// units, a 64-chunk tile meets at most 3 warps: workspace 1 x 1792 tiles x 3 slots x 16 x M
// f32, then 1792 int32 slot counts), two slices at M = 8 (an X slice of at most 64 KB + 8 x 64
// bytes of row padding: 8 x 4128 x 2; 66 blocks per slice, a 32-chunk tile meets at most 2
// warps) and four at M = 16 (16 x 2080 x 2; 33 blocks per slice). Refusals name the field:
// group sizes below 128, fewer than 8 units per warp (small weights: w4a16_stream / gemv
// measured faster).
TEST(Int4GemmSelect, StreamKShapeAndRefusals) {
  PlanPreference sk;
  sk.force_sku = "int4_gemm.fwd.w4a16_streamk*";
  const struct {
    std::int64_t m, splits, slots;
  } shapes[] = {{1, 1, 3}, {8, 2, 2}, {16, 4, 2}};
  for (const auto& sh : shapes) {
    SCOPED_TRACE(sh.m);
    auto p = Int4GemmPlan::select_for_caps(caps(90), i4_desc(sh.m, 28672, 8192), sk);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "w4a16_streamk");
    // the slots (rounded to 256 bytes), then one int32 slot count per (slice, tile)
    const std::size_t slots_bytes = static_cast<std::size_t>(sh.splits * 1792 * sh.slots * 16 * sh.m * 4);
    EXPECT_EQ(p->workspace_size(), (slots_bytes + 255) / 256 * 256 + static_cast<std::size_t>(sh.splits * 1792 * 4));
  }
  // the fewest units taken: 8 per warp (N = 4224 x K = 8192: 264 tiles x 64 chunks = 16896 =
  // 8 x 2112), a 64-chunk tile meets 64 / 8 + 1 = 9 slots; one tile fewer is refused
  auto few = Int4GemmPlan::select_for_caps(caps(90), i4_desc(1, 4224, 8192), sk);
  ASSERT_TRUE(few.has_value()) << few.error().to_string();
  EXPECT_EQ(few->workspace_size(), static_cast<std::size_t>(264 * 9 * 16 * 4 + 264 * 4));  // 152064 = 594 x 256
  expect_forced_refusals(
      sk, {
              {i4_desc(1, 4096, 4096, DType::kS4, DType::kBF16, 64), 90, "group_size = 64: the stream-K kernel"},
              {i4_desc(4, 4208, 8192), 90, "the smallest K slice has 16832 units of 16 rows x 128 k < 8 per warp x 2112 warps"},
              {i4_desc(1, 4096, 4096), 90,
               "has 8192 units of 16 rows x 128 k < 8 per warp x 2112 warps (N = 4096, K = 4096, 1 K slices)"},
              {i4_desc(1, 4096, 4096), 89, "has 8192 units of 16 rows x 128 k < 8 per warp x 2272 warps"},
          });
}

// w4a16_stream at M > 8 indexes scales and 16-byte weight vectors in 32 bits: a weight with
// N x K / 32 >= 2^31 vectors (select sees only the descriptor: no memory is touched) is
// refused with the counts named, the other decode SKUs take it (w4a16_streamk first, then
// w4a16_gemv); M <= 8 keeps 64-bit pointers.
TEST(Int4GemmSelect, StreamRefusesIndicesPast31Bits) {
  PlanPreference stream;
  stream.force_sku = "int4_gemm.fwd.w4a16_stream[*";
  const auto huge = i4_desc(16, std::int64_t{1} << 20, std::int64_t{1} << 16);  // 2^31 vectors of 32 weights
  auto r = Int4GemmPlan::select_for_caps(caps(90), huge, stream);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("N x w.ld / 32 = 2147483648 weight vectors >= 2^31"), std::string::npos)
      << r.error().message();
  auto small_m = Int4GemmPlan::select_for_caps(caps(90), i4_desc(8, std::int64_t{1} << 20, std::int64_t{1} << 16), stream);
  EXPECT_TRUE(small_m.has_value()) << small_m.error().to_string();
  auto any = Int4GemmPlan::select_for_caps(caps(80), huge);
  ASSERT_TRUE(any.has_value()) << any.error().to_string();
  EXPECT_EQ(any->sku().impl, "w4a16_streamk");  // 64-bit row offsets
  PlanPreference no_sk;
  no_sk.skip_skus = {"*w4a16_streamk*"};
  auto next = Int4GemmPlan::select_for_caps(caps(80), huge, no_sk);
  ASSERT_TRUE(next.has_value()) << next.error().to_string();
  EXPECT_EQ(next->sku().impl, "w4a16_gemv");
}

// w4a16_bulk (sm_90+): its launch shape on the H200 from caps alone (int4_gemm.cpp
// bulk_config): X's whole K fits beside the ring at M = 1 (no split: no workspace), not at
// M = 16 on K = 8192 (2 slices: 2 x M x N f32 partial sums); the 4096 x 4096 shapes need no
// split. On sm_80 / sm_89 it refuses naming the architecture, and a forced M = 17 names M.
TEST(Int4GemmSelect, BulkLaunchShapeAndRefusals) {
  const struct {
    std::int64_t m, n, k, splits;
    DType w;
  } shapes[] = {{1, 28672, 8192, 1, DType::kS4},  {16, 28672, 8192, 2, DType::kS4}, {16, 28672, 8192, 2, DType::kU4},
                {1, 4096, 4096, 1, DType::kU4},   {16, 4096, 4096, 1, DType::kS4},  {8, 11008, 4096, 1, DType::kS4}};
  PlanPreference bulk;
  bulk.force_sku = "int4_gemm.fwd.w4a16_bulk*";
  for (const auto& sh : shapes) {
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k));
    auto p = Int4GemmPlan::select_for_caps(caps(90), i4_desc(sh.m, sh.n, sh.k, sh.w), bulk);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "w4a16_bulk");
    EXPECT_EQ(p->sku().min_sm, 90);
    EXPECT_EQ(p->workspace_size(), sh.splits > 1 ? static_cast<std::size_t>(sh.splits * sh.m * sh.n * 4) : 0u);
  }
  // every group size and odd shapes (scales read from global memory when G % 8 != 0) are accepted
  for (std::int64_t group : {32, 64, 128})
    for (std::int64_t k : {group, std::int64_t{5} * group, std::int64_t{1024}, 3072 + group})
      for (std::int64_t m : {1, 9, 16}) {
        SCOPED_TRACE("group " + std::to_string(group) + " K " + std::to_string(k) + " M " + std::to_string(m));
        auto p = Int4GemmPlan::select_for_caps(caps(90), i4_desc(m, 333, k, DType::kU4, DType::kF16, group), bulk);
        EXPECT_TRUE(p.has_value()) << p.error().to_string();
      }
  auto per_channel = Int4GemmPlan::select_for_caps(caps(90), i4_desc(3, 129, 160, DType::kS4, DType::kBF16, 160), bulk);
  EXPECT_TRUE(per_channel.has_value()) << per_channel.error().to_string();
  for (int sm : {80, 89}) {
    auto r = Int4GemmPlan::select_for_caps(caps(sm), i4_desc(1, 28672, 8192), bulk);
    ASSERT_FALSE(r.has_value()) << sm;
    EXPECT_NE(r.error().message().find("sm " + std::to_string(sm) + " < 90"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("cp.async.bulk"), std::string::npos) << r.error().message();
  }
  // a device with little shared memory: no K slice of X beside 4 stage buffers fits
  DeviceCaps tiny = caps(90);
  tiny.smem_per_block_optin = 32 * 1024;
  auto r = Int4GemmPlan::select_for_caps(tiny, i4_desc(16, 4096, 4096), bulk);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("no K slice of X (M = 16)"), std::string::npos) << r.error().message();
  auto fallback = Int4GemmPlan::select_for_caps(tiny, i4_desc(16, 4096, 4096));
  ASSERT_TRUE(fallback.has_value()) << fallback.error().to_string();
  EXPECT_NE(fallback->sku().impl, "w4a16_bulk");
}

// ------------------------------------------------------------------------ refusals
TEST(Int4GemmRefusals, SelectNamesFieldAndValue) {
  using D = Int4GemmDescriptor;
  test::expect_select_refusals<Int4GemmPlan>(
      i4_desc(7, 96, 256, DType::kU4, DType::kBF16, 64),
      {
          {"dtype", [](D& d) { d.x.dtype = d.y.dtype = DType::kF32; }, "x.dtype = f32"},
          {"dtype", [](D& d) { d.y.dtype = DType::kF16; }, "y.dtype = f16 differs from x.dtype = bf16"},
          {"dtype", [](D& d) { d.w.dtype = DType::kI8; }, "w.dtype = i8"},
          {"dtype", [](D& d) { d.zeros = false; }, "zeros = false with w.dtype = u4"},
          {"dtype", [](D& d) { d.w.dtype = DType::kS4; }, "zeros = true with w.dtype = s4"},
          {"group", [](D& d) { d.group_size = 48; }, "group_size = 48"},
          {"group", [](D& d) { d.group_size = 0; }, "group_size = 0"},
          {"group", [](D& d) { d.x.cols = d.w.cols = 224; d.x.ld = d.w.ld = 224; d.group_size = 128; },
           "K = 224 is not a multiple of group_size = 128"},
          {"shape", [](D& d) { d.x.cols = d.w.cols = 40; d.x.ld = d.w.ld = 64; }, "K = 40 is not a positive multiple of 32"},
          {"shape", [](D& d) { d.w.cols = 128; }, "w.cols = 128 differs from x.cols = K = 256"},
          {"shape", [](D& d) { d.w.rows = 95; }, "w.rows = 95 differs from y.cols = N = 96"},
          {"shape", [](D& d) { d.y.rows = 8; }, "y.rows = 8 differs from x.rows = M = 7"},
          {"stride", [](D& d) { d.x.ld = 100; }, "x.ld = 100 is below the minimum 256"},
          {"stride", [](D& d) { d.w.ld = 272; }, "w.ld = 272 is not a multiple of 32"},
          {"order", [](D& d) { d.w.order = MatrixOrder::kColMajor; d.w.ld = 96; }, "w.order = column-major"},
          {"order", [](D& d) { d.y.order = MatrixOrder::kColMajor; d.y.ld = 7; }, "y.order = column-major"},
          {"alignment", [](D& d) { d.w.alignment = 8; }, "w.alignment = 8 bytes is below 16"},
          {"alignment", [](D& d) { d.x.alignment = 1; }, "x.alignment = 1"},
          {"layout", [](D& d) { d.w_layout = Int4WeightLayout::kTiled16x128; d.w.rows = d.y.cols = d.y.ld = 104; },
           "w.rows = N = 104 is not a multiple of 16 (w_layout = tiled16x128)"},
          {"layout", [](D& d) { d.w_layout = Int4WeightLayout::kTiled16x128; d.x.cols = d.w.cols = 192; d.x.ld = d.w.ld = 192; },
           "w.cols = K = 192 is not a multiple of 128 (w_layout = tiled16x128)"},
          {"layout", [](D& d) { d.w_layout = Int4WeightLayout::kTiled16x128; d.w.ld = 288; },
           "w.ld = 288 differs from K = 256 (w_layout = tiled16x128 has no row padding)"},
          {"layout", [](D& d) { d.w_layout = static_cast<Int4WeightLayout>(7); }, "w_layout = 7 is not an Int4WeightLayout"},
      });
}

// The tiled layout: int4_tile_weights moves each 16-byte vector to int4_tiled_offset, and the
// reference, which reads the tiled bytes by its own formula, dequantizes them to the same
// weight as the row-major source (every element, padded source ld); refusals name the field
// and value and write nothing.
TEST(Int4GemmTiled, TileWeightsMatchesReferenceAndRefuses) {
  const std::int64_t N = 48, K = 384, ld = 416;
  auto d = i4_desc(1, N, K, DType::kU4, DType::kF16, 128);
  d.w.ld = ld;
  HostTensor w(d.w.as_tensor());
  auto* wb = static_cast<unsigned char*>(w.data());
  std::mt19937_64 rng(std::random_device{}());
  for (std::size_t i = 0; i < w.storage_bytes(); ++i) wb[i] = static_cast<unsigned char>(rng());
  std::vector<std::uint8_t> tiled(static_cast<std::size_t>(N * K / 2), 0xA5);
  ASSERT_TRUE(int4_tile_weights(wb, N, K, ld, tiled.data()).is_ok());
  auto dt = d;
  dt.w_layout = Int4WeightLayout::kTiled16x128;
  dt.w.ld = K;
  HostTensor wt(dt.w.as_tensor());
  ASSERT_EQ(wt.storage_bytes(), tiled.size());
  std::memcpy(wt.data(), tiled.data(), tiled.size());
  HostTensor s(TensorLayout::contiguous(DType::kF16, {N, d.groups()})), z(TensorLayout::contiguous(DType::kF16, {N, d.groups()}));
  for (std::int64_t i = 0; i < s.layout().numel(); ++i) {
    s.set(i, 1.0);
    z.set(i, 0.0);
  }
  EXPECT_EQ(reference::int4_dequant(d, w, s, &z), reference::int4_dequant(dt, wt, s, &z));
  EXPECT_EQ(int4_tiled_offset(25, 160, 384), (1 * 3 + 1) * 1024 + 512 + 64 + 16);  // tile 1, chunk 1, row 9 (h 1, g 1), t 1
  EXPECT_NE(d.hash(), [&] { auto e = d; e.w_layout = Int4WeightLayout::kTiled16x128; return e.hash(); }());
  EXPECT_NE(dt.to_string().find("w_layout=tiled16x128"), std::string::npos) << dt.to_string();

  std::vector<std::uint8_t> dst(static_cast<std::size_t>(N * K / 2), 0x5A);
  const struct {
    std::int64_t n, k, ld;
    const std::uint8_t* src;
    std::uint8_t* dst;
    const char* needle;
  } bad[] = {
      {40, K, ld, wb, dst.data(), "n = 40 is not a positive multiple of 16"},
      {N, 320 + 32, 416, wb, dst.data(), "k = 352 is not a positive multiple of 128"},
      {N, K, 352, wb, dst.data(), "ld_elems = 352 is below k = 384"},
      {N, K, 400, wb, dst.data(), "ld_elems = 400 is below k = 384 or not a multiple of 32"},
      {N, K, ld, nullptr, dst.data(), "row_major is null"},
      {N, K, ld, wb, nullptr, "tiled is null"},
      {N, K, ld, wb, wb + 64, "tiled overlaps row_major"},
  };
  for (const auto& b : bad) {
    const Status st = int4_tile_weights(b.src, b.n, b.k, b.ld, b.dst);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << b.needle;
    EXPECT_NE(st.message().find(b.needle), std::string::npos) << st.message();
  }
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::uint8_t v) { return v == 0x5A; }));
}

// Which SKUs take tiled weights: w4a16_onepass (first for M <= 8 with >= 8 tiles a cluster),
// w4a16_streamk (on small weights with fewer blocks instead of refusing) and dequant_cublaslt;
// the row-major decode kernels refuse by name.
TEST(Int4GemmTiled, SelectTakesStreamKAndDequantOnly) {
  auto tiled = [](Int4GemmDescriptor d) {
    d.w_layout = Int4WeightLayout::kTiled16x128;
    return d;
  };
  for (std::int64_t m : {1, 8, 16}) {
    auto p = Int4GemmPlan::select_for_caps(caps(90), tiled(i4_desc(m, 28672, 8192)));
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, m <= 8 ? "w4a16_onepass" : "w4a16_streamk");
  }
  // 4096 x 4096: 256 tiles, 1-2 a block: one-pass defers; for stream-K, 8192 units, 4 per warp
  // at 132 blocks: 64 blocks of 16 warps get 8 each
  auto small = Int4GemmPlan::select_for_caps(caps(90), tiled(i4_desc(1, 4096, 4096)));
  ASSERT_TRUE(small.has_value()) << small.error().to_string();
  EXPECT_EQ(small->sku().impl, "w4a16_streamk");
  auto big = Int4GemmPlan::select_for_caps(caps(90), tiled(i4_desc(2048, 28672, 8192)));
  ASSERT_TRUE(big.has_value()) << big.error().to_string();
  EXPECT_EQ(big->sku().impl, "dequant_cublaslt");
  auto group64 = Int4GemmPlan::select_for_caps(caps(90), tiled(i4_desc(1, 4096, 4096, DType::kS4, DType::kBF16, 64)));
  ASSERT_TRUE(group64.has_value()) << group64.error().to_string();
  EXPECT_EQ(group64->sku().impl, "dequant_cublaslt");
  for (const char* sku : {"int4_gemm.fwd.w4a16_stream[*", "int4_gemm.fwd.w4a16_gemv*", "int4_gemm.fwd.w4a16_bulk*"}) {
    PlanPreference pref;
    pref.force_sku = sku;
    auto r = Int4GemmPlan::select_for_caps(caps(90), tiled(i4_desc(1, 28672, 8192)), pref);
    ASSERT_FALSE(r.has_value()) << sku;
    EXPECT_NE(r.error().message().find("w_layout = tiled16x128: this decode kernel reads row-major weights"),
              std::string::npos)
        << r.error().message();
  }
}

// The SKUs Int4GemmGpu.EverySkuForced expects for each of its cases, from sm_90 caps (132
// SMs: the H100 / H200): the candidates that accept (for_each_sku forces each of them), and
// each of them selected when forced.
TEST(Int4GemmSelect, EverySkuForcedCasesFromCaps) {
  auto with = [](Int4GemmDescriptor d, bool bias, bool tiled) {
    d.bias = bias;
    if (tiled) d.w_layout = Int4WeightLayout::kTiled16x128;
    return d;
  };
  const std::set<std::string> all = {"w4a16_onepass", "w4a16_streamk", "w4a16_stream", "w4a16_gemv", "w4a16_bulk",
                                     "dequant_cublaslt"};
  const struct {
    Int4GemmDescriptor d;
    std::set<std::string> skus;
  } cases[] = {
      {with(i4_desc(4, 4400, 8192, DType::kU4, DType::kF16), true, false), all},
      // M = 9: X in 3 K slices leaves stream-K too few units a warp; one-pass deferred, still forced
      {with(i4_desc(9, 4400, 8192), false, false),
       {"w4a16_onepass", "w4a16_stream", "w4a16_gemv", "w4a16_bulk", "dequant_cublaslt"}},
      {with(i4_desc(3, 320, 1024, DType::kS4, DType::kBF16, 64), true, false),
       {"w4a16_stream", "w4a16_gemv", "w4a16_bulk", "dequant_cublaslt"}},
      {with(i4_desc(17, 96, 256, DType::kU4, DType::kF16), true, false), {"dequant_cublaslt"}},
      {with(i4_desc(1, 4224, 8192), true, true), {"w4a16_onepass", "w4a16_streamk", "dequant_cublaslt"}},
      {with(i4_desc(5, 4400, 8192, DType::kU4, DType::kF16), false, true), {"w4a16_onepass", "w4a16_streamk", "dequant_cublaslt"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.d.to_string());
    auto reports = Int4GemmPlan::candidates(caps(90), c.d);
    ASSERT_TRUE(reports.has_value()) << reports.error().to_string();
    std::set<std::string> got;
    for (const auto& r : reports.value())
      if (r.rejection.empty()) got.insert(r.sku.impl);
    EXPECT_EQ(got, c.skus);
    for (const auto& impl : got) {
      PlanPreference pref;
      pref.force_sku = "int4_gemm.fwd." + impl + "[*";
      auto p = Int4GemmPlan::select_for_caps(caps(90), c.d, pref);
      ASSERT_TRUE(p.has_value()) << impl << ": " << p.error().to_string();
      EXPECT_EQ(p->sku().impl, impl);
    }
  }
}

// The GPU refusal tables (Int4GemmGpuRefusals.RunTableEverySku) from caps alone: w4a16_gemv
// splits K for the 4 x 96 x 256 case (its workspace rows always run), and w4a16_onepass, which
// never has workspace, takes the 4 x 4400 x 8192 case on sm_90.
TEST(Int4GemmRefusals, RunTableShapesFromCaps) {
  auto small = i4_desc(4, 96, 256, DType::kU4, DType::kF16, 64);
  small.bias = true;
  PlanPreference pref;
  pref.force_sku = "int4_gemm.fwd.w4a16_gemv*";
  auto g = Int4GemmPlan::select_for_caps(caps(90), small, pref);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_GT(g->workspace_size(), 0u);
  auto large = i4_desc(4, 4400, 8192, DType::kU4, DType::kF16, 128);
  large.bias = true;
  pref.force_sku = "int4_gemm.fwd.w4a16_onepass*";
  auto o = Int4GemmPlan::select_for_caps(caps(90), large, pref);
  ASSERT_TRUE(o.has_value()) << o.error().to_string();
  EXPECT_EQ(o->workspace_size(), 0u);
}

TEST(Int4GemmRefusals, RunArgsNullMisalignedAliasing) {
  auto d = i4_desc(4, 64, 128, DType::kU4, DType::kF16, 32);
  d.bias = true;
  alignas(256) static unsigned char x[4 * 128 * 2], w[64 * 64], s[64 * 4 * 2], z[64 * 4 * 2], b[64 * 2], y[4 * 64 * 2];
  const Int4GemmArgs ok{.x = x, .w = w, .scales = s, .zeros = z, .bias = b, .y = y};
  EXPECT_TRUE(gemm::check_int4_gemm_args(d, ok).is_ok());
  struct Case {
    std::function<void(Int4GemmArgs&)> change;
    Code code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](auto& a) { a.x = nullptr; }, Code::kInvalidArgument, "args.x is null"},
      {[](auto& a) { a.w = nullptr; }, Code::kInvalidArgument, "args.w is null"},
      {[](auto& a) { a.scales = nullptr; }, Code::kInvalidArgument, "args.scales is null"},
      {[](auto& a) { a.zeros = nullptr; }, Code::kInvalidArgument, "args.zeros is null"},
      {[](auto& a) { a.bias = nullptr; }, Code::kInvalidArgument, "args.bias is null"},
      {[](auto& a) { a.y = nullptr; }, Code::kInvalidArgument, "args.y is null"},
      {[](auto& a) { a.w = w + 8; }, Code::kMisaligned, "is not aligned to w.alignment = 16 bytes"},
      {[](auto& a) { a.x = x + 2; }, Code::kMisaligned, "is not aligned to x.alignment = 16 bytes"},
      {[](auto& a) { a.scales = s + 1; }, Code::kMisaligned, "is not aligned to scales.alignment = 2 bytes"},
      {[](auto& a) { a.y = const_cast<void*>(a.x); }, Code::kInvalidArgument, "args.y overlaps args.x"},
      {[](auto& a) { a.y = const_cast<void*>(a.w); }, Code::kInvalidArgument, "args.y overlaps args.w"},
      {[](auto& a) { a.bias = a.y; }, Code::kInvalidArgument, "args.y overlaps args.bias"},
  };
  for (const auto& c : cases) {
    Int4GemmArgs a = ok;
    c.change(a);
    const Status st = gemm::check_int4_gemm_args(d, a);
    EXPECT_EQ(st.code(), c.code) << c.needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(c.needle), std::string::npos) << st.message();
  }
  // s4 without zeros: a null zeros pointer is fine
  auto s4 = i4_desc(4, 64, 128, DType::kS4, DType::kF16, 32);
  Int4GemmArgs a = ok;
  a.zeros = nullptr;
  a.bias = nullptr;
  EXPECT_TRUE(gemm::check_int4_gemm_args(s4, a).is_ok());
}

}  // namespace
}  // namespace baracuda
