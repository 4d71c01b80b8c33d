// CPU oracle of ALiBi (see alibi.hpp).
#include "baracuda/reference/alibi.hpp"

#include <cmath>
#include <cstdlib>

namespace baracuda::reference {

namespace {
// Logical index -> (b, h, i, j) of [B, H, Sq, Skv], and the distance |i + off - j|.
struct Scores {
  std::int64_t B, H, Sq, Skv, off;
  explicit Scores(const TensorLayout& l, CausalAlign a)
      : B(l.shape[0]), H(l.shape[1]), Sq(l.shape[2]), Skv(l.shape[3]), off(a == CausalAlign::kBottomRight ? Skv - Sq : 0) {}
  std::int64_t dist(std::int64_t lin) const {
    const std::int64_t j = lin % Skv, i = (lin / Skv) % Sq;
    return std::llabs(i + off - j);
  }
  std::int64_t head(std::int64_t lin) const { return (lin / (Skv * Sq)) % H; }
  std::int64_t batch(std::int64_t lin) const { return lin / (Skv * Sq * H); }
  // logical index of this element's slope in a [H] or [B, H] tensor
  std::int64_t slope_index(std::int64_t lin, bool per_batch) const {
    return per_batch ? batch(lin) * H + head(lin) : head(lin);
  }
};
}  // namespace

Expected<Result> alibi(const AlibiDescriptor& d, const HostTensor* s, const HostTensor& slopes) {
  const Scores sc(d.y, d.align);
  const bool per_batch = d.slopes.rank == 2;
  const bool f64 = d.y.dtype == DType::kF64;
  const std::int64_t n = d.y.numel();
  Result r = zero_result(n);
  for (std::int64_t lin = 0; lin < n; ++lin) {
    const auto u = static_cast<std::size_t>(lin);
    const double x = s ? s->get(lin) : 0.0;
    const double slope = slopes.get(sc.slope_index(lin, per_batch));
    const auto dist = static_cast<double>(sc.dist(lin));
    r.exact[u] = x - slope * dist;
    r.scale[u] = std::fabs(x) + std::fabs(slope * dist);
    if (f64) r.naive[u] = r.exact[u];
    else r.naive[u] = round_to(d.y.dtype, static_cast<float>(x) - static_cast<float>(slope) * static_cast<float>(dist));
  }
  return r;
}

Expected<AlibiGrads> alibi_backward(const AlibiBackwardDescriptor& d, const HostTensor& grad_y) {
  const Scores sc(d.grad_y, d.align);
  const std::int64_t n = d.grad_y.numel();
  AlibiGrads out;
  if (d.grad_s.rank != 0) {
    out.grad_s = zero_result(n);
    for (std::int64_t lin = 0; lin < n; ++lin)
      out.grad_s.exact[static_cast<std::size_t>(lin)] = out.grad_s.naive[static_cast<std::size_t>(lin)] = grad_y.get(lin);
  }
  if (d.grad_slopes.rank != 0) {
    const bool per_batch = d.grad_slopes.rank == 2;
    const std::int64_t ns = d.grad_slopes.numel();
    std::vector<long double> exact(static_cast<std::size_t>(ns), 0.0L);
    std::vector<double> naive(static_cast<std::size_t>(ns), 0.0), scale(static_cast<std::size_t>(ns), 0.0);
    for (std::int64_t lin = 0; lin < n; ++lin) {
      const auto k = static_cast<std::size_t>(sc.slope_index(lin, per_batch));
      const double term = grad_y.get(lin) * static_cast<double>(sc.dist(lin));
      exact[k] += term;
      naive[k] += term;
      scale[k] += std::fabs(term);
    }
    out.grad_slopes = zero_result(ns);
    for (std::size_t k = 0; k < static_cast<std::size_t>(ns); ++k) {
      out.grad_slopes.exact[k] = -static_cast<double>(exact[k]);
      out.grad_slopes.naive[k] = round_to(DType::kF32, -naive[k]);
      out.grad_slopes.scale[k] = std::isfinite(scale[k]) ? scale[k] : 0.0;
    }
  }
  return out;
}

}  // namespace baracuda::reference
