// GPU tests of LayerNormPlan / RMSNormPlan (with and without weight / bias, the fused
// residual add, saved statistics) and their backward (grad_x, grad_weight, grad_bias)
// against reference::norm_forward / norm_backward: every dtype, normalized sizes 1, 7, 1000,
// 4096, 65536, 131072, 262144 and 200003 (split rows), several normalized dims (and all of
// them: one row), many rows, high-mean low-variance rows,
// strided kept dims, in place; LayerNorm with only a weight or only a bias, save_stats off
// (statistics unwritten), a strided residual and residual_out over residual in place; every
// accepting SKU forced, poisoned outputs, guard bytes;
// determinism of the parameter gradients (two runs, identical bits); run-time refusals.
// Filter: --gtest_filter='*Norm*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "baracuda/reference/normalization.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct NormCase {
  std::string name;
  TensorLayout x;
  int nr = 1;
  double offset = 0;  // added to x: high mean, low variance rows
  bool in_place = false;
};

std::vector<NormCase> norm_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  return {
      {"n1", c({16, 1})},
      {"n7", c({33, 7})},
      {"n1000", c({17, 1000})},
      {"n4096", c({9, 4096})},
      {"n65536", c({3, 65536})},
      {"n131072", c({2, 131072})},
      {"n262144", c({2, 262144})},      // split_row (past a cluster's registers)
      {"n_long_odd", c({3, 200003})},   // split_row, scalar loads
      {"n_odd", c({5, 3001})},
      {"two_dims", c({6, 12, 40}), 2},
      {"all_dims", c({8, 512}), 2},  // normalized over every dim: one row
      {"many_rows", c({20000, 64})},
      {"many_rows_odd", c({9000, 33})},
      {"high_mean", c({64, 768}), 1, 100.0},
      {"padded_rows", TensorLayout::strided(t, {64, 256}, {384, 1})},
      {"permuted_kept", TensorLayout::strided(t, {8, 16, 128}, {128, 1024, 1})},
      {"in_place", c({31, 2048}), 1, 0.0, true},
      {"empty_rows", c({0, 64})},
      // tma_row: more rows than its persistent blocks hold in flight (every stage refilled
      // several times), and padded rows
      {"tma_stage_wrap", c({2400, 8192})},
      {"tma_padded_rows", TensorLayout::strided(t, {40, 4096}, {4608, 1})},
      {"tma_cluster_wrap", c({300, 65536})},  // rows split over clusters, stages refilled
      // tma_row buckets with a partly used last vector column: k = 2 (bf16 / f16 513
      // vectors: 288 threads; f32 1026: k = 4) and k = 4 (bf16 1537 vectors, f32 a cluster of 2)
      {"tma_ragged_k2", c({300, 4104})},
      {"tma_ragged_k4", c({64, 12296})},
      {"tma_strided_kept", TensorLayout::strided(t, {6, 50, 4096}, {60 * 4608, 4608, 1})},  // 2 kept dims
      {"tma_high_mean", c({64, 8192}), 1, 100.0},
  };
}

class NormGpu : public ::testing::TestWithParam<DType> {};

// The normalized shape of a case (the layout of weight / bias and their gradients).
TensorLayout normalized_of(const NormCase& c, DType t) {
  std::vector<std::int64_t> ns(c.x.shape_span().end() - c.nr, c.x.shape_span().end());
  return TensorLayout::contiguous(t, ns);
}
void poison_all(std::initializer_list<DeviceTensor*> ts) {
  for (DeviceTensor* d : ts) d->poison(0xFF, test_stream());
}
// Downloads `dev` into `host` and checks every element against the reference `want`.
template <class Want>
void expect_output(DeviceTensor& dev, HostTensor& host, const Want& want, const std::string& what) {
  ASSERT_TRUE(dev.download(host, test_stream()));
  EXPECT_TRUE(check_close(host, want, what));
}

// The forward's less common options: no saved statistics (mean / rstd then stay poisoned:
// nothing is written), a strided residual / residual_out (kept dims padded), residual_out
// written over residual in place.
struct FwdOpts {
  bool save_stats = true;
  bool strided_residual = false;
  bool residual_out_over_residual = false;
  bool strided_y = false;  // y with padded kept dims
};
// l with 8 elements of padding after each row of its `nr` normalized dims (kept dims strided).
TensorLayout padded_rows(const TensorLayout& l, int nr) {
  std::vector<std::int64_t> shape(l.shape_span().begin(), l.shape_span().end()), strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
    if (i + static_cast<std::size_t>(nr) == shape.size()) s += 8;
  }
  return TensorLayout::strided(l.dtype, shape, strides);
}

template <class PlanT, class Desc>
void run_forward_case(const NormCase& c, Desc d, bool weight, bool bias, bool residual, DType t, const FwdOpts& o = {}) {
  d.x = c.x;
  d.y = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
  if (o.strided_y && !c.in_place) d.y = padded_rows(d.y, c.nr);
  d.normalized_rank = c.nr;
  d.has_weight = weight;
  d.has_bias = bias;
  d.add_residual = residual;
  d.save_stats = o.save_stats;
  const TensorLayout nl = normalized_of(c, t);
  d.weight = d.bias = nl;
  d.residual = d.residual_out = TensorLayout::contiguous(t, c.x.shape_span());
  if (o.strided_residual) d.residual = d.residual_out = padded_rows(d.residual, c.nr);
  HostTensor hx(c.x), hr(d.residual), hw(nl), hb(nl), hy(d.y), hro(d.residual_out);
  fill_random(hx, c.offset - 3, c.offset + 3);
  fill_random(hr, -1, 1);
  fill_random(hw, 0.5, 1.5);
  fill_random(hb, -1, 1);
  auto want = reference::norm_forward(d, hx, residual ? &hr : nullptr, &hw, &hb);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const std::int64_t rows = static_cast<std::int64_t>(want->rstd.exact.size());
  const DType st = t == DType::kF64 ? DType::kF64 : DType::kF32;
  const TensorLayout sl = TensorLayout::contiguous(st, {rows});
  HostTensor hmean(sl), hrstd(sl);
  DeviceTensor dx(hx, test_stream()), dr(hr, test_stream()), dw(hw, test_stream()), db(hb, test_stream()),
      dy(hy, test_stream()), dro(hro, test_stream()), dmean(hmean, test_stream()), drstd(hrstd, test_stream());
  void* y_ptr = c.in_place ? dx.data() : dy.data();
  void* ro_ptr = o.residual_out_over_residual ? dr.data() : dro.data();
  DeviceTensor& ro_dev = o.residual_out_over_residual ? dr : dro;
  const bool layer = d.kind == NormKind::kLayerNorm;
  for_each_sku<PlanT>(
      d,
      [&] {
        dx.upload(hx, test_stream());
        if (o.residual_out_over_residual) dr.upload(hr, test_stream());
        poison_all({&dy, &dro, &dmean, &drstd});
      },
      [&](const PlanT& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     NormArgs{.x = dx.data(), .residual = dr.data(), .weight = dw.data(), .bias = db.data(),
                              .y = y_ptr, .residual_out = ro_ptr, .mean = dmean.data(), .rstd = drstd.data()});
      },
      [&](const std::string& sku) {
        expect_output((c.in_place ? dx : dy), hy, want->y, sku + " y " + d.to_string());
        if (residual) {
          expect_output(ro_dev, hro, want->residual_out, sku + " residual_out " + d.to_string());
        }
        if (!o.save_stats) {  // no statistics asked for: both buffers keep their poison
          for (DeviceTensor* dev : {&dmean, &drstd}) {
            HostTensor h(sl);
            ASSERT_TRUE(dev->download(h, test_stream()));
            const auto* b = reinterpret_cast<const unsigned char*>(h.storage());
            for (std::size_t i = 0; i < h.storage_bytes(); ++i)
              ASSERT_EQ(b[i], 0xFF) << sku << ": save_stats = false but a statistic was written " << d.to_string();
          }
          return;
        }
        expect_output(drstd, hrstd, want->rstd, sku + " rstd " + d.to_string());
        if (layer) {
          expect_output(dmean, hmean, want->mean, sku + " mean " + d.to_string());
        }
      });
}

TEST_P(NormGpu, LayerNormForward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : norm_cases(t))
    for (int variant : {0, 1, 2}) {  // affine, no affine, affine + residual
      SCOPED_TRACE(c.name + " variant " + std::to_string(variant));
      run_forward_case<LayerNormPlan>(c, LayerNormDescriptor{}, variant != 1, variant != 1, variant == 2, t);
    }
}

TEST_P(NormGpu, RMSNormForward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : norm_cases(t))
    for (int variant : {0, 1, 2}) {  // weight, none, weight + residual
      SCOPED_TRACE(c.name + " variant " + std::to_string(variant));
      run_forward_case<RMSNormPlan>(c, RMSNormDescriptor{}, variant != 1, false, variant == 2, t);
    }
}

// strided: grad_x and x with padded kept dims (else dense, or grad_x over grad_y in place)
template <class PlanT, class Desc>
void run_backward_case(const NormCase& c, Desc d, bool weight, bool bias, DType t, bool strided = false) {
  const bool layer = d.kind == NormKind::kLayerNorm;
  d.grad_y = c.x;
  d.x = TensorLayout::contiguous(t, c.x.shape_span());
  d.grad_x = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
  if (strided && !c.in_place) d.x = d.grad_x = padded_rows(d.x, c.nr);
  d.normalized_rank = c.nr;
  d.has_weight = weight;
  d.has_bias = bias;
  const TensorLayout nl = normalized_of(c, t);
  d.weight = d.grad_weight = d.grad_bias = nl;
  HostTensor hg(d.grad_y), hx(d.x), hw(nl), hgx(d.grad_x), hgw(nl), hgb(nl);
  fill_random(hg, -1, 1);
  fill_random(hx, c.offset - 3, c.offset + 3);
  fill_random(hw, 0.5, 1.5);
  // the saved statistics: the forward's, rounded to the stats dtype as the forward stores them
  NormDescriptor fd;
  fd.kind = d.kind;
  fd.x = fd.y = d.x;
  fd.normalized_rank = c.nr;
  fd.has_weight = fd.has_bias = false;
  auto f = reference::norm_forward(fd, hx, nullptr, nullptr, nullptr);
  ASSERT_TRUE(f.has_value());
  const DType st = t == DType::kF64 ? DType::kF64 : DType::kF32;
  const std::int64_t rows = static_cast<std::int64_t>(f->rstd.exact.size());
  const TensorLayout sl = TensorLayout::contiguous(st, {rows});
  HostTensor hmean(sl), hrstd(sl);
  std::vector<double> mean(static_cast<std::size_t>(rows)), rstd(mean.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    hmean.set(r, f->mean.exact[static_cast<std::size_t>(r)]);
    hrstd.set(r, f->rstd.exact[static_cast<std::size_t>(r)]);
    mean[static_cast<std::size_t>(r)] = hmean.get(r);
    rstd[static_cast<std::size_t>(r)] = hrstd.get(r);
  }
  auto want = reference::norm_backward(d, hg, hx, &hw, mean, rstd);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  DeviceTensor dg(hg, test_stream()), dx(hx, test_stream()), dw(hw, test_stream()), dmean(hmean, test_stream()),
      drstd(hrstd, test_stream()), dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  void* gx_ptr = c.in_place ? dg.data() : dgx.data();
  auto args = [&] {
    return NormBackwardArgs{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .mean = dmean.data(),
                            .rstd = drstd.data(), .grad_x = gx_ptr, .grad_weight = dgw.data(), .grad_bias = dgb.data()};
  };
  for_each_sku<PlanT>(
      d,
      [&] {
        dg.upload(hg, test_stream());
        poison_all({&dgx, &dgw, &dgb});
      },
      [&](const PlanT& p, Workspace ws) { return p.run(test_stream(), ws, args()); },
      [&](const std::string& sku) {
        expect_output((c.in_place ? dg : dgx), hgx, want->grad_x, sku + " grad_x " + d.to_string());
        if (weight) {
          expect_output(dgw, hgw, want->grad_weight, sku + " grad_weight " + d.to_string());
        }
        if (bias) {
          expect_output(dgb, hgb, want->grad_bias, sku + " grad_bias " + d.to_string());
        }
      });
  if (weight && !c.in_place) {  // determinism: the default SKU twice gives the same bits
    auto plan = PlanT::select(test_stream(), d);
    ASSERT_TRUE(plan.has_value());
    HostTensor runs[2] = {HostTensor(nl), HostTensor(nl)};
    for (int r = 0; r < 2; ++r) {
      dgw.poison(r == 0 ? 0x00 : 0xFF, test_stream());
      ASSERT_TRUE(plan->run(test_stream(), test_workspace(plan->workspace_size()), args()));
      ASSERT_TRUE(dgw.download(runs[r], test_stream()));
    }
    EXPECT_EQ(std::memcmp(runs[0].storage(), runs[1].storage(), runs[0].storage_bytes()), 0)
        << plan->sku().name() << ": grad_weight not deterministic";
  }
}

TEST_P(NormGpu, LayerNormBackward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : norm_cases(t))
    for (int variant : {0, 1}) {
      SCOPED_TRACE(c.name + " variant " + std::to_string(variant));
      run_backward_case<LayerNormBackwardPlan>(c, LayerNormBackwardDescriptor{}, variant == 0, variant == 0, t);
    }
}

TEST_P(NormGpu, RMSNormBackward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : norm_cases(t))
    for (int variant : {0, 1}) {
      SCOPED_TRACE(c.name + " variant " + std::to_string(variant));
      run_backward_case<RMSNormBackwardPlan>(c, RMSNormBackwardDescriptor{}, variant == 0, false, t);
    }
}

// The options the variants above leave out, on one case per SKU family and layout class:
// LayerNorm with a weight and no bias and with a bias and no weight (forward and backward),
// save_stats = false (LayerNorm, RMSNorm: y checked, mean / rstd must stay unwritten), the
// fused residual add with a strided residual / residual_out and with residual_out written
// over residual in place, strided y (forward) and strided grad_x and x (backward): kept dims
// padded. Every SKU.
TEST_P(NormGpu, OptionalOperands) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const std::vector<std::string> names = {"n1",         "n7",          "n1000",         "n4096",       "n65536",
                                          "n262144",    "n_odd",       "two_dims",      "many_rows_odd", "padded_rows",
                                          "in_place",   "tma_padded_rows", "tma_ragged_k4"};
  for (const auto& c : norm_cases(t)) {
    if (std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    SCOPED_TRACE(c.name);
    for (bool weight : {true, false}) {  // LayerNorm with exactly one of weight / bias
      SCOPED_TRACE(weight ? "weight, no bias" : "bias, no weight");
      run_forward_case<LayerNormPlan>(c, LayerNormDescriptor{}, weight, !weight, false, t);
      run_backward_case<LayerNormBackwardPlan>(c, LayerNormBackwardDescriptor{}, weight, !weight, t);
    }
    {
      SCOPED_TRACE("save_stats = false");
      run_forward_case<LayerNormPlan>(c, LayerNormDescriptor{}, true, true, false, t, {.save_stats = false});
      run_forward_case<RMSNormPlan>(c, RMSNormDescriptor{}, true, false, true, t, {.save_stats = false});
    }
    {
      SCOPED_TRACE("strided residual");
      run_forward_case<LayerNormPlan>(c, LayerNormDescriptor{}, true, true, true, t, {.strided_residual = true});
      run_forward_case<RMSNormPlan>(c, RMSNormDescriptor{}, true, false, true, t, {.strided_residual = true});
    }
    {
      SCOPED_TRACE("strided y / grad_x and x");
      run_forward_case<LayerNormPlan>(c, LayerNormDescriptor{}, true, true, false, t, {.strided_y = true});
      run_forward_case<RMSNormPlan>(c, RMSNormDescriptor{}, true, false, true, t, {.strided_residual = true, .strided_y = true});
      run_backward_case<LayerNormBackwardPlan>(c, LayerNormBackwardDescriptor{}, true, true, t, true);
      run_backward_case<RMSNormBackwardPlan>(c, RMSNormBackwardDescriptor{}, true, false, t, true);
    }
    {
      SCOPED_TRACE("residual_out over residual");
      run_forward_case<RMSNormPlan>(c, RMSNormDescriptor{}, true, false, true, t, {.residual_out_over_residual = true});
      run_forward_case<LayerNormPlan>(c, LayerNormDescriptor{}, false, false, true, t,
                                      {.strided_residual = true, .residual_out_over_residual = true});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, NormGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Run-time refusals: null, misaligned, aliasing, workspace; outputs untouched.
TEST(NormGpuRefusals, LayerNorm) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kF32, {8, 256});
  const auto w = TensorLayout::contiguous(DType::kF32, {256});
  const auto sl = TensorLayout::contiguous(DType::kF32, {8});
  LayerNormDescriptor fd;
  fd.x = fd.y = x;
  fd.weight = fd.bias = w;
  LayerNormBackwardDescriptor bd;
  bd.grad_y = bd.x = bd.grad_x = x;
  bd.weight = bd.grad_weight = bd.grad_bias = w;
  auto fwd = LayerNormPlan::select(test_stream(), fd);
  auto bwd = LayerNormBackwardPlan::select(test_stream(), bd);
  ASSERT_TRUE(fwd && bwd);
  const std::size_t need = bwd->workspace_size();
  ASSERT_GT(need, 0u);
  HostTensor hx(x), hw(w), hs(sl);
  fill_random(hx, -2, 2);
  fill_random(hw, 0.5, 1.5);
  fill_random(hs, 0.5, 1.5);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream()), dw(hw, test_stream()), dm(hs, test_stream()),
      dr(hs, test_stream());
  Untouched y(x), mean(sl), rstd(sl), gx(x), gw(w), gb(w);
  const Stream& s = test_stream();
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const NormArgs fa{.x = dx.data(), .weight = dw.data(), .bias = dw.data(), .y = y.data(), .mean = mean.data(), .rstd = rstd.data()};
  const NormBackwardArgs ba{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .mean = dm.data(), .rstd = dr.data(),
                            .grad_x = gx.data(), .grad_weight = gw.data(), .grad_bias = gb.data()};
  void* x_row1 = static_cast<float*>(dx.data()) + 256;
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w2) { return bwd->run(s, w2, ba); }, ws, need);
  rows.insert(rows.end(), {
      {"forward null weight", [&] { auto a = fa; a.weight = nullptr; return fwd->run(s, {}, a); }, kBad, "args.weight is null"},
      {"forward null rstd", [&] { auto a = fa; a.rstd = nullptr; return fwd->run(s, {}, a); }, kBad, "args.rstd is null"},
      {"forward misaligned x", [&] { auto a = fa; a.x = static_cast<const char*>(dx.data()) + 4; return fwd->run(s, {}, a); },
       kMis, "not aligned to x.alignment = 16"},
      {"forward y over x shifted", [&] { auto a = fa; a.y = x_row1; return fwd->run(s, {}, a); }, kBad, "args.y overlaps args.x"},
      {"forward rstd inside y", [&] { auto a = fa; a.rstd = y.data(); return fwd->run(s, {}, a); }, kBad,
       "args.y and args.rstd overlap"},
      {"backward null mean", [&] { auto a = ba; a.mean = nullptr; return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.mean is null"},
      {"backward misaligned grad_weight", [&] {
         auto a = ba;
         a.grad_weight = static_cast<char*>(gw.data()) + 4;
         return bwd->run(s, {ws.data, need}, a);
       }, kMis, "not aligned to grad_weight.alignment = 16"},
      {"backward grad_x over x shifted", [&] { auto a = ba; a.grad_x = x_row1; return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.grad_x overlaps args."},
      {"backward grad_bias = grad_weight", [&] { auto a = ba; a.grad_bias = gw.data(); return bwd->run(s, {ws.data, need}, a); },
       kBad, "args.grad_weight and args.grad_bias overlap"},
  });
  expect_run_refusals(rows, {&y, &mean, &rstd, &gx, &gw, &gb});
}

// RMSNorm backward on split_row (4 x 131072 bf16, forced): a workspace one byte short (or null)
// and unsafe aliasing are refused before the launch; outputs untouched.
TEST(NormGpuRefusals, RMSNormBackwardSplit) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kBF16, {4, 131072});
  const auto w = TensorLayout::contiguous(DType::kBF16, {131072});
  const auto sl = TensorLayout::contiguous(DType::kF32, {4});
  RMSNormBackwardDescriptor bd;
  bd.grad_y = bd.x = bd.grad_x = x;
  bd.weight = bd.grad_weight = w;
  PlanPreference split;
  split.force_sku = "*split_row*";  // sm_90 takes tma_lean by default
  auto bwd = RMSNormBackwardPlan::select(test_stream(), bd, split);
  ASSERT_TRUE(bwd.has_value()) << bwd.error().to_string();
  EXPECT_NE(bwd->sku().impl.find("split_row"), std::string::npos) << bwd->sku().name();
  const std::size_t need = bwd->workspace_size();
  HostTensor hx(x), hw(w), hs(sl);
  fill_random(hx, -2, 2);
  fill_random(hw, 0.5, 1.5);
  fill_random(hs, 0.5, 1.5);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream()), dw(hw, test_stream()), dr(hs, test_stream());
  Untouched gx(x), gw(w);
  const Stream& s = test_stream();
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const NormBackwardArgs ba{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .rstd = dr.data(),
                            .grad_x = gx.data(), .grad_weight = gw.data()};
  void* x_row1 = static_cast<char*>(dx.data()) + 131072 * 2;
  const Code kBad = Code::kInvalidArgument;
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w2) { return bwd->run(s, w2, ba); }, ws, need);
  rows.insert(rows.end(), {
      {"grad_x over x shifted", [&] { auto a = ba; a.grad_x = x_row1; return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.grad_x overlaps args.x"},
      {"grad_weight over weight shifted", [&] {
         auto a = ba;
         a.grad_weight = static_cast<char*>(dw.data()) + 16;
         return bwd->run(s, {ws.data, need}, a);
       }, kBad, "args.grad_weight overlaps args.weight"},
      {"null rstd", [&] { auto a = ba; a.rstd = nullptr; return bwd->run(s, {ws.data, need}, a); }, kBad, "args.rstd is null"},
      {"null grad_weight", [&] { auto a = ba; a.grad_weight = nullptr; return bwd->run(s, {ws.data, need}, a); }, kBad,
       "args.grad_weight is null"},
      {"misaligned x", [&] { auto a = ba; a.x = static_cast<const char*>(a.x) + 2; return bwd->run(s, {ws.data, need}, a); },
       Code::kMisaligned, "not aligned to x.alignment = 16"},
      {"misaligned rstd", [&] { auto a = ba; a.rstd = static_cast<const char*>(a.rstd) + 2; return bwd->run(s, {ws.data, need}, a); },
       Code::kMisaligned, "not aligned to rstd.alignment = 4"},
  });
  expect_run_refusals(rows, {&gx, &gw});
}

// RMSNorm forward with the fused residual add (8 x 256 f32, the default SKU): null,
// misaligned and unsafely aliased pointers of every kind of operand (x, residual, weight;
// y, residual_out, rstd) are refused before the launch; every output untouched.
TEST(NormGpuRefusals, RMSNormResidualAdd) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kF32, {8, 256});
  const auto w = TensorLayout::contiguous(DType::kF32, {256});
  const auto sl = TensorLayout::contiguous(DType::kF32, {8});
  RMSNormDescriptor fd;
  fd.x = fd.y = fd.residual = fd.residual_out = x;
  fd.weight = w;
  fd.add_residual = true;
  auto fwd = RMSNormPlan::select(test_stream(), fd);
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  HostTensor hx(x), hw(w);
  fill_random(hx, -2, 2);
  fill_random(hw, 0.5, 1.5);
  DeviceTensor dx(hx, test_stream()), dr(hx, test_stream()), dw(hw, test_stream());
  Untouched y(x), ro(x), rstd(sl);
  const Stream& s = test_stream();
  const Workspace ws = test_workspace(fwd->workspace_size());
  const NormArgs fa{.x = dx.data(), .residual = dr.data(), .weight = dw.data(), .y = y.data(), .residual_out = ro.data(),
                    .rstd = rstd.data()};
  void* x_row1 = static_cast<float*>(dx.data()) + 256;
  void* r_shift = static_cast<float*>(dr.data()) + 4;  // 16 bytes: aligned, overlapping
  auto mis = [](const void* p, int by) { return const_cast<char*>(static_cast<const char*>(p) + by); };
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const std::vector<RunRefusal> rows = {
      {"null x", [&] { auto a = fa; a.x = nullptr; return fwd->run(s, ws, a); }, kBad, "args.x is null"},
      {"null residual", [&] { auto a = fa; a.residual = nullptr; return fwd->run(s, ws, a); }, kBad, "args.residual is null"},
      {"null residual_out", [&] { auto a = fa; a.residual_out = nullptr; return fwd->run(s, ws, a); }, kBad,
       "args.residual_out is null"},
      {"null y", [&] { auto a = fa; a.y = nullptr; return fwd->run(s, ws, a); }, kBad, "args.y is null"},
      {"null weight", [&] { auto a = fa; a.weight = nullptr; return fwd->run(s, ws, a); }, kBad, "args.weight is null"},
      {"misaligned residual", [&] { auto a = fa; a.residual = mis(a.residual, 4); return fwd->run(s, ws, a); }, kMis,
       "not aligned to residual.alignment = 16"},
      {"misaligned residual_out", [&] { auto a = fa; a.residual_out = mis(a.residual_out, 4); return fwd->run(s, ws, a); },
       kMis, "not aligned to residual_out.alignment = 16"},
      {"misaligned weight", [&] { auto a = fa; a.weight = mis(a.weight, 8); return fwd->run(s, ws, a); }, kMis,
       "not aligned to weight.alignment = 16"},
      {"misaligned rstd", [&] { auto a = fa; a.rstd = mis(a.rstd, 2); return fwd->run(s, ws, a); }, kMis,
       "not aligned to rstd.alignment = 4"},
      {"residual_out over x shifted", [&] { auto a = fa; a.residual_out = x_row1; return fwd->run(s, ws, a); }, kBad,
       "args.residual_out overlaps args.x without the identical layout"},
      {"y over residual shifted", [&] { auto a = fa; a.y = r_shift; return fwd->run(s, ws, a); }, kBad,
       "args.y overlaps args.residual without the identical layout"},
      {"residual_out = y", [&] { auto a = fa; a.residual_out = a.y; return fwd->run(s, ws, a); }, kBad,
       "args.y and args.residual_out overlap"},
      {"rstd inside residual_out", [&] { auto a = fa; a.rstd = ro.data(); return fwd->run(s, ws, a); }, kBad,
       "args.residual_out and args.rstd overlap"},
  };
  expect_run_refusals(rows, {&y, &ro, &rstd});
}

// The forward's workspace (split_row forced, 4 x 131072 bf16: per-slice Welford statistics):
// LayerNorm and RMSNorm with the residual add refuse a workspace one byte short, a null and a
// misaligned one before the launch; every output untouched.
TEST(NormGpuRefusals, ForwardSplitRowWorkspace) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kBF16, {4, 131072});
  const auto w = TensorLayout::contiguous(DType::kBF16, {131072});
  const auto sl = TensorLayout::contiguous(DType::kF32, {4});
  PlanPreference split;
  split.force_sku = "*split_row_vec16*";
  LayerNormDescriptor ld;
  ld.x = ld.y = x;
  ld.weight = ld.bias = w;
  RMSNormDescriptor rd;
  rd.x = rd.y = rd.residual = rd.residual_out = x;
  rd.weight = w;
  rd.add_residual = true;
  auto layer = LayerNormPlan::select(test_stream(), ld, split);
  auto rms = RMSNormPlan::select(test_stream(), rd, split);
  ASSERT_TRUE(layer && rms) << (layer ? rms.error().to_string() : layer.error().to_string());
  const std::size_t lneed = layer->workspace_size(), rneed = rms->workspace_size();
  ASSERT_GT(lneed, 0u) << layer->sku().name();
  ASSERT_GT(rneed, 0u) << rms->sku().name();
  HostTensor hx(x), hw(w);
  fill_random(hx, -2, 2);
  fill_random(hw, 0.5, 1.5);
  DeviceTensor dx(hx, test_stream()), dr(hx, test_stream()), dw(hw, test_stream());
  Untouched y(x), ro(x), mean(sl), rstd(sl);
  const Stream& s = test_stream();
  const Workspace ws = test_workspace(std::max(lneed, rneed) + kWorkspaceAlignment);
  const NormArgs la{.x = dx.data(), .weight = dw.data(), .bias = dw.data(), .y = y.data(), .mean = mean.data(),
                    .rstd = rstd.data()};
  const NormArgs ra{.x = dx.data(), .residual = dr.data(), .weight = dw.data(), .y = y.data(), .residual_out = ro.data(),
                    .rstd = rstd.data()};
  std::vector<RunRefusal> rows = workspace_refusals("layer_norm", [&](Workspace w2) { return layer->run(s, w2, la); }, ws, lneed);
  auto rrows = workspace_refusals("rms_norm", [&](Workspace w2) { return rms->run(s, w2, ra); }, ws, rneed);
  rows.insert(rows.end(), rrows.begin(), rrows.end());
  rows.push_back({"rms_norm null residual (split_row)", [&] { auto a = ra; a.residual = nullptr; return rms->run(s, {ws.data, rneed}, a); },
                  Code::kInvalidArgument, "args.residual is null"});
  expect_run_refusals(rows, {&y, &ro, &mean, &rstd});
}

}  // namespace
}  // namespace baracuda::test
