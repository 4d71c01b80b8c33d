// baracuda::reference for BatchNormPlan / GroupNormPlan / InstanceNormPlan and their
// backward (rules in baracuda/ops/batch_norm.hpp): exact in long double, naive in the
// compute type (f32, or double for f64) with sequential two-pass sums, rounded to the output
// dtype. x is read in logical [N, C, S] order. Error scales (Result::scale; compare.hpp
// allows 4 eps(compute) scale), with depth = log2(values per statistic) + 4:
//   y: (|x| + mean|x|) * invstd * |w| * depth + |b|   (the mean's rounding amplified by invstd)
//   saved mean: mean|x| depth; invstd / rstd: invstd depth (1 + |mean| invstd);
//   running mean: (1 - m)|rm| + m mean|x| depth; running var: (1 - m)|rv| + m M/(M-1) depth
//   (var + std mean|x|) (per-vector deviations of high-mean data round at eps |mean|);
//   grad_x: the terms with the set sums weighted by depth; grad_weight / grad_bias: the sum
//   of |terms| weighted by log2(N) + 4 plus the error of xhat from the saved statistics.
// Empty inputs follow PyTorch (batch_norm.hpp): a statistic over no values is mean 0,
// variance 0; running stats kept (exact = naive = the input, scale 0) or NaN (InstanceNorm
// over N = 0 instances); parameter gradients 0.
#pragma once

#include <vector>

#include "baracuda/ops/batch_norm.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

struct ChanNormForward {
  Result y;
  Result mean;          // saved: BatchNorm save_mean [C], GroupNorm [N, G], InstanceNorm [N, C]; empty in eval
  Result rstd;          // saved invstd / rstd, same shape
  Result running_mean;  // [C] updated values (or kept / NaN on empty inputs); empty when not updated
  Result running_var;
};
// weight / bias / running_*: null when the descriptor has none.
Expected<ChanNormForward> batch_norm_forward(const BatchNormDescriptor& d, const HostTensor& x, const HostTensor* weight,
                                             const HostTensor* bias, const HostTensor* running_mean,
                                             const HostTensor* running_var);
Expected<ChanNormForward> group_norm_forward(const GroupNormDescriptor& d, const HostTensor& x, const HostTensor* weight,
                                             const HostTensor* bias);
Expected<ChanNormForward> instance_norm_forward(const InstanceNormDescriptor& d, const HostTensor& x,
                                                const HostTensor* weight, const HostTensor* bias,
                                                const HostTensor* running_mean, const HostTensor* running_var);

struct ChanNormGrads {
  Result grad_x;
  Result grad_weight;  // empty unless computed
  Result grad_bias;
};
// mean / rstd: the saved statistics the kernel reads (training / input stats; ignored in eval).
Expected<ChanNormGrads> batch_norm_backward(const BatchNormBackwardDescriptor& d, const HostTensor& grad_y,
                                            const HostTensor& x, const HostTensor* weight,
                                            const std::vector<double>& mean, const std::vector<double>& rstd,
                                            const HostTensor* running_mean, const HostTensor* running_var);
Expected<ChanNormGrads> group_norm_backward(const GroupNormBackwardDescriptor& d, const HostTensor& grad_y,
                                            const HostTensor& x, const HostTensor* weight,
                                            const std::vector<double>& mean, const std::vector<double>& rstd);
Expected<ChanNormGrads> instance_norm_backward(const InstanceNormBackwardDescriptor& d, const HostTensor& grad_y,
                                               const HostTensor& x, const HostTensor* weight,
                                               const std::vector<double>& mean, const std::vector<double>& rstd,
                                               const HostTensor* running_mean, const HostTensor* running_var);

}  // namespace baracuda::reference
