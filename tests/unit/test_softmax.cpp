// SoftmaxPlan / SoftmaxBackwardPlan on the CPU: the oracle (known values, PyTorch's
// non-finite rows, the backward against central finite differences of the forward), the
// dispatch decision from caps (which SKU takes which row length / axis on sm80 and sm90),
// and select-time refusals naming the field and its value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/softmax.hpp"
#include "select_refusals.hpp"
#include "torch_values.hpp"

namespace baracuda::reference {
namespace {

TensorLayout c64(std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kF64, s); }

TEST(SoftmaxReference, KnownValues) {
  auto l = c64({3});
  HostTensor x(l);
  x.set(0, 1.0);
  x.set(1, 2.0);
  x.set(2, 3.0);
  auto y = softmax(SoftmaxDescriptor{l, l, -1}, x).value();
  const double s = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  EXPECT_NEAR(y.exact[0], std::exp(-2.0) / s, 1e-15);
  EXPECT_NEAR(y.exact[2], 1.0 / s, 1e-15);
  auto ly = softmax(SoftmaxDescriptor{l, l, 0, SoftmaxKind::kLogSoftmax}, x).value();
  EXPECT_NEAR(ly.exact[1], -1.0 - std::log(s), 1e-15);
}

// PyTorch: a row of -inf gives NaN (softmax and log_softmax); a NaN or +inf poisons the row;
// -inf elements of a finite row give 0 / -inf.
TEST(SoftmaxReference, NonFiniteRows) {
  const double inf = std::numeric_limits<double>::infinity();
  auto l = c64({4, 2});
  HostTensor x(l);
  const double v[8] = {-inf, -inf, 1.0, -inf, std::nan(""), 0.0, inf, 0.0};
  for (int i = 0; i < 8; ++i) x.set(i, v[i]);
  for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
    auto y = softmax(SoftmaxDescriptor{l, l, 1, kind}, x).value();
    EXPECT_TRUE(std::isnan(y.exact[0]) && std::isnan(y.exact[1]));
    EXPECT_EQ(y.exact[2], kind == SoftmaxKind::kSoftmax ? 1.0 : 0.0);
    EXPECT_EQ(y.exact[3], kind == SoftmaxKind::kSoftmax ? 0.0 : -inf);
    for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(y.exact[static_cast<std::size_t>(i)])) << i;
  }
}

// PyTorch parity of edge values (torch 2.15 CPU, session 36 audit): torch.softmax / log_softmax
// of a 1-D x and autograd's gradient for grad_y = g (the backward given the forward's y; {} =
// not checked).
TEST(SoftmaxReference, TorchEdgeValues) {
  using test::kInf;
  using test::kNaN;
  struct Case {
    bool log;
    std::vector<double> x, g, y, gx;
  };
  const Case cases[] = {
      {false, {-kInf, -kInf}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {false, {kInf, kInf}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {false, {kInf, 1}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {false, {kNaN, 1}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {false, {-kInf, 1}, {1, 2}, {0, 1}, {-0.0, 0}},
      {false, {1e+308, -1e+308}, {1, 2}, {1, 0}, {0, 0}},
      {false, {1000, 0}, {1, 2}, {1, 0}, {0, 0}},
      {false, {0, 0, 0}, {1, 2, 3}, {0.3333333333333333, 0.3333333333333333, 0.3333333333333333}, {}},
      {false, {1, 2}, {kInf, 0}, {0.2689414213699951, 0.7310585786300049}, {kNaN, -kInf}},
      {false, {1, 2}, {kNaN, 0}, {0.2689414213699951, 0.7310585786300049}, {kNaN, kNaN}},
      {false, {-kInf, 1}, {kInf, 0}, {0, 1}, {kNaN, kNaN}},
      {false, {-0.0}, {1}, {1}, {0}},
      {true, {-kInf, -kInf}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {true, {kInf, kInf}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {true, {kInf, 1}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {true, {kNaN, 1}, {1, 2}, {kNaN, kNaN}, {kNaN, kNaN}},
      {true, {-kInf, 1}, {1, 2}, {-kInf, 0}, {1, -1}},
      {true, {1e+308, -1e+308}, {1, 2}, {0, -kInf}, {-2, 2}},
      {true, {1000, 0}, {1, 2}, {0, -1000}, {-2, 2}},
      {true, {0, 0, 0}, {1, 2, 3}, {-1.0986122886681098, -1.0986122886681098, -1.0986122886681098}, {}},
      {true, {1, 2}, {kInf, 0}, {-1.3132616875182228, -0.3132616875182228}, {kNaN, -kInf}},
      {true, {1, 2}, {kNaN, 0}, {-1.3132616875182228, -0.3132616875182228}, {kNaN, kNaN}},
      {true, {-kInf, 1}, {kInf, 0}, {-kInf, 0}, {kNaN, -kInf}},
      {true, {-0.0}, {1}, {0}, {0}}
  };
  for (const auto& c : cases) {
    const auto l = c64({static_cast<std::int64_t>(c.x.size())});
    const auto kind = c.log ? SoftmaxKind::kLogSoftmax : SoftmaxKind::kSoftmax;
    const std::string what = std::string(c.log ? "log_softmax" : "softmax") + " x = " + test::list_string(c.x);
    HostTensor x(l), g(l), y(l);
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      x.set(static_cast<std::int64_t>(i), c.x[i]);
      g.set(static_cast<std::int64_t>(i), c.g[i]);
    }
    const auto r = softmax(SoftmaxDescriptor{l, l, 0, kind}, x).value();
    test::expect_torch_values(r.exact, c.y, what);
    if (c.gx.empty()) continue;  // [0, 0, 0]: torch's gradient and ours differ by rounding only (1e-16 at a 0)
    for (std::size_t i = 0; i < c.x.size(); ++i) y.set(static_cast<std::int64_t>(i), r.exact[i]);
    test::expect_torch_values(softmax_backward(SoftmaxBackwardDescriptor{l, l, l, 0, kind}, g, y).value().exact, c.gx,
                              what + " backward");
  }
}

// L = sum(g * f(x)) along axis 1 of [2, 5, 3]; dL/dx by central differences must match the
// backward given y = f(x).
TEST(SoftmaxReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-2, 2);
  auto l = c64({2, 5, 3});
  for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax})
    for (int axis : {1, -1, 0}) {
      HostTensor x(l), g(l), y(l);
      for (std::int64_t i = 0; i < 30; ++i) {
        x.set(i, u(rng));
        g.set(i, u(rng));
      }
      const SoftmaxDescriptor fd{l, l, axis, kind};
      auto loss = [&](const HostTensor& xx) {
        auto r = softmax(fd, xx).value();
        double s = 0;
        for (std::int64_t i = 0; i < 30; ++i) s += g.get(i) * r.exact[static_cast<std::size_t>(i)];
        return s;
      };
      auto fy = softmax(fd, x).value();
      for (std::int64_t i = 0; i < 30; ++i) y.set(i, fy.exact[static_cast<std::size_t>(i)]);
      auto gx = softmax_backward(SoftmaxBackwardDescriptor{l, l, l, axis, kind}, g, y).value();
      const double h = 1e-6;
      for (std::int64_t i = 0; i < 30; ++i) {
        HostTensor xp = x, xm = x;
        xp.set(i, x.get(i) + h);
        xm.set(i, x.get(i) - h);
        EXPECT_NEAR(gx.exact[static_cast<std::size_t>(i)], (loss(xp) - loss(xm)) / (2 * h), 1e-7)
            << softmax_kind_name(kind) << " axis " << axis << " i " << i;
      }
    }
}

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }

std::string impl_for(int sm, const SoftmaxDescriptor& d) {
  auto p = SoftmaxPlan::select_for_caps(caps(sm), d);
  return p ? p->sku().impl : "ERROR " + p.error().to_string();
}
std::string impl_for(int sm, const SoftmaxBackwardDescriptor& d) {
  auto p = SoftmaxBackwardPlan::select_for_caps(caps(sm), d);
  return p ? p->sku().impl : "ERROR " + p.error().to_string();
}

TEST(SoftmaxPlanSelect, RowLengthsAndAxes) {
  auto bf = [](std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kBF16, s); };
  auto fwd = [](TensorLayout l, int axis = -1) { return SoftmaxDescriptor{l, l, axis}; };
  auto bwd = [](TensorLayout l, int axis = -1) { return SoftmaxBackwardDescriptor{l, l, l, axis}; };
  EXPECT_EQ(impl_for(90, fwd(bf({4096, 1000}))), "warp_row_vec16");
  EXPECT_EQ(impl_for(90, fwd(bf({4096, 7}))), "warp_row");
  EXPECT_EQ(impl_for(90, fwd(bf({16384, 8192}))), "block_row_vec16");
  EXPECT_EQ(impl_for(90, bwd(bf({16384, 8192}))), "block_row_vec16");
  // rows past one block: bulk-copy rows over a cluster (tma_row), else cluster_row
  EXPECT_EQ(impl_for(90, fwd(bf({4096, 131072}))), "tma_row_vec16");
  EXPECT_EQ(impl_for(90, bwd(bf({4096, 131072}))), "tma_row_vec16");
  EXPECT_EQ(impl_for(90, fwd(bf({8, 262144}))), "tma_row_vec16");
  EXPECT_EQ(impl_for(90, bwd(bf({8, 262144}))), "tma_row_vec16");  // 16 x 512 threads, 3 stages of 64 KiB
  EXPECT_EQ(impl_for(90, fwd(TensorLayout::contiguous(DType::kF32, {64, 262144}))), "split_row_vec16");  // past tma_row and cluster_row
  EXPECT_EQ(impl_for(80, fwd(bf({4096, 131072}))), "split_row_vec16");  // no clusters before sm90
  EXPECT_EQ(impl_for(90, fwd(bf({4, 1 << 22}))), "split_row_vec16");
  EXPECT_EQ(impl_for(90, fwd(bf({4, 65537}))), "split_row");
  EXPECT_EQ(impl_for(90, fwd(bf({8, 64, 49}), 1)), "column");  // strided axis: no transpose
  EXPECT_EQ(impl_for(90, fwd(bf({64, 8, 1}), 1)), "warp_row_vec16");  // axis unit-stride after size-1 dims
  EXPECT_EQ(impl_for(90, fwd(TensorLayout::strided(DType::kBF16, {64, 1024}, {2048, 1}))), "warp_row_vec16");
  // split_row writes 16 bytes of statistics per (row, slice)
  auto split = SoftmaxPlan::select_for_caps(caps(80), fwd(bf({4096, 131072})));
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->workspace_size(), 4096u * 16u * 16u);
  EXPECT_EQ(split->sku().name(), "softmax.fwd.split_row_vec16[bf16,f32].sm80+");
  auto lsm = SoftmaxBackwardPlan::select_for_caps(caps(90), SoftmaxBackwardDescriptor{bf({4, 8}), bf({4, 8}), bf({4, 8}), -1, SoftmaxKind::kLogSoftmax});
  ASSERT_TRUE(lsm.has_value());
  EXPECT_EQ(lsm->sku().name(), "log_softmax.bwd.warp_row_vec16[bf16,f32].sm80+");
  // every candidate says why it refuses
  auto reports = SoftmaxPlan::candidates(caps(80), fwd(bf({8, 64, 49}), 1)).value();
  ASSERT_EQ(reports.size(), 9u);
  EXPECT_NE(reports[0].rejection.find("y stride along axis 1 = 49 (row kernels need 1)"), std::string::npos)
      << reports[0].rejection;
  EXPECT_NE(reports[4].rejection.find("bulk copies need sm90+"), std::string::npos) << reports[4].rejection;
  EXPECT_NE(reports[5].rejection.find("thread-block clusters need sm90+"), std::string::npos) << reports[5].rejection;
  EXPECT_TRUE(reports[8].rejection.empty());
}

// tma_row (forced; the default only past one block, where it is first): 16-bit and f32 rows of 4 KiB or
// more, unit-stride vectors, sm_90; f64, short rows and strided axes refused; no workspace.
TEST(SoftmaxPlanSelect, TmaRow) {
  auto fwd = [](TensorLayout l, int axis = -1) { return SoftmaxDescriptor{l, l, axis}; };
  auto bwd = [](TensorLayout l, int axis = -1) { return SoftmaxBackwardDescriptor{l, l, l, axis}; };
  PlanPreference tma;
  tma.force_sku = "*tma_row_vec16*";
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32})
    for (auto shape : {std::vector<std::int64_t>{16384, 8192}, {4096, 131072}, {300, 65536}, {9, 4096}, {6, 50, 4096}}) {
      const TensorLayout l = TensorLayout::contiguous(t, shape);
      auto f = SoftmaxPlan::select_for_caps(caps(90), fwd(l), tma);
      ASSERT_TRUE(f.has_value()) << l.to_string() << ": " << f.error().to_string();
      EXPECT_EQ(f->sku().impl, "tma_row_vec16");
      EXPECT_EQ(f->workspace_size(), 0u);
      auto b = SoftmaxBackwardPlan::select_for_caps(caps(90), bwd(l), tma);
      ASSERT_TRUE(b.has_value()) << l.to_string() << ": " << b.error().to_string();
      EXPECT_EQ(b->sku().name(), "softmax.bwd.tma_row_vec16[" + std::string(dtype_name(t)) + ",f32].sm90+");
    }
  auto bf = [](std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kBF16, s); };
  EXPECT_FALSE(SoftmaxPlan::select_for_caps(caps(80), fwd(bf({16384, 8192})), tma).has_value());
  EXPECT_FALSE(SoftmaxPlan::select_for_caps(caps(90), fwd(TensorLayout::contiguous(DType::kF64, {64, 8192})), tma).has_value());
  EXPECT_FALSE(SoftmaxPlan::select_for_caps(caps(90), fwd(bf({64, 1024})), tma).has_value());       // 2 KiB rows
  EXPECT_FALSE(SoftmaxPlan::select_for_caps(caps(90), fwd(bf({8, 8192, 4}), 1), tma).has_value());  // strided axis
  EXPECT_FALSE(SoftmaxPlan::select_for_caps(caps(90), fwd(bf({8, 8195})), tma).has_value());  // not whole vectors
  // rows of one block stay on block_row (as fast on the H100, session 12)
  EXPECT_EQ(impl_for(90, fwd(bf({16384, 8192}))), "block_row_vec16");
  EXPECT_EQ(impl_for(90, bwd(bf({4096, 131072}))), "tma_row_vec16");
}

}  // namespace
}  // namespace baracuda::reference

namespace baracuda {
namespace {

using test::Refusal;
using test::expect_select_refusals;

TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

TEST(SelectRefusals, SoftmaxPlan) {
  using D = SoftmaxDescriptor;
  const auto x = contig(DType::kF32, {2, 3, 4});
  expect_select_refusals<SoftmaxPlan>(
      D{x, x, 1},
      {{"dtype", [](D& d) { d.y = contig(DType::kF16, {2, 3, 4}); }, "y.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.x = d.y = contig(DType::kI32, {2, 3, 4}); }, "x.dtype = i32 is not supported by softmax"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {2, 3, 5}); }, "y = f32[2,3,5] does not have the shape of x = f32[2,3,4]"},
       {"axis", [](D& d) { d.axis = 3; }, "axis = 3 is out of range for x of rank 3 (needs -3..2)"},
       {"axis", [](D& d) { d.axis = -4; }, "axis = -4 is out of range for x of rank 3"},
       {"kind", [](D& d) { d.kind = static_cast<SoftmaxKind>(7); }, "kind = 7 is not a SoftmaxKind"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF32, {2, 3, 4}, {0, 4, 1}); },
        "y = f32[2,3,4]{0,4,1} maps several elements to one address"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF32, {2, 3, 4}, {std::int64_t{1} << 62, 4, 1}); },
        "x = f32[2,3,4]{4611686018427387904,4,1} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, SoftmaxBackwardPlan) {
  using D = SoftmaxBackwardDescriptor;
  const auto x = contig(DType::kBF16, {2, 3, 4});
  expect_select_refusals<SoftmaxBackwardPlan>(
      D{x, x, x, -1, SoftmaxKind::kLogSoftmax},
      {{"dtype", [](D& d) { d.y = contig(DType::kF16, {2, 3, 4}); }, "y.dtype = f16 differs from grad_y.dtype = bf16"},
       {"dtype", [](D& d) { d.grad_x = contig(DType::kF32, {2, 3, 4}); }, "grad_x.dtype = f32 differs from grad_y.dtype = bf16"},
       {"dtype", [](D& d) { d.grad_y = d.y = d.grad_x = contig(DType::kU8, {2, 3, 4}); },
        "grad_y.dtype = u8 is not supported by softmax_backward"},
       {"shape", [](D& d) { d.y = contig(DType::kBF16, {2, 4, 4}); }, "y = bf16[2,4,4] does not have the shape of grad_y = bf16[2,3,4]"},
       {"axis", [](D& d) { d.axis = 5; }, "axis = 5 is out of range for grad_y of rank 3"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kBF16, {2, 3, 4}, {12, 0, 1}); },
        "grad_x = bf16[2,3,4]{12,0,1} maps several elements to one address"},
       {"shape", [](D& d) { d.grad_x = contig(DType::kBF16, {2, 3}); }, "grad_x = bf16[2,3] does not have the shape of grad_y = bf16[2,3,4]"},
       {"axis", [](D& d) { d.axis = -4; }, "axis = -4 is out of range for grad_y of rank 3 (needs -3..2)"},
       {"kind", [](D& d) { d.kind = static_cast<SoftmaxKind>(3); }, "kind = 3 is not a SoftmaxKind"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kBF16, {2, 3, 4}, {std::int64_t{1} << 62, 4, 1}); },
        "y = bf16[2,3,4]{4611686018427387904,4,1} is too large for 64-bit indexing"}});
}

}  // namespace
}  // namespace baracuda
