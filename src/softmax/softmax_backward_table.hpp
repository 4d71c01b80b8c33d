// The softmax backward's candidate table as GumbelSoftmaxBackwardPlan sees it: gumbel's
// grad_x = y_soft (grad_y - sum grad_y y_soft) / tau is the softmax backward times 1 / tau,
// so it runs softmax's kernels (SoftmaxParams::scale) and needs no kernels of its own.
// Defined in softmax.cpp beside the softmax tables.
#pragma once

#include <span>

#include "baracuda/ops/gumbel_softmax.hpp"
#include "core/plan_impl.hpp"

namespace baracuda::softmax {

std::span<const Candidate<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>> gumbel_backward_candidates();

}  // namespace baracuda::softmax
