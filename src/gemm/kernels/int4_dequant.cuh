// Int4GemmPlan's dequantization: the register-level bit tricks every SKU shares, and the
// kernel that writes the dequantized weight for the cuBLASLt path.
//
// What: w(n, k) = RN((q(n, k) - z) * s) in the activation dtype T (f16 / bf16), q a packed
// nibble (s4 or u4, baracuda/ops/gemm_int4.hpp), s = scales[n, g], z = zeros[n, g] (u4) or 0
// (s4), g = k / group_size.
// Bit trick: a 32-bit word of packed weights holds 8 nibbles, element e in bits 4e..4e+3.
// s4 is turned into u4 with z' = z + 8 by one XOR with 0x88888888 (flips each nibble's sign
// bit: q + 8). Then ((word >> 4j) & 0x000F000F) | M places nibbles j and j + 4 in the low
// bits of two 16-bit halves whose exponent field M makes them the numbers B + q (B = 1024 for
// f16: 0x6400; B = 128 for bf16: 0x4300; the mantissa ulp is 1 there, so B + q is exact).
// One packed subtraction of (B + z) gives q - z exactly (integers |q - z| <= 16), and one
// packed multiplication by s rounds once: RN((q - z) * s). So each pair of the result holds
// elements (j, j + 4) of the word, j = 0..3; callers either feed the mma with a matching
// K permutation of X (int4_gemv.cuh) or restore the natural order with byte permutes (here).
// Parallel scheme of the dequant kernel: one thread per 16-byte vector of packed weights
// (32 elements of one row, one group since groups are multiples of 32), grid-stride loop,
// four 16-byte stores. Memory-bound: 0.5 byte read + 2 bytes written per element; bench
// line gemm.w4a16.* M=2048 (the dequant_cublaslt SKU).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "baracuda/ops/gemm_int4.hpp"  // int4_tiled_offset
#include "gemm/int4_params.hpp"

namespace baracuda::gemm::kernels {

template <class T>
struct Int4Act;
template <>
struct Int4Act<__half> {
  using T2 = __half2;
  static constexpr std::uint32_t kMagic = 0x64006400u;  // 1024 in both halves
  static constexpr float kBase = 1024.0f;
  static __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ T2 splat(float v) { return __float2half2_rn(v); }
};
template <>
struct Int4Act<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static constexpr std::uint32_t kMagic = 0x43004300u;  // 128 in both halves
  static constexpr float kBase = 128.0f;
  static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ T2 splat(float v) { return __float2bfloat162_rn(v); }
};

template <class T2>
__device__ __forceinline__ std::uint32_t as_u32(T2 v) {
  return *reinterpret_cast<std::uint32_t*>(&v);
}
template <class T2>
__device__ __forceinline__ T2 as_pair(std::uint32_t v) {
  return *reinterpret_cast<T2*>(&v);
}

// Per (row, group) constants of the trick: (B + z) and s as packed pairs.
template <class T>
struct Int4GroupConst {
  typename Int4Act<T>::T2 zb, s;
};

template <class T>
__device__ __forceinline__ Int4GroupConst<T> int4_group_const(const Int4Weights& wt, std::int64_t row, std::int64_t kk) {
  using A = Int4Act<T>;
  const std::int64_t gi = row * wt.groups + kk / wt.group_size;
  const T s = static_cast<const T*>(wt.scales)[gi];
  const float z = wt.is_signed ? 8.0f : A::to_float(static_cast<const T*>(wt.zeros)[gi]);
  Int4GroupConst<T> c;
  c.zb = A::splat(A::kBase + z);  // exact for integer z in [0, 16]
  c.s = typename A::T2(s, s);
  return c;
}

// The same constants from the raw bits of a scale and a zero point (z = 8 for s4: no zero).
template <class T, bool kSigned>
__device__ __forceinline__ Int4GroupConst<T> int4_group_const_bits(unsigned short sb, unsigned short zb) {
  using A = Int4Act<T>;
  Int4GroupConst<T> c;
  c.s = as_pair<typename A::T2>(static_cast<std::uint32_t>(sb) | (static_cast<std::uint32_t>(sb) << 16));
  if (kSigned) {
    c.zb = A::splat(A::kBase + 8.0f);
  } else {
    c.zb = A::splat(A::kBase + A::to_float(*reinterpret_cast<const T*>(&zb)));
  }
  return c;
}

// Pair j (elements j and j + 4) of a word of 8 nibbles (already XORed for s4), dequantized.
template <class T>
__device__ __forceinline__ std::uint32_t int4_pair(std::uint32_t word, int j, const Int4GroupConst<T>& c) {
  using T2 = typename Int4Act<T>::T2;
  const std::uint32_t bits = ((word >> (4 * j)) & 0x000F000Fu) | Int4Act<T>::kMagic;
  return as_u32(__hmul2(__hsub2(as_pair<T2>(bits), c.zb), c.s));
}

__device__ __forceinline__ std::uint32_t int4_prepare_word(std::uint32_t word, bool is_signed) {
  return is_signed ? word ^ 0x88888888u : word;
}

// One 16-byte vector (32 elements of row `row` from k = kk) to 32 values in natural order.
template <class T>
__global__ void int4_dequant_kernel(const Int4Weights wt, T* __restrict__ wd) {
  const std::int64_t vecs_per_row = wt.k / 32;
  const std::int64_t total = wt.n * vecs_per_row;
  const auto* wbytes = static_cast<const unsigned char*>(wt.w);
  for (std::int64_t v = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; v < total;
       v += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = v / vecs_per_row, kk = (v - row * vecs_per_row) * 32;
    const std::int64_t at = wt.tiled ? int4_tiled_offset(row, kk, wt.k) : row * wt.ld_bytes + kk / 2;
    const uint4 q = __ldcs(reinterpret_cast<const uint4*>(wbytes + at));
    const Int4GroupConst<T> c = int4_group_const<T>(wt, row, kk);
    const std::uint32_t words[4] = {q.x, q.y, q.z, q.w};
    uint4* out = reinterpret_cast<uint4*>(wd + row * wt.k + kk);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t w = int4_prepare_word(words[i], wt.is_signed);
      const std::uint32_t p0 = int4_pair<T>(w, 0, c), p1 = int4_pair<T>(w, 1, c), p2 = int4_pair<T>(w, 2, c),
                          p3 = int4_pair<T>(w, 3, c);
      // p0 = (e0, e4), p1 = (e1, e5), p2 = (e2, e6), p3 = (e3, e7) -> (e0 e1)(e2 e3)(e4 e5)(e6 e7)
      out[i] = make_uint4(__byte_perm(p0, p1, 0x5410), __byte_perm(p2, p3, 0x5410), __byte_perm(p0, p1, 0x7632),
                          __byte_perm(p2, p3, 0x7632));
    }
  }
}

}  // namespace baracuda::gemm::kernels
