// pack / unpack of s4, u4 (two per byte, low nibble first) and bit (eight per byte, LSB
// first); the layout rules are in include/baracuda/ops/pack.hpp.
//  * pack_kernel: one thread per packed byte. It gathers the byte's 2 or 8 elements from the
//    unpacked input (any strides), saturates them to the packed range, writes 0 for padding
//    elements (c >= n inside a row, or past the layout's last element) and stores the byte:
//    whole-byte stores, so neighbouring threads never share a byte and no atomics are needed.
//  * unpack_kernel: one thread per unpacked element: load its byte, shift, mask, sign-extend
//    s4, store.
// 64-bit index math throughout (these are cheap, rarely hot conversions).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "elementwise/pack_params.hpp"

namespace baracuda::kernels {

inline constexpr int kPackBlock = 256;

__device__ __forceinline__ std::int64_t unpacked_offset(const elementwise::PackParams& p, std::int64_t linear) {
  std::int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const std::int64_t i = linear % p.shape[d];
    linear /= p.shape[d];
    off += i * p.strides[d];
  }
  return off;
}

// Packed code of one unpacked value (saturated to the packed range).
template <DType Packed>
__device__ __forceinline__ std::uint32_t pack_code(const void* in, std::int64_t off) {
  if constexpr (Packed == DType::kS4) {
    const int v = static_cast<const std::int8_t*>(in)[off];
    return static_cast<std::uint32_t>(v < -8 ? -8 : v > 7 ? 7 : v) & 0xFu;
  } else if constexpr (Packed == DType::kU4) {
    const unsigned v = static_cast<const std::uint8_t*>(in)[off];
    return v > 15u ? 15u : v;
  } else {
    return static_cast<const std::uint8_t*>(in)[off] != 0 ? 1u : 0u;
  }
}

template <DType Packed>
__global__ void __launch_bounds__(kPackBlock) pack_kernel(elementwise::PackParams p) {
  constexpr int kBits = Packed == DType::kBit ? 1 : 4;
  constexpr int kPer = 8 / kBits;
  const std::int64_t byte = static_cast<std::int64_t>(blockIdx.x) * kPackBlock + threadIdx.x;
  if (byte >= p.bytes) return;
  std::uint32_t word = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const std::int64_t e = byte * kPer + k;  // packed element
    if (e >= p.span) break;
    const std::int64_t r = e / p.row_stride, c = e - r * p.row_stride;
    if (c < p.n) word |= pack_code<Packed>(p.in, unpacked_offset(p, r * p.n + c)) << (k * kBits);
  }
  static_cast<std::uint8_t*>(p.out)[byte] = static_cast<std::uint8_t>(word);
}

template <DType Packed>
__global__ void __launch_bounds__(kPackBlock) unpack_kernel(elementwise::PackParams p) {
  constexpr int kBits = Packed == DType::kBit ? 1 : 4;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kPackBlock + threadIdx.x;
  if (i >= p.numel) return;
  const std::int64_t r = i / p.n, c = i - r * p.n;
  const std::int64_t e = r * p.row_stride + c;
  const std::uint32_t byte = static_cast<const std::uint8_t*>(p.in)[e * kBits / 8];
  const std::uint32_t code = (byte >> ((e * kBits) % 8)) & ((1u << kBits) - 1);
  std::uint8_t v;
  if constexpr (Packed == DType::kS4) v = static_cast<std::uint8_t>(code >= 8 ? code | 0xF0u : code);  // sign-extend
  else v = static_cast<std::uint8_t>(code);
  static_cast<std::uint8_t*>(p.out)[unpacked_offset(p, i)] = v;
}

inline Status pack_launch_status(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string(what) + " launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                  static_cast<int>(e));
  return Status::ok();
}

}  // namespace baracuda::kernels
