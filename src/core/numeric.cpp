// Bit-exact float <-> f16 / bf16 / FP8 conversions. Rules: docs/numerics-conversions.md.
//
// Everything here is integer bit manipulation on the float's binary32 encoding, so the results do
// not depend on the FP environment (rounding mode, FTZ/DAZ, x87 vs SSE).
#include "baracuda/core/numeric.hpp"

#include <bit>
#include <cstdint>

namespace baracuda {
namespace {

constexpr std::uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kF32Inf = 0x7F800000u;

// Round the magnitude `a` (binary32 bits without sign; finite or +inf, not NaN) to a binary format
// with EXP exponent bits, MAN mantissa bits and IEEE bias, round to nearest, ties to even.
// Returns the magnitude code (exponent << MAN | mantissa) assuming an unbounded exponent range at
// the top: a code above the format's largest finite code means "rounded past max finite", and the
// caller applies its overflow rule.
template <int EXP, int MAN>
constexpr std::uint32_t round_magnitude(std::uint32_t a) noexcept {
  static_assert(EXP >= 2 && EXP <= 8 && MAN >= 1 && MAN <= 22);
  constexpr int kBias = (1 << (EXP - 1)) - 1;
  constexpr int kShift = 23 - MAN;  // float mantissa bits dropped for a normal result
  // Smallest normal of the target, 2^(1 - bias), as a biased binary32 exponent.
  constexpr std::uint32_t kMinNormalExp = static_cast<std::uint32_t>(127 - kBias + 1);

  const std::uint32_t exp = a >> 23;
  if (exp >= kMinNormalExp) {
    // Normal result: rebias the exponent in place, then round away the low kShift bits. The
    // rounding carry may ripple into the exponent (next binade, or past the largest finite
    // binade). No wrap-around: a <= 0x7F800000 and the added bias is < 2^22, so the sum stays
    // below 2^31, and too-large inputs (+inf included) simply give codes above every finite code.
    const std::uint32_t m = a - ((kMinNormalExp - 1u) << 23);
    const std::uint32_t odd = (m >> kShift) & 1u;
    return (m + ((1u << (kShift - 1)) - 1u) + odd) >> kShift;
  }
  // Subnormal (or zero) result. The target's subnormal quantum is 2^(1 - bias - MAN); the input
  // is sig * 2^(max(exp,1) - 150) with sig the 24-bit significand (implicit bit only if exp > 0).
  // q = input / quantum = sig * 2^-(shift) with shift = 151 - bias - MAN - max(exp, 1) >= 24 - MAN.
  const std::uint32_t sig = (a & 0x007FFFFFu) | (exp != 0 ? 0x00800000u : 0u);
  const std::uint32_t e = exp != 0 ? exp : 1u;
  const std::uint32_t shift = static_cast<std::uint32_t>(151 - kBias - MAN) - e;
  if (shift >= 25) {
    return 0;  // sig < 2^24 <= half a quantum: rounds to zero
  }
  const std::uint32_t q = sig >> shift;
  const std::uint32_t rem = sig & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  // q + 1 may be the smallest normal code (1 << MAN), which is the right encoding.
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// Exact decode of an IEEE-like narrow format whose all-ones exponent is inf/NaN
// (f16 via EXP=5/MAN=10; e5m2 is the top byte of an f16). `b` has the sign at bit EXP+MAN.
template <int EXP, int MAN>
constexpr std::uint32_t decode_ieee_like(std::uint32_t b) noexcept {
  constexpr int kBias = (1 << (EXP - 1)) - 1;
  constexpr std::uint32_t kExpMask = (1u << EXP) - 1u;
  constexpr std::uint32_t kManMask = (1u << MAN) - 1u;
  const std::uint32_t sign = (b >> (EXP + MAN)) << 31;
  const std::uint32_t exp = (b >> MAN) & kExpMask;
  const std::uint32_t man = b & kManMask;
  if (exp == kExpMask) {
    return sign | kF32Inf | (man << (23 - MAN));  // inf, or NaN with its payload carried
  }
  if (exp != 0) {
    return sign | ((exp + static_cast<std::uint32_t>(127 - kBias)) << 23) | (man << (23 - MAN));
  }
  if (man == 0) {
    return sign;  // signed zero
  }
  // Subnormal: man * 2^(1 - bias - MAN). Normalise: leading one at bit p (0-based) gives
  // value 2^(p + 1 - bias - MAN) * (1 + rest).
  const int p = 31 - std::countl_zero(man);
  const std::uint32_t rest = man & ~(1u << p);
  const std::uint32_t fexp = static_cast<std::uint32_t>(p + 1 - kBias - MAN + 127);
  return sign | (fexp << 23) | (rest << (23 - p));
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// f16
// ------------------------------------------------------------------------------------------------
std::uint16_t f32_to_f16_bits(float x) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & kF32AbsMask;
  if (a > kF32Inf) {
    return static_cast<std::uint16_t>(sign | 0x7E00u);
  }
  std::uint32_t code = round_magnitude<5, 10>(a);
  if (code > 0x7C00u) {
    code = 0x7C00u;  // IEEE overflow (and +inf) -> inf
  }
  return static_cast<std::uint16_t>(sign | code);
}

float f16_bits_to_f32(std::uint16_t b) noexcept {
  return std::bit_cast<float>(decode_ieee_like<5, 10>(b));
}

// ------------------------------------------------------------------------------------------------
// FP8 E4M3 "fn"
// ------------------------------------------------------------------------------------------------
// Both fp8 encoders: round the magnitude (unbounded exponent), then map everything past
// the largest finite code to `max_finite` (kSaturate) or to the format's PyTorch overflow
// code (e4m3: NaN 0x7F; e5m2: inf 0x7C). NaN in -> 0x7F (sign kept except under kSaturate).
template <int E, int M>
std::uint8_t encode_fp8(float x, Fp8Overflow mode, std::uint32_t max_finite, std::uint32_t pytorch_overflow) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  const std::uint32_t a = u & kF32AbsMask;
  const bool saturate = mode == Fp8Overflow::kSaturate;
  if (a > kF32Inf) {
    return static_cast<std::uint8_t>(saturate ? 0x7Fu : (sign | 0x7Fu));
  }
  std::uint32_t code = round_magnitude<E, M>(a);
  if (code > max_finite) {
    code = saturate ? max_finite : pytorch_overflow;
  }
  return static_cast<std::uint8_t>(sign | code);
}

std::uint8_t f32_to_e4m3_bits(float x, Fp8Overflow mode) noexcept {
  // Bounded exponent range: codes 0x00..0x7E are values, 0x7F is NaN. The unbounded rounding
  // gives 0x7F for (464, 480) and >= 0x80 from 480 up; both are "rounded past 448".
  return encode_fp8<4, 3>(x, mode, 0x7Eu, 0x7Fu);
}

float e4m3_bits_to_f32(std::uint8_t b) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const std::uint32_t mag = b & 0x7Fu;
  if (mag == 0x7Fu) {
    return std::bit_cast<float>(sign | 0x7FF00000u);  // NaN; mantissa 111 carried (same as torch)
  }
  if ((mag >> 3) == 0xFu) {
    // Exponent 1111 holds normal numbers (256..448) in E4M3 "fn"; decode_ieee_like would treat it
    // as inf/NaN, so handle it here: 2^(15 - 7) * 1.mmm.
    return std::bit_cast<float>(sign | ((15u - 7u + 127u) << 23) | ((mag & 7u) << 20));
  }
  return std::bit_cast<float>(decode_ieee_like<4, 3>(b));
}

// ------------------------------------------------------------------------------------------------
// FP8 E5M2
// ------------------------------------------------------------------------------------------------
std::uint8_t f32_to_e5m2_bits(float x, Fp8Overflow mode) noexcept {
  return encode_fp8<5, 2>(x, mode, 0x7Bu, 0x7Cu);  // max finite 57344, or inf
}

float e5m2_bits_to_f32(std::uint8_t b) noexcept {
  return std::bit_cast<float>(decode_ieee_like<5, 2>(b));
}

}  // namespace baracuda
