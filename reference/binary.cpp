// CPU oracle, binary plans: the scalar math of every BinaryKind (floating and integer), the
// comparisons and lerp / alpha, their backward formulas and error scales, and the tensor
// functions. docs/semantics.md ("Binary kinds") is the spec of each case; the floating
// formulas are written in the same order as the device's (binary_math.cuh) so that the
// naive float evaluation reproduces the kernel's roundings.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "baracuda/reference/binary.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "map_eval.hpp"

namespace baracuda::reference {

namespace {

constexpr double kLn2 = 0.69314718055994530942;

template <class C>
C nan_value() {
  return std::numeric_limits<C>::quiet_NaN();
}

// torch's floor division of floating values (see binary_math.cuh).
template <class C>
C div_floor_value(C a, C b) {
  if (b == C(0)) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return std::copysign(C(0), a / b);
  C floordiv = std::floor(div);
  if (div - floordiv > C(0.5)) floordiv += C(1);
  return floordiv;
}

template <class C>
C remainder_value(C a, C b) {
  C mod = std::fmod(a, b);
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) mod += b;
  return mod;
}

// IEEE max / min with the device's signed zeros: max(-0, +0) = +0, min(-0, +0) = -0.
template <class C>
C max_value(C a, C b) {
  if (a == b) return std::signbit(a) ? b : a;
  return std::fmax(a, b);
}
template <class C>
C min_value(C a, C b) {
  if (a == b) return std::signbit(a) ? a : b;
  return std::fmin(a, b);
}

bool is_logical(BinaryKind k) {
  return k == BinaryKind::kLogicalAnd || k == BinaryKind::kLogicalOr || k == BinaryKind::kLogicalXor;
}

template <class C>
C logical_value(BinaryKind k, C a, C b) {
  const bool x = a != C(0), y = b != C(0);  // NaN is true
  if (k == BinaryKind::kLogicalAnd) return C(x && y);
  if (k == BinaryKind::kLogicalOr) return C(x || y);
  return C(x != y);
}

}  // namespace

// ------------------------------------------------------------------ floating kinds
template <class C>
C binary_value(BinaryKind k, C a, C b) {
  using K = BinaryKind;
  switch (k) {
    case K::kAdd: return a + b;
    case K::kSub: return a - b;
    case K::kMul: return a * b;
    case K::kDiv: return a / b;
    case K::kDivFloor: return div_floor_value(a, b);
    case K::kDivTrunc: return std::trunc(a / b);
    case K::kPow: return std::pow(a, b);
    case K::kAtan2: return std::atan2(a, b);
    case K::kHypot: return std::hypot(a, b);
    case K::kCopysign: return std::copysign(a, b);
    case K::kNextafter: return std::nextafter(a, b);
    case K::kFmin: return std::isnan(a) ? b : (std::isnan(b) ? a : min_value(a, b));
    case K::kFmax: return std::isnan(a) ? b : (std::isnan(b) ? a : max_value(a, b));
    case K::kMaximum: return std::isnan(a) ? a : (std::isnan(b) ? b : max_value(a, b));
    case K::kMinimum: return std::isnan(a) ? a : (std::isnan(b) ? b : min_value(a, b));
    case K::kFmod: return std::fmod(a, b);
    case K::kRemainder: return remainder_value(a, b);
    case K::kLdexp: return a * std::exp2(b);
    case K::kXlogy: return std::isnan(b) ? b : (a == C(0) ? C(0) : a * std::log(b));
    case K::kLogicalAnd:
    case K::kLogicalOr:
    case K::kLogicalXor: return logical_value(k, a, b);
    default: return nan_value<C>();  // bitwise kinds and shifts have no floating form
  }
}

template <class C>
C binary_grad_a(BinaryKind k, C g, C a, C b) {
  using K = BinaryKind;
  switch (k) {
    case K::kAdd:
    case K::kSub: return g;
    case K::kMul: return g * b;
    case K::kDiv: return g / b;
    case K::kDivFloor:
    case K::kDivTrunc: return C(0);
    case K::kPow: return b == C(0) ? C(0) : g * (b * std::pow(a, b - C(1)));
    case K::kAtan2: return g * b * (C(1) / (a * a + b * b));
    case K::kHypot: return g * a / std::hypot(a, b);
    case K::kCopysign: return a == C(0) ? C(0) : g * (std::copysign(a, b) / a);
    case K::kFmax: return (a >= b || std::isnan(b)) ? g : C(0);
    case K::kFmin: return (a <= b || std::isnan(b)) ? g : C(0);
    case K::kMaximum: return a < b ? C(0) : (a == b ? g / C(2) : g);
    case K::kMinimum: return a > b ? C(0) : (a == b ? g / C(2) : g);
    case K::kFmod:
    case K::kRemainder: return g;
    case K::kLdexp: return g * std::exp2(b);
    case K::kXlogy:
      if (a == C(0) && b <= C(0)) return C(0);
      return std::isnan(b) ? b : (g == C(0) ? C(0) : g * std::log(b));
    default: return nan_value<C>();
  }
}

template <class C>
C binary_grad_b(BinaryKind k, C g, C a, C b) {
  using K = BinaryKind;
  switch (k) {
    case K::kAdd: return g;
    case K::kSub: return -g;
    case K::kMul: return g * a;
    case K::kDiv: return -g * ((a / b) / b);
    case K::kDivFloor:
    case K::kDivTrunc: return C(0);
    case K::kPow: return (a == C(0) && b >= C(0)) ? C(0) : g * (std::pow(a, b) * std::log(a));
    case K::kAtan2: return g * -a * (C(1) / (a * a + b * b));
    case K::kHypot: return g * b / std::hypot(a, b);
    case K::kCopysign: return C(0);
    case K::kFmax: return (a >= b || std::isnan(b)) ? C(0) : g;
    case K::kFmin: return (a <= b || std::isnan(b)) ? C(0) : g;
    case K::kMaximum: return a > b ? C(0) : (a == b ? g / C(2) : g);
    case K::kMinimum: return a < b ? C(0) : (a == b ? g / C(2) : g);
    case K::kFmod: return -g * std::trunc(a / b);
    case K::kRemainder: return -g * div_floor_value(a, b);
    case K::kLdexp: return g * a * (std::exp2(b) * C(kLn2));
    case K::kXlogy: return g * a / b;
    default: return nan_value<C>();
  }
}

template <class C>
std::pair<C, C> binary_partials(BinaryKind k, C a, C b) {
  return {binary_grad_a<C>(k, C(1), a, b), binary_grad_b<C>(k, C(1), a, b)};
}

#define BARACUDA_REF_INSTANTIATE(C)                              \
  template C binary_value<C>(BinaryKind, C, C);                  \
  template std::pair<C, C> binary_partials<C>(BinaryKind, C, C); \
  template C binary_grad_a<C>(BinaryKind, C, C, C);              \
  template C binary_grad_b<C>(BinaryKind, C, C, C);
BARACUDA_REF_INSTANTIATE(float)
BARACUDA_REF_INSTANTIATE(double)
#undef BARACUDA_REF_INSTANTIATE

double binary_scale(BinaryKind k, double a, double b) {
  double s = 0;
  switch (k) {
    case BinaryKind::kAdd:
    case BinaryKind::kSub: s = std::fabs(a) + std::fabs(b); break;
    case BinaryKind::kRemainder: s = std::fabs(binary_value<double>(k, a, b)) + std::fabs(b); break;
    default:
      if (!binary_kind_info(k).floating || binary_kind_info(k).to_bool || k == BinaryKind::kNextafter) return 0;
      s = std::fabs(binary_value<double>(k, a, b));
  }
  return std::isfinite(s) ? s : 0;
}

double binary_grad_scale(BinaryKind k, int which, double g, double a, double b) {
  const double t = std::fabs(which == 0 ? binary_grad_a<double>(k, g, a, b) : binary_grad_b<double>(k, g, a, b));
  return std::isfinite(t) ? t : 0;
}

BinaryRanges binary_input_ranges(BinaryKind k, bool backward) {
  using K = BinaryKind;
  if (!backward) {
    switch (k) {
      case K::kPow: return {0, 4, -4, 4};
      case K::kLdexp: return {-4, 4, -10, 10};
      case K::kXlogy: return {-4, 4, 0, 4};
      default: return {-4, 4, -4, 4};
    }
  }
  switch (k) {
    case K::kDiv: case K::kFmod: case K::kRemainder: case K::kDivFloor: case K::kDivTrunc: return {-4, 4, 0.5, 4};
    case K::kPow: return {0.5, 3, -2, 2};
    case K::kXlogy: return {-4, 4, 0.5, 4};
    default: return {-4, 4, -4, 4};
  }
}

// ------------------------------------------------------------------ integer kinds
std::int64_t binary_int_value(BinaryKind k, std::int64_t a, std::int64_t b, DType t) {
  using K = BinaryKind;
  if (is_logical(k)) return logical_value<std::int64_t>(k, a, b);
  if (t == DType::kBool) {
    const bool x = a != 0, y = b != 0;
    if (k == K::kBitwiseAnd) return x && y;
    if (k == K::kBitwiseOr) return x || y;
    if (k == K::kBitwiseXor) return x != y;
    return 0;
  }
  a = wrap_to(t, static_cast<std::uint64_t>(a));
  b = wrap_to(t, static_cast<std::uint64_t>(b));
  const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  const int bits = dtype_bits(t);
  const bool is_signed = dtype_info(t).is_signed;
  switch (k) {
    case K::kAdd: return wrap_to(t, ua + ub);
    case K::kSub: return wrap_to(t, ua - ub);
    case K::kMul: return wrap_to(t, ua * ub);
    case K::kMaximum: return a > b ? a : b;
    case K::kMinimum: return a < b ? a : b;
    case K::kBitwiseAnd: return wrap_to(t, ua & ub);
    case K::kBitwiseOr: return wrap_to(t, ua | ub);
    case K::kBitwiseXor: return wrap_to(t, ua ^ ub);
    case K::kShiftLeft:
    case K::kShiftRight: {
      // the count as torch reads it: b in t's signed type (u8 128..255 count as negative)
      const std::int64_t count = is_signed ? b : wrap_to(DType::kI8, ub);
      if (k == K::kShiftLeft) return (count < 0 || count >= bits) ? 0 : wrap_to(t, ua << count);
      const int max_shift = bits - (is_signed ? 1 : 0);
      if (count < 0 || count >= max_shift) return max_shift >= 64 ? (a < 0 ? -1 : 0) : a >> max_shift;
      return a >> count;
    }
    case K::kDivFloor:
    case K::kDivTrunc:
    case K::kFmod:
    case K::kRemainder: {
      if (b == 0) return 0;
      if (is_signed && b == -1) return (k == K::kFmod || k == K::kRemainder) ? 0 : wrap_to(t, std::uint64_t{0} - ua);
      const std::int64_t q = a / b, r = a % b;
      const bool opposite = r != 0 && ((r < 0) != (b < 0));
      if (k == K::kDivTrunc) return q;
      if (k == K::kDivFloor) return opposite ? q - 1 : q;
      if (k == K::kFmod) return r;
      return opposite ? r + b : r;
    }
    default: return 0;
  }
}

double nextafter_in(DType t, double a, double b) {
  if (t == DType::kF64) return std::nextafter(a, b);
  if (t == DType::kF32) return std::nextafter(static_cast<float>(a), static_cast<float>(b));
  // f16 / bf16: step the 16-bit pattern
  if (std::isnan(a) || std::isnan(b)) return a + b;
  if (a == b) return b;
  const bool half = t == DType::kF16;
  auto to_bits = [&](double v) {
    return half ? f32_to_f16_bits(static_cast<float>(v)) : f32_to_bf16_bits(static_cast<float>(v));
  };
  auto from_bits = [&](std::uint16_t bits) -> double { return half ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits); };
  if (a == 0) return b > 0 ? from_bits(1) : -from_bits(1);
  std::uint16_t bits = to_bits(a);
  if ((a < b) == (a > 0)) ++bits;
  else --bits;
  return from_bits(bits);
}

// ------------------------------------------------------------------ comparisons and lerp
template <class C>
bool binary_cmp_value(BinaryCmpKind k, C a, C b, double rtol, double atol, bool equal_nan) {
  switch (k) {
    case BinaryCmpKind::kEq: return a == b;
    case BinaryCmpKind::kNe: return a != b;
    case BinaryCmpKind::kLt: return a < b;
    case BinaryCmpKind::kLe: return a <= b;
    case BinaryCmpKind::kGt: return a > b;
    case BinaryCmpKind::kGe: return a >= b;
    case BinaryCmpKind::kIsclose: {
      if (a == b) return true;
      if (equal_nan && std::isnan(a) && std::isnan(b)) return true;
      if (rtol == 0 && atol == 0) return false;
      const C diff = a > b ? a - b : b - a;
      const C allowed = std::fma(C(rtol), std::fabs(b), C(atol));
      return diff < std::numeric_limits<C>::infinity() && diff <= allowed;
    }
  }
  return false;
}
template bool binary_cmp_value<float>(BinaryCmpKind, float, float, double, double, bool);
template bool binary_cmp_value<double>(BinaryCmpKind, double, double, double, double, bool);

template <class C>
C lerp_value(C a, C b, C w) {
  return std::fabs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
}
template float lerp_value<float>(float, float, float);
template double lerp_value<double>(double, double, double);

// ------------------------------------------------------------------ tensors
namespace {

Status refuse(const std::string& what, DType t) {
  return Status(Code::kInvalidArgument, "reference: " + what + " does not accept dtype " + std::string(dtype_name(t)));
}

bool accepts(const BinaryKindInfo& info, DType t) {
  return dtype_is_floating(t) ? info.floating : (t == DType::kBool ? info.boolean : dtype_is_integer(t) && info.integer);
}

}  // namespace

Expected<Result> binary(const BinaryDescriptor& d, const HostTensor& a, const HostTensor& b) {
  const BinaryKindInfo& info = binary_kind_info(d.kind);
  const DType t = a.layout().dtype;
  if (!accepts(info, t) || b.layout().dtype != t) return refuse(std::string("binary kind ") + info.name, t);
  BroadcastReader ra(a, d.out), rb(b, d.out);
  if (!dtype_is_floating(t))  // integers and bool: exact, in integers
    return map_result(
        d.out,
        [&](std::int64_t i, auto) { return static_cast<double>(binary_int_value(d.kind, ra.int_at(i), rb.int_at(i), t)); },
        [](std::int64_t) { return 0.0; });
  const bool f64 = t == DType::kF64;
  if (d.kind == BinaryKind::kNextafter)
    return map_result(
        d.out, [&](std::int64_t i, auto) { return nextafter_in(t, ra(i), rb(i)); }, [](std::int64_t) { return 0.0; });
  return map_result(
      d.out,
      [&](std::int64_t i, auto naive) -> double {
        if (naive && !f64) return binary_value<float>(d.kind, static_cast<float>(ra(i)), static_cast<float>(rb(i)));
        return binary_value<double>(d.kind, ra(i), rb(i));
      },
      [&](std::int64_t i) { return binary_scale(d.kind, ra(i), rb(i)); });
}

Expected<BackwardResult> binary_backward(const BinaryBackwardDescriptor& d, const HostTensor& g, const HostTensor& a,
                                         const HostTensor& b) {
  const BinaryKindInfo& info = binary_kind_info(d.kind);
  const TensorLayout& out = d.grad_out;
  if (!info.differentiable || !dtype_is_floating(out.dtype))
    return refuse(std::string("binary kind ") + info.name + " backward", out.dtype);
  BroadcastReader ra(a, out), rb(b, out);
  BackwardResult res;
  for (int which = 0; which < 2; ++which) {
    bool active = which == 0 ? d.compute_grad_a : d.compute_grad_b;
    if (!active) continue;
    const DType gx = (which == 0 ? d.grad_a : d.grad_b).dtype;
    Result r = sum_to_operand(out, which == 0 ? d.a : d.b, gx, [&](std::int64_t i, auto naive) -> double {
      using C = NaiveType<decltype(naive)>;
      const C gv = static_cast<C>(g.get(i)), av = static_cast<C>(ra(i)), bv = static_cast<C>(rb(i));
      return which == 0 ? binary_grad_a<C>(d.kind, gv, av, bv) : binary_grad_b<C>(d.kind, gv, av, bv);
    });
    (which == 0 ? res.grad_a : res.grad_b) = std::move(r);
  }
  return res;
}

Expected<Result> binary_cmp(const BinaryCmpDescriptor& d, const HostTensor& a, const HostTensor& b) {
  const DType t = a.layout().dtype;
  if (b.layout().dtype != t || dtype_is_packed(t) || t == DType::kE4M3 || t == DType::kE5M2)
    return refuse(std::string("binary_cmp ") + binary_cmp_kind_name(d.kind), t);
  BroadcastReader ra(a, d.out), rb(b, d.out);
  // float compute for f32 / f16 / bf16; double for f64 and (exactly, below 2^53) the integers
  const bool in_float = t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
  const bool integral = !dtype_is_floating(t);
  return map_result(
      d.out,
      [&](std::int64_t i, auto) -> double {
        if (in_float)
          return binary_cmp_value<float>(d.kind, static_cast<float>(ra(i)), static_cast<float>(rb(i)), d.rtol, d.atol,
                                         d.equal_nan);
        if (integral && d.kind != BinaryCmpKind::kIsclose) {  // exact for every i64
          const std::int64_t x = ra.int_at(i), y = rb.int_at(i);
          return d.kind == BinaryCmpKind::kEq   ? x == y
                 : d.kind == BinaryCmpKind::kNe ? x != y
                 : d.kind == BinaryCmpKind::kLt ? x < y
                 : d.kind == BinaryCmpKind::kLe ? x <= y
                 : d.kind == BinaryCmpKind::kGt ? x > y
                                                : x >= y;
        }
        const double x = integral ? static_cast<double>(ra.int_at(i)) : ra(i);
        const double y = integral ? static_cast<double>(rb.int_at(i)) : rb(i);
        return binary_cmp_value<double>(d.kind, x, y, d.rtol, d.atol, d.equal_nan);
      },
      [](std::int64_t) { return 0.0; });
}

namespace {
bool lerp_kind(BinaryParamKind k) { return k == BinaryParamKind::kLerp || k == BinaryParamKind::kLerpTensor; }
}  // namespace

Expected<Result> binary_param(const BinaryParamDescriptor& d, const HostTensor& a, const HostTensor& b,
                              const HostTensor& weight) {
  const DType t = a.layout().dtype;
  if (!dtype_is_floating(t)) return refuse(std::string("binary_param ") + binary_param_kind_name(d.kind), t);
  const bool f64 = t == DType::kF64, tensor_w = d.kind == BinaryParamKind::kLerpTensor;
  BroadcastReader ra(a, d.out), rb(b, d.out);
  const HostTensor& wt = tensor_w ? weight : a;  // a stands in when the weight is a scalar
  BroadcastReader rw(wt, d.out);
  const double alpha = d.kind == BinaryParamKind::kSubAlpha ? -d.scalar : d.scalar;
  auto w_at = [&](std::int64_t i) { return tensor_w ? rw(i) : d.scalar; };
  return map_result(
      d.out,
      [&](std::int64_t i, auto naive) -> double {
        const bool as_float = naive && !f64;
        auto eval = [&](auto c) -> double {
          using T = decltype(c);
          const T x = static_cast<T>(ra(i)), y = static_cast<T>(rb(i));
          if (lerp_kind(d.kind)) return lerp_value<T>(x, y, static_cast<T>(w_at(i)));
          return x + static_cast<T>(alpha) * y;
        };
        return as_float ? eval(0.0f) : eval(0.0);
      },
      [&](std::int64_t i) {
        const double x = std::fabs(ra(i)), y = std::fabs(rb(i));
        const double s = lerp_kind(d.kind) ? x + y + std::fabs(w_at(i)) * (x + y) : x + std::fabs(alpha) * y;
        return std::isfinite(s) ? s : 0.0;
      });
}

Expected<ParamBackwardResult> binary_param_backward(const BinaryParamBackwardDescriptor& d, const HostTensor& g,
                                                    const HostTensor& a, const HostTensor& b, const HostTensor& weight) {
  const DType t = g.layout().dtype;
  if (!dtype_is_floating(t)) return refuse(std::string("binary_param ") + binary_param_kind_name(d.kind) + " backward", t);
  const TensorLayout& out = d.grad_out;
  const bool f64 = t == DType::kF64, tensor_w = d.kind == BinaryParamKind::kLerpTensor;
  BroadcastReader ra(a, out), rb(b, out), rw(tensor_w ? weight : g, out);
  // torch: lerp (1 - w, w) with the scalar's factor formed in double; alpha (1, +-alpha)
  double ca = 1, cb = d.scalar;
  if (d.kind == BinaryParamKind::kLerp) ca = 1 - d.scalar;
  if (d.kind == BinaryParamKind::kSubAlpha) cb = -d.scalar;
  // which: 0 grad_a, 1 grad_b, 2 grad_weight
  auto term = [&](int which, std::int64_t i, bool as_float) -> double {
    auto eval = [&](auto c) -> double {
      using T = decltype(c);
      const T gv = static_cast<T>(g.get(i));
      if (which == 2) return gv * (static_cast<T>(rb(i)) - static_cast<T>(ra(i)));
      if (tensor_w) {
        const T w = static_cast<T>(rw(i));
        return which == 0 ? gv * (T(1) - w) : gv * w;
      }
      return gv * static_cast<T>(which == 0 ? ca : cb);
    };
    return as_float ? eval(0.0f) : eval(0.0);
  };
  auto grad = [&](int which) {
    return map_result(
        out, [&](std::int64_t i, auto naive) { return term(which, i, naive && !f64); },
        [&](std::int64_t i) {
          double s = std::fabs(term(which, i, false));
          if (which == 2) s = std::fabs(g.get(i)) * (std::fabs(ra(i)) + std::fabs(rb(i)));
          if (which < 2 && tensor_w) s = std::fabs(g.get(i)) * (1 + std::fabs(rw(i)));
          return std::isfinite(s) ? s : 0.0;
        });
  };
  ParamBackwardResult r;
  if (d.compute_grad_a) r.grad_a = grad(0);
  if (d.compute_grad_b) r.grad_b = grad(1);
  if (tensor_w && d.compute_grad_weight) r.grad_weight = grad(2);
  return r;
}

}  // namespace baracuda::reference
