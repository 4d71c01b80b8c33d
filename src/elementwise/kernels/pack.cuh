// pack / unpack of s4, u4 (two per byte, low nibble first) and bit (eight per byte, LSB
// first); the layout rules are in include/baracuda/ops/pack.hpp.
//
// The per-element rules live in two device functions used by every kernel below:
// pack_code (saturate one i8 / u8 / bool byte to its 4- or 1-bit code) and unpack_value
// (sign-extend an s4 code, pass u4 / bit codes through).
//
// Two paths:
//  * bytes_i64 (pack_kernel / unpack_kernel): any layout the plans accept. pack: one thread
//    per packed byte; it gathers the byte's 2 or 8 elements from the unpacked input (any
//    strides), writes 0 for padding elements (c >= n inside a row, or past the layout's last
//    element) and stores the whole byte, so neighbouring threads never share a byte and no
//    atomics are needed. unpack: one thread per element (load its byte, shift, mask,
//    convert, store). 64-bit index math with divisions: general but slow (~6% of copy).
//  * vec16_contig (pack_contig_kernel / unpack_contig_kernel): both operands dense
//    row-major without row padding and 16-byte aligned, so plain element i is packed
//    element i and the data are two flat byte streams. The unit of work is one 16-byte
//    plain vector (16 elements) <-> its 8 packed bytes (s4 / u4) or 2 (bit). A thread does
//    kPackUnroll units kPackBlock units apart, so every load and store instruction of a
//    warp covers one contiguous span (whole 32-byte sectors on both sides); all loads are
//    issued before any store. Full tiles run unguarded; the last block runs its tile
//    guarded and then the tail (the < 16 elements after the last whole unit) through the
//    bytes_i64 per-byte / per-element functions, which write the last byte's padding
//    nibble / bits as 0 exactly like the general path. 64-bit unit indices.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "common/vec_io.cuh"
#include "elementwise/pack_params.hpp"

namespace baracuda::kernels {

inline constexpr int kPackBlock = 256;
inline constexpr int kPackUnroll = 4;  // 16-byte units per thread in the contiguous kernels

template <DType Packed>
inline constexpr int kPackedBits = Packed == DType::kBit ? 1 : 4;

// ---- per-element rules (shared by both paths)

// Packed code of one unpacked byte, saturated to the packed range.
template <DType Packed>
__device__ __forceinline__ std::uint32_t pack_code(std::uint32_t raw) {
  if constexpr (Packed == DType::kS4) {
    const int v = static_cast<std::int8_t>(raw);
    return static_cast<std::uint32_t>(v < -8 ? -8 : v > 7 ? 7 : v) & 0xFu;
  } else if constexpr (Packed == DType::kU4) {
    return raw > 15u ? 15u : raw;
  } else {
    return raw != 0 ? 1u : 0u;
  }
}

// Unpacked byte of one packed code (s4 sign-extends: 0xF -> 0xFF = -1).
template <DType Packed>
__device__ __forceinline__ std::uint32_t unpack_value(std::uint32_t code) {
  if constexpr (Packed == DType::kS4) return code >= 8 ? code | 0xF0u : code;
  else return code;
}

// ---- general path (bytes_i64), also the tail of the contiguous path

__device__ __forceinline__ std::int64_t unpacked_offset(const elementwise::PackParams& p, std::int64_t linear) {
  std::int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const std::int64_t i = linear % p.shape[d];
    linear /= p.shape[d];
    off += i * p.strides[d];
  }
  return off;
}

// Packs and stores packed byte `byte` (< p.bytes), padding elements as 0.
template <DType Packed>
__device__ __forceinline__ void pack_one_byte(const elementwise::PackParams& p, std::int64_t byte) {
  constexpr int kBits = kPackedBits<Packed>;
  constexpr int kPer = 8 / kBits;
  const auto* in = static_cast<const std::uint8_t*>(p.in);
  std::uint32_t word = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const std::int64_t e = byte * kPer + k;  // packed element
    if (e >= p.span) break;
    const std::int64_t r = e / p.row_stride, c = e - r * p.row_stride;
    if (c < p.n) word |= pack_code<Packed>(in[unpacked_offset(p, r * p.n + c)]) << (k * kBits);
  }
  static_cast<std::uint8_t*>(p.out)[byte] = static_cast<std::uint8_t>(word);
}

// Unpacks and stores element `i` (< p.numel, logical row-major index).
template <DType Packed>
__device__ __forceinline__ void unpack_one_element(const elementwise::PackParams& p, std::int64_t i) {
  constexpr int kBits = kPackedBits<Packed>;
  const std::int64_t r = i / p.n, c = i - r * p.n;
  const std::int64_t e = r * p.row_stride + c;
  const std::uint32_t byte = static_cast<const std::uint8_t*>(p.in)[e * kBits / 8];
  const std::uint32_t code = (byte >> ((e * kBits) % 8)) & ((1u << kBits) - 1);
  static_cast<std::uint8_t*>(p.out)[unpacked_offset(p, i)] = static_cast<std::uint8_t>(unpack_value<Packed>(code));
}

template <DType Packed>
__global__ void __launch_bounds__(kPackBlock) pack_kernel(elementwise::PackParams p) {
  const std::int64_t byte = static_cast<std::int64_t>(blockIdx.x) * kPackBlock + threadIdx.x;
  if (byte < p.bytes) pack_one_byte<Packed>(p, byte);
}

template <DType Packed>
__global__ void __launch_bounds__(kPackBlock) unpack_kernel(elementwise::PackParams p) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kPackBlock + threadIdx.x;
  if (i < p.numel) unpack_one_element<Packed>(p, i);
}

// ---- contiguous path (vec16_contig)

// One unit: 16 plain bytes (four 32-bit words, element 4j + k in byte k of word j) and
// their packed bits (element e at bit e * bits).
template <DType Packed>
struct PackUnit {
  static constexpr int kBits = kPackedBits<Packed>;
  static constexpr int kElems = 16;
  using Packed_t = std::conditional_t<kBits == 4, std::uint64_t, std::uint16_t>;  // 8 or 2 bytes
  using Plain = Vec<std::uint32_t, 4>;

  static __device__ __forceinline__ Packed_t pack(const Plain& x) {
    Packed_t w = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        w |= static_cast<Packed_t>(pack_code<Packed>((x.v[j] >> (8 * k)) & 0xFFu)) << ((4 * j + k) * kBits);
    return w;
  }
  static __device__ __forceinline__ Plain unpack(Packed_t w) {
    constexpr std::uint32_t kMask = (1u << kBits) - 1;
    Plain y;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      std::uint32_t word = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        word |= unpack_value<Packed>(static_cast<std::uint32_t>(w >> ((4 * j + k) * kBits)) & kMask) << (8 * k);
      y.v[j] = word;
    }
    return y;
  }
};

inline constexpr std::int64_t kPackTileUnits = static_cast<std::int64_t>(kPackBlock) * kPackUnroll;

// Blocks of the contiguous kernels for `numel` elements (0 = nothing to do): one per tile
// of whole units, at least one when there is a tail.
__host__ __device__ inline std::int64_t pack_contig_blocks(std::int64_t numel) {
  const std::int64_t units = numel / 16;
  const std::int64_t blocks = (units + kPackTileUnits - 1) / kPackTileUnits;
  return blocks == 0 && numel > 0 ? 1 : blocks;
}

template <DType Packed>
__global__ void __launch_bounds__(kPackBlock) pack_contig_kernel(elementwise::PackParams p) {
  using U = PackUnit<Packed>;
  const auto* in = static_cast<const std::uint32_t*>(p.in);
  auto* out = static_cast<typename U::Packed_t*>(p.out);
  const std::int64_t units = p.numel / U::kElems;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kPackTileUnits + threadIdx.x;
  if (first - threadIdx.x + kPackTileUnits <= units) {
    typename U::Plain x[kPackUnroll];
#pragma unroll
    for (int u = 0; u < kPackUnroll; ++u) x[u] = load_vec<std::uint32_t, 4>(in + (first + u * kPackBlock) * 4);
#pragma unroll
    for (int u = 0; u < kPackUnroll; ++u) out[first + u * kPackBlock] = U::pack(x[u]);
  } else {
#pragma unroll
    for (int u = 0; u < kPackUnroll; ++u) {
      const std::int64_t unit = first + u * kPackBlock;
      if (unit < units) out[unit] = U::pack(load_vec<std::uint32_t, 4>(in + unit * 4));
    }
  }
  if (blockIdx.x + 1 == gridDim.x) {  // tail: the packed bytes after the last whole unit
    const std::int64_t byte = units * static_cast<std::int64_t>(sizeof(typename U::Packed_t)) + threadIdx.x;
    if (byte < p.bytes) pack_one_byte<Packed>(p, byte);
  }
}

template <DType Packed>
__global__ void __launch_bounds__(kPackBlock) unpack_contig_kernel(elementwise::PackParams p) {
  using U = PackUnit<Packed>;
  const auto* in = static_cast<const typename U::Packed_t*>(p.in);
  auto* out = static_cast<std::uint32_t*>(p.out);
  const std::int64_t units = p.numel / U::kElems;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kPackTileUnits + threadIdx.x;
  if (first - threadIdx.x + kPackTileUnits <= units) {
    typename U::Packed_t w[kPackUnroll];
#pragma unroll
    for (int u = 0; u < kPackUnroll; ++u) w[u] = in[first + u * kPackBlock];
#pragma unroll
    for (int u = 0; u < kPackUnroll; ++u) store_vec<std::uint32_t, 4>(out + (first + u * kPackBlock) * 4, U::unpack(w[u]));
  } else {
#pragma unroll
    for (int u = 0; u < kPackUnroll; ++u) {
      const std::int64_t unit = first + u * kPackBlock;
      if (unit < units) store_vec<std::uint32_t, 4>(out + unit * 4, U::unpack(in[unit]));
    }
  }
  if (blockIdx.x + 1 == gridDim.x) {  // tail: the elements after the last whole unit
    const std::int64_t i = units * U::kElems + threadIdx.x;
    if (i < p.numel) unpack_one_element<Packed>(p, i);
  }
}

inline Status pack_launch_status(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string(what) + " launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                  static_cast<int>(e));
  return Status::ok();
}

}  // namespace baracuda::kernels
