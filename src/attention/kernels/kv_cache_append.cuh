// KvCacheAppendPlan's kernel (SKUs kv_cache_append.fwd.vec16 and .elementwise).
//
// What: k_cache[slot(b, cache_seqlens[b] + s), h, :] = k_new[b, s, h, :], and the same for v
// (baracuda/ops/kv_cache.hpp).
// Parallel scheme: one thread per copy unit (a 16-byte vector for vec16, one element
// otherwise) of the flattened [2 (k, v), B, S_new, Hkv, units] index space, grid-stride, so
// consecutive threads copy consecutive units of one head row (coalesced on both sides).
// Run-time guards: a position outside [0, capacity) or a block-table entry outside
// [0, num_pages) skips the row: nothing outside the target slots is written.
// Preconditions (probe): vec16 needs D * element size, every row stride and both pointers'
// alignment in whole 16-byte units.
// Numerics: a bit copy.
// Speed: bench suite attention, kv_cache_append bf16 64x1x8x128.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/decode_params.hpp"
#include "attention/kernels/decode_common.cuh"

namespace baracuda::attention::kernels {

template <class U>
__global__ void kv_append_kernel(const KvAppendParams p) {
  const std::int64_t per = p.batch * p.s_new * p.hkv * p.units;
  const std::int64_t total = 2 * per;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int which = i >= per ? 1 : 0;  // 0: k, 1: v
    std::int64_t r = i - which * per;
    const std::int64_t u = r % p.units;
    r /= p.units;
    const std::int64_t h = r % p.hkv;
    r /= p.hkv;
    const std::int64_t s = r % p.s_new, b = r / p.s_new;
    const std::int32_t start = p.seqlens[b * p.seqlens_stride];
    const std::int64_t pos = static_cast<std::int64_t>(start) + s;
    if (start < 0 || pos >= p.capacity) continue;
    std::int64_t row = 0;
    const std::int64_t page = page_of(p, b, pos, &row);
    if (page < 0) continue;
    const std::int64_t* cs = p.cache_stride[which];
    const std::int64_t* ns = p.new_stride[which];
    const U* src = static_cast<const U*>(which ? p.v_new : p.k_new);
    U* dst = static_cast<U*>(which ? p.v_cache : p.k_cache);
    dst[page * cs[0] + row * cs[1] + h * cs[2] + u] = src[b * ns[0] + s * ns[1] + h * ns[2] + u];
  }
}

}  // namespace baracuda::attention::kernels
