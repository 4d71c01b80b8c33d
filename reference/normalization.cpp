// CPU oracle of LayerNorm / RMSNorm forward (with the residual add) and backward (see
// normalization.hpp).
#include "baracuda/reference/normalization.hpp"

#include <cmath>

namespace baracuda::reference {

namespace {

std::int64_t norm_size(const TensorLayout& x, int nr) {
  std::int64_t n = 1;
  for (int i = x.rank - nr; i < x.rank; ++i) n *= x.shape[i];
  return n;
}
Result sized(std::int64_t n) {
  Result r;
  r.exact.assign(static_cast<std::size_t>(n), 0.0);
  r.naive.assign(static_cast<std::size_t>(n), 0.0);
  r.scale.assign(static_cast<std::size_t>(n), 0.0);
  return r;
}
double finite_or0(double v) { return std::isfinite(v) ? v : 0.0; }
DType stats_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// The forward of one row in compute type C (naive) next to long double (exact).
template <class C>
void forward_rows(const NormDescriptor& d, const std::vector<double>& h, const HostTensor* w, const HostTensor* b,
                  std::int64_t rows, std::int64_t n, NormForward& out) {
  const bool layer = d.kind == NormKind::kLayerNorm;
  const DType t = d.y.dtype, st = stats_of(t);
  const double depth = std::log2(static_cast<double>(n) + 1) + 4;
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* hr = h.data() + r * n;
    long double s = 0, sabs = 0;
    C sc = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      s += layer ? hr[k] : static_cast<long double>(hr[k]) * hr[k];
      sabs += std::fabs(hr[k]);
      sc += layer ? static_cast<C>(hr[k]) : static_cast<C>(hr[k]) * static_cast<C>(hr[k]);
    }
    const long double mean = layer ? s / n : 0;
    const C meanc = layer ? sc / static_cast<C>(n) : C(0);
    long double var = 0;
    C varc = 0;
    if (layer) {
      for (std::int64_t k = 0; k < n; ++k) {
        var += (hr[k] - mean) * (hr[k] - mean);
        varc += (static_cast<C>(hr[k]) - meanc) * (static_cast<C>(hr[k]) - meanc);
      }
      var /= n;
      varc /= static_cast<C>(n);
    } else {
      var = s / n;
      varc = sc / static_cast<C>(n);
    }
    const long double rstd = 1.0L / std::sqrt(var + static_cast<long double>(d.eps));
    const C rstdc = C(1) / std::sqrt(varc + static_cast<C>(d.eps));
    const auto ri = static_cast<std::size_t>(r);
    out.mean.exact[ri] = static_cast<double>(mean);
    out.mean.naive[ri] = round_to(st, static_cast<double>(meanc));
    out.mean.scale[ri] = finite_or0(static_cast<double>(sabs / n) * depth);
    out.rstd.exact[ri] = static_cast<double>(rstd);
    out.rstd.naive[ri] = round_to(st, static_cast<double>(rstdc));
    out.rstd.scale[ri] = finite_or0(static_cast<double>(rstd) * depth * (1 + std::fabs(static_cast<double>(mean * rstd))));
    for (std::int64_t k = 0; k < n; ++k) {
      const double wv = w ? w->get(k) : 1.0, bv = b ? b->get(k) : 0.0;
      const auto i = static_cast<std::size_t>(r * n + k);
      out.y.exact[i] = static_cast<double>((hr[k] - mean) * rstd * wv + bv);
      out.y.naive[i] = round_to(t, static_cast<double>((static_cast<C>(hr[k]) - meanc) * rstdc * static_cast<C>(wv) + static_cast<C>(bv)));
      // the computed mean is off by up to depth * eps * mean|h| (not eps |mean|: rows with a
      // mean near 0 still round their sum of |h|), amplified by rstd
      out.y.scale[i] = finite_or0((std::fabs(hr[k]) + static_cast<double>(sabs / n)) * static_cast<double>(rstd) *
                                      std::fabs(wv) * depth + std::fabs(bv));
    }
  }
}

template <class C>
void backward_rows(const NormBackwardDescriptor& d, const std::vector<double>& g, const std::vector<double>& x,
                   const HostTensor* w, const std::vector<double>& mean, const std::vector<double>& rstd,
                   std::int64_t rows, std::int64_t n, NormGrads& out) {
  const bool layer = d.kind == NormKind::kLayerNorm;
  const DType t = d.grad_x.dtype;
  const double depth = std::log2(static_cast<double>(n) + 1) + 2;
  const double rdepth = std::log2(static_cast<double>(rows) + 1) + 2;
  std::vector<long double> gw(static_cast<std::size_t>(n), 0), gb(gw.size(), 0);
  std::vector<double> gw_abs(gw.size(), 0), gb_abs(gw.size(), 0), gw_err(gw.size(), 0);
  std::vector<C> gwc(gw.size(), 0), gbc(gw.size(), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* gr = g.data() + r * n;
    const double* xr = x.data() + r * n;
    const double mu = layer ? mean[static_cast<std::size_t>(r)] : 0.0, rs = rstd[static_cast<std::size_t>(r)];
    const C muc = static_cast<C>(mu), rsc = static_cast<C>(rs);
    long double s1 = 0, s2 = 0;
    double a1 = 0, a2 = 0;
    C s1c = 0, s2c = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      const double wv = w ? w->get(k) : 1.0;
      const long double xhat = (xr[k] - static_cast<long double>(mu)) * rs;
      const long double wg = static_cast<long double>(wv) * gr[k];
      s1 += wg;
      s2 += wg * xhat;
      a1 += std::fabs(static_cast<double>(wg));
      a2 += std::fabs(static_cast<double>(wg * xhat));
      const C xhc = (static_cast<C>(xr[k]) - muc) * rsc;
      const C wgc = static_cast<C>(wv) * static_cast<C>(gr[k]);
      s1c += wgc;
      s2c += wgc * xhc;
    }
    const long double c1 = layer ? s1 / n : 0, c2 = s2 / n;
    const C c1c = layer ? s1c / static_cast<C>(n) : C(0), c2c = s2c / static_cast<C>(n);
    for (std::int64_t k = 0; k < n; ++k) {
      const double wv = w ? w->get(k) : 1.0;
      const long double xhat = (xr[k] - static_cast<long double>(mu)) * rs;
      const long double wg = static_cast<long double>(wv) * gr[k];
      const auto i = static_cast<std::size_t>(r * n + k);
      out.grad_x.exact[i] = static_cast<double>(rs * (wg - c1 - xhat * c2));
      const C xhc = (static_cast<C>(xr[k]) - muc) * rsc;
      const C wgc = static_cast<C>(wv) * static_cast<C>(gr[k]);
      out.grad_x.naive[i] = round_to(t, static_cast<double>(rsc * (wgc - c1c - xhc * c2c)));
      const double xh = std::fabs(static_cast<double>(xhat)), xerr = (std::fabs(xr[k]) + std::fabs(mu)) * rs;
      out.grad_x.scale[i] = finite_or0(rs * (std::fabs(static_cast<double>(wg)) + std::fabs(static_cast<double>(c1)) +
                                             (xh + xerr) * std::fabs(static_cast<double>(c2)) + depth * (a1 + xh * a2) / n));
      const auto ki = static_cast<std::size_t>(k);
      gw[ki] += gr[k] * xhat;
      gb[ki] += gr[k];
      gw_abs[ki] += std::fabs(gr[k] * static_cast<double>(xhat));
      gb_abs[ki] += std::fabs(gr[k]);
      gw_err[ki] += std::fabs(gr[k]) * xerr;
      gwc[ki] += static_cast<C>(gr[k]) * xhc;
      gbc[ki] += static_cast<C>(gr[k]);
    }
  }
  for (std::int64_t k = 0; k < n; ++k) {
    const auto ki = static_cast<std::size_t>(k);
    if (d.has_weight) {
      out.grad_weight.exact[ki] = static_cast<double>(gw[ki]);
      out.grad_weight.naive[ki] = round_to(t, static_cast<double>(gwc[ki]));
      out.grad_weight.scale[ki] = finite_or0(rdepth * gw_abs[ki] + gw_err[ki]);
    }
    if (d.has_bias) {
      out.grad_bias.exact[ki] = static_cast<double>(gb[ki]);
      out.grad_bias.naive[ki] = round_to(t, static_cast<double>(gbc[ki]));
      out.grad_bias.scale[ki] = finite_or0(rdepth * gb_abs[ki]);
    }
  }
}

}  // namespace

Expected<NormForward> norm_forward(const NormDescriptor& d, const HostTensor& x, const HostTensor* residual,
                                   const HostTensor* weight, const HostTensor* bias) {
  const std::int64_t numel = d.x.numel(), n = norm_size(d.x, d.normalized_rank);
  const std::int64_t rows = n == 0 ? 0 : numel / n;
  NormForward out;
  out.y = sized(numel);
  out.mean = sized(rows);
  out.rstd = sized(rows);
  const DType t = d.x.dtype;
  std::vector<double> h(static_cast<std::size_t>(numel));
  if (d.add_residual) out.residual_out = sized(numel);
  for (std::int64_t i = 0; i < numel; ++i) {
    double v = x.get(i);
    if (d.add_residual) {
      const double r = residual->get(i);
      const double sum = t == DType::kF64 ? v + r : static_cast<double>(static_cast<float>(v) + static_cast<float>(r));
      const auto ii = static_cast<std::size_t>(i);
      out.residual_out.exact[ii] = v + r;
      v = round_to(t, sum);
      out.residual_out.naive[ii] = v;
    }
    h[static_cast<std::size_t>(i)] = v;
  }
  if (t == DType::kF64) forward_rows<double>(d, h, d.has_weight ? weight : nullptr, d.has_bias ? bias : nullptr, rows, n, out);
  else forward_rows<float>(d, h, d.has_weight ? weight : nullptr, d.has_bias ? bias : nullptr, rows, n, out);
  return out;
}

Expected<NormGrads> norm_backward(const NormBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& x,
                                  const HostTensor* weight, const std::vector<double>& mean,
                                  const std::vector<double>& rstd) {
  const std::int64_t numel = d.x.numel(), n = norm_size(d.x, d.normalized_rank);
  const std::int64_t rows = n == 0 ? 0 : numel / n;
  NormGrads out;
  out.grad_x = sized(numel);
  if (d.has_weight) out.grad_weight = sized(n);
  if (d.has_bias) out.grad_bias = sized(n);
  std::vector<double> g(static_cast<std::size_t>(numel)), xs(g.size());
  for (std::int64_t i = 0; i < numel; ++i) {
    g[static_cast<std::size_t>(i)] = grad_y.get(i);
    xs[static_cast<std::size_t>(i)] = x.get(i);
  }
  const HostTensor* w = d.has_weight ? weight : nullptr;
  if (d.x.dtype == DType::kF64) backward_rows<double>(d, g, xs, w, mean, rstd, rows, n, out);
  else backward_rows<float>(d, g, xs, w, mean, rstd, rows, n, out);
  return out;
}

}  // namespace baracuda::reference
