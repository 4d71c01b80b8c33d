// CPU oracle of softmax / log_softmax and their backward (see softmax.hpp).
#include "baracuda/reference/softmax.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace baracuda::reference {

AxisRows axis_rows(const TensorLayout& t, int axis) {
  AxisRows a;
  if (t.rank == 0) {
    a.rows = 1;
    return a;
  }
  const int ax = axis < 0 ? axis + t.rank : axis;
  a.len = t.shape[ax];
  for (int d = ax + 1; d < t.rank; ++d) a.inner *= t.shape[d];
  std::int64_t outer = 1;
  for (int d = 0; d < ax; ++d) outer *= t.shape[d];
  a.rows = outer * a.inner;
  return a;
}

namespace {

template <class C>
C nan_max(C a, C b) {
  return (b > a || b != b) ? b : a;
}

// One row: exact (long double) and naive (compute type C) forward.
template <class C>
void forward_row(const std::vector<double>& x, bool log, DType t, double* exact, double* naive, double* scale) {
  const auto n = x.size();
  long double m = -std::numeric_limits<long double>::infinity();
  C mc = -std::numeric_limits<C>::infinity();
  for (double v : x) {
    m = nan_max<long double>(m, v);
    mc = nan_max<C>(mc, static_cast<C>(v));
  }
  long double s = 0;
  C sc = 0;
  for (double v : x) {
    s += std::exp(static_cast<long double>(v) - m);
    sc += std::exp(static_cast<C>(v) - mc);
  }
  const double depth = std::log2(static_cast<double>(n) + 1) + 4;
  for (std::size_t k = 0; k < n; ++k) {
    const long double e = log ? static_cast<long double>(x[k]) - m - std::log(s) : std::exp(static_cast<long double>(x[k]) - m) / s;
    exact[k] = static_cast<double>(e);
    const C ec = log ? static_cast<C>(x[k]) - mc - std::log(sc) : std::exp(static_cast<C>(x[k]) - mc) / sc;
    naive[k] = round_to(t, static_cast<double>(ec));
    const double dx = std::fabs(x[k] - static_cast<double>(m));
    double sc_k = log ? dx + std::fabs(std::log(static_cast<double>(s))) + depth : std::fabs(exact[k]) * (dx + depth);
    scale[k] = std::isfinite(sc_k) ? sc_k : 0.0;
  }
}

template <class C>
void backward_row(const std::vector<double>& g, const std::vector<double>& y, bool log, DType t, double* exact,
                  double* naive, double* scale) {
  const auto n = g.size();
  long double s = 0, sa = 0;
  C sc = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const long double term = log ? static_cast<long double>(g[k]) : static_cast<long double>(g[k]) * y[k];
    s += term;
    sa += std::fabs(term);
    sc += log ? static_cast<C>(g[k]) : static_cast<C>(g[k]) * static_cast<C>(y[k]);
  }
  const double depth = std::log2(static_cast<double>(n) + 1) + 2;
  for (std::size_t k = 0; k < n; ++k) {
    const long double gv = g[k], yv = y[k];
    const long double e = log ? gv - std::exp(yv) * s : yv * (gv - s);
    exact[k] = static_cast<double>(e);
    const C gc = static_cast<C>(g[k]), yc = static_cast<C>(y[k]);
    const C ec = log ? gc - std::exp(yc) * sc : yc * (gc - sc);
    naive[k] = round_to(t, static_cast<double>(ec));
    double sc_k = log ? std::fabs(g[k]) + std::exp(y[k]) * (depth * static_cast<double>(sa) + 2 * std::fabs(static_cast<double>(s)) * (std::fabs(y[k]) + 1))
                      : std::fabs(y[k]) * (std::fabs(g[k]) + depth * static_cast<double>(sa));
    scale[k] = std::isfinite(sc_k) ? sc_k : 0.0;
  }
}

Result empty_result(std::int64_t n) {
  Result r;
  r.exact.resize(static_cast<std::size_t>(n));
  r.naive.resize(static_cast<std::size_t>(n));
  r.scale.assign(static_cast<std::size_t>(n), 0.0);
  return r;
}

// Row `row`'s computed values (exact, naive, scale) back into the result at their indices.
void scatter_row(Result& r, const AxisRows& a, std::int64_t row, const std::vector<double>& e,
                 const std::vector<double>& nv, const std::vector<double>& sc) {
  for (std::int64_t k = 0; k < a.len; ++k) {
    const auto i = static_cast<std::size_t>(a.index(row, k)), j = static_cast<std::size_t>(k);
    r.exact[i] = e[j];
    r.naive[i] = nv[j];
    r.scale[i] = sc[j];
  }
}

}  // namespace

Expected<Result> softmax(const SoftmaxDescriptor& d, const HostTensor& x) {
  const AxisRows a = axis_rows(d.x, d.axis);
  Result r = empty_result(d.x.numel());
  const bool log = d.kind == SoftmaxKind::kLogSoftmax;
  std::vector<double> xs(static_cast<std::size_t>(a.len)), e(xs.size()), nv(xs.size()), sc(xs.size());
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    for (std::int64_t k = 0; k < a.len; ++k) xs[static_cast<std::size_t>(k)] = x.get(a.index(row, k));
    if (d.x.dtype == DType::kF64) forward_row<double>(xs, log, d.y.dtype, e.data(), nv.data(), sc.data());
    else forward_row<float>(xs, log, d.y.dtype, e.data(), nv.data(), sc.data());
    scatter_row(r, a, row, e, nv, sc);
  }
  return r;
}

Expected<Result> softmax_backward(const SoftmaxBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& y) {
  const AxisRows a = axis_rows(d.grad_y, d.axis);
  Result r = empty_result(d.grad_y.numel());
  const bool log = d.kind == SoftmaxKind::kLogSoftmax;
  std::vector<double> gs(static_cast<std::size_t>(a.len)), ys(gs.size()), e(gs.size()), nv(gs.size()), sc(gs.size());
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    for (std::int64_t k = 0; k < a.len; ++k) {
      gs[static_cast<std::size_t>(k)] = grad_y.get(a.index(row, k));
      ys[static_cast<std::size_t>(k)] = y.get(a.index(row, k));
    }
    if (d.grad_y.dtype == DType::kF64) backward_row<double>(gs, ys, log, d.grad_x.dtype, e.data(), nv.data(), sc.data());
    else backward_row<float>(gs, ys, log, d.grad_x.dtype, e.data(), nv.data(), sc.data());
    scatter_row(r, a, row, e, nv, sc);
  }
  return r;
}

}  // namespace baracuda::reference
