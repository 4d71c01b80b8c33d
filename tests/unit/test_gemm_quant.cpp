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
#include "gemm_descriptors.hpp"

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
  test_gemm::expect_select_rows<IntGemmPlan>(int_desc(64, 32, 128), std::vector<test_gemm::SelectRefusalRow<IntGemmDescriptor>>{
      {[](auto& t) { t.a.dtype = DType::kF16; }, "a.dtype = f16"},
      {[](auto& t) { t.b.dtype = DType::kU8; }, "b.dtype = u8"},
      {[](auto& t) { t.d.dtype = DType::kF64; }, "d.dtype = f64"},
      {[](auto& t) { t.b = qmat(DType::kI8, 64, 32, C); }, "b.rows = 64 differs from a.cols = 128"},
      {[](auto& t) { t.d = qmat(DType::kI32, 64, 33, R); }, "d is 64 x 33"},
      {[](auto& t) { t.a = qmat(DType::kI8, 64, 128, C); }, "a.order = column-major"},
      {[](auto& t) { t.b = qmat(DType::kI8, 128, 32, R); }, "b.order = row-major"},
      {[](auto& t) { t = int_desc(64, 32, 131); }, "a.ld = 131 is not a multiple of 4"},
      {[](auto& t) { t = int_desc(64, 32, 6); t.a.ld = t.b.ld = 8; }, "K = 6 is not a multiple of 4"},
      {[](auto& t) { t.a.ld = 130; }, "a.ld = 130"},
      {[](auto& t) { t.b.alignment = 2; }, "b.alignment = 2"},
      {[](auto& t) { t = int_desc(64, 31, 128); t.d.ld = 32; }, "d.cols = N = 31 is not a multiple of 4"},
      {[](auto& t) { t = int_desc(64, 32, 128); t.d.ld = 34; }, "d.ld = 34"},
      {[](auto& t) { t.scale_a = QuantScale::kPerTensor; }, "scale_a = per_tensor"},
      {[](auto& t) { t = int_desc(64, 32, 128, DType::kF16); t.scale_a = QuantScale::kPerColumn; }, "scale_a = per_column"},
      {[](auto& t) { t = int_desc(64, 32, 128, DType::kF16); t.scale_b = QuantScale::kBlock128x128; }, "scale_b = block128x128"},
      {[](auto& t) { t = int_desc(13, 7, 128, DType::kF32); }, "neither M nor N is a multiple of 4"},
      {[](auto& t) { t = int_desc(4, 4, 1 << 17); }, "could overflow"},
  });
}

TEST(GemmQuantRefusals, Fp8SelectNamesFieldAndValue) {
  test_gemm::expect_select_rows<Fp8GemmPlan>(fp8_desc(64, 32, 128), std::vector<test_gemm::SelectRefusalRow<Fp8GemmDescriptor>>{
      {[](auto&) {}, "sm_89+", 80, Code::kNotSupported},
      {[](auto& t) { t.a.dtype = DType::kI8; }, "a.dtype = i8"},
      {[](auto& t) { t.b.dtype = DType::kBF16; }, "b.dtype = bf16: Fp8GemmPlan takes e4m3 or e5m2"},
      {[](auto& t) { t.b = qmat(DType::kE4M3, 64, 32, C); }, "b.rows = 64 differs from a.cols = 128 (K)"},
      {[](auto& t) { t.d = qmat(DType::kBF16, 64, 48, R); }, "d is 64 x 48, needs 64 x 32 (a.rows x b.cols)"},
      {[](auto& t) { t.a.dtype = t.b.dtype = DType::kE5M2; }, "e5m2 x e5m2"},
      {[](auto& t) { t.d.dtype = DType::kE5M2; }, "d.dtype = e5m2"},
      {[](auto& t) { t.a = qmat(DType::kE4M3, 64, 128, C); }, "a.order = column-major"},
      {[](auto& t) { t.b = qmat(DType::kE4M3, 128, 32, R); }, "b.order = row-major"},
      {[](auto& t) { t = fp8_desc(64, 32, 136); }, "a.ld = 136 is not a multiple of 16"},
      {[](auto& t) { t = fp8_desc(64, 32, 8); t.a.ld = t.b.ld = 16; }, "K = 8 is not a multiple of 16"},
      {[](auto& t) { t = fp8_desc(64, 24, 128); }, "d.cols = N = 24 is not a multiple of 16"},
      {[](auto& t) { t.d = qmat(DType::kBF16, 24, 32, C); t.a = qmat(DType::kE4M3, 24, 128, R); }, "d.rows = M = 24"},
      {[](auto& t) { t.d.ld = 36; }, "d.ld = 36"},
      {[](auto& t) { t.a.alignment = 8; }, "a.alignment = 8"},
      {[](auto& t) { t.bias = true; t.d = qmat(DType::kBF16, 64, 32, C); }, "bias = true with d column-major"},
      {[](auto& t) { t.amax = true; }, "amax = true with d.dtype = bf16"},
      {[](auto& t) { t.scale_a = QuantScale::kBlock1x128; }, "scale_a = block1x128, scale_b = per_tensor"},
      {[](auto& t) { t.scale_b = QuantScale::kPerColumn; }, "scale_b = per_column"},
      {[](auto& t) { t = fp8_desc(64, 32, 128); t.scale_a = QuantScale::kBlock1x128; t.scale_b = QuantScale::kBlock128x128; }, "sm_90 (Hopper) only", 89, Code::kNotSupported},
      {[](auto& t) { t = fp8_desc(64, 32, 144); t.scale_a = QuantScale::kBlock1x128; t.scale_b = QuantScale::kBlock128x128; }, "K = 144 is not a multiple of 128"},
      {[](auto& t) { t = fp8_desc(6, 32, 128); t.scale_a = QuantScale::kBlock1x128; t.scale_b = QuantScale::kBlock128x128; }, "M = 6 is not a multiple of 4"},
  });
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
  const Code bad = Code::kInvalidArgument;
  test_gemm::expect_arg_refusals<IntGemmArgs>(
      [&](const IntGemmArgs& a) { return gemm::check_int_gemm_args(d, a); }, ok,
      {
          {[](IntGemmArgs& a) { a.d = nullptr; }, bad, "args.d is null"},
          {[](IntGemmArgs& a) { a.scale_a = nullptr; }, bad, "args.scale_a is null"},
          {[](IntGemmArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
          {[&](IntGemmArgs& a) { a.a = base + 1; }, Code::kMisaligned, "args.a"},
          {[&](IntGemmArgs& a) { a.d = base + 64; }, bad, "args.d overlaps args.a"},
          {[](IntGemmArgs& a) { a.d = const_cast<float*>(a.scale_a); }, bad, "args.d overlaps args.scale_a"},
      });

  auto f = fp8_desc(64, 32, 128, DType::kE4M3);
  f.amax = true;
  Fp8GemmArgs fok{.a = base, .b = base + 65536, .d = base + 131072, .scale_a = reinterpret_cast<const float*>(base + 262144),
                  .scale_b = reinterpret_cast<const float*>(base + 262400),
                  .scale_d = reinterpret_cast<const float*>(base + 262656), .amax = reinterpret_cast<float*>(base + 262912)};
  test_gemm::expect_arg_refusals<Fp8GemmArgs>(
      [&](const Fp8GemmArgs& a) { return gemm::check_fp8_gemm_args(f, a); }, fok,
      {
          {[](Fp8GemmArgs& a) { a.scale_d = nullptr; }, bad, "args.scale_d is null"},
          {[](Fp8GemmArgs& a) { a.amax = nullptr; }, bad, "args.amax is null"},
          {[](Fp8GemmArgs& a) { a.scale_b = nullptr; }, bad, "args.scale_b is null"},
          {[&](Fp8GemmArgs& a) { a.b = base + 65536 + 8; }, Code::kMisaligned, "args.b"},
          {[&](Fp8GemmArgs& a) { a.amax = reinterpret_cast<float*>(base + 131072 + 4); }, bad, "args.d overlaps args.amax"},
          {[](Fp8GemmArgs& a) { a.amax = const_cast<float*>(a.scale_a); }, bad, "args.amax overlaps args.scale_a"},
      });
}

}  // namespace
}  // namespace baracuda
