// Runtime DType -> compile-time C++ type, for host code (references, tests, tools).
//
//   dispatch_float(dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... });
//
// Each dispatcher covers one dtype group and returns an error Status (naming the dtype)
// for dtypes outside it; the callable's return type must be Status.
#pragma once

#include <complex>
#include <cstdint>
#include <string>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/numeric.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

template <class T>
struct TypeTag {
  using type = T;
};

// Host storage type for each byte-addressable dtype.
template <DType D> struct HostType;
template <> struct HostType<DType::kF64> { using type = double; };
template <> struct HostType<DType::kF32> { using type = float; };
template <> struct HostType<DType::kF16> { using type = half_t; };
template <> struct HostType<DType::kBF16> { using type = bfloat16_t; };
template <> struct HostType<DType::kE4M3> { using type = float8_e4m3_t; };
template <> struct HostType<DType::kE5M2> { using type = float8_e5m2_t; };
template <> struct HostType<DType::kI64> { using type = std::int64_t; };
template <> struct HostType<DType::kI32> { using type = std::int32_t; };
template <> struct HostType<DType::kI16> { using type = std::int16_t; };
template <> struct HostType<DType::kI8> { using type = std::int8_t; };
template <> struct HostType<DType::kU8> { using type = std::uint8_t; };
template <> struct HostType<DType::kU32> { using type = std::uint32_t; };
template <> struct HostType<DType::kBool> { using type = bool; };
template <> struct HostType<DType::kC64> { using type = std::complex<float>; };
template <> struct HostType<DType::kC128> { using type = std::complex<double>; };

namespace detail {
Status dispatch_unsupported(const char* group, DType t);
}

// f64, f32, f16, bf16 (the dtypes elementwise math runs on).
template <class F>
Status dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::kF64: return f(TypeTag<double>{});
    case DType::kF32: return f(TypeTag<float>{});
    case DType::kF16: return f(TypeTag<half_t>{});
    case DType::kBF16: return f(TypeTag<bfloat16_t>{});
    default: return detail::dispatch_unsupported("floating (f64, f32, f16, bf16)", t);
  }
}

// The float group plus both fp8 formats.
template <class F>
Status dispatch_float_fp8(DType t, F&& f) {
  switch (t) {
    case DType::kE4M3: return f(TypeTag<float8_e4m3_t>{});
    case DType::kE5M2: return f(TypeTag<float8_e5m2_t>{});
    default: return dispatch_float(t, std::forward<F>(f));
  }
}

// Byte-addressable integer dtypes and bool.
template <class F>
Status dispatch_integer(DType t, F&& f) {
  switch (t) {
    case DType::kI64: return f(TypeTag<std::int64_t>{});
    case DType::kI32: return f(TypeTag<std::int32_t>{});
    case DType::kI16: return f(TypeTag<std::int16_t>{});
    case DType::kI8: return f(TypeTag<std::int8_t>{});
    case DType::kU8: return f(TypeTag<std::uint8_t>{});
    case DType::kU32: return f(TypeTag<std::uint32_t>{});
    case DType::kBool: return f(TypeTag<bool>{});
    default: return detail::dispatch_unsupported("integer", t);
  }
}

}  // namespace baracuda
