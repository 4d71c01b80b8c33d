// CPU oracle of CastPlan (see cast.hpp). Written from the rules, independently of the
// kernels: integers round to narrow floats through long double arithmetic, the kernels in
// integer arithmetic.
#include "baracuda/reference/cast.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace baracuda::reference {

static_assert(std::numeric_limits<long double>::digits >= 64, "the cast oracle needs a 64-bit long double mantissa");

std::int64_t cast_float_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return std::numeric_limits<std::int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(std::trunc(v));
}

std::int64_t cast_wrap_int(DType t, std::int64_t v) {
  switch (t) {
    case DType::kI64: return v;
    case DType::kI32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case DType::kI16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(v));
    case DType::kI8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(v));
    case DType::kU8: return static_cast<std::uint8_t>(v);
    case DType::kBool: return v != 0;
    default: return 0;
  }
}

float cast_int_to_float_rounded(std::int64_t v, int bits) {
  if (v == 0) return 0.0f;
  int e = 0;
  const long double f = std::frexp(static_cast<long double>(v), &e);  // exact; |f| in [0.5, 1)
  const long double m = std::nearbyint(std::ldexp(f, bits));           // default mode: nearest even
  return static_cast<float>(std::ldexp(m, e - bits));                  // <= bits significant bits: exact
}

namespace {

bool is_cast_dtype(DType t) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kE4M3: case DType::kE5M2:
    case DType::kI64: case DType::kI32: case DType::kI16: case DType::kI8: case DType::kU8: case DType::kBool:
      return true;
    default:
      return false;
  }
}

int significand_bits(DType t) {
  switch (t) {
    case DType::kF32: return 24;
    case DType::kF16: return 11;
    case DType::kBF16: return 8;
    case DType::kE4M3: return 4;
    case DType::kE5M2: return 3;
    default: return 53;
  }
}

void store_int(DType t, void* dst, std::int64_t off, std::int64_t v) {
  const std::int64_t w = cast_wrap_int(t, v);
  const auto size = static_cast<std::size_t>(dtype_size(t));
  char* p = static_cast<char*>(dst) + off * static_cast<std::int64_t>(size);
  switch (t) {
    case DType::kI64: std::memcpy(p, &w, 8); break;
    case DType::kI32: { auto x = static_cast<std::int32_t>(w); std::memcpy(p, &x, 4); break; }
    case DType::kI16: { auto x = static_cast<std::int16_t>(w); std::memcpy(p, &x, 2); break; }
    default: { auto x = static_cast<std::uint8_t>(w); std::memcpy(p, &x, 1); break; }  // i8, u8, bool
  }
}

}  // namespace

void cast_element(DType from, const void* src, std::int64_t src_off, DType to, void* dst, std::int64_t dst_off,
                  Fp8Overflow mode) {
  const bool from_float = dtype_is_floating(from), to_float = dtype_is_floating(to);
  if (to == DType::kBool) {
    const bool nonzero = from_float ? load_as_double(from, src, src_off) != 0.0  // NaN != 0
                                    : load_as_int64(from, src, src_off) != 0;
    store_int(to, dst, dst_off, nonzero);
  } else if (!to_float) {
    std::int64_t v = from_float ? cast_float_to_int64(load_as_double(from, src, src_off))
                                : load_as_int64(from, src, src_off);
    if (from_float && to == DType::kI32) v = std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX);  // saturates
    store_int(to, dst, dst_off, v);
  } else if (from_float) {
    store_from_double(to, dst, dst_off, load_as_double(from, src, src_off), mode);  // narrow targets via f32
  } else if (to == DType::kF64) {
    store_from_double(to, dst, dst_off, static_cast<double>(load_as_int64(from, src, src_off)), mode);
  } else {
    const float r = cast_int_to_float_rounded(load_as_int64(from, src, src_off), significand_bits(to));
    store_from_double(to, dst, dst_off, r, mode);  // r is exact in f32; the store only decides overflow
  }
}

Expected<HostTensor> cast_exact(const CastDescriptor& d, const HostTensor& x) {
  for (auto [t, field] : {std::pair{d.x.dtype, "x"}, std::pair{d.y.dtype, "y"}})
    if (!is_cast_dtype(t))
      return Status(Code::kInvalidArgument,
                    std::string("reference: cast does not take ") + field + ".dtype = " + std::string(dtype_name(t)));
  auto view = broadcast_to(x.layout(), d.y.rank, d.y.shape, "x");
  if (!view) return view.error();
  HostTensor y(d.y);
  for (std::int64_t i = 0; i < d.y.numel(); ++i)
    cast_element(d.x.dtype, x.data(), offset_of(view.value(), i), d.y.dtype, y.data(), offset_of(d.y, i),
                 d.fp8_overflow);
  return y;
}

}  // namespace baracuda::reference
