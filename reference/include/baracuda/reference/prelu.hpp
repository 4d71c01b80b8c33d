// baracuda::reference for PReluPlan / PReluBackwardPlan (rules in baracuda/ops/prelu.hpp):
// exact in double; naive in the compute type (the weight gradient summed in logical order).
#pragma once

#include "baracuda/ops/prelu.hpp"
#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {

template <class C> C prelu_value(C x, C w);                  // x > 0 ? x : w * x
template <class C> C prelu_grad_x(C g, C x, C w);            // x > 0 ? g : w * g
template <class C> C prelu_grad_w_term(C g, C x);            // x > 0 ? 0 : x * g

Expected<Result> prelu(const PReluDescriptor& d, const HostTensor& x, const HostTensor& weight);
struct PReluGrads {
  Result grad_x;       // empty when !compute_grad_x
  Result grad_weight;  // empty when !compute_grad_weight
};
Expected<PReluGrads> prelu_backward(const PReluBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& x,
                                    const HostTensor& weight);

}  // namespace baracuda::reference
