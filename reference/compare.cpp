#include "baracuda/reference/compare.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace baracuda::reference {

Tolerance tolerance_for(DType out) {
  switch (out) {
    case DType::kF64: return {8 * std::ldexp(1.0, -53), 4.9e-324, std::ldexp(1.0, -53)};
    case DType::kF32: return {8 * std::ldexp(1.0, -24), std::ldexp(1.0, -149), std::ldexp(1.0, -24)};
    case DType::kF16: return {std::ldexp(1.0, -10), std::ldexp(1.0, -24), std::ldexp(1.0, -24)};
    case DType::kBF16: return {std::ldexp(1.0, -7), std::ldexp(1.0, -133), std::ldexp(1.0, -24)};
    default: return {0, 0, 0};
  }
}

std::string exact_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

Comparison compare(const HostTensor& got, const Result& want, bool exact_only) {
  Comparison c;
  const std::int64_t n = got.layout().numel();
  c.checked = n;
  if (static_cast<std::int64_t>(want.exact.size()) != n) {
    c.ok = false;
    c.detail = "reference has " + std::to_string(want.exact.size()) + " elements, output " + std::to_string(n);
    return c;
  }
  const Tolerance tol = tolerance_for(got.layout().dtype);
  double naive_max = 0;  // the naive twin's largest finite error (naive_tensor_max)
  if (want.naive_tensor_max && !want.naive.empty())
    for (std::size_t k = 0; k < want.exact.size(); ++k)
      if (std::isfinite(want.exact[k]) && std::isfinite(want.naive[k]))
        naive_max = std::max(naive_max, std::fabs(want.naive[k] - want.exact[k]));
  std::int64_t got_zero = 0, want_zero = 0;
  std::ostringstream first;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double g = got.get(i), e = want.exact[k];
    const double nv = want.naive.empty() ? e : want.naive[k];
    got_zero += g == 0.0;
    want_zero += e == 0.0 || std::fabs(e) < tol.atol;  // exact values the output dtype cannot hold (they flush to 0)
    bool ok;
    // NaN passes where the oracle is NaN, or where the formula itself gives NaN in the
    // compute precision (e.g. gelu_tanh's backward at |x| ~ 1e38: x^2 overflows f32, as in torch).
    // An infinity passes where it is the exact value rounded to the output dtype (|exact| past
    // the dtype's largest finite value), equals the naive twin, or where the twin is NaN: its
    // compute-precision terms overflow, and whether a sum of +inf / -inf / huge terms ends at
    // +inf, -inf or NaN depends on the summation order (H200 session 8: broadcast gradients
    // of addcdiv with tiny c, summed in another order than the twin's).
    if (g == e) ok = true;  // equal values (including matching zeros and infinities)
    else if (std::isnan(e)) ok = std::isnan(g);
    else if (std::isnan(g)) ok = std::isnan(nv) && !exact_only;
    else if (exact_only) ok = g == e;
    else if (std::isinf(e)) ok = g == e || (std::isinf(nv) && g == nv);
    else if (std::isinf(g)) ok = g == round_to(got.layout().dtype, e) || g == nv || std::isnan(nv);
    else {
      double scale = want.scale.empty() ? 0.0 : want.scale[k];
      if (std::isnan(scale)) scale = 0.0;  // 0 * inf in a scale formula (x = -inf) carries no error budget
      const double naive_err = want.naive_tensor_max ? naive_max : std::fabs(nv - e);
      const double bound = want.naive_factor * naive_err + tol.rtol * std::fabs(e) + tol.atol + 4 * tol.eps_compute * scale;
      ok = std::fabs(g - e) <= bound;
    }
    if (!ok && c.mismatches++ < 5) first << "\n  [" << i << "] got " << exact_text(g) << ", exact " << exact_text(e) << ", naive " << exact_text(nv);
  }
  finish_comparison(c, n, got_zero, want_zero, first.str());
  return c;
}

void finish_comparison(Comparison& c, std::int64_t n, std::int64_t got_zero, std::int64_t want_zero,
                       const std::string& first) {
  if (c.mismatches) {
    c.ok = false;
    c.detail = std::to_string(c.mismatches) + " of " + std::to_string(n) + " elements out of tolerance" + first;
  } else if (n >= 64 && got_zero > n * 9 / 10 && want_zero < n / 2) {
    c.ok = false;
    c.detail = std::to_string(got_zero) + " of " + std::to_string(n) + " outputs are zero (zero-trust check)";
  }
}

}  // namespace baracuda::reference
