// CastPlan on the CPU: the oracle's conversion rules (docs/semantics.md, "Cast") on known
// values, single rounding of integers to narrow floats, and select-time acceptance of every
// dtype pair and refusals that name the field and value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/cast.hpp"

namespace baracuda::reference {
namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

const DType kAll[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2,
                      DType::kI64, DType::kI32, DType::kI16, DType::kI8,   DType::kU8,   DType::kBool};

// One element of `from` holding v (floats: rounded to the dtype; integers: v's int64).
struct Scalar {
  alignas(8) unsigned char bytes[8] = {};
};
Scalar make_float(DType t, double v) {
  Scalar s;
  store_from_double(t, s.bytes, 0, v);
  return s;
}
Scalar make_int(DType t, std::int64_t v) {
  Scalar s;
  std::memcpy(s.bytes, &v, dtype_size(t));  // little endian: the low bytes
  return s;
}
double cast_f(DType from, const Scalar& x, DType to, Fp8Overflow mode = Fp8Overflow::kPyTorch) {
  Scalar y;
  cast_element(from, x.bytes, 0, to, y.bytes, 0, mode);
  return load_as_double(to, y.bytes, 0);
}
std::int64_t cast_i(DType from, const Scalar& x, DType to) {
  Scalar y;
  cast_element(from, x.bytes, 0, to, y.bytes, 0, Fp8Overflow::kPyTorch);
  return load_as_int64(to, y.bytes, 0);
}

TEST(CastRules, FloatToInt64TruncatesAndSaturates) {
  EXPECT_EQ(cast_float_to_int64(2.9), 2);
  EXPECT_EQ(cast_float_to_int64(-2.9), -2);
  EXPECT_EQ(cast_float_to_int64(-0.5), 0);
  EXPECT_EQ(cast_float_to_int64(kNaN), 0);
  EXPECT_EQ(cast_float_to_int64(kInf), kI64Max);
  EXPECT_EQ(cast_float_to_int64(-kInf), kI64Min);
  EXPECT_EQ(cast_float_to_int64(1e19), kI64Max);
  EXPECT_EQ(cast_float_to_int64(9223372036854775808.0), kI64Max);  // 2^63
  EXPECT_EQ(cast_float_to_int64(-9223372036854775808.0), kI64Min);  // -2^63 is in range
  EXPECT_EQ(cast_float_to_int64(9223372036854774784.0), 9223372036854774784);  // largest double < 2^63
}

TEST(CastRules, IntegersWrap) {
  EXPECT_EQ(cast_wrap_int(DType::kI8, 300), 44);
  EXPECT_EQ(cast_wrap_int(DType::kI8, 128), -128);
  EXPECT_EQ(cast_wrap_int(DType::kU8, -1), 255);
  EXPECT_EQ(cast_wrap_int(DType::kU8, 256 + 7), 7);
  EXPECT_EQ(cast_wrap_int(DType::kI16, 65536 + 5), 5);
  EXPECT_EQ(cast_wrap_int(DType::kI16, 40000), 40000 - 65536);
  EXPECT_EQ(cast_wrap_int(DType::kI32, std::int64_t{1} << 31), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(cast_wrap_int(DType::kI32, kI64Max), -1);
  EXPECT_EQ(cast_wrap_int(DType::kBool, 256), 1);  // bool is x != 0, not the low bits
  EXPECT_EQ(cast_i(DType::kI64, make_int(DType::kI64, -129), DType::kI8), 127);
  EXPECT_EQ(cast_i(DType::kU8, make_int(DType::kU8, 200), DType::kI8), -56);
  EXPECT_EQ(cast_i(DType::kI8, make_int(DType::kI8, -1), DType::kU8), 255);
  EXPECT_EQ(cast_i(DType::kI8, make_int(DType::kI8, -1), DType::kI64), -1);  // sign-extends
  EXPECT_EQ(cast_i(DType::kU8, make_int(DType::kU8, 255), DType::kI32), 255);
}

TEST(CastRules, FloatToIntegerPerTarget) {
  // i64 / i32 saturate; i16 / i8 / u8 wrap the int64 value (torch: -1.0 -> u8 255, 300 -> i8 44).
  EXPECT_EQ(cast_i(DType::kF32, make_float(DType::kF32, -1.5), DType::kU8), 255);
  EXPECT_EQ(cast_i(DType::kF32, make_float(DType::kF32, 300.7), DType::kI8), 44);
  EXPECT_EQ(cast_i(DType::kF32, make_float(DType::kF32, -300.7), DType::kI8), -44);
  EXPECT_EQ(cast_i(DType::kF64, make_float(DType::kF64, 70000.9), DType::kI16), 70000 - 65536);
  EXPECT_EQ(cast_i(DType::kF32, make_float(DType::kF32, 3e9), DType::kI32), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(cast_i(DType::kF32, make_float(DType::kF32, -3e9), DType::kI32), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(cast_i(DType::kF16, make_float(DType::kF16, kInf), DType::kI32), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(cast_i(DType::kF16, make_float(DType::kF16, kInf), DType::kI64), kI64Max);
  EXPECT_EQ(cast_i(DType::kF16, make_float(DType::kF16, kInf), DType::kI8), -1);  // low byte of INT64_MAX
  EXPECT_EQ(cast_i(DType::kF16, make_float(DType::kF16, -kInf), DType::kU8), 0);  // low byte of INT64_MIN
  for (DType from : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2})
    for (DType to : {DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8}) {
      EXPECT_EQ(cast_i(from, make_float(from, kNaN), to), 0) << dtype_name(from) << " -> " << dtype_name(to);
      EXPECT_EQ(cast_i(from, make_float(from, -0.0), to), 0);
      EXPECT_EQ(cast_i(from, make_float(from, -3.5), to), to == DType::kU8 ? 253 : -3);  // exact in every format
      EXPECT_EQ(cast_i(from, make_float(from, 0.875), to), 0);
    }
  EXPECT_EQ(cast_i(DType::kF64, make_float(DType::kF64, 9007199254740993.0), DType::kI64), 9007199254740992);
  EXPECT_EQ(cast_i(DType::kF64, make_float(DType::kF64, -4611686018427387904.0), DType::kI64), -4611686018427387904);
}

TEST(CastRules, BoolIsNonZero) {
  for (DType from : kAll) {
    const bool fl = dtype_is_floating(from);
    auto x = [&](double v) { return fl ? make_float(from, v) : make_int(from, static_cast<std::int64_t>(v)); };
    EXPECT_EQ(cast_i(from, x(0), DType::kBool), 0) << dtype_name(from);
    EXPECT_EQ(cast_i(from, x(1), DType::kBool), 1) << dtype_name(from);
    if (from != DType::kBool && from != DType::kU8) EXPECT_EQ(cast_i(from, x(-1), DType::kBool), 1);
    if (fl) {
      EXPECT_EQ(cast_i(from, x(-0.0), DType::kBool), 0);
      EXPECT_EQ(cast_i(from, x(kNaN), DType::kBool), 1);
      EXPECT_EQ(cast_i(from, x(0.25), DType::kBool), 1);  // not truncated first
    }
  }
  EXPECT_EQ(cast_i(DType::kI32, make_int(DType::kI32, 256), DType::kBool), 1);
  for (DType to : kAll) {
    EXPECT_EQ(cast_f(DType::kBool, make_int(DType::kBool, 1), to), 1.0) << dtype_name(to);
    EXPECT_EQ(cast_f(DType::kBool, make_int(DType::kBool, 0), to), 0.0) << dtype_name(to);
    EXPECT_FALSE(std::signbit(cast_f(DType::kBool, make_int(DType::kBool, 0), to)));
  }
}

TEST(CastRules, IntegersToFloatsRoundOnce) {
  const auto i64 = [](std::int64_t v) { return make_int(DType::kI64, v); };
  const auto i32 = [](std::int64_t v) { return make_int(DType::kI32, v); };
  // 2^60 + 2^36 + 1: just above the f32 tie at 2^60 + 2^36; through f64 (2^60 + 2^36) it would tie to even.
  const std::int64_t p60 = std::int64_t{1} << 60;
  EXPECT_EQ(cast_f(DType::kI64, i64(p60 + (std::int64_t{1} << 36) + 1), DType::kF32), std::ldexp(1.0, 60) + std::ldexp(1.0, 37));
  EXPECT_EQ(cast_f(DType::kI64, i64(p60 + (std::int64_t{1} << 36)), DType::kF32), std::ldexp(1.0, 60));  // tie: even
  // 2^30 + 2^22 + 1 -> bf16 2^30 + 2^23 (through f32 the +1 is lost and the tie goes to 2^30).
  const std::int64_t p30 = std::int64_t{1} << 30;
  EXPECT_EQ(cast_f(DType::kI32, i32(p30 + (1 << 22) + 1), DType::kBF16), std::ldexp(1.0, 30) + std::ldexp(1.0, 23));
  EXPECT_EQ(cast_f(DType::kI32, i32(p30 + (1 << 22)), DType::kBF16), std::ldexp(1.0, 30));
  EXPECT_EQ(cast_f(DType::kI32, i32(p30 + 3 * (1 << 22)), DType::kBF16), std::ldexp(1.0, 30) + std::ldexp(1.0, 24));
  EXPECT_EQ(cast_f(DType::kI64, i64(p60 + (std::int64_t{1} << 52) + 1), DType::kBF16), std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
  EXPECT_EQ(cast_f(DType::kI64, i64(kI64Max), DType::kF32), std::ldexp(1.0, 63));
  EXPECT_EQ(cast_f(DType::kI64, i64(kI64Min), DType::kBF16), -std::ldexp(1.0, 63));
  EXPECT_EQ(cast_f(DType::kI64, i64(kI64Max), DType::kF64), std::ldexp(1.0, 63));
  EXPECT_EQ(cast_f(DType::kI64, i64((std::int64_t{1} << 53) + 1), DType::kF64), std::ldexp(1.0, 53));  // tie: even
  EXPECT_EQ(cast_f(DType::kI64, i64((std::int64_t{1} << 53) + 3), DType::kF64), std::ldexp(1.0, 53) + 4);
  // Overflow after rounding: f16 65519 -> 65504, 65520 -> inf; e4m3 464 -> 448, 465 -> NaN / 448.
  EXPECT_EQ(cast_f(DType::kI32, i32(65519), DType::kF16), 65504.0);
  EXPECT_EQ(cast_f(DType::kI32, i32(65520), DType::kF16), kInf);
  EXPECT_EQ(cast_f(DType::kI64, i64(-kI64Max), DType::kF16), -kInf);
  EXPECT_EQ(cast_f(DType::kI32, i32(464), DType::kE4M3), 448.0);
  EXPECT_TRUE(std::isnan(cast_f(DType::kI32, i32(465), DType::kE4M3)));
  EXPECT_EQ(cast_f(DType::kI32, i32(465), DType::kE4M3, Fp8Overflow::kSaturate), 448.0);
  EXPECT_EQ(cast_f(DType::kI64, i64(-kI64Max), DType::kE5M2), -kInf);
  EXPECT_EQ(cast_f(DType::kI64, i64(-kI64Max), DType::kE5M2, Fp8Overflow::kSaturate), -57344.0);
  EXPECT_EQ(cast_f(DType::kI16, make_int(DType::kI16, -32768), DType::kBF16), -32768.0);
  EXPECT_EQ(cast_f(DType::kU8, make_int(DType::kU8, 255), DType::kE4M3), 256.0);  // 255 -> 256 (3 mantissa bits)
}

// An independent single rounding in integers (different from the long double oracle).
double round_bits_int(std::int64_t v, int bits) {
  const bool neg = v < 0;
  std::uint64_t m = neg ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  int width = 0;
  while (width < 64 && (m >> width) != 0) ++width;
  if (width <= bits) return neg ? -static_cast<double>(m) : static_cast<double>(m);
  const int shift = width - bits;
  std::uint64_t q = m >> shift, rem = m - (q << shift), half = std::uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  const double r = std::ldexp(static_cast<double>(q), shift);
  return neg ? -r : r;
}

TEST(CastRules, IntToFloatRoundingMatchesIndependentForms) {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    std::int64_t v = static_cast<std::int64_t>(rng());
    v >>= rng() % 64;  // every magnitude
    // the host's own i64 -> f32 conversion is one rounding (cvtsi2ss)
    ASSERT_EQ(cast_int_to_float_rounded(v, 24), static_cast<float>(v)) << v;
    for (int bits : {11, 8, 4, 3}) ASSERT_EQ(cast_int_to_float_rounded(v, bits), round_bits_int(v, bits)) << v << " " << bits;
  }
  for (std::int64_t v : {kI64Min, kI64Max, kI64Min + 1, std::int64_t{0}, std::int64_t{-1}})
    for (int bits : {24, 11, 8, 4, 3}) EXPECT_EQ(cast_int_to_float_rounded(v, bits), round_bits_int(v, bits)) << v;
}

TEST(CastRules, FloatToFloatUnchanged) {
  // f64 -> narrow formats round through f32 (as PyTorch and the existing map kernels do).
  EXPECT_EQ(cast_f(DType::kF64, make_float(DType::kF64, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), DType::kF16),
            1.0);  // via f32 the tie survives and goes to even (directly it would round up)
  EXPECT_EQ(cast_f(DType::kF32, make_float(DType::kF32, 480.0), DType::kE4M3, Fp8Overflow::kSaturate), 448.0);
  EXPECT_TRUE(std::isnan(cast_f(DType::kF32, make_float(DType::kF32, 480.0), DType::kE4M3)));
  EXPECT_EQ(cast_f(DType::kF16, make_float(DType::kF16, -kInf), DType::kF64), -kInf);
  EXPECT_TRUE(std::signbit(cast_f(DType::kBF16, make_float(DType::kBF16, -0.0), DType::kF32)));
}

TEST(CastRules, CastExactBroadcastsAndRefuses) {
  auto x = TensorLayout::contiguous(DType::kI64, {3});
  auto y = TensorLayout::contiguous(DType::kI8, {2, 3});
  HostTensor hx(x);
  const std::int64_t vals[] = {kI64Max, -129, 256};
  std::memcpy(hx.data(), vals, sizeof vals);
  auto hy = cast_exact(CastDescriptor{x, y}, hx);
  ASSERT_TRUE(hy.has_value()) << hy.error().to_string();
  const std::int64_t want[] = {-1, 127, 0, -1, 127, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(load_as_int64(DType::kI8, hy->data(), i), want[i]);
  auto bad = cast_exact(CastDescriptor{x, TensorLayout::contiguous(DType::kU32, {3})}, hx);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("y.dtype = u32"), std::string::npos) << bad.error().to_string();
}

// ------------------------------------------------------------------ plan selection (no GPU)
DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

TEST(CastPlanSelect, EveryPairSelectsOnEveryPath) {
  for (DType from : kAll)
    for (DType to : kAll) {
      auto x = TensorLayout::contiguous(from, {64, 256});
      auto y = TensorLayout::contiguous(to, {64, 256});
      auto plan = CastPlan::select_for_caps(caps90(), CastDescriptor{x, y});
      ASSERT_TRUE(plan.has_value()) << dtype_name(from) << " -> " << dtype_name(to) << ": " << plan.error().to_string();
      EXPECT_EQ(plan->sku().impl, "vec16_contig");
      EXPECT_EQ(plan->sku().in, from);
      EXPECT_EQ(plan->sku().out, to);
      auto t = CastPlan::select_for_caps(caps90(), CastDescriptor{TensorLayout::strided(from, {64, 256}, {1, 64}), y});
      ASSERT_TRUE(t.has_value());
      EXPECT_EQ(t->sku().impl, "strided_i32");
    }
  auto i32f32 = CastPlan::select_for_caps(caps90(), CastDescriptor{TensorLayout::contiguous(DType::kI32, {8}),
                                                                   TensorLayout::contiguous(DType::kF32, {8})});
  ASSERT_TRUE(i32f32.has_value());
  EXPECT_EQ(i32f32->sku().name(), "cast.fwd.vec16_contig[i32,i32,f32].sm80+");
}

Status select_error(const CastDescriptor& d) {
  auto plan = CastPlan::select_for_caps(caps90(), d);
  return plan ? Status::ok() : plan.error();
}

TEST(CastPlanSelect, RefusalsNameFieldAndValue) {
  auto ok = TensorLayout::contiguous(DType::kI32, {4, 8});
  struct Bad {
    CastDescriptor d;
    const char* needle;
  };
  const Bad bad[] = {
      {{TensorLayout::contiguous(DType::kU32, {4, 8}), ok}, "x.dtype = u32"},
      {{ok, TensorLayout::contiguous(DType::kC64, {4, 8})}, "y.dtype = c64"},
      {{TensorLayout::contiguous(DType::kS4, {4, 8}), ok}, "x.dtype = s4"},
      {{ok, TensorLayout::contiguous(DType::kBool, {4, 9})}, "x"},
      {{ok, ok, static_cast<Fp8Overflow>(7)}, "fp8_overflow = 7"},
      {{ok, TensorLayout::strided(DType::kF32, {4, 8}, {0, 1})}, "y = "},
  };
  for (const auto& b : bad) {
    Status st = select_error(b.d);
    EXPECT_FALSE(st.is_ok()) << b.d.to_string();
    EXPECT_NE(st.message().find(b.needle), std::string::npos) << st.to_string();
  }
}

}  // namespace
}  // namespace baracuda::reference
