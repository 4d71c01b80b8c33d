// CPU oracle for the elementwise family (see the header for exact vs naive).
#include "baracuda/reference/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace baracuda::reference {

// ------------------------------------------------------------------ scalar math
template <class C>
C unary_value(UnaryKind k, C x) {
  switch (k) {
    case UnaryKind::kRelu: return std::isnan(x) ? x : (x > C(0) ? x : C(0));
    case UnaryKind::kGeluErf: return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
    case UnaryKind::kGeluTanh:
      return C(0.5) * x * (C(1) + std::tanh(C(0.79788456080286535588) * (x + C(0.044715) * x * x * x)));
    case UnaryKind::kSilu: return x / (C(1) + std::exp(-x));
    case UnaryKind::kExp: return std::exp(x);
  }
  return std::nan("");
}

template <class C>
C unary_derivative(UnaryKind k, C x) {
  switch (k) {
    case UnaryKind::kRelu: return x <= C(0) ? C(0) : C(1);
    case UnaryKind::kGeluErf: {
      C cdf = C(0.5) * (C(1) + std::erf(x * C(0.70710678118654752440)));
      C pdf = std::exp(C(-0.5) * x * x) * C(0.39894228040143267794);
      return cdf + x * pdf;
    }
    case UnaryKind::kGeluTanh: {
      const C kBeta = C(0.79788456080286535588), kKappa = C(0.044715);
      C x2 = x * x;
      C t = std::tanh(kBeta * (x + kKappa * x2 * x));
      return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * kBeta * (C(1) + C(3) * kKappa * x2);
    }
    case UnaryKind::kSilu: {
      C s = C(1) / (C(1) + std::exp(-x));
      return s * (C(1) + x * (C(1) - s));
    }
    case UnaryKind::kExp: return std::exp(x);
  }
  return std::nan("");
}

template <class C>
C binary_value(BinaryKind k, C a, C b) {
  switch (k) {
    case BinaryKind::kAdd: return a + b;
    case BinaryKind::kSub: return a - b;
    case BinaryKind::kMul: return a * b;
    case BinaryKind::kDiv: return a / b;
  }
  return std::nan("");
}

template <class C>
std::pair<C, C> binary_partials(BinaryKind k, C a, C b) {
  switch (k) {
    case BinaryKind::kAdd: return {C(1), C(1)};
    case BinaryKind::kSub: return {C(1), C(-1)};
    case BinaryKind::kMul: return {b, a};
    case BinaryKind::kDiv: return {C(1) / b, -a / (b * b)};
  }
  return {std::nan(""), std::nan("")};
}

template <class C>
C binary_grad_a(BinaryKind k, C g, C a, C b) {
  switch (k) {
    case BinaryKind::kAdd:
    case BinaryKind::kSub: return g;
    case BinaryKind::kMul: return g * b;
    case BinaryKind::kDiv: return g / b;
  }
  return std::nan("");
}

template <class C>
C binary_grad_b(BinaryKind k, C g, C a, C b) {
  switch (k) {
    case BinaryKind::kAdd: return g;
    case BinaryKind::kSub: return -g;
    case BinaryKind::kMul: return g * a;
    case BinaryKind::kDiv: return -g * a / (b * b);
  }
  return std::nan("");
}

#define BARACUDA_REF_INSTANTIATE(C)                                   \
  template C unary_value<C>(UnaryKind, C);                            \
  template C unary_derivative<C>(UnaryKind, C);                       \
  template C binary_value<C>(BinaryKind, C, C);                       \
  template std::pair<C, C> binary_partials<C>(BinaryKind, C, C);      \
  template C binary_grad_a<C>(BinaryKind, C, C, C);                   \
  template C binary_grad_b<C>(BinaryKind, C, C, C);
BARACUDA_REF_INSTANTIATE(float)
BARACUDA_REF_INSTANTIATE(double)
#undef BARACUDA_REF_INSTANTIATE

// ------------------------------------------------------------------ tensor ops
double round_to(DType t, double v, Fp8Overflow mode) {
  alignas(8) unsigned char buf[16] = {};
  store_from_double(t, buf, 0, v, mode);
  return load_as_double(t, buf, 0);
}

// Error scales of the maps: the magnitude of the terms a result is computed from, so the
// tolerance covers the rounding of each term where the formula cancels (e.g. silu's
// backward 1 + x (1 - s) near x = -1.28, or gelu's 1 + erf for negative x).
double unary_scale(UnaryKind k, double x) {
  const double ax = std::fabs(x);
  switch (k) {
    case UnaryKind::kRelu:
    case UnaryKind::kGeluErf:
    case UnaryKind::kSilu: return ax;
    case UnaryKind::kGeluTanh: {
      const double inner = 0.79788456080286535588 * (x + 0.044715 * x * x * x), t = std::tanh(inner);
      return ax * (1 + std::fabs(inner) * (1 - t * t) * (1 + 3 * 0.044715 * x * x));
    }
    case UnaryKind::kExp: return std::exp(x) * (1 + ax);
  }
  return 0;
}

double unary_grad_scale(UnaryKind k, double g, double x) {
  const double ag = std::fabs(g), ax = std::fabs(x);
  switch (k) {
    case UnaryKind::kRelu: return ag;
    case UnaryKind::kGeluErf: {
      // cdf = 0.5 (1 + erf) sums terms of size 0.5 (1 + |erf|): for negative x it cancels
      const double erf_v = std::erf(x * 0.70710678118654752440);
      const double pdf = std::exp(-0.5 * x * x) * 0.39894228040143267794;
      return ag * (0.5 * (1 + std::fabs(erf_v)) + ax * pdf * (1 + x * x));
    }
    case UnaryKind::kGeluTanh: {
      const double kBeta = 0.79788456080286535588, kKappa = 0.044715;
      const double inner = kBeta * (x + kKappa * x * x * x), t = std::tanh(inner);
      return ag * (0.5 * (1 + std::fabs(t)) + 0.5 * ax * (1 + t * t) * kBeta * (1 + 3 * kKappa * x * x) * (1 + std::fabs(inner)));
    }
    case UnaryKind::kSilu: {
      const double sg = 1 / (1 + std::exp(-x));
      return ag * sg * (1 + ax * (1 - sg) * (1 + ax));
    }
    case UnaryKind::kExp: return ag * std::exp(x) * (1 + ax);
  }
  return 0;
}

double binary_scale(BinaryKind k, double a, double b) {
  if (k == BinaryKind::kAdd || k == BinaryKind::kSub) return std::fabs(a) + std::fabs(b);
  return std::fabs(binary_value<double>(k, a, b));
}

namespace {

// Evaluates f(element index, is_naive) -> value over an output of `out` layout shape, and
// scale(i) -> the error scale of element i.
// Elements are independent, so large outputs are split over a few threads (the GPU tests'
// oracle time dominates their run on the device machine).
template <class F, class S>
Result map_result(const TensorLayout& out, F&& f, S&& scale) {
  Result r;
  const auto n = static_cast<std::size_t>(out.numel());
  r.exact.resize(n);
  r.naive.resize(n);
  r.scale.resize(n);
  auto range = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      r.exact[i] = f(static_cast<std::int64_t>(i), std::false_type{});
      r.naive[i] = round_to(out.dtype, f(static_cast<std::int64_t>(i), std::true_type{}));
      r.scale[i] = scale(static_cast<std::int64_t>(i));
    }
  };
  const std::size_t threads = n < (std::size_t{1} << 20) ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency() / 4, 1, 4);
  if (threads == 1) {
    range(0, n);
    return r;
  }
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(range, t * chunk, std::min(n, (t + 1) * chunk));
  for (auto& th : pool) th.join();
  return r;
}

// Value of `t` (viewed broadcast into `out`'s shape) at out's logical index i.
struct BroadcastReader {
  const HostTensor& t;
  TensorLayout view;
  BroadcastReader(const HostTensor& tensor, const TensorLayout& out)
      : t(tensor), view(broadcast_to(tensor.layout(), out.rank, out.shape, "operand").value()) {}
  double operator()(std::int64_t i) const { return load_as_double(view.dtype, t.data(), offset_of(view, i)); }
};

template <class Naive>
using NaiveType = std::conditional_t<Naive::value, float, double>;

}  // namespace

Expected<Result> unary(const UnaryDescriptor& d, const HostTensor& x) {
  BroadcastReader rx(x, d.y);
  const bool f64 = d.y.dtype == DType::kF64;
  return map_result(
      d.y,
      [&](std::int64_t i, auto naive) -> double {
        if (naive && !f64) return unary_value<float>(d.kind, static_cast<float>(rx(i)));
        return unary_value<double>(d.kind, rx(i));
      },
      [&](std::int64_t i) { return unary_scale(d.kind, rx(i)); });
}

Expected<Result> unary_backward(const UnaryBackwardDescriptor& d, const HostTensor& g, const HostTensor& x) {
  const bool f64 = d.grad_in.dtype == DType::kF64;
  return map_result(d.grad_in, [&](std::int64_t i, auto naive) -> double {
    double gv = g.get(i), xv = x.get(i);
    if (naive && !f64) {
      float gf = static_cast<float>(gv), xf = static_cast<float>(xv);
      if (d.kind == UnaryKind::kRelu) return xf <= 0.f ? 0.f : gf;
      return gf * unary_derivative<float>(d.kind, xf);
    }
    if (d.kind == UnaryKind::kRelu) return xv <= 0.0 ? 0.0 : gv;  // NaN x passes grad (torch)
    return gv * unary_derivative<double>(d.kind, xv);
  }, [&](std::int64_t i) { return unary_grad_scale(d.kind, g.get(i), x.get(i)); });
}

Expected<Result> binary(const BinaryDescriptor& d, const HostTensor& a, const HostTensor& b) {
  BroadcastReader ra(a, d.out), rb(b, d.out);
  const bool f64 = d.out.dtype == DType::kF64;
  return map_result(
      d.out,
      [&](std::int64_t i, auto naive) -> double {
        if (naive && !f64) return binary_value<float>(d.kind, static_cast<float>(ra(i)), static_cast<float>(rb(i)));
        return binary_value<double>(d.kind, ra(i), rb(i));
      },
      [&](std::int64_t i) { return binary_scale(d.kind, ra(i), rb(i)); });
}

Expected<BackwardResult> binary_backward(const BinaryBackwardDescriptor& d, const HostTensor& g,
                                         const HostTensor& a, const HostTensor& b) {
  const TensorLayout& out = d.grad_out;
  const bool f64 = out.dtype == DType::kF64;
  BroadcastReader ra(a, out), rb(b, out);
  BackwardResult res;
  for (int which = 0; which < 2; ++which) {
    bool active = which == 0 ? d.compute_grad_a : d.compute_grad_b;
    if (!active) continue;
    const TensorLayout& x = which == 0 ? d.a : d.b;
    const TensorLayout& gx = which == 0 ? d.grad_a : d.grad_b;
    // Map each output element to the element of x it came from (x's logical index).
    TensorLayout xview = broadcast_to(TensorLayout::contiguous(x.dtype, x.shape_span()), out.rank, out.shape, "x").value();
    const auto nx = static_cast<std::size_t>(x.numel());
    std::vector<double> exact(nx, 0.0), scale(nx, 0.0);
    std::vector<float> naive_f(nx, 0.f);
    std::vector<double> naive_d(nx, 0.0);
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      auto xi = static_cast<std::size_t>(offset_of(xview, i));
      double gv = g.get(i), av = ra(i), bv = rb(i);
      double term = which == 0 ? binary_grad_a<double>(d.kind, gv, av, bv) : binary_grad_b<double>(d.kind, gv, av, bv);
      exact[xi] += term;
      scale[xi] += std::fabs(term);
      if (f64) {
        naive_d[xi] += term;
      } else {
        float gf = static_cast<float>(gv), af = static_cast<float>(av), bf = static_cast<float>(bv);
        naive_f[xi] += which == 0 ? binary_grad_a<float>(d.kind, gf, af, bf) : binary_grad_b<float>(d.kind, gf, af, bf);
      }
    }
    Result r;
    r.exact = std::move(exact);
    r.scale = std::move(scale);
    r.naive.resize(nx);
    for (std::size_t i = 0; i < nx; ++i) r.naive[i] = round_to(gx.dtype, f64 ? naive_d[i] : naive_f[i]);
    (which == 0 ? res.grad_a : res.grad_b) = std::move(r);
  }
  return res;
}

Expected<Result> cast(const CastDescriptor& d, const HostTensor& x) {
  BroadcastReader rx(x, d.y);
  Result r;
  const auto n = static_cast<std::size_t>(d.y.numel());
  r.exact.resize(n);
  for (std::size_t i = 0; i < n; ++i) r.exact[i] = round_to(d.y.dtype, rx(static_cast<std::int64_t>(i)), d.fp8_overflow);
  r.naive = r.exact;
  return r;
}

}  // namespace baracuda::reference
