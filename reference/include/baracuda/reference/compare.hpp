// The tolerance policy: how a device result is judged against the oracle.
//
// An element passes when
//   |got - exact| <= 4 * |naive - exact| + rtol(dtype) * |exact| + atol(dtype) + 4 * eps(compute) * scale
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

}  // namespace baracuda::reference
