// baracuda::reference for AlibiPlan / AlibiBackwardPlan (rules in baracuda/ops/alibi.hpp).
//
// Forward: exact s - slope |i + off - j| in double; naive the same in the compute type (f32;
// f64 for f64) rounded to y's dtype; scale |s| + |slope d|. Backward: grad_s = grad_y
// (exact); grad_slope = -sum grad_y d summed in long double (exact) and in double in logical
// order (naive, the kernel accumulates in f64); scale: sum of |grad_y d|.
#pragma once

#include "baracuda/ops/alibi.hpp"
#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {

// s: null for the bias alone.
Expected<Result> alibi(const AlibiDescriptor& d, const HostTensor* s, const HostTensor& slopes);
struct AlibiGrads {
  Result grad_s;       // empty when grad_s is not wanted
  Result grad_slopes;  // empty when grad_slopes is not wanted
};
Expected<AlibiGrads> alibi_backward(const AlibiBackwardDescriptor& d, const HostTensor& grad_y);

}  // namespace baracuda::reference
