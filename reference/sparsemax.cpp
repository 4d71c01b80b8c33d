// CPU oracle of sparsemax and its backward (see sparsemax.hpp).
#include "baracuda/reference/sparsemax.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "baracuda/reference/softmax.hpp"

namespace baracuda::reference {

namespace {

// y = sparsemax(x) of one row in F; returns tau (NaN for a row whose max is not finite).
template <class F>
F sparsemax_row(const std::vector<double>& x, std::vector<F>& y, F* support_abs_sum, std::int64_t* support) {
  const auto n = x.size();
  F m = -std::numeric_limits<F>::infinity();
  for (double v : x) m = (static_cast<F>(v) > m || v != v) ? static_cast<F>(v) : m;
  y.assign(n, std::numeric_limits<F>::quiet_NaN());
  if (!std::isfinite(static_cast<double>(m))) return std::numeric_limits<F>::quiet_NaN();
  std::vector<F> d(n);
  for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<F>(x[k]) - m;
  std::vector<F> s = d;
  std::sort(s.begin(), s.end(), std::greater<F>());
  F cum = 0, cum_k = 0;
  std::size_t k_star = 1;
  for (std::size_t k = 0; k < n; ++k) {
    cum += s[k];
    if (F(1) + static_cast<F>(k + 1) * s[k] > cum) {
      k_star = k + 1;
      cum_k = cum;
    }
  }
  const F tau = (cum_k - F(1)) / static_cast<F>(k_star);
  F abs_sum = 0;
  for (std::size_t k = 0; k < k_star; ++k) abs_sum += std::fabs(s[k]);
  for (std::size_t k = 0; k < n; ++k) y[k] = d[k] > tau ? d[k] - tau : F(0);
  *support_abs_sum = abs_sum;
  *support = static_cast<std::int64_t>(k_star);
  return tau;
}

// Gathers row `row` of each tensor, calls f(values, exact, naive, scale) and scatters back.
template <class F>
Result by_rows(const TensorLayout& l, int axis, std::vector<const HostTensor*> ins, F f) {
  const AxisRows a = axis_rows(l, axis);
  Result r = zero_result(l.numel());
  const auto len = static_cast<std::size_t>(a.len);
  std::vector<std::vector<double>> v(ins.size(), std::vector<double>(len));
  std::vector<double> e(len), nv(len), sc(len);
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    for (std::size_t j = 0; j < ins.size(); ++j)
      for (std::size_t k = 0; k < len; ++k) v[j][k] = ins[j]->get(a.index(row, static_cast<std::int64_t>(k)));
    f(v, e, nv, sc);
    for (std::size_t k = 0; k < len; ++k) {
      const auto i = static_cast<std::size_t>(a.index(row, static_cast<std::int64_t>(k)));
      r.exact[i] = e[k];
      r.naive[i] = nv[k];
      r.scale[i] = std::isfinite(sc[k]) ? sc[k] : 0.0;
    }
  }
  return r;
}

template <class C>
void forward_row(const std::vector<double>& x, DType t, std::vector<double>& e, std::vector<double>& nv,
                 std::vector<double>& sc) {
  std::vector<long double> ye;
  std::vector<C> yn;
  long double abs_sum = 0;
  C abs_sum_n = 0;
  std::int64_t support = 1, support_n = 1;
  const long double tau = sparsemax_row(x, ye, &abs_sum, &support);
  sparsemax_row(x, yn, &abs_sum_n, &support_n);
  long double m = -std::numeric_limits<long double>::infinity();
  for (double v : x) m = std::max<long double>(m, v);
  const double depth = std::log2(static_cast<double>(x.size()) + 1) + 2;
  for (std::size_t k = 0; k < x.size(); ++k) {
    e[k] = static_cast<double>(ye[k]);
    nv[k] = round_to(t, static_cast<double>(yn[k]));
    sc[k] = static_cast<double>(std::fabs(static_cast<long double>(x[k]) - m) + std::fabs(tau)) +
            depth * static_cast<double>((abs_sum + 1) / static_cast<long double>(support));
  }
}

template <class C>
void backward_row(const std::vector<double>& g, const std::vector<double>& y, DType t, std::vector<double>& e,
                  std::vector<double>& nv, std::vector<double>& sc) {
  long double s = 0, abs_s = 0;
  C sn = 0;
  std::int64_t c = 0;
  for (std::size_t k = 0; k < g.size(); ++k)
    if (y[k] > 0) {
      s += g[k];
      abs_s += std::fabs(g[k]);
      sn += static_cast<C>(g[k]);
      ++c;
    }
  const long double v = c > 0 ? s / c : 0;
  const C vn = c > 0 ? sn / static_cast<C>(c) : C(0);
  const double depth = std::log2(static_cast<double>(g.size()) + 1) + 2;
  for (std::size_t k = 0; k < g.size(); ++k) {
    const bool in = y[k] > 0;
    e[k] = in ? static_cast<double>(g[k] - v) : 0.0;
    nv[k] = in ? round_to(t, static_cast<double>(static_cast<C>(g[k]) - vn)) : 0.0;
    sc[k] = in ? std::fabs(g[k]) + depth * static_cast<double>(c > 0 ? abs_s / c : 0) : 0.0;
  }
}

}  // namespace

Expected<Result> sparsemax(const SparsemaxDescriptor& d, const HostTensor& x) {
  const DType t = d.y.dtype;
  return by_rows(d.x, d.axis, {&x}, [&](const auto& v, auto& e, auto& nv, auto& sc) {
    if (d.x.dtype == DType::kF64) forward_row<double>(v[0], t, e, nv, sc);
    else forward_row<float>(v[0], t, e, nv, sc);
  });
}

Expected<Result> sparsemax_backward(const SparsemaxBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& y) {
  const DType t = d.grad_x.dtype;
  return by_rows(d.grad_y, d.axis, {&grad_y, &y}, [&](const auto& v, auto& e, auto& nv, auto& sc) {
    if (d.grad_y.dtype == DType::kF64) backward_row<double>(v[0], v[1], t, e, nv, sc);
    else backward_row<float>(v[0], v[1], t, e, nv, sc);
  });
}

}  // namespace baracuda::reference
