// One value per block, exchanged among the blocks of a thread-block cluster without a cluster
// barrier per call (sm_90): each block pushes its value into every block's shared memory
// with st.async, which completes on the receiving block's mbarrier, and each block waits on
// its own barrier alone. A cluster barrier is a round trip through every block of the
// cluster; the push is one remote store each way, so a row split over a cluster costs one
// DSMEM latency per reduction (used by normalization/kernels/norm_tma.cuh).
//
// Protocol: two slot sets and two barriers used in turn (call k uses set k & 1 and waits on
// phase (k >> 1) & 1). A block can write set k & 1 of call k + 2 into a peer only after call
// k + 1 completed there, which needed this peer's own value of call k + 1, sent after the
// peer's block had finished reading call k (every caller has a block barrier between the
// reads of call k and the push of call k + 1: the block reduction that forms the value).
// The caller starts with cluster_push_init (a cluster barrier: the barriers exist before any
// push) and ends with a cluster barrier (no block exits while a push to it is in flight).
// 8-byte values (two floats); rank r's value lands at slots[set][r], so every block merges
// the same values in the same order (identical bits in every block).
#pragma once

#include <cstdint>

#include "common/bulk_copy.cuh"

namespace baracuda::kernels {

inline constexpr int kClusterPushMaxRanks = 16;

struct ClusterPushState {
  std::uint64_t bar[2];
  unsigned long long slots[2][kClusterPushMaxRanks];
};

__device__ __forceinline__ unsigned cluster_map_shared(unsigned local_addr, unsigned rank) {
  unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local_addr), "r"(rank));
#endif
  return r;
}

// Every thread of the block: thread 0 sets the barriers up; returns after a cluster barrier.
__device__ __forceinline__ void cluster_push_init(ClusterPushState& st) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    mbarrier_init(&st.bar[0], 1);
    mbarrier_init(&st.bar[1], 1);
    mbarrier_init_fence();
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// Call k of the exchange: every thread of every block of the cluster calls it with its
// block's value (the same in all threads); returns the slot set holding rank r's value at
// [r], r < ranks. Threads 0..ranks-1 do the pushes (ranks <= kClusterPushMaxRanks).
__device__ __forceinline__ const unsigned long long* cluster_push_exchange(ClusterPushState& st, unsigned long long v,
                                                                           int rank, int ranks, int& k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int set = k & 1;
  const unsigned phase = static_cast<unsigned>(k >> 1) & 1u;
  ++k;
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) mbarrier_arrive_expect_tx(&st.bar[set], static_cast<unsigned>(ranks) * 8u);
  if (t < ranks) {
    const unsigned slot = cluster_map_shared(smem_address(&st.slots[set][rank]), static_cast<unsigned>(t));
    const unsigned bar = cluster_map_shared(smem_address(&st.bar[set]), static_cast<unsigned>(t));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(slot), "l"(v),
                 "r"(bar)
                 : "memory");
  }
  mbarrier_wait_parity(&st.bar[set], phase);
  return st.slots[set];
#else
  (void)v, (void)rank, (void)ranks, (void)k;
  __trap();
  return st.slots[0];
#endif
}

__device__ __forceinline__ unsigned long long pack_float2(float a, float b) {
  return static_cast<unsigned long long>(__float_as_uint(a)) | (static_cast<unsigned long long>(__float_as_uint(b)) << 32);
}
__device__ __forceinline__ float unpack_lo(unsigned long long v) { return __uint_as_float(static_cast<unsigned>(v)); }
__device__ __forceinline__ float unpack_hi(unsigned long long v) { return __uint_as_float(static_cast<unsigned>(v >> 32)); }

}  // namespace baracuda::kernels
