// BinGemmPlan on the CPU: the oracle on known values (masking of the bits past K, the three
// ops, accumulate and its int32 wrap), the word-level oracle against the bit-level definition
// on random shapes, select's SKUs from caps alone (sm_80 / sm_89 / sm_90), the select-time
// refusals naming field and value, and the run-time argument checks (null, misaligned,
// aliasing; D == C in place allowed) on fake pointers. BinGemmPlan needs no workspace, so
// there is no too-small-workspace case (workspace_size() == 0 is asserted instead).
// Filter: --gtest_filter='*BinGemm*'.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gemm_bin.hpp"
#include "gemm/quant_checks.hpp"
#include "select_refusals.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;
constexpr auto R = MatrixOrder::kRowMajor;

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

BinGemmDescriptor bin_desc(std::int64_t m, std::int64_t n, std::int64_t k, BinGemmOp op = BinGemmOp::kXnorDot,
                           bool accumulate = false, std::int64_t pad_a = 0, std::int64_t pad_b = 0, std::int64_t pad_d = 0) {
  const std::int64_t w = (k + 31) / 32;
  BinGemmDescriptor d;
  d.a = MatrixLayout{DType::kU32, m, w, w + pad_a, R, 4};
  d.b = MatrixLayout{DType::kU32, n, w, w + pad_b, R, 4};
  d.d = MatrixLayout{DType::kI32, m, n, n + pad_d, R, 4};
  d.k = k;
  d.op = op;
  d.accumulate = accumulate;
  return d;
}

std::uint32_t* words(HostTensor& t) { return static_cast<std::uint32_t*>(t.data()); }

// ------------------------------------------------------------------------ reference
TEST(BinGemmReference, KnownValuesMaskAndWrap) {
  // K = 5: a = bits k0..k4 = 0 1 1 0 1, b = 1 1 1 0 0; garbage above bit 4 must be ignored.
  auto d = bin_desc(1, 1, 5);
  HostTensor a(d.a.as_tensor()), b(d.b.as_tensor()), c(d.d.as_tensor());
  words(a)[0] = 0xFFFFFFE0u | 0b10110u;
  words(b)[0] = 0xA5A5A5A0u | 0b00111u;
  // +-1 dot: (-1)(1) + (1)(1) + (1)(1) + (-1)(-1) + (1)(-1) = 1
  EXPECT_EQ(reference::bin_gemm(d, a, b, nullptr).value(), std::vector<std::int32_t>{1});
  d.op = BinGemmOp::kXnorCount;  // equal bits: k1, k2, k3
  EXPECT_EQ(reference::bin_gemm(d, a, b, nullptr).value(), std::vector<std::int32_t>{3});
  d.op = BinGemmOp::kAndCount;  // both set: k1, k2
  EXPECT_EQ(reference::bin_gemm(d, a, b, nullptr).value(), std::vector<std::int32_t>{2});
  d.accumulate = true;
  static_cast<std::int32_t*>(c.data())[0] = 10;
  EXPECT_EQ(reference::bin_gemm(d, a, b, &c).value(), std::vector<std::int32_t>{12});
  static_cast<std::int32_t*>(c.data())[0] = std::numeric_limits<std::int32_t>::max();  // wraps mod 2^32
  EXPECT_EQ(reference::bin_gemm(d, a, b, &c).value(), std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min() + 1});
  // K = 64 (two full words), all ones against all zeros: dot = -64, count 0, and 0
  auto e = bin_desc(1, 1, 64);
  HostTensor ea(e.a.as_tensor()), eb(e.b.as_tensor());
  words(ea)[0] = words(ea)[1] = 0xFFFFFFFFu;
  EXPECT_EQ(reference::bin_gemm(e, ea, eb, nullptr).value(), std::vector<std::int32_t>{-64});
  e.op = BinGemmOp::kXnorCount;
  EXPECT_EQ(reference::bin_gemm(e, ea, eb, nullptr).value(), std::vector<std::int32_t>{0});
  // the ld padding words are never read: fill them with ones, K = 32 of zeros in both
  auto f = bin_desc(2, 1, 32, BinGemmOp::kAndCount, false, 3, 1);
  HostTensor fa(f.a.as_tensor()), fb(f.b.as_tensor());
  for (std::size_t i = 0; i < fa.storage_bytes() / 4; ++i) reinterpret_cast<std::uint32_t*>(fa.storage())[i] = ~0u;
  for (std::size_t i = 0; i < fb.storage_bytes() / 4; ++i) reinterpret_cast<std::uint32_t*>(fb.storage())[i] = ~0u;
  words(fa)[0] = words(fa)[4] = words(fb)[0] = 0;
  EXPECT_EQ(reference::bin_gemm(f, fa, fb, nullptr).value(), (std::vector<std::int32_t>{0, 0}));
}

TEST(BinGemmReference, WordOracleMatchesBitDefinition) {
  std::mt19937_64 rng(std::random_device{}());
  for (std::int64_t k : {1, 7, 31, 32, 33, 64, 100, 257})
    for (BinGemmOp op : {BinGemmOp::kXnorDot, BinGemmOp::kXnorCount, BinGemmOp::kAndCount})
      for (bool acc : {false, true}) {
        auto d = bin_desc(5, 3, k, op, acc, 1, 2, 3);
        SCOPED_TRACE(d.to_string());
        HostTensor a(d.a.as_tensor()), b(d.b.as_tensor()), c(d.d.as_tensor());
        for (auto* t : {&a, &b, &c})
          for (std::size_t i = 0; i < t->storage_bytes() / 4; ++i)
            reinterpret_cast<std::uint32_t*>(t->storage())[i] = static_cast<std::uint32_t>(rng());
        const auto fast = reference::bin_gemm(d, a, b, &c), slow = reference::bin_gemm_bitwise(d, a, b, &c);
        ASSERT_TRUE(fast.has_value() && slow.has_value());
        EXPECT_EQ(fast.value(), slow.value());
      }
}

// ------------------------------------------------------------------------ dispatch
TEST(BinGemmSelect, SkusFromCaps) {
  for (int sm : {80, 89, 90}) {
    SCOPED_TRACE(sm);
    auto p = BinGemmPlan::select_for_caps(caps(sm), bin_desc(8192, 8192, 8192));
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().name(), "bin_gemm.fwd.mma_b1[u32,i32,i32].sm80+");
    EXPECT_EQ(p->workspace_size(), 0u);
    PlanPreference pref;
    pref.force_sku = "bin_gemm.fwd.popc_tile*";
    auto q = BinGemmPlan::select_for_caps(caps(sm), bin_desc(3, 5, 33, BinGemmOp::kAndCount, true), pref);
    ASSERT_TRUE(q.has_value()) << q.error().to_string();
    EXPECT_EQ(q->sku().name(), "bin_gemm.fwd.popc_tile[u32,i32,i32].sm80+");
    EXPECT_EQ(q->workspace_size(), 0u);
  }
  // i32 words name the SKU's input dtype (the name drops out when it equals compute)
  auto d = bin_desc(4, 4, 64);
  d.a.dtype = d.b.dtype = DType::kI32;
  auto p = BinGemmPlan::select_for_caps(caps(90), d);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "bin_gemm.fwd.mma_b1[i32,i32].sm80+");
  // N beyond 65535 block columns: every candidate says why
  auto huge = BinGemmPlan::select_for_caps(caps(90), bin_desc(1, 65535 * 128 + 1, 32));
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message().find("N = 8388481 > 8388480"), std::string::npos) << huge.error().message();
}

// ------------------------------------------------------------------------ refusals
TEST(BinGemmRefusals, SelectNamesFieldAndValue) {
  using D = BinGemmDescriptor;
  test::expect_select_refusals<BinGemmPlan>(
      bin_desc(7, 96, 100, BinGemmOp::kXnorDot, true, 1, 0, 3),
      {
          {"dtype", [](D& d) { d.a.dtype = d.b.dtype = DType::kF32; }, "a.dtype = f32"},
          {"dtype", [](D& d) { d.a.dtype = d.b.dtype = DType::kBit; }, "a.dtype = bit"},
          {"dtype", [](D& d) { d.b.dtype = DType::kI32; }, "b.dtype = i32 differs from a.dtype = u32"},
          {"dtype", [](D& d) { d.d.dtype = DType::kF32; }, "d.dtype = f32"},
          {"op", [](D& d) { d.op = static_cast<BinGemmOp>(7); }, "op = 7"},
          {"shape", [](D& d) { d.k = 0; }, "k = 0"},
          {"shape", [](D& d) { d.k = -5; }, "k = -5"},
          {"shape", [](D& d) { d.k = std::int64_t{1} << 31; d.a.cols = d.b.cols = 1 << 26; d.a.ld = d.b.ld = 1 << 26; },
           "k = 2147483648"},
          {"shape", [](D& d) { d.k = 200; }, "a.cols = 4 differs from ceil(k / 32) = 7 words"},
          {"shape", [](D& d) { d.b.cols = 5; d.b.ld = 5; }, "b.cols = 5 differs from ceil(k / 32) = 4 words"},
          {"shape", [](D& d) { d.d.rows = 8; }, "d.rows = 8 differs from a.rows = M = 7"},
          {"shape", [](D& d) { d.b.rows = 95; }, "d.cols = 96 differs from b.rows = N = 95"},
          {"stride", [](D& d) { d.a.ld = 3; }, "a.ld = 3 is below the minimum 4"},
          {"stride", [](D& d) { d.b.ld = 2; }, "b.ld = 2 is below the minimum 4"},
          {"stride", [](D& d) { d.d.ld = 95; }, "d.ld = 95 is below the minimum 96"},
          {"order", [](D& d) { d.a.order = MatrixOrder::kColMajor; d.a.ld = 7; }, "a.order = column-major"},
          {"order", [](D& d) { d.d.order = MatrixOrder::kColMajor; d.d.ld = 7; }, "d.order = column-major"},
          {"alignment", [](D& d) { d.a.alignment = 2; }, "a.alignment = 2 bytes is below 4"},
          {"alignment", [](D& d) { d.d.alignment = 1; }, "d.alignment = 1 bytes is below 4"},
      });
}

TEST(BinGemmRefusals, RunArgsNullMisalignedAliasing) {
  const auto d = bin_desc(4, 8, 70, BinGemmOp::kXnorDot, true);  // 3 words per row
  alignas(256) static std::uint32_t a[4 * 3], b[8 * 3];
  alignas(256) static std::int32_t c[4 * 8], out[4 * 8];
  const BinGemmArgs ok{.a = a, .b = b, .c = c, .d = out};
  EXPECT_TRUE(gemm::check_bin_gemm_args(d, ok).is_ok());
  struct Case {
    std::function<void(BinGemmArgs&)> change;
    Code code;
    std::string needle;
  };
  auto bytes = [](const void* p, int off) { return static_cast<const char*>(p) + off; };
  const std::vector<Case> cases = {
      {[](auto& x) { x.a = nullptr; }, Code::kInvalidArgument, "args.a is null"},
      {[](auto& x) { x.b = nullptr; }, Code::kInvalidArgument, "args.b is null"},
      {[](auto& x) { x.c = nullptr; }, Code::kInvalidArgument, "args.c is null"},
      {[](auto& x) { x.d = nullptr; }, Code::kInvalidArgument, "args.d is null"},
      {[&](auto& x) { x.a = bytes(a, 2); }, Code::kMisaligned, "is not aligned to a.alignment = 4 bytes"},
      {[&](auto& x) { x.b = bytes(b, 1); }, Code::kMisaligned, "is not aligned to b.alignment = 4 bytes"},
      {[&](auto& x) { x.c = bytes(c, 2); }, Code::kMisaligned, "is not aligned to c.alignment = 4 bytes"},
      {[&](auto& x) { x.d = const_cast<char*>(bytes(out, 2)); }, Code::kMisaligned, "is not aligned to d.alignment = 4 bytes"},
      {[](auto& x) { x.d = const_cast<void*>(x.a); }, Code::kInvalidArgument, "args.d overlaps args.a"},
      {[](auto& x) { x.b = x.d; }, Code::kInvalidArgument, "args.d overlaps args.b"},
      {[](auto& x) { x.c = static_cast<std::int32_t*>(x.d) + 1; }, Code::kInvalidArgument, "args.d overlaps args.c"},
  };
  for (const auto& cs : cases) {
    BinGemmArgs x = ok;
    cs.change(x);
    const Status st = gemm::check_bin_gemm_args(d, x);
    EXPECT_EQ(st.code(), cs.code) << cs.needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(cs.needle), std::string::npos) << st.message();
  }
  // in place (C == D exactly) is allowed; without accumulate C is not read (null fine)
  BinGemmArgs inplace = ok;
  inplace.c = inplace.d;
  EXPECT_TRUE(gemm::check_bin_gemm_args(d, inplace).is_ok());
  auto plain = d;
  plain.accumulate = false;
  BinGemmArgs noc = ok;
  noc.c = nullptr;
  EXPECT_TRUE(gemm::check_bin_gemm_args(plain, noc).is_ok());
}

}  // namespace
}  // namespace baracuda
