// CPU oracle of the ternary group (see ternary.hpp).
#include "baracuda/reference/ternary.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace baracuda::reference {

template <class C>
C ternary_value(TernaryKind k, C a, C b, C c, C value) {
  switch (k) {
    case TernaryKind::kClamp: {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      if (std::isnan(c)) return c;
      const C r = a < b ? b : a;
      return r > c ? c : r;
    }
    case TernaryKind::kFma: return std::fma(a, b, c);
    case TernaryKind::kAddcmul: {
      volatile C p = value * b;  // volatile: keep the host compiler from contracting too
      volatile C q = p * c;
      return a + q;
    }
    case TernaryKind::kAddcdiv: {
      volatile C q = b / c;
      volatile C p = value * q;
      return a + p;
    }
  }
  return std::nan("");
}

template <class C>
C ternary_grad(TernaryKind k, int which, C g, C a, C b, C c, C value) {
  switch (k) {
    case TernaryKind::kClamp:
      if (which == 0) return a >= b && a <= c ? g : C(0);
      if (which == 1) return a < b && b < c ? g : C(0);
      return a > c || c < b ? g : C(0);
    case TernaryKind::kFma: return which == 0 ? g * b : (which == 1 ? g * a : g);
    case TernaryKind::kAddcmul: return which == 0 ? g : (which == 1 ? g * c * value : g * b * value);
    case TernaryKind::kAddcdiv:
      if (which == 0) return g;
      if (which == 1) return g * (value / c);
      return -g * value * b / (c * c);
  }
  return std::nan("");
}

template float ternary_value<float>(TernaryKind, float, float, float, float);
template double ternary_value<double>(TernaryKind, double, double, double, double);
template float ternary_grad<float>(TernaryKind, int, float, float, float, float, float);
template double ternary_grad<double>(TernaryKind, int, double, double, double, double, double);

std::int64_t clamp_int(std::int64_t x, std::int64_t lo, std::int64_t hi) {
  const std::int64_t r = x < lo ? lo : x;
  return r > hi ? hi : r;
}

namespace {

// `t` read at the logical index of `out` it broadcasts to.
struct Reader {
  const HostTensor& t;
  TensorLayout view;
  Reader(const HostTensor& tensor, const TensorLayout& out)
      : t(tensor), view(broadcast_to(tensor.layout(), out.rank, out.shape, "operand").value()) {}
  double operator()(std::int64_t i) const { return load_as_double(view.dtype, t.data(), offset_of(view, i)); }
  std::int64_t int_at(std::int64_t i) const { return load_as_int64(view.dtype, t.data(), offset_of(view, i)); }
};

bool floating(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Error scale of one ternary output: the magnitude of the rounded terms.
double ternary_scale(TernaryKind k, double a, double b, double c, double value) {
  double s = 0;
  switch (k) {
    case TernaryKind::kClamp: return 0;  // selects an input
    case TernaryKind::kFma: s = std::fabs(a * b) + std::fabs(c); break;
    case TernaryKind::kAddcmul: s = std::fabs(a) + std::fabs(value * b * c); break;
    case TernaryKind::kAddcdiv: s = std::fabs(a) + std::fabs(value * b / c); break;
  }
  return std::isfinite(s) ? s : 0;
}

Result make_result(std::size_t n) {
  Result r;
  r.exact.resize(n);
  r.naive.resize(n);
  r.scale.assign(n, 0.0);
  return r;
}

Status refuse(const std::string& what) { return Status(Code::kInvalidArgument, "reference: " + what); }

}  // namespace

Expected<Result> ternary(const TernaryDescriptor& d, const HostTensor& a, const HostTensor& b, const HostTensor& c) {
  const DType t = d.out.dtype;
  Reader ra(a, d.out), rb(b, d.out), rc(c, d.out);
  const auto n = static_cast<std::size_t>(d.out.numel());
  Result r = make_result(n);
  if (!floating(t)) {
    if (d.kind != TernaryKind::kClamp || !dtype_is_integer(t)) return refuse("ternary: dtype not supported");
    for (std::size_t i = 0; i < n; ++i) {
      const auto li = static_cast<std::int64_t>(i);
      r.exact[i] = r.naive[i] = static_cast<double>(clamp_int(ra.int_at(li), rb.int_at(li), rc.int_at(li)));
    }
    return r;
  }
  const bool f64 = t == DType::kF64;
  for (std::size_t i = 0; i < n; ++i) {
    const auto li = static_cast<std::int64_t>(i);
    const double av = ra(li), bv = rb(li), cv = rc(li);
    double exact;
    if (d.kind == TernaryKind::kClamp || d.kind == TernaryKind::kFma) exact = ternary_value<double>(d.kind, av, bv, cv, d.value);
    else if (d.kind == TernaryKind::kAddcmul) exact = av + d.value * bv * cv;
    else exact = av + d.value * (bv / cv);
    r.exact[i] = exact;
    const double naive = f64 ? ternary_value<double>(d.kind, av, bv, cv, d.value)
                             : ternary_value<float>(d.kind, static_cast<float>(av), static_cast<float>(bv),
                                                    static_cast<float>(cv), static_cast<float>(d.value));
    r.naive[i] = round_to(t, naive);
    r.scale[i] = ternary_scale(d.kind, av, bv, cv, d.value);
  }
  return r;
}

namespace {
// Sums term(i) (the gradient of one operand at output element i) into the operand's shape.
template <class Exact, class Naive>
Result sum_to_operand(const TensorLayout& out, const TensorLayout& operand, DType grad_dtype, Exact&& exact_term,
                      Naive&& naive_term) {
  const TensorLayout view =
      broadcast_to(TensorLayout::contiguous(operand.dtype, operand.shape_span()), out.rank, out.shape, "operand").value();
  const auto n = static_cast<std::size_t>(operand.numel());
  std::vector<double> exact(n, 0.0), scale(n, 0.0), naive_d(n, 0.0);
  std::vector<float> naive_f(n, 0.f);
  const bool f64 = grad_dtype == DType::kF64;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const auto xi = static_cast<std::size_t>(offset_of(view, i));
    const double e = exact_term(i);
    exact[xi] += e;
    scale[xi] += std::fabs(e);
    if (f64) naive_d[xi] += e;
    else naive_f[xi] += naive_term(i);
  }
  Result r;
  r.exact = std::move(exact);
  r.scale = std::move(scale);
  r.naive.resize(n);
  for (std::size_t i = 0; i < n; ++i) r.naive[i] = round_to(grad_dtype, f64 ? naive_d[i] : naive_f[i]);
  return r;
}
}  // namespace

Expected<TernaryBackwardResult> ternary_backward(const TernaryBackwardDescriptor& d, const HostTensor& g, const HostTensor& a,
                                                 const HostTensor& b, const HostTensor& c) {
  const TensorLayout& out = d.grad_out;
  if (!floating(out.dtype)) return refuse("ternary_backward: floating dtypes only");
  Reader rg(g, out), ra(a, out), rb(b, out), rc(c, out);
  TernaryBackwardResult res;
  const bool computes[3] = {d.compute_grad_a, d.compute_grad_b, d.compute_grad_c};
  const TensorLayout* operands[3] = {&d.a, &d.b, &d.c};
  for (int which = 0; which < 3; ++which) {
    if (!computes[which]) continue;
    Result r = sum_to_operand(
        out, *operands[which], out.dtype,
        [&](std::int64_t i) { return ternary_grad<double>(d.kind, which, rg(i), ra(i), rb(i), rc(i), d.value); },
        [&](std::int64_t i) {
          return ternary_grad<float>(d.kind, which, static_cast<float>(rg(i)), static_cast<float>(ra(i)),
                                     static_cast<float>(rb(i)), static_cast<float>(rc(i)), static_cast<float>(d.value));
        });
    for (double& s : r.scale)
      if (!std::isfinite(s)) s = 0;
    res.grad[static_cast<std::size_t>(which)] = std::move(r);
  }
  return res;
}

Expected<Result> where(const WhereDescriptor& d, const HostTensor& cond, const HostTensor& a, const HostTensor& b) {
  Reader rc(cond, d.out), ra(a, d.out), rb(b, d.out);
  const auto n = static_cast<std::size_t>(d.out.numel());
  Result r = make_result(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto li = static_cast<std::int64_t>(i);
    r.exact[i] = rc.int_at(li) != 0 ? ra(li) : rb(li);
  }
  r.naive = r.exact;
  return r;
}

Expected<BackwardResult> where_backward(const WhereBackwardDescriptor& d, const HostTensor& cond, const HostTensor& g) {
  const TensorLayout& out = d.grad_out;
  if (!floating(out.dtype)) return refuse("where_backward: floating dtypes only");
  Reader rc(cond, out), rg(g, out);
  BackwardResult res;
  for (int which = 0; which < 2; ++which) {
    if (!(which == 0 ? d.compute_grad_a : d.compute_grad_b)) continue;
    auto term = [&](std::int64_t i) { return (rc.int_at(i) != 0) == (which == 0) ? rg(i) : 0.0; };
    Result r = sum_to_operand(out, which == 0 ? d.grad_a : d.grad_b, out.dtype, term,
                              [&](std::int64_t i) { return static_cast<float>(term(i)); });
    for (double& s : r.scale)
      if (!std::isfinite(s)) s = 0;
    (which == 0 ? res.grad_a : res.grad_b) = std::move(r);
  }
  return res;
}

Expected<Result> affine(const AffineDescriptor& d, const HostTensor& x) {
  const DType t = d.y.dtype;
  Reader rx(x, d.y);
  const auto n = static_cast<std::size_t>(d.y.numel());
  Result r = make_result(n);
  if (!floating(t)) {
    if (!dtype_is_integer(t)) return refuse("affine: dtype not supported");
    const auto alpha = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.alpha));
    const auto beta = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.beta));
    const int bits = dtype_bits(t);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t v = alpha * static_cast<std::uint64_t>(rx.int_at(static_cast<std::int64_t>(i))) + beta;
      std::int64_t w;
      if (bits == 64) w = static_cast<std::int64_t>(v);
      else {
        v &= (std::uint64_t{1} << bits) - 1;
        const bool is_signed = t != DType::kU8;
        w = is_signed && (v >> (bits - 1)) ? static_cast<std::int64_t>(v) - (std::int64_t{1} << bits) : static_cast<std::int64_t>(v);
      }
      r.exact[i] = r.naive[i] = static_cast<double>(w);
    }
    return r;
  }
  const bool f64 = t == DType::kF64;
  for (std::size_t i = 0; i < n; ++i) {
    const double xv = rx(static_cast<std::int64_t>(i));
    r.exact[i] = d.alpha * xv + d.beta;
    const double naive = f64 ? std::fma(d.alpha, xv, d.beta)
                             : static_cast<double>(std::fma(static_cast<float>(d.alpha), static_cast<float>(xv),
                                                            static_cast<float>(d.beta)));
    r.naive[i] = round_to(t, naive);
    const double s = std::fabs(d.alpha * xv) + std::fabs(d.beta);
    r.scale[i] = std::isfinite(s) ? s : 0;
  }
  return r;
}

Expected<Result> fill(const FillDescriptor& d) {
  const auto n = static_cast<std::size_t>(d.y.numel());
  Result r = make_result(n);
  double v;
  const DType t = d.y.dtype;
  if (t == DType::kBool) v = d.value != 0 ? 1 : 0;
  else if (dtype_is_integer(t)) v = d.value;
  else if (t == DType::kF64) v = d.value;
  else v = round_to(t, static_cast<double>(static_cast<float>(d.value)));  // torch: through f32
  for (std::size_t i = 0; i < n; ++i) r.exact[i] = r.naive[i] = v;
  return r;
}

}  // namespace baracuda::reference
