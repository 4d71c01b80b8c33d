// GPU tests of GemmPlan / BatchedGemmPlan against reference::gemm (bounds in docs/gemm.md):
// every dtype (f64, f32, f16, bf16; f32 also under the TF32 SKU), the layouts RRR, RCR, CRR,
// CCR and column-major D, square / skinny (M = 1..16) / odd-prime / large (2048) / empty
// shapes, ld-padded operands, C with beta (and in place, C == D), every cuBLASLt epilogue
// (bias, relu, gelu_tanh, their combinations, the aux outputs, the bias gradients), strided
// batches with broadcast (stride 0) operands; every SKU forced, outputs poisoned, guard bytes
// around them and the ld padding of D checked untouched; the run-time refusals (null,
// misaligned, aliasing, workspace) with outputs untouched. Filter: --gtest_filter='*Gemm*'.
// The aux / activation-backward tests (GemmAuxGpu.*, GemmAuxRefusals.*): '*GemmAux*'.
// Run-time refusal tables: GemmRefusals.RunTable / BatchedRunTable, GemmBackwardRefusals.RunTable,
// GemmAuxRefusals.BackwardRunTable ('*Refusals.*RunTable').
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <cuda_runtime_api.h>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "baracuda/reference/gemm.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;
constexpr auto R = MatrixOrder::kRowMajor;
constexpr auto C = MatrixOrder::kColMajor;

MatrixLayout mat(DType t, std::int64_t r, std::int64_t c, MatrixOrder o, std::int64_t pad = 0) {
  return MatrixLayout{t, r, c, (o == R ? c : r) + pad, o, 16};
}

// One GEMM test problem.
struct GemmCase {
  std::string name;
  BatchedGemmDescriptor desc;
  double alpha = 1.0, beta = 0.0;
  bool in_place = false;  // c == d
};

const char* order_name(MatrixOrder o) { return o == R ? "R" : "C"; }

GemmCase make_case(DType t, std::int64_t m, std::int64_t n, std::int64_t k, MatrixOrder oa, MatrixOrder ob, MatrixOrder od,
                   std::int64_t pad = 0, bool with_c = false) {
  GemmCase c;
  c.name = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + order_name(oa) + order_name(ob) +
           order_name(od) + (pad ? " pad" + std::to_string(pad) : "") + (with_c ? " +C" : "");
  GemmDescriptor& g = c.desc.gemm;
  g.a = mat(t, m, k, oa, pad);
  g.b = mat(t, k, n, ob, pad);
  g.d = mat(t, m, n, od, pad);
  if (with_c) {
    g.with_c = true;
    g.c = mat(t, m, n, od, pad ? pad + 1 : 0);
    c.alpha = 0.75;
    c.beta = -0.5;
  }
  return c;
}

void set_epilogue(GemmCase& c, GemmEpilogue e) {
  GemmDescriptor& g = c.desc.gemm;
  const DType t = g.d.dtype;
  g.epilogue = e;
  c.name += " epi=" + e.to_string();
  if (e.bias) g.bias = TensorLayout::contiguous(t, {g.n()});
  if (e.bias_grad != GemmBiasGrad::kNone) {
    g.bias_grad = TensorLayout::contiguous(t, {e.bias_grad == GemmBiasGrad::kA ? g.m() : g.n()});
    c.alpha = 1.0;  // run() refuses alpha != 1 with a bias gradient
  }
  if (e.activation_grad) g.with_c = false;  // the activation backward takes no C
  if (e.aux) {
    const bool relu = e.activation == GemmActivation::kRelu;
    const std::int64_t inner = g.d.order == R ? g.n() : g.m();
    const std::int64_t mult = relu ? 128 : 8;
    g.aux = MatrixLayout{relu ? DType::kBit : t, g.m(), g.n(), (inner + mult - 1) / mult * mult, g.d.order, 16};
  }
}

bool is_tf32(const std::string& sku) { return sku.find("tf32") != std::string::npos; }

// Runs one case under every SKU that accepts it (TF32 allowed so that SKU is forced too)
// and checks every output. Returns the SKUs run; `tally` (optional) counts the runs per SKU impl.
int run_case(const GemmCase& c, bool batched, std::map<std::string, int>* tally = nullptr) {
  const BatchedGemmDescriptor& bd = c.desc;
  const GemmDescriptor& g = bd.gemm;
  const GemmEpilogue& e = g.epilogue;
  SCOPED_TRACE(c.name + " " + bd.to_string());
  const std::int64_t P = bd.batch;
  HostTensor ha(reference::batched_layout(g.a, P, bd.stride_a)), hb(reference::batched_layout(g.b, P, bd.stride_b));
  HostTensor hc(reference::batched_layout(g.with_c ? g.c : g.d, P, g.with_c ? bd.stride_c : bd.stride_d));
  HostTensor hd(reference::batched_layout(g.d, P, bd.stride_d));
  HostTensor hbias(reference::batched_layout(e.bias ? g.bias : TensorLayout::contiguous(g.d.dtype, {1}), P, bd.stride_bias));
  HostTensor hbg(reference::batched_layout(e.bias_grad != GemmBiasGrad::kNone ? g.bias_grad : TensorLayout::contiguous(g.d.dtype, {1}),
                                           P, bd.stride_bias));
  HostTensor haux(reference::batched_layout(e.aux ? g.aux : MatrixLayout{g.d.dtype, 1, 1, 1, R, 16}, P, bd.stride_aux));
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  fill_random(hc, -1, 1);
  fill_random(hbias, -1, 1);
  // the activation backward reads aux: random mask bits, or pre-activations in [-3, 3]
  // (gelu's and silu's derivatives vary most there)
  if (e.activation_grad && e.activation == GemmActivation::kRelu) {
    for (std::size_t i = 0; i < haux.storage_bytes(); ++i) haux.storage()[i] = static_cast<std::byte>(rng()() & 0xFF);
  } else if (e.activation_grad) {
    fill_random(haux, -3, 3);
  }
  const HostTensor aux_in = haux;
  const Stream& s = test_stream();
  DeviceTensor da(ha, s), db(hb, s), dc(hc, s), dd(hd, s), dbias(hbias, s), dbg(hbg, s), daux(haux, s);
  int ran = 0;
  PlanPreference all;
  all.math.allow_tf32 = true;
  auto reports = batched ? BatchedGemmPlan::candidates(test_caps(), bd, all)
                         : GemmPlan::candidates(test_caps(), g, all);
  EXPECT_TRUE(reports.has_value()) << (reports ? "" : reports.error().to_string());
  if (!reports) return 0;
  for (const auto& r : reports.value()) {
    if (!r.rejection.empty()) continue;
    SCOPED_TRACE(r.sku.name());
    PlanPreference pref = all;
    pref.force_sku = r.sku.name();
    // cuBLASLt's fused BGRADA / BGRADB find no algorithm for many layouts: the fused SKU may
    // decline at select (the bgrad_reduce SKU then covers the case); nothing else may.
    // Likewise DRELU / DGELU (+ BGRAD): the cublaslt_dact SKU then covers the case.
    const auto fused_bias_grad_declined = [&](const Status& err) {
      const bool fallback = r.sku.name().find("bgrad_reduce") != std::string::npos || r.sku.name().find("dact") != std::string::npos;
      return (e.bias_grad != GemmBiasGrad::kNone || e.activation_grad) && !fallback && err.code() == Code::kNotSupported &&
             err.message().find("found no algorithm") != std::string::npos;
    };
    GemmArgs args{.a = da.data(), .b = db.data(), .c = g.with_c ? dc.data() : nullptr, .d = dd.data(),
                  .bias = e.bias ? dbias.data() : nullptr, .bias_grad = e.bias_grad != GemmBiasGrad::kNone ? dbg.data() : nullptr,
                  .aux = e.aux ? daux.data() : nullptr, .alpha = c.alpha, .beta = c.beta};
    if (c.in_place) {
      dd.upload(hc, s);  // C's values in D's buffer
      args.c = dd.data();
    } else {
      dd.poison(0xFF, s);
    }
    if (!e.activation_grad) daux.poison(0xFF, s);  // an output, except for the backward
    dbg.poison(0xFF, s);
    Status st;
    std::size_t ws_bytes = 0;
    if (batched) {
      auto plan = BatchedGemmPlan::select(s, bd, pref);
      if (!plan) {
        if (!fused_bias_grad_declined(plan.error())) ADD_FAILURE() << plan.error().to_string();
        continue;
      }
      ws_bytes = plan->workspace_size();
      st = plan->run(s, test_workspace(ws_bytes), args);
    } else {
      auto plan = GemmPlan::select(s, g, pref);
      if (!plan) {
        if (!fused_bias_grad_declined(plan.error())) ADD_FAILURE() << plan.error().to_string();
        continue;
      }
      ws_bytes = plan->workspace_size();
      st = plan->run(s, test_workspace(ws_bytes), args);
    }
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    if (!st) continue;
    auto oracle = reference::batched_gemm(bd, ha, hb, g.with_c ? &hc : nullptr, e.bias ? &hbias : nullptr, c.alpha, c.beta,
                                          is_tf32(r.sku.name()), e.activation_grad ? &aux_in : nullptr);
    EXPECT_TRUE(oracle.has_value());
    if (!oracle) continue;
    EXPECT_TRUE(dd.download(hd, s)) << "guard bytes around d";
    auto cmp = reference::compare_gemm_d(hd, *oracle);
    EXPECT_TRUE(cmp.ok) << cmp.detail << " (workspace " << ws_bytes << ")";
    if (!c.in_place) EXPECT_TRUE(quant_padding_untouched(hd, 0xFF));
    if (e.activation_grad) {  // an input: read, never written
      EXPECT_TRUE(daux.download(haux, s)) << "guard bytes around aux";
      EXPECT_EQ(std::memcmp(haux.storage(), aux_in.storage(), aux_in.storage_bytes()), 0) << "aux (an input) was written";
    } else if (e.aux) {
      EXPECT_TRUE(daux.download(haux, s)) << "guard bytes around aux";
      auto ca = e.activation == GemmActivation::kRelu
                    ? reference::compare_gemm_relu_mask(haux, *oracle, g.aux.ld, bd.stride_aux, g.aux.order == R)
                    : reference::compare_gemm_aux_pre(haux, *oracle);
      EXPECT_TRUE(ca.ok) << "aux: " << ca.detail;
    }
    if (e.bias_grad != GemmBiasGrad::kNone) {
      EXPECT_TRUE(dbg.download(hbg, s)) << "guard bytes around bias_grad";
      auto cb = reference::compare_gemm_bias_grad(hbg, *oracle);
      EXPECT_TRUE(cb.ok) << "bias_grad: " << cb.detail;
    }
    ++ran;
    if (tally) ++(*tally)[r.sku.impl];
  }
  EXPECT_GT(ran, 0) << "no SKU accepts the case";
  return ran;
}

class GemmGpu : public ::testing::TestWithParam<DType> {};

const MatrixOrder kLayouts[4][2] = {{R, R}, {R, C}, {C, R}, {C, C}};  // orders of A, B (D row-major)

TEST_P(GemmGpu, ShapesAndLayouts) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  struct Shape {
    std::int64_t m, n, k;
  };
  std::vector<Shape> shapes = {{64, 64, 64}, {256, 256, 256}, {127, 131, 257}, {1, 257, 129}, {2, 64, 4096},
                               {3, 31, 17},  {5, 1000, 300},  {8, 129, 64},    {16, 4096, 256}, {13, 1, 7}, {1, 1, 1}};
  int runs = 0;
  for (const auto& sh : shapes)
    for (const auto& lo : kLayouts)
      for (bool with_c : {false, true}) runs += run_case(make_case(t, sh.m, sh.n, sh.k, lo[0], lo[1], R, 0, with_c), false);
  // column-major D
  runs += run_case(make_case(t, 127, 131, 257, R, C, C, 0, true), false);
  runs += run_case(make_case(t, 16, 300, 64, C, C, C), false);
  // M or N = 0: accepted, nothing written
  runs += run_case(make_case(t, 0, 64, 64, R, R, R), false);
  RecordProperty("skus_run", runs);
}

TEST_P(GemmGpu, Large) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  run_case(make_case(t, 2048, 2048, 2048, R, R, R), false);
  run_case(make_case(t, 2048, 1024, 2048, R, C, R, 0, true), false);
}

TEST_P(GemmGpu, LdPadded) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& lo : kLayouts)
    for (std::int64_t pad : {1, 8, 13}) {
      run_case(make_case(t, 67, 45, 91, lo[0], lo[1], R, pad, true), false);
      run_case(make_case(t, 4, 45, 91, lo[0], lo[1], R, pad), false);
    }
  run_case(make_case(t, 67, 45, 91, C, R, C, 8, true), false);
}

TEST_P(GemmGpu, InPlaceC) {
  BARACUDA_REQUIRE_GPU();
  auto c = make_case(GetParam(), 96, 80, 64, R, C, R, 0, true);
  c.desc.gemm.c = c.desc.gemm.d;
  c.in_place = true;
  run_case(c, false);
}

std::vector<GemmEpilogue> all_epilogues() {
  using A = GemmActivation;
  return {
      {A::kRelu, false, false, GemmBiasGrad::kNone},     {A::kGeluTanh, false, false, GemmBiasGrad::kNone},
      {A::kNone, true, false, GemmBiasGrad::kNone},      {A::kRelu, true, false, GemmBiasGrad::kNone},
      {A::kGeluTanh, true, false, GemmBiasGrad::kNone},  {A::kRelu, false, true, GemmBiasGrad::kNone},
      {A::kRelu, true, true, GemmBiasGrad::kNone},       {A::kGeluTanh, false, true, GemmBiasGrad::kNone},
      {A::kGeluTanh, true, true, GemmBiasGrad::kNone},   {A::kNone, false, false, GemmBiasGrad::kA},
      {A::kNone, false, false, GemmBiasGrad::kB},
      // composites (cublaslt_act): cuBLASLt (+ bias) then our activation pass
      {A::kGeluErf, false, false, GemmBiasGrad::kNone},  {A::kGeluErf, true, false, GemmBiasGrad::kNone},
      {A::kGeluErf, false, true, GemmBiasGrad::kNone},   {A::kGeluErf, true, true, GemmBiasGrad::kNone},
      {A::kSilu, false, false, GemmBiasGrad::kNone},     {A::kSilu, true, false, GemmBiasGrad::kNone},
      {A::kSilu, false, true, GemmBiasGrad::kNone},      {A::kSilu, true, true, GemmBiasGrad::kNone},
  };
}

TEST_P(GemmGpu, Epilogues) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& e : all_epilogues()) {
    // cuBLASLt has no f64 epilogues: refused at select with the reason (the bias gradient
    // runs through the cublaslt_bgrad_reduce SKU instead).
    if (t == DType::kF64 && e.bias_grad == GemmBiasGrad::kNone) {
      auto c = make_case(t, 64, 64, 64, R, R, R);
      set_epilogue(c, e);
      auto p = GemmPlan::select(test_stream(), c.desc.gemm);
      ASSERT_FALSE(p.has_value());
      EXPECT_EQ(p.error().code(), Code::kNotSupported);
      EXPECT_NE(p.error().message().find("with f64"), std::string::npos) << p.error().message();
      continue;
    }
    for (const auto& lo : kLayouts) {
      for (bool with_c : {false, true}) {
        auto c = make_case(t, 127, 131, 257, lo[0], lo[1], R, 0, with_c);
        set_epilogue(c, e);
        run_case(c, false);
      }
      auto skinny = make_case(t, 7, 264, 96, lo[0], lo[1], R);
      set_epilogue(skinny, e);
      run_case(skinny, false);
    }
  }
}

TEST_P(GemmGpu, Batched) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& lo : kLayouts) {
    for (int bcast = 0; bcast < 3; ++bcast) {  // none, A broadcast, B broadcast
      auto c = make_case(t, 37, 53, 71, lo[0], lo[1], R, 3, true);
      BatchedGemmDescriptor& b = c.desc;
      b.batch = 5;
      const auto span = [](const MatrixLayout& m) { return m.as_tensor().element_span().end_offset; };
      b.stride_a = bcast == 1 ? 0 : span(b.gemm.a) + 5;
      b.stride_b = bcast == 2 ? 0 : span(b.gemm.b) + 7;
      b.stride_c = span(b.gemm.c) + 1;
      b.stride_d = span(b.gemm.d) + 2;
      c.name += " batch=5 bcast=" + std::to_string(bcast);
      run_case(c, true);
    }
  }
  for (const auto& e : all_epilogues()) {
    if (t == DType::kF64 && e.bias_grad == GemmBiasGrad::kNone) continue;  // no f64 epilogues but the bias gradient
    auto c = make_case(t, 33, 72, 40, R, C, R);
    set_epilogue(c, e);
    BatchedGemmDescriptor& b = c.desc;
    b.batch = 3;
    b.stride_a = 33 * 40;
    b.stride_b = 0;
    b.stride_d = 33 * 72 + 8;
    b.stride_bias = e.bias_grad == GemmBiasGrad::kA ? 40 : (e.bias_grad == GemmBiasGrad::kB ? 80 : 72);
    if (e.aux) {  // the next multiple of cuBLASLt's unit past one aux matrix
      const std::int64_t unit = e.activation == GemmActivation::kRelu ? 128 : 8;
      b.stride_aux = (b.gemm.aux.as_tensor().element_span().end_offset / unit + 1) * unit;
    }
    run_case(c, true);
  }
}

// The composite activations (gelu_erf, silu; SKU cublaslt_act) beyond Epilogues: column-major
// D (the pass runs along M), odd extents and padded lds (the scalar path of the pass), an aux
// ld that is no multiple of 8, and batched with per-batch aux.
TEST_P(GemmGpu, CompositeActivations) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  if (t == DType::kF64) GTEST_SKIP() << "f64 has no epilogues (refusal checked in GemmGpu.Epilogues)";
  for (GemmActivation act : {GemmActivation::kGeluErf, GemmActivation::kSilu}) {
    for (const auto& lo : kLayouts) {
      auto col = make_case(t, 129, 67, 45, lo[0], lo[1], C, 0, true);
      set_epilogue(col, {act, false, true, GemmBiasGrad::kNone});
      col.desc.gemm.aux.ld = 131;  // odd: scalar path
      run_case(col, false);
      auto padded = make_case(t, 65, 96, 33, lo[0], lo[1], R, 3);
      set_epilogue(padded, {act, true, true, GemmBiasGrad::kNone});
      run_case(padded, false);
    }
    auto vec = make_case(t, 1, 4096, 64, R, C, R);  // M = 1, vector path
    set_epilogue(vec, {act, true, false, GemmBiasGrad::kNone});
    run_case(vec, false);
    auto empty = make_case(t, 0, 64, 64, R, C, R);
    set_epilogue(empty, {act, true, true, GemmBiasGrad::kNone});
    run_case(empty, false);
    auto c = make_case(t, 17, 40, 24, R, R, R);
    set_epilogue(c, {act, true, true, GemmBiasGrad::kNone});
    BatchedGemmDescriptor& b = c.desc;
    b.batch = 4;
    b.stride_a = 17 * 24 + 3;
    b.stride_b = 24 * 40;
    b.stride_d = 17 * 40 + 5;
    b.stride_bias = 40;
    b.stride_aux = 17 * 40 + 1;
    run_case(c, true);
  }
}

// ------------------------------------------------------------------------ backward
// GemmBackwardPlan over layouts of the forward operands and gradients, with the bias
// gradient, and alpha != 1 without it; outputs poisoned, guard bytes checked.
TEST_P(GemmGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  struct Shape {
    std::int64_t m, n, k;
  };
  for (const Shape sh : {Shape{64, 96, 128}, Shape{127, 131, 257}, Shape{3, 512, 64}})
    for (const auto& lo : kLayouts)
      for (bool bias : {false, true}) {
        GemmBackwardDescriptor d;
        d.a = mat(t, sh.m, sh.k, lo[0]);
        d.b = mat(t, sh.k, sh.n, lo[1], 3);
        d.grad_d = mat(t, sh.m, sh.n, R, 5);
        d.grad_a = mat(t, sh.m, sh.k, R);
        d.grad_b = mat(t, sh.k, sh.n, lo[1]);
        d.compute_grad_bias = bias;
        if (bias) d.grad_bias = TensorLayout::contiguous(t, {sh.n});
        const double alpha = bias ? 1.0 : 1.5;
        SCOPED_TRACE(d.to_string());
        auto one = [](const TensorLayout& l) { return reference::batched_layout(l, 1, 0); };
        HostTensor ha(one(d.a.as_tensor())), hb(one(d.b.as_tensor())), hg(one(d.grad_d.as_tensor()));
        HostTensor hga(one(d.grad_a.as_tensor())), hgb(one(d.grad_b.as_tensor()));
        HostTensor hgbias(one(bias ? d.grad_bias : TensorLayout::contiguous(t, {1})));
        fill_random(ha, -1, 1);
        fill_random(hb, -1, 1);
        fill_random(hg, -1, 1);
        const Stream& s = test_stream();
        DeviceTensor da(ha, s), db(hb, s), dg(hg, s), dga(hga, s), dgb(hgb, s), dgbias(hgbias, s);
        dga.poison(0xFF, s);
        dgb.poison(0xFF, s);
        dgbias.poison(0xFF, s);
        auto plan = GemmBackwardPlan::select(s, d);
        ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
        EXPECT_EQ(plan->sku().impl, "cublaslt_pair");
        Status st = plan->run(s, test_workspace(plan->workspace_size()),
                              GemmBackwardArgs{.a = da.data(), .b = db.data(), .grad_d = dg.data(), .grad_a = dga.data(),
                                               .grad_b = dgb.data(), .grad_bias = bias ? dgbias.data() : nullptr,
                                               .alpha = alpha});
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        auto o = reference::gemm_backward(d, ha, hb, hg, alpha);
        ASSERT_TRUE(o.has_value());
        ASSERT_TRUE(dga.download(hga, s));
        ASSERT_TRUE(dgb.download(hgb, s));
        auto ca = reference::compare_gemm_d(hga, o->grad_a);
        EXPECT_TRUE(ca.ok) << "grad_a: " << ca.detail;
        auto cb = reference::compare_gemm_d(hgb, o->grad_b);
        EXPECT_TRUE(cb.ok) << "grad_b: " << cb.detail;
        if (bias) {
          ASSERT_TRUE(dgbias.download(hgbias, s));
          auto cc = reference::compare_gemm_bias_grad(hgbias, o->grad_b);
          EXPECT_TRUE(cc.ok) << "grad_bias: " << cc.detail;
        }
      }
}

// ------------------------------------------------------------------------ coverage audit additions
// Skinny M = 1..16, every M (cuBLASLt's small-M kernels, split-K for the longer K): the four
// A / B orders in turn, C on even M, column-major D where M % 4 == 3; N prime, K odd.
TEST_P(GemmGpu, SkinnyEveryM) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  int runs = 0;
  for (std::int64_t m = 1; m <= 16; ++m) {
    const auto& lo = kLayouts[m % 4];
    runs += run_case(make_case(t, m, 263, m % 3 ? 129 : 1031, lo[0], lo[1], m % 4 == 3 ? C : R, 0, m % 2 == 0), false);
  }
  RecordProperty("skus_run", runs);
}

// The epilogues over column-major D (Epilogues runs row-major D): cuBLASLt's relu / gelu_tanh
// (+ aux: the relu mask's bit (i, j) at j * aux.ld + i) and bias gradients (BGRADA / BGRADB
// swap with the frame), the composites' gelu_erf / silu (+ aux), over the four A / B orders,
// with and without C, and a skinny M = 7. Bias with column-major D is a select refusal
// (GemmPlanSelect.CublasLtLimitsAreRejectionsWithReasons), f64 takes the bias gradients only.
TEST_P(GemmGpu, EpiloguesColumnMajorD) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  int runs = 0;
  for (const auto& e : all_epilogues()) {
    if (e.bias || (t == DType::kF64 && e.bias_grad == GemmBiasGrad::kNone)) continue;
    for (const auto& lo : kLayouts) {
      for (bool with_c : {false, true}) {
        auto c = make_case(t, 127, 131, 257, lo[0], lo[1], C, 0, with_c);
        set_epilogue(c, e);
        runs += run_case(c, false);
      }
      auto skinny = make_case(t, 7, 264, 96, lo[0], lo[1], C, 5);
      set_epilogue(skinny, e);
      runs += run_case(skinny, false);
    }
  }
  RecordProperty("skus_run", runs);
}

// BatchedGemmPlan beyond Batched: C and bias broadcast (stride 0: one C / bias for every
// batch), column-major D and C with padded lds over the four A / B orders, a single batch
// (strides unused), and 64 small batches with B broadcast.
TEST_P(GemmGpu, BatchedBroadcastCBiasAndColumnMajorD) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const auto span = [](const MatrixLayout& m) { return m.as_tensor().element_span().end_offset; };
  int runs = 0;
  for (const auto& lo : kLayouts) {
    auto c = make_case(t, 29, 43, 61, lo[0], lo[1], C, 2, true);
    BatchedGemmDescriptor& b = c.desc;
    b.batch = 4;
    b.stride_a = span(b.gemm.a) + 1;
    b.stride_b = span(b.gemm.b) + 3;
    b.stride_c = 0;
    b.stride_d = span(b.gemm.d) + 4;
    c.name += " batch=4 c broadcast";
    runs += run_case(c, true);
  }
  if (t != DType::kF64) {  // cuBLASLt has no f64 bias epilogue
    for (const GemmActivation act : {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kSilu}) {
      auto c = make_case(t, 33, 72, 40, C, R, R, 0, true);
      set_epilogue(c, {act, true, false, GemmBiasGrad::kNone});
      BatchedGemmDescriptor& b = c.desc;
      b.batch = 3;
      b.stride_a = 33 * 40;
      b.stride_b = 40 * 72;
      b.stride_c = 0;
      b.stride_bias = 0;
      b.stride_d = 33 * 72;
      c.name += " batch=3 c and bias broadcast";
      runs += run_case(c, true);
    }
  }
  auto one = make_case(t, 17, 19, 23, R, C, R, 0, true);
  one.desc.batch = 1;
  one.desc.stride_a = 5;
  one.desc.stride_b = 0;
  one.desc.stride_c = 7;
  one.desc.stride_d = 3;
  one.name += " batch=1";
  runs += run_case(one, true);
  auto many = make_case(t, 3, 5, 7, C, C, R, 0, true);
  many.desc.batch = 64;
  many.desc.stride_a = 21;
  many.desc.stride_b = 0;
  many.desc.stride_c = 15;
  many.desc.stride_d = 15;
  many.name += " batch=64";
  runs += run_case(many, true);
  RecordProperty("skus_run", runs);
}

// Every SKU of GemmPlan and BatchedGemmPlan forced at least once per dtype (run_case forces
// every accepting SKU of each case; this pins the list): f64 cublaslt and
// cublaslt_bgrad_reduce; f16 / bf16 also cublaslt_act and cublaslt_dact; f32 all eight, the
// TF32 twins included. Per-SKU run counts in the properties skus / batched_skus.
TEST_P(GemmGpu, EverySkuForced) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  std::vector<GemmCase> cases = {make_case(t, 96, 80, 72, R, C, R, 0, true)};
  for (GemmBiasGrad bg : {GemmBiasGrad::kA, GemmBiasGrad::kB})
    for (const auto& lo : kLayouts) {
      auto c = make_case(t, 65, 72, 48, lo[0], lo[1], R);
      set_epilogue(c, {GemmActivation::kNone, false, false, bg});
      cases.push_back(c);
    }
  if (t != DType::kF64) {
    auto act = make_case(t, 65, 72, 48, R, C, R);
    set_epilogue(act, {GemmActivation::kSilu, true, true, GemmBiasGrad::kNone});
    cases.push_back(act);
    auto dact = make_case(t, 65, 72, 48, R, C, R);
    set_epilogue(dact, GemmEpilogue::activation_backward(GemmActivation::kGeluErf, true));
    cases.push_back(dact);
  }
  std::set<std::string> want = {"cublaslt", "cublaslt_bgrad_reduce"};
  if (t != DType::kF64) want.insert({"cublaslt_act", "cublaslt_dact"});
  if (t == DType::kF32) want.insert({"cublaslt_tf32", "cublaslt_tf32_bgrad_reduce", "cublaslt_tf32_act", "cublaslt_tf32_dact"});
  for (bool batched : {false, true}) {
    std::map<std::string, int> tally;
    for (GemmCase c : cases) {
      if (batched) {  // 2 batches: A and the bias-gradient batches apart, B broadcast
        BatchedGemmDescriptor& b = c.desc;
        b.batch = 2;
        b.stride_a = b.gemm.a.as_tensor().element_span().end_offset;
        b.stride_d = b.gemm.d.as_tensor().element_span().end_offset;
        b.stride_c = b.gemm.with_c ? b.gemm.c.as_tensor().element_span().end_offset : 0;
        b.stride_bias = 128;
        if (b.gemm.epilogue.aux) b.stride_aux = b.gemm.aux.as_tensor().element_span().end_offset + 8;
        if (b.gemm.epilogue.bias_grad == GemmBiasGrad::kB) b.stride_b = b.gemm.b.as_tensor().element_span().end_offset;
      }
      run_case(c, batched, &tally);
    }
    std::set<std::string> got;
    std::string counts;
    for (const auto& [impl, n] : tally) {
      got.insert(impl);
      counts += impl + "=" + std::to_string(n) + " ";
    }
    EXPECT_EQ(got, want) << (batched ? "BatchedGemmPlan" : "GemmPlan") << " SKUs run: " << counts;
    RecordProperty(batched ? "batched_skus" : "skus", counts);
  }
}

// One GemmBackwardPlan case under every SKU that accepts it: outputs poisoned, the input a
// gradient does not need passed as null (a without grad_b, b without grad_a), every computed
// output against reference::gemm_backward, guard bytes checked.
int run_backward(const GemmBackwardDescriptor& d, double alpha) {
  SCOPED_TRACE(d.to_string() + " alpha " + std::to_string(alpha));
  const DType t = d.a.dtype;
  auto one = [](const TensorLayout& l) { return reference::batched_layout(l, 1, 0); };
  const TensorLayout unused = TensorLayout::contiguous(t, {1});
  HostTensor ha(one(d.a.as_tensor())), hb(one(d.b.as_tensor())), hg(one(d.grad_d.as_tensor()));
  HostTensor hga(one(d.compute_grad_a ? d.grad_a.as_tensor() : unused));
  HostTensor hgb(one(d.compute_grad_b ? d.grad_b.as_tensor() : unused));
  HostTensor hgbias(one(d.compute_grad_bias ? d.grad_bias : unused));
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  fill_random(hg, -1, 1);
  const Stream& s = test_stream();
  DeviceTensor da(ha, s), db(hb, s), dg(hg, s), dga(hga, s), dgb(hgb, s), dgbias(hgbias, s);
  auto o = reference::gemm_backward(d, ha, hb, hg, alpha);
  EXPECT_TRUE(o.has_value()) << (o ? "" : o.error().to_string());
  if (!o) return 0;
  return for_each_sku<GemmBackwardPlan>(
      d,
      [&] {
        dga.poison(0xFF, s);
        dgb.poison(0xFF, s);
        dgbias.poison(0xFF, s);
      },
      [&](const GemmBackwardPlan& p, Workspace ws) {
        return p.run(s, ws,
                     GemmBackwardArgs{.a = d.compute_grad_b ? da.data() : nullptr, .b = d.compute_grad_a ? db.data() : nullptr,
                                      .grad_d = dg.data(), .grad_a = d.compute_grad_a ? dga.data() : nullptr,
                                      .grad_b = d.compute_grad_b ? dgb.data() : nullptr,
                                      .grad_bias = d.compute_grad_bias ? dgbias.data() : nullptr, .alpha = alpha});
      },
      [&](const std::string& sku) {
        SCOPED_TRACE(sku);
        if (d.compute_grad_a) {
          EXPECT_TRUE(dga.download(hga, s)) << "guard bytes around grad_a";
          auto c = reference::compare_gemm_d(hga, o->grad_a);
          EXPECT_TRUE(c.ok) << "grad_a: " << c.detail;
          EXPECT_TRUE(quant_padding_untouched(hga, 0xFF)) << "grad_a";
        }
        if (d.compute_grad_b) {
          EXPECT_TRUE(dgb.download(hgb, s)) << "guard bytes around grad_b";
          auto c = reference::compare_gemm_d(hgb, o->grad_b);
          EXPECT_TRUE(c.ok) << "grad_b: " << c.detail;
          EXPECT_TRUE(quant_padding_untouched(hgb, 0xFF)) << "grad_b";
        }
        if (d.compute_grad_bias) {
          EXPECT_TRUE(dgbias.download(hgbias, s)) << "guard bytes around grad_bias";
          auto c = reference::compare_gemm_bias_grad(hgbias, o->grad_b);
          EXPECT_TRUE(c.ok) << "grad_bias: " << c.detail;
        }
      });
}

// GemmBackwardPlan beyond Backward: one gradient alone (grad_a only; grad_b only, with and
// without grad_bias; the unneeded input null), column-major grad_d and grad_a, padded lds
// of the gradients, a skinny M = 5, alpha != 1 without the bias gradient, and a larger
// 512 x 384 x 640 problem.
TEST_P(GemmGpu, BackwardPartialAndColumnMajorGradients) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  int runs = 0;
  auto desc = [&](std::int64_t m, std::int64_t n, std::int64_t k, MatrixOrder oa, MatrixOrder ob, MatrixOrder og,
                  MatrixOrder oga, bool ga, bool gb, bool bias) {
    GemmBackwardDescriptor d;
    d.a = mat(t, m, k, oa);
    d.b = mat(t, k, n, ob);
    d.grad_d = mat(t, m, n, og, 3);
    d.compute_grad_a = ga;
    d.compute_grad_b = gb;
    d.compute_grad_bias = bias;
    if (ga) d.grad_a = mat(t, m, k, oga, 2);
    if (gb) d.grad_b = mat(t, k, n, ob == R ? C : R, 1);
    if (bias) d.grad_bias = TensorLayout::contiguous(t, {n});
    return d;
  };
  for (const auto& lo : kLayouts) {
    runs += run_backward(desc(61, 67, 45, lo[0], lo[1], C, C, true, false, false), 1.5);
    runs += run_backward(desc(61, 67, 45, lo[0], lo[1], C, R, false, true, false), -0.75);
    runs += run_backward(desc(61, 67, 45, lo[0], lo[1], R, R, false, true, true), 1.0);
    runs += run_backward(desc(5, 130, 72, lo[0], lo[1], C, C, true, true, true), 1.0);
  }
  runs += run_backward(desc(512, 384, 640, R, C, R, R, true, true, true), 1.0);
  RecordProperty("skus_run", runs);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ------------------------------------------------------------------------ aux and activation backward
// Filter --gtest_filter='*GemmAux*'. The activation backward (DRELU / DGELU (+ BGRAD) fused,
// cublaslt_dact for the rest) over layouts, odd shapes, alpha, padded and odd aux lds, column-
// major D, batches, every accepting SKU forced (run_case); the forward's aux fed to the
// backward on the device (the mask and pre-activation formats agree); run-time refusals.
class GemmAuxGpu : public ::testing::TestWithParam<DType> {};

const GemmActivation kAuxActs[] = {GemmActivation::kRelu, GemmActivation::kGeluTanh, GemmActivation::kGeluErf,
                                   GemmActivation::kSilu};

TEST_P(GemmAuxGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (GemmActivation act : kAuxActs)
    for (bool bgrad : {false, true}) {
      const GemmEpilogue e = GemmEpilogue::activation_backward(act, bgrad);
      if (t == DType::kF64) {  // neither cuBLASLt nor our pass: refused, naming dtype and epilogue
        auto c = make_case(t, 64, 64, 64, R, R, R);
        set_epilogue(c, e);
        auto p = GemmPlan::select(test_stream(), c.desc.gemm);
        ASSERT_FALSE(p.has_value());
        EXPECT_EQ(p.error().code(), Code::kInvalidArgument);
        EXPECT_NE(p.error().message().find("d.dtype = f64 with epilogue " + e.to_string()), std::string::npos)
            << p.error().message();
        continue;
      }
      for (const auto& lo : kLayouts)
        for (MatrixOrder od : {R, C}) {
          auto odd = make_case(t, 127, 131, 257, lo[0], lo[1], od);
          set_epilogue(odd, e);
          if (!bgrad) odd.alpha = 1.5;  // alpha scales the product before act'
          run_case(odd, false);
          auto skinny = make_case(t, 7, 264, 96, lo[0], lo[1], od, 3);  // padded lds
          set_epilogue(skinny, e);
          run_case(skinny, false);
        }
      for (auto [m, n, k] : {std::array<std::int64_t, 3>{1, 4096, 64}, {64, 64, 64}, {13, 1, 7}, {0, 64, 64},
                             {1024, 2048, 512}}) {
        if (m == 0 && bgrad) continue;  // empty D: nothing is written, bias_grad included (docs/gemm.md)
        auto c = make_case(t, m, n, k, R, C, R);
        set_epilogue(c, e);
        run_case(c, false);
      }
      // aux ld padded past cuBLASLt's unit (and, for the composites' own aux, an odd ld)
      auto padded = make_case(t, 65, 96, 33, R, R, R);
      set_epilogue(padded, e);
      padded.desc.gemm.aux.ld += act == GemmActivation::kRelu ? 128 : 8;
      run_case(padded, false);
      if (act == GemmActivation::kGeluErf || act == GemmActivation::kSilu) {
        auto odd_ld = make_case(t, 65, 96, 33, C, R, C);
        set_epilogue(odd_ld, e);
        odd_ld.desc.gemm.aux.ld = 67;
        run_case(odd_ld, false);
      }
    }
}

TEST_P(GemmAuxGpu, BatchedBackward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  if (t == DType::kF64) GTEST_SKIP() << "f64 refused (GemmAuxGpu.Backward checks the refusal)";
  for (GemmActivation act : kAuxActs)
    for (bool bgrad : {false, true})
      for (MatrixOrder od : {R, C}) {
        auto c = make_case(t, 33, 72, 40, R, C, od);
        set_epilogue(c, GemmEpilogue::activation_backward(act, bgrad));
        BatchedGemmDescriptor& b = c.desc;
        b.batch = 3;
        b.stride_a = 33 * 40;
        b.stride_b = 0;  // one weight for every batch
        b.stride_d = 33 * 72 + 8;
        b.stride_bias = 80;
        const std::int64_t unit = act == GemmActivation::kRelu ? 128 : 8;
        b.stride_aux = (b.gemm.aux.as_tensor().element_span().end_offset / unit + 1) * unit;
        run_case(c, true);
      }
}

// The forward with aux output (relu mask / pre-activation, with bias), its aux kept on the
// device and fed to the backward plan: both checked against the oracle (the backward's with
// the aux the forward wrote).
TEST_P(GemmAuxGpu, ForwardAuxFeedsBackward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  if (t == DType::kF64) GTEST_SKIP() << "f64 refused (GemmAuxGpu.Backward checks the refusal)";
  const Stream& s = test_stream();
  for (GemmActivation act : kAuxActs)
    for (auto [m, h, k, n2] : {std::array<std::int64_t, 4>{96, 200, 72, 48}, {1, 64, 8, 16}, {129, 257, 31, 65}}) {
      // forward: X_pre = x W1 + b1 (m x h), aux = mask / X_pre
      auto f = make_case(t, m, h, k, R, C, R);
      set_epilogue(f, {act, true, true, GemmBiasGrad::kNone});
      // backward: dX_pre = (dY W2^T) .* act'(X_pre), dY m x n2, W2^T n2 x h; bias gradient [h]
      auto bw = make_case(t, m, h, n2, R, C, R);
      set_epilogue(bw, GemmEpilogue::activation_backward(act, true));
      bw.desc.gemm.aux = f.desc.gemm.aux;
      SCOPED_TRACE(std::string(gemm_activation_name(act)) + " " + f.name + " / " + bw.name);
      const GemmDescriptor& fg = f.desc.gemm;
      const GemmDescriptor& bg = bw.desc.gemm;
      auto one = [](const auto& l) { return reference::batched_layout(l, 1, 0); };
      HostTensor x(one(fg.a)), w1(one(fg.b)), b1(one(fg.bias)), y(one(fg.d)), aux(one(fg.aux));
      HostTensor dy(one(bg.a)), w2(one(bg.b)), dx(one(bg.d)), db1(one(bg.bias_grad));
      for (HostTensor* h_ : {&x, &w1, &b1, &dy, &w2}) fill_random(*h_, -1, 1);
      DeviceTensor dxd(x, s), dw1(w1, s), db1d(b1, s), dyd(y, s), dauxd(aux, s), ddy(dy, s), dw2(w2, s), ddx(dx, s),
          ddb1(db1, s);
      for (DeviceTensor* o : {&dyd, &dauxd, &ddx, &ddb1}) o->poison(0xFF, s);
      auto fp = GemmPlan::select(s, fg);
      ASSERT_TRUE(fp.has_value()) << fp.error().to_string();
      auto bp = GemmPlan::select(s, bg);
      ASSERT_TRUE(bp.has_value()) << bp.error().to_string();
      ASSERT_TRUE(fp->run(s, test_workspace(fp->workspace_size()),
                          GemmArgs{.a = dxd.data(), .b = dw1.data(), .d = dyd.data(), .bias = db1d.data(), .aux = dauxd.data()})
                      .is_ok());
      ASSERT_TRUE(bp->run(s, test_workspace(bp->workspace_size()),
                          GemmArgs{.a = ddy.data(), .b = dw2.data(), .d = ddx.data(), .bias_grad = ddb1.data(),
                                   .aux = dauxd.data()})
                      .is_ok());
      ASSERT_TRUE(dyd.download(y, s));
      ASSERT_TRUE(dauxd.download(aux, s));
      ASSERT_TRUE(ddx.download(dx, s));
      ASSERT_TRUE(ddb1.download(db1, s));
      auto fo = reference::gemm(fg, x, w1, nullptr, &b1, 1.0, 0.0, false);
      ASSERT_TRUE(fo.has_value());
      auto cy = reference::compare_gemm_d(y, *fo);
      EXPECT_TRUE(cy.ok) << "forward d (" << fp->sku().name() << "): " << cy.detail;
      auto ca = act == GemmActivation::kRelu ? reference::compare_gemm_relu_mask(aux, *fo, fg.aux.ld, 0, true)
                                             : reference::compare_gemm_aux_pre(aux, *fo);
      EXPECT_TRUE(ca.ok) << "forward aux: " << ca.detail;
      auto bo = reference::gemm(bg, dy, w2, nullptr, nullptr, 1.0, 0.0, false, &aux);
      ASSERT_TRUE(bo.has_value());
      auto cd = reference::compare_gemm_d(dx, *bo);
      EXPECT_TRUE(cd.ok) << "backward d (" << bp->sku().name() << "): " << cd.detail;
      auto cb = reference::compare_gemm_bias_grad(db1, *bo);
      EXPECT_TRUE(cb.ok) << "backward bias_grad: " << cb.detail;
    }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmAuxGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Run-time refusals of the backward, outputs (d, bias_grad) untouched, for the fused and the
// composite SKU.
TEST(GemmAuxRefusals, BackwardRunTable) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kBF16;
  for (const char* sku : {"gemm.fwd.cublaslt[*", "gemm.fwd.cublaslt_dact*"}) {
    SCOPED_TRACE(sku);
    auto c = make_case(t, 64, 128, 96, R, C, R);
    set_epilogue(c, GemmEpilogue::activation_backward(GemmActivation::kGeluTanh, true));
    const GemmDescriptor& g = c.desc.gemm;
    PlanPreference pref;
    pref.force_sku = sku;
    auto plan = GemmPlan::select(test_stream(), g, pref);
    if (!plan && std::string(sku).find("dact") == std::string::npos &&
        plan.error().message().find("found no algorithm") != std::string::npos)
      continue;  // cuBLASLt may decline the fused epilogue
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    HostTensor ha(g.a.as_tensor()), hb(g.b.as_tensor()), haux(g.aux.as_tensor());
    fill_random(ha, -1, 1);
    fill_random(hb, -1, 1);
    fill_random(haux, -3, 3);
    const Stream& s = test_stream();
    DeviceTensor da(ha, s), db(hb, s), daux(haux, s);
    Untouched d(g.d.as_tensor()), bias_grad(g.bias_grad);
    const GemmArgs ok{.a = da.data(), .b = db.data(), .d = d.data(), .bias_grad = bias_grad.data(), .aux = daux.data()};
    const std::size_t need = plan->workspace_size();
    // the composite's column reduction keeps its partials in the workspace: its rows always run
    // (GemmPlanSelect.RefusalTableWorkspaceFromCaps)
    if (std::string(sku).find("dact") != std::string::npos) {
      ASSERT_GT(need, 0u);
    }
    const Code bad = Code::kInvalidArgument;
    expect_arg_run_refusals<GemmArgs>(
        "gemm", ok, [&](Workspace w, const GemmArgs& a) { return plan->run(s, w, a); },
        test_workspace(need + kWorkspaceAlignment), need,
        {
            {"null aux", [](GemmArgs& a) { a.aux = nullptr; }, bad, "args.aux is null"},
            {"null bias_grad", [](GemmArgs& a) { a.bias_grad = nullptr; }, bad, "args.bias_grad is null"},
            {"misaligned aux", [&](GemmArgs& a) { a.aux = static_cast<char*>(daux.data()) + 2; }, Code::kMisaligned,
             "is not aligned to aux.alignment = 16 bytes"},
            {"d aliases aux", [](GemmArgs& a) { a.d = a.aux; }, bad, "args.d overlaps args.aux"},
            {"alpha with bias gradient", [](GemmArgs& a) { a.alpha = 0.5; }, bad, "args.alpha = 0.500000 with epilogue"},
        },
        {&d, &bias_grad});
  }
}

// ------------------------------------------------------------------------ run-time refusals
TEST(GemmRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kBF16;
  GemmDescriptor g;
  g.a = mat(t, 64, 4096, R);
  g.b = mat(t, 4096, 64, R);
  g.d = mat(t, 64, 64, R);
  g.with_c = true;
  g.c = g.d;
  g.epilogue = {GemmActivation::kGeluTanh, true, true, GemmBiasGrad::kNone};
  g.bias = TensorLayout::contiguous(t, {64});
  g.aux = g.d;
  auto plan = GemmPlan::select(test_stream(), g);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor ha(g.a.as_tensor()), hb(g.b.as_tensor()), hc(g.c.as_tensor()), hbias(g.bias);
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  fill_random(hc, -1, 1);
  fill_random(hbias, -1, 1);
  const Stream& s = test_stream();
  DeviceTensor da(ha, s), db(hb, s), dc(hc, s), dbias(hbias, s);
  Untouched d(g.d.as_tensor()), aux(g.aux.as_tensor());
  const GemmArgs ok{.a = da.data(), .b = db.data(), .c = dc.data(), .d = d.data(), .bias = dbias.data(), .aux = aux.data(),
                    .alpha = 1.0, .beta = 1.0};
  const std::size_t need = plan->workspace_size();
  const Code bad = Code::kInvalidArgument;
  expect_arg_run_refusals<GemmArgs>(
      "gemm", ok, [&](Workspace w, const GemmArgs& a) { return plan->run(s, w, a); },
      test_workspace(need + kWorkspaceAlignment), need,
      {
          {"null a", [](GemmArgs& a) { a.a = nullptr; }, bad, "args.a is null"},
          {"null b", [](GemmArgs& a) { a.b = nullptr; }, bad, "args.b is null"},
          {"null c", [](GemmArgs& a) { a.c = nullptr; }, bad, "args.c is null"},
          {"null d", [](GemmArgs& a) { a.d = nullptr; }, bad, "args.d is null"},
          {"null bias", [](GemmArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
          {"null aux", [](GemmArgs& a) { a.aux = nullptr; }, bad, "args.aux is null"},
          {"misaligned b", [&](GemmArgs& a) { a.b = static_cast<const char*>(db.data()) + 2; }, Code::kMisaligned,
           "is not aligned to b.alignment = 16 bytes"},
          {"misaligned c", [&](GemmArgs& a) { a.c = static_cast<const char*>(dc.data()) + 2; }, Code::kMisaligned,
           "is not aligned to c.alignment = 16 bytes"},
          {"misaligned d", [&](GemmArgs& a) { a.d = static_cast<char*>(d.data()) + 2; }, Code::kMisaligned,
           "is not aligned to d.alignment = 16 bytes"},
          {"misaligned bias", [&](GemmArgs& a) { a.bias = static_cast<const char*>(dbias.data()) + 2; }, Code::kMisaligned,
           "is not aligned to bias.alignment = 16 bytes"},
          {"misaligned aux", [&](GemmArgs& a) { a.aux = static_cast<char*>(aux.data()) + 2; }, Code::kMisaligned,
           "is not aligned to aux.alignment = 16 bytes"},
          {"d aliases a", [](GemmArgs& a) { a.a = a.d; }, bad, "args.d overlaps args.a"},
          {"d aliases b", [](GemmArgs& a) { a.b = a.d; }, bad, "args.d overlaps args.b"},
          {"d aliases bias", [](GemmArgs& a) { a.bias = a.d; }, bad, "args.d overlaps args.bias"},
          {"aux aliases d", [](GemmArgs& a) { a.aux = a.d; }, bad, "args.d and args.aux overlap"},
          {"aux aliases c", [](GemmArgs& a) { a.aux = const_cast<void*>(a.c); }, bad, "args.aux overlaps args.c"},
          {"c shifted into d", [](GemmArgs& a) { a.c = static_cast<const char*>(a.d) + 64; }, bad, "args.d overlaps args.c"},
      },
      {&d, &aux});
}

// BatchedGemmPlan: the checks span every batch (a D placed in A's last batch, C's batch
// stride differing from D's). Batch 3, A, C, D and bias strided (D's batches 128 elements
// further apart than C's), B broadcast (stride 0). Then the workspace rows on an f64
// bgrad_b of one batch (cublaslt_bgrad_reduce: the column reduction's partials, so need > 0
// whatever cuBLASLt's heuristic picks; GemmPlanSelect.RefusalTableWorkspaceFromCaps).
TEST(GemmRefusals, BatchedRunTable) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kBF16;
  const Stream& s = test_stream();
  const Code bad = Code::kInvalidArgument;
  {
    BatchedGemmDescriptor bd;
    GemmDescriptor& g = bd.gemm;
    g.a = mat(t, 64, 256, R);
    g.b = mat(t, 256, 64, C);
    g.d = mat(t, 64, 64, R);
    g.with_c = true;
    g.c = g.d;
    g.epilogue.bias = true;
    g.bias = TensorLayout::contiguous(t, {64});
    bd.batch = 3;
    bd.stride_a = 64 * 256;
    bd.stride_c = 64 * 64;
    bd.stride_d = 64 * 64 + 128;
    bd.stride_bias = 64;
    auto plan = BatchedGemmPlan::select(s, bd);
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    HostTensor ha(reference::batched_layout(g.a, 3, bd.stride_a)), hb(reference::batched_layout(g.b, 3, 0));
    HostTensor hc(reference::batched_layout(g.c, 3, bd.stride_c)), hbias(reference::batched_layout(g.bias, 3, bd.stride_bias));
    fill_random(ha, -1, 1);
    fill_random(hb, -1, 1);
    fill_random(hc, -1, 1);
    fill_random(hbias, -1, 1);
    DeviceTensor da(ha, s), db(hb, s), dc(hc, s), dbias(hbias, s);
    Untouched d(gemm_batched_layout(g.d.as_tensor(), 3, bd.stride_d));
    const GemmArgs ok{.a = da.data(), .b = db.data(), .c = dc.data(), .d = d.data(), .bias = dbias.data(), .alpha = 1.0,
                      .beta = 1.0};
    const std::size_t need = plan->workspace_size();
    const std::size_t batch_a_bytes = static_cast<std::size_t>(bd.stride_a) * 2;
    expect_arg_run_refusals<GemmArgs>(
        "batched_gemm", ok, [&](Workspace w, const GemmArgs& a) { return plan->run(s, w, a); },
        test_workspace(need + kWorkspaceAlignment), need,
        {
            {"null a", [](GemmArgs& a) { a.a = nullptr; }, bad, "args.a is null"},
            {"null b", [](GemmArgs& a) { a.b = nullptr; }, bad, "args.b is null"},
            {"null c", [](GemmArgs& a) { a.c = nullptr; }, bad, "args.c is null"},
            {"null d", [](GemmArgs& a) { a.d = nullptr; }, bad, "args.d is null"},
            {"null bias", [](GemmArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
            {"misaligned a", [&](GemmArgs& a) { a.a = static_cast<const char*>(da.data()) + 2; }, Code::kMisaligned,
             "is not aligned to a.alignment = 16 bytes"},
            {"misaligned d", [&](GemmArgs& a) { a.d = static_cast<char*>(d.data()) + 2; }, Code::kMisaligned,
             "is not aligned to d.alignment = 16 bytes"},
            {"d in A's last batch", [&](GemmArgs& a) { a.d = const_cast<char*>(static_cast<const char*>(a.a)) + 2 * batch_a_bytes; },
             bad, "args.d overlaps args.a"},
            {"d on the broadcast b", [](GemmArgs& a) { a.b = a.d; }, bad, "args.d overlaps args.b"},
            {"c == d with another batch stride", [](GemmArgs& a) { a.c = a.d; }, bad,
             "args.d overlaps args.c (only c may alias d, with the same pointer, layout and batch stride)"},
            {"bias in d's batch 1", [&](GemmArgs& a) { a.bias = static_cast<const char*>(a.d) + bd.stride_d * 2; }, bad,
             "args.d overlaps args.bias"},
        },
        {&d});
  }
  {
    BatchedGemmDescriptor bd;
    GemmDescriptor& g = bd.gemm;
    g.a = mat(DType::kF64, 64, 32, R);
    g.b = mat(DType::kF64, 32, 48, R);
    g.d = mat(DType::kF64, 64, 48, R);
    g.epilogue.bias_grad = GemmBiasGrad::kB;
    g.bias_grad = TensorLayout::contiguous(DType::kF64, {48});
    auto plan = BatchedGemmPlan::select(s, bd);
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    EXPECT_EQ(plan->sku().impl, "cublaslt_bgrad_reduce");
    HostTensor ha(g.a.as_tensor()), hb(g.b.as_tensor());
    fill_random(ha, -1, 1);
    fill_random(hb, -1, 1);
    DeviceTensor da(ha, s), db(hb, s);
    Untouched d(g.d.as_tensor()), bias_grad(g.bias_grad);
    const GemmArgs ok{.a = da.data(), .b = db.data(), .d = d.data(), .bias_grad = bias_grad.data()};
    const std::size_t need = plan->workspace_size();
    ASSERT_GT(need, 0u);  // the bias-gradient reduction's partials
    expect_arg_run_refusals<GemmArgs>(
        "batched_gemm bgrad_b", ok, [&](Workspace w, const GemmArgs& a) { return plan->run(s, w, a); },
        test_workspace(need + kWorkspaceAlignment), need,
        {
            {"null bias_grad", [](GemmArgs& a) { a.bias_grad = nullptr; }, bad, "args.bias_grad is null"},
            {"misaligned bias_grad", [&](GemmArgs& a) { a.bias_grad = static_cast<char*>(bias_grad.data()) + 8; },
             Code::kMisaligned, "is not aligned to bias_grad.alignment = 16 bytes"},
            {"bias_grad inside d", [](GemmArgs& a) { a.bias_grad = static_cast<char*>(a.d) + 256; }, bad,
             "args.d and args.bias_grad overlap"},
            {"bias_grad on b", [](GemmArgs& a) { a.bias_grad = const_cast<void*>(a.b); }, bad,
             "args.bias_grad overlaps args.b"},
            {"alpha with bias gradient", [](GemmArgs& a) { a.alpha = 0.5; }, bad, "args.alpha = 0.500000 with epilogue bgrad_b"},
        },
        {&d, &bias_grad});
  }
}

// GemmBackwardPlan (f64 with the bias gradient: its grad_b GEMM is cublaslt_bgrad_reduce, so
// the workspace rows always run): every pointer null, misaligned and aliased, outputs
// (grad_a, grad_b, grad_bias) untouched. Each message names the backward's own field, after
// the GEMM that checks it (grad_a = grad_d b^T, grad_b = a^T grad_d); the checks across the
// two GEMMs name no GEMM.
TEST(GemmBackwardRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kF64;
  GemmBackwardDescriptor bw;
  bw.a = mat(t, 64, 32, R);
  bw.b = mat(t, 32, 48, R);
  bw.grad_d = mat(t, 64, 48, R);
  bw.grad_a = mat(t, 64, 32, R);
  bw.grad_b = mat(t, 32, 48, R);
  bw.compute_grad_bias = true;
  bw.grad_bias = TensorLayout::contiguous(t, {48});
  const Stream& s = test_stream();
  auto plan = GemmBackwardPlan::select(s, bw);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor ha(bw.a.as_tensor()), hb(bw.b.as_tensor()), hg(bw.grad_d.as_tensor());
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  fill_random(hg, -1, 1);
  DeviceTensor da(ha, s), db(hb, s), dg(hg, s);
  Untouched grad_a(bw.grad_a.as_tensor()), grad_b(bw.grad_b.as_tensor()), grad_bias(bw.grad_bias);
  const GemmBackwardArgs ok{.a = da.data(), .b = db.data(), .grad_d = dg.data(), .grad_a = grad_a.data(),
                            .grad_b = grad_b.data(), .grad_bias = grad_bias.data()};
  const std::size_t need = plan->workspace_size();
  ASSERT_GT(need, 0u);  // the grad_bias reduction's partials
  const Code bad = Code::kInvalidArgument;
  const Code mis = Code::kMisaligned;
  auto off = [](const void* p, int bytes) { return const_cast<char*>(static_cast<const char*>(p)) + bytes; };
  expect_arg_run_refusals<GemmBackwardArgs>(
      "gemm_backward", ok, [&](Workspace w, const GemmBackwardArgs& a) { return plan->run(s, w, a); },
      test_workspace(need + kWorkspaceAlignment), need,
      {
          {"null a", [](GemmBackwardArgs& a) { a.a = nullptr; }, bad, "grad_b = a^T grad_d: args.a is null"},
          {"null b", [](GemmBackwardArgs& a) { a.b = nullptr; }, bad, "grad_a = grad_d b^T: args.b is null"},
          {"null grad_d", [](GemmBackwardArgs& a) { a.grad_d = nullptr; }, bad, "grad_a = grad_d b^T: args.grad_d is null"},
          {"null grad_a", [](GemmBackwardArgs& a) { a.grad_a = nullptr; }, bad, "grad_a = grad_d b^T: args.grad_a is null"},
          {"null grad_b", [](GemmBackwardArgs& a) { a.grad_b = nullptr; }, bad, "grad_b = a^T grad_d: args.grad_b is null"},
          {"null grad_bias", [](GemmBackwardArgs& a) { a.grad_bias = nullptr; }, bad,
           "grad_b = a^T grad_d: args.grad_bias is null"},
          {"misaligned a", [&](GemmBackwardArgs& a) { a.a = off(a.a, 8); }, mis, "grad_b = a^T grad_d: args.a = 0x"},
          {"misaligned grad_d", [&](GemmBackwardArgs& a) { a.grad_d = off(a.grad_d, 8); }, mis, "grad_a = grad_d b^T: args.grad_d = 0x"},
          {"misaligned grad_a", [&](GemmBackwardArgs& a) { a.grad_a = off(a.grad_a, 8); }, mis, "grad_a = grad_d b^T: args.grad_a = 0x"},
          {"misaligned grad_b", [&](GemmBackwardArgs& a) { a.grad_b = off(a.grad_b, 8); }, mis, "grad_b = a^T grad_d: args.grad_b = 0x"},
          {"misaligned grad_bias", [&](GemmBackwardArgs& a) { a.grad_bias = off(a.grad_bias, 8); }, mis,
           "grad_b = a^T grad_d: args.grad_bias = 0x"},
          {"grad_a on grad_d", [&](GemmBackwardArgs& a) { a.grad_a = off(a.grad_d, 0); }, bad,
           "grad_a = grad_d b^T: args.grad_a overlaps args.grad_d"},
          // grad_a (16 KiB) is larger than b (12 KiB): on the device it also reaches the next
          // allocation, which the check may name first (H100, session 35: grad_d)
          {"grad_a on b", [&](GemmBackwardArgs& a) { a.grad_a = off(a.b, 0); }, bad, "grad_a = grad_d b^T: args.grad_a overlaps args."},
          {"grad_b on grad_d", [&](GemmBackwardArgs& a) { a.grad_b = off(a.grad_d, 64); }, bad,
           "grad_b = a^T grad_d: args.grad_b overlaps args.grad_d"},
          {"grad_bias inside grad_b", [&](GemmBackwardArgs& a) { a.grad_bias = off(a.grad_b, 256); }, bad,
           "grad_b = a^T grad_d: args.grad_b and args.grad_bias overlap"},
          {"grad_a on a (read by the grad_b GEMM after grad_a is written)", [&](GemmBackwardArgs& a) { a.grad_a = off(a.a, 0); },
           bad, "args.grad_a overlaps args.a"},
          {"grad_a on grad_b", [](GemmBackwardArgs& a) { a.grad_b = a.grad_a; }, bad, "args.grad_a overlaps args.grad_b"},
          {"grad_a on grad_bias", [](GemmBackwardArgs& a) { a.grad_bias = a.grad_a; }, bad, "args.grad_a overlaps args.grad_bias"},
          {"alpha with the bias gradient", [](GemmBackwardArgs& a) { a.alpha = 2.0; }, bad,
           "grad_b = a^T grad_d: args.alpha = 2.000000 with epilogue bgrad_b"},
      },
      {&grad_a, &grad_b, &grad_bias});
}

// Empty M, N or batch writes nothing, bias_grad included (docs/gemm.md), on the bias-gradient
// reduction too: f64 bgrad_a with N = 0 (only cublaslt_bgrad_reduce takes f64 bias gradients)
// and a batch of 0 (the run-time checks skip such problems, so no pointer is checked: a
// launch there would run on unchecked pointers).
TEST(GemmRefusals, EmptyProblemWritesNoBiasGrad) {
  BARACUDA_REQUIRE_GPU();
  const Stream& s = test_stream();
  GemmDescriptor g;
  g.a = mat(DType::kF64, 64, 32, R);
  g.b = MatrixLayout{DType::kF64, 32, 0, 1, R, 16};
  g.d = MatrixLayout{DType::kF64, 64, 0, 1, R, 16};
  g.epilogue.bias_grad = GemmBiasGrad::kA;
  g.bias_grad = TensorLayout::contiguous(DType::kF64, {64});
  auto plan = GemmPlan::select(s, g);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->sku().impl, "cublaslt_bgrad_reduce");
  HostTensor ha(g.a.as_tensor());
  fill_random(ha, -1, 1);
  DeviceTensor da(ha, s);
  Untouched bias_grad(g.bias_grad);
  Status st = plan->run(s, test_workspace(plan->workspace_size()), GemmArgs{.a = da.data(), .bias_grad = bias_grad.data()});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  BatchedGemmDescriptor none;
  none.gemm = g;
  none.gemm.b = mat(DType::kF64, 32, 48, R);
  none.gemm.d = mat(DType::kF64, 64, 48, R);
  none.batch = 0;
  auto bplan = BatchedGemmPlan::select(s, none);
  ASSERT_TRUE(bplan.has_value()) << bplan.error().to_string();
  st = bplan->run(s, test_workspace(bplan->workspace_size()), GemmArgs{.a = da.data(), .bias_grad = bias_grad.data()});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  const Status sync = s.synchronize();
  ASSERT_TRUE(sync.is_ok()) << sync.to_string();
  EXPECT_TRUE(bias_grad.check());
}

// Graph capture: run() inside a capture, replayed, matches the eager result bit for bit.
TEST(GemmGraph, CaptureAndReplay) {
  BARACUDA_REQUIRE_GPU();
  auto c = make_case(DType::kBF16, 256, 384, 512, R, C, R);
  set_epilogue(c, {GemmActivation::kGeluTanh, true, false, GemmBiasGrad::kNone});
  const GemmDescriptor& g = c.desc.gemm;
  auto plan = GemmPlan::select(test_stream(), g);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_TRUE(plan->sku().graph_capturable);
  auto s = Stream::create();
  ASSERT_TRUE(s.has_value());
  HostTensor ha(g.a.as_tensor()), hb(g.b.as_tensor()), hbias(g.bias), h1(g.d.as_tensor()), h2(g.d.as_tensor());
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  fill_random(hbias, -1, 1);
  DeviceTensor da(ha, *s), db(hb, *s), dbias(hbias, *s), d1(h1, *s), d2(h2, *s);
  Workspace ws = test_workspace(plan->workspace_size());
  ASSERT_TRUE(plan->run(*s, ws, GemmArgs{.a = da.data(), .b = db.data(), .d = d1.data(), .bias = dbias.data()}).is_ok());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s->handle(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  Status st = plan->run(*s, ws, GemmArgs{.a = da.data(), .b = db.data(), .d = d2.data(), .bias = dbias.data()});
  ASSERT_EQ(cudaStreamEndCapture(s->handle(), &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s->handle()), cudaSuccess);
  ASSERT_TRUE(d1.download(h1, *s));
  ASSERT_TRUE(d2.download(h2, *s));
  EXPECT_EQ(std::memcmp(h1.storage(), h2.storage(), h1.storage_bytes()), 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace baracuda::test
