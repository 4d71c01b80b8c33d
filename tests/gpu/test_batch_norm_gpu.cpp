// GPU tests of BatchNormPlan / GroupNormPlan / InstanceNormPlan and their backward against
// reference::batch_norm_* / group_norm_* / instance_norm_*: every dtype, fresh random inputs,
// poisoned outputs with guard bytes, every accepting SKU forced; shapes N = 1, spatial = 1,
// C = 1, odd spatial (strided path), 3-D spatial, many channels, large spatial
// (1x64x256x256), high-mean data, channels-last and padded strides, in place; training and
// eval (running stats updated in place and compared), parameters in x's dtype and in f32
// (mixed), statistics over 1, 7 and 262144 values; the optional operands off (no weight,
// bias, running or saved stats: outputs unwritten, running stats unchanged; grad_weight /
// grad_bias alone), per-channel arrays with stride 2, GroupNorm with C groups;
// determinism of the parameter gradients; run-time refusals with outputs untouched; empty
// inputs as PyTorch (n0, s0; EmptyInputs byte for byte: running stats kept or NaN, saved
// statistics 0 and 1 / sqrt(eps), zero parameter gradients, nothing else written).
// Filter: --gtest_filter='*BatchNorm*:*GroupNorm*:*InstanceNorm*:*ChanNorm*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "baracuda/reference/batch_norm.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct ChanCase {
  std::string name;
  TensorLayout x;
  double offset = 0;  // high mean, low variance
  bool in_place = false;
};

TensorLayout nhwc(DType t, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return TensorLayout::strided(t, {n, c, h, w}, {h * w * c, 1, w * c, c});
}

std::vector<ChanCase> chan_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  return {
      {"nchw", c({4, 16, 8, 8})},
      {"n1", c({1, 8, 32, 32})},
      {"spatial1", c({64, 32})},
      {"c1", c({8, 1, 16, 16})},
      {"odd_spatial", c({3, 5, 7, 7})},
      {"spatial3d", c({2, 4, 3, 4, 8})},
      {"many_channels", c({2, 2048, 4, 4})},
      {"large_spatial", c({1, 64, 256, 256})},
      {"batch_large", c({32, 8, 56, 56})},
      {"high_mean", c({8, 4, 16, 16}), 100.0},
      {"channels_last", nhwc(t, 4, 16, 8, 8)},
      {"padded_n", TensorLayout::strided(t, {3, 4, 8, 8}, {512, 64, 8, 1})},
      {"in_place", c({4, 8, 16, 16}), 0.0, true},
      // statistics over 7 values (BatchNorm: N = 7, no spatial dims; GroupNorm of 3 groups and
      // InstanceNorm: 7 spatial values) and over 262144 (BatchNorm, GroupNorm of 1 group)
      {"m1", c({1, 8})},  // one value per channel: BatchNorm eval only (training is refused)
      {"m7", c({7, 3})},
      {"s7", c({2, 3, 7})},
      {"m262144", c({2, 2, 512, 256})},
      // empty inputs, as PyTorch (batch_norm.hpp; EmptyInputs below checks them byte for byte):
      // BatchNorm training keeps its running stats and saves mean 0 / invstd 1 / sqrt(eps);
      // InstanceNorm's running update over no instance writes NaN; GroupNorm refuses s0
      {"n0", c({0, 4, 8})},
      {"s0", c({3, 4, 0})},
  };
}

class ChanNormGpu : public ::testing::TestWithParam<DType> {};

DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }
TensorLayout chan_layout(DType t, std::int64_t c) { return TensorLayout::contiguous(t, {c}, static_cast<int>(dtype_size(t))); }
std::int64_t spatial_of(const TensorLayout& x) {
  std::int64_t s = 1;
  for (int i = 2; i < x.rank; ++i) s *= x.shape[i];
  return s;
}
void poison_all(std::initializer_list<DeviceTensor*> ts) {
  for (DeviceTensor* d : ts) d->poison(0xFF, test_stream());
}
template <class Want>
void expect_output(DeviceTensor& dev, HostTensor& host, const Want& want, const std::string& what) {
  ASSERT_TRUE(dev.download(host, test_stream()));
  EXPECT_TRUE(check_close(host, want, what));
}
// The saved statistics as the forward stores them (rounded to the stats dtype).
std::vector<double> rounded_stats(const reference::Result& r, DType st) {
  std::vector<double> v(r.exact.size());
  HostTensor h(TensorLayout::contiguous(st, {static_cast<std::int64_t>(v.size())}));
  for (std::size_t i = 0; i < v.size(); ++i) {
    h.set(static_cast<std::int64_t>(i), r.exact[i]);
    v[i] = h.get(static_cast<std::int64_t>(i));
  }
  return v;
}
HostTensor stats_host(const std::vector<double>& v, DType st) {
  HostTensor h(TensorLayout::contiguous(st, {static_cast<std::int64_t>(v.size())}));
  for (std::size_t i = 0; i < v.size(); ++i) h.set(static_cast<std::int64_t>(i), v[i]);
  return h;
}

// Inputs shared by a case: x (and grad_y), per-channel weight / bias / running stats.
struct Inputs {
  TensorLayout pl;  // per-channel layout (x's dtype, or f32 when mixed)
  HostTensor x, g, w, b, rm, rv;
  // strided_params: every per-channel array with stride 2 (the header allows any stride)
  Inputs(const ChanCase& c, DType pt, bool strided_params = false)
      : pl(strided_params ? TensorLayout::strided(pt, {c.x.shape[1]}, {2}, static_cast<int>(dtype_size(pt)))
                          : chan_layout(pt, c.x.shape[1])),
        x(c.x), g(c.x), w(pl), b(pl), rm(pl), rv(pl) {
    fill_random(x, c.offset - 3, c.offset + 3);
    fill_random(g, -1, 1);
    fill_random(w, 0.5, 1.5);
    fill_random(b, -1, 1);
    fill_random(rm, -0.5, 0.5);
    fill_random(rv, 0.5, 2);
  }
};

// ---- BatchNorm
void run_batch_norm(const ChanCase& c, DType t, bool training, bool mixed) {
  const DType pt = mixed ? DType::kF32 : t, st = compute_of(t);
  const std::int64_t C = c.x.shape[1];
  if (training && c.x.shape[0] * spatial_of(c.x) == 1) return;  // refused (SelectRefusals.BatchNormPlan)
  Inputs in(c, pt);
  BatchNormDescriptor d;
  d.x = c.x;
  d.y = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
  d.training = training;
  d.weight = d.bias = d.running_mean = d.running_var = in.pl;
  d.momentum = 0.125;
  auto want = reference::batch_norm_forward(d, in.x, &in.w, &in.b, &in.rm, &in.rv);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const TensorLayout sl = TensorLayout::contiguous(st, {C});
  HostTensor hy(d.y), hm(sl), hr(sl), hrm(in.pl), hrv(in.pl);
  DeviceTensor dx(in.x, test_stream()), dy(hy, test_stream()), dw(in.w, test_stream()), db(in.b, test_stream()),
      drm(in.rm, test_stream()), drv(in.rv, test_stream()), dm(hm, test_stream()), dr(hr, test_stream());
  void* y_ptr = c.in_place ? dx.data() : dy.data();
  const std::string what = d.to_string();
  for_each_sku<BatchNormPlan>(
      d,
      [&] {
        dx.upload(in.x, test_stream());
        drm.upload(in.rm, test_stream());
        drv.upload(in.rv, test_stream());
        poison_all({&dy, &dm, &dr});
      },
      [&](const BatchNormPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     BatchNormArgs{.x = dx.data(), .weight = dw.data(), .bias = db.data(), .running_mean = drm.data(),
                                   .running_var = drv.data(), .y = y_ptr, .save_mean = dm.data(), .save_invstd = dr.data()});
      },
      [&](const std::string& sku) {
        expect_output(c.in_place ? dx : dy, hy, want->y, sku + " y " + what);
        if (training) {
          expect_output(dm, hm, want->mean, sku + " save_mean " + what);
          expect_output(dr, hr, want->rstd, sku + " save_invstd " + what);
          expect_output(drm, hrm, want->running_mean, sku + " running_mean " + what);
          expect_output(drv, hrv, want->running_var, sku + " running_var " + what);
        }
      });
  // backward from the forward's saved statistics
  BatchNormBackwardDescriptor bd;
  bd.grad_y = c.x;
  bd.x = TensorLayout::contiguous(t, c.x.shape_span());
  bd.grad_x = c.in_place ? c.x : bd.x;
  bd.training = training;
  bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = in.pl;
  HostTensor hx2(bd.x);
  for (std::int64_t i = 0; i < c.x.numel(); ++i) hx2.set(i, in.x.get(i));
  const auto mean = training ? rounded_stats(want->mean, st) : std::vector<double>{};
  const auto rstd = training ? rounded_stats(want->rstd, st) : std::vector<double>{};
  auto grads = reference::batch_norm_backward(bd, in.g, hx2, &in.w, mean, rstd, &in.rm, &in.rv);
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  HostTensor hm2 = stats_host(training ? mean : std::vector<double>(static_cast<std::size_t>(C), 0.0), st);
  HostTensor hr2 = stats_host(training ? rstd : std::vector<double>(static_cast<std::size_t>(C), 1.0), st);
  HostTensor hgx(bd.grad_x), hgw(in.pl), hgb(in.pl);
  DeviceTensor dg(in.g, test_stream()), dx2(hx2, test_stream()), dm2(hm2, test_stream()), dr2(hr2, test_stream()),
      dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  drm.upload(in.rm, test_stream());
  drv.upload(in.rv, test_stream());
  void* gx_ptr = c.in_place ? dg.data() : dgx.data();
  auto args = [&] {
    return BatchNormBackwardArgs{.grad_y = dg.data(), .x = dx2.data(), .weight = dw.data(), .save_mean = dm2.data(),
                                 .save_invstd = dr2.data(), .running_mean = drm.data(), .running_var = drv.data(),
                                 .grad_x = gx_ptr, .grad_weight = dgw.data(), .grad_bias = dgb.data()};
  };
  const std::string bwhat = bd.to_string();
  for_each_sku<BatchNormBackwardPlan>(
      bd,
      [&] {
        dg.upload(in.g, test_stream());
        poison_all({&dgx, &dgw, &dgb});
      },
      [&](const BatchNormBackwardPlan& p, Workspace ws) { return p.run(test_stream(), ws, args()); },
      [&](const std::string& sku) {
        expect_output(c.in_place ? dg : dgx, hgx, grads->grad_x, sku + " grad_x " + bwhat);
        expect_output(dgw, hgw, grads->grad_weight, sku + " grad_weight " + bwhat);
        expect_output(dgb, hgb, grads->grad_bias, sku + " grad_bias " + bwhat);
      });
  if (!c.in_place) {  // determinism: the default SKU twice gives the same bits
    auto plan = BatchNormBackwardPlan::select(test_stream(), bd);
    ASSERT_TRUE(plan.has_value());
    HostTensor runs[2] = {HostTensor(in.pl), HostTensor(in.pl)};
    for (int r = 0; r < 2; ++r) {
      dgw.poison(r == 0 ? 0x00 : 0xFF, test_stream());
      ASSERT_TRUE(plan->run(test_stream(), test_workspace(plan->workspace_size()), args()));
      ASSERT_TRUE(dgw.download(runs[r], test_stream()));
    }
    EXPECT_EQ(std::memcmp(runs[0].storage(), runs[1].storage(), runs[0].storage_bytes()), 0)
        << plan->sku().name() << ": grad_weight not deterministic";
  }
}

TEST_P(ChanNormGpu, BatchNormTraining) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : chan_cases(t)) {
    SCOPED_TRACE(c.name);
    run_batch_norm(c, t, true, false);
  }
}
TEST_P(ChanNormGpu, BatchNormEval) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : chan_cases(t)) {
    SCOPED_TRACE(c.name);
    run_batch_norm(c, t, false, false);
  }
}
TEST_P(ChanNormGpu, BatchNormMixedParams) {  // f32 weight / running stats with 16-bit x
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  if (t == DType::kF64) return;  // f32 parameters with f64 x are refused (SelectRefusals in the unit tests)
  const auto cases = chan_cases(t);
  for (const auto& c : {cases[0], cases[4], cases[10]}) {
    SCOPED_TRACE(c.name);
    run_batch_norm(c, t, true, true);
    run_batch_norm(c, t, false, true);
  }
}

// ---- GroupNorm / InstanceNorm (instance: groups = C, optional running stats)
int groups_for(std::int64_t c) {
  for (int g : {4, 2, 3, 1})
    if (c % g == 0) return g;
  return 1;
}
void run_group_norm(const ChanCase& c, DType t, int groups, bool mixed) {
  const DType pt = mixed ? DType::kF32 : t, st = compute_of(t);
  Inputs in(c, pt);
  GroupNormDescriptor d;
  d.x = c.x;
  d.y = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
  d.num_groups = groups;
  d.weight = d.bias = in.pl;
  if (c.x.shape[0] > 0 && spatial_of(c.x) == 0) {  // refused, as torch ("Expected HxW to be greater than 0")
    EXPECT_FALSE(GroupNormPlan::select(test_stream(), d).has_value()) << d.to_string();
    return;
  }
  auto want = reference::group_norm_forward(d, in.x, &in.w, &in.b);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const std::int64_t K = c.x.shape[0] * groups;
  const TensorLayout sl = TensorLayout::contiguous(st, {K});
  HostTensor hy(d.y), hm(sl), hr(sl);
  DeviceTensor dx(in.x, test_stream()), dy(hy, test_stream()), dw(in.w, test_stream()), db(in.b, test_stream()),
      dm(hm, test_stream()), dr(hr, test_stream());
  void* y_ptr = c.in_place ? dx.data() : dy.data();
  const std::string what = d.to_string();
  for_each_sku<GroupNormPlan>(
      d,
      [&] {
        dx.upload(in.x, test_stream());
        poison_all({&dy, &dm, &dr});
      },
      [&](const GroupNormPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     GroupNormArgs{.x = dx.data(), .weight = dw.data(), .bias = db.data(), .y = y_ptr, .mean = dm.data(),
                                   .rstd = dr.data()});
      },
      [&](const std::string& sku) {
        expect_output(c.in_place ? dx : dy, hy, want->y, sku + " y " + what);
        expect_output(dm, hm, want->mean, sku + " mean " + what);
        expect_output(dr, hr, want->rstd, sku + " rstd " + what);
      });
  GroupNormBackwardDescriptor bd;
  bd.grad_y = c.x;
  bd.x = TensorLayout::contiguous(t, c.x.shape_span());
  bd.grad_x = c.in_place ? c.x : bd.x;
  bd.num_groups = groups;
  bd.weight = bd.grad_weight = bd.grad_bias = in.pl;
  HostTensor hx2(bd.x);
  for (std::int64_t i = 0; i < c.x.numel(); ++i) hx2.set(i, in.x.get(i));
  const auto mean = rounded_stats(want->mean, st), rstd = rounded_stats(want->rstd, st);
  auto grads = reference::group_norm_backward(bd, in.g, hx2, &in.w, mean, rstd);
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  HostTensor hm2 = stats_host(mean, st), hr2 = stats_host(rstd, st), hgx(bd.grad_x), hgw(in.pl), hgb(in.pl);
  DeviceTensor dg(in.g, test_stream()), dx2(hx2, test_stream()), dm2(hm2, test_stream()), dr2(hr2, test_stream()),
      dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  void* gx_ptr = c.in_place ? dg.data() : dgx.data();
  const std::string bwhat = bd.to_string();
  auto args = [&] {
    return GroupNormBackwardArgs{.grad_y = dg.data(), .x = dx2.data(), .weight = dw.data(), .mean = dm2.data(),
                                 .rstd = dr2.data(), .grad_x = gx_ptr, .grad_weight = dgw.data(), .grad_bias = dgb.data()};
  };
  for_each_sku<GroupNormBackwardPlan>(
      bd,
      [&] {
        dg.upload(in.g, test_stream());
        poison_all({&dgx, &dgw, &dgb});
      },
      [&](const GroupNormBackwardPlan& p, Workspace ws) { return p.run(test_stream(), ws, args()); },
      [&](const std::string& sku) {
        expect_output(c.in_place ? dg : dgx, hgx, grads->grad_x, sku + " grad_x " + bwhat);
        expect_output(dgw, hgw, grads->grad_weight, sku + " grad_weight " + bwhat);
        expect_output(dgb, hgb, grads->grad_bias, sku + " grad_bias " + bwhat);
      });
  if (!c.in_place) {
    auto plan = GroupNormBackwardPlan::select(test_stream(), bd);
    ASSERT_TRUE(plan.has_value());
    HostTensor runs[2] = {HostTensor(in.pl), HostTensor(in.pl)};
    for (int r = 0; r < 2; ++r) {
      dgw.poison(r == 0 ? 0x00 : 0xFF, test_stream());
      ASSERT_TRUE(plan->run(test_stream(), test_workspace(plan->workspace_size()), args()));
      ASSERT_TRUE(dgw.download(runs[r], test_stream()));
    }
    EXPECT_EQ(std::memcmp(runs[0].storage(), runs[1].storage(), runs[0].storage_bytes()), 0)
        << plan->sku().name() << ": grad_weight not deterministic";
  }
}

TEST_P(ChanNormGpu, GroupNorm) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : chan_cases(t)) {
    SCOPED_TRACE(c.name);
    run_group_norm(c, t, groups_for(c.x.shape[1]), false);
    run_group_norm(c, t, 1, t == DType::kBF16 || t == DType::kF16);
  }
}

void run_instance_norm(const ChanCase& c, DType t, bool input_stats, bool running) {
  const DType st = compute_of(t);
  const std::int64_t C = c.x.shape[1], N = c.x.shape[0];
  if (input_stats && spatial_of(c.x) == 1) return;  // refused (SelectRefusals.InstanceNormPlan)
  Inputs in(c, t);
  InstanceNormDescriptor d;
  d.x = c.x;
  d.y = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
  d.use_input_stats = input_stats;
  d.has_running_stats = running;
  d.weight = d.bias = d.running_mean = d.running_var = in.pl;
  d.momentum = 0.25;
  auto want = reference::instance_norm_forward(d, in.x, &in.w, &in.b, &in.rm, &in.rv);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const TensorLayout sl = TensorLayout::contiguous(st, {N * C});
  HostTensor hy(d.y), hm(sl), hr(sl), hrm(in.pl), hrv(in.pl);
  DeviceTensor dx(in.x, test_stream()), dy(hy, test_stream()), dw(in.w, test_stream()), db(in.b, test_stream()),
      drm(in.rm, test_stream()), drv(in.rv, test_stream()), dm(hm, test_stream()), dr(hr, test_stream());
  void* y_ptr = c.in_place ? dx.data() : dy.data();
  const std::string what = d.to_string();
  for_each_sku<InstanceNormPlan>(
      d,
      [&] {
        dx.upload(in.x, test_stream());
        drm.upload(in.rm, test_stream());
        drv.upload(in.rv, test_stream());
        poison_all({&dy, &dm, &dr});
      },
      [&](const InstanceNormPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     InstanceNormArgs{.x = dx.data(), .weight = dw.data(), .bias = db.data(), .running_mean = drm.data(),
                                      .running_var = drv.data(), .y = y_ptr, .mean = dm.data(), .rstd = dr.data()});
      },
      [&](const std::string& sku) {
        expect_output(c.in_place ? dx : dy, hy, want->y, sku + " y " + what);
        if (input_stats) {
          expect_output(dm, hm, want->mean, sku + " mean " + what);
          expect_output(dr, hr, want->rstd, sku + " rstd " + what);
        }
        if (input_stats && running) {
          expect_output(drm, hrm, want->running_mean, sku + " running_mean " + what);
          expect_output(drv, hrv, want->running_var, sku + " running_var " + what);
        }
      });
  InstanceNormBackwardDescriptor bd;
  bd.grad_y = bd.x = bd.grad_x = TensorLayout::contiguous(t, c.x.shape_span());
  bd.use_input_stats = input_stats;
  bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = in.pl;
  HostTensor hx2(bd.x), hg2(bd.x);
  for (std::int64_t i = 0; i < c.x.numel(); ++i) {
    hx2.set(i, in.x.get(i));
    hg2.set(i, in.g.get(i));
  }
  const auto mean = input_stats ? rounded_stats(want->mean, st) : std::vector<double>(static_cast<std::size_t>(N * C), 0.0);
  const auto rstd = input_stats ? rounded_stats(want->rstd, st) : std::vector<double>(static_cast<std::size_t>(N * C), 1.0);
  auto grads = reference::instance_norm_backward(bd, hg2, hx2, &in.w, mean, rstd, &in.rm, &in.rv);
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  HostTensor hm2 = stats_host(mean, st), hr2 = stats_host(rstd, st), hgx(bd.grad_x), hgw(in.pl), hgb(in.pl);
  DeviceTensor dg(hg2, test_stream()), dx2(hx2, test_stream()), dm2(hm2, test_stream()), dr2(hr2, test_stream()),
      dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  drm.upload(in.rm, test_stream());
  drv.upload(in.rv, test_stream());
  const std::string bwhat = bd.to_string();
  for_each_sku<InstanceNormBackwardPlan>(
      bd, [&] { poison_all({&dgx, &dgw, &dgb}); },
      [&](const InstanceNormBackwardPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     InstanceNormBackwardArgs{.grad_y = dg.data(), .x = dx2.data(), .weight = dw.data(),
                                              .mean = dm2.data(), .rstd = dr2.data(), .running_mean = drm.data(),
                                              .running_var = drv.data(), .grad_x = dgx.data(),
                                              .grad_weight = dgw.data(), .grad_bias = dgb.data()});
      },
      [&](const std::string& sku) {
        expect_output(dgx, hgx, grads->grad_x, sku + " grad_x " + bwhat);
        expect_output(dgw, hgw, grads->grad_weight, sku + " grad_weight " + bwhat);
        expect_output(dgb, hgb, grads->grad_bias, sku + " grad_bias " + bwhat);
      });
}

TEST_P(ChanNormGpu, InstanceNorm) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : chan_cases(t)) {
    SCOPED_TRACE(c.name);
    run_instance_norm(c, t, true, false);
    run_instance_norm(c, t, true, true);
    run_instance_norm(c, t, false, true);
  }
}

// ---- options the tests above leave at their defaults
struct ChanOpts {
  std::string name;
  bool weight = true, bias = true;            // forward: has_weight / has_bias; backward: has_weight
  bool running = true;                        // has_running_stats (training / input stats)
  bool save_stats = true;
  bool grad_weight = true, grad_bias = true;  // compute_grad_weight / compute_grad_bias
  bool strided_params = false;                // per-channel arrays with stride 2
  bool mixed = false;                         // f32 per-channel arrays (16-bit / f32 x only)
};
const std::vector<ChanOpts> kChanOpts = {
    {"no weight, bias, running stats or saved stats; grad_bias only", false, false, false, false, false, true},
    {"weight only, strided arrays; grad_weight only", true, false, true, true, true, false, true},
    {"f32 strided arrays", true, true, true, true, true, true, true, true},
};
// A poisoned (0xFF) output the options turn off must stay poisoned; an array that must not
// change must still hold `want`'s bytes.
::testing::AssertionResult still_holds(DeviceTensor& dev, const HostTensor* want, const TensorLayout& l) {
  HostTensor h(l);
  auto r = dev.download(h, test_stream());
  if (!r) return r;
  const auto* b = reinterpret_cast<const unsigned char*>(h.storage());
  for (std::size_t i = 0; i < h.storage_bytes(); ++i) {
    const unsigned char w = want ? reinterpret_cast<const unsigned char*>(want->storage())[i] : 0xFF;
    if (b[i] != w) return ::testing::AssertionFailure() << "byte " << i << " was written";
  }
  return ::testing::AssertionSuccess();
}
// Every element of `dev` holds exactly v as l's dtype stores it (same bits).
::testing::AssertionResult holds_value(DeviceTensor& dev, const TensorLayout& l, double v) {
  HostTensor h(l), w(l);
  auto r = dev.download(h, test_stream());
  if (!r) return r;
  for (std::int64_t i = 0; i < l.numel(); ++i) {
    w.set(i, v);
    const double got = h.get(i), want = w.get(i);
    if (std::memcmp(&got, &want, sizeof got) != 0)
      return ::testing::AssertionFailure() << "element " << i << " = " << got << ", not " << want;
  }
  return ::testing::AssertionSuccess();
}
// The backward's outputs poisoned; for an empty x the saved statistics too: it reads none.
void poison_bwd(const ChanCase& c, DeviceTensor& dgx, DeviceTensor& dgw, DeviceTensor& dgb, DeviceTensor& dm2,
                DeviceTensor& dr2) {
  poison_all({&dgx, &dgw, &dgb});
  if (c.x.numel() == 0) poison_all({&dm2, &dr2});
}
void expect_kept_running(DeviceTensor& drm, DeviceTensor& drv, const Inputs& in, const std::string& what) {
  EXPECT_TRUE(still_holds(drm, &in.rm, in.pl)) << what << ": running_mean changed";
  EXPECT_TRUE(still_holds(drv, &in.rv, in.pl)) << what << ": running_var changed";
}
// Empty x (batch_norm.hpp), byte for byte: a statistic over no values is saved as mean 0 and
// invstd / rstd 1 / sqrt(eps).
void expect_empty_stats(DeviceTensor& dm, DeviceTensor& dr, const TensorLayout& sl, double eps, const std::string& what) {
  EXPECT_TRUE(holds_value(dm, sl, 0.0)) << what << ": saved mean of no values";
  EXPECT_TRUE(holds_value(dr, sl, 1.0 / std::sqrt(eps))) << what << ": saved rstd of no values";
}
// The parameter gradients: checked when asked for, else still poisoned; for an empty x
// (no grad_x values) exactly 0.
void expect_param_grads(DeviceTensor& dgw, DeviceTensor& dgb, HostTensor& hgw, HostTensor& hgb, const reference::ChanNormGrads& g,
                        const ChanOpts& o, const std::string& what) {
  const bool empty = g.grad_x.exact.empty();
  if (o.grad_weight) expect_output(dgw, hgw, g.grad_weight, what + " grad_weight");
  else EXPECT_TRUE(still_holds(dgw, nullptr, hgw.layout())) << what << ": grad_weight not asked for";
  if (o.grad_weight && empty) EXPECT_TRUE(holds_value(dgw, hgw.layout(), 0.0)) << what << ": grad_weight of no values";
  if (o.grad_bias) expect_output(dgb, hgb, g.grad_bias, what + " grad_bias");
  else EXPECT_TRUE(still_holds(dgb, nullptr, hgb.layout())) << what << ": grad_bias not asked for";
  if (o.grad_bias && empty) EXPECT_TRUE(holds_value(dgb, hgb.layout(), 0.0)) << what << ": grad_bias of no values";
}

void run_batch_norm_opts(const ChanCase& c, DType t, bool training, const ChanOpts& o) {
  const DType pt = o.mixed ? DType::kF32 : t, st = compute_of(t);
  const std::int64_t C = c.x.shape[1];
  if (training && c.x.shape[0] * spatial_of(c.x) == 1) return;  // refused (SelectRefusals.BatchNormPlan)
  const bool running = o.running || !training;  // eval reads them
  Inputs in(c, pt, o.strided_params);
  BatchNormDescriptor d;
  d.x = c.x;
  d.y = TensorLayout::contiguous(t, c.x.shape_span());
  d.training = training;
  d.has_weight = o.weight;
  d.has_bias = o.bias;
  d.has_running_stats = running;
  d.save_stats = o.save_stats;
  d.weight = d.bias = d.running_mean = d.running_var = in.pl;
  d.momentum = 0.2;
  auto want = reference::batch_norm_forward(d, in.x, o.weight ? &in.w : nullptr, o.bias ? &in.b : nullptr,
                                            running ? &in.rm : nullptr, running ? &in.rv : nullptr);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const TensorLayout sl = TensorLayout::contiguous(st, {C});
  HostTensor hy(d.y), hm(sl), hr(sl), hrm(in.pl), hrv(in.pl);
  DeviceTensor dx(in.x, test_stream()), dy(hy, test_stream()), dw(in.w, test_stream()), db(in.b, test_stream()),
      drm(in.rm, test_stream()), drv(in.rv, test_stream()), dm(hm, test_stream()), dr(hr, test_stream());
  const std::string what = d.to_string();
  for_each_sku<BatchNormPlan>(
      d,
      [&] {
        drm.upload(in.rm, test_stream());
        drv.upload(in.rv, test_stream());
        poison_all({&dy, &dm, &dr});
      },
      [&](const BatchNormPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     BatchNormArgs{.x = dx.data(), .weight = dw.data(), .bias = db.data(), .running_mean = drm.data(),
                                   .running_var = drv.data(), .y = dy.data(), .save_mean = dm.data(), .save_invstd = dr.data()});
      },
      [&](const std::string& sku) {
        expect_output(dy, hy, want->y, sku + " y " + what);
        if (training && o.save_stats) {
          expect_output(dm, hm, want->mean, sku + " save_mean " + what);
          expect_output(dr, hr, want->rstd, sku + " save_invstd " + what);
          if (c.x.numel() == 0) expect_empty_stats(dm, dr, sl, d.eps, sku + " " + what);
        } else {
          EXPECT_TRUE(still_holds(dm, nullptr, sl)) << sku << " save_mean not asked for " << what;
          EXPECT_TRUE(still_holds(dr, nullptr, sl)) << sku << " save_invstd not asked for " << what;
        }
        if (training && running) {
          expect_output(drm, hrm, want->running_mean, sku + " running_mean " + what);
          expect_output(drv, hrv, want->running_var, sku + " running_var " + what);
        }
        // eval reads them, training without them ignores them, no values leave them: unchanged
        if (!training || !running || c.x.numel() == 0) expect_kept_running(drm, drv, in, sku + " " + what);
      });
  // backward (grad_y in the case's layout) from the batch statistics of a forward that saves them
  BatchNormBackwardDescriptor bd;
  bd.grad_y = c.x;
  bd.x = bd.grad_x = TensorLayout::contiguous(t, c.x.shape_span());
  bd.training = training;
  bd.has_weight = o.weight;
  bd.compute_grad_weight = o.grad_weight;
  bd.compute_grad_bias = o.grad_bias;
  bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = in.pl;
  HostTensor hx2(bd.x);
  for (std::int64_t i = 0; i < c.x.numel(); ++i) hx2.set(i, in.x.get(i));
  BatchNormDescriptor sd = d;
  sd.save_stats = true;
  auto saved = reference::batch_norm_forward(sd, in.x, &in.w, &in.b, &in.rm, &in.rv);
  ASSERT_TRUE(saved.has_value());
  const auto mean = training ? rounded_stats(saved->mean, st) : std::vector<double>(static_cast<std::size_t>(C), 0.0);
  const auto rstd = training ? rounded_stats(saved->rstd, st) : std::vector<double>(static_cast<std::size_t>(C), 1.0);
  auto grads = reference::batch_norm_backward(bd, in.g, hx2, o.weight ? &in.w : nullptr, mean, rstd, &in.rm, &in.rv);
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  HostTensor hm2 = stats_host(mean, st), hr2 = stats_host(rstd, st), hgx(bd.grad_x), hgw(in.pl), hgb(in.pl);
  DeviceTensor dg(in.g, test_stream()), dx2(hx2, test_stream()), dm2(hm2, test_stream()), dr2(hr2, test_stream()),
      dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  drm.upload(in.rm, test_stream());
  drv.upload(in.rv, test_stream());
  const std::string bwhat = bd.to_string();
  for_each_sku<BatchNormBackwardPlan>(
      bd, [&] { poison_bwd(c, dgx, dgw, dgb, dm2, dr2); },
      [&](const BatchNormBackwardPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     BatchNormBackwardArgs{.grad_y = dg.data(), .x = dx2.data(), .weight = dw.data(), .save_mean = dm2.data(),
                                           .save_invstd = dr2.data(), .running_mean = drm.data(), .running_var = drv.data(),
                                           .grad_x = dgx.data(), .grad_weight = dgw.data(), .grad_bias = dgb.data()});
      },
      [&](const std::string& sku) {
        expect_output(dgx, hgx, grads->grad_x, sku + " grad_x " + bwhat);
        expect_param_grads(dgw, dgb, hgw, hgb, grads.value(), o, sku + " " + bwhat);
      });
}

void run_group_norm_opts(const ChanCase& c, DType t, int groups, const ChanOpts& o) {
  const DType pt = o.mixed ? DType::kF32 : t, st = compute_of(t);
  Inputs in(c, pt, o.strided_params);
  GroupNormDescriptor d;
  d.x = c.x;
  d.y = TensorLayout::contiguous(t, c.x.shape_span());
  d.num_groups = groups;
  d.has_weight = o.weight;
  d.has_bias = o.bias;
  d.save_stats = o.save_stats;
  d.weight = d.bias = in.pl;
  auto want = reference::group_norm_forward(d, in.x, o.weight ? &in.w : nullptr, o.bias ? &in.b : nullptr);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const TensorLayout sl = TensorLayout::contiguous(st, {c.x.shape[0] * groups});
  HostTensor hy(d.y), hm(sl), hr(sl);
  DeviceTensor dx(in.x, test_stream()), dy(hy, test_stream()), dw(in.w, test_stream()), db(in.b, test_stream()),
      dm(hm, test_stream()), dr(hr, test_stream());
  const std::string what = d.to_string();
  for_each_sku<GroupNormPlan>(
      d, [&] { poison_all({&dy, &dm, &dr}); },
      [&](const GroupNormPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     GroupNormArgs{.x = dx.data(), .weight = dw.data(), .bias = db.data(), .y = dy.data(), .mean = dm.data(),
                                   .rstd = dr.data()});
      },
      [&](const std::string& sku) {
        expect_output(dy, hy, want->y, sku + " y " + what);
        if (o.save_stats) {
          expect_output(dm, hm, want->mean, sku + " mean " + what);
          expect_output(dr, hr, want->rstd, sku + " rstd " + what);
        } else {
          EXPECT_TRUE(still_holds(dm, nullptr, sl)) << sku << " mean not asked for " << what;
          EXPECT_TRUE(still_holds(dr, nullptr, sl)) << sku << " rstd not asked for " << what;
        }
      });
  GroupNormBackwardDescriptor bd;
  bd.grad_y = c.x;
  bd.x = bd.grad_x = TensorLayout::contiguous(t, c.x.shape_span());
  bd.num_groups = groups;
  bd.has_weight = o.weight;
  bd.compute_grad_weight = o.grad_weight;
  bd.compute_grad_bias = o.grad_bias;
  bd.weight = bd.grad_weight = bd.grad_bias = in.pl;
  HostTensor hx2(bd.x);
  for (std::int64_t i = 0; i < c.x.numel(); ++i) hx2.set(i, in.x.get(i));
  GroupNormDescriptor sd = d;  // the statistics of a forward that saves them
  sd.save_stats = true;
  auto saved = reference::group_norm_forward(sd, in.x, &in.w, &in.b);
  ASSERT_TRUE(saved.has_value());
  const auto mean = rounded_stats(saved->mean, st), rstd = rounded_stats(saved->rstd, st);
  auto grads = reference::group_norm_backward(bd, in.g, hx2, o.weight ? &in.w : nullptr, mean, rstd);
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  HostTensor hm2 = stats_host(mean, st), hr2 = stats_host(rstd, st), hgx(bd.grad_x), hgw(in.pl), hgb(in.pl);
  DeviceTensor dg(in.g, test_stream()), dx2(hx2, test_stream()), dm2(hm2, test_stream()), dr2(hr2, test_stream()),
      dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  const std::string bwhat = bd.to_string();
  for_each_sku<GroupNormBackwardPlan>(
      bd, [&] { poison_bwd(c, dgx, dgw, dgb, dm2, dr2); },
      [&](const GroupNormBackwardPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     GroupNormBackwardArgs{.grad_y = dg.data(), .x = dx2.data(), .weight = dw.data(), .mean = dm2.data(),
                                           .rstd = dr2.data(), .grad_x = dgx.data(), .grad_weight = dgw.data(),
                                           .grad_bias = dgb.data()});
      },
      [&](const std::string& sku) {
        expect_output(dgx, hgx, grads->grad_x, sku + " grad_x " + bwhat);
        expect_param_grads(dgw, dgb, hgw, hgb, grads.value(), o, sku + " " + bwhat);
      });
}

void run_instance_norm_opts(const ChanCase& c, DType t, bool input_stats, const ChanOpts& o) {
  const DType pt = o.mixed ? DType::kF32 : t, st = compute_of(t);
  const std::int64_t C = c.x.shape[1], N = c.x.shape[0];
  if (input_stats && spatial_of(c.x) == 1) return;  // refused (SelectRefusals.InstanceNormPlan)
  const bool running = o.running || !input_stats;
  Inputs in(c, pt, o.strided_params);
  InstanceNormDescriptor d;
  d.x = c.x;
  d.y = TensorLayout::contiguous(t, c.x.shape_span());
  d.use_input_stats = input_stats;
  d.has_weight = o.weight;
  d.has_bias = o.bias;
  d.has_running_stats = running;
  d.save_stats = o.save_stats;
  d.weight = d.bias = d.running_mean = d.running_var = in.pl;
  d.momentum = 0.3;
  auto want = reference::instance_norm_forward(d, in.x, o.weight ? &in.w : nullptr, o.bias ? &in.b : nullptr,
                                               running ? &in.rm : nullptr, running ? &in.rv : nullptr);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const TensorLayout sl = TensorLayout::contiguous(st, {N * C});
  HostTensor hy(d.y), hm(sl), hr(sl), hrm(in.pl), hrv(in.pl);
  DeviceTensor dx(in.x, test_stream()), dy(hy, test_stream()), dw(in.w, test_stream()), db(in.b, test_stream()),
      drm(in.rm, test_stream()), drv(in.rv, test_stream()), dm(hm, test_stream()), dr(hr, test_stream());
  const std::string what = d.to_string();
  for_each_sku<InstanceNormPlan>(
      d,
      [&] {
        drm.upload(in.rm, test_stream());
        drv.upload(in.rv, test_stream());
        poison_all({&dy, &dm, &dr});
      },
      [&](const InstanceNormPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     InstanceNormArgs{.x = dx.data(), .weight = dw.data(), .bias = db.data(), .running_mean = drm.data(),
                                      .running_var = drv.data(), .y = dy.data(), .mean = dm.data(), .rstd = dr.data()});
      },
      [&](const std::string& sku) {
        expect_output(dy, hy, want->y, sku + " y " + what);
        if (input_stats && o.save_stats) {
          expect_output(dm, hm, want->mean, sku + " mean " + what);
          expect_output(dr, hr, want->rstd, sku + " rstd " + what);
          if (c.x.numel() == 0) expect_empty_stats(dm, dr, sl, d.eps, sku + " " + what);
        } else {
          EXPECT_TRUE(still_holds(dm, nullptr, sl)) << sku << " mean not asked for " << what;
          EXPECT_TRUE(still_holds(dr, nullptr, sl)) << sku << " rstd not asked for " << what;
        }
        if (input_stats && running) {  // N = 0: NaN (the reference's exact value; compare wants NaN)
          expect_output(drm, hrm, want->running_mean, sku + " running_mean " + what);
          expect_output(drv, hrv, want->running_var, sku + " running_var " + what);
        }
        if (!input_stats || !running || (c.x.numel() == 0 && N > 0)) expect_kept_running(drm, drv, in, sku + " " + what);
      });
  // backward with grad_y in the case's layout (InstanceNorm above reads a dense one)
  InstanceNormBackwardDescriptor bd;
  bd.grad_y = c.x;
  bd.x = bd.grad_x = TensorLayout::contiguous(t, c.x.shape_span());
  bd.use_input_stats = input_stats;
  bd.has_weight = o.weight;
  bd.compute_grad_weight = o.grad_weight;
  bd.compute_grad_bias = o.grad_bias;
  bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = in.pl;
  HostTensor hx2(bd.x);
  for (std::int64_t i = 0; i < c.x.numel(); ++i) hx2.set(i, in.x.get(i));
  InstanceNormDescriptor sd = d;
  sd.save_stats = true;
  auto saved = reference::instance_norm_forward(sd, in.x, &in.w, &in.b, &in.rm, &in.rv);
  ASSERT_TRUE(saved.has_value());
  const auto mean = input_stats ? rounded_stats(saved->mean, st) : std::vector<double>(static_cast<std::size_t>(N * C), 0.0);
  const auto rstd = input_stats ? rounded_stats(saved->rstd, st) : std::vector<double>(static_cast<std::size_t>(N * C), 1.0);
  auto grads = reference::instance_norm_backward(bd, in.g, hx2, o.weight ? &in.w : nullptr, mean, rstd, &in.rm, &in.rv);
  ASSERT_TRUE(grads.has_value()) << grads.error().to_string();
  HostTensor hm2 = stats_host(mean, st), hr2 = stats_host(rstd, st), hgx(bd.grad_x), hgw(in.pl), hgb(in.pl);
  DeviceTensor dg(in.g, test_stream()), dx2(hx2, test_stream()), dm2(hm2, test_stream()), dr2(hr2, test_stream()),
      dgx(hgx, test_stream()), dgw(hgw, test_stream()), dgb(hgb, test_stream());
  drm.upload(in.rm, test_stream());
  drv.upload(in.rv, test_stream());
  const std::string bwhat = bd.to_string();
  for_each_sku<InstanceNormBackwardPlan>(
      bd, [&] { poison_bwd(c, dgx, dgw, dgb, dm2, dr2); },
      [&](const InstanceNormBackwardPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     InstanceNormBackwardArgs{.grad_y = dg.data(), .x = dx2.data(), .weight = dw.data(), .mean = dm2.data(),
                                              .rstd = dr2.data(), .running_mean = drm.data(), .running_var = drv.data(),
                                              .grad_x = dgx.data(), .grad_weight = dgw.data(), .grad_bias = dgb.data()});
      },
      [&](const std::string& sku) {
        expect_output(dgx, hgx, grads->grad_x, sku + " grad_x " + bwhat);
        expect_param_grads(dgw, dgb, hgw, hgb, grads.value(), o, sku + " " + bwhat);
      });
}

// Every option set on case c: BatchNorm training / eval, GroupNorm with 1 and C groups (when
// `group`), InstanceNorm with input / running stats.
void run_every_option_set(const ChanCase& c, DType t, bool group) {
  for (const auto& o : kChanOpts) {
    if (o.mixed && t == DType::kF64) continue;  // f32 arrays with f64 x are refused
    SCOPED_TRACE(c.name + ": " + o.name);
    for (bool training : {true, false}) run_batch_norm_opts(c, t, training, o);
    if (group)
      for (int groups : {1, static_cast<int>(c.x.shape[1])}) run_group_norm_opts(c, t, groups, o);
    for (bool input_stats : {true, false}) run_instance_norm_opts(c, t, input_stats, o);
  }
}
// The optional operands and flags (no weight / bias, no running stats, no saved statistics:
// those outputs must stay unwritten, running stats unchanged in eval; the backward with
// has_weight = false and one of grad_weight / grad_bias), per-channel arrays with stride 2
// and in f32 under 16-bit x, the InstanceNorm backward with a strided grad_y, GroupNorm with
// num_groups = C; on one case per layout class (vec16 and strided planes). Every SKU.
TEST_P(ChanNormGpu, OptionalOperandsAndArrays) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const std::vector<std::string> names = {"nchw", "spatial1", "odd_spatial", "channels_last", "padded_n", "s7"};
  for (const auto& c : chan_cases(t))
    if (std::find(names.begin(), names.end(), c.name) != names.end()) run_every_option_set(c, t, true);
}

// Empty inputs (PyTorch's semantics, checked against torch 2.15 CPU; batch_norm.hpp) under the
// option sets above, every SKU: [0, C, S] with S a whole vector (planes_vec16 accepts) and
// odd, [N, C, 0], a zero in the last of two spatial dims, no spatial dims, everything empty,
// channels-last with N = 0; BatchNorm training / eval, InstanceNorm, GroupNorm over N = 0.
// Against the reference (InstanceNorm's running stats NaN for N = 0) and, in the *_opts
// functions, byte for byte: running stats kept, saved statistics exactly 0 and
// 1 / sqrt(eps), parameter gradients exactly 0 from saved statistics poisoned with NaN, y /
// grad_x written nowhere (their guard bytes).
TEST_P(ChanNormGpu, EmptyInputs) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  auto c = [&](std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  for (const auto& x : {c({0, 4, 8}), c({0, 4, 7}), c({3, 4, 0}), c({2, 4, 5, 0}), c({0, 4}), c({0, 4, 0}),
                        nhwc(t, 0, 4, 3, 3)})  // GroupNorm refuses spatial 0 with N > 0 (GroupNorm above asserts it)
    run_every_option_set(ChanCase{x.to_string(), x}, t, x.shape[0] == 0);
}

INSTANTIATE_TEST_SUITE_P(Types, ChanNormGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Run-time refusals: null, misaligned, aliasing, workspace; outputs untouched.
TEST(ChanNormGpuRefusals, BatchNorm) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kF32, {4, 8, 16});
  const auto cl = TensorLayout::contiguous(DType::kF32, {8});
  BatchNormDescriptor fd;
  fd.x = fd.y = x;
  fd.weight = fd.bias = fd.running_mean = fd.running_var = cl;
  BatchNormBackwardDescriptor bd;
  bd.grad_y = bd.x = bd.grad_x = x;
  bd.weight = bd.grad_weight = bd.grad_bias = cl;
  auto fwd = BatchNormPlan::select(test_stream(), fd);
  auto bwd = BatchNormBackwardPlan::select(test_stream(), bd);
  ASSERT_TRUE(fwd && bwd);
  const std::size_t fneed = fwd->workspace_size(), bneed = bwd->workspace_size();
  ASSERT_GT(fneed, 0u);
  ASSERT_GT(bneed, 0u);
  HostTensor hx(x), hw(cl);
  fill_random(hx, -2, 2);
  fill_random(hw, 0.5, 1.5);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream()), dw(hw, test_stream()), ds(hw, test_stream());
  Untouched y(x), rm(cl), rv(cl), sm(cl), si(cl), gx(x), gw(cl), gb(cl);
  const Stream& s = test_stream();
  const Workspace ws = test_workspace(std::max(fneed, bneed) + kWorkspaceAlignment);
  const BatchNormArgs fa{.x = dx.data(), .weight = dw.data(), .bias = dw.data(), .running_mean = rm.data(),
                         .running_var = rv.data(), .y = y.data(), .save_mean = sm.data(), .save_invstd = si.data()};
  const BatchNormBackwardArgs ba{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .save_mean = ds.data(),
                                 .save_invstd = ds.data(), .grad_x = gx.data(), .grad_weight = gw.data(),
                                 .grad_bias = gb.data()};
  void* x_row1 = static_cast<float*>(dx.data()) + 16;
  const Workspace fw{ws.data, fneed}, bw{ws.data, bneed};
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("forward", [&](Workspace w2) { return fwd->run(s, w2, fa); }, ws, fneed);
  auto brows = workspace_refusals("backward", [&](Workspace w2) { return bwd->run(s, w2, ba); }, ws, bneed);
  rows.insert(rows.end(), brows.begin(), brows.end());
  rows.insert(rows.end(), {
      {"forward null x", [&] { auto a = fa; a.x = nullptr; return fwd->run(s, fw, a); }, kBad, "args.x is null"},
      {"forward null running_var", [&] { auto a = fa; a.running_var = nullptr; return fwd->run(s, fw, a); }, kBad,
       "args.running_var is null"},
      {"forward null save_invstd", [&] { auto a = fa; a.save_invstd = nullptr; return fwd->run(s, fw, a); }, kBad,
       "args.save_invstd is null"},
      {"forward misaligned x", [&] { auto a = fa; a.x = static_cast<const char*>(dx.data()) + 4; return fwd->run(s, fw, a); },
       kMis, "not aligned to x.alignment = 16"},
      {"forward y over x shifted", [&] { auto a = fa; a.y = x_row1; return fwd->run(s, fw, a); }, kBad,
       "args.y overlaps args.x"},
      {"forward running_mean = save_mean", [&] { auto a = fa; a.save_mean = rm.data(); return fwd->run(s, fw, a); }, kBad,
       "args.running_mean and args.save_mean overlap"},
      {"forward running_var over weight", [&] { auto a = fa; a.running_var = dw.data(); return fwd->run(s, fw, a); }, kBad,
       "args.running_var overlaps args.weight"},
      {"backward null save_mean", [&] { auto a = ba; a.save_mean = nullptr; return bwd->run(s, bw, a); }, kBad,
       "args.save_mean is null"},
      {"backward misaligned grad_y", [&] {
         auto a = ba;
         a.grad_y = static_cast<const char*>(dg.data()) + 8;
         return bwd->run(s, bw, a);
       }, kMis, "not aligned to grad_y.alignment = 16"},
      {"backward grad_x over x shifted", [&] { auto a = ba; a.grad_x = x_row1; return bwd->run(s, bw, a); }, kBad,
       "args.grad_x overlaps args.x"},
      {"backward grad_bias = grad_weight", [&] { auto a = ba; a.grad_bias = gw.data(); return bwd->run(s, bw, a); }, kBad,
       "args.grad_weight and args.grad_bias overlap"},
  });
  expect_run_refusals(rows, {&y, &rm, &rv, &sm, &si, &gx, &gw, &gb});
}

TEST(ChanNormGpuRefusals, GroupAndInstanceNorm) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kBF16, {2, 8, 64});
  const auto cl = TensorLayout::contiguous(DType::kBF16, {8});
  const auto sl = TensorLayout::contiguous(DType::kF32, {2 * 8});
  GroupNormDescriptor gd;
  gd.x = gd.y = x;
  gd.num_groups = 4;
  gd.weight = gd.bias = cl;
  GroupNormBackwardDescriptor gbd;
  gbd.grad_y = gbd.x = gbd.grad_x = x;
  gbd.num_groups = 4;
  gbd.weight = gbd.grad_weight = gbd.grad_bias = cl;
  InstanceNormDescriptor id;
  id.x = id.y = x;
  id.weight = id.bias = cl;
  InstanceNormBackwardDescriptor ibd;
  ibd.grad_y = ibd.x = ibd.grad_x = x;
  ibd.weight = ibd.grad_weight = ibd.grad_bias = cl;
  auto gf = GroupNormPlan::select(test_stream(), gd);
  auto gb = GroupNormBackwardPlan::select(test_stream(), gbd);
  auto inf = InstanceNormPlan::select(test_stream(), id);
  auto inb = InstanceNormBackwardPlan::select(test_stream(), ibd);
  ASSERT_TRUE(gf && gb && inf && inb);
  const std::size_t need = gb->workspace_size();
  // every channel norm keeps its per-(n, c) coefficients in the workspace
  ASSERT_GT(gf->workspace_size(), 0u);
  ASSERT_GT(inf->workspace_size(), 0u);
  ASSERT_GT(inb->workspace_size(), 0u);
  HostTensor hx(x), hw(cl), hs(sl);
  fill_random(hx, -2, 2);
  fill_random(hw, 0.5, 1.5);
  fill_random(hs, 0.5, 1.5);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream()), dw(hw, test_stream()), ds(hs, test_stream());
  Untouched y(x), m(sl), r(sl), gx(x), gw(cl), gbias(cl);
  const Stream& s = test_stream();
  const Workspace ws =
      test_workspace(std::max({need, gf->workspace_size(), inf->workspace_size(), inb->workspace_size()}) + kWorkspaceAlignment);
  const GroupNormArgs fa{.x = dx.data(), .weight = dw.data(), .bias = dw.data(), .y = y.data(), .mean = m.data(), .rstd = r.data()};
  const GroupNormBackwardArgs ba{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .mean = ds.data(),
                                 .rstd = ds.data(), .grad_x = gx.data(), .grad_weight = gw.data(), .grad_bias = gbias.data()};
  const InstanceNormArgs ia{.x = dx.data(), .weight = dw.data(), .bias = dw.data(), .y = y.data(), .mean = m.data(), .rstd = r.data()};
  const InstanceNormBackwardArgs iba{.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .mean = ds.data(),
                                     .rstd = ds.data(), .grad_x = gx.data(), .grad_weight = gw.data(), .grad_bias = gbias.data()};
  const Workspace fw{ws.data, gf->workspace_size()}, bw{ws.data, need}, iw{ws.data, inf->workspace_size()},
      ibw{ws.data, inb->workspace_size()};
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("group backward", [&](Workspace w2) { return gb->run(s, w2, ba); }, ws, need);
  rows.insert(rows.end(), {
      {"group forward null rstd", [&] { auto a = fa; a.rstd = nullptr; return gf->run(s, fw, a); }, kBad, "args.rstd is null"},
      {"group forward misaligned y", [&] { auto a = fa; a.y = static_cast<char*>(y.data()) + 2; return gf->run(s, fw, a); },
       kMis, "not aligned to y.alignment = 16"},
      {"group forward mean inside y", [&] { auto a = fa; a.mean = y.data(); return gf->run(s, fw, a); }, kBad,
       "args.y and args.mean overlap"},
      {"group forward workspace short", [&] { return gf->run(s, {ws.data, gf->workspace_size() - 1}, fa); },
       Code::kWorkspaceTooSmall, "workspace.bytes"},
      {"group backward null weight", [&] { auto a = ba; a.weight = nullptr; return gb->run(s, bw, a); }, kBad,
       "args.weight is null"},
      {"group backward grad_weight over weight", [&] { auto a = ba; a.grad_weight = dw.data(); return gb->run(s, bw, a); },
       kBad, "args.grad_weight overlaps args.weight"},
      {"instance forward null mean", [&] { auto a = ia; a.mean = nullptr; return inf->run(s, iw, a); }, kBad,
       "args.mean is null"},
      {"instance forward y over x shifted", [&] {
         auto a = ia;
         a.y = static_cast<char*>(dx.data()) + 128;
         return inf->run(s, iw, a);
       }, kBad, "args.y overlaps args.x"},
      // the rest of the four plans: misaligned pointers (bf16 rows declare 16 bytes, the f32
      // statistics 4), InstanceNormBackwardPlan's null / aliasing rows
      {"group backward misaligned grad_x", [&] {
         auto a = ba;
         a.grad_x = static_cast<char*>(gx.data()) + 2;
         return gb->run(s, bw, a);
       }, kMis, "not aligned to grad_x.alignment = 16"},
      {"group backward misaligned rstd", [&] { auto a = ba; a.rstd = static_cast<const char*>(a.rstd) + 2; return gb->run(s, bw, a); },
       kMis, "not aligned to rstd.alignment = 4"},
      {"instance forward misaligned x", [&] { auto a = ia; a.x = static_cast<const char*>(a.x) + 2; return inf->run(s, iw, a); },
       kMis, "not aligned to x.alignment = 16"},
      {"instance forward null weight", [&] { auto a = ia; a.weight = nullptr; return inf->run(s, iw, a); }, kBad,
       "args.weight is null"},
      {"instance forward rstd = mean", [&] { auto a = ia; a.rstd = a.mean; return inf->run(s, iw, a); }, kBad,
       "args.mean and args.rstd overlap"},
      {"instance backward null grad_y", [&] { auto a = iba; a.grad_y = nullptr; return inb->run(s, ibw, a); }, kBad,
       "args.grad_y is null"},
      {"instance backward null rstd", [&] { auto a = iba; a.rstd = nullptr; return inb->run(s, ibw, a); }, kBad,
       "args.rstd is null"},
      {"instance backward misaligned grad_y", [&] {
         auto a = iba;
         a.grad_y = static_cast<const char*>(a.grad_y) + 2;
         return inb->run(s, ibw, a);
       }, kMis, "not aligned to grad_y.alignment = 16"},
      {"instance backward misaligned mean", [&] { auto a = iba; a.mean = static_cast<const char*>(a.mean) + 2; return inb->run(s, ibw, a); },
       kMis, "not aligned to mean.alignment = 4"},
      {"instance backward grad_x over grad_y shifted", [&] {
         auto a = iba;
         a.grad_x = static_cast<char*>(dg.data()) + 32;
         return inb->run(s, ibw, a);
       }, kBad, "args.grad_x overlaps args.grad_y without the identical layout"},
      {"instance backward grad_weight over weight", [&] { auto a = iba; a.grad_weight = dw.data(); return inb->run(s, ibw, a); },
       kBad, "args.grad_weight overlaps args.weight (unsafe aliasing"},
      {"instance backward grad_bias = grad_weight", [&] { auto a = iba; a.grad_bias = gw.data(); return inb->run(s, ibw, a); },
       kBad, "args.grad_weight and args.grad_bias overlap"},
  });
  // the workspace rows of the group forward and both instance plans (one byte short, null, misaligned)
  for (auto* w : {&fw, &iw, &ibw}) ASSERT_GT(w->bytes, 0u);
  auto more = workspace_refusals("group forward", [&](Workspace w2) { return gf->run(s, w2, fa); }, ws, fw.bytes);
  rows.insert(rows.end(), more.begin(), more.end());
  more = workspace_refusals("instance forward", [&](Workspace w2) { return inf->run(s, w2, ia); }, ws, iw.bytes);
  rows.insert(rows.end(), more.begin(), more.end());
  more = workspace_refusals("instance backward", [&](Workspace w2) { return inb->run(s, w2, iba); }, ws, ibw.bytes);
  rows.insert(rows.end(), more.begin(), more.end());
  expect_run_refusals(rows, {&y, &m, &r, &gx, &gw, &gbias});
}

}  // namespace
}  // namespace baracuda::test
