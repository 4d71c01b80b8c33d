// baracuda/core/numeric.hpp
//
// Host-side, bit-exact conversions between float (IEEE binary32) and the 16-bit / 8-bit
// floating-point storage formats used by baracuda buffers:
//
//   half_t          IEEE binary16           (1/5/10, bias 15)
//   bfloat16_t      bfloat16                (1/8/7,  bias 127)
//   float8_e4m3_t   OCP FP8 E4M3 "fn"       (1/4/3,  bias 7; no inf, S.1111.111 is NaN, max 448)
//   float8_e5m2_t   OCP FP8 E5M2            (1/5/2,  bias 15; IEEE-like inf/NaN, max 57344)
//
// Plain C++20, no CUDA headers, no floating-point arithmetic in the conversions (integer bit
// manipulation only), so they are cheap enough for CPU reference loops. Every rule (rounding,
// overflow per mode, NaN output bits, which PyTorch / CUDA behaviour each mode matches) is written
// down in docs/numerics-conversions.md; the short version:
//
//   * float -> narrow: round to nearest, ties to even; signed zero kept; subnormals produced
//     exactly (and float subnormal inputs handled exactly).
//   * narrow -> float: exact (every narrow value is a float).
//   * NaN in -> the format's canonical quiet NaN with the input's sign:
//       f16 0x7E00|s, bf16 0x7FC0|s, e4m3 0x7F|s, e5m2 0x7F|s
//     (s = the sign bit at the format's top bit); the payload is not carried. Exception:
//     Fp8Overflow::kSaturate gives 0x7F for either sign, as CUDA's satfinite conversion does.
//   * f16 / bf16 overflow -> +-inf (IEEE).
//   * FP8 overflow depends on Fp8Overflow (see below).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace baracuda {

// ------------------------------------------------------------------------------------------------
// Storage types: one byte pattern, no arithmetic.
// ------------------------------------------------------------------------------------------------
struct half_t {
  std::uint16_t bits;
};
struct bfloat16_t {
  std::uint16_t bits;
};
struct float8_e4m3_t {  // OCP FP8 E4M3 "fn": no inf, 0x7F / 0xFF are NaN, max finite 448
  std::uint8_t bits;
};
struct float8_e5m2_t {  // E5M2: inf 0x7C / 0xFC, NaN 0x7D..0x7F (and 0xFD..0xFF), max finite 57344
  std::uint8_t bits;
};

static_assert(sizeof(half_t) == 2 && std::is_trivially_copyable_v<half_t>);
static_assert(sizeof(bfloat16_t) == 2 && std::is_trivially_copyable_v<bfloat16_t>);
static_assert(sizeof(float8_e4m3_t) == 1 && std::is_trivially_copyable_v<float8_e4m3_t>);
static_assert(sizeof(float8_e5m2_t) == 1 && std::is_trivially_copyable_v<float8_e5m2_t>);
static_assert(sizeof(float) == 4 && sizeof(std::uint32_t) == 4);

// How float -> FP8 treats values whose rounded magnitude exceeds the format's max finite value,
// infinities and NaN. Rounding itself is round-to-nearest-even in both modes.
enum class Fp8Overflow : std::uint8_t {
  // torch's Tensor.to(torch.float8_e4m3fn / float8_e5m2), i.e. c10::detail::
  // fp8e4m3fn_from_fp32_value / fp8e5m2_from_fp32_value (direct from f32, no f16 step):
  //   e4m3: |x| > 464 (rounds past 448) -> NaN 0x7F|s; +-inf -> 0x7F|s; |x| == 464 -> 448 (tie).
  //   e5m2: |x| >= 61440 (rounds past 57344) -> inf 0x7C|s; +-inf -> 0x7C|s.
  //   NaN -> 0x7F|s for both.
  // On non-NaN inputs this is also CUDA's __nv_cvt_float_to_fp8(x, __NV_NOSAT, ...).
  kPyTorch,
  // CUDA __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) = PTX cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32
  // (checked bit for bit on all 2^32 floats on an sm_90 GPU):
  //   finite overflow and +-inf -> +-max finite (e4m3 0x7E|s = 448, e5m2 0x7B|s = 57344);
  //   NaN -> 0x7F with the sign dropped (what the hardware and CUDA's software path produce).
  kSaturate,
};

// ------------------------------------------------------------------------------------------------
// Bit-level conversions.
// ------------------------------------------------------------------------------------------------

// IEEE binary16, round to nearest even, overflow -> +-inf, subnormals kept,
// NaN -> 0x7E00 | sign (as torch; CUDA's __float2half_rn gives 0x7FFF). Non-NaN results equal
// __float2half_rn and the compiler's (_Float16)x for all 2^32 inputs.
std::uint16_t f32_to_f16_bits(float x) noexcept;
// Exact. NaN payloads are carried (f16 mantissa -> top 10 bits of the f32 mantissa).
float f16_bits_to_f32(std::uint16_t b) noexcept;

// Round to nearest even (all finite inputs, subnormals included), overflow -> +-inf,
// NaN -> 0x7FC0 | sign. (torch's CPU scalar path gives 0x7FC0 for either sign, CUDA's
// __float2bfloat16_rn 0x7FFF; non-NaN results equal both for all 2^32 inputs.)
inline std::uint16_t f32_to_bf16_bits(float x) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7FC0u);
  }
  // Adding 0x7FFF (+1 when the kept lsb is odd) carries into the kept bits exactly when the
  // discarded 16 bits are above the half-way point, or at it with an odd kept lsb. A carry out of
  // the largest finite binade gives 0x7F80 (inf), which is the IEEE overflow result.
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
// Exact (bf16 is the top half of a float). NaN payloads are carried.
inline float bf16_bits_to_f32(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// OCP E4M3 "fn". Round to nearest even; overflow per `mode`; NaN -> 0x7F | sign (kPyTorch),
// 0x7F (kSaturate). Subnormal results and f32 subnormal inputs are exact.
std::uint8_t f32_to_e4m3_bits(float x, Fp8Overflow mode = Fp8Overflow::kPyTorch) noexcept;
// Exact. 0x7F / 0xFF decode to the quiet NaN 0x7FF00000 | sign (same bits as torch).
float e4m3_bits_to_f32(std::uint8_t b) noexcept;

// E5M2. Round to nearest even directly from float (no double rounding through f16, same as
// torch and CUDA); overflow per `mode`; NaN -> 0x7F | sign (kPyTorch), 0x7F (kSaturate).
std::uint8_t f32_to_e5m2_bits(float x, Fp8Overflow mode = Fp8Overflow::kPyTorch) noexcept;
// Exact (E5M2 is the top byte of an f16). NaN payloads are carried.
float e5m2_bits_to_f32(std::uint8_t b) noexcept;

// ------------------------------------------------------------------------------------------------
// Convenience wrappers.
// ------------------------------------------------------------------------------------------------
inline half_t to_half(float x) noexcept { return {f32_to_f16_bits(x)}; }
inline float to_float(half_t h) noexcept { return f16_bits_to_f32(h.bits); }

inline bfloat16_t to_bfloat16(float x) noexcept { return {f32_to_bf16_bits(x)}; }
inline float to_float(bfloat16_t h) noexcept { return bf16_bits_to_f32(h.bits); }

inline float8_e4m3_t to_e4m3(float x, Fp8Overflow mode = Fp8Overflow::kPyTorch) noexcept {
  return {f32_to_e4m3_bits(x, mode)};
}
inline float to_float(float8_e4m3_t h) noexcept { return e4m3_bits_to_f32(h.bits); }

inline float8_e5m2_t to_e5m2(float x, Fp8Overflow mode = Fp8Overflow::kPyTorch) noexcept {
  return {f32_to_e5m2_bits(x, mode)};
}
inline float to_float(float8_e5m2_t h) noexcept { return e5m2_bits_to_f32(h.bits); }

}  // namespace baracuda
