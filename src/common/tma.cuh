// Hopper (sm_90) tensor-memory-accelerator and warp-specialization helpers: 4-D tiled TMA loads
// (cp.async.bulk.tensor) completing on an mbarrier, mbarrier arrive / bounded waits, named
// barriers and setmaxnreg. The mbarrier basics (init, expect_tx, fences) live in bulk_copy.cuh.
//
// Bounded waits: mbarrier_wait_bounded() spins on try_wait.parity and, unless
// BARACUDA_TMA_NO_WATCHDOG is defined, traps after about 2^33 SM clocks (~4 s on an H200) so a
// pipeline bug shows up as a launch failure instead of a hung device.
//
// Every function compiles to nothing below sm_90 (callers keep such kernels off those devices).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/bulk_copy.cuh"

namespace baracuda::kernels {

// A plain arrival (count 1) on a shared-memory mbarrier.
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
#endif
}

// Waits until the phase of parity `parity` of `bar` has completed. The whole spin is one asm
// block (no C++ branch), so ptxas does not see divergent code around the wgmma that follow.
__device__ __forceinline__ void mbarrier_wait_bounded(std::uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#if !defined(BARACUDA_TMA_NO_WATCHDOG)
  asm volatile(
      "{\n .reg .pred p, q;\n .reg .u64 t0, t1;\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @p bra DONE_%=;\n"
      " mov.u64 t0, %%clock64;\n"
      "LOOP_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @p bra DONE_%=;\n"
      " mov.u64 t1, %%clock64;\n sub.u64 t1, t1, t0;\n setp.gt.u64 q, t1, 8589934592;\n @q trap;\n"
      " bra.uni LOOP_%=;\n"
      "DONE_%=:\n}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n .reg .pred p;\n"
      "LOOP_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra LOOP_%=;\n}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#endif
#endif
}
// An arrival by the threads where `pred` holds, predicated inside the asm (no branch).
__device__ __forceinline__ void mbarrier_arrive_if(std::uint64_t* bar, bool pred) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %1, 0;\n @p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(
          smem_address(bar)),
      "r"(static_cast<unsigned>(pred))
      : "memory");
#endif
}

// 4-D tiled TMA load of the box at coordinates (c0 innermost .. c3) of `map` into shared `dst`,
// completing `bytes` of transaction count on `bar`. `map` must live in param / const / global
// memory (a __grid_constant__ kernel parameter).
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_address(bar))
      : "memory");
#endif
}
__device__ __forceinline__ void tma_prefetch_descriptor(const CUtensorMap* map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
#endif
}

// Named barriers (id 1..15; 0 is __syncthreads): `threads` (a multiple of 32) arrive in total.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Per-thread register budget of the executing warpgroup (every warp of it must execute it).
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
#endif
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
#endif
}

}  // namespace baracuda::kernels
