// CPU oracle for the elementwise family (see the header for exact vs naive).
#include "baracuda/reference/elementwise.hpp"
#include "map_eval.hpp"

#include "baracuda/reference/cast.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace baracuda::reference {

// ------------------------------------------------------------------ tensor ops
double round_to(DType t, double v, Fp8Overflow mode) {
  alignas(8) unsigned char buf[16] = {};
  store_from_double(t, buf, 0, v, mode);
  return load_as_double(t, buf, 0);
}

Result zero_result(std::int64_t n) {
  Result r;
  r.exact.assign(static_cast<std::size_t>(n), 0.0);
  r.naive.assign(static_cast<std::size_t>(n), 0.0);
  r.scale.assign(static_cast<std::size_t>(n), 0.0);
  return r;
}

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

Expected<Result> cast(const CastDescriptor& d, const HostTensor& x) {
  auto y = cast_exact(d, x);
  if (!y) return y.error();
  Result r;
  r.exact = y->logical();
  r.naive = r.exact;
  return r;
}

}  // namespace baracuda::reference
