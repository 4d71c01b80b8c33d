// baracuda::reference for GatedActivationPlan / backward (rules in baracuda/ops/gated.hpp):
// exact in double, naive in the compute type (f32 for f32/f16/bf16), from the unary kinds'
// reference math (sigmoid, relu, silu, gelu).
#pragma once

#include <utility>

#include "baracuda/ops/gated.hpp"
#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {

UnaryKind gated_act_kind(GatedKind k);
template <class C> C gated_value(GatedKind k, C gate, C up);                         // act(gate) * up
template <class C> std::pair<C, C> gated_grads(GatedKind k, C g, C gate, C up);      // (grad_gate, grad_up)

// Results in y's logical order.
Expected<Result> gated_activation(const GatedActivationDescriptor& d, const HostTensor* x, const HostTensor* gate,
                                  const HostTensor* up);
struct GatedGrads {
  Result grad_x;     // kPacked: grad_x's logical order ([..., 2D])
  Result grad_gate;  // kSplit
  Result grad_up;    // kSplit
};
Expected<GatedGrads> gated_activation_backward(const GatedActivationBackwardDescriptor& d, const HostTensor& grad_y,
                                               const HostTensor* x, const HostTensor* gate, const HostTensor* up);

}  // namespace baracuda::reference
