// Input ranges where each unary kind is defined, for random test inputs (the GPU tests and
// `baracuda check` add +-0, +-inf, NaN, subnormal, huge and tiny values on top).
#pragma once

#include <utility>

#include "baracuda/ops/elementwise.hpp"

namespace baracuda::reference {

// [lo, hi] of uniform random inputs for kind k (floating dtypes).
std::pair<double, double> unary_input_range(UnaryKind k);

}  // namespace baracuda::reference
