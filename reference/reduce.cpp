// CPU oracle of the reduction family (see reduce.hpp).
#include "baracuda/reference/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace baracuda::reference {
namespace {

// Logical index of x for (group g, reduced element e): kept dims and reduced dims of x in
// order, both row-major.
struct Grouping {
  std::int64_t groups = 1, n = 1;
  std::vector<std::int64_t> kept_shape, kept_stride, red_shape, red_stride;
  std::vector<std::int64_t> red_off;  // logical offset of each reduced element
  std::int64_t base(std::int64_t g) const {
    std::int64_t off = 0;
    for (int d = static_cast<int>(kept_shape.size()) - 1; d >= 0; --d) {
      off += (g % kept_shape[d]) * kept_stride[d];
      g /= kept_shape[d];
    }
    return off;
  }
};

Grouping grouping(const TensorLayout& x, std::uint32_t mask) {
  Grouping G;
  std::vector<std::int64_t> lstride(static_cast<std::size_t>(x.rank));
  std::int64_t s = 1;
  for (int i = x.rank - 1; i >= 0; --i) {
    lstride[i] = s;
    s *= x.shape[i];
  }
  for (int i = 0; i < x.rank; ++i) {
    if (mask & (1u << i)) {
      G.red_shape.push_back(x.shape[i]);
      G.red_stride.push_back(lstride[i]);
      G.n *= x.shape[i];
    } else {
      G.kept_shape.push_back(x.shape[i]);
      G.kept_stride.push_back(lstride[i]);
      G.groups *= x.shape[i];
    }
  }
  G.red_off.resize(static_cast<std::size_t>(G.n));
  for (std::int64_t e = 0; e < G.n; ++e) {
    std::int64_t off = 0, r = e;
    for (int d = static_cast<int>(G.red_shape.size()) - 1; d >= 0; --d) {
      off += (r % G.red_shape[d]) * G.red_stride[d];
      r /= G.red_shape[d];
    }
    G.red_off[static_cast<std::size_t>(e)] = off;
  }
  return G;
}

Expected<std::uint32_t> mask_of(const TensorLayout& x, const ReduceAxes& axes) {
  if (axes.count < 0 || axes.count > kMaxRank) return Status(Code::kInvalidArgument, "axes.count out of range");
  if (axes.count == 0 || x.rank == 0) return x.rank == 0 ? 0u : (1u << x.rank) - 1u;
  std::uint32_t m = 0;
  for (int i = 0; i < axes.count; ++i) {
    int a = axes.dims[static_cast<std::size_t>(i)];
    if (a < -x.rank || a >= x.rank) return Status(Code::kInvalidArgument, "axes[" + std::to_string(i) + "] out of range");
    a = a < 0 ? a + x.rank : a;
    if (m & (1u << a)) return Status(Code::kInvalidArgument, "axes[" + std::to_string(i) + "] repeats a dim");
    m |= 1u << a;
  }
  return m;
}

bool is_float(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

template <class C>
C nan_pick(C a, C b, bool mx) {
  if (a != a) return a;
  if (b != b) return b;
  return mx ? (b > a ? b : a) : (b < a ? b : a);
}

// One group of values -> (exact, naive, scale) for the float kinds.
template <class C>
void float_group(ReduceKind kind, double p, double corr, DType out, const std::vector<double>& v, double* ex, double* nv,
                 double* sc) {
  using L = long double;
  const auto n = static_cast<std::int64_t>(v.size());
  const L inf = std::numeric_limits<L>::infinity();
  L e = 0;
  C c = 0;
  double scale = 0;
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      for (double x : v) {
        e += x;
        c += static_cast<C>(x);
        scale += std::fabs(x);
      }
      if (kind == ReduceKind::kMean) {
        e /= static_cast<L>(n);
        c /= static_cast<C>(n);
        scale /= static_cast<double>(n);
      }
      break;
    case ReduceKind::kProd:
      e = 1;
      c = 1;
      for (double x : v) {
        e *= x;
        c *= static_cast<C>(x);
      }
      scale = std::fabs(static_cast<double>(e)) * static_cast<double>(n);
      break;
    case ReduceKind::kMax: case ReduceKind::kAmax: case ReduceKind::kMin: case ReduceKind::kAmin: {
      const bool mx = kind == ReduceKind::kMax || kind == ReduceKind::kAmax;
      e = mx ? -inf : inf;
      for (double x : v) e = nan_pick<L>(e, x, mx);
      c = static_cast<C>(e);
      break;
    }
    case ReduceKind::kNorm: {
      if (std::isinf(p)) {
        e = p > 0 ? -inf : inf;
        for (double x : v) e = nan_pick<L>(e, std::fabs(x), p > 0);
        c = static_cast<C>(e);
        break;
      }
      L s = 0;
      C sc2 = 0;
      for (double x : v) {
        const L a = std::fabs(static_cast<L>(x));
        const C ac = std::fabs(static_cast<C>(x));
        if (p == 0) {
          s += x != 0;
          sc2 += x != 0 ? C(1) : C(0);
        } else if (p == 1) {
          s += a;
          sc2 += ac;
        } else if (p == 2) {
          s += a * a;
          sc2 += ac * ac;
        } else {
          s += std::pow(a, static_cast<L>(p));
          sc2 += std::pow(ac, static_cast<C>(p));
        }
      }
      if (p == 0 || p == 1) {
        e = s;
        c = sc2;
      } else if (p == 2) {
        e = std::sqrt(s);
        c = std::sqrt(sc2);
      } else {
        e = std::pow(s, 1 / static_cast<L>(p));
        c = std::pow(sc2, C(1) / static_cast<C>(p));
      }
      // the root's relative error is the sum's over |p|, plus the root's own rounding
      scale = std::fabs(static_cast<double>(e)) * (1.0 + (p == 0 || p == 1 ? 0.0 : 1.0 / std::fabs(p))) *
              (p == 0 || p == 1 ? 1.0 : 2.0);
      if (p == 1) scale = static_cast<double>(s);
      break;
    }
    case ReduceKind::kLogSumExp: {
      L m = -inf;
      C mc = -std::numeric_limits<C>::infinity();
      for (double x : v) {
        m = nan_pick<L>(m, x, true);
        mc = nan_pick<C>(mc, static_cast<C>(x), true);
      }
      if (std::isnan(m) || std::isinf(m)) {
        e = m;
        c = mc;
      } else {
        L s = 0;
        C s2 = 0;
        for (double x : v) {
          s += std::exp(static_cast<L>(x) - m);
          s2 += std::exp(static_cast<C>(x) - mc);
        }
        e = m + std::log(s);
        c = mc + std::log(s2);
        scale = std::fabs(static_cast<double>(e)) + std::log2(static_cast<double>(n) + 1) + 4;
      }
      break;
    }
    case ReduceKind::kVar: case ReduceKind::kStd: {
      L mean = 0;
      C meanc = 0;
      for (double x : v) {
        mean += x;
        meanc += static_cast<C>(x);
      }
      mean /= static_cast<L>(n);
      meanc /= static_cast<C>(n);
      L m2 = 0;
      C m2c = 0;
      double terms = 0;
      for (double x : v) {
        m2 += (x - mean) * (x - mean);
        m2c += (static_cast<C>(x) - meanc) * (static_cast<C>(x) - meanc);
        const double t = std::fabs(x) + std::fabs(static_cast<double>(mean));
        terms += t * t;
      }
      const L div = std::max<L>(0, static_cast<L>(n) - static_cast<L>(corr));
      e = m2 / div;
      c = m2c / static_cast<C>(div);
      scale = terms / static_cast<double>(div);
      if (kind == ReduceKind::kStd) {
        e = std::sqrt(e);
        c = std::sqrt(c);
        scale = e > 0 ? scale / (2 * static_cast<double>(e)) : 0;
      }
      break;
    }
  }
  *ex = static_cast<double>(e);
  *nv = round_to(out, static_cast<double>(c));
  *sc = std::isfinite(scale) ? scale : 0.0;
}

}  // namespace

Expected<Result> reduce(const ReduceDescriptor& d, const HostTensor& x) {
  auto mask = mask_of(d.x, d.axes);
  if (!mask) return mask.error();
  const Grouping G = grouping(d.x, mask.value());
  const std::vector<double> xs = x.logical();
  Result r;
  r.exact.resize(static_cast<std::size_t>(G.groups));
  r.naive.resize(r.exact.size());
  r.scale.assign(r.exact.size(), 0.0);
  const bool integer = !is_float(d.x.dtype);
  if (integer && d.kind != ReduceKind::kSum && d.kind != ReduceKind::kProd)
    return Status(Code::kInvalidArgument, "reference::reduce: integer x takes sum and prod only");
  std::vector<double> v(static_cast<std::size_t>(G.n));
  for (std::int64_t g = 0; g < G.groups; ++g) {
    const std::int64_t b = G.base(g);
    const auto gi = static_cast<std::size_t>(g);
    if (integer) {  // i64 wrapping, exact
      std::uint64_t acc = d.kind == ReduceKind::kSum ? 0 : 1;
      for (std::int64_t e = 0; e < G.n; ++e) {
        const auto xv = static_cast<std::uint64_t>(load_as_int64(d.x.dtype, x.data(), offset_of(d.x, b + G.red_off[static_cast<std::size_t>(e)])));
        acc = d.kind == ReduceKind::kSum ? acc + xv : acc * xv;
      }
      r.exact[gi] = r.naive[gi] = static_cast<double>(static_cast<std::int64_t>(acc));
      continue;
    }
    for (std::int64_t e = 0; e < G.n; ++e) v[static_cast<std::size_t>(e)] = xs[static_cast<std::size_t>(b + G.red_off[static_cast<std::size_t>(e)])];
    if (d.x.dtype == DType::kF64) float_group<double>(d.kind, d.p, d.correction, d.y.dtype, v, &r.exact[gi], &r.naive[gi], &r.scale[gi]);
    else float_group<float>(d.kind, d.p, d.correction, d.y.dtype, v, &r.exact[gi], &r.naive[gi], &r.scale[gi]);
  }
  return r;
}

Expected<Result> arg_reduce(const ArgReduceDescriptor& d, const HostTensor& x) {
  auto mask = mask_of(d.x, d.axes);
  if (!mask) return mask.error();
  const Grouping G = grouping(d.x, mask.value());
  const bool mx = d.kind == ArgReduceKind::kArgmax;
  const bool integer = !is_float(d.x.dtype);
  Result r;
  for (std::int64_t g = 0; g < G.groups; ++g) {
    const std::int64_t b = G.base(g);
    std::int64_t best = -1;
    long double bv = 0;
    bool bnan = false;
    for (std::int64_t e = 0; e < G.n; ++e) {
      const std::int64_t li = b + G.red_off[static_cast<std::size_t>(e)];
      const long double v = integer ? static_cast<long double>(load_as_int64(d.x.dtype, x.data(), offset_of(d.x, li)))
                                    : static_cast<long double>(x.get(li));
      const bool vnan = v != v;
      if (best < 0) {
        best = e, bv = v, bnan = vnan;
        continue;
      }
      if (bnan) continue;
      if (vnan || (mx ? v > bv : v < bv)) best = e, bv = v, bnan = vnan;
    }
    r.exact.push_back(static_cast<double>(best));
  }
  r.naive = r.exact;
  r.scale.assign(r.exact.size(), 0.0);
  return r;
}

namespace {
Expected<Result> count_like(const TensorLayout& xl, const HostTensor& x, const ReduceAxes& axes, int mode) {
  auto mask = mask_of(xl, axes);
  if (!mask) return mask.error();
  const Grouping G = grouping(xl, mask.value());
  Result r;
  for (std::int64_t g = 0; g < G.groups; ++g) {
    const std::int64_t b = G.base(g);
    std::int64_t c = 0;
    for (std::int64_t e = 0; e < G.n; ++e) {
      const std::int64_t li = b + G.red_off[static_cast<std::size_t>(e)];
      const double v = x.get(li);
      c += (v != 0) ? 1 : 0;  // NaN != 0 is true, -0.0 == 0
    }
    r.exact.push_back(mode == 0 ? (c > 0) : mode == 1 ? (c == G.n) : static_cast<double>(c));
  }
  r.naive = r.exact;
  r.scale.assign(r.exact.size(), 0.0);
  return r;
}
}  // namespace

Expected<Result> bool_reduce(const BoolReduceDescriptor& d, const HostTensor& x) {
  return count_like(d.x, x, d.axes, d.kind == BoolReduceKind::kAny ? 0 : 1);
}
Expected<Result> count_reduce(const CountReduceDescriptor& d, const HostTensor& x) { return count_like(d.x, x, d.axes, 2); }

Expected<Result> trace(const TraceDescriptor& d, const HostTensor& x) {
  if (d.x.rank != 2) return Status(Code::kInvalidArgument, "reference::trace: x must be 2-D");
  const std::int64_t len = std::min(d.x.shape[0], d.x.shape[1]);
  Result r;
  if (!is_float(d.x.dtype)) {
    std::uint64_t acc = 0;
    for (std::int64_t i = 0; i < len; ++i)
      acc += static_cast<std::uint64_t>(load_as_int64(d.x.dtype, x.data(), offset_of(d.x, i * d.x.shape[1] + i)));
    r.exact = r.naive = {static_cast<double>(static_cast<std::int64_t>(acc))};
    r.scale = {0.0};
    return r;
  }
  std::vector<double> v;
  for (std::int64_t i = 0; i < len; ++i) v.push_back(x.get(i * d.x.shape[1] + i));
  double e = 0, nv = 0, sc = 0;
  if (d.x.dtype == DType::kF64) float_group<double>(ReduceKind::kSum, 2, 1, d.y.dtype, v, &e, &nv, &sc);
  else float_group<float>(ReduceKind::kSum, 2, 1, d.y.dtype, v, &e, &nv, &sc);
  r.exact = {e};
  r.naive = {nv};
  r.scale = {sc};
  return r;
}

namespace {
double sgn(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }

// The gradient of one element, in T = long double (exact) or the compute type (naive).
template <class T>
T grad_elem(ReduceKind kind, double p, bool no_dim, T div, T n, T g, T x, T y, T mean, T count, T hit, T zeros, T prod_nz) {
  // torch's var_backward over every dim (dim=None or a rank-0 x) with n - correction <= 0
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const bool no_dof = no_dim && !(div > T(0));
  switch (kind) {
    case ReduceKind::kSum: return g;
    case ReduceKind::kMean: return g / n;
    case ReduceKind::kMax: case ReduceKind::kAmax: case ReduceKind::kMin: case ReduceKind::kAmin:
      return (g / count) * hit;  // hit, count: the tie rule of reduce_backward
    case ReduceKind::kLogSumExp: return g * std::exp(x - y);
    case ReduceKind::kVar: return no_dof ? g * (x == mean ? nan : inf) : (T(2) / div) * g * (x - mean);
    case ReduceKind::kStd: {
      const T gvar = y == T(0) ? T(0) : g / (T(2) * y);  // std_backward: var's gradient of g / (2 y)
      return no_dof ? gvar * (x == mean ? nan : inf) : (T(2) / div) * gvar * (x - mean);
    }
    case ReduceKind::kProd:
      if (zeros == T(0)) return (g * y) / x;
      if (zeros == T(1)) return x == T(0) ? g * prod_nz : T(0);
      return T(0);
    case ReduceKind::kNorm: {
      const T m = std::fabs(x);
      const T s = static_cast<T>(sgn(static_cast<double>(x)));
      if (p == 0) return T(0);
      if (p == 1) return g * s;
      if (p == 2) return y == T(0) ? T(0) : g * (x / y);
      // +-inf: PyTorch's mask |x| == y || isnan(x), with sgn(NaN) = 0 (torch.sign).
      if (std::isinf(p)) return s * (g / count) * hit;
      if (y == T(0)) return T(0);
      const T pp = static_cast<T>(p);
      // p < 1: |x|^(p-1) at x == 0 is inf; PyTorch masks it to 0 (masked_fill_(self == 0, 0)).
      const T scaled = pp < T(1) ? (x == T(0) ? T(0) : s * std::pow(m, pp - T(1))) : x * std::pow(m, pp - T(2));
      return scaled * (g / std::pow(y, pp - T(1)));
    }
  }
  return T(0);
}
}  // namespace

Expected<Result> reduce_backward(const ReduceBackwardDescriptor& d, const HostTensor& grad_y, const HostTensor& x,
                                 const HostTensor& y) {
  if (!is_float(d.x.dtype)) return Status(Code::kInvalidArgument, "reference::reduce_backward: floating x only");
  auto mask = mask_of(d.x, d.axes);
  if (!mask) return mask.error();
  const Grouping G = grouping(d.x, mask.value());
  const std::vector<double> xs = x.logical(), gys = grad_y.logical(), ys = y.logical();
  Result r;
  const auto total = static_cast<std::size_t>(G.groups * G.n);
  r.exact.resize(total);
  r.naive.resize(total);
  r.scale.assign(total, 0.0);
  const bool f64 = d.x.dtype == DType::kF64;
  const bool abs_tie = d.kind == ReduceKind::kNorm && std::isinf(d.p);
  const bool no_dim = d.axes.count == 0 || d.x.rank == 0;  // torch's dim=None (see grad_elem)
  // The ties the gradient goes to. amax / amin: x == y (a NaN y: none, NaN everywhere); norm
  // +-inf: |x| == y or x NaN; max / min over every dim (torch's evenly_distribute_backward):
  // x == y, or the NaNs when y is NaN; max / min along named dims (torch.max(x, dim)): only
  // the first of those (its index), with count 1.
  const bool max_min = d.kind == ReduceKind::kMax || d.kind == ReduceKind::kMin;
  auto is_tie = [&](double xv, double yv) {
    if (abs_tie) return std::fabs(xv) == yv || std::isnan(xv);
    return xv == yv || (max_min && std::isnan(yv) && std::isnan(xv));
  };
  using L = long double;
  for (std::int64_t g = 0; g < G.groups; ++g) {
    const std::int64_t b = G.base(g);
    const double gv = gys[static_cast<std::size_t>(g)], yv = ys.empty() ? 0.0 : ys[static_cast<std::size_t>(g)];
    L sum = 0, count = 0, zeros = 0, prod_nz = 1;
    std::int64_t first = -1;
    double sumc = 0;  // naive mean in the compute type
    double sum_abs = 0;  // for the error of a computed mean
    float sumf = 0;
    float prodf = 1;
    double prodd = 1;
    for (std::int64_t e = 0; e < G.n; ++e) {
      const double xv = xs[static_cast<std::size_t>(b + G.red_off[static_cast<std::size_t>(e)])];
      sum += xv;
      sumc += xv;
      sum_abs += std::fabs(xv);
      sumf += static_cast<float>(xv);
      if (is_tie(xv, yv)) {
        count += 1;
        if (first < 0) first = e;
      }
      if (xv == 0) zeros += 1;
      else {
        prod_nz *= xv;
        prodf *= static_cast<float>(xv);
        prodd *= xv;
      }
    }
    const bool first_only = max_min && !no_dim;
    if (first_only) count = 1;
    const L n = static_cast<L>(G.n);
    const L mean = sum / n;
    const L div = n - static_cast<L>(d.correction);
    for (std::int64_t e = 0; e < G.n; ++e) {
      const std::int64_t li = b + G.red_off[static_cast<std::size_t>(e)];
      const double xv = xs[static_cast<std::size_t>(li)];
      const auto oi = static_cast<std::size_t>(li);
      const double hit = (first_only ? e == first : is_tie(xv, yv)) ? 1.0 : 0.0;
      const L ex = grad_elem<L>(d.kind, d.p, no_dim, div, n, gv, xv, yv, mean, count, hit, zeros, prod_nz);
      r.exact[oi] = static_cast<double>(ex);
      double nv;
      if (f64) nv = grad_elem<double>(d.kind, d.p, no_dim, static_cast<double>(div), static_cast<double>(n), gv, xv, yv, sumc / static_cast<double>(n),
                                      static_cast<double>(count), hit, static_cast<double>(zeros), prodd);
      else nv = grad_elem<float>(d.kind, d.p, no_dim, static_cast<float>(div), static_cast<float>(n), static_cast<float>(gv), static_cast<float>(xv),
                                 static_cast<float>(yv), sumf / static_cast<float>(n), static_cast<float>(count),
                                 static_cast<float>(hit), static_cast<float>(zeros), prodf);
      r.naive[oi] = round_to(d.grad_x.dtype, nv);
      double sc = 0;
      const double ag = std::fabs(gv);
      // x - mean: the device's mean is a sum of n terms in a tree of depth ~log2(n), its error up
      // to depth * u * sum|x| / n, which |mean| does not bound when x is centred on 0.
      const double mean_err = (std::ceil(std::log2(static_cast<double>(std::max<std::int64_t>(G.n, 1)))) + 2) *
                              sum_abs / static_cast<double>(std::max<std::int64_t>(G.n, 1));
      const double centred = std::fabs(xv) + std::fabs(static_cast<double>(mean)) + mean_err;
      switch (d.kind) {
        case ReduceKind::kVar: sc = 2 * ag / std::fabs(static_cast<double>(div)) * centred; break;
        case ReduceKind::kStd:
          sc = yv != 0 ? ag / (std::fabs(static_cast<double>(div)) * std::fabs(yv)) * centred : 0;
          break;
        case ReduceKind::kLogSumExp: sc = std::fabs(static_cast<double>(ex)) * (std::fabs(xv) + std::fabs(yv) + 1); break;
        case ReduceKind::kProd: sc = std::fabs(static_cast<double>(ex)) * static_cast<double>(G.n); break;
        case ReduceKind::kNorm: sc = std::fabs(static_cast<double>(ex)) * (std::fabs(d.p) + 2); break;
        default: break;
      }
      r.scale[oi] = std::isfinite(sc) ? sc : 0.0;
    }
  }
  return r;
}

}  // namespace baracuda::reference
