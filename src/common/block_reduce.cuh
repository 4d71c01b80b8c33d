// Deterministic warp / block all-reductions of small values (a scalar or a struct of
// 4-byte multiples) with a caller-supplied merge.
//
// The warp step is a fixed tree (shuffle down 16, 8, 4, 2, 1 into lane 0, merge(lower,
// upper)) whose result lane 0 broadcasts, so the merge need not be commutative (Chan's
// mean / M2 merge is not, bitwise); the block step reduces the per-warp results in warp 0
// with the same tree and broadcasts through shared memory. Fixed structure: the same
// inputs give the same bits run after run (no atomics).
// Preconditions: every thread of the block calls block_allreduce (blockDim.x a multiple
// of 32, <= 1024); `smem` holds 33 values and is not in use by the caller.
#pragma once

#include <cstdint>

namespace baracuda::kernels {

template <class R>
__device__ __forceinline__ R shfl_value(R v, int lane_or_delta, bool down) {
  static_assert(sizeof(R) % 4 == 0, "shuffled values are whole 4-byte words");
  constexpr int kWords = sizeof(R) / 4;
  int w[kWords];
  __builtin_memcpy(w, &v, sizeof(R));
#pragma unroll
  for (int i = 0; i < kWords; ++i)
    w[i] = down ? __shfl_down_sync(0xffffffffu, w[i], lane_or_delta) : __shfl_sync(0xffffffffu, w[i], lane_or_delta);
  R r;
  __builtin_memcpy(&r, w, sizeof(R));
  return r;
}

// The warp's 32 values merged in a fixed tree; only lane 0 holds the result.
template <class R, class Merge>
__device__ __forceinline__ R warp_reduce_to_lane0(R v, Merge merge) {
#pragma unroll
  for (int delta = 16; delta > 0; delta >>= 1) v = merge(v, shfl_value(v, delta, true));
  return v;
}

// The same, broadcast to every lane.
template <class R, class Merge>
__device__ __forceinline__ R warp_allreduce(R v, Merge merge) {
  return shfl_value(warp_reduce_to_lane0(v, merge), 0, false);
}

template <class R, class Merge>
__device__ __forceinline__ R block_allreduce(R v, Merge merge, R identity, R* smem) {
  v = warp_allreduce(v, merge);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const int warps = static_cast<int>(blockDim.x >> 5);
  if (warps == 1) return v;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    R w = lane < warps ? smem[lane] : identity;
    w = warp_allreduce(w, merge);
    if (lane == 0) smem[32] = w;
  }
  __syncthreads();
  return smem[32];
}

// The same reduction with one barrier: each warp reduces with the fixed shuffle tree into
// lane 0, lane 0 stores the warp's value in smem[warp], and after one __syncthreads every
// thread merges smem[0], smem[1], ... in warp order (the same bits in every thread; no
// second barrier and no serial warp-0 step). `smem` holds blockDim.x / 32 values. A thread
// may still read call k's values after the barrier while a faster warp already writes call
// k + 1's: consecutive calls alternate between two buffers (or a barrier separates them).
template <class R, class Merge>
__device__ __forceinline__ R block_allreduce_flat(R v, Merge merge, R* smem) {
#pragma unroll
  for (int delta = 16; delta > 0; delta >>= 1) v = merge(v, shfl_value(v, delta, true));
  const int warps = static_cast<int>(blockDim.x >> 5);
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x >> 5] = v;
  __syncthreads();
  R acc = smem[0];
  for (int w = 1; w < warps; ++w) acc = merge(acc, smem[w]);
  return acc;
}

}  // namespace baracuda::kernels
