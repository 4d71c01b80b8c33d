// Binary math on the device: out = a (op) b and PyTorch's backward for every BinaryKind,
// in the compute type C (float for f32/f16/bf16, double for f64), the integer kinds in the
// integer type itself, plus the comparisons and lerp. docs/semantics.md is the
// specification (one row per kind); the formulas follow PyTorch's CUDA kernels (no fast
// math: the CUDA library functions, IEEE division).
//
//   binary_fwd<K, T>(a, b)        forward of floating kind K (T: the storage type, which
//                                 only nextafter needs: it steps in T's own format)
//   binary_grad<K, W>(g, a, b)    g * d(out)/d(a) (W = 0) or d(out)/d(b) (W = 1)
//   binary_int<K>(a, b)           integer kinds (wrapping; division by zero gives 0)
//   *_dyn                         the same with the kind chosen at run time (one switch),
//                                 for the row / strided kernels, built once per dtype
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/elementwise_binary.hpp"
#include "common/mufu.cuh"
#include "elementwise/kernels/unary_math.cuh"
#include "elementwise/launch_binary.hpp"

namespace baracuda::kernels {

// Floating kinds with per-kind contiguous kernels, the differentiable ones, and the integer ones.
#define BARACUDA_BINARY_FLOAT_KINDS(X)                                                                             \
  X(kAdd) X(kSub) X(kMul) X(kDiv) X(kDivFloor) X(kDivTrunc) X(kPow) X(kAtan2) X(kHypot) X(kCopysign) X(kNextafter) \
  X(kFmin) X(kFmax) X(kMaximum) X(kMinimum) X(kFmod) X(kRemainder) X(kLdexp) X(kXlogy)
#define BARACUDA_BINARY_GRAD_KINDS(X)                                                                                 \
  X(kAdd) X(kSub) X(kMul) X(kDiv) X(kDivFloor) X(kDivTrunc) X(kPow) X(kAtan2) X(kHypot) X(kCopysign) X(kFmin) X(kFmax) \
  X(kMaximum) X(kMinimum) X(kFmod) X(kRemainder) X(kLdexp) X(kXlogy)
#define BARACUDA_BINARY_INT_KINDS(X)                                                                          \
  X(kAdd) X(kSub) X(kMul) X(kDivFloor) X(kDivTrunc) X(kMaximum) X(kMinimum) X(kFmod) X(kRemainder) X(kBitwiseAnd) \
  X(kBitwiseOr) X(kBitwiseXor) X(kShiftLeft) X(kShiftRight)

namespace bm {  // float / double dispatch of the two-argument CUDA math functions
#define BARACUDA_BM2(name, f32, f64)                                   \
  template <class C>                                                   \
  __device__ __forceinline__ C name(C a, C b) {                        \
    if constexpr (std::is_same_v<C, float>) return f32(a, b);          \
    else return f64(a, b);                                             \
  }
BARACUDA_BM2(fmod_, fmodf, ::fmod) BARACUDA_BM2(atan2_, atan2f, ::atan2) BARACUDA_BM2(hypot_, hypotf, ::hypot)
BARACUDA_BM2(copysign_, copysignf, ::copysign) BARACUDA_BM2(nextafter_, nextafterf, ::nextafter)
BARACUDA_BM2(fmax_, fmaxf, ::fmax) BARACUDA_BM2(fmin_, fminf, ::fmin) BARACUDA_BM2(pow_, powf, ::pow)
#undef BARACUDA_BM2
template <class C>
__device__ __forceinline__ C fma_(C a, C b, C c) {
  if constexpr (std::is_same_v<C, float>) return fmaf(a, b, c);
  else return ::fma(a, b, c);
}
}  // namespace bm

// torch's floor division of floating values: the quotient of fmod's exact remainder,
// rounded to the nearest integer below; b == 0 gives the IEEE a / b.
template <class C>
__device__ __forceinline__ C div_floor_float(C a, C b) {
  if (b == C(0)) return a / b;
  const C mod = bm::fmod_(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return bm::copysign_(C(0), a / b);
  C floordiv = um::floor_(div);
  if (div - floordiv > C(0.5)) floordiv += C(1);
  return floordiv;
}

// Python's remainder: fmod moved into b's sign.
template <class C>
__device__ __forceinline__ C remainder_float(C a, C b) {
  C mod = bm::fmod_(a, b);
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) mod += b;
  return mod;
}

// nextafter in the storage format T: f32 / f64 by the library; f16 and bf16 (exact in the
// float a) step one unit of their own format.
template <class T, class C>
__device__ __forceinline__ C nextafter_in(C a, C b) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    if (a != a || b != b) return a + b;  // NaN
    if (a == b) return b;
    if (a == C(0)) {  // the smallest subnormal towards b
      const unsigned short tiny = 1;
      const float t = std::is_same_v<T, __half> ? __half2float(__ushort_as_half(tiny))
                                                : __bfloat162float(__ushort_as_bfloat16(tiny));
      return b > C(0) ? t : -t;
    }
    unsigned short bits;
    if constexpr (std::is_same_v<T, __half>) bits = __half_as_ushort(__float2half_rn(a));
    else bits = __bfloat16_as_ushort(__float2bfloat16_rn(a));
    if ((a < b) == (a > C(0))) ++bits;  // away from zero
    else --bits;
    if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(bits));
    else return __bfloat162float(__ushort_as_bfloat16(bits));
  } else {
    return bm::nextafter_(a, b);
  }
}

template <class C>
__device__ __forceinline__ bool isnan_(C x) {
  return x != x;
}

// pow for bf16 outputs: 2^(b lg2 |a|) by MUFU lg2 and ex2 (non-ftz: subnormal bases and
// results kept) and the C / torch special cases: b == 0 or a == 1 give 1 (even with a NaN),
// a == -1 with b = +-inf gives 1, a negative finite base with a non-integer exponent gives
// NaN, a negative base (-0 and -inf included) with an odd integer exponent keeps its sign.
// lg2.approx has absolute error <= 2^-22 near 1 and relative 2^-22 elsewhere, so the
// exponent is off by <= |b lg2 a| 2^-22 (relative to lg2 a: <= 2^-15 at a = 1 + 2^-7, bf16's
// closest base to 1), and a finite bf16 result has |b lg2 a| < 134: the result is within
// 2^-8.9 relative, inside bf16's rounding budget (tolerance 2^-7; exact integer powers
// like (-3)^3 still round to the exact bf16 value). Not for f16 (rtol 2^-10: a = 1 + 2^-10
// with |b| ~ 10^4 would miss) nor f32 / f64 (powf / pow). powf costs ~100 instructions,
// which kept bf16 pow at 43% of the copy bandwidth on the H200.
__device__ __forceinline__ float pow_bf16(float a, float b) {
  float r = mufu::ex2(b * mufu::lg2(fabsf(a)));
  const bool b_int = truncf(b) == b;  // +-inf count as (even) integers, NaN does not
  const bool b_odd = b_int && fabsf(b) < 16777216.0f && (static_cast<int>(b) & 1);
  if (b_odd && signbit(a)) r = -r;
  if (a < 0.0f && !b_int && a != -INFINITY) r = __int_as_float(0x7fffffff);  // NaN
  if (b == 0.0f || a == 1.0f || (a == -1.0f && fabsf(b) == INFINITY)) r = 1.0f;
  return r;
}

// ------------------------------------------------------------------------ forward
template <BinaryKind K, class T = float, class C>
__device__ __forceinline__ C binary_fwd(C a, C b) {
  if constexpr (K == BinaryKind::kAdd) return a + b;
  else if constexpr (K == BinaryKind::kSub) return a - b;
  else if constexpr (K == BinaryKind::kMul) return a * b;
  else if constexpr (K == BinaryKind::kDiv) return a / b;
  else if constexpr (K == BinaryKind::kDivFloor) return div_floor_float(a, b);
  else if constexpr (K == BinaryKind::kDivTrunc) return um::trunc_(a / b);
  else if constexpr (K == BinaryKind::kPow) {
    if constexpr (std::is_same_v<T, __nv_bfloat16> && std::is_same_v<C, float>) return pow_bf16(a, b);
    else return bm::pow_(a, b);
  }
  else if constexpr (K == BinaryKind::kAtan2) return bm::atan2_(a, b);
  else if constexpr (K == BinaryKind::kHypot) return bm::hypot_(a, b);
  else if constexpr (K == BinaryKind::kCopysign) return bm::copysign_(a, b);
  else if constexpr (K == BinaryKind::kNextafter) return nextafter_in<T>(a, b);
  else if constexpr (K == BinaryKind::kFmin) return bm::fmin_(a, b);
  else if constexpr (K == BinaryKind::kFmax) return bm::fmax_(a, b);
  else if constexpr (K == BinaryKind::kMaximum) return isnan_(a) ? a : (isnan_(b) ? b : bm::fmax_(a, b));
  else if constexpr (K == BinaryKind::kMinimum) return isnan_(a) ? a : (isnan_(b) ? b : bm::fmin_(a, b));
  else if constexpr (K == BinaryKind::kFmod) return bm::fmod_(a, b);
  else if constexpr (K == BinaryKind::kRemainder) return remainder_float(a, b);
  else if constexpr (K == BinaryKind::kLdexp) return a * um::exp2_(b);
  else if constexpr (K == BinaryKind::kXlogy) return isnan_(b) ? b : (a == C(0) ? C(0) : a * um::log_(b));
  else {
    static_assert(K == BinaryKind::kAdd, "binary_fwd: not a floating kind");
    return a;
  }
}

template <class T, class C>
__device__ C binary_fwd_dyn(BinaryKind k, C a, C b) {
  switch (k) {
#define BARACUDA_CASE(K) case BinaryKind::K: return binary_fwd<BinaryKind::K, T>(a, b);
    BARACUDA_BINARY_FLOAT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: return um::nan<C>();
  }
}

// ------------------------------------------------------------------------ backward
// PyTorch's formulas (derivatives.yaml), operand W (0: a, 1: b), gradient g.
template <BinaryKind K, int W, class C>
__device__ __forceinline__ C binary_grad(C g, C a, C b) {
  using BK = BinaryKind;
  if constexpr (K == BK::kAdd) return g;
  else if constexpr (K == BK::kSub) return W == 0 ? g : -g;
  else if constexpr (K == BK::kMul) return W == 0 ? g * b : g * a;
  else if constexpr (K == BK::kDiv) return W == 0 ? g / b : -g * ((a / b) / b);
  else if constexpr (K == BK::kDivFloor || K == BK::kDivTrunc) return C(0);  // piecewise constant
  else if constexpr (K == BK::kPow) {
    if constexpr (W == 0) return b == C(0) ? C(0) : g * (b * bm::pow_(a, b - C(1)));
    else return (a == C(0) && b >= C(0)) ? C(0) : g * (bm::pow_(a, b) * um::log_(a));
  } else if constexpr (K == BK::kAtan2) {
    const C recip = C(1) / (a * a + b * b);
    return W == 0 ? g * b * recip : g * -a * recip;
  } else if constexpr (K == BK::kHypot) {
    return g * (W == 0 ? a : b) / bm::hypot_(a, b);
  } else if constexpr (K == BK::kCopysign) {
    if constexpr (W == 1) return C(0);
    else return a == C(0) ? C(0) : g * (bm::copysign_(a, b) / a);
  } else if constexpr (K == BK::kFmax || K == BK::kFmin) {
    const bool a_wins = (K == BK::kFmax ? a >= b : a <= b) || isnan_(b);
    return (W == 0) == a_wins ? g : C(0);
  } else if constexpr (K == BK::kMaximum || K == BK::kMinimum) {
    const C share = a == b ? g / C(2) : g;
    const bool lose = (K == BK::kMaximum) == (W == 0) ? a < b : a > b;
    return lose ? C(0) : share;
  } else if constexpr (K == BK::kFmod) return W == 0 ? g : -g * um::trunc_(a / b);
  else if constexpr (K == BK::kRemainder) return W == 0 ? g : -g * div_floor_float(a, b);
  else if constexpr (K == BK::kLdexp) {
    const C scale = um::exp2_(b);
    return W == 0 ? g * scale : g * a * (scale * C(0.69314718055994530942));
  } else if constexpr (K == BK::kXlogy) {
    if constexpr (W == 0) {
      if (a == C(0) && b <= C(0)) return C(0);
      return isnan_(b) ? b : (g == C(0) ? C(0) : g * um::log_(b));  // torch: xlogy(g, b)
    } else {
      return g * a / b;
    }
  } else {
    static_assert(K == BK::kAdd, "binary_grad: not a differentiable kind");
    return g;
  }
}

template <int W, class C>
__device__ C binary_grad_dyn(BinaryKind k, C g, C a, C b) {
  switch (k) {
#define BARACUDA_CASE(K) case BinaryKind::K: return binary_grad<BinaryKind::K, W>(g, a, b);
    BARACUDA_BINARY_GRAD_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: return um::nan<C>();
  }
}

// ------------------------------------------------------------------------ integer kinds
// In the integer type T (or bool): add/sub/mul wrap (two's complement); division and
// remainder by 0 give 0, MIN / -1 wraps to MIN (remainder 0); shifts follow torch: a
// left shift by a negative count or >= the width gives 0, a right shift by such a count
// gives the sign fill (0 or -1).
template <BinaryKind K, class T>
__device__ __forceinline__ T binary_int(T a, T b) {
  using BK = BinaryKind;
  if constexpr (std::is_same_v<T, bool>) {
    if constexpr (K == BK::kBitwiseAnd) return a && b;
    else if constexpr (K == BK::kBitwiseOr) return a || b;
    else if constexpr (K == BK::kBitwiseXor) return a != b;
    else return false;
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr int kBits = sizeof(T) * 8;
    if constexpr (K == BK::kAdd) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    else if constexpr (K == BK::kSub) return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    else if constexpr (K == BK::kMul) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    else if constexpr (K == BK::kMaximum) return a > b ? a : b;
    else if constexpr (K == BK::kMinimum) return a < b ? a : b;
    else if constexpr (K == BK::kBitwiseAnd) return static_cast<T>(a & b);
    else if constexpr (K == BK::kBitwiseOr) return static_cast<T>(a | b);
    else if constexpr (K == BK::kBitwiseXor) return static_cast<T>(a ^ b);
    else if constexpr (K == BK::kShiftLeft) {
      if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= T(kBits)) return T(0);
      return static_cast<T>(static_cast<U>(a) << b);
    } else if constexpr (K == BK::kShiftRight) {
      constexpr int kMax = kBits - (std::is_signed_v<T> ? 1 : 0);
      if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= T(kMax)) return static_cast<T>(a >> kMax);
      return static_cast<T>(a >> b);
    } else {
      // division family: 0 for b == 0; b == -1 (signed) negates with wrap-around
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) {
          if constexpr (K == BK::kFmod || K == BK::kRemainder) return T(0);
          else return static_cast<T>(U(0) - static_cast<U>(a));
        }
      }
      const T q = static_cast<T>(a / b), r = static_cast<T>(a % b);
      bool opposite = false;  // the remainder's sign differs from b's (never for unsigned)
      if constexpr (std::is_signed_v<T>) opposite = r != T(0) && ((r < T(0)) != (b < T(0)));
      if constexpr (K == BK::kDivTrunc) return q;
      else if constexpr (K == BK::kDivFloor) return opposite ? static_cast<T>(q - 1) : q;
      else if constexpr (K == BK::kFmod) return r;
      else {
        static_assert(K == BK::kRemainder, "binary_int: not an integer kind");
        return opposite ? static_cast<T>(r + b) : r;
      }
    }
  }
}

template <class T>
__device__ T binary_int_dyn(BinaryKind k, T a, T b) {
  switch (k) {
#define BARACUDA_CASE(K) case BinaryKind::K: return binary_int<BinaryKind::K>(a, b);
    BARACUDA_BINARY_INT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: return T(0);
  }
}

// ------------------------------------------------------------------------ -> bool
// The comparisons and the logical kinds share one run-time code (launch_binary.hpp).
using elementwise::BoolOpCode;
using elementwise::IscloseScalars;

// torch.isclose: a == b, or (equal_nan and both NaN), or |a - b| finite and <= atol + rtol * |b|
// (tolerance as one fma). Floating C computes in C; integers and bool in double.
template <class C>
__device__ __forceinline__ bool isclose_value(C a, C b, const IscloseScalars& s) {
  if constexpr (std::is_integral_v<C>) {
    return isclose_value<double>(static_cast<double>(a), static_cast<double>(b), s);
  } else {
    if (a == b) return true;
    if (s.equal_nan && isnan_(a) && isnan_(b)) return true;
    if (s.rtol == 0 && s.atol == 0) return false;
    const C diff = a > b ? a - b : b - a;  // NaN when either is NaN
    const C babs = b < C(0) ? -b : b;
    const C allowed = bm::fma_(C(s.rtol), babs, C(s.atol));
    return diff < um::inf<C>() && diff <= allowed;
  }
}

template <class C>
__device__ __forceinline__ bool binary_bool(BoolOpCode op, C a, C b, const IscloseScalars& s) {
  switch (op) {
    case BoolOpCode::kEq: return a == b;
    case BoolOpCode::kNe: return a != b;
    case BoolOpCode::kLt: return a < b;
    case BoolOpCode::kLe: return a <= b;
    case BoolOpCode::kGt: return a > b;
    case BoolOpCode::kGe: return a >= b;
    case BoolOpCode::kIsclose: return isclose_value(a, b, s);
    case BoolOpCode::kLogicalAnd: return a != C(0) && b != C(0);
    case BoolOpCode::kLogicalOr: return a != C(0) || b != C(0);
    case BoolOpCode::kLogicalXor: return (a != C(0)) != (b != C(0));
  }
  return false;
}

// ------------------------------------------------------------------------ lerp
template <class C>
__device__ __forceinline__ C lerp_value(C a, C b, C w) {
  const C aw = w < C(0) ? -w : w;
  return aw < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
}

}  // namespace baracuda::kernels
