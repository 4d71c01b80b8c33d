// How w4a16_onepass (kernels/int4_onepass.cuh) splits one block's units among its warps and
// who finishes each tile: plain integer rules shared by the kernel and the host's unit test
// (tests/unit/test_gemm_int4.cpp, OnePassSplitCoversEveryUnitOnce).
//
// The block's `units` units (tile-major: unit u is chunk u % chunks of local tile u / chunks)
// are split into `warps` contiguous ranges [bound(j), bound(j + 1)), units >= warps (every
// range non-empty). A tile inside one range is whole: its warp finishes it. A tile cut by
// range boundaries gets one slot from each warp it meets: slot 0 (the warp's first tile) or 1
// (its last tile); after the loop, warp combiner(lt) adds the tile's slots in warp order.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define BARACUDA_ONEPASS_HD __host__ __device__ __forceinline__
#else
#define BARACUDA_ONEPASS_HD inline
#endif

namespace baracuda::gemm {

struct Int4OnePassSplit {
  int units = 0, chunks = 1, warps = 1;

  // The first unit of warp j's range (bound(warps) = units).
  BARACUDA_ONEPASS_HD int bound(int j) const {
    return static_cast<int>(static_cast<std::int64_t>(j) * units / warps);
  }
  // Local tile lt lies inside warp range [u0, u1).
  BARACUDA_ONEPASS_HD bool whole(int lt, int u0, int u1) const {
    return lt * chunks >= u0 && (lt + 1) * chunks <= u1;
  }
  // The slot (0: its first tile, 1: its last) warp j fills for a cut tile lt it meets.
  BARACUDA_ONEPASS_HD int slot(int j, int lt) const { return bound(j) / chunks == lt ? 0 : 1; }
  // The cut tile that warp w (>= 1) combines after the loop, or -1: the tile its range starts
  // inside, when no earlier warp's range starts inside it too. Its contributors are warps
  // w - 1, w, ... while bound(j) < (lt + 1) chunks.
  BARACUDA_ONEPASS_HD int combined_tile(int w) const {
    if (w < 1 || w >= warps) return -1;
    const int b = bound(w), lt = b / chunks;
    return b % chunks != 0 && bound(w - 1) <= lt * chunks ? lt : -1;
  }
};

}  // namespace baracuda::gemm
