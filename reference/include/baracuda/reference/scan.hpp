// baracuda::reference for ScanPlan / ScanBackwardPlan (rules in baracuda/ops/scan.hpp):
// exact in long double, naive sequentially in the compute type (f32 for f16 / bf16 / f32,
// double for f64), rounded to the output dtype; integer sums / products in wrapping 64-bit
// integers, integer cummax / cummin exactly in int64
// (exact == naive, the i64 values also in `ints`, since doubles stop at 2^53). Results are in
// the output's logical (row-major) order.
//
// Error scales (Result::scale, see compare.hpp), with depth = log2(len + 1) + 2 (a tree
// scan's rounding depth): cumsum depth * sum of |x| up to the element; cumprod |y| * (number
// of factors); logcumsumexp depth * (|y| + 1); cummax / cummin 0 (bit-exact). Backward:
// cumsum depth * sum |g|; cumprod depth * |y_prev| * (|g_i| + the same recurrence in |.|);
// cummax / cummin depth * sum |g| over the index; logcumsumexp (|pos| + |neg|) * (depth + |x|
// + the larger finite |log-scan|).
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/scan.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

struct ScanResult {
  Result values;
  std::vector<std::int64_t> indices;  // cummax / cummin (logical order)
  std::vector<std::int64_t> ints;     // integer inputs: the i64 outputs exactly
};

Expected<ScanResult> scan(const ScanDescriptor& d, const HostTensor& x);
// x and y (cumprod, logcumsumexp) and indices (cummax, cummin) may be null for kinds that do
// not read them.
Expected<Result> scan_backward(const ScanBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor* x,
                               const HostTensor* y, const HostTensor* indices);

}  // namespace baracuda::reference
