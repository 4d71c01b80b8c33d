// The tolerance policy: how a device result is judged against the oracle.
//
// An element passes when
//   |got - exact| <= k * |naive - exact| + rtol(dtype) * |exact| + atol(dtype) + 4 * eps(compute) * scale
// with k = Result::naive_factor (4 unless the family's reference sets it); with
// Result::naive_tensor_max, |naive - exact| is the largest over the tensor (flash-attention's
// rule, used by SDPA with k = 3).
// exact: the double oracle; naive: the same formula in the kernel's compute precision
// rounded to the output dtype (scales the bound where the math itself cancels); rtol: one
// unit in the last place of f16/bf16 outputs, 8 ulp for f32/f64 (library transcendentals
// are within a few ulp); atol: the dtype's smallest subnormal; scale: sum of |terms| for
// reductions (0 for maps). NaN passes only where exact is NaN, infinities must match, and
// a zero-trust rule fails outputs that are mostly zero where the oracle is not.
// Exact mode (casts, data movement) requires equal values (NaN matches NaN).
#pragma once

#include <cstdint>
#include <string>

#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

struct Tolerance {
  double rtol;
  double atol;
  double eps_compute;
};
Tolerance tolerance_for(DType out);

struct Comparison {
  bool ok = true;
  std::int64_t mismatches = 0;
  std::int64_t checked = 0;
  std::string detail;  // the first mismatches, or the zero-trust verdict
};
Comparison compare(const HostTensor& got, const Result& want, bool exact_only);
// v with 17 significant digits (round-trips a double), for mismatch messages.
std::string exact_text(double v);
// The verdict of a comparison that counted its mismatches (first ones in `first`) and the
// zeros of the result and the oracle over n elements: fails on any mismatch, then on the
// zero-trust rule (shared by every family's comparison).
void finish_comparison(Comparison& c, std::int64_t n, std::int64_t got_zero, std::int64_t want_zero,
                       const std::string& first);

}  // namespace baracuda::reference
