// CPU oracle for the elementwise family (see the header for exact vs naive).
#include "baracuda/reference/elementwise.hpp"

#include "baracuda/reference/cast.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace baracuda::reference {

// ------------------------------------------------------------------ scalar math
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
  std::int64_t int_at(std::int64_t i) const { return load_as_int64(view.dtype, t.data(), offset_of(view, i)); }
};

template <class Naive>
using NaiveType = std::conditional_t<Naive::value, float, double>;

}  // namespace

namespace {

// Refuses a kind on a dtype it does not accept (UnaryKindInfo), or a backward of a kind that
// is not differentiable.
Status check_unary(UnaryKind k, DType x, bool backward) {
  const UnaryKindInfo& info = unary_kind_info(k);
  const bool accepted = dtype_is_floating(x) ? info.floating
                        : x == DType::kBool  ? info.boolean
                                             : dtype_is_integer(x) && info.integer;
  if (!accepted || (backward && (!info.differentiable || !dtype_is_floating(x))))
    return Status(Code::kInvalidArgument, std::string("reference: unary kind ") + info.name + (backward ? " backward" : "") +
                                              " does not accept dtype " + std::string(dtype_name(x)));
  return Status::ok();
}

Expected<Result> unary_map(UnaryKind k, const UnaryParams& p, const TensorLayout& y, const HostTensor& x) {
  const DType xt = x.layout().dtype;
  BARACUDA_TRY(check_unary(k, xt, false));
  BroadcastReader rx(x, y);
  if (!dtype_is_floating(xt))  // integers and bool: exact, in integers
    return map_result(
        y, [&](std::int64_t i, auto) { return static_cast<double>(unary_int_value(k, rx.int_at(i), xt)); },
        [](std::int64_t) { return 0.0; });
  const bool f64 = xt == DType::kF64;
  return map_result(
      y,
      [&](std::int64_t i, auto naive) -> double {
        if (naive && !f64) return unary_value<float>(k, static_cast<float>(rx(i)), p);
        return unary_value<double>(k, rx(i), p);
      },
      [&](std::int64_t i) { return unary_scale(k, rx(i), p); });
}

Expected<Result> unary_grad_map(UnaryKind k, const UnaryParams& p, const TensorLayout& grad_in, const HostTensor& g,
                                const HostTensor& x) {
  BARACUDA_TRY(check_unary(k, x.layout().dtype, true));
  const bool f64 = grad_in.dtype == DType::kF64;
  return map_result(
      grad_in,
      [&](std::int64_t i, auto naive) -> double {
        const double gv = g.get(i), xv = x.get(i);
        if (naive && !f64) return unary_grad<float>(k, static_cast<float>(gv), static_cast<float>(xv), p);
        return unary_grad<double>(k, gv, xv, p);
      },
      [&](std::int64_t i) { return unary_grad_scale(k, g.get(i), x.get(i), p); });
}

}  // namespace

Expected<Result> unary(const UnaryDescriptor& d, const HostTensor& x) {
  return unary_map(d.kind, default_unary_params(d.kind, d.x.dtype), d.y, x);
}

Expected<Result> unary(const UnaryParamDescriptor& d, const HostTensor& x) {
  return unary_map(d.kind, d.params, d.y, x);
}

Expected<Result> unary_backward(const UnaryBackwardDescriptor& d, const HostTensor& g, const HostTensor& x) {
  return unary_grad_map(d.kind, default_unary_params(d.kind, d.x.dtype), d.grad_in, g, x);
}

Expected<Result> unary_backward(const UnaryParamBackwardDescriptor& d, const HostTensor& g, const HostTensor& x) {
  return unary_grad_map(d.kind, d.params, d.grad_in, g, x);
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
  auto y = cast_exact(d, x);
  if (!y) return y.error();
  Result r;
  r.exact = y->logical();
  r.naive = r.exact;
  return r;
}

}  // namespace baracuda::reference
