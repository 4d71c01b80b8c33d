// Device element types and their compute types.
//
// Storage types are the CUDA ones (float, double, __half, __nv_bfloat16, __nv_fp8_e4m3,
// __nv_fp8_e5m2). Arithmetic runs in Compute<T>: float for every type of 32 bits or less,
// double for double. load_compute / store_compute convert with round-to-nearest-even;
// fp8 stores take the overflow mode (kPyTorch: e4m3 overflow -> NaN, e5m2 -> inf;
// kSaturate: clamp to the largest finite value), see docs/numerics-conversions.md.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

namespace baracuda::kernels {

template <class T>
struct ComputeOf {
  using type = float;
};
template <>
struct ComputeOf<double> {
  using type = double;
};
template <class T>
using Compute = typename ComputeOf<T>::type;

__device__ __forceinline__ float to_compute(float x) { return x; }
__device__ __forceinline__ double to_compute(double x) { return x; }
__device__ __forceinline__ float to_compute(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_compute(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_compute(__nv_fp8_e4m3 x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_compute(__nv_fp8_e5m2 x) { return static_cast<float>(x); }

// Integers and bool compute in their own type (integer kinds, logical_not).
template <class T>
  requires std::is_integral_v<T>
__device__ __forceinline__ T to_compute(T x) {
  return x;
}

// Overflow mode for fp8 stores (values of baracuda::Fp8Overflow).
enum Fp8Mode : int { kFp8PyTorch = 0, kFp8Saturate = 1 };

template <class T>
struct FromCompute;
template <>
struct FromCompute<float> {
  template <class C>
  __device__ __forceinline__ static float cvt(C x, int) { return static_cast<float>(x); }
};
template <>
struct FromCompute<double> {
  template <class C>
  __device__ __forceinline__ static double cvt(C x, int) { return static_cast<double>(x); }
};
template <>
struct FromCompute<__half> {
  __device__ __forceinline__ static __half cvt(float x, int) { return __float2half_rn(x); }
  __device__ __forceinline__ static __half cvt(double x, int) { return __double2half(x); }
};
template <>
struct FromCompute<__nv_bfloat16> {
  __device__ __forceinline__ static __nv_bfloat16 cvt(float x, int) { return __float2bfloat16_rn(x); }
  __device__ __forceinline__ static __nv_bfloat16 cvt(double x, int) { return __double2bfloat16(x); }
};
template <>
struct FromCompute<__nv_fp8_e4m3> {
  __device__ __forceinline__ static __nv_fp8_e4m3 cvt(float x, int mode) {
    __nv_fp8_e4m3 r;
    r.__x = __nv_cvt_float_to_fp8(x, mode == kFp8Saturate ? __NV_SATFINITE : __NV_NOSAT, __NV_E4M3);
    return r;
  }
};
template <>
struct FromCompute<__nv_fp8_e5m2> {
  __device__ __forceinline__ static __nv_fp8_e5m2 cvt(float x, int mode) {
    __nv_fp8_e5m2 r;
    r.__x = __nv_cvt_float_to_fp8(x, mode == kFp8Saturate ? __NV_SATFINITE : __NV_NOSAT, __NV_E5M2);
    return r;
  }
};

// Integer outputs take the value (integer kinds compute in the integer type); bool is x != 0.
template <class T>
  requires std::is_integral_v<T>
struct FromCompute<T> {
  template <class C>
  __device__ __forceinline__ static T cvt(C x, int) {
    if constexpr (std::is_same_v<T, bool>) return x != C(0);
    else return static_cast<T>(x);
  }
};

template <class T, class C>
__device__ __forceinline__ T from_compute(C x, int fp8_mode = kFp8PyTorch) {
  return FromCompute<T>::cvt(x, fp8_mode);
}

}  // namespace baracuda::kernels

#include "baracuda/core/dtype.hpp"

namespace baracuda::kernels {
// DType -> CUDA storage type.
template <DType D> struct DeviceTypeOf;
template <> struct DeviceTypeOf<DType::kF64> { using type = double; };
template <> struct DeviceTypeOf<DType::kF32> { using type = float; };
template <> struct DeviceTypeOf<DType::kF16> { using type = __half; };
template <> struct DeviceTypeOf<DType::kBF16> { using type = __nv_bfloat16; };
template <> struct DeviceTypeOf<DType::kE4M3> { using type = __nv_fp8_e4m3; };
template <> struct DeviceTypeOf<DType::kE5M2> { using type = __nv_fp8_e5m2; };
template <> struct DeviceTypeOf<DType::kI64> { using type = std::int64_t; };
template <> struct DeviceTypeOf<DType::kI32> { using type = std::int32_t; };
template <> struct DeviceTypeOf<DType::kI16> { using type = std::int16_t; };
template <> struct DeviceTypeOf<DType::kI8> { using type = std::int8_t; };
template <> struct DeviceTypeOf<DType::kU8> { using type = std::uint8_t; };
template <> struct DeviceTypeOf<DType::kBool> { using type = bool; };
template <DType D>
using DeviceType = typename DeviceTypeOf<D>::type;
}  // namespace baracuda::kernels
