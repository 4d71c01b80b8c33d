// GemmPlan / BatchedGemmPlan on the CPU: the oracle on known values, select's SKUs and
// preferences from caps alone, select-time refusals naming field and value (wrong dtype,
// mismatched shapes, bad ld, batch strides, epilogue misuse, alignment), and the run-time
// argument checks (null, misaligned, aliasing) called directly on fake pointers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gemm.hpp"
#include "gemm/lt_gemm.hpp"
#include "gemm_descriptors.hpp"
#include "select_refusals.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

using test_gemm::full_epilogue;
using test_gemm::mat;
using test_gemm::plain;

// ------------------------------------------------------------------------ reference
TEST(GemmReference, KnownValuesAndEpilogues) {
  auto d = plain(DType::kF64, 2, 2, 3);
  d.with_c = true;
  d.c = d.d;
  d.epilogue.bias = true;
  d.bias = TensorLayout::contiguous(DType::kF64, {2});
  HostTensor a(d.a.as_tensor()), b(d.b.as_tensor()), c(d.c.as_tensor()), bias(d.bias);
  const double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {1, 0, 0, 1, 1, 1}, cv[] = {1, 1, 1, 1}, biasv[] = {10, -100};
  for (int i = 0; i < 6; ++i) a.set(i, av[i]), b.set(i, bv[i]);
  for (int i = 0; i < 4; ++i) c.set(i, cv[i]);
  for (int i = 0; i < 2; ++i) bias.set(i, biasv[i]);
  // A B = [[4, 5], [10, 11]]; 2 A B + 3 C + bias = [[21, -87], [33, -75]]
  auto o = reference::gemm(d, a, b, &c, &bias, 2.0, 3.0, false);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->d, (std::vector<double>{21, -87, 33, -75}));
  d.epilogue.activation = GemmActivation::kRelu;
  o = reference::gemm(d, a, b, &c, &bias, 2.0, 3.0, false);
  EXPECT_EQ(o->d, (std::vector<double>{21, 0, 33, 0}));
  EXPECT_EQ(o->pre, (std::vector<double>{21, -87, 33, -75}));
  d.epilogue.activation = GemmActivation::kGeluTanh;
  o = reference::gemm(d, a, b, &c, &bias, 2.0, 3.0, false);
  EXPECT_NEAR(o->d[0], 21.0, 1e-12);
  EXPECT_NEAR(o->d[1], 0.0, 1e-12);
  // bias gradients: row sums of A, column sums of B
  auto g = plain(DType::kF64, 2, 2, 3);
  g.epilogue.bias_grad = GemmBiasGrad::kA;
  auto ga = reference::gemm(g, a, b, nullptr, nullptr, 1.0, 0.0, false);
  EXPECT_EQ(ga->bias_grad, (std::vector<double>{6, 15}));
  g.epilogue.bias_grad = GemmBiasGrad::kB;
  auto gb = reference::gemm(g, a, b, nullptr, nullptr, 1.0, 0.0, false);
  EXPECT_EQ(gb->bias_grad, (std::vector<double>{2, 2}));
}

// The bound grows with K and the unit roundoff: a naive f32 dot product (one rounding per
// step) stays inside, a 1% error does not (positive terms: no cancellation to hide behind).
TEST(GemmReference, BoundSeparatesRoundingFromBugs) {
  const std::int64_t K = 1000;
  auto d = plain(DType::kF32, 1, 1, K);
  HostTensor a(d.a.as_tensor()), b(d.b.as_tensor());
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.5, 1);
  for (std::int64_t k = 0; k < K; ++k) a.set(k, u(rng)), b.set(k, u(rng));
  auto o = reference::gemm(d, a, b, nullptr, nullptr, 1.0, 0.0, false).value();
  float naive = 0;
  for (std::int64_t k = 0; k < K; ++k) naive += static_cast<float>(a.get(k)) * static_cast<float>(b.get(k));
  EXPECT_LE(std::fabs(naive - o.d[0]), o.d_bound[0]);
  EXPECT_GT(std::fabs(o.d[0]) * 0.01, o.d_bound[0]);
}

// The backward oracle (reference::gemm_backward, which the GPU tests GemmGpu.Backward* check
// GemmBackwardPlan against) against central differences of the forward oracle: for
// L = sum_ij W_ij D_ij with D = alpha A B + bias, dL/dA = alpha W B^T (grad_a), dL/dB =
// alpha A^T W (grad_b) and dL/dbias_j = sum_i W_ij (grad_bias, the grad_b oracle's bias_grad;
// the plan takes the bias gradient with alpha = 1 only). f64, every order of A and B (the
// transposed reads), the gradients in the other order, alpha 1 and -1.5. L is linear in each
// input, so the differences are exact but for rounding.
TEST(GemmReference, BackwardMatchesFiniteDifferences) {
  constexpr auto R = MatrixOrder::kRowMajor;
  constexpr auto C = MatrixOrder::kColMajor;
  const DType t = DType::kF64;
  const std::int64_t M = 3, N = 4, K = 5;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double alpha : {1.0, -1.5})
    for (MatrixOrder oa : {R, C})
      for (MatrixOrder ob : {R, C}) {
        SCOPED_TRACE(std::string(oa == R ? "R" : "C") + (ob == R ? "R" : "C") + " alpha " + std::to_string(alpha));
        GemmDescriptor f = plain(t, M, N, K);
        f.a = mat(t, M, K, oa);
        f.b = mat(t, K, N, ob);
        f.epilogue.bias = true;
        f.bias = TensorLayout::contiguous(t, {N});
        GemmBackwardDescriptor bw;
        bw.a = f.a;
        bw.b = f.b;
        bw.grad_d = mat(t, M, N);
        bw.grad_a = mat(t, M, K, oa == R ? C : R);
        bw.grad_b = mat(t, K, N, ob == R ? C : R);
        bw.compute_grad_bias = alpha == 1.0;
        bw.grad_bias = TensorLayout::contiguous(t, {N});
        HostTensor a(f.a.as_tensor()), b(f.b.as_tensor()), bias(f.bias), w(bw.grad_d.as_tensor());
        for (HostTensor* h : {&a, &b, &bias, &w})
          for (std::int64_t i = 0; i < h->layout().numel(); ++i) h->set(i, u(rng));
        auto o = reference::gemm_backward(bw, a, b, w, alpha);
        ASSERT_TRUE(o.has_value()) << o.error().to_string();
        const auto loss = [&] {
          auto d = reference::gemm(f, a, b, nullptr, &bias, alpha, 0.0, false);
          double l = 0;
          for (std::int64_t i = 0; i < M * N; ++i) l += w.get(i) * d->d[static_cast<std::size_t>(i)];
          return l;
        };
        // d loss / d x_i by central differences, x_i perturbed in place
        const auto slope = [&](HostTensor& x, std::int64_t i) {
          const double v = x.get(i), h = 1e-3;
          x.set(i, v + h);
          const double up = loss();
          x.set(i, v - h);
          const double down = loss();
          x.set(i, v);
          return (up - down) / (2 * h);
        };
        for (std::int64_t i = 0; i < M * K; ++i) EXPECT_NEAR(o->grad_a.d[static_cast<std::size_t>(i)], slope(a, i), 1e-9) << "grad_a " << i;
        for (std::int64_t i = 0; i < K * N; ++i) EXPECT_NEAR(o->grad_b.d[static_cast<std::size_t>(i)], slope(b, i), 1e-9) << "grad_b " << i;
        if (bw.compute_grad_bias) {
          ASSERT_EQ(o->grad_b.bias_grad.size(), static_cast<std::size_t>(N));
          for (std::int64_t j = 0; j < N; ++j)
            EXPECT_NEAR(o->grad_b.bias_grad[static_cast<std::size_t>(j)], slope(bias, j), 1e-9) << "grad_bias " << j;
        }
      }
}

// The batched oracle with broadcast operands (stride 0: A, C and bias shared by every batch,
// as GemmGpu.BatchedBroadcastCBiasAndColumnMajorD runs them) equals the single-GEMM oracle
// of each batch's own operands, value and bound.
TEST(GemmReference, BatchedBroadcastEqualsPerBatchGemm) {
  const DType t = DType::kF32;
  const std::int64_t M = 3, N = 4, K = 5, P = 3;
  BatchedGemmDescriptor bd;
  bd.gemm = plain(t, M, N, K);
  bd.gemm.b = mat(t, K, N, MatrixOrder::kColMajor);
  bd.gemm.with_c = true;
  bd.gemm.c = bd.gemm.d;
  bd.gemm.epilogue.bias = true;
  bd.gemm.epilogue.activation = GemmActivation::kRelu;
  bd.gemm.bias = TensorLayout::contiguous(t, {N});
  bd.batch = P;
  bd.stride_a = 0;
  bd.stride_b = K * N + 2;
  bd.stride_c = 0;
  bd.stride_bias = 0;
  bd.stride_d = M * N;
  const GemmDescriptor& g = bd.gemm;
  HostTensor a(reference::batched_layout(g.a, P, bd.stride_a)), b(reference::batched_layout(g.b, P, bd.stride_b));
  HostTensor c(reference::batched_layout(g.c, P, bd.stride_c)), bias(reference::batched_layout(g.bias, P, bd.stride_bias));
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (HostTensor* h : {&a, &b, &c, &bias})
    for (std::int64_t i = 0; i < h->layout().numel(); ++i) h->set(i, static_cast<float>(u(rng)));
  auto all = reference::batched_gemm(bd, a, b, &c, &bias, 0.5, -2.0, false);
  ASSERT_TRUE(all.has_value()) << all.error().to_string();
  for (std::int64_t p = 0; p < P; ++p) {
    HostTensor a1(g.a.as_tensor()), b1(g.b.as_tensor()), c1(g.c.as_tensor()), bias1(g.bias);
    for (auto [one, many, n] : {std::tuple{&a1, &a, M * K}, std::tuple{&b1, &b, K * N}, std::tuple{&c1, &c, M * N},
                                std::tuple{&bias1, &bias, N}})
      for (std::int64_t i = 0; i < n; ++i) one->set(i, many->get(p * n + i));
    auto o = reference::gemm(g, a1, b1, &c1, &bias1, 0.5, -2.0, false);
    ASSERT_TRUE(o.has_value());
    for (std::int64_t i = 0; i < M * N; ++i) {
      const auto at = static_cast<std::size_t>(p * M * N + i);
      EXPECT_EQ(all->d[at], o->d[static_cast<std::size_t>(i)]) << "batch " << p << " element " << i;
      EXPECT_EQ(all->d_bound[at], o->d_bound[static_cast<std::size_t>(i)]) << "batch " << p << " element " << i;
    }
  }
}

// ------------------------------------------------------------------------ select
TEST(GemmPlanSelect, SkusPerDtypeAndTf32Preference) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    auto p = GemmPlan::select_for_caps(caps90(), plain(t, 64, 32, 16));
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "cublaslt");
    EXPECT_EQ(p->sku().backend, Backend::kCublasLt);
    EXPECT_FALSE(p->sku().precision.uses_tf32);
    EXPECT_EQ(p->sku().compute, t == DType::kF64 ? DType::kF64 : DType::kF32);
  }
  EXPECT_EQ(GemmPlan::select_for_caps(caps90(), plain(DType::kBF16, 64, 32, 16))->sku().name(),
            "gemm.fwd.cublaslt[bf16,f32].sm80+");
  // TF32: refused unless allowed; forced without allow_tf32 is an error naming the reason
  PlanPreference force;
  force.force_sku = "gemm.fwd.cublaslt_tf32*";
  auto no = GemmPlan::select_for_caps(caps90(), plain(DType::kF32, 64, 32, 16), force);
  ASSERT_FALSE(no.has_value());
  EXPECT_NE(no.error().message().find("tf32"), std::string::npos) << no.error().message();
  force.math.allow_tf32 = true;
  auto yes = GemmPlan::select_for_caps(caps90(), plain(DType::kF32, 64, 32, 16), force);
  ASSERT_TRUE(yes.has_value()) << yes.error().to_string();
  EXPECT_TRUE(yes->sku().precision.uses_tf32);
  auto bf = GemmPlan::select_for_caps(caps90(), plain(DType::kBF16, 64, 32, 16), force);
  ASSERT_FALSE(bf.has_value());
  EXPECT_NE(bf.error().message().find("tf32 applies to f32 only"), std::string::npos);
}

// gelu_erf and silu: not cuBLASLt epilogues, run by the composite cublaslt_act SKU
// (cuBLASLt with the bias epilogue, then our activation pass over D).
TEST(GemmReference, CompositeActivations) {
  for (GemmActivation act : {GemmActivation::kGeluErf, GemmActivation::kSilu}) {
    auto d = plain(DType::kF64, 1, 3, 1);
    d.epilogue.activation = act;
    d.epilogue.bias = true;
    d.bias = TensorLayout::contiguous(DType::kF64, {3});
    HostTensor a(d.a.as_tensor()), b(d.b.as_tensor()), bias(d.bias);
    a.set(0, 1.0);
    const double bv[] = {1.0, -2.0, 0.5}, biasv[] = {0.0, 0.5, -1.5};  // pre = 1, -1.5, -1
    for (int j = 0; j < 3; ++j) b.set(j, bv[j]), bias.set(j, biasv[j]);
    auto o = reference::gemm(d, a, b, nullptr, &bias, 1.0, 0.0, false);
    ASSERT_TRUE(o.has_value());
    // known values (Python math.erf / math.exp)
    const double want_gelu[] = {0.8413447460685429, -0.10021080190328713, -0.15865525393145707};
    const double want_silu[] = {0.7310585786300049, -0.2736382857095345, -0.2689414213699951};
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(o->d[j], act == GemmActivation::kGeluErf ? want_gelu[j] : want_silu[j], 1e-13) << j;
      EXPECT_GT(o->d_bound[j], 0.0);
      EXPECT_EQ(o->pre[j], bv[j] + biasv[j]);
    }
  }
}

TEST(GemmPlanSelect, CompositeActivationsSku) {
  for (GemmActivation act : {GemmActivation::kGeluErf, GemmActivation::kSilu}) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (bool bias : {false, true}) {
        auto d = plain(t, 64, 48, 32);
        d.epilogue.activation = act;
        d.epilogue.bias = bias;
        d.bias = TensorLayout::contiguous(t, {48});
        d.epilogue.aux = true;
        d.aux = mat(t, 64, 48, MatrixOrder::kRowMajor, 51);  // our aux: no multiple-of-8 rule
        auto p = GemmPlan::select_for_caps(caps90(), d);
        ASSERT_TRUE(p.has_value()) << p.error().to_string();
        EXPECT_EQ(p->sku().impl, "cublaslt_act") << d.to_string();
        EXPECT_EQ(p->sku().backend, Backend::kHand);
        auto reports = GemmPlan::candidates(caps90(), d);
        ASSERT_TRUE(reports.has_value());
        for (const auto& r : reports.value())
          if (r.sku.impl == "cublaslt") EXPECT_NE(r.rejection.find("is not a cuBLASLt epilogue"), std::string::npos);
      }
    }
    auto f64 = plain(DType::kF64, 8, 8, 8);
    f64.epilogue.activation = act;
    auto no = GemmPlan::select_for_caps(caps90(), f64);
    ASSERT_FALSE(no.has_value());
    EXPECT_NE(no.error().message().find("with f64"), std::string::npos) << no.error().message();
    auto col = plain(DType::kBF16, 8, 8, 8);  // a bias needs row-major D, as for cuBLASLt's own epilogues
    col.d = mat(DType::kBF16, 8, 8, MatrixOrder::kColMajor);
    col.epilogue.activation = act;
    EXPECT_TRUE(GemmPlan::select_for_caps(caps90(), col).has_value());
    col.epilogue.bias = true;
    col.bias = TensorLayout::contiguous(DType::kBF16, {8});
    EXPECT_FALSE(GemmPlan::select_for_caps(caps90(), col).has_value());
  }
  EXPECT_EQ(GemmEpilogue({GemmActivation::kSilu, true, true, GemmBiasGrad::kNone}).to_string(), "bias+silu+aux");
}

TEST(GemmPlanSelect, CublasLtLimitsAreRejectionsWithReasons) {
  auto f64 = plain(DType::kF64, 8, 8, 8);
  f64.epilogue.activation = GemmActivation::kRelu;
  auto p = GemmPlan::select_for_caps(caps90(), f64);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code(), Code::kNotSupported);
  EXPECT_NE(p.error().message().find("epilogue relu with f64"), std::string::npos) << p.error().message();
  auto colbias = plain(DType::kF16, 8, 8, 8);
  colbias.d = mat(DType::kF16, 8, 8, MatrixOrder::kColMajor);
  colbias.epilogue.bias = true;
  colbias.bias = TensorLayout::contiguous(DType::kF16, {8});
  p = GemmPlan::select_for_caps(caps90(), colbias);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message().find("epilogue bias with d column-major"), std::string::npos);
  auto k0 = plain(DType::kF32, 8, 8, 0);
  k0.a.ld = 1;  // an 8 x 0 row-major matrix still has ld >= 1
  p = GemmPlan::select_for_caps(caps90(), k0);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message().find("k = 0"), std::string::npos);
  // empty M / N: accepted, nothing to run, no workspace
  auto empty = GemmPlan::select_for_caps(caps90(), plain(DType::kF32, 0, 8, 8));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->workspace_size(), 0u);
}

// The transpose trick: row-major D is issued as D^T = B^T A^T.
TEST(GemmPlanSelect, ColumnMajorFrame) {
  auto d = plain(DType::kF16, 10, 20, 30);  // RRR
  auto p = gemm::lt_problem(d, false);
  EXPECT_TRUE(p.swap);
  EXPECT_EQ(p.m, 20);
  EXPECT_EQ(p.n, 10);
  EXPECT_EQ(p.k, 30);
  EXPECT_EQ(p.a.rows, 20u);  // B^T read as its row-major buffer: N x K column-major, no op
  EXPECT_FALSE(p.a.trans);
  EXPECT_FALSE(p.b.trans);
  d.b = mat(DType::kF16, 30, 20, MatrixOrder::kColMajor);  // RCR: B column-major -> op T
  p = gemm::lt_problem(d, false);
  EXPECT_TRUE(p.a.trans);
  EXPECT_EQ(p.a.rows, 30u);
  d.d = mat(DType::kF16, 10, 20, MatrixOrder::kColMajor);  // column-major D: no swap
  p = gemm::lt_problem(d, false);
  EXPECT_FALSE(p.swap);
  EXPECT_EQ(p.m, 10);
  EXPECT_TRUE(p.a.trans);  // row-major A is A^T in column-major terms
  EXPECT_FALSE(p.b.trans);
}

// The backward of a bf16 64 x 48 x 32 GEMM with column-major B, every gradient wanted.
GemmBackwardDescriptor backward_bf16() {
  GemmBackwardDescriptor d;
  d.a = mat(DType::kBF16, 64, 32);
  d.b = mat(DType::kBF16, 32, 48, MatrixOrder::kColMajor);
  d.grad_d = mat(DType::kBF16, 64, 48);
  d.grad_a = mat(DType::kBF16, 64, 32);
  d.grad_b = mat(DType::kBF16, 32, 48);
  d.compute_grad_bias = true;
  d.grad_bias = TensorLayout::contiguous(DType::kBF16, {48});
  return d;
}

// GemmBackwardPlan: one SKU from two GEMMs; the refusals name the field (and the GEMM).
TEST(GemmBackwardSelect, PairAndRefusals) {
  const GemmBackwardDescriptor d = backward_bf16();
  auto p = GemmBackwardPlan::select_for_caps(caps90(), d);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "gemm.bwd.cublaslt_pair[bf16,f32].sm80+");
  EXPECT_EQ(gemm_transposed(d.b).order, MatrixOrder::kRowMajor);
  EXPECT_EQ(gemm_transposed(d.b).rows, 48);
  auto refuse = [&](GemmBackwardDescriptor bad, const std::string& needle) {
    auto q = GemmBackwardPlan::select_for_caps(caps90(), bad);
    ASSERT_FALSE(q.has_value()) << bad.to_string();
    EXPECT_EQ(q.error().code(), Code::kInvalidArgument);
    EXPECT_NE(q.error().message().find(needle), std::string::npos) << q.error().message();
  };
  auto bad = d;
  bad.compute_grad_b = false;
  refuse(bad, "compute_grad_bias = true needs compute_grad_b");
  bad = d;
  bad.grad_d.cols = 47;
  refuse(bad, "grad_d is 64 x 47, needs 64 x 48");
  bad = d;
  bad.grad_a.dtype = DType::kF16;
  refuse(bad, "grad_a.dtype = f16 differs from a.dtype = bf16");
  bad = d;
  bad.grad_bias = TensorLayout::contiguous(DType::kBF16, {64});
  refuse(bad, "grad_bias = bf16[64] must be [48]");
  bad = d;
  bad.compute_grad_a = bad.compute_grad_b = bad.compute_grad_bias = false;
  refuse(bad, "nothing to compute");
}

// Select-time refusals: SelectRefusals.GemmPlan / BatchedGemmPlan in test_refusals.cpp.

// GemmBackwardPlan's select-time refusals, one field changed at a time: every message names
// the backward's own field (grad_d, grad_a, grad_b, grad_bias), not the role it plays in one
// of the two GEMMs.
TEST(GemmBackwardSelect, RefusalsNameFieldAndValue) {
  using D = GemmBackwardDescriptor;
  const D d = backward_bf16();
  const auto big = std::int64_t{1} << 61;
  test::expect_select_refusals<GemmBackwardPlan>(d, {
      {"dtype", [](D& x) { x.a.dtype = x.b.dtype = x.grad_d.dtype = x.grad_a.dtype = x.grad_b.dtype = x.grad_bias.dtype = DType::kI8; },
       "a.dtype = i8: gemm backward takes f64, f32, f16 or bf16"},
      {"dtype", [](D& x) { x.grad_a.dtype = DType::kF16; }, "grad_a.dtype = f16 differs from a.dtype = bf16"},
      {"dtype", [](D& x) { x.grad_b.dtype = DType::kF32; }, "grad_b.dtype = f32 differs from a.dtype = bf16"},
      {"dtype", [](D& x) { x.a.dtype = DType::kF16; }, "b.dtype = bf16 differs from a.dtype = f16"},
      {"dtype", [](D& x) { x.grad_d.dtype = DType::kF16; }, "grad_d.dtype = f16 differs from a.dtype = bf16"},
      {"dtype", [](D& x) { x.grad_bias.dtype = DType::kF16; }, "grad_bias.dtype = f16 differs from a.dtype = bf16"},
      {"shape", [](D& x) { x.b.rows = x.b.ld = 33; }, "b.rows = 33 differs from a.cols = 32 (K)"},
      {"shape", [](D& x) { x.grad_d.cols = 47; }, "grad_d is 64 x 47, needs 64 x 48 (a.rows x b.cols)"},
      {"shape", [](D& x) { x.grad_a.rows = 63; }, "grad_a is 63 x 32, needs 64 x 32 (a's shape)"},
      {"shape", [](D& x) { x.grad_b.cols = 47; }, "grad_b is 32 x 47, needs 32 x 48 (b's shape)"},
      {"shape", [](D& x) { x.grad_bias = TensorLayout::contiguous(DType::kBF16, {64}); }, "grad_bias = bf16[64] must be [48] (N, sums of grad_d's columns)"},
      {"stride", [](D& x) { x.a.ld = 16; }, "a.ld = 16 is below the minimum 32"},
      {"stride", [](D& x) { x.grad_d.ld = 40; }, "grad_d.ld = 40 is below the minimum 48"},
      {"stride", [](D& x) { x.grad_a.ld = 16; }, "grad_a.ld = 16 is below the minimum 32"},
      {"stride", [](D& x) { x.grad_b.ld = 40; }, "grad_b.ld = 40 is below the minimum 48"},
      {"stride", [](D& x) { x.grad_bias = TensorLayout::strided(DType::kBF16, {48}, {2}); },
       "grad_bias = bf16[48]{2} has stride 2 (cuBLASLt needs 1)"},
      {"stride", [big](D& x) { x.a.ld = big; }, "a = bf16[64,32]{2305843009213693952,1} is too large for 64-bit indexing"},
      {"stride", [big](D& x) { x.grad_d.ld = big; }, "grad_d = bf16[64,48]{2305843009213693952,1} is too large for 64-bit indexing"},
  });
}

// The descriptors whose GPU refusal tables (tests/gpu/test_gemm_gpu.cpp) carry workspace rows
// need workspace whatever cuBLASLt's heuristic picks: the bias-gradient column reduction's
// partials (bf16 bgrad_d under cublaslt_dact; f64 bgrad_b, which only cublaslt_bgrad_reduce
// takes). Its partials need one batch: batch 3 has no reduction workspace from caps.
TEST(GemmPlanSelect, RefusalTableWorkspaceFromCaps) {
  GemmDescriptor dact;
  dact.a = mat(DType::kBF16, 64, 96);
  dact.b = mat(DType::kBF16, 96, 128, MatrixOrder::kColMajor);
  dact.d = mat(DType::kBF16, 64, 128);
  dact.epilogue = GemmEpilogue::activation_backward(GemmActivation::kGeluTanh, true);
  dact.aux = mat(DType::kBF16, 64, 128);
  dact.bias_grad = TensorLayout::contiguous(DType::kBF16, {128});
  PlanPreference pref;
  pref.force_sku = "gemm.fwd.cublaslt_dact*";
  auto p = GemmPlan::select_for_caps(caps90(), dact, pref);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_GT(p->workspace_size(), 0u);
  BatchedGemmDescriptor bg;
  bg.gemm = plain(DType::kF64, 64, 48, 32);
  bg.gemm.epilogue.bias_grad = GemmBiasGrad::kB;
  bg.gemm.bias_grad = TensorLayout::contiguous(DType::kF64, {48});
  auto q = BatchedGemmPlan::select_for_caps(caps90(), bg);
  ASSERT_TRUE(q.has_value()) << q.error().to_string();
  EXPECT_EQ(q->sku().impl, "cublaslt_bgrad_reduce");
  EXPECT_GT(q->workspace_size(), 0u);
  bg.batch = 3;
  bg.stride_a = 64 * 32;
  bg.stride_b = 32 * 48;
  bg.stride_d = 64 * 48;
  bg.stride_bias = 48;
  auto q3 = BatchedGemmPlan::select_for_caps(caps90(), bg);
  ASSERT_TRUE(q3.has_value()) << q3.error().to_string();
  EXPECT_EQ(q3->workspace_size(), 0u);
  GemmBackwardDescriptor w;
  w.a = mat(DType::kF64, 64, 32);
  w.b = mat(DType::kF64, 32, 48);
  w.grad_d = mat(DType::kF64, 64, 48);
  w.grad_a = mat(DType::kF64, 64, 32);
  w.grad_b = mat(DType::kF64, 32, 48);
  w.compute_grad_bias = true;
  w.grad_bias = TensorLayout::contiguous(DType::kF64, {48});
  auto r = GemmBackwardPlan::select_for_caps(caps90(), w);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_GT(r->workspace_size(), 0u);
}

// ------------------------------------------------------------------------ run-time arg checks
TEST(GemmArgChecks, NullMisalignedAliasing) {
  BatchedGemmDescriptor b;
  b.gemm = full_epilogue();
  alignas(256) static unsigned char pool[1 << 20];
  unsigned char* base = pool;
  GemmArgs ok{.a = base, .b = base + 0x10000, .c = base + 0x20000, .d = base + 0x30000, .bias = base + 0x40000,
              .aux = base + 0x50000};
  auto check = [&](const GemmArgs& a) { return gemm::check_gemm_args(b, a); };
  const Code bad = Code::kInvalidArgument;
  test_gemm::expect_arg_refusals<GemmArgs>(
      check, ok,
      {
          {[](GemmArgs& a) { a.a = nullptr; }, bad, "args.a is null"},
          {[](GemmArgs& a) { a.aux = nullptr; }, bad, "args.aux is null"},
          {[](GemmArgs& a) { a.bias = nullptr; }, bad, "args.bias is null"},
          {[&](GemmArgs& a) { a.b = base + 0x10002; }, Code::kMisaligned, "is not aligned to b.alignment = 16 bytes"},
          {[&](GemmArgs& a) { a.d = base + 0x100; }, bad, "args.d overlaps args.a"},  // inside A
          {[&](GemmArgs& a) { a.aux = base + 0x30000 + 64; }, bad, "args.d and args.aux overlap"},  // inside D
          {[](GemmArgs& a) { a.c = static_cast<const unsigned char*>(a.d) + 32; }, bad, "args.d overlaps args.c"},  // shifted
      });
  GemmArgs x = ok;
  x.c = x.d;  // in place: same pointer and layout
  EXPECT_TRUE(gemm::check_gemm_args(b, x).is_ok());
  // a bias gradient is of the unscaled operand
  BatchedGemmDescriptor bg;
  bg.gemm = plain(DType::kF32, 8, 8, 8);
  bg.gemm.epilogue.bias_grad = GemmBiasGrad::kA;
  bg.gemm.bias_grad = TensorLayout::contiguous(DType::kF32, {8});
  GemmArgs y{.a = base, .b = base + 0x1000, .d = base + 0x2000, .bias_grad = base + 0x3000, .alpha = 2.0};
  Status st = gemm::check_gemm_args(bg, y);
  EXPECT_NE(st.message().find("args.alpha = 2.000000 with epilogue bgrad_a"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace baracuda
