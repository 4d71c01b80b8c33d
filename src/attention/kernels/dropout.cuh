// The attention dropout rule shared by every hand-written SDPA SKU (contract:
// notes/attention-contract.md; host twin: reference::sdpa_dropout_keep).
//
// Logical indices: b = batch (sequence for varlen), h = QUERY head, i = query position in its
// sequence, j = key position in its sequence. Philox4x32-10 with
//   key     = {lo32(seed) ^ hi32(offset), hi32(seed)}
//   counter = {j >> 2, i, b * Hq + h, lo32(offset)}
// word (j & 3) of the result is u; the element is kept iff u >= threshold, threshold =
// (uint32) min(floor(p * 2^32), 2^32 - 1); kept probabilities are scaled by 1 / (1 - p).
// One Philox call serves 4 consecutive keys (j & ~3 .. j | 3), so kernels walking keys in
// groups of 4 call dropout_words once per group.
#pragma once

#include <cstdint>

#include "common/philox.cuh"

namespace baracuda::kernels::attention {

struct DropoutKey {
  uint2 key;
  unsigned offset_lo;
  unsigned threshold;
};

__device__ __forceinline__ DropoutKey dropout_key(std::uint64_t seed, std::uint64_t offset, unsigned threshold) {
  return {make_uint2(static_cast<unsigned>(seed) ^ static_cast<unsigned>(offset >> 32), static_cast<unsigned>(seed >> 32)),
          static_cast<unsigned>(offset), threshold};
}

// The 4 words of keys (j & ~3) .. (j | 3) of row (b, h, i); bh = b * Hq + h.
__device__ __forceinline__ uint4 dropout_words(const DropoutKey& k, std::int64_t bh, std::int64_t i, std::int64_t j) {
  return philox4x32_10(make_uint4(static_cast<unsigned>(j >> 2), static_cast<unsigned>(i), static_cast<unsigned>(bh),
                                  k.offset_lo),
                       k.key);
}

__device__ __forceinline__ unsigned dropout_word(uint4 w, std::int64_t j) {
  const int r = static_cast<int>(j & 3);
  return r == 0 ? w.x : r == 1 ? w.y : r == 2 ? w.z : w.w;
}

// Whether (b, h, i, j) is kept (bh = b * Hq + h).
__device__ __forceinline__ bool dropout_keep(const DropoutKey& k, std::int64_t bh, std::int64_t i, std::int64_t j) {
  return dropout_word(dropout_words(k, bh, i, j), j) >= k.threshold;
}

// The seed and offset of a run: the device pair when given (graph replays), else the host values.
__device__ __forceinline__ void dropout_seed_offset(const std::uint64_t* dev, std::uint64_t host_seed,
                                                    std::uint64_t host_offset, std::uint64_t* seed,
                                                    std::uint64_t* offset) {
  if (dev != nullptr) {
    *seed = dev[0];
    *offset = dev[1];
  } else {
    *seed = host_seed;
    *offset = host_offset;
  }
}

}  // namespace baracuda::kernels::attention
