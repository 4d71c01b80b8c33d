// cast: y = convert(x) between f64, f32, f16, bf16, e4m3, e5m2, i64, i32, i16, i8, u8 and
// bool, element by element on the storage types (the map kernels call CastOp with the raw
// input element, see map_one). The rules (docs/semantics.md, "Cast"):
//  * float -> float: round to nearest even once from the input value; f64 -> the 16- and
//    8-bit formats goes through f32 as PyTorch does; fp8 overflow per the mode.
//  * float -> integer: truncate toward zero, NaN -> 0. i64 and i32 saturate to their range
//    (+-inf included), as CUDA's cvt.rzi does; i16, i8 and u8 take the int64 value
//    (saturated to the int64 range) and wrap like an integer, as PyTorch does for u8
//    (-1.0 -> 255) and i8 (300.0 -> 44).
//  * integer -> narrower integer: wrap (two's complement, the low bits are kept).
//  * anything -> bool: x != 0 (NaN -> true); bool -> number: 0 / 1.
//  * i64 / i32 -> a float of p significant bits: rounded to p bits once (cvt.rn for f32; for
//    the narrower formats through f32 only where the int is exact in f32, else in integer
//    arithmetic), never rounded twice.
// Every branch is explicit, so no result depends on C++'s undefined conversions or on the
// saturation/NaN behaviour of a particular cvt instruction.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/device_types.cuh"

namespace baracuda::kernels {

// Significant bits (with the implicit one) of the floating output types.
template <class T> inline constexpr int kSignificandBits = 0;
template <> inline constexpr int kSignificandBits<float> = 24;
template <> inline constexpr int kSignificandBits<__half> = 11;
template <> inline constexpr int kSignificandBits<__nv_bfloat16> = 8;
template <> inline constexpr int kSignificandBits<__nv_fp8_e4m3> = 4;
template <> inline constexpr int kSignificandBits<__nv_fp8_e5m2> = 3;

// x rounded to `bits` significant bits, nearest even, returned as the (exactly
// representable) float. |x| <= 2^63, so the result fits a float's exponent range.
__device__ __forceinline__ float int_to_float_rounded(std::int64_t x, int bits) {
  const bool neg = x < 0;
  const std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
  const int width = 64 - __clzll(static_cast<long long>(mag));
  std::uint64_t q = mag;
  int shift = 0;
  if (width > bits) {
    shift = width - bits;
    const std::uint64_t rem = mag & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    q = mag >> shift;
    if (rem > half || (rem == half && (q & 1))) ++q;  // q may become 2^bits: still exact in a float
  }
  const float r = ldexpf(static_cast<float>(q), shift);  // q < 2^25: exact
  return neg ? -r : r;
}

// Truncation toward zero with the documented out-of-range results.
template <class F>
__device__ __forceinline__ std::int64_t float_to_int64(F v) {
  if (v != v) return 0;
  if (v >= F(9223372036854775808.0)) return INT64_MAX;
  if (v <= F(-9223372036854775808.0)) return INT64_MIN;
  return static_cast<std::int64_t>(v);  // in range: truncates
}

template <class TOut, class TIn>
__device__ __forceinline__ TOut cast_value(TIn x, int fp8_mode) {
  if constexpr (std::is_same_v<TOut, bool>) {
    if constexpr (std::is_integral_v<TIn>) return x != TIn(0);
    else return to_compute(x) != 0;  // NaN != 0
  } else if constexpr (std::is_integral_v<TOut>) {
    if constexpr (std::is_integral_v<TIn>) return static_cast<TOut>(x);  // wraps (C++20 modular), bool -> 0 / 1
    else {
      const std::int64_t v = float_to_int64(to_compute(x));
      if constexpr (std::is_same_v<TOut, std::int32_t>) return static_cast<TOut>(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
      else return static_cast<TOut>(v);  // i64: as is; i16, i8, u8: wrap
    }
  } else if constexpr (std::is_same_v<TOut, double>) {
    if constexpr (std::is_integral_v<TIn>) return static_cast<double>(x);  // i64: one rounding (cvt.rn.f64.s64)
    else return static_cast<double>(to_compute(x));
  } else if constexpr (std::is_integral_v<TIn>) {
    if constexpr (std::is_same_v<TOut, float>) {
      return static_cast<float>(x);  // cvt.rn.f32.s32 / .s64: already one rounding to 24 bits
    } else if constexpr (sizeof(TIn) >= 4) {
      // Below 2^24 the int is exact in f32, so from_compute rounds once; beyond, going
      // through f32 would round twice and the integer path rounds instead.
      constexpr TIn kExactF32 = TIn{1} << 24;
      if (x > -kExactF32 && x < kExactF32) return from_compute<TOut>(static_cast<float>(x), fp8_mode);
      return from_compute<TOut>(int_to_float_rounded(x, kSignificandBits<TOut>), fp8_mode);
    } else {
      return from_compute<TOut>(static_cast<float>(x), fp8_mode);  // |x| < 2^16: exact in f32
    }
  } else {
    // floating -> f32 / f16 / bf16 / fp8; f64 inputs round to f32 first (PyTorch's path).
    return from_compute<TOut>(static_cast<float>(to_compute(x)), fp8_mode);
  }
}

// The map kernels hand storage-level ops (kStorage) the raw elements and the fp8 mode.
struct CastOp {
  static constexpr int kIn = 1, kOut = 1;
  static constexpr bool kStorage = true;
  template <class TIn, class TOut>
  __device__ __forceinline__ void apply(const TIn* x, TOut* y, int fp8_mode) const {
    y[0] = cast_value<TOut>(x[0], fp8_mode);
  }
};

}  // namespace baracuda::kernels
