// CPU oracle of the scans and their backward (see scan.hpp).
#include "baracuda/reference/scan.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "baracuda/reference/softmax.hpp"  // AxisRows

namespace baracuda::reference {
namespace {

bool is_int(DType t) { return t == DType::kI32 || t == DType::kI64; }

// torch's _log_add_exp_helper.
template <class C>
C log_add_exp(C x, C y) {
  const C mn = std::isnan(y) ? y : std::min(x, y);
  const C mx = std::isnan(y) ? y : std::max(x, y);
  if (mn != mx || std::isfinite(mn)) return std::log1p(std::exp(mn - mx)) + mx;
  return x;
}

// torch's cummax / cummin step: does `v` replace the current extremum `cur`?
template <class C>
bool takes_over(C v, C cur, bool max) {
  return std::isnan(v) || (!std::isnan(cur) && (max ? v >= cur : v <= cur));
}

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

// One forward row in scan order (xs[q] is the element at scan position q).
template <class C>
void forward_row(ScanKind kind, DType out, const std::vector<double>& xs, const std::vector<std::int64_t>& orig,
                 double* exact, double* naive, double* scale, std::int64_t* idx) {
  const std::size_t n = xs.size();
  const double depth = std::log2(static_cast<double>(n) + 1) + 2;
  const long double inf = std::numeric_limits<long double>::infinity();
  long double e = kind == ScanKind::kCumprod ? 1 : (kind == ScanKind::kLogcumsumexp ? -inf : 0);
  C c = static_cast<C>(e);
  double abs_sum = 0;
  std::int64_t cur_idx = -1;
  for (std::size_t q = 0; q < n; ++q) {
    const long double v = xs[q];
    const C vc = static_cast<C>(xs[q]);
    switch (kind) {
      case ScanKind::kCumsum:
        e += v;
        c += vc;
        abs_sum += std::fabs(xs[q]);
        scale[q] = finite_or_zero(depth * abs_sum);
        break;
      case ScanKind::kCumprod:
        e *= v;
        c *= vc;
        scale[q] = finite_or_zero(std::fabs(static_cast<double>(e)) * static_cast<double>(q + 1));
        break;
      case ScanKind::kLogcumsumexp:
        e = log_add_exp<long double>(e, v);
        c = log_add_exp<C>(c, vc);
        scale[q] = finite_or_zero(depth * (std::fabs(static_cast<double>(e)) + 1));
        break;
      default: {
        const bool max = kind == ScanKind::kCummax;
        if (cur_idx < 0 || takes_over<long double>(v, e, max)) {
          e = v;
          cur_idx = orig[q];
        }
        c = static_cast<C>(e);
        idx[q] = cur_idx;
        scale[q] = 0;
        break;
      }
    }
    exact[q] = static_cast<double>(e);
    naive[q] = round_to(out, static_cast<double>(c));
  }
}

// The scan-order positions of a row: q -> original k.
std::vector<std::int64_t> order_of(std::int64_t len, bool reverse) {
  std::vector<std::int64_t> o(static_cast<std::size_t>(len));
  for (std::int64_t q = 0; q < len; ++q) o[static_cast<std::size_t>(q)] = reverse ? len - 1 - q : q;
  return o;
}

}  // namespace

Expected<ScanResult> scan(const ScanDescriptor& d, const HostTensor& x) {
  const AxisRows a = axis_rows(d.x, d.axis);
  const std::int64_t n = d.x.numel();
  ScanResult r;
  r.values = zero_result(n);
  const bool idx = d.kind == ScanKind::kCummax || d.kind == ScanKind::kCummin;
  if (idx) r.indices.assign(static_cast<std::size_t>(n), 0);
  const bool integer = is_int(d.x.dtype);
  if (integer) {
    if (d.kind == ScanKind::kLogcumsumexp)
      return Status(Code::kInvalidArgument, "reference scan: integer x takes cumsum, cumprod, cummax and cummin");
    r.ints.assign(static_cast<std::size_t>(n), 0);
  }
  const auto order = order_of(a.len, d.reverse);
  std::vector<double> xs(static_cast<std::size_t>(a.len)), e(xs.size()), nv(xs.size()), sc(xs.size());
  std::vector<std::int64_t> ix(xs.size());
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    if (integer) {  // sums and products wrap in 64 bits; extrema compare exactly, later ties win
      std::uint64_t acc = d.kind == ScanKind::kCumprod ? 1 : 0;
      std::int64_t ext = 0, ext_idx = -1;
      for (std::int64_t q = 0; q < a.len; ++q) {
        const std::int64_t k = order[static_cast<std::size_t>(q)], li = a.index(row, k);
        const std::int64_t v = load_as_int64(d.x.dtype, x.data(), offset_of(d.x, li));
        std::int64_t s;
        if (idx) {
          if (ext_idx < 0 || (d.kind == ScanKind::kCummax ? v >= ext : v <= ext)) {
            ext = v;
            ext_idx = k;
          }
          s = ext;
          r.indices[static_cast<std::size_t>(li)] = ext_idx;
        } else {
          acc = d.kind == ScanKind::kCumprod ? acc * static_cast<std::uint64_t>(v) : acc + static_cast<std::uint64_t>(v);
          s = static_cast<std::int64_t>(acc);
        }
        const auto u = static_cast<std::size_t>(li);
        r.ints[u] = s;
        r.values.exact[u] = r.values.naive[u] = static_cast<double>(s);
      }
      continue;
    }
    for (std::int64_t q = 0; q < a.len; ++q) xs[static_cast<std::size_t>(q)] = x.get(a.index(row, order[static_cast<std::size_t>(q)]));
    if (d.x.dtype == DType::kF64) forward_row<double>(d.kind, d.y.dtype, xs, order, e.data(), nv.data(), sc.data(), ix.data());
    else forward_row<float>(d.kind, d.y.dtype, xs, order, e.data(), nv.data(), sc.data(), ix.data());
    for (std::int64_t q = 0; q < a.len; ++q) {
      const auto j = static_cast<std::size_t>(q);
      const auto u = static_cast<std::size_t>(a.index(row, order[j]));
      r.values.exact[u] = e[j];
      r.values.naive[u] = nv[j];
      r.values.scale[u] = sc[j];
      if (idx) r.indices[u] = ix[j];
    }
  }
  return r;
}

namespace {

// One backward row. Positions are original (k = 0..len-1); `fwd_reverse` is the forward's
// direction; the backward scans against it.
template <class C>
void backward_row(ScanKind kind, DType out, bool fwd_reverse, const std::vector<double>& g, const std::vector<double>& x,
                  const std::vector<double>& y, const std::vector<std::int64_t>& ix, double* exact, double* naive,
                  double* scale) {
  const auto n = static_cast<std::int64_t>(g.size());
  const double depth = std::log2(static_cast<double>(n) + 1) + 2;
  // backward order: from the forward's last position to its first
  const auto order = order_of(n, !fwd_reverse);
  auto at = [](const std::vector<double>& v, std::int64_t k) { return v[static_cast<std::size_t>(k)]; };
  switch (kind) {
    case ScanKind::kCumsum: {
      long double e = 0;
      C c = 0;
      double abs_sum = 0;
      for (std::int64_t k : order) {
        e += at(g, k);
        c += static_cast<C>(at(g, k));
        abs_sum += std::fabs(at(g, k));
        const auto u = static_cast<std::size_t>(k);
        exact[u] = static_cast<double>(e);
        naive[u] = round_to(out, static_cast<double>(c));
        scale[u] = finite_or_zero(depth * abs_sum);
      }
      return;
    }
    case ScanKind::kCumprod: {
      long double te = 0;  // T_{i+1}
      C tc = 0;
      double ta = 0;
      for (std::int64_t k : order) {
        const std::int64_t prev = fwd_reverse ? k + 1 : k - 1;
        const double yp = (prev >= 0 && prev < n) ? at(y, prev) : 1.0;
        const long double se = at(g, k) + te;
        const C sc = static_cast<C>(at(g, k)) + tc;
        const double sa = std::fabs(at(g, k)) + ta;
        const auto u = static_cast<std::size_t>(k);
        exact[u] = static_cast<double>(static_cast<long double>(yp) * se);
        naive[u] = round_to(out, static_cast<double>(static_cast<C>(yp) * sc));
        scale[u] = finite_or_zero(depth * std::fabs(yp) * sa);
        te = at(x, k) * se;
        tc = static_cast<C>(at(x, k)) * sc;
        ta = std::fabs(at(x, k)) * sa;
      }
      return;
    }
    case ScanKind::kCummax:
    case ScanKind::kCummin: {
      std::vector<long double> e(static_cast<std::size_t>(n), 0);
      std::vector<C> c(static_cast<std::size_t>(n), 0);
      std::vector<double> a(static_cast<std::size_t>(n), 0);
      for (std::int64_t k : order) {
        const std::int64_t t = ix[static_cast<std::size_t>(k)];
        if (t < 0 || t >= n) continue;
        const auto u = static_cast<std::size_t>(t);
        e[u] += at(g, k);
        c[u] += static_cast<C>(at(g, k));
        a[u] += std::fabs(at(g, k));
      }
      for (std::int64_t k = 0; k < n; ++k) {
        const auto u = static_cast<std::size_t>(k);
        exact[u] = static_cast<double>(e[u]);
        naive[u] = round_to(out, static_cast<double>(c[u]));
        scale[u] = finite_or_zero(depth * a[u]);
      }
      return;
    }
    default: {
      const long double ninf = -std::numeric_limits<long double>::infinity();
      long double pe = ninf, ne = ninf;
      C pc = static_cast<C>(ninf), nc = static_cast<C>(ninf);
      for (std::int64_t k : order) {
        const double gv = at(g, k), yv = at(y, k), xv = at(x, k);
        const long double lp = gv > 0 ? std::log(static_cast<long double>(gv)) - yv : ninf;
        const long double ln = gv < 0 ? std::log(static_cast<long double>(-gv)) - yv : ninf;
        pe = log_add_exp<long double>(pe, lp);
        ne = log_add_exp<long double>(ne, ln);
        const C gc = static_cast<C>(gv), yc = static_cast<C>(yv), xc = static_cast<C>(xv);
        pc = log_add_exp<C>(pc, gc > 0 ? std::log(gc) - yc : static_cast<C>(ninf));
        nc = log_add_exp<C>(nc, gc < 0 ? std::log(-gc) - yc : static_cast<C>(ninf));
        const long double pos = std::exp(xv + pe), neg = std::exp(xv + ne);
        const auto u = static_cast<std::size_t>(k);
        exact[u] = static_cast<double>(pos - neg);
        naive[u] = round_to(out, static_cast<double>(std::exp(xc + pc) - std::exp(xc + nc)));
        const double big = std::max(std::isfinite(static_cast<double>(pe)) ? std::fabs(static_cast<double>(pe)) : 0.0,
                                    std::isfinite(static_cast<double>(ne)) ? std::fabs(static_cast<double>(ne)) : 0.0);
        scale[u] = finite_or_zero(static_cast<double>(pos + neg) * (depth + std::fabs(xv) + big));
      }
      return;
    }
  }
}

}  // namespace

Expected<Result> scan_backward(const ScanBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor* x,
                               const HostTensor* y, const HostTensor* indices) {
  const bool needs_xy = d.kind == ScanKind::kCumprod || d.kind == ScanKind::kLogcumsumexp;
  const bool needs_idx = d.kind == ScanKind::kCummax || d.kind == ScanKind::kCummin;
  if ((needs_xy && (!x || !y)) || (needs_idx && !indices))
    return Status(Code::kInvalidArgument, std::string("reference scan_backward: ") + scan_kind_name(d.kind) +
                                              " needs " + (needs_idx ? "indices" : "x and y"));
  const AxisRows a = axis_rows(d.grad_y, d.axis);
  Result r = zero_result(d.grad_y.numel());
  const auto len = static_cast<std::size_t>(a.len);
  std::vector<double> g(len), xs(len), ys(len), e(len), nv(len), sc(len);
  std::vector<std::int64_t> ix(len);
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    for (std::int64_t k = 0; k < a.len; ++k) {
      const auto u = static_cast<std::size_t>(k);
      const std::int64_t li = a.index(row, k);
      g[u] = grad_y.get(li);
      if (needs_xy) {
        xs[u] = x->get(li);
        ys[u] = y->get(li);
      }
      if (needs_idx) ix[u] = load_as_int64(DType::kI64, indices->data(), offset_of(indices->layout(), li));
    }
    if (d.grad_y.dtype == DType::kF64)
      backward_row<double>(d.kind, d.grad_x.dtype, d.reverse, g, xs, ys, ix, e.data(), nv.data(), sc.data());
    else
      backward_row<float>(d.kind, d.grad_x.dtype, d.reverse, g, xs, ys, ix, e.data(), nv.data(), sc.data());
    for (std::int64_t k = 0; k < a.len; ++k) {
      const auto u = static_cast<std::size_t>(a.index(row, k)), j = static_cast<std::size_t>(k);
      r.exact[u] = e[j];
      r.naive[u] = nv[j];
      r.scale[u] = sc[j];
    }
  }
  return r;
}

}  // namespace baracuda::reference
