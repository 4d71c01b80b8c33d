// Bit-exact tests of baracuda/core/numeric.hpp (float <-> f16 / bf16 / FP8 E4M3 / FP8 E5M2).
//
// The oracles here are deliberately built differently from the implementation (which is integer
// bit manipulation):
//   * decoding: sign/exponent/mantissa fields -> std::ldexp in double;
//   * encoding: std::frexp / std::ldexp / std::nearbyint in double (default rounding mode is
//     round-to-nearest-even) on an unbounded-exponent grid, then the overflow rule of each mode.
// Encoder results are checked bit for bit: a non-NaN result must decode (with the independent
// decoder, itself checked exhaustively) to exactly the reference value with the same sign; decode
// is injective on non-NaN codes, so this pins the bits. NaN and overflow results are compared to
// the exact expected bit patterns.
//
// Random inputs use a fixed seed (override with BARACUDA_TEST_SEED=<n>); it is printed with every
// failure.
#include "baracuda/core/numeric.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using baracuda::Fp8Overflow;

// ------------------------------------------------------------------------------------------------
// Independent description of each format.
// ------------------------------------------------------------------------------------------------
struct Format {
  const char* name;
  int exp_bits;
  int man_bits;
  bool ieee_specials;  // all-ones exponent = inf/NaN (false for E4M3 "fn": only S.1111.111 is NaN)

  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int width() const { return 1 + exp_bits + man_bits; }
  std::uint32_t count() const { return 1u << width(); }
  std::uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  // Largest finite value.
  double max_finite() const {
    const int top_exp = (1 << exp_bits) - (ieee_specials ? 2 : 1);
    const int top_man = (1 << man_bits) - (ieee_specials ? 1 : 2);
    return std::ldexp(static_cast<double>((1 << man_bits) + top_man), top_exp - bias() - man_bits);
  }
};

constexpr Format kF16{"f16", 5, 10, true};
constexpr Format kBF16{"bf16", 8, 7, true};
constexpr Format kE4M3{"e4m3", 4, 3, false};
constexpr Format kE5M2{"e5m2", 5, 2, true};

// Formula decode: (-1)^s * 2^(e - bias) * (1 + m / 2^M), or 2^(1 - bias) * (m / 2^M) for e == 0.
double ref_decode(std::uint32_t bits, const Format& f) {
  const int M = f.man_bits;
  const int E = f.exp_bits;
  const bool neg = ((bits >> (E + M)) & 1u) != 0;
  const int exp = static_cast<int>((bits >> M) & ((1u << E) - 1u));
  const int man = static_cast<int>(bits & ((1u << M) - 1u));
  const int all_ones = (1 << E) - 1;
  const double s = neg ? -1.0 : 1.0;
  if (f.ieee_specials && exp == all_ones) {
    return man == 0 ? s * std::numeric_limits<double>::infinity()
                    : std::copysign(std::numeric_limits<double>::quiet_NaN(), s);
  }
  if (!f.ieee_specials && exp == all_ones && man == (1 << M) - 1) {
    return std::copysign(std::numeric_limits<double>::quiet_NaN(), s);
  }
  if (exp == 0) {
    return s * std::ldexp(static_cast<double>(man), 1 - f.bias() - M);
  }
  return s * std::ldexp(static_cast<double>((1 << M) + man), exp - f.bias() - M);
}

// Reference rounding of a finite v to a binary format with `exp_bits` / `man_bits`, round to nearest
// even, subnormals included, no upper exponent bound (the caller decides what "too large" means).
// Algorithm: find v's binade with frexp, clamp it to the format's minimum exponent (this is what
// makes small values subnormal), scale so the format's quantum is 1, and let nearbyint round.
// Every step is exact in double except nearbyint's (correct) rounding.
double round_to_format(double v, int exp_bits, int man_bits) {
  if (v == 0.0 || !std::isfinite(v)) {
    return v;
  }
  const int bias = (1 << (exp_bits - 1)) - 1;
  int e = 0;
  (void)std::frexp(std::fabs(v), &e);  // |v| = f * 2^e, f in [0.5, 1): unbiased exponent e - 1
  const int emin = 1 - bias;
  const int quantum_exp = std::max(e - 1, emin) - man_bits;
  const double r = std::nearbyint(std::ldexp(std::fabs(v), -quantum_exp));
  return std::copysign(std::ldexp(r, quantum_exp), v);
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIX32, v);
  return buf;
}
std::string hexn(std::uint32_t v, int width_bits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIX32, (width_bits & 63) / 4, v);
  return buf;
}
std::uint32_t fbits(float x) { return std::bit_cast<std::uint32_t>(x); }
float ffrom(std::uint32_t u) { return std::bit_cast<float>(u); }

// ------------------------------------------------------------------------------------------------
// Codecs under test, with the expected special outputs of each (format, mode).
// ------------------------------------------------------------------------------------------------
struct Codec {
  const char* name;
  Format fmt;
  std::uint32_t (*encode)(float);
  float (*decode)(std::uint32_t);
  std::uint32_t (*nan_bits)(bool neg);       // expected output for a NaN input
  std::uint32_t (*overflow_bits)(bool neg);  // expected output when the rounded |x| > max finite
};

const Codec kCodecs[] = {
    {"f16", kF16, [](float x) -> std::uint32_t { return baracuda::f32_to_f16_bits(x); },
     [](std::uint32_t b) { return baracuda::f16_bits_to_f32(static_cast<std::uint16_t>(b)); },
     [](bool n) -> std::uint32_t { return (n ? 0x8000u : 0u) | 0x7E00u; },
     [](bool n) -> std::uint32_t { return (n ? 0x8000u : 0u) | 0x7C00u; }},
    {"bf16", kBF16, [](float x) -> std::uint32_t { return baracuda::f32_to_bf16_bits(x); },
     [](std::uint32_t b) { return baracuda::bf16_bits_to_f32(static_cast<std::uint16_t>(b)); },
     [](bool n) -> std::uint32_t { return (n ? 0x8000u : 0u) | 0x7FC0u; },
     [](bool n) -> std::uint32_t { return (n ? 0x8000u : 0u) | 0x7F80u; }},
    {"e4m3/kPyTorch", kE4M3,
     [](float x) -> std::uint32_t { return baracuda::f32_to_e4m3_bits(x, Fp8Overflow::kPyTorch); },
     [](std::uint32_t b) { return baracuda::e4m3_bits_to_f32(static_cast<std::uint8_t>(b)); },
     [](bool n) -> std::uint32_t { return (n ? 0x80u : 0u) | 0x7Fu; },  // NaN keeps sign (torch)
     [](bool n) -> std::uint32_t { return (n ? 0x80u : 0u) | 0x7Fu; }},  // rounds past 448 -> NaN
    {"e4m3/kSaturate", kE4M3,
     [](float x) -> std::uint32_t { return baracuda::f32_to_e4m3_bits(x, Fp8Overflow::kSaturate); },
     [](std::uint32_t b) { return baracuda::e4m3_bits_to_f32(static_cast<std::uint8_t>(b)); },
     [](bool) -> std::uint32_t { return 0x7Fu; },  // CUDA satfinite: NaN -> 0x7F, sign dropped
     [](bool n) -> std::uint32_t { return (n ? 0x80u : 0u) | 0x7Eu; }},  // -> +-448
    {"e5m2/kPyTorch", kE5M2,
     [](float x) -> std::uint32_t { return baracuda::f32_to_e5m2_bits(x, Fp8Overflow::kPyTorch); },
     [](std::uint32_t b) { return baracuda::e5m2_bits_to_f32(static_cast<std::uint8_t>(b)); },
     [](bool n) -> std::uint32_t { return (n ? 0x80u : 0u) | 0x7Fu; },
     [](bool n) -> std::uint32_t { return (n ? 0x80u : 0u) | 0x7Cu; }},  // -> +-inf
    {"e5m2/kSaturate", kE5M2,
     [](float x) -> std::uint32_t { return baracuda::f32_to_e5m2_bits(x, Fp8Overflow::kSaturate); },
     [](std::uint32_t b) { return baracuda::e5m2_bits_to_f32(static_cast<std::uint8_t>(b)); },
     [](bool) -> std::uint32_t { return 0x7Fu; },
     [](bool n) -> std::uint32_t { return (n ? 0x80u : 0u) | 0x7Bu; }},  // -> +-57344
};

const Format* const kFormats[] = {&kF16, &kBF16, &kE4M3, &kE5M2};

std::uint64_t test_seed() {
  if (const char* s = std::getenv("BARACUDA_TEST_SEED")) {
    return std::strtoull(s, nullptr, 0);
  }
  return 0x5EEDBA5Eu;
}

// Expected outcome of encoding x, from the reference rounding.
struct Expected {
  enum Kind { kValue, kNaN, kOverflow } kind;
  double value;  // kValue only (sign included, -0.0 for negative underflow)
};

Expected expected_for(float x, const Format& f) {
  if (std::isnan(x)) {
    return {Expected::kNaN, 0.0};
  }
  const double r = round_to_format(static_cast<double>(x), f.exp_bits, f.man_bits);
  if (std::fabs(r) > f.max_finite()) {  // also +-inf inputs
    return {Expected::kOverflow, 0.0};
  }
  return {Expected::kValue, r};
}

// Checks one encoding; returns an empty string when right, else a description.
std::string check_encode(const Codec& c, float x, const Expected& e) {
  const std::uint32_t got = c.encode(x);
  const bool neg = std::signbit(x);
  const int w = c.fmt.width();
  auto fail = [&](const std::string& why) {
    char val[32];
    std::snprintf(val, sizeof val, "%.9g", static_cast<double>(x));
    return std::string(c.name) + ": x=" + hex32(fbits(x)) + " (" + val + ") got " + hexn(got, w) +
           ", " + why;
  };
  if (got >= c.fmt.count()) {
    return fail("code out of range");
  }
  switch (e.kind) {
    case Expected::kNaN:
      if (got != c.nan_bits(neg)) return fail("expected NaN " + hexn(c.nan_bits(neg), w));
      return {};
    case Expected::kOverflow:
      if (got != c.overflow_bits(neg)) {
        return fail("expected overflow result " + hexn(c.overflow_bits(neg), w));
      }
      return {};
    case Expected::kValue: {
      const double d = ref_decode(got, c.fmt);
      if (std::isnan(d) || d != e.value || std::signbit(d) != std::signbit(e.value)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "decodes to %.17g, expected %.17g", d, e.value);
        return fail(buf);
      }
      return {};
    }
  }
  return fail("unreachable");
}

// Runs every codec over `inputs`; reports up to 8 failures per codec and the total.
void check_all_codecs(const std::vector<float>& inputs, const char* what,
                      std::uint64_t seed = 0) {
  for (const Codec& c : kCodecs) {
    std::uint64_t failures = 0;
    for (float x : inputs) {
      const std::string err = check_encode(c, x, expected_for(x, c.fmt));
      if (!err.empty() && ++failures <= 8) {
        ADD_FAILURE() << what << (seed ? " seed=" + std::to_string(seed) : std::string()) << ": "
                      << err;
      }
    }
    EXPECT_EQ(failures, 0u) << what << " / " << c.name << " (" << inputs.size() << " inputs)"
                            << (seed ? " seed=" + std::to_string(seed) : std::string());
  }
}

// Sorted non-negative finite values of a format, in code order (codes are monotone).
std::vector<double> nonneg_values(const Format& f) {
  std::vector<double> v;
  for (std::uint32_t b = 0; b < f.sign_bit(); ++b) {
    const double d = ref_decode(b, f);
    if (std::isfinite(d)) v.push_back(d);
  }
  return v;
}

void push_pm(std::vector<float>& out, float x) {
  out.push_back(x);
  out.push_back(-x);
}

// ------------------------------------------------------------------------------------------------
// Sanity of the oracles themselves (so a broken oracle cannot make everything pass).
// ------------------------------------------------------------------------------------------------
TEST(NumericOracle, FormatConstants) {
  EXPECT_EQ(kF16.max_finite(), 65504.0);
  EXPECT_EQ(kBF16.max_finite(), std::ldexp(255.0, 120));  // 0x7F7F = 0x1.FEp127
  EXPECT_EQ(kE4M3.max_finite(), 448.0);
  EXPECT_EQ(kE5M2.max_finite(), 57344.0);
  EXPECT_EQ(ref_decode(0x0001, kF16), std::ldexp(1.0, -24));
  EXPECT_EQ(ref_decode(0x01, kE4M3), std::ldexp(1.0, -9));
  EXPECT_EQ(ref_decode(0x01, kE5M2), std::ldexp(1.0, -16));
  EXPECT_EQ(ref_decode(0x0001, kBF16), std::ldexp(1.0, -133));
  EXPECT_EQ(ref_decode(0x3C00, kF16), 1.0);
  EXPECT_EQ(ref_decode(0x7E, kE4M3), 448.0);
  EXPECT_TRUE(std::isnan(ref_decode(0x7F, kE4M3)));
  EXPECT_TRUE(std::isinf(ref_decode(0x7C, kE5M2)));
  // round_to_format: ties to even, subnormals, carries into the next binade.
  EXPECT_EQ(round_to_format(1.0 + std::ldexp(1.0, -11), 5, 10), 1.0);
  EXPECT_EQ(round_to_format(1.0 + 3 * std::ldexp(1.0, -11), 5, 10), 1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(round_to_format(std::ldexp(1.0, -25), 5, 10), 0.0);
  EXPECT_EQ(round_to_format(std::ldexp(3.0, -25), 5, 10), std::ldexp(1.0, -23));
  EXPECT_EQ(round_to_format(65520.0, 5, 10), 65536.0);
  EXPECT_EQ(round_to_format(464.0, 4, 3), 448.0);
  EXPECT_EQ(round_to_format(465.0, 4, 3), 480.0);
  EXPECT_TRUE(std::signbit(round_to_format(-1e-30, 5, 2)));
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
}

// ------------------------------------------------------------------------------------------------
// Exhaustive decode + round trip for every code of every format.
// ------------------------------------------------------------------------------------------------
void exhaustive_decode_roundtrip(const Codec& c) {
  std::uint64_t failures = 0;
  auto report = [&](const std::string& msg) {
    if (++failures <= 8) ADD_FAILURE() << c.name << ": " << msg;
  };
  const int w = c.fmt.width();
  for (std::uint32_t b = 0; b < c.fmt.count(); ++b) {
    const float got = c.decode(b);
    const double ref = ref_decode(b, c.fmt);
    const bool neg = (b & c.fmt.sign_bit()) != 0;
    if (std::isnan(ref)) {
      if (!std::isnan(got) || std::signbit(got) != neg) {
        report("decode(" + hexn(b, w) + ") = " + hex32(fbits(got)) + ", expected NaN with sign");
      }
      const std::uint32_t back = c.encode(got);
      if (back != c.nan_bits(neg)) {
        report("encode(decode(" + hexn(b, w) + ")) = " + hexn(back, w) + ", expected NaN " +
               hexn(c.nan_bits(neg), w));
      }
      continue;
    }
    if (static_cast<double>(got) != ref || std::signbit(got) != std::signbit(ref)) {
      report("decode(" + hexn(b, w) + ") = " + hex32(fbits(got)) + ", expected " +
             std::to_string(ref));
      continue;
    }
    const std::uint32_t back = c.encode(got);
    // Round trip is the identity, except that kSaturate has no infinity to return to.
    const std::uint32_t want = std::isinf(ref) && c.overflow_bits(neg) != b ? c.overflow_bits(neg)
                                                                            : b;
    if (back != want) {
      report("encode(decode(" + hexn(b, w) + ")) = " + hexn(back, w) + ", expected " +
             hexn(want, w));
    }
  }
  EXPECT_EQ(failures, 0u) << c.name;
}

TEST(NumericDecode, F16AllPatterns) { exhaustive_decode_roundtrip(kCodecs[0]); }
TEST(NumericDecode, BF16AllPatterns) { exhaustive_decode_roundtrip(kCodecs[1]); }
TEST(NumericDecode, E4M3AllPatternsBothModes) {
  exhaustive_decode_roundtrip(kCodecs[2]);
  exhaustive_decode_roundtrip(kCodecs[3]);
}
TEST(NumericDecode, E5M2AllPatternsBothModes) {
  exhaustive_decode_roundtrip(kCodecs[4]);
  exhaustive_decode_roundtrip(kCodecs[5]);
  // In kSaturate mode the infinities have no preimage: +-inf -> +-57344.
  EXPECT_EQ(baracuda::f32_to_e5m2_bits(baracuda::e5m2_bits_to_f32(0x7C), Fp8Overflow::kSaturate),
            0x7Bu);
  EXPECT_EQ(baracuda::f32_to_e5m2_bits(baracuda::e5m2_bits_to_f32(0xFC), Fp8Overflow::kSaturate),
            0xFBu);
}

TEST(NumericDecode, NaNDecodeBits) {
  // Documented NaN decode bits: payload carried for f16 / bf16 / e5m2, fixed for e4m3 (as torch).
  EXPECT_EQ(fbits(baracuda::f16_bits_to_f32(0x7E00)), 0x7FC00000u);
  EXPECT_EQ(fbits(baracuda::f16_bits_to_f32(0xFC01)), 0xFF802000u);
  EXPECT_EQ(fbits(baracuda::bf16_bits_to_f32(0xFFC1)), 0xFFC10000u);
  EXPECT_EQ(fbits(baracuda::e4m3_bits_to_f32(0x7F)), 0x7FF00000u);
  EXPECT_EQ(fbits(baracuda::e4m3_bits_to_f32(0xFF)), 0xFFF00000u);
  EXPECT_EQ(fbits(baracuda::e5m2_bits_to_f32(0x7D)), 0x7FA00000u);
  EXPECT_EQ(fbits(baracuda::e5m2_bits_to_f32(0xFF)), 0xFFE00000u);
}

// ------------------------------------------------------------------------------------------------
// Encode vs the reference.
// ------------------------------------------------------------------------------------------------
TEST(NumericEncode, EveryRepresentableValueOfEveryFormat) {
  std::vector<float> in;
  for (const Format* f : kFormats) {
    for (std::uint32_t b = 0; b < f->count(); ++b) {
      const double d = ref_decode(b, *f);
      if (!std::isnan(d)) in.push_back(static_cast<float>(d));  // exact: every value is a float
    }
  }
  check_all_codecs(in, "representable values");
}

// Midpoints between neighbours (ties), and their float neighbours just below and above.
TEST(NumericEncode, MidpointsAndTheirNeighbours) {
  std::vector<float> in;
  for (const Format* f : kFormats) {
    std::vector<double> v = nonneg_values(*f);
    // The would-be next value above max finite (one more ulp of the top binade): the midpoint to
    // it is the overflow threshold (65520, 464, 61440, 0x1.FFp127).
    v.push_back(v.back() + (v.back() - v[v.size() - 2]));
    for (std::size_t k = 0; k + 1 < v.size(); ++k) {
      const double mid = 0.5 * (v[k] + v[k + 1]);
      const float m = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(m), mid) << f->name << " midpoint " << mid << " not a float";
      const float inf = std::numeric_limits<float>::infinity();
      push_pm(in, m);
      push_pm(in, std::nextafter(m, inf));
      push_pm(in, std::nextafter(m, -inf));
    }
  }
  check_all_codecs(in, "midpoints");
}

// Every f32 whose low 16 bits are one of {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF}: covers every bf16
// tie and near-tie, every exponent, both signs, NaN / inf encodings.
TEST(NumericEncode, AllHigh16WithSelectedLow16) {
  std::vector<float> in;
  const std::uint32_t lows[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (std::uint32_t lo : lows) in.push_back(ffrom((hi << 16) | lo));
  }
  check_all_codecs(in, "high16 x low16 grid");
}

TEST(NumericEncode, SpecialsAndThresholds) {
  std::vector<float> in;
  const float inf = std::numeric_limits<float>::infinity();
  for (std::uint32_t u : {0x00000000u, 0x00000001u, 0x00000002u, 0x00000003u, 0x007FFFFFu,
                          0x00800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u,
                          0x7FFFFFFFu, 0x7FA00000u, 0x7FBFFFFFu}) {
    in.push_back(ffrom(u));
    in.push_back(ffrom(u | 0x80000000u));
  }
  // Overflow thresholds, max finite values, min normal / subnormal of every format and the
  // half-quantum underflow points, with their float neighbours.
  const double pts[] = {65504.0,
                        65520.0,
                        65536.0,
                        448.0,
                        464.0,
                        480.0,
                        512.0,
                        57344.0,
                        61440.0,
                        65536.0,
                        std::ldexp(255.0, 120),
                        std::ldexp(511.0, 119),
                        std::ldexp(1.0, -14),
                        std::ldexp(1.0, -24),
                        std::ldexp(1.0, -25),
                        std::ldexp(3.0, -26),
                        std::ldexp(1.0, -6),
                        std::ldexp(1.0, -9),
                        std::ldexp(1.0, -10),
                        std::ldexp(3.0, -11),
                        std::ldexp(1.0, -16),
                        std::ldexp(1.0, -17),
                        std::ldexp(3.0, -18),
                        std::ldexp(1.0, -126),
                        std::ldexp(1.0, -133),
                        std::ldexp(1.0, -134),
                        std::ldexp(3.0, -135)};
  for (double p : pts) {
    const float f = static_cast<float>(p);
    ASSERT_EQ(static_cast<double>(f), p);
    push_pm(in, f);
    push_pm(in, std::nextafter(f, inf));
    push_pm(in, std::nextafter(f, -inf));
  }
  check_all_codecs(in, "specials/thresholds");
}

TEST(NumericEncode, TenMillionRandomBitPatterns) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  std::vector<float> in(10'000'000);
  for (float& x : in) x = ffrom(static_cast<std::uint32_t>(rng() >> 32));
  check_all_codecs(in, "random f32 bit patterns", seed);
}

// ------------------------------------------------------------------------------------------------
// Known values (from the format definitions, not from the code under test).
// ------------------------------------------------------------------------------------------------
TEST(NumericKnown, F16) {
  using baracuda::f32_to_f16_bits;
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00u);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xC000u);
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000u);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000u);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFFu);
  EXPECT_EQ(f32_to_f16_bits(std::nextafter(65520.0f, 0.0f)), 0x7BFFu);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00u);  // tie past max: rounds to even = 2^16 = inf
  EXPECT_EQ(f32_to_f16_bits(-65520.0f), 0xFC00u);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7C00u);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400u);  // min normal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001u);  // min subnormal
  EXPECT_EQ(f32_to_f16_bits(-std::ldexp(1.0f, -24)), 0x8001u);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000u);  // tie -> even (0)
  EXPECT_EQ(f32_to_f16_bits(-std::ldexp(1.0f, -25)), 0x8000u);
  EXPECT_EQ(f32_to_f16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001u);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002u);  // 1.5 quanta -> 2 (even)
  EXPECT_EQ(f32_to_f16_bits(ffrom(0x00000001u)), 0x0000u);     // f32 subnormal
  EXPECT_EQ(f32_to_f16_bits(ffrom(0x80000001u)), 0x8000u);
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);      // tie -> even
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02u);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16_bits(ffrom(0x7FC00000u)), 0x7E00u);
  EXPECT_EQ(f32_to_f16_bits(ffrom(0xFF800001u)), 0xFE00u);  // signalling, negative
  EXPECT_EQ(baracuda::f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(baracuda::f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(baracuda::f16_bits_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(baracuda::to_float(baracuda::to_half(-2.0f)), -2.0f);
}

TEST(NumericKnown, BF16) {
  using baracuda::f32_to_bf16_bits;
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80u);
  EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xC000u);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000u);
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x3F808000u)), 0x3F80u);  // tie -> even (down)
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x3F818000u)), 0x3F82u);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x3F808001u)), 0x3F81u);
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x3F807FFFu)), 0x3F80u);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80u);  // overflow -> inf
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x7F7F7FFFu)), 0x7F7Fu);
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0xFF7F8000u)), 0xFF80u);  // tie past max -> -inf
  EXPECT_EQ(f32_to_bf16_bits(std::ldexp(1.0f, -133)), 0x0001u);  // min bf16 subnormal
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x00008000u)), 0x0000u);      // tie -> even (0)
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x00018000u)), 0x0002u);      // tie -> even (up)
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x80000001u)), 0x8000u);
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x7FC00000u)), 0x7FC0u);
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0xFF800001u)), 0xFFC0u);
  EXPECT_EQ(f32_to_bf16_bits(ffrom(0x7F800001u)), 0x7FC0u);  // does not become inf
  EXPECT_EQ(baracuda::bf16_bits_to_f32(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(baracuda::to_float(baracuda::to_bfloat16(3.0f)), 3.0f);
}

TEST(NumericKnown, E4M3) {
  auto pt = [](float x) { return baracuda::f32_to_e4m3_bits(x, Fp8Overflow::kPyTorch); };
  auto sat = [](float x) { return baracuda::f32_to_e4m3_bits(x, Fp8Overflow::kSaturate); };
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(baracuda::f32_to_e4m3_bits(1.0f), 0x38u);  // default mode is kPyTorch
  EXPECT_EQ(pt(-2.0f), 0xC0u);
  EXPECT_EQ(pt(-0.0f), 0x80u);
  EXPECT_EQ(pt(240.0f), 0x77u);
  EXPECT_EQ(pt(256.0f), 0x78u);
  EXPECT_EQ(pt(448.0f), 0x7Eu);
  EXPECT_EQ(pt(464.0f), 0x7Eu);  // tie between 448 and (480): even mantissa 110 -> 448
  EXPECT_EQ(pt(std::nextafter(464.0f, inf)), 0x7Fu);  // rounds past 448 -> NaN (torch)
  EXPECT_EQ(pt(470.0f), 0x7Fu);
  EXPECT_EQ(pt(480.0f), 0x7Fu);
  EXPECT_EQ(pt(-480.0f), 0xFFu);
  EXPECT_EQ(pt(1e30f), 0x7Fu);
  EXPECT_EQ(pt(inf), 0x7Fu);
  EXPECT_EQ(pt(-inf), 0xFFu);
  EXPECT_EQ(sat(464.0f), 0x7Eu);
  EXPECT_EQ(sat(std::nextafter(464.0f, inf)), 0x7Eu);
  EXPECT_EQ(sat(480.0f), 0x7Eu);
  EXPECT_EQ(sat(-480.0f), 0xFEu);
  EXPECT_EQ(sat(inf), 0x7Eu);
  EXPECT_EQ(sat(-inf), 0xFEu);
  EXPECT_EQ(pt(std::ldexp(1.0f, -6)), 0x08u);   // min normal
  EXPECT_EQ(pt(std::ldexp(7.0f, -9)), 0x07u);   // max subnormal
  EXPECT_EQ(pt(std::ldexp(1.0f, -9)), 0x01u);   // min subnormal
  EXPECT_EQ(pt(-std::ldexp(1.0f, -9)), 0x81u);
  EXPECT_EQ(pt(std::ldexp(1.0f, -10)), 0x00u);  // tie -> even (0)
  EXPECT_EQ(pt(-std::ldexp(1.0f, -10)), 0x80u);
  EXPECT_EQ(pt(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01u);
  EXPECT_EQ(pt(std::ldexp(3.0f, -10)), 0x02u);  // 1.5 quanta -> 2
  EXPECT_EQ(pt(std::ldexp(15.0f, -10)), 0x08u);  // 7.5 quanta -> 8 = min normal
  EXPECT_EQ(pt(ffrom(0x00000001u)), 0x00u);
  EXPECT_EQ(pt(ffrom(0x7FC00000u)), 0x7Fu);
  EXPECT_EQ(pt(ffrom(0xFFC00000u)), 0xFFu);
  EXPECT_EQ(sat(ffrom(0xFFC00000u)), 0x7Fu);
  EXPECT_EQ(baracuda::e4m3_bits_to_f32(0x7E), 448.0f);
  EXPECT_EQ(baracuda::e4m3_bits_to_f32(0xFE), -448.0f);
  EXPECT_EQ(baracuda::e4m3_bits_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(baracuda::e4m3_bits_to_f32(0x78), 256.0f);
  EXPECT_TRUE(std::isnan(baracuda::e4m3_bits_to_f32(0x7F)));
  EXPECT_EQ(baracuda::to_e4m3(500.0f, Fp8Overflow::kSaturate).bits, 0x7Eu);
  EXPECT_EQ(baracuda::to_e4m3(500.0f).bits, 0x7Fu);
  EXPECT_EQ(baracuda::to_float(baracuda::to_e4m3(-0.5f)), -0.5f);
}

TEST(NumericKnown, E5M2) {
  auto pt = [](float x) { return baracuda::f32_to_e5m2_bits(x, Fp8Overflow::kPyTorch); };
  auto sat = [](float x) { return baracuda::f32_to_e5m2_bits(x, Fp8Overflow::kSaturate); };
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(baracuda::f32_to_e5m2_bits(1.0f), 0x3Cu);
  EXPECT_EQ(pt(-2.0f), 0xC0u);
  EXPECT_EQ(pt(-0.0f), 0x80u);
  EXPECT_EQ(pt(57344.0f), 0x7Bu);
  EXPECT_EQ(pt(std::nextafter(61440.0f, 0.0f)), 0x7Bu);
  EXPECT_EQ(pt(61440.0f), 0x7Cu);  // tie past max: odd mantissa 11 -> rounds up -> inf
  EXPECT_EQ(pt(-61440.0f), 0xFCu);
  EXPECT_EQ(pt(65536.0f), 0x7Cu);
  EXPECT_EQ(pt(inf), 0x7Cu);
  EXPECT_EQ(pt(-inf), 0xFCu);
  EXPECT_EQ(sat(61440.0f), 0x7Bu);
  EXPECT_EQ(sat(-65536.0f), 0xFBu);
  EXPECT_EQ(sat(inf), 0x7Bu);
  EXPECT_EQ(sat(-inf), 0xFBu);
  EXPECT_EQ(pt(std::ldexp(1.0f, -14)), 0x04u);  // min normal
  EXPECT_EQ(pt(std::ldexp(1.0f, -16)), 0x01u);  // min subnormal
  EXPECT_EQ(pt(std::ldexp(1.0f, -17)), 0x00u);  // tie -> even (0)
  EXPECT_EQ(pt(-std::ldexp(1.0f, -17)), 0x80u);
  EXPECT_EQ(pt(std::nextafter(std::ldexp(1.0f, -17), 1.0f)), 0x01u);
  EXPECT_EQ(pt(std::ldexp(3.0f, -17)), 0x02u);
  // No double rounding: 1.125 is the tie between 1.0 (0x3C) and 1.25 (0x3D). 1.125 + 2^-20 is
  // above it, so it must round up; going through f16 first would give 1.125 -> tie -> 0x3C.
  EXPECT_EQ(pt(1.125f + std::ldexp(1.0f, -20)), 0x3Du);
  EXPECT_EQ(baracuda::f32_to_f16_bits(1.125f + std::ldexp(1.0f, -20)), 0x3C80u);
  EXPECT_EQ(pt(1.125f), 0x3Cu);
  EXPECT_EQ(pt(ffrom(0x7FC00000u)), 0x7Fu);
  EXPECT_EQ(pt(ffrom(0xFF800001u)), 0xFFu);
  EXPECT_EQ(sat(ffrom(0xFF800001u)), 0x7Fu);
  EXPECT_EQ(baracuda::e5m2_bits_to_f32(0x7B), 57344.0f);
  EXPECT_EQ(baracuda::e5m2_bits_to_f32(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(baracuda::e5m2_bits_to_f32(0xFC), -inf);
  EXPECT_EQ(baracuda::to_e5m2(1e9f, Fp8Overflow::kSaturate).bits, 0x7Bu);
  EXPECT_EQ(baracuda::to_e5m2(1e9f).bits, 0x7Cu);
  EXPECT_EQ(baracuda::to_float(baracuda::to_e5m2(-3.0f)), -3.0f);
}

// ------------------------------------------------------------------------------------------------
// f16 against the compiler's _Float16 conversion for all 2^32 floats.
// ------------------------------------------------------------------------------------------------
#if defined(__FLT16_MAX__)
// Counts mismatches between f32_to_f16_bits and the compiler's float -> _Float16 conversion (round
// to nearest even under the default FP environment) over [0, 2^32), reporting the first few.
struct F16SweepResult {
  std::uint64_t failures = 0;
  std::uint64_t nans = 0;
};

// The sweep is stamped out twice by a macro because a target attribute does not reach into
// called functions: the _Float16 cast must sit in the attributed function's own body.
#define BARACUDA_F16_SWEEP_BODY(r)                                                               \
  do {                                                                                           \
    std::uint32_t u = 0;                                                                         \
    do {                                                                                         \
      const float x = ffrom(u);                                                                  \
      const std::uint16_t ours = baracuda::f32_to_f16_bits(x);                                   \
      const std::uint16_t ref = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));          \
      bool ok;                                                                                   \
      if ((u & 0x7FFFFFFFu) > 0x7F800000u) {                                                     \
        /* NaN: the compiler's conversion (libgcc __truncsfhf2 or F16C vcvtps2ph) keeps the top  \
           10 payload bits and sets the quiet bit, so its NaN bits depend on the payload; ours   \
           are the canonical 0x7E00 | sign by design (as torch's fp16_ieee_from_fp32_value).     \
           Only the payload may differ: require a NaN of the same sign from the compiler and     \
           exactly the canonical bits from us. */                                                \
        ++(r).nans;                                                                              \
        ok = (ref & 0x7C00u) == 0x7C00u && (ref & 0x03FFu) != 0 &&                               \
             (ref & 0x8000u) == (ours & 0x8000u) && (ours & 0x7FFFu) == 0x7E00u;                 \
      } else {                                                                                   \
        ok = ours == ref;                                                                        \
      }                                                                                          \
      if (!ok && ++(r).failures <= 8) {                                                          \
        ADD_FAILURE() << "x=" << hex32(u) << " ours=" << hexn(ours, 16)                          \
                      << " _Float16=" << hexn(ref, 16);                                          \
      }                                                                                          \
    } while (++u != 0);                                                                          \
  } while (0)

#if defined(__x86_64__) || defined(__i386__)
// With F16C the compiler emits vcvtps2ph for the cast (about 20x faster than libgcc's soft
// conversion, which takes minutes for 2^32 values). Both are the compiler's own conversion.
__attribute__((target("f16c"))) F16SweepResult f16_sweep_f16c() {
  F16SweepResult r;
  BARACUDA_F16_SWEEP_BODY(r);
  return r;
}
#endif
F16SweepResult f16_sweep_generic() {
  F16SweepResult r;
  BARACUDA_F16_SWEEP_BODY(r);
  return r;
}
#undef BARACUDA_F16_SWEEP_BODY

TEST(NumericExhaustive, F16MatchesCompilerFloat16ForAll2Pow32) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  F16SweepResult r;
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("f16c")) {
    r = f16_sweep_f16c();
  } else {
    std::printf("note: CPU lacks F16C; using the (slow) libgcc _Float16 conversion\n");
    r = f16_sweep_generic();
  }
#else
  r = f16_sweep_generic();
#endif
  EXPECT_EQ(r.failures, 0u);
  EXPECT_EQ(r.nans, 2ull * (0x7FFFFFFFull - 0x7F800000ull));  // every NaN pattern was visited
}
#else
TEST(NumericExhaustive, F16MatchesCompilerFloat16ForAll2Pow32) {
  GTEST_SKIP() << "this compiler has no _Float16 (__FLT16_MAX__ undefined); the 2^32 sweep needs it";
}
#endif

}  // namespace
