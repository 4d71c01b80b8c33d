// baracuda::reference for LayerNormPlan / RMSNormPlan and their backward (rules in
// baracuda/ops/normalization.hpp): exact in long double, naive in the compute type (f32, or
// double for f64) with sequential sums, rounded to the output dtype. Rows are the kept dims
// in row-major order. Error scales (Result::scale; compare.hpp allows 4 eps(compute) scale):
// forward y: (|h| + mean|h|) * rstd * |w| * (log2 n + 4) + |b| (the mean's rounding is
// amplified by rstd: high-mean, low-variance rows); mean: mean|h| (log2 n + 4); rstd:
// rstd (log2 n + 4)(1 + |mean| rstd); backward: the terms of grad_x with the row sums
// weighted by log2 n + 2, and for grad_weight / grad_bias the sum of |terms| weighted by
// log2(rows) + 2 (the kernel adds rows per worker, then the workers in order).
#pragma once

#include <vector>

#include "baracuda/ops/normalization.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

struct NormForward {
  Result y;
  Result residual_out;  // empty without add_residual
  Result mean;          // per row (LayerNorm)
  Result rstd;          // per row
};
// residual / weight / bias: null when the descriptor has none.
Expected<NormForward> norm_forward(const NormDescriptor& d, const HostTensor& x, const HostTensor* residual,
                                   const HostTensor* weight, const HostTensor* bias);

struct NormGrads {
  Result grad_x;
  Result grad_weight;  // empty without has_weight
  Result grad_bias;    // empty without has_bias
};
// mean / rstd: the saved per-row values the kernel reads (mean ignored for RMSNorm).
Expected<NormGrads> norm_backward(const NormBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& x,
                                  const HostTensor* weight, const std::vector<double>& mean,
                                  const std::vector<double>& rstd);

}  // namespace baracuda::reference
