// Hopper bulk copies (cp.async.bulk, the non-tensor TMA path) into shared memory, completed
// on an mbarrier: the producer thread arms a barrier with the bytes it expects and issues the
// copies; consumers wait on the barrier's phase parity. Every function here is sm_90+ and
// compiles to nothing on older targets (callers keep such kernels off those devices).
// Used by the pipelined row kernels (normalization/kernels/norm_tma.cuh).
#pragma once

#include <cstdint>

namespace baracuda::kernels {

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// One arrival (the producer's arrive.expect_tx) completes a phase once the bytes land.
__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals));
#endif
}
// Makes initialised barriers visible to the async proxy (before the first copy).
__device__ __forceinline__ void mbarrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbarrier_wait_parity(std::uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred done;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n @!done bra WAIT_%=;\n}\n" ::"r"(
          smem_address(bar)),
      "r"(parity)
      : "memory");
#endif
}
// Orders this thread's earlier generic-proxy shared-memory accesses before later async-proxy
// writes (a stage is refilled only after every thread has read it).
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// `bytes` (a multiple of 16) from global `src` (16-byte aligned) to shared `dst` (16-byte
// aligned), completing on `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(smem_address(bar))
               : "memory");
#endif
}

}  // namespace baracuda::kernels
