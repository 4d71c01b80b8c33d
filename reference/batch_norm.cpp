// CPU oracle of BatchNorm / GroupNorm / InstanceNorm forward and backward (see
// batch_norm.hpp). One core over [N, C, S] with statistic sets per channel (BatchNorm,
// running stats) or per (n, group) (GroupNorm; InstanceNorm = C groups).
#include "baracuda/reference/batch_norm.hpp"

#include <cmath>
#include <limits>

namespace baracuda::reference {

namespace {

double finite_or0(double v) { return std::isfinite(v) ? v : 0.0; }

struct Core {
  DType t = DType::kF32;
  std::int64_t N = 0, C = 0, S = 1;
  std::int64_t G = 0;  // 0: a statistic per channel; else per (n, group)
  bool eval = false;   // statistics from the running stats
  std::vector<double> x, w, b, rm, rv;  // w / b: 1 / 0 when absent
  double eps = 0, momentum = 0;
  std::int64_t stats() const { return G ? N * G : C; }
  std::int64_t members() const { return G ? (C / G) * S : N * S; }
  std::int64_t stat_of(std::int64_t n, std::int64_t c) const { return G ? n * G + c / (C / G) : c; }
  template <class F>
  void for_members(std::int64_t k, F f) const {
    if (G == 0) {
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t s = 0; s < S; ++s) f((n * C + k) * S + s, k);
    } else {
      const std::int64_t n = k / G, g = k % G, cg = C / G;
      for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (std::int64_t s = 0; s < S; ++s) f((n * C + c) * S + s, c);
    }
  }
};

std::vector<double> logical_or(const HostTensor* t, std::int64_t n, double dflt) {
  std::vector<double> v(static_cast<std::size_t>(n), dflt);
  if (t)
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = t->get(i);
  return v;
}
Core make_core(const TensorLayout& x, const HostTensor& hx, const HostTensor* w, const HostTensor* b) {
  Core k;
  k.t = x.dtype;
  k.N = x.shape[0];
  k.C = x.shape[1];
  for (int i = 2; i < x.rank; ++i) k.S *= x.shape[i];
  k.x = hx.logical();
  k.w = logical_or(w, k.C, 1.0);
  k.b = logical_or(b, k.C, 0.0);
  return k;
}
Result sized(std::int64_t n) { return zero_result(n); }
DType stats_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// The running update of value `cur` with batch value v (exact, naive, scale).
void running_update(Result& r, std::size_t i, DType t, double cur, long double v, double vnaive, double vscale,
                    double m) {
  r.exact[i] = static_cast<double>((1 - m) * cur + m * v);
  r.naive[i] = round_to(t, (1 - m) * cur + m * vnaive);
  r.scale[i] = finite_or0((1 - m) * std::fabs(cur) + std::fabs(m) * vscale);
}

template <class CT>
ChanNormForward forward(const Core& k, bool save, bool update, DType rm_t, DType rv_t) {
  const std::int64_t K = k.eval ? k.C : k.stats(), M = k.members();
  const DType st = stats_of(k.t);
  ChanNormForward out;
  out.y = sized(static_cast<std::int64_t>(k.x.size()));
  if (save) {
    out.mean = sized(K);
    out.rstd = sized(K);
  }
  std::vector<long double> mean(static_cast<std::size_t>(K)), var(mean.size());
  std::vector<double> mabs(mean.size()), meanc(mean.size()), rstdc(mean.size()), varc(mean.size());
  const double depth = std::log2(static_cast<double>(M) + 1) + 4;
  for (std::int64_t s = 0; s < K; ++s) {
    const auto si = static_cast<std::size_t>(s);
    if (k.eval) {
      mean[si] = k.rm[si];
      var[si] = k.rv[si];
      meanc[si] = static_cast<CT>(k.rm[si]);
      varc[si] = static_cast<CT>(k.rv[si]);
      rstdc[si] = static_cast<double>(CT(1) / std::sqrt(static_cast<CT>(k.rv[si]) + static_cast<CT>(k.eps)));
      continue;
    }
    long double sum = 0, sabs = 0;
    CT sc = 0;
    k.for_members(s, [&](std::int64_t i, std::int64_t) {
      const double v = k.x[static_cast<std::size_t>(i)];
      sum += v;
      sabs += std::fabs(v);
      sc += static_cast<CT>(v);
    });
    // M == 0 (an empty batch or spatial size 0): mean 0, variance taken as 0 (see batch_norm.hpp)
    const long double mu = M > 0 ? sum / M : 0;
    const CT muc = M > 0 ? sc / static_cast<CT>(M) : CT(0);
    long double ss = 0;
    CT ssc = 0;
    k.for_members(s, [&](std::int64_t i, std::int64_t) {
      const double v = k.x[static_cast<std::size_t>(i)];
      ss += (v - mu) * (v - mu);
      ssc += (static_cast<CT>(v) - muc) * (static_cast<CT>(v) - muc);
    });
    mean[si] = mu;
    var[si] = M > 0 ? ss / M : 0;
    mabs[si] = M > 0 ? static_cast<double>(sabs / M) : 0.0;
    meanc[si] = muc;
    varc[si] = M > 0 ? ssc / static_cast<CT>(M) : CT(0);
    rstdc[si] = static_cast<double>(CT(1) / std::sqrt(static_cast<CT>(varc[si]) + static_cast<CT>(k.eps)));
    if (save) {
      const long double rs = 1.0L / std::sqrt(var[si] + static_cast<long double>(k.eps));
      out.mean.exact[si] = static_cast<double>(mu);
      out.mean.naive[si] = round_to(st, meanc[si]);
      out.mean.scale[si] = finite_or0(mabs[si] * depth);
      out.rstd.exact[si] = static_cast<double>(rs);
      out.rstd.naive[si] = round_to(st, rstdc[si]);
      out.rstd.scale[si] = finite_or0(static_cast<double>(rs) * depth * (1 + std::fabs(static_cast<double>(mu * rs))));
    }
  }
  for (std::int64_t n = 0; n < k.N; ++n)
    for (std::int64_t c = 0; c < k.C; ++c) {
      const auto si = static_cast<std::size_t>(k.eval ? c : k.stat_of(n, c));
      const long double rs = 1.0L / std::sqrt(var[si] + static_cast<long double>(k.eps));
      const double wv = k.w[static_cast<std::size_t>(c)], bv = k.b[static_cast<std::size_t>(c)];
      for (std::int64_t s = 0; s < k.S; ++s) {
        const auto i = static_cast<std::size_t>((n * k.C + c) * k.S + s);
        const double xv = k.x[i];
        out.y.exact[i] = static_cast<double>((xv - mean[si]) * rs * wv + bv);
        out.y.naive[i] = round_to(k.t, static_cast<double>((static_cast<CT>(xv) - static_cast<CT>(meanc[si])) *
                                                               static_cast<CT>(rstdc[si]) * static_cast<CT>(wv) +
                                                           static_cast<CT>(bv)));
        out.y.scale[i] = finite_or0((std::fabs(xv) + (k.eval ? std::fabs(static_cast<double>(mean[si])) : mabs[si])) *
                                        static_cast<double>(rs) * std::fabs(wv) * depth +
                                    std::fabs(bv));
      }
    }
  if (update) {
    out.running_mean = sized(k.C);
    out.running_var = sized(k.C);
    const double unb = M > 1 ? static_cast<double>(M) / static_cast<double>(M - 1) : 0.0;
    // Empty inputs (PyTorch): InstanceNorm over N = 0 instances averages the update over no
    // instance (0 / 0: NaN); otherwise no values (M == 0) leave the running stats as they are.
    const bool nan_update = k.G != 0 && k.N == 0, keep = !nan_update && M == 0;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::int64_t c = 0; c < k.C; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      if (nan_update || keep) {  // exact = naive, scale 0: compared as they are
        out.running_mean.exact[ci] = out.running_mean.naive[ci] = nan_update ? nan : k.rm[ci];
        out.running_var.exact[ci] = out.running_var.naive[ci] = nan_update ? nan : k.rv[ci];
        continue;
      }
      // BatchNorm: the channel's statistic; InstanceNorm: the mean over n of (n, c)'s
      long double m = 0, v = 0;
      double mn = 0, vn = 0, ms = 0, vs = 0;
      const std::int64_t reps = k.G ? k.N : 1;
      for (std::int64_t r = 0; r < reps; ++r) {
        const auto si = static_cast<std::size_t>(k.G ? r * k.C + c : c);
        m += mean[si];
        v += var[si] * unb;
        mn += meanc[si];
        vn += varc[si] * unb;
        ms += mabs[si] * depth;
        vs += unb * depth * (static_cast<double>(var[si]) + std::sqrt(static_cast<double>(var[si])) * mabs[si]);
      }
      running_update(out.running_mean, ci, rm_t, k.rm[ci], m / reps, mn / reps, ms / reps, k.momentum);
      running_update(out.running_var, ci, rv_t, k.rv[ci], v / reps, vn / reps, vs / reps, k.momentum);
    }
  }
  return out;
}

template <class CT>
ChanNormGrads backward(const Core& k, const std::vector<double>& g, const std::vector<double>& mean_in,
                       const std::vector<double>& rstd_in, bool gw_on, bool gb_on) {
  const std::int64_t K = k.eval ? k.C : k.stats(), M = k.members();
  ChanNormGrads out;
  out.grad_x = sized(static_cast<std::int64_t>(g.size()));
  std::vector<double> mu(static_cast<std::size_t>(K)), rs(mu.size());
  for (std::int64_t s = 0; s < K; ++s) {
    const auto si = static_cast<std::size_t>(s);
    mu[si] = k.eval ? k.rm[si] : mean_in[si];
    rs[si] = k.eval ? static_cast<double>(1.0L / std::sqrt(static_cast<long double>(k.rv[si]) + k.eps)) : rstd_in[si];
  }
  const double depth = std::log2(static_cast<double>(M) + 1) + 2;
  // per set: sums of wg and wg * xhat (exact, naive, |.|)
  std::vector<long double> s1(mu.size()), s2(mu.size());
  std::vector<double> a1(mu.size()), a2(mu.size());
  std::vector<CT> s1c(mu.size()), s2c(mu.size());
  if (!k.eval)
    for (std::int64_t s = 0; s < K; ++s) {
      const auto si = static_cast<std::size_t>(s);
      k.for_members(s, [&](std::int64_t i, std::int64_t c) {
        const auto ii = static_cast<std::size_t>(i);
        const double wv = k.w[static_cast<std::size_t>(c)];
        const long double xhat = (k.x[ii] - static_cast<long double>(mu[si])) * rs[si];
        const long double wg = static_cast<long double>(wv) * g[ii];
        s1[si] += wg;
        s2[si] += wg * xhat;
        a1[si] += std::fabs(static_cast<double>(wg));
        a2[si] += std::fabs(static_cast<double>(wg * xhat));
        const CT xhc = (static_cast<CT>(k.x[ii]) - static_cast<CT>(mu[si])) * static_cast<CT>(rs[si]);
        const CT wgc = static_cast<CT>(wv) * static_cast<CT>(g[ii]);
        s1c[si] += wgc;
        s2c[si] += wgc * xhc;
      });
    }
  std::vector<long double> gw(static_cast<std::size_t>(k.C)), gb(gw.size());
  std::vector<double> gw_abs(gw.size()), gb_abs(gw.size()), gw_err(gw.size());
  std::vector<CT> gwc(gw.size()), gbc(gw.size());
  for (std::int64_t n = 0; n < k.N; ++n)
    for (std::int64_t c = 0; c < k.C; ++c) {
      const auto si = static_cast<std::size_t>(k.eval ? c : k.stat_of(n, c));
      const auto ci = static_cast<std::size_t>(c);
      const double wv = k.w[ci], r = rs[si], m = mu[si];
      const CT rc = static_cast<CT>(r), mc = static_cast<CT>(m);
      // M == 0 (no values): nothing below reads the set means; grad_weight / grad_bias stay 0
      const bool means = !k.eval && M > 0;
      const long double c1 = means ? s1[si] / M : 0, c2 = means ? s2[si] / M : 0;
      const CT c1c = means ? s1c[si] / static_cast<CT>(M) : CT(0), c2c = means ? s2c[si] / static_cast<CT>(M) : CT(0);
      for (std::int64_t s = 0; s < k.S; ++s) {
        const auto i = static_cast<std::size_t>((n * k.C + c) * k.S + s);
        const long double xhat = (k.x[i] - static_cast<long double>(m)) * r;
        const long double wg = static_cast<long double>(wv) * g[i];
        out.grad_x.exact[i] = static_cast<double>(r * (wg - c1 - xhat * c2));
        const CT xhc = (static_cast<CT>(k.x[i]) - mc) * rc;
        const CT wgc = static_cast<CT>(wv) * static_cast<CT>(g[i]);
        out.grad_x.naive[i] = round_to(k.t, static_cast<double>(rc * (wgc - c1c - xhc * c2c)));
        const double xh = std::fabs(static_cast<double>(xhat)), xerr = (std::fabs(k.x[i]) + std::fabs(m)) * r;
        out.grad_x.scale[i] = finite_or0(r * (std::fabs(static_cast<double>(wg)) + std::fabs(static_cast<double>(c1)) +
                                              (xh + xerr) * std::fabs(static_cast<double>(c2)) +
                                              (k.eval ? 0.0 : depth * (a1[si] + xh * a2[si]) / M)));
        gw[ci] += g[i] * xhat;
        gb[ci] += g[i];
        gw_abs[ci] += std::fabs(g[i] * static_cast<double>(xhat));
        gb_abs[ci] += std::fabs(g[i]);
        gw_err[ci] += std::fabs(g[i]) * xerr;
        gwc[ci] += static_cast<CT>(g[i]) * xhc;
        gbc[ci] += static_cast<CT>(g[i]);
      }
    }
  const double rdepth = std::log2(static_cast<double>(k.N * k.S) + 1) + 4;
  if (gw_on) out.grad_weight = sized(k.C);
  if (gb_on) out.grad_bias = sized(k.C);
  for (std::int64_t c = 0; c < k.C; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    if (gw_on) {
      out.grad_weight.exact[ci] = static_cast<double>(gw[ci]);
      out.grad_weight.naive[ci] = static_cast<double>(gwc[ci]);
      out.grad_weight.scale[ci] = finite_or0(rdepth * gw_abs[ci] + gw_err[ci]);
    }
    if (gb_on) {
      out.grad_bias.exact[ci] = static_cast<double>(gb[ci]);
      out.grad_bias.naive[ci] = static_cast<double>(gbc[ci]);
      out.grad_bias.scale[ci] = finite_or0(rdepth * gb_abs[ci]);
    }
  }
  return out;
}

// Rounds the naive parameter gradients to their output dtypes.
void round_grads(ChanNormGrads& g, const TensorLayout& gw, const TensorLayout& gb) {
  for (auto& v : g.grad_weight.naive) v = round_to(gw.dtype, v);
  for (auto& v : g.grad_bias.naive) v = round_to(gb.dtype, v);
}

template <class F>
auto by_compute(DType t, F f) {
  return t == DType::kF64 ? f(double{}) : f(float{});
}

}  // namespace

Expected<ChanNormForward> batch_norm_forward(const BatchNormDescriptor& d, const HostTensor& x, const HostTensor* weight,
                                             const HostTensor* bias, const HostTensor* running_mean,
                                             const HostTensor* running_var) {
  Core k = make_core(d.x, x, d.has_weight ? weight : nullptr, d.has_bias ? bias : nullptr);
  const bool running = d.has_running_stats || !d.training;
  k.eval = !d.training;
  k.rm = logical_or(running ? running_mean : nullptr, k.C, 0.0);
  k.rv = logical_or(running ? running_var : nullptr, k.C, 1.0);
  k.eps = d.eps;
  k.momentum = d.momentum;
  const bool update = d.training && d.has_running_stats;
  return by_compute(d.x.dtype, [&](auto c) {
    return forward<decltype(c)>(k, d.training && d.save_stats, update, d.running_mean.dtype, d.running_var.dtype);
  });
}

Expected<ChanNormForward> group_norm_forward(const GroupNormDescriptor& d, const HostTensor& x, const HostTensor* weight,
                                             const HostTensor* bias) {
  Core k = make_core(d.x, x, d.has_weight ? weight : nullptr, d.has_bias ? bias : nullptr);
  if (d.num_groups < 1 || k.C % d.num_groups != 0)
    return Status(Code::kInvalidArgument, "num_groups = " + std::to_string(d.num_groups) + " does not divide C");
  k.G = d.num_groups;
  k.eps = d.eps;
  return by_compute(d.x.dtype, [&](auto c) { return forward<decltype(c)>(k, d.save_stats, false, d.x.dtype, d.x.dtype); });
}

Expected<ChanNormForward> instance_norm_forward(const InstanceNormDescriptor& d, const HostTensor& x,
                                                const HostTensor* weight, const HostTensor* bias,
                                                const HostTensor* running_mean, const HostTensor* running_var) {
  Core k = make_core(d.x, x, d.has_weight ? weight : nullptr, d.has_bias ? bias : nullptr);
  const bool running = d.has_running_stats || !d.use_input_stats;
  k.G = d.use_input_stats ? k.C : 0;
  k.eval = !d.use_input_stats;
  k.rm = logical_or(running ? running_mean : nullptr, k.C, 0.0);
  k.rv = logical_or(running ? running_var : nullptr, k.C, 1.0);
  k.eps = d.eps;
  k.momentum = d.momentum;
  const bool update = d.use_input_stats && d.has_running_stats;
  return by_compute(d.x.dtype, [&](auto c) {
    return forward<decltype(c)>(k, d.use_input_stats && d.save_stats, update, d.running_mean.dtype, d.running_var.dtype);
  });
}

Expected<ChanNormGrads> batch_norm_backward(const BatchNormBackwardDescriptor& d, const HostTensor& grad_y,
                                            const HostTensor& x, const HostTensor* weight,
                                            const std::vector<double>& mean, const std::vector<double>& rstd,
                                            const HostTensor* running_mean, const HostTensor* running_var) {
  Core k = make_core(d.x, x, d.has_weight ? weight : nullptr, nullptr);
  k.eval = !d.training;
  k.rm = logical_or(k.eval ? running_mean : nullptr, k.C, 0.0);
  k.rv = logical_or(k.eval ? running_var : nullptr, k.C, 1.0);
  k.eps = d.eps;
  const auto g = grad_y.logical();
  auto r = by_compute(d.x.dtype, [&](auto c) {
    return backward<decltype(c)>(k, g, mean, rstd, d.compute_grad_weight, d.compute_grad_bias);
  });
  round_grads(r, d.grad_weight, d.grad_bias);
  return r;
}

Expected<ChanNormGrads> group_norm_backward(const GroupNormBackwardDescriptor& d, const HostTensor& grad_y,
                                            const HostTensor& x, const HostTensor* weight,
                                            const std::vector<double>& mean, const std::vector<double>& rstd) {
  Core k = make_core(d.x, x, d.has_weight ? weight : nullptr, nullptr);
  if (d.num_groups < 1 || k.C % d.num_groups != 0)
    return Status(Code::kInvalidArgument, "num_groups = " + std::to_string(d.num_groups) + " does not divide C");
  k.G = d.num_groups;
  const auto g = grad_y.logical();
  auto r = by_compute(d.x.dtype, [&](auto c) {
    return backward<decltype(c)>(k, g, mean, rstd, d.compute_grad_weight, d.compute_grad_bias);
  });
  round_grads(r, d.grad_weight, d.grad_bias);
  return r;
}

Expected<ChanNormGrads> instance_norm_backward(const InstanceNormBackwardDescriptor& d, const HostTensor& grad_y,
                                               const HostTensor& x, const HostTensor* weight,
                                               const std::vector<double>& mean, const std::vector<double>& rstd,
                                               const HostTensor* running_mean, const HostTensor* running_var) {
  Core k = make_core(d.x, x, d.has_weight ? weight : nullptr, nullptr);
  k.G = d.use_input_stats ? k.C : 0;
  k.eval = !d.use_input_stats;
  k.rm = logical_or(k.eval ? running_mean : nullptr, k.C, 0.0);
  k.rv = logical_or(k.eval ? running_var : nullptr, k.C, 1.0);
  k.eps = d.eps;
  const auto g = grad_y.logical();
  auto r = by_compute(d.x.dtype, [&](auto c) {
    return backward<decltype(c)>(k, g, mean, rstd, d.compute_grad_weight, d.compute_grad_bias);
  });
  round_grads(r, d.grad_weight, d.grad_bias);
  return r;
}

}  // namespace baracuda::reference
