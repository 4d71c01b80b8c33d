// Device helpers shared by the decode kernels (decode_mma.cuh, decode_simt.cuh) and the KV
// cache append (kv_cache_append.cuh): the run-time guards on device-side lengths and block
// tables (a length is clamped to the cache's capacity, a page id outside the cache reads as
// absent) and the float -> storage conversions of the outputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "attention/decode_params.hpp"

namespace baracuda::attention::kernels {

__device__ __forceinline__ std::int64_t clamp_seqlen(std::int32_t len, std::int64_t capacity) {
  const std::int64_t l = len < 0 ? 0 : len;
  return l < capacity ? l : capacity;
}

// The page holding position `pos` (0 <= pos < capacity <= 2^31) of sequence b (b itself for a
// contiguous cache) and the row in it, or -1 when the position is outside the block table or
// its entry is outside [0, num_pages).
template <class P>
__device__ __forceinline__ std::int64_t page_of(const P& p, std::int64_t b, std::int64_t pos, std::int64_t* row) {
  if (p.block_table == nullptr) {
    *row = pos;
    return b;
  }
  const std::uint32_t ps = static_cast<std::uint32_t>(p.page_size);
  const std::uint32_t slot = static_cast<std::uint32_t>(pos) / ps;
  *row = static_cast<std::uint32_t>(pos) - slot * ps;
  if (slot >= p.max_pages) return -1;
  const std::int64_t page = p.block_table[b * p.bt_stride[0] + static_cast<std::int64_t>(slot) * p.bt_stride[1]];
  return page >= 0 && page < p.num_pages ? page : -1;
}

template <class T, class C>
__device__ __forceinline__ T from_float(C x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(x));
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(x));
  else return static_cast<T>(x);
}

}  // namespace baracuda::attention::kernels
