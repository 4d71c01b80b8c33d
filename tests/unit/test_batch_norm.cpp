// BatchNormPlan / GroupNormPlan / InstanceNormPlan (+ backward) on the CPU: the reference
// backward (grad_x, grad_weight, grad_bias) against central finite differences of the
// reference forward in every mode (BatchNorm training / eval, GroupNorm, InstanceNorm with
// input stats / running stats), the running-stat update against its formula, the dispatch
// decision from caps (planes_vec16 vs planes_strided, workspace), and select-time refusals
// naming the field and its value (wrong dtype, mismatched shapes, bad num_groups, per-channel
// arrays, strides, eps / momentum, too few values per statistic), and empty inputs (N = 0,
// spatial 0) accepted with PyTorch's results (reference and select). The run-time refusals
// (null, misaligned, aliasing, workspace too small) need a stream: ChanNormGpuRefusals.* in
// tests/gpu/test_batch_norm_gpu.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/batch_norm.hpp"
#include "select_refusals.hpp"

namespace baracuda::reference {
namespace {

TensorLayout c64(std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kF64, s); }

// Central differences of loss(x, w, b) = sum(g * y) against the reference backward.
struct FdCase {
  std::string what;
  std::function<std::vector<double>(const HostTensor&, const HostTensor&, const HostTensor&)> forward_y;
  std::function<ChanNormGrads(const HostTensor&, const HostTensor&, const HostTensor&, const HostTensor&)> backward;
  bool weight_grad = true, bias_grad = true;
};
void check_fd(const FdCase& fc, const TensorLayout& l, std::int64_t C, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  const auto cl = c64({C});
  HostTensor x(l), g(l), w(cl), b(cl);
  const std::int64_t n = l.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    x.set(i, u(rng));
    g.set(i, u(rng));
  }
  for (std::int64_t i = 0; i < C; ++i) {
    w.set(i, 0.5 + 0.25 * u(rng));
    b.set(i, u(rng));
  }
  auto loss = [&] {
    const auto y = fc.forward_y(x, w, b);
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += g.get(i) * y[static_cast<std::size_t>(i)];
    return s;
  };
  const ChanNormGrads grads = fc.backward(g, x, w, b);
  const double h = 1e-6, tol = 1e-6;
  auto central = [&](HostTensor& t, std::int64_t i) {
    const double v = t.get(i);
    t.set(i, v + h);
    const double lp = loss();
    t.set(i, v - h);
    const double lm = loss();
    t.set(i, v);
    return (lp - lm) / (2 * h);
  };
  for (std::int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(grads.grad_x.exact[static_cast<std::size_t>(i)], central(x, i), tol) << fc.what << " dx " << i;
  for (std::int64_t i = 0; fc.weight_grad && i < C; ++i)
    EXPECT_NEAR(grads.grad_weight.exact[static_cast<std::size_t>(i)], central(w, i), tol) << fc.what << " dweight " << i;
  for (std::int64_t i = 0; fc.bias_grad && i < C; ++i)
    EXPECT_NEAR(grads.grad_bias.exact[static_cast<std::size_t>(i)], central(b, i), tol) << fc.what << " dbias " << i;
}

std::vector<double> stats_of(const Result& r) { return r.exact; }

TEST(ChanNormReference, BatchNormBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  for (const auto& l : {c64({3, 4, 5}), c64({2, 3, 2, 3}), c64({6, 2})}) {
    const std::int64_t C = l.shape[1];
    const auto cl = c64({C});
    for (bool training : {true, false}) {
      BatchNormDescriptor fd;
      fd.x = fd.y = l;
      fd.training = training;
      fd.weight = fd.bias = fd.running_mean = fd.running_var = cl;
      fd.eps = 1e-3;
      HostTensor rm(cl), rv(cl);
      for (std::int64_t c = 0; c < C; ++c) {
        rm.set(c, 0.1 * static_cast<double>(c) - 0.2);
        rv.set(c, 0.5 + 0.3 * static_cast<double>(c));
      }
      BatchNormBackwardDescriptor bd;
      bd.grad_y = bd.x = bd.grad_x = l;
      bd.training = training;
      bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = cl;
      bd.eps = fd.eps;
      FdCase fc{std::string("batch_norm ") + (training ? "training " : "eval ") + l.to_string(),
                [&](const HostTensor& x, const HostTensor& w, const HostTensor& b) {
                  return batch_norm_forward(fd, x, &w, &b, &rm, &rv).value().y.exact;
                },
                [&](const HostTensor& g, const HostTensor& x, const HostTensor& w, const HostTensor& b) {
                  auto f = batch_norm_forward(fd, x, &w, &b, &rm, &rv).value();
                  return batch_norm_backward(bd, g, x, &w, stats_of(f.mean), stats_of(f.rstd), &rm, &rv).value();
                }};
      check_fd(fc, l, C, rng);
    }
  }
}

TEST(ChanNormReference, GroupAndInstanceNormBackwardMatchFiniteDifferences) {
  std::mt19937_64 rng(12);
  for (const auto& l : {c64({2, 6, 5}), c64({3, 4, 2, 2})}) {
    const std::int64_t C = l.shape[1];
    const auto cl = c64({C});
    for (int groups : {1, 2, static_cast<int>(C)}) {
      GroupNormDescriptor fd;
      fd.x = fd.y = l;
      fd.num_groups = groups;
      fd.weight = fd.bias = cl;
      fd.eps = 1e-3;
      GroupNormBackwardDescriptor bd;
      bd.grad_y = bd.x = bd.grad_x = l;
      bd.num_groups = groups;
      bd.weight = bd.grad_weight = bd.grad_bias = cl;
      FdCase fc{"group_norm groups " + std::to_string(groups) + " " + l.to_string(),
                [&](const HostTensor& x, const HostTensor& w, const HostTensor& b) {
                  return group_norm_forward(fd, x, &w, &b).value().y.exact;
                },
                [&](const HostTensor& g, const HostTensor& x, const HostTensor& w, const HostTensor&) {
                  auto f = group_norm_forward(fd, x, &w, nullptr).value();
                  return group_norm_backward(bd, g, x, &w, f.mean.exact, f.rstd.exact).value();
                }};
      check_fd(fc, l, C, rng);
    }
    for (bool input_stats : {true, false}) {
      InstanceNormDescriptor fd;
      fd.x = fd.y = l;
      fd.use_input_stats = input_stats;
      fd.weight = fd.bias = fd.running_mean = fd.running_var = cl;
      fd.eps = 1e-3;
      HostTensor rm(cl), rv(cl);
      for (std::int64_t c = 0; c < C; ++c) {
        rm.set(c, 0.3 - 0.1 * static_cast<double>(c));
        rv.set(c, 0.7 + 0.2 * static_cast<double>(c));
      }
      InstanceNormBackwardDescriptor bd;
      bd.grad_y = bd.x = bd.grad_x = l;
      bd.use_input_stats = input_stats;
      bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = cl;
      bd.eps = fd.eps;
      FdCase fc{std::string("instance_norm ") + (input_stats ? "input stats " : "running stats ") + l.to_string(),
                [&](const HostTensor& x, const HostTensor& w, const HostTensor& b) {
                  return instance_norm_forward(fd, x, &w, &b, &rm, &rv).value().y.exact;
                },
                [&](const HostTensor& g, const HostTensor& x, const HostTensor& w, const HostTensor& b) {
                  auto f = instance_norm_forward(fd, x, &w, &b, &rm, &rv).value();
                  return instance_norm_backward(bd, g, x, &w, f.mean.exact, f.rstd.exact, &rm, &rv).value();
                }};
      check_fd(fc, l, C, rng);
    }
  }
}

// has_weight = false (the weight read as 1) in every mode, BatchNorm training without
// running stats and without a bias: the backward of the weightless forward against central
// differences (grad_bias too; no grad_weight: the forward has no weight to differentiate).
TEST(ChanNormReference, BackwardWithoutWeightMatchesFiniteDifferences) {
  std::mt19937_64 rng(13);
  const auto l = c64({3, 4, 5});
  const std::int64_t C = 4;
  const auto cl = c64({C});
  HostTensor rm(cl), rv(cl);
  for (std::int64_t c = 0; c < C; ++c) {
    rm.set(c, 0.2 - 0.1 * static_cast<double>(c));
    rv.set(c, 0.6 + 0.25 * static_cast<double>(c));
  }
  for (bool training : {true, false}) {
    BatchNormDescriptor fd;
    fd.x = fd.y = l;
    fd.training = training;
    fd.has_weight = false;
    fd.has_running_stats = !training;
    fd.running_mean = fd.running_var = fd.bias = cl;
    fd.eps = 1e-3;
    BatchNormBackwardDescriptor bd;
    bd.grad_y = bd.x = bd.grad_x = l;
    bd.training = training;
    bd.has_weight = false;
    bd.compute_grad_weight = false;
    bd.grad_bias = bd.running_mean = bd.running_var = cl;
    bd.eps = fd.eps;
    FdCase fc{std::string("batch_norm without weight ") + (training ? "training" : "eval"),
              [&](const HostTensor& x, const HostTensor&, const HostTensor& b) {
                return batch_norm_forward(fd, x, nullptr, &b, training ? nullptr : &rm, training ? nullptr : &rv).value().y.exact;
              },
              [&](const HostTensor& g, const HostTensor& x, const HostTensor&, const HostTensor& b) {
                auto f = batch_norm_forward(fd, x, nullptr, &b, training ? nullptr : &rm, training ? nullptr : &rv).value();
                return batch_norm_backward(bd, g, x, nullptr, stats_of(f.mean), stats_of(f.rstd), &rm, &rv).value();
              },
              false, true};
    check_fd(fc, l, C, rng);
  }
  for (int groups : {1, 2}) {
    GroupNormDescriptor fd;
    fd.x = fd.y = l;
    fd.num_groups = groups;
    fd.has_weight = false;
    fd.bias = cl;
    fd.eps = 1e-3;
    GroupNormBackwardDescriptor bd;
    bd.grad_y = bd.x = bd.grad_x = l;
    bd.num_groups = groups;
    bd.has_weight = false;
    bd.compute_grad_weight = false;
    bd.grad_bias = cl;
    FdCase fc{"group_norm without weight, groups " + std::to_string(groups),
              [&](const HostTensor& x, const HostTensor&, const HostTensor& b) {
                return group_norm_forward(fd, x, nullptr, &b).value().y.exact;
              },
              [&](const HostTensor& g, const HostTensor& x, const HostTensor&, const HostTensor& b) {
                auto f = group_norm_forward(fd, x, nullptr, &b).value();
                return group_norm_backward(bd, g, x, nullptr, f.mean.exact, f.rstd.exact).value();
              },
              false, true};
    check_fd(fc, l, C, rng);
  }
  for (bool input_stats : {true, false}) {
    InstanceNormDescriptor fd;
    fd.x = fd.y = l;
    fd.use_input_stats = input_stats;
    fd.has_weight = false;
    fd.has_running_stats = !input_stats;
    fd.bias = fd.running_mean = fd.running_var = cl;
    fd.eps = 1e-3;
    InstanceNormBackwardDescriptor bd;
    bd.grad_y = bd.x = bd.grad_x = l;
    bd.use_input_stats = input_stats;
    bd.has_weight = false;
    bd.compute_grad_weight = false;
    bd.grad_bias = bd.running_mean = bd.running_var = cl;
    bd.eps = fd.eps;
    FdCase fc{std::string("instance_norm without weight ") + (input_stats ? "input stats" : "running stats"),
              [&](const HostTensor& x, const HostTensor&, const HostTensor& b) {
                return instance_norm_forward(fd, x, nullptr, &b, input_stats ? nullptr : &rm, input_stats ? nullptr : &rv)
                    .value()
                    .y.exact;
              },
              [&](const HostTensor& g, const HostTensor& x, const HostTensor&, const HostTensor& b) {
                auto f = instance_norm_forward(fd, x, nullptr, &b, input_stats ? nullptr : &rm, input_stats ? nullptr : &rv).value();
                return instance_norm_backward(bd, g, x, nullptr, f.mean.exact, f.rstd.exact, &rm, &rv).value();
              },
              false, true};
    check_fd(fc, l, C, rng);
  }
}

// Known values: x = [[1, 2], [3, 6]] as [N = 2, C = 2]: channel 0 {1, 3}, channel 1 {2, 6}.
TEST(ChanNormReference, BatchNormRunningStatsFollowPyTorch) {
  const auto l = c64({2, 2});
  const auto cl = c64({2});
  HostTensor x(l), rm(cl), rv(cl);
  const double xs[] = {1, 2, 3, 6};
  for (int i = 0; i < 4; ++i) x.set(i, xs[i]);
  rm.set(0, 0.5);
  rm.set(1, -1);
  rv.set(0, 2);
  rv.set(1, 1);
  BatchNormDescriptor d;
  d.x = d.y = l;
  d.has_weight = d.has_bias = false;
  d.running_mean = d.running_var = cl;
  d.momentum = 0.25;
  d.eps = 0;
  auto f = batch_norm_forward(d, x, nullptr, nullptr, &rm, &rv).value();
  EXPECT_DOUBLE_EQ(f.mean.exact[0], 2);
  EXPECT_DOUBLE_EQ(f.mean.exact[1], 4);
  EXPECT_DOUBLE_EQ(f.rstd.exact[0], 1);    // biased var of {1, 3} = 1
  EXPECT_DOUBLE_EQ(f.rstd.exact[1], 0.5);  // biased var of {2, 6} = 4
  EXPECT_DOUBLE_EQ(f.running_mean.exact[0], 0.75 * 0.5 + 0.25 * 2);
  EXPECT_DOUBLE_EQ(f.running_mean.exact[1], 0.75 * -1 + 0.25 * 4);
  EXPECT_DOUBLE_EQ(f.running_var.exact[0], 0.75 * 2 + 0.25 * 2);  // unbiased var {1, 3} = 2
  EXPECT_DOUBLE_EQ(f.running_var.exact[1], 0.75 * 1 + 0.25 * 8);
  EXPECT_DOUBLE_EQ(f.y.exact[0], -1);
  EXPECT_DOUBLE_EQ(f.y.exact[3], 1);
}

// Empty inputs as PyTorch (checked against torch 2.15 CPU; rules in batch_norm.hpp): BatchNorm
// training over N * spatial = 0 values and InstanceNorm over spatial 0 keep the running stats
// and save mean 0, invstd 1 / sqrt(eps); InstanceNorm over N = 0 instances writes NaN running
// stats (whatever the momentum); every backward gives zero grad_weight / grad_bias.
TEST(ChanNormReference, EmptyInputsFollowPyTorch) {
  const auto cl = c64({2});
  HostTensor rm(cl), rv(cl), w(cl), b(cl);
  const double rms[] = {0.5, -1}, rvs[] = {2, 3};
  for (int c = 0; c < 2; ++c) {
    rm.set(c, rms[c]);
    rv.set(c, rvs[c]);
    w.set(c, 1.5 - c);
    b.set(c, 0.25 + c);
  }
  const double eps = 1e-3, rs = 1 / std::sqrt(eps);
  auto expect_saved = [&](const ChanNormForward& f, std::int64_t n) {
    ASSERT_EQ(f.mean.exact.size(), static_cast<std::size_t>(n));
    ASSERT_EQ(f.rstd.exact.size(), static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < f.mean.exact.size(); ++i) {
      EXPECT_EQ(f.mean.exact[i], 0.0);
      EXPECT_EQ(f.mean.naive[i], 0.0);
      EXPECT_DOUBLE_EQ(f.rstd.exact[i], rs);
      EXPECT_DOUBLE_EQ(f.rstd.naive[i], rs);
    }
  };
  auto expect_running = [&](const ChanNormForward& f, bool nan) {
    ASSERT_EQ(f.running_mean.exact.size(), 2u);
    ASSERT_EQ(f.running_var.exact.size(), 2u);
    for (std::size_t c = 0; c < 2; ++c) {
      for (double v : {f.running_mean.exact[c], f.running_mean.naive[c]}) {
        if (nan) EXPECT_TRUE(std::isnan(v)) << v;
        else EXPECT_EQ(v, rms[c]);
      }
      for (double v : {f.running_var.exact[c], f.running_var.naive[c]}) {
        if (nan) EXPECT_TRUE(std::isnan(v)) << v;
        else EXPECT_EQ(v, rvs[c]);
      }
    }
  };
  auto expect_zero_grads = [](const ChanNormGrads& g) {
    EXPECT_TRUE(g.grad_x.exact.empty());
    ASSERT_EQ(g.grad_weight.exact.size(), 2u);
    ASSERT_EQ(g.grad_bias.exact.size(), 2u);
    for (std::size_t c = 0; c < 2; ++c)
      for (double v : {g.grad_weight.exact[c], g.grad_weight.naive[c], g.grad_bias.exact[c], g.grad_bias.naive[c]})
        EXPECT_EQ(v, 0.0);
  };
  // BatchNorm training: [0, C, S], [N, C, 0], [0, C]
  for (const auto& l : {c64({0, 2, 3}), c64({3, 2, 0}), c64({0, 2})}) {
    SCOPED_TRACE("batch_norm " + l.to_string());
    HostTensor x(l), g(l);
    BatchNormDescriptor d;
    d.x = d.y = l;
    d.weight = d.bias = d.running_mean = d.running_var = cl;
    d.eps = eps;
    d.momentum = 0.25;
    const auto f = batch_norm_forward(d, x, &w, &b, &rm, &rv).value();
    EXPECT_TRUE(f.y.exact.empty());
    expect_saved(f, 2);
    expect_running(f, false);
    BatchNormBackwardDescriptor bd;
    bd.grad_y = bd.x = bd.grad_x = l;
    bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = cl;
    expect_zero_grads(batch_norm_backward(bd, g, x, &w, f.mean.exact, f.rstd.exact, &rm, &rv).value());
  }
  // InstanceNorm with input stats and running stats: [0, C, S] and [0, C, 0] (NaN), [N, C, 0]
  for (const auto& l : {c64({0, 2, 3}), c64({0, 2, 0}), c64({3, 2, 0})}) {
    SCOPED_TRACE("instance_norm " + l.to_string());
    HostTensor x(l), g(l);
    for (double momentum : {0.0, 0.25}) {
      InstanceNormDescriptor d;
      d.x = d.y = l;
      d.has_running_stats = true;
      d.weight = d.bias = d.running_mean = d.running_var = cl;
      d.eps = eps;
      d.momentum = momentum;
      const auto f = instance_norm_forward(d, x, &w, &b, &rm, &rv).value();
      EXPECT_TRUE(f.y.exact.empty());
      expect_saved(f, l.shape[0] * 2);
      expect_running(f, l.shape[0] == 0);
      InstanceNormBackwardDescriptor bd;
      bd.grad_y = bd.x = bd.grad_x = l;
      bd.weight = bd.grad_weight = bd.grad_bias = bd.running_mean = bd.running_var = cl;
      expect_zero_grads(instance_norm_backward(bd, g, x, &w, f.mean.exact, f.rstd.exact, &rm, &rv).value());
    }
  }
  // GroupNorm over N = 0: nothing to write but zero parameter gradients
  for (const auto& l : {c64({0, 2, 3}), c64({0, 2, 0})}) {
    SCOPED_TRACE("group_norm " + l.to_string());
    HostTensor x(l), g(l);
    GroupNormDescriptor d;
    d.x = d.y = l;
    d.num_groups = 2;
    d.weight = d.bias = cl;
    const auto f = group_norm_forward(d, x, &w, &b).value();
    EXPECT_TRUE(f.y.exact.empty());
    EXPECT_TRUE(f.mean.exact.empty());
    EXPECT_TRUE(f.rstd.exact.empty());
    GroupNormBackwardDescriptor bd;
    bd.grad_y = bd.x = bd.grad_x = l;
    bd.num_groups = 2;
    bd.weight = bd.grad_weight = bd.grad_bias = cl;
    expect_zero_grads(group_norm_backward(bd, g, x, &w, f.mean.exact, f.rstd.exact).value());
  }
}

}  // namespace
}  // namespace baracuda::reference

namespace baracuda {
namespace {

DeviceCaps caps(int sm) { return DeviceCaps::for_arch(sm).value(); }
TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

BatchNormDescriptor bn_fwd(TensorLayout x) {
  BatchNormDescriptor d;
  d.x = d.y = x;
  d.weight = d.bias = d.running_mean = d.running_var = TensorLayout::contiguous(x.dtype, {x.shape[1]});
  return d;
}
BatchNormBackwardDescriptor bn_bwd(TensorLayout x) {
  BatchNormBackwardDescriptor d;
  d.grad_y = d.x = d.grad_x = x;
  d.weight = d.grad_weight = d.grad_bias = d.running_mean = d.running_var =
      TensorLayout::contiguous(x.dtype, {x.shape[1]});
  return d;
}
GroupNormDescriptor gn_fwd(TensorLayout x, int groups) {
  GroupNormDescriptor d;
  d.x = d.y = x;
  d.num_groups = groups;
  d.weight = d.bias = TensorLayout::contiguous(x.dtype, {x.shape[1]});
  return d;
}
GroupNormBackwardDescriptor gn_bwd(TensorLayout x, int groups) {
  GroupNormBackwardDescriptor d;
  d.grad_y = d.x = d.grad_x = x;
  d.num_groups = groups;
  d.weight = d.grad_weight = d.grad_bias = TensorLayout::contiguous(x.dtype, {x.shape[1]});
  return d;
}
InstanceNormDescriptor in_fwd(TensorLayout x) {
  InstanceNormDescriptor d;
  d.x = d.y = x;
  d.weight = d.bias = d.running_mean = d.running_var = TensorLayout::contiguous(x.dtype, {x.shape[1]});
  return d;
}
InstanceNormBackwardDescriptor in_bwd(TensorLayout x) {
  InstanceNormBackwardDescriptor d;
  d.grad_y = d.x = d.grad_x = x;
  d.weight = d.grad_weight = d.grad_bias = d.running_mean = d.running_var =
      TensorLayout::contiguous(x.dtype, {x.shape[1]});
  return d;
}

template <class PlanT>
std::string name_for(int sm, const typename PlanT::Descriptor& d) {
  auto p = PlanT::select_for_caps(caps(sm), d);
  return p ? p->sku().name() : "ERROR " + p.error().to_string();
}

TEST(ChanNormPlanSelect, Layouts) {
  auto bf = [](std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(DType::kBF16, s); };
  EXPECT_EQ(name_for<BatchNormPlan>(90, bn_fwd(bf({32, 256, 56, 56}))), "batch_norm.fwd.planes_vec16[bf16,f32].sm80+");
  EXPECT_EQ(name_for<BatchNormBackwardPlan>(90, bn_bwd(bf({32, 256, 56, 56}))),
            "batch_norm.bwd.planes_vec16[bf16,f32].sm80+");
  EXPECT_EQ(name_for<BatchNormPlan>(90, bn_fwd(bf({32, 256, 7, 7}))), "batch_norm.fwd.planes_strided[bf16,f32].sm80+");
  EXPECT_EQ(name_for<GroupNormPlan>(90, gn_fwd(bf({8, 512, 64, 64}), 32)), "group_norm.fwd.planes_vec16[bf16,f32].sm80+");
  EXPECT_EQ(name_for<GroupNormBackwardPlan>(80, gn_bwd(bf({8, 512, 64, 64}), 32)),
            "group_norm.bwd.planes_vec16[bf16,f32].sm80+");
  EXPECT_EQ(name_for<InstanceNormPlan>(89, in_fwd(TensorLayout::contiguous(DType::kF32, {4, 3, 16, 16}))),
            "instance_norm.fwd.planes_vec16[f32,f32].sm80+");
  EXPECT_EQ(name_for<InstanceNormBackwardPlan>(90, in_bwd(TensorLayout::contiguous(DType::kF64, {4, 3, 5}))),
            "instance_norm.bwd.planes_strided[f64,f64].sm80+");
  // channels-last (C innermost): the spatial dims are not a unit-stride run
  const auto cl = TensorLayout::strided(DType::kBF16, {8, 64, 16, 16}, {64 * 256, 1, 16 * 64, 64});
  auto r = BatchNormPlan::candidates(caps(90), bn_fwd(cl));
  ASSERT_TRUE(r.has_value());
  EXPECT_NE((*r)[0].rejection.find("x = bf16[8,64,16,16]{16384,1,1024,64}: the spatial dims are not one unit-stride run"),
            std::string::npos)
      << (*r)[0].rejection;
  EXPECT_TRUE((*r)[1].rejection.empty()) << (*r)[1].rejection;
  // workspace: partials (segments x chunks) | coefficients | extra, each 256-byte aligned
  auto bn = BatchNormPlan::select_for_caps(caps(90), bn_fwd(bf({32, 256, 56, 56})));
  ASSERT_TRUE(bn.has_value());
  EXPECT_GT(bn->workspace_size(), 256u * 4u * 4u);
  EXPECT_EQ(bn->workspace_size() % kWorkspaceAlignment, 0u);
  BatchNormDescriptor eval = bn_fwd(bf({32, 256, 56, 56}));
  eval.training = false;
  auto ev = BatchNormPlan::select_for_caps(caps(90), eval);
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->workspace_size(), 256u * 4u * 4u);  // coefficients only: no pass 1
  EXPECT_TRUE(bn->sku().precision.deterministic);
}

using test::Refusal;
using test::expect_select_refusals;

// Empty inputs are accepted as PyTorch accepts them (torch 2.15 CPU): BatchNorm training
// forward and backward with N * spatial == 0 (N * spatial == 1 stays refused: SelectRefusals),
// InstanceNorm with input stats for N == 0 or spatial 0, with and without running stats
// (spatial 1 is refused for every N), GroupNorm with N == 0 (spatial 0 with N > 0 is refused).
template <class PlanT>
void expect_accepted(const typename PlanT::Descriptor& d) {
  auto p = PlanT::select_for_caps(caps(90), d);
  EXPECT_TRUE(p.has_value()) << d.to_string() << ": " << (p ? std::string() : p.error().to_string());
}
TEST(ChanNormPlanSelect, EmptyInputsAsPyTorch) {
  for (DType t : {DType::kF64, DType::kF32, DType::kBF16}) {
    for (const auto& x : {contig(t, {0, 6, 5}), contig(t, {0, 6, 8}), contig(t, {4, 6, 0}), contig(t, {0, 6, 0}),
                          contig(t, {2, 6, 3, 0}), contig(t, {0, 6})}) {
      std::int64_t S = 1;
      for (int i = 2; i < x.rank; ++i) S *= x.shape[i];
      for (bool stats : {true, false}) {
        BatchNormDescriptor bn = bn_fwd(x);
        bn.has_running_stats = bn.save_stats = stats;
        expect_accepted<BatchNormPlan>(bn);
        InstanceNormDescriptor in = in_fwd(x);
        in.has_running_stats = in.save_stats = stats;
        if (S != 1) expect_accepted<InstanceNormPlan>(in);
      }
      expect_accepted<BatchNormBackwardPlan>(bn_bwd(x));
      expect_accepted<InstanceNormBackwardPlan>(in_bwd(x));
      if (x.shape[0] == 0) {
        expect_accepted<GroupNormPlan>(gn_fwd(x, 3));
        expect_accepted<GroupNormBackwardPlan>(gn_bwd(x, 3));
      }
    }
  }
}


const TensorLayout kX = TensorLayout::contiguous(DType::kF32, {4, 6, 5});
const TensorLayout kC6 = TensorLayout::contiguous(DType::kF32, {6});

TEST(SelectRefusals, BatchNormPlan) {
  using D = BatchNormDescriptor;
  expect_select_refusals<BatchNormPlan>(
      bn_fwd(kX),
      {{"dtype", [](D& d) { d.y = contig(DType::kF16, {4, 6, 5}); }, "y.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.x = d.y = contig(DType::kI32, {4, 6, 5}); }, "x.dtype = i32 is not supported by batch_norm"},
       {"dtype", [](D& d) { d.running_var = contig(DType::kF64, {6}); },
        "running_var.dtype = f64 is neither x.dtype = f32 nor the compute type f32"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {4, 6, 6}); }, "y = f32[4,6,6] does not have the shape of x"},
       {"shape", [](D& d) { d.weight = contig(DType::kF32, {5}); }, "weight = f32[5] is not [C] = [6] (x.shape[1])"},
       {"shape", [](D& d) { d.bias = contig(DType::kF32, {1, 6}); }, "bias = f32[1,6] is not [C] = [6]"},
       {"rank", [](D& d) { d.x = d.y = contig(DType::kF32, {6}); }, "x.rank = 1: batch_norm needs x as [N, C, *]"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF32, {4, 6, 5}, {0, 5, 1}); },
        "y = f32[4,6,5]{0,5,1} maps several elements to one address"},
       {"stride", [](D& d) { d.running_mean = TensorLayout::strided(DType::kF32, {6}, {0}); },
        "running_mean = f32[6]{0} maps several elements to one address"},
       {"eps", [](D& d) { d.eps = -1; }, "eps = -1 must be finite and >= 0"},
       {"momentum", [](D& d) { d.momentum = std::numeric_limits<double>::quiet_NaN(); }, "momentum = nan must be finite"},
       {"values", [](D& d) { d.x = d.y = contig(DType::kF32, {1, 6}); },
        "batch_norm training needs more than 1 value per channel (N * spatial = 1)"},
       {"values", [](D& d) { d.x = d.y = contig(DType::kF32, {1, 6, 1, 1}); },
        "x = f32[1,6,1,1]: batch_norm training needs more than 1 value per channel (N * spatial = 1)"},
       {"channels", [](D& d) { d.x = d.y = contig(DType::kF32, {4, 0, 5}); }, "x.shape[1] = 0: no channels"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF32, {4, 6, 5}, {std::int64_t{1} << 62, 5, 1}); },
        "x = f32[4,6,5]{4611686018427387904,5,1} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, BatchNormBackwardPlan) {
  using D = BatchNormBackwardDescriptor;
  D eval = bn_bwd(kX);
  eval.training = false;
  expect_select_refusals<BatchNormBackwardPlan>(
      eval,
      {{"dtype", [](D& d) { d.grad_y = contig(DType::kBF16, {4, 6, 5}); }, "grad_y.dtype = bf16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.grad_weight = contig(DType::kF16, {6}); },
        "grad_weight.dtype = f16 is neither x.dtype = f32 nor the compute type f32"},
       {"shape", [](D& d) { d.grad_x = contig(DType::kF32, {4, 6}); }, "grad_x = f32[4,6] does not have the shape of x"},
       {"shape", [](D& d) { d.running_mean = contig(DType::kF32, {7}); }, "running_mean = f32[7] is not [C] = [6]"},
       {"stride", [](D& d) { d.grad_bias = TensorLayout::strided(DType::kF32, {6}, {0}); },
        "grad_bias = f32[6]{0} maps several elements to one address"},
       {"eps", [](D& d) { d.eps = std::numeric_limits<double>::infinity(); }, "eps = inf must be finite and >= 0"},
       {"dtype", [](D& d) { d.x = d.grad_y = d.grad_x = contig(DType::kI32, {4, 6, 5}); },
        "x.dtype = i32 is not supported by batch_norm_backward"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kF32, {4, 6, 5}, {30, 0, 1}); },
        "grad_x = f32[4,6,5]{30,0,1} maps several elements to one address"}});
}

TEST(SelectRefusals, GroupNormPlan) {
  using D = GroupNormDescriptor;
  expect_select_refusals<GroupNormPlan>(
      gn_fwd(kX, 3),
      {{"dtype", [](D& d) { d.weight = contig(DType::kF64, {6}); },
        "weight.dtype = f64 is neither x.dtype = f32 nor the compute type f32"},
       {"dtype", [](D& d) { d.x = d.y = contig(DType::kU8, {4, 6, 5}); }, "x.dtype = u8 is not supported by group_norm"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {4, 6, 4}); }, "y = f32[4,6,4] does not have the shape of x"},
       {"num_groups", [](D& d) { d.num_groups = 4; }, "num_groups = 4 does not divide x.shape[1] = 6"},
       {"num_groups", [](D& d) { d.num_groups = 0; }, "num_groups = 0 does not divide x.shape[1] = 6 (needs num_groups >= 1)"},
       {"num_groups", [](D& d) { d.num_groups = -2; }, "num_groups = -2 does not divide"},
       {"spatial", [](D& d) { d.x = d.y = contig(DType::kF32, {4, 6, 0}); }, "spatial size 0 (no values per group)"},
       {"eps", [](D& d) { d.eps = -1e-5; }, "eps = -1.0000000000000001e-05 must be finite and >= 0"},
       {"shape", [](D& d) { d.bias = contig(DType::kF32, {3}); }, "bias = f32[3] is not [C] = [6] (x.shape[1])"},
       {"rank", [](D& d) { d.x = d.y = contig(DType::kF32, {6}); }, "x.rank = 1: group_norm needs x as [N, C, *]"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF32, {4, 6, 5}, {30, 5, 0}); },
        "y = f32[4,6,5]{30,5,0} maps several elements to one address"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF32, {4, 6, 5}, {std::int64_t{1} << 62, 5, 1}); },
        "x = f32[4,6,5]{4611686018427387904,5,1} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, GroupNormBackwardPlan) {
  using D = GroupNormBackwardDescriptor;
  expect_select_refusals<GroupNormBackwardPlan>(
      gn_bwd(kX, 2),
      {{"dtype", [](D& d) { d.x = contig(DType::kF16, {4, 6, 5}); }, "grad_y.dtype = f32 differs from x.dtype = f16"},
       {"shape", [](D& d) { d.grad_y = contig(DType::kF32, {4, 3, 5}); }, "grad_y = f32[4,3,5] does not have the shape of x"},
       {"shape", [](D& d) { d.grad_bias = contig(DType::kF32, {3}); }, "grad_bias = f32[3] is not [C] = [6]"},
       {"num_groups", [](D& d) { d.num_groups = 5; }, "num_groups = 5 does not divide x.shape[1] = 6"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kF32, {4, 6, 5}, {30, 0, 1}); },
        "grad_x = f32[4,6,5]{30,0,1} maps several elements to one address"},
       {"dtype", [](D& d) { d.x = d.grad_y = d.grad_x = contig(DType::kI64, {4, 6, 5}); },
        "x.dtype = i64 is not supported by group_norm_backward"},
       {"dtype", [](D& d) { d.grad_weight = contig(DType::kBF16, {6}); },
        "grad_weight.dtype = bf16 is neither x.dtype = f32 nor the compute type f32"},
       {"num_groups", [](D& d) { d.num_groups = 0; }, "num_groups = 0 does not divide x.shape[1] = 6"},
       {"stride", [](D& d) { d.grad_weight = TensorLayout::strided(DType::kF32, {6}, {0}); },
        "grad_weight = f32[6]{0} maps several elements to one address"}});
}

TEST(SelectRefusals, InstanceNormPlan) {
  using D = InstanceNormDescriptor;
  D valid = in_fwd(kX);
  valid.has_running_stats = true;
  expect_select_refusals<InstanceNormPlan>(
      valid,
      {{"dtype", [](D& d) { d.bias = contig(DType::kBF16, {6}); },
        "bias.dtype = bf16 is neither x.dtype = f32 nor the compute type f32"},
       {"shape", [](D& d) { d.running_mean = contig(DType::kF32, {4, 6}); }, "running_mean = f32[4,6] is not [C] = [6]"},
       {"spatial", [](D& d) { d.x = d.y = contig(DType::kF32, {4, 6}); },
        "instance_norm with input stats needs more than 1 spatial element (spatial = 1)"},
       {"spatial", [](D& d) { d.x = d.y = contig(DType::kF32, {0, 6, 1}); },  // any N, as F.instance_norm
        "x = f32[0,6,1]: instance_norm with input stats needs more than 1 spatial element (spatial = 1)"},
       {"momentum", [](D& d) { d.momentum = std::numeric_limits<double>::infinity(); }, "momentum = inf must be finite"},
       {"stride", [](D& d) { d.running_var = TensorLayout::strided(DType::kF32, {6}, {0}); },
        "running_var = f32[6]{0} maps several elements to one address"},
       {"dtype", [](D& d) { d.y = contig(DType::kF16, {4, 6, 5}); }, "y.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.x = d.y = contig(DType::kBool, {4, 6, 5}); }, "x.dtype = bool is not supported by instance_norm"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {4, 5, 6}); }, "y = f32[4,5,6] does not have the shape of x"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF32, {4, 6, 5}, {5, 5, 1}); },
        "y = f32[4,6,5]{5,5,1} maps several elements to one address"},
       {"eps", [](D& d) { d.eps = std::numeric_limits<double>::quiet_NaN(); }, "eps = nan must be finite and >= 0"}});
}

TEST(SelectRefusals, InstanceNormBackwardPlan) {
  using D = InstanceNormBackwardDescriptor;
  expect_select_refusals<InstanceNormBackwardPlan>(
      in_bwd(kX),
      {{"dtype", [](D& d) { d.grad_x = contig(DType::kF64, {4, 6, 5}); }, "grad_x.dtype = f64 differs from x.dtype = f32"},
       {"shape", [](D& d) { d.weight = contig(DType::kF32, {5}); }, "weight = f32[5] is not [C] = [6]"},
       {"rank", [](D& d) { d.x = d.grad_y = d.grad_x = contig(DType::kF32, {30}); }, "x.rank = 1"},
       {"dtype", [](D& d) { d.x = d.grad_y = d.grad_x = contig(DType::kI8, {4, 6, 5}); },
        "x.dtype = i8 is not supported by instance_norm_backward"},
       {"dtype", [](D& d) { d.grad_bias = contig(DType::kF64, {6}); },
        "grad_bias.dtype = f64 is neither x.dtype = f32 nor the compute type f32"},
       {"shape", [](D& d) { d.grad_y = contig(DType::kF32, {4, 6, 6}); }, "grad_y = f32[4,6,6] does not have the shape of x"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kF32, {4, 6, 5}, {0, 5, 1}); },
        "grad_x = f32[4,6,5]{0,5,1} maps several elements to one address"},
       {"stride", [](D& d) { d.grad_weight = TensorLayout::strided(DType::kF32, {6}, {0}); },
        "grad_weight = f32[6]{0} maps several elements to one address"},
       {"eps", [](D& d) {
          d.use_input_stats = false;  // eps is read with the running stats
          d.eps = -2;
        }, "eps = -2 must be finite and >= 0"}});
}

}  // namespace
}  // namespace baracuda
