// baracuda::reference for RopePlan / RopeBackwardPlan (rules in baracuda/ops/rope.hpp).
//
// exact: the rotation with angle pos * inv_freq[i] and cos / sin in long double (inv_freq from
// rope_inv_freq, HF's formulas in double; cached cos / sin as stored); naive: what a plain
// kernel computes - angle float(pos) * float(inv_freq) in the compute type (f32; f64 for
// f64), its cos / sin, a c - b s in the compute type, rounded to the output dtype. scale:
// |a c| + |b s| (the terms of the rotated element). Pass-through elements are exact copies.
#pragma once

#include "baracuda/ops/rope.hpp"
#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {

// x is x (forward) or grad_y (backward); x2 the second tensor (null when the descriptor has
// none); position_ids, cos, sin null when absent.
struct RopeInputs {
  const HostTensor* x = nullptr;
  const HostTensor* x2 = nullptr;
  const HostTensor* position_ids = nullptr;
  const HostTensor* cos = nullptr;
  const HostTensor* sin = nullptr;
};
struct RopeResults {
  Result y;   // of x (logical order of y / grad_x)
  Result y2;  // of x2; empty without it
};
Expected<RopeResults> rope(const RopeDescriptor& d, const RopeInputs& in);
Expected<RopeResults> rope_backward(const RopeBackwardDescriptor& d, const RopeInputs& in);

}  // namespace baracuda::reference
