// The block-barrier-free row loop of the persistent bulk-copy row kernels (normalization's
// tma_lean forward and backward with whole rows in a block; sm_90). A row kernel with a
// block statistic (a sum over the row) needs every warp's part before any warp can finish
// the row. With one block barrier a row, each row costs the slowest warp's pass plus the
// reduction's latency, with nothing else to issue; here the wait is deferred one row: in
// iteration i a warp runs pass 1 of row i and publishes its warp's value (lane 0:
// pairs[i % 4][warp], then one arrival on reduced[i % 4], `warps` arrivals a phase), then
// finishes row i - 1, whose values every warp published an iteration earlier, so the wait
// on reduced[(i - 1) % 4] stalls a warp only behind a warp a whole pass slower.
// Four pair buffers: a warp writes row i's after its wait for row i - 2's, which every warp
// published after finishing row i - 3 and so after its reads of row i - 4's pairs (the
// buffer's previous contents). A stage is refilled by the last warp to be done with it (a
// running count of warps per stage; the warp whose count completes a multiple of `warps`
// issues the copy), so the copy of row i + stages starts as soon as the stage is free.
// Used by normalization/kernels/norm_tma_lean.cuh (the LayerNorm forward with whole rows).
// Measured on the H100 (session 20, bf16 16384x8192, min ms): LayerNorm forward 0.2008 ->
// 0.1955; RMSNorm forward 0.1940 -> 0.2036 and the LayerNorm backward 0.3402 -> 0.3449 on this
// loop, so those keep their one-barrier-a-row kernels (docs/softmax-norm.md, session 20).
#pragma once

#include <cstdint>

#include "common/bulk_copy.cuh"
#include "common/tma.cuh"
#include "common/tma_rows.cuh"

namespace baracuda::kernels {

struct DeferredRowShared {
  std::uint64_t full[rows::kTmaMaxStages];
  std::uint64_t reduced[4];
  unsigned done[rows::kTmaMaxStages];  // warps done with the stage, a running count
  float2 pairs[4][rows::kTmaMaxThreads / 32];
};

// Every thread: the barriers set up (thread 0), a block barrier, then thread 0 fills the
// first stages.
template <int kSources, class F>
__device__ __forceinline__ void deferred_rows_begin(DeferredRowShared& sh, const BulkRowRing<kSources>& ring,
                                                    std::int64_t rows, const F& sources) {
  if (threadIdx.x == 0) {
    for (int b = 0; b < 4; ++b) mbarrier_init(&sh.reduced[b], blockDim.x >> 5);
    for (int s = 0; s < ring.stages; ++s) sh.done[s] = 0;
    ring.init();  // and the init fence
  }
  __syncthreads();
  if (threadIdx.x == 0) ring.start(rows, sources);
}

// Row i's value of this warp (lane 0's is stored).
__device__ __forceinline__ void deferred_publish(DeferredRowShared& sh, std::int64_t i, float2 v) {
  if ((threadIdx.x & 31) == 0) {
    sh.pairs[i & 3][threadIdx.x >> 5] = v;
    mbarrier_arrive(&sh.reduced[i & 3]);  // release: the pair is visible to the waiters
  }
}

// Waits until every warp has published row r's value; returns the warps' values.
__device__ __forceinline__ const float2* deferred_wait(DeferredRowShared& sh, std::int64_t r) {
  mbarrier_wait_parity(&sh.reduced[r & 3], static_cast<unsigned>(r >> 2) & 1u);
  return sh.pairs[r & 3];
}

// The warp is done reading `slot`, which held the block's row r: the last warp to be done
// refills it with row r + stages (when the block has one).
template <int kSources, class F>
__device__ __forceinline__ void deferred_release(DeferredRowShared& sh, const BulkRowRing<kSources>& ring, int slot,
                                                 std::int64_t r, std::int64_t rows, const F& sources) {
  __syncwarp();  // the warp's reads of the stage come before its count
  if ((threadIdx.x & 31) != 0) return;
  __threadfence_block();
  const unsigned warps = blockDim.x >> 5;
  const unsigned count = atomicAdd(&sh.done[slot], 1u) + 1u;
  if (count % warps != 0 || r + ring.stages >= rows) return;
  __threadfence_block();  // every warp's count (and so its reads) before the copy
  const void* src[kSources];
  sources(r + ring.stages, src);
  fence_proxy_async_shared();
  ring.fill(slot, src);
}

}  // namespace baracuda::kernels
