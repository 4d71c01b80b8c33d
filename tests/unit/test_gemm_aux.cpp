// The GEMM epilogues around an activation's auxiliary tensor, on the CPU: the forward's aux
// output (relu bit mask, gelu pre-activation) and the activation backward (DRELU, DGELU,
// their BGRAD forms, and the composite cublaslt_dact SKU for the rest). The oracle on known
// values and against finite differences of its own forward, the cuBLASLt epilogue mapping,
// the SKUs select picks from caps alone, select refusals naming field and value, and the
// run-time argument checks on fake pointers. Filter: --gtest_filter='GemmAux*'.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gemm.hpp"
#include "gemm/bias_grad.hpp"
#include "gemm/lt_gemm.hpp"
#include "gemm_descriptors.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;
using test_gemm::mat;
using test_gemm::plain;
constexpr auto R = MatrixOrder::kRowMajor;
constexpr auto C = MatrixOrder::kColMajor;

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

// dX_pre = (dY W) .* act'(X_pre) for M x N2 dY, N2 x H W: M = 64, H = 48, N2 = 32; aux is
// relu's bit mask (ld 128 bits) or the pre-activation in t.
GemmDescriptor backward(DType t, GemmActivation act, bool bgrad, MatrixOrder od = R) {
  auto d = plain(t, 64, 48, 32);
  d.d = mat(t, 64, 48, od);
  d.epilogue = GemmEpilogue::activation_backward(act, bgrad);
  const bool relu = act == GemmActivation::kRelu;
  d.aux = mat(relu ? DType::kBit : t, 64, 48, od, relu ? 128 : (od == R ? 48 : 64));
  if (bgrad) d.bias_grad = TensorLayout::contiguous(t, {48});
  return d;
}

// ------------------------------------------------------------------------ reference
TEST(GemmAuxReference, ReluMaskSelectsAndBiasGradSumsColumns) {
  auto d = plain(DType::kF32, 2, 2, 3);
  d.epilogue = GemmEpilogue::activation_backward(GemmActivation::kRelu, true);
  d.aux = mat(DType::kBit, 2, 2, R, 128);
  d.bias_grad = TensorLayout::contiguous(DType::kF32, {2});
  HostTensor a(d.a.as_tensor()), b(d.b.as_tensor()), aux(d.aux.as_tensor());
  const double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {1, 0, 0, 1, 1, 1};
  for (int i = 0; i < 6; ++i) a.set(i, av[i]), b.set(i, bv[i]);
  // A B = [[4, 5], [10, 11]]; mask bits (0,0) and (1,1): bit 0 and bit 128 + 1
  auto* bytes = static_cast<unsigned char*>(aux.data());
  bytes[0] = 0x01;
  bytes[16] = 0x02;
  auto o = reference::gemm(d, a, b, nullptr, nullptr, 1.0, 0.0, false, &aux);
  ASSERT_TRUE(o.has_value()) << o.error().to_string();
  EXPECT_EQ(o->d, (std::vector<double>{4, 0, 0, 11}));
  EXPECT_EQ(o->bias_grad, (std::vector<double>{4, 11}));
  // aux missing: refused
  EXPECT_FALSE(reference::gemm(d, a, b, nullptr, nullptr, 1.0, 0.0, false).has_value());
}

// act'(x) of the backward oracle against central differences of the forward oracle's act.
TEST(GemmAuxReference, ActivationGradientsMatchFiniteDifferences) {
  for (GemmActivation act : {GemmActivation::kGeluTanh, GemmActivation::kGeluErf, GemmActivation::kSilu}) {
    for (double x : {-4.0, -1.5, -0.3, 0.0, 0.7, 2.0, 5.0}) {
      auto fwd = plain(DType::kF64, 1, 1, 1);
      fwd.epilogue.activation = act;
      HostTensor one(fwd.a.as_tensor()), xb(fwd.b.as_tensor());
      one.set(0, 1.0);
      const double h = 1e-5;
      xb.set(0, x + h);
      const double up = reference::gemm(fwd, one, xb, nullptr, nullptr, 1.0, 0.0, false)->d[0];
      xb.set(0, x - h);
      const double down = reference::gemm(fwd, one, xb, nullptr, nullptr, 1.0, 0.0, false)->d[0];
      auto bwd = plain(DType::kF64, 1, 1, 1);
      bwd.epilogue = GemmEpilogue::activation_backward(act, false);
      bwd.aux = mat(DType::kF64, 1, 1);
      HostTensor aux(bwd.aux.as_tensor()), g(bwd.b.as_tensor());
      aux.set(0, x);
      g.set(0, 3.0);  // upstream gradient 3: D = 3 act'(x)
      auto o = reference::gemm(bwd, one, g, nullptr, nullptr, 1.0, 0.0, false, &aux);
      ASSERT_TRUE(o.has_value());
      EXPECT_NEAR(o->d[0], 3.0 * (up - down) / (2 * h), 1e-8) << gemm_activation_name(act) << " at " << x;
      EXPECT_GT(o->d_bound[0], 0.0);
    }
  }
}

// ------------------------------------------------------------------------ select
TEST(GemmAuxSelect, EpilogueNamesAndCublasLtMapping) {
  using A = GemmActivation;
  EXPECT_EQ(GemmEpilogue::activation_backward(A::kRelu, true).to_string(), "drelu+bgrad_d");
  EXPECT_EQ(GemmEpilogue::activation_backward(A::kGeluTanh, false).to_string(), "dgelu_tanh");
  // cublasLtEpilogue_t values: DRELU 136, DRELU_BGRAD 152, DGELU 192, DGELU_BGRAD 208,
  // RELU_AUX_BIAS 134, GELU_AUX_BIAS 164 (cublasLt.h)
  EXPECT_EQ(gemm::lt_problem(backward(DType::kBF16, A::kRelu, false), false).epilogue, 136);
  EXPECT_EQ(gemm::lt_problem(backward(DType::kBF16, A::kRelu, true), false).epilogue, 152);
  EXPECT_EQ(gemm::lt_problem(backward(DType::kBF16, A::kGeluTanh, false), false).epilogue, 192);
  auto dg = gemm::lt_problem(backward(DType::kBF16, A::kGeluTanh, true), false);
  EXPECT_EQ(dg.epilogue, 208);
  EXPECT_TRUE(dg.aux);
  EXPECT_TRUE(dg.bias_out);
  EXPECT_EQ(dg.aux_ld, 48);
  auto fwd = plain(DType::kBF16, 64, 48, 32);
  fwd.epilogue = {A::kGeluTanh, true, true, GemmBiasGrad::kNone};
  EXPECT_EQ(gemm::lt_problem(fwd, false).epilogue, 164);
  fwd.epilogue.activation = A::kRelu;
  EXPECT_EQ(gemm::lt_problem(fwd, false).epilogue, 134);
  // the forward gelu aux and the backward differ in hash and equality
  auto bw = backward(DType::kBF16, A::kGeluTanh, false);
  auto fw = bw;
  fw.epilogue.activation_grad = false;
  EXPECT_NE(bw.hash(), fw.hash());
  EXPECT_FALSE(bw == fw);
}

TEST(GemmAuxSelect, SkusPerActivationLayoutAndDtype) {
  using A = GemmActivation;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (bool bgrad : {false, true}) {
      // fused DRELU / DGELU with row-major D; with the bias gradient the fused epilogue is
      // deferred (measured slower) behind the composite with the column reduction
      for (A act : {A::kRelu, A::kGeluTanh}) {
        auto p = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad));
        ASSERT_TRUE(p.has_value()) << p.error().to_string();
        EXPECT_EQ(p->sku().impl, bgrad ? "cublaslt_dact" : "cublaslt");
        auto reports = GemmPlan::candidates(caps90(), backward(t, act, bgrad));
        ASSERT_TRUE(reports.has_value());
        for (const auto& r : reports.value()) {
          if (r.sku.impl != "cublaslt") continue;
          EXPECT_TRUE(r.rejection.empty()) << r.rejection;
          EXPECT_EQ(r.deferral.empty(), !bgrad) << r.deferral;
        }
        // forced, the fused one still runs it
        PlanPreference fused;
        fused.force_sku = "gemm.fwd.cublaslt[*";
        auto f = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad), fused);
        ASSERT_TRUE(f.has_value()) << f.error().to_string();
        EXPECT_EQ(f->sku().impl, "cublaslt");
        // a workspace cap below the column reduction's partials: the composite would fall
        // back to a kernel per column, so its preparation defers and the fused one runs it
        if (bgrad) {
          PlanPreference tight;
          tight.max_workspace_bytes = 0;
          auto c = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad), tight);
          ASSERT_TRUE(c.has_value()) << c.error().to_string();
          EXPECT_EQ(c->sku().impl, "cublaslt");
          PlanPreference tight_dact = tight;
          tight_dact.force_sku = "gemm.fwd.cublaslt_dact*";
          auto cd = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad), tight_dact);
          ASSERT_TRUE(cd.has_value()) << cd.error().to_string();  // forced: the fallback still runs
          EXPECT_EQ(cd->sku().impl, "cublaslt_dact");
          EXPECT_EQ(cd->workspace_size(), 0u);
        }
        // bias_grad not 16-byte aligned: no column reduction, so nothing is deferred
        auto unaligned = backward(t, act, bgrad);
        unaligned.bias_grad.alignment = 4;
        auto u = GemmPlan::select_for_caps(caps90(), unaligned);
        ASSERT_TRUE(u.has_value()) << u.error().to_string();
        EXPECT_EQ(u->sku().impl, "cublaslt");
        // the composite runs it too when forced
        PlanPreference force;
        force.force_sku = "gemm.fwd.cublaslt_dact*";
        auto q = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad), force);
        ASSERT_TRUE(q.has_value()) << q.error().to_string();
        EXPECT_EQ(q->sku().name(), "gemm.fwd.cublaslt_dact[" + std::string(dtype_name(t)) + ",f32].sm80+");
        EXPECT_EQ(q->sku().backend, Backend::kHand);
      }
      // no cuBLASLt epilogue for gelu_erf / silu: the composite (also under a tight workspace
      // cap, where it defers to nothing)
      for (A act : {A::kGeluErf, A::kSilu}) {
        auto p = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad));
        ASSERT_TRUE(p.has_value()) << p.error().to_string();
        EXPECT_EQ(p->sku().impl, "cublaslt_dact");
        PlanPreference tight;
        tight.max_workspace_bytes = 0;
        auto q = GemmPlan::select_for_caps(caps90(), backward(t, act, bgrad), tight);
        ASSERT_TRUE(q.has_value()) << q.error().to_string();
        EXPECT_EQ(q->sku().impl, "cublaslt_dact");
        auto reports = GemmPlan::candidates(caps90(), backward(t, act, bgrad));
        ASSERT_TRUE(reports.has_value());
        for (const auto& r : reports.value())
          if (r.sku.impl == "cublaslt") EXPECT_NE(r.rejection.find("cublaslt_dact candidates run it"), std::string::npos);
      }
    }
    // column-major D: DRELU fused; with the bias gradient (cuBLASLt would sum the wrong way) the composite
    EXPECT_EQ(GemmPlan::select_for_caps(caps90(), backward(t, A::kRelu, false, C))->sku().impl, "cublaslt");
    auto col = GemmPlan::select_for_caps(caps90(), backward(t, A::kGeluTanh, true, C));
    ASSERT_TRUE(col.has_value()) << col.error().to_string();
    EXPECT_EQ(col->sku().impl, "cublaslt_dact");
  }
  // TF32 composite only for f32 and only when allowed
  PlanPreference tf32;
  tf32.math.allow_tf32 = true;
  tf32.force_sku = "gemm.fwd.cublaslt_tf32_dact*";
  EXPECT_TRUE(GemmPlan::select_for_caps(caps90(), backward(DType::kF32, A::kSilu, true), tf32).has_value());
  auto no = GemmPlan::select_for_caps(caps90(), backward(DType::kBF16, A::kSilu, true), tf32);
  ASSERT_FALSE(no.has_value());
  EXPECT_NE(no.error().message().find("tf32 applies to f32 only"), std::string::npos);
  // batched: per-batch aux and bias gradient strides
  BatchedGemmDescriptor b;
  b.gemm = backward(DType::kBF16, A::kRelu, true);
  b.batch = 3;
  b.stride_a = 64 * 32;
  b.stride_d = 64 * 48;
  b.stride_aux = 64 * 128;
  b.stride_bias = 48;
  auto bp = BatchedGemmPlan::select_for_caps(caps90(), b);
  ASSERT_TRUE(bp.has_value()) << bp.error().to_string();
  b.stride_aux = 64 * 128 + 8;
  auto bad = BatchedGemmPlan::select_for_caps(caps90(), b);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("stride_aux = 8200 is not a multiple of 128"), std::string::npos)
      << bad.error().message();
}

// ------------------------------------------------------------------------ select refusals
TEST(GemmAuxRefusals, SelectNamesFieldAndValue) {
  using D = GemmDescriptor;
  using A = GemmActivation;
  using Row = test_gemm::SelectRefusalRow<D>;
  // backward, gelu_tanh, bf16, with the bias gradient
  test_gemm::expect_select_rows<GemmPlan>(backward(DType::kBF16, A::kGeluTanh, true), std::vector<Row>{
      {[](D& d) { d.aux.dtype = DType::kF32; }, "aux.dtype = f32: gelu_tanh's aux has d's dtype bf16"},
      {[](D& d) { d.aux.ld = 52; }, "aux.ld = 52 is not a multiple of 8 elements"},
      {[](D& d) { d.aux.ld = 40; }, "aux.ld = 40 is below the minimum 48"},
      {[](D& d) { d.aux.alignment = 1; }, "aux.alignment = 1 bytes is below one bf16 element (2 bytes)"},
      {[](D& d) { d.aux.order = C; d.aux.ld = 64; }, "aux.order differs from d.order"},
      {[](D& d) { d.aux.rows = 63; }, "aux is 63 x 48, needs 64 x 48"},
      {[](D& d) { d.epilogue.aux = false; }, "epilogue dgelu_tanh+bgrad_d needs epilogue.aux = true"},
      {[](D& d) { d.epilogue.activation = A::kNone; }, "epilogue.activation_grad = true with activation none"},
      {[](D& d) { d.epilogue.bias = true; d.bias = TensorLayout::contiguous(DType::kBF16, {48}); },
       "epilogue.bias = true with activation_grad"},
      {[](D& d) { d.with_c = true; d.c = d.d; }, "with_c = true with epilogue dgelu_tanh+bgrad_d"},
      {[](D& d) { d.bias_grad = TensorLayout::contiguous(DType::kBF16, {64}); }, "bias_grad = bf16[64] must be [48] (N, sums of D's columns)"},
      {[](D& d) { d.bias_grad.dtype = DType::kF16; }, "bias_grad.dtype = f16 differs from d.dtype = bf16"},
      {[](D& d) { d.epilogue.bias_grad = GemmBiasGrad::kA; d.bias_grad = TensorLayout::contiguous(DType::kBF16, {64}); },
       "epilogue.bias_grad with bias, an activation or aux"},
      {[](D& d) { d.epilogue.activation_grad = false; }, "epilogue.bias_grad = bgrad_d without activation_grad"},
      // f64: neither cuBLASLt's DGELU nor our pass take it
      {[](D& d) {
         d.a.dtype = d.b.dtype = d.d.dtype = d.aux.dtype = d.bias_grad.dtype = DType::kF64;
       },
       "d.dtype = f64 with epilogue dgelu_tanh+bgrad_d"},
  });
  // backward, relu: the bit mask
  test_gemm::expect_select_rows<GemmPlan>(backward(DType::kF16, A::kRelu, false), std::vector<Row>{
      {[](D& d) { d.aux.dtype = DType::kF16; d.aux.ld = 48; }, "aux.dtype = f16: relu's aux is a bit mask (bit)"},
      {[](D& d) { d.aux.ld = 192; }, "aux.ld = 192 is not a multiple of 128 bits"},
      {[](D& d) { d.aux.ld = 0; }, "aux.ld = 0 is below the minimum 48"},
  });
  // forward with aux: relu mask and gelu pre-activation rules
  auto relu_fwd = plain(DType::kBF16, 64, 48, 32);
  relu_fwd.epilogue = {A::kRelu, true, true, GemmBiasGrad::kNone};
  relu_fwd.bias = TensorLayout::contiguous(DType::kBF16, {48});
  relu_fwd.aux = mat(DType::kBit, 64, 48, R, 128);
  test_gemm::expect_select_rows<GemmPlan>(relu_fwd, std::vector<Row>{
      {[](D& d) { d.aux.ld = 64; }, "aux.ld = 64 is not a multiple of 128 bits"},
      {[](D& d) { d.aux.dtype = DType::kBF16; }, "aux.dtype = bf16: relu's aux is a bit mask (bit)"},
      {[](D& d) { d.a.dtype = d.b.dtype = d.d.dtype = d.bias.dtype = DType::kF64; }, "epilogue bias+relu+aux with f64",
       90, Code::kNotSupported},
  });
  auto gelu_fwd = relu_fwd;
  gelu_fwd.epilogue.activation = A::kGeluTanh;
  gelu_fwd.aux = mat(DType::kBF16, 64, 48, R, 56);
  test_gemm::expect_select_rows<GemmPlan>(gelu_fwd, std::vector<Row>{
      {[](D& d) { d.aux.ld = 50; }, "aux.ld = 50 is not a multiple of 8 elements"},
      {[](D& d) { d.aux.dtype = DType::kF16; }, "aux.dtype = f16: gelu_tanh's aux has d's dtype bf16"},
      {[](D& d) { d.epilogue.activation = A::kNone; }, "epilogue.aux = true without an activation"},
  });
}

// ------------------------------------------------------------------------ bias-gradient plan
// plan_bias_grad (gemm/bias_grad.hpp) takes the column reduction exactly when the sums run
// down 16-byte aligned unit-stride runs of whole vectors in one batch; its partials are the
// chunks x columns accumulators (f32; f64 for f64) rounded to the workspace alignment.
TEST(GemmBiasGradPlan, ColumnStreamOnlyForAlignedUnitStrideRuns) {
  gemm::BiasGradParams rows;  // bgrad_d of a row-major D [4096, 4096], ld 4096
  rows.x_count = 4096;
  rows.y_count = 4096;
  rows.sx = 1;
  rows.sy = 4096;
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32, DType::kF64}) {
    const auto p = gemm::plan_bias_grad(t, rows, 16, 16, caps90());
    ASSERT_TRUE(p.column_stream) << dtype_name(t);
    EXPECT_EQ(p.column.rows, 4096);
    EXPECT_EQ(p.column.cols, 4096);
    EXPECT_EQ(p.column.row_stride[0], 4096);
    EXPECT_GE(p.column.chunks * p.column.chunk_len, p.column.rows) << "every row in a chunk";
    EXPECT_LT((p.column.chunks - 1) * p.column.chunk_len, p.column.rows) << "no empty chunk";
    EXPECT_GT(p.column.chunks, 1) << "the rows are spread over the device";
    const std::size_t acc = t == DType::kF64 ? 8 : 4;
    EXPECT_GE(p.workspace, static_cast<std::size_t>(p.column.chunks * p.column.cols) * acc);
    EXPECT_LT(p.workspace, static_cast<std::size_t>(p.column.chunks * p.column.cols) * acc + kWorkspaceAlignment);
    EXPECT_EQ(p.workspace % kWorkspaceAlignment, 0u);
  }
  struct Case {
    const char* why;
    void (*edit)(gemm::BiasGradParams&, int&, int&);
  };
  const Case kernel_cases[] = {
      {"two batches", [](gemm::BiasGradParams& p, int&, int&) { p.batch = 2; }},
      {"column-major D (sums along the unit stride)", [](gemm::BiasGradParams& p, int&, int&) { std::swap(p.sx, p.sy); }},
      {"strided output", [](gemm::BiasGradParams& p, int&, int&) { p.out_stride = 2; }},
      {"columns not whole vectors", [](gemm::BiasGradParams& p, int&, int&) { p.x_count = 4092; }},
      {"rows not 16 bytes apart", [](gemm::BiasGradParams& p, int&, int&) { p.sy = 4100; }},
      {"operand 8-byte aligned", [](gemm::BiasGradParams&, int& in, int&) { in = 8; }},
      {"bias_grad 4-byte aligned", [](gemm::BiasGradParams&, int&, int& out) { out = 4; }},
      {"no rows", [](gemm::BiasGradParams& p, int&, int&) { p.y_count = 0; }},
  };
  for (const Case& c : kernel_cases) {
    gemm::BiasGradParams p = rows;
    int in = 16, out = 16;
    c.edit(p, in, out);
    const auto plan = gemm::plan_bias_grad(DType::kBF16, p, in, out, caps90());
    EXPECT_FALSE(plan.column_stream) << c.why;
    EXPECT_EQ(plan.workspace, 0u) << c.why;
    EXPECT_EQ(plan.shape.sy, p.sy) << c.why;
  }
}

// ------------------------------------------------------------------------ run-time arg checks
TEST(GemmAuxRefusals, RunArgChecks) {
  BatchedGemmDescriptor b;
  b.gemm = backward(DType::kBF16, GemmActivation::kGeluTanh, true);
  alignas(256) static unsigned char pool[1 << 20];
  unsigned char* base = pool;
  GemmArgs ok{.a = base, .b = base + 0x10000, .d = base + 0x30000, .bias_grad = base + 0x40000, .aux = base + 0x50000};
  auto check = [&](const GemmArgs& a) { return gemm::check_gemm_args(b, a); };
  const Code bad = Code::kInvalidArgument;
  test_gemm::expect_arg_refusals<GemmArgs>(
      check, ok,
      {
          {[](GemmArgs& a) { a.aux = nullptr; }, bad, "args.aux is null"},
          {[](GemmArgs& a) { a.bias_grad = nullptr; }, bad, "args.bias_grad is null"},
          {[&](GemmArgs& a) { a.aux = base + 0x50001; }, Code::kMisaligned, "is not aligned to aux.alignment = 16 bytes"},
          {[&](GemmArgs& a) { a.aux = a.d; }, bad, "args.d overlaps args.aux"},  // aux is an input here
          {[&](GemmArgs& a) { a.bias_grad = base + 0x50000; }, bad, "args.bias_grad overlaps args.aux"},
          {[](GemmArgs& a) { a.alpha = 2.0; }, bad, "args.alpha = 2.000000 with epilogue dgelu_tanh+bgrad_d"},
      });
  // without the bias gradient, alpha scales the product
  b.gemm = backward(DType::kBF16, GemmActivation::kRelu, false);
  GemmArgs scaled{.a = base, .b = base + 0x10000, .d = base + 0x30000, .aux = base + 0x50000, .alpha = 2.0};
  EXPECT_TRUE(gemm::check_gemm_args(b, scaled).is_ok());
}

}  // namespace
}  // namespace baracuda
