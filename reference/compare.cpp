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

ElementJudge::ElementJudge(DType out, double naive_factor, bool exact_only)
    : out_(out), tol_(tolerance_for(out)), k_(naive_factor), exact_only_(exact_only) {}

bool ElementJudge::non_finite_ok(double g, double e, double nv) const {
  // NaN passes where the oracle is NaN, or where the formula itself gives NaN in the
  // compute precision (e.g. gelu_tanh's backward at |x| ~ 1e38: x^2 overflows f32, as in torch).
  // An infinity passes where it is the exact value rounded to the output dtype (|exact| past
  // the dtype's largest finite value), equals the naive twin, or where the twin is NaN: its
  // compute-precision terms overflow, and whether a sum of +inf / -inf / huge terms ends at
  // +inf, -inf or NaN depends on the summation order (H200 session 8: broadcast gradients
  // of addcdiv with tiny c, summed in another order than the twin's). Equal values and two
  // finite ones are judged in add().
  if (std::isnan(e)) return std::isnan(g);
  if (std::isnan(g)) return std::isnan(nv) && !exact_only_;
  if (exact_only_) return false;
  if (std::isinf(e)) return std::isinf(nv) && g == nv;
  return g == round_to(out_, e) || g == nv || std::isnan(nv);  // g is infinite, e finite
}

void ElementJudge::mismatch(std::int64_t index, double g, double e, double nv) {
  ++mismatches_;
  if (first_.size() == kFirst && index >= first_.back().first) return;
  std::ostringstream s;
  s << "\n  [" << index << "] got " << exact_text(g) << ", exact " << exact_text(e) << ", naive " << exact_text(nv);
  keep_first(index, s.str());
}

void ElementJudge::keep_first(std::int64_t index, std::string text) {
  auto at = std::upper_bound(first_.begin(), first_.end(), index, [](std::int64_t i, const auto& f) { return i < f.first; });
  first_.insert(at, {index, std::move(text)});
  if (first_.size() > kFirst) first_.pop_back();
}

void ElementJudge::merge(const ElementJudge& o) {
  checked_ += o.checked_;
  mismatches_ += o.mismatches_;
  got_zero_ += o.got_zero_;
  want_zero_ += o.want_zero_;
  for (const auto& f : o.first_) {
    if (first_.size() == kFirst && f.first >= first_.back().first) break;  // o.first_ is sorted
    keep_first(f.first, f.second);
  }
}

Comparison ElementJudge::finish() const {
  Comparison c;
  c.checked = checked_;
  c.mismatches = mismatches_;
  std::string first;
  for (const auto& f : first_) first += f.second;
  finish_comparison(c, checked_, got_zero_, want_zero_, first);
  return c;
}

Comparison compare(const HostTensor& got, const Result& want, bool exact_only) {
  const std::int64_t n = got.layout().numel();
  if (static_cast<std::int64_t>(want.exact.size()) != n) {
    Comparison c;
    c.checked = n;
    c.ok = false;
    c.detail = "reference has " + std::to_string(want.exact.size()) + " elements, output " + std::to_string(n);
    return c;
  }
  double naive_max = 0;  // the naive twin's largest finite error (naive_tensor_max)
  if (want.naive_tensor_max && !want.naive.empty())
    for (std::size_t k = 0; k < want.exact.size(); ++k)
      if (std::isfinite(want.exact[k]) && std::isfinite(want.naive[k]))
        naive_max = std::max(naive_max, std::fabs(want.naive[k] - want.exact[k]));
  ElementJudge judge(got.layout().dtype, want.naive_factor, exact_only);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double e = want.exact[k];
    const double nv = want.naive.empty() ? e : want.naive[k];
    const double scale = want.scale.empty() ? 0.0 : want.scale[k];
    judge.add(i, got.get(i), e, nv, scale, want.naive_tensor_max ? naive_max : std::fabs(nv - e));
  }
  return judge.finish();
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
