// CPU oracle of the ternary group (see ternary.hpp).
#include "baracuda/reference/ternary.hpp"

#include <cmath>
#include <string>

#include "map_eval.hpp"  // map_result, BroadcastReader, sum_to_operand, wrap_to

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

// Exact (true value in double, one rounding at the end) for the kinds that round more than
// once in the kernels.
double ternary_exact(TernaryKind k, double a, double b, double c, double value) {
  if (k == TernaryKind::kAddcmul) return a + value * b * c;
  if (k == TernaryKind::kAddcdiv) return a + value * (b / c);
  return ternary_value<double>(k, a, b, c, value);
}

constexpr auto kNoScale = [](std::int64_t) { return 0.0; };

Status refuse(const std::string& what) { return Status(Code::kInvalidArgument, "reference: " + what); }

}  // namespace

Expected<Result> ternary(const TernaryDescriptor& d, const HostTensor& a, const HostTensor& b, const HostTensor& c) {
  const DType t = d.out.dtype;
  BroadcastReader ra(a, d.out), rb(b, d.out), rc(c, d.out);
  if (!floating(t)) {
    if (d.kind != TernaryKind::kClamp || !dtype_is_integer(t)) return refuse("ternary: dtype not supported");
    return map_result(
        d.out,
        [&](std::int64_t i, auto) { return static_cast<double>(clamp_int(ra.int_at(i), rb.int_at(i), rc.int_at(i))); },
        kNoScale);
  }
  const bool f64 = t == DType::kF64;
  return map_result(
      d.out,
      [&](std::int64_t i, auto naive) -> double {
        if (!naive) return ternary_exact(d.kind, ra(i), rb(i), rc(i), d.value);
        if (f64) return ternary_value<double>(d.kind, ra(i), rb(i), rc(i), d.value);
        return ternary_value<float>(d.kind, static_cast<float>(ra(i)), static_cast<float>(rb(i)), static_cast<float>(rc(i)),
                                    static_cast<float>(d.value));
      },
      [&](std::int64_t i) { return ternary_scale(d.kind, ra(i), rb(i), rc(i), d.value); });
}

Expected<TernaryBackwardResult> ternary_backward(const TernaryBackwardDescriptor& d, const HostTensor& g, const HostTensor& a,
                                                 const HostTensor& b, const HostTensor& c) {
  const TensorLayout& out = d.grad_out;
  if (!floating(out.dtype)) return refuse("ternary_backward: floating dtypes only");
  BroadcastReader rg(g, out), ra(a, out), rb(b, out), rc(c, out);
  TernaryBackwardResult res;
  const bool computes[3] = {d.compute_grad_a, d.compute_grad_b, d.compute_grad_c};
  const TensorLayout* operands[3] = {&d.a, &d.b, &d.c};
  for (int which = 0; which < 3; ++which) {
    if (!computes[which]) continue;
    res.grad[static_cast<std::size_t>(which)] =
        sum_to_operand(out, *operands[which], out.dtype, [&](std::int64_t i, auto naive) -> double {
          using C = NaiveType<decltype(naive)>;
          return ternary_grad<C>(d.kind, which, static_cast<C>(rg(i)), static_cast<C>(ra(i)), static_cast<C>(rb(i)),
                                 static_cast<C>(rc(i)), static_cast<C>(d.value));
        });
  }
  return res;
}

Expected<Result> where(const WhereDescriptor& d, const HostTensor& cond, const HostTensor& a, const HostTensor& b) {
  BroadcastReader rc(cond, d.out), ra(a, d.out), rb(b, d.out);
  return map_result(
      d.out, [&](std::int64_t i, auto) { return rc.int_at(i) != 0 ? ra(i) : rb(i); }, kNoScale);
}

Expected<BackwardResult> where_backward(const WhereBackwardDescriptor& d, const HostTensor& cond, const HostTensor& g) {
  const TensorLayout& out = d.grad_out;
  if (!floating(out.dtype)) return refuse("where_backward: floating dtypes only");
  BroadcastReader rc(cond, out), rg(g, out);
  BackwardResult res;
  for (int which = 0; which < 2; ++which) {
    if (!(which == 0 ? d.compute_grad_a : d.compute_grad_b)) continue;
    (which == 0 ? res.grad_a : res.grad_b) =
        sum_to_operand(out, which == 0 ? d.grad_a : d.grad_b, out.dtype, [&](std::int64_t i, auto) {
          return (rc.int_at(i) != 0) == (which == 0) ? rg(i) : 0.0;
        });
  }
  return res;
}

Expected<Result> affine(const AffineDescriptor& d, const HostTensor& x) {
  const DType t = d.y.dtype;
  BroadcastReader rx(x, d.y);
  if (!floating(t)) {
    if (!dtype_is_integer(t)) return refuse("affine: dtype not supported");
    const auto alpha = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.alpha));
    const auto beta = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.beta));
    return map_result(
        d.y,
        [&](std::int64_t i, auto) {
          return static_cast<double>(wrap_to(t, alpha * static_cast<std::uint64_t>(rx.int_at(i)) + beta));
        },
        kNoScale);
  }
  const bool f64 = t == DType::kF64;
  return map_result(
      d.y,
      [&](std::int64_t i, auto naive) -> double {
        const double xv = rx(i);
        if (!naive) return d.alpha * xv + d.beta;
        if (f64) return std::fma(d.alpha, xv, d.beta);
        return std::fma(static_cast<float>(d.alpha), static_cast<float>(xv), static_cast<float>(d.beta));
      },
      [&](std::int64_t i) {
        const double s = std::fabs(d.alpha * rx(i)) + std::fabs(d.beta);
        return std::isfinite(s) ? s : 0;
      });
}

Expected<Result> fill(const FillDescriptor& d) {
  const DType t = d.y.dtype;
  double v;
  if (t == DType::kBool) v = d.value != 0 ? 1 : 0;
  else if (dtype_is_integer(t) || t == DType::kF64) v = d.value;
  else v = round_to(t, static_cast<double>(static_cast<float>(d.value)));  // torch: through f32
  return map_result(d.y, [&](std::int64_t, auto) { return v; }, kNoScale);
}

}  // namespace baracuda::reference
