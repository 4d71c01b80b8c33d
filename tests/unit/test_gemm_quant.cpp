// IntGemmPlan / Fp8GemmPlan on the CPU: the oracle on known values (exact int32 products,
// the f32 scale formula with round-to-nearest-even and i8 saturation, fp8 decoding and the
// block scales), select's SKUs and workspace from caps alone (sm_80 / sm_89 / sm_90), the
// select-time refusals naming field and value, and the run-time argument checks (null,
// misaligned, aliasing) on fake pointers. Filter: --gtest_filter='*GemmQuant*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gemm_quant.hpp"
#include "gemm/quant_checks.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;
constexpr auto R = MatrixOrder::kRowMajor;
constexpr auto C = MatrixOrder::kColMajor;

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

MatrixLayout qmat(DType t, std::int64_t r, std::int64_t c, MatrixOrder o, std::int64_t ld = 0) {
  return MatrixLayout{t, r, c, ld ? ld : (o == R ? c : r), o, 16};
}
IntGemmDescriptor int_desc(std::int64_t m, std::int64_t n, std::int64_t k, DType out = DType::kI32) {
  IntGemmDescriptor d;
  d.a = qmat(DType::kI8, m, k, R);
  d.b = qmat(DType::kI8, k, n, C);
  d.d = qmat(out, m, n, R);
  return d;
}
Fp8GemmDescriptor fp8_desc(std::int64_t m, std::int64_t n, std::int64_t k, DType out = DType::kBF16) {
  Fp8GemmDescriptor d;
  d.a = qmat(DType::kE4M3, m, k, R);
  d.b = qmat(DType::kE4M3, k, n, C);
  d.d = qmat(out, m, n, R);
  return d;
}

template <class PlanT, class Desc>
void expect_select_refused(const Desc& d, int sm, Code code, const std::string& needle) {
  auto p = PlanT::select_for_caps(caps(sm), d);
  ASSERT_FALSE(p.has_value()) << d.to_string() << " was accepted";
  EXPECT_EQ(p.error().code(), code) << p.error().to_string();
  EXPECT_NE(p.error().to_string().find(needle), std::string::npos) << "message lacks '" << needle << "': " << p.error().to_string();
}

// ------------------------------------------------------------------------ reference
TEST(GemmQuantReference, IntExactAndScaledRounding) {
  auto d = int_desc(2, 2, 4);
  HostTensor a(d.a.as_tensor()), b(d.b.as_tensor());
  // A = [[1, 2, 3, 4], [-128, 127, 0, 5]] (row-major), B = [[1, 0], [1, 1], [1, -1], [1, 2]] (column-major)
  const double av[] = {1, 2, 3, 4, -128, 127, 0, 5};
  for (int i = 0; i < 8; ++i) a.set(i, av[i]);
  const double bv[4][2] = {{1, 0}, {1, 1}, {1, -1}, {1, 2}};
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 2; ++j) reference::store_from_double(DType::kI8, b.data(), k + j * 4, bv[k][j]);
  auto o = reference::int_gemm(d, a, b, {}, {}, {});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->d, (std::vector<double>{10, 7, 4, 137}));
  // i8 output: per-row 0.5 (row 0), 2 (row 1); per-column 1, 1; bias [0.25, 0]:
  //   10 * 0.5 + 0.25 = 5.25 -> 5; 7 * 0.5 = 3.5 -> 4 (ties to even); 4 * 2 + 0.25 = 8.25 -> 8; 274 -> 127
  d.d.dtype = DType::kI8;
  d.scale_a = QuantScale::kPerRow;
  d.scale_b = QuantScale::kPerColumn;
  d.bias = true;
  o = reference::int_gemm(d, a, b, {0.5f, 2.0f}, {1.0f, 1.0f}, {0.25f, 0.0f});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->d, (std::vector<double>{5, 4, 8, 127}));
  EXPECT_EQ(o->bound, (std::vector<double>{0, 0, 0, 0}));
  // 2.5 -> 2 (ties to even), per-tensor
  d.scale_a = QuantScale::kPerTensor;
  d.scale_b = QuantScale::kNone;
  d.bias = false;
  o = reference::int_gemm(d, a, b, {0.25f}, {}, {});
  EXPECT_EQ(o->d, (std::vector<double>{2, 2, 1, 34}));  // 2.5, 1.75, 1.0, 34.25
  // f16: 137 * (1/3) rounded once to f32 then to f16
  d.d.dtype = DType::kF16;
  o = reference::int_gemm(d, a, b, {1.0f / 3.0f}, {}, {});
  const float v = 137.0f * (1.0f / 3.0f);
  EXPECT_EQ(o->d[3], f16_bits_to_f32(f32_to_f16_bits(v)));
  EXPECT_EQ(o->bound[3], reference::ulp_of(DType::kF16, o->d[3]));
  EXPECT_EQ(reference::ulp_of(DType::kF16, 45.5), 0.03125);
  EXPECT_EQ(reference::ulp_of(DType::kBF16, 1.0), 1.0 / 128);
  EXPECT_EQ(reference::ulp_of(DType::kF32, 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(reference::ulp_of(DType::kF16, 0.0), std::ldexp(1.0, -24));
}

TEST(GemmQuantReference, Fp8DecodesExactlyAndScalesBlocks) {
  auto d = fp8_desc(4, 16, 256);
  HostTensor a(d.a.as_tensor()), b(d.b.as_tensor());
  for (std::int64_t i = 0; i < a.layout().numel(); ++i) a.set(i, 0.0);
  for (std::int64_t i = 0; i < b.layout().numel(); ++i) b.set(i, 0.0);
  // a[0, 0] = 1.5, a[0, 200] = -0.875; b[0, j] = 2, b[200, j] = 448 (column-major: k + j * 256)
  a.set(0, 1.5);
  a.set(200, -0.875);
  for (int j = 0; j < 16; ++j) {
    reference::store_from_double(DType::kE4M3, b.data(), 0 + j * 256, 2.0);
    reference::store_from_double(DType::kE4M3, b.data(), 200 + j * 256, 448.0);
  }
  auto o = reference::fp8_gemm(d, a, b, {0.5f}, {2.0f}, 1.0f, nullptr);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->d[0], (1.5 * 2 - 0.875 * 448) * 1.0);  // sa * sb = 1
  EXPECT_EQ(o->d[16], 0.0);
  EXPECT_GT(o->bound[0], 0.0);
  // block scales: kb 0 / 1 of row 0 scaled by a: 2, 4; b's block (nb 0, kb 0 / 1): 3, 5
  d.scale_a = QuantScale::kBlock1x128;
  d.scale_b = QuantScale::kBlock128x128;
  std::vector<float> sa(fp8_scale_count_a(d), 1.0f), sb(fp8_scale_count_b(d), 1.0f);
  ASSERT_EQ(sa.size(), 8u);  // 2 K blocks x 4 rows, M-contiguous
  ASSERT_EQ(sb.size(), 4u);  // 1 N block x round_up(2, 4)
  sa[0 * 4 + 0] = 2;
  sa[1 * 4 + 0] = 4;
  sb[0] = 3;
  sb[1] = 5;
  o = reference::fp8_gemm(d, a, b, sa, sb, 1.0f, nullptr);
  EXPECT_EQ(o->d[0], 1.5 * 2 * 2 * 3 - 0.875 * 448 * 4 * 5);
  // e4m3 D: scale_d applied, saturated to 448, amax before scale_d
  auto e = fp8_desc(4, 16, 256, DType::kE4M3);
  e.amax = true;
  o = reference::fp8_gemm(e, a, b, {1.0f}, {1.0f}, 0.5f, nullptr);
  EXPECT_EQ(o->d[0], -194.5);  // (3 - 392) * 0.5
  o = reference::fp8_gemm(e, a, b, {4.0f}, {1.0f}, 0.5f, nullptr);
  EXPECT_EQ(o->d[0], -448.0);  // (3 - 392) * 4 * 0.5 = -778 -> -448
  EXPECT_EQ(o->amax, 389.0 * 4);
}

// ------------------------------------------------------------------------ select
TEST(GemmQuantSelect, SkusAndWorkspaceFromCaps) {
  for (int sm : {80, 89, 90}) {
    auto p = IntGemmPlan::select_for_caps(caps(sm), int_desc(64, 32, 128));
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().name().rfind("int_gemm.fwd.cublaslt_imma[i8,i32,i32]", 0), 0u) << p->sku().name();
    EXPECT_EQ(p->workspace_size(), 0u);
    auto s = IntGemmPlan::select_for_caps(caps(sm), int_desc(64, 32, 128, DType::kBF16));
    ASSERT_TRUE(s.has_value()) << s.error().to_string();
    EXPECT_NE(s->sku().name().find("cublaslt_imma_scaled"), std::string::npos) << s->sku().name();
    EXPECT_EQ(s->workspace_size(), 64u * 32u * 4u);  // the int32 product (no device: cuBLASLt's part unknown)
  }
  auto f = Fp8GemmPlan::select_for_caps(caps(89), fp8_desc(16, 32, 64));
  ASSERT_TRUE(f.has_value()) << f.error().to_string();
  EXPECT_EQ(f->sku().name().rfind("fp8_gemm.fwd.cublaslt_fp8[e4m3,f32,bf16]", 0), 0u) << f->sku().name();
  auto blk = fp8_desc(16, 256, 256);
  blk.scale_a = QuantScale::kBlock1x128;
  blk.scale_b = QuantScale::kBlock128x128;
  auto fb = Fp8GemmPlan::select_for_caps(caps(90), blk);
  ASSERT_TRUE(fb.has_value()) << fb.error().to_string();
  EXPECT_NE(fb->sku().name().find("cublaslt_fp8_block"), std::string::npos);
  // column-major D and M = 1 (row-major D: cuBLASLt's m is N)
  auto col = int_desc(64, 3, 16, DType::kF32);
  col.d = qmat(DType::kF32, 64, 3, C);
  EXPECT_TRUE(IntGemmPlan::select_for_caps(caps(90), col).has_value());
  EXPECT_TRUE(IntGemmPlan::select_for_caps(caps(90), int_desc(1, 64, 16)).has_value());
  EXPECT_TRUE(Fp8GemmPlan::select_for_caps(caps(90), fp8_desc(1, 64, 16)).has_value());
}

TEST(GemmQuantRefusals, IntSelectNamesFieldAndValue) {
  const Code bad = Code::kInvalidArgument;
  auto d = int_desc(64, 32, 128);
  auto t = d;
  t.a.dtype = DType::kF16;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "a.dtype = f16");
  t = d;
  t.b.dtype = DType::kU8;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "b.dtype = u8");
  t = d;
  t.d.dtype = DType::kF64;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "d.dtype = f64");
  t = d;
  t.b = qmat(DType::kI8, 64, 32, C);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "b.rows = 64 differs from a.cols = 128");
  t = d;
  t.d = qmat(DType::kI32, 64, 33, R);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "d is 64 x 33");
  t = d;
  t.a = qmat(DType::kI8, 64, 128, C);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "a.order = column-major");
  t = d;
  t.b = qmat(DType::kI8, 128, 32, R);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "b.order = row-major");
  t = int_desc(64, 32, 131);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "a.ld = 131 is not a multiple of 4");
  t = int_desc(64, 32, 6);
  t.a.ld = t.b.ld = 8;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "K = 6 is not a multiple of 4");
  t = d;
  t.a.ld = 130;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "a.ld = 130");
  t = d;
  t.b.alignment = 2;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "b.alignment = 2");
  t = int_desc(64, 31, 128);
  t.d.ld = 32;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "d.cols = N = 31 is not a multiple of 4");
  t = int_desc(64, 32, 128);
  t.d.ld = 34;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "d.ld = 34");
  t = d;
  t.scale_a = QuantScale::kPerTensor;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "scale_a = per_tensor");
  t = int_desc(64, 32, 128, DType::kF16);
  t.scale_a = QuantScale::kPerColumn;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "scale_a = per_column");
  t = int_desc(64, 32, 128, DType::kF16);
  t.scale_b = QuantScale::kBlock128x128;
  expect_select_refused<IntGemmPlan>(t, 90, bad, "scale_b = block128x128");
  t = int_desc(13, 7, 128, DType::kF32);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "neither M nor N is a multiple of 4");
  t = int_desc(4, 4, 1 << 17);
  expect_select_refused<IntGemmPlan>(t, 90, bad, "could overflow");
}

TEST(GemmQuantRefusals, Fp8SelectNamesFieldAndValue) {
  const Code bad = Code::kInvalidArgument;
  auto d = fp8_desc(64, 32, 128);
  expect_select_refused<Fp8GemmPlan>(d, 80, Code::kNotSupported, "sm_89+");
  auto t = d;
  t.a.dtype = DType::kI8;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "a.dtype = i8");
  t = d;
  t.a.dtype = t.b.dtype = DType::kE5M2;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "e5m2 x e5m2");
  t = d;
  t.d.dtype = DType::kE5M2;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "d.dtype = e5m2");
  t = d;
  t.a = qmat(DType::kE4M3, 64, 128, C);
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "a.order = column-major");
  t = d;
  t.b = qmat(DType::kE4M3, 128, 32, R);
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "b.order = row-major");
  t = fp8_desc(64, 32, 136);
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "a.ld = 136 is not a multiple of 16");
  t = fp8_desc(64, 32, 8);
  t.a.ld = t.b.ld = 16;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "K = 8 is not a multiple of 16");
  t = fp8_desc(64, 24, 128);
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "d.cols = N = 24 is not a multiple of 16");
  t = d;
  t.d = qmat(DType::kBF16, 24, 32, C);
  t.a = qmat(DType::kE4M3, 24, 128, R);
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "d.rows = M = 24");
  t = d;
  t.d.ld = 36;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "d.ld = 36");
  t = d;
  t.a.alignment = 8;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "a.alignment = 8");
  t = d;
  t.bias = true;
  t.d = qmat(DType::kBF16, 64, 32, C);
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "bias = true with d column-major");
  t = d;
  t.amax = true;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "amax = true with d.dtype = bf16");
  t = d;
  t.scale_a = QuantScale::kBlock1x128;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "scale_a = block1x128, scale_b = per_tensor");
  t = d;
  t.scale_b = QuantScale::kPerColumn;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "scale_b = per_column");
  auto blk = fp8_desc(64, 32, 128);
  blk.scale_a = QuantScale::kBlock1x128;
  blk.scale_b = QuantScale::kBlock128x128;
  expect_select_refused<Fp8GemmPlan>(blk, 89, Code::kNotSupported, "sm_90 (Hopper) only");
  t = fp8_desc(64, 32, 144);
  t.scale_a = QuantScale::kBlock1x128;
  t.scale_b = QuantScale::kBlock128x128;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "K = 144 is not a multiple of 128");
  t = fp8_desc(6, 32, 128);
  t.scale_a = QuantScale::kBlock1x128;
  t.scale_b = QuantScale::kBlock128x128;
  expect_select_refused<Fp8GemmPlan>(t, 90, bad, "M = 6 is not a multiple of 4");
}

// The run-time argument checks (what run() calls before any launch) on fake, never
// dereferenced addresses.
TEST(GemmQuantRefusals, RunArgChecksNameFieldAndValue) {
  auto d = int_desc(64, 32, 128, DType::kF16);
  d.scale_a = QuantScale::kPerRow;
  d.bias = true;
  auto* base = reinterpret_cast<char*>(std::uintptr_t{1} << 30);
  IntGemmArgs ok{.a = base, .b = base + 65536, .d = base + 131072, .scale_a = reinterpret_cast<const float*>(base + 262144),
                 .bias = reinterpret_cast<const float*>(base + 266240)};
  EXPECT_TRUE(gemm::check_int_gemm_args(d, ok).is_ok());
  auto expect = [&](IntGemmArgs a, Code code, const std::string& needle) {
    Status st = gemm::check_int_gemm_args(d, a);
    ASSERT_FALSE(st.is_ok()) << needle;
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.to_string().find(needle), std::string::npos) << st.to_string();
  };
  auto a = ok;
  a.d = nullptr;
  expect(a, Code::kInvalidArgument, "args.d is null");
  a = ok;
  a.scale_a = nullptr;
  expect(a, Code::kInvalidArgument, "args.scale_a is null");
  a = ok;
  a.bias = nullptr;
  expect(a, Code::kInvalidArgument, "args.bias is null");
  a = ok;
  a.a = base + 1;
  expect(a, Code::kMisaligned, "args.a");
  a = ok;
  a.d = base + 64;
  expect(a, Code::kInvalidArgument, "args.d overlaps args.a");
  a = ok;
  a.d = const_cast<float*>(a.scale_a);
  expect(a, Code::kInvalidArgument, "args.d overlaps args.scale_a");

  auto f = fp8_desc(64, 32, 128, DType::kE4M3);
  f.amax = true;
  Fp8GemmArgs fok{.a = base, .b = base + 65536, .d = base + 131072, .scale_a = reinterpret_cast<const float*>(base + 262144),
                  .scale_b = reinterpret_cast<const float*>(base + 262400),
                  .scale_d = reinterpret_cast<const float*>(base + 262656), .amax = reinterpret_cast<float*>(base + 262912)};
  EXPECT_TRUE(gemm::check_fp8_gemm_args(f, fok).is_ok());
  auto fexpect = [&](Fp8GemmArgs a, Code code, const std::string& needle) {
    Status st = gemm::check_fp8_gemm_args(f, a);
    ASSERT_FALSE(st.is_ok()) << needle;
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.to_string().find(needle), std::string::npos) << st.to_string();
  };
  auto g = fok;
  g.scale_d = nullptr;
  fexpect(g, Code::kInvalidArgument, "args.scale_d is null");
  g = fok;
  g.amax = nullptr;
  fexpect(g, Code::kInvalidArgument, "args.amax is null");
  g = fok;
  g.scale_b = nullptr;
  fexpect(g, Code::kInvalidArgument, "args.scale_b is null");
  g = fok;
  g.b = base + 65536 + 8;
  fexpect(g, Code::kMisaligned, "args.b");
  g = fok;
  g.amax = reinterpret_cast<float*>(base + 131072 + 4);
  fexpect(g, Code::kInvalidArgument, "args.d overlaps args.amax");
  g = fok;
  g.amax = const_cast<float*>(fok.scale_a);
  fexpect(g, Code::kInvalidArgument, "args.amax overlaps args.scale_a");
}

}  // namespace
}  // namespace baracuda
