// cp.async (sm_80+): 16-byte global -> shared copies that complete asynchronously, tracked per
// thread in commit groups. A thread that reads back only what it copied itself needs no
// barrier, only cp_async_wait.
#pragma once

namespace baracuda::kernels {

// 16 bytes global -> shared, L2 only; valid = false reads nothing and zero-fills.
// kL2PrefetchBytes (0, 64, 128 or 256): the L2 also fetches the rest of that many aligned
// bytes around the copy (streams of whole lines go out in fewer DRAM requests).
template <int kL2PrefetchBytes = 0>
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  static_assert(kL2PrefetchBytes == 0 || kL2PrefetchBytes == 64 || kL2PrefetchBytes == 128 || kL2PrefetchBytes == 256,
                "cp.async L2 prefetch sizes are 64, 128 and 256 bytes");
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  if constexpr (kL2PrefetchBytes == 256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
  else if constexpr (kL2PrefetchBytes == 128)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
  else if constexpr (kL2PrefetchBytes == 64)
    asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}
// A cache policy for cp_async16_hint: the lines it brings into the L2 are the first to go
// (createpolicy.fractional.L2::evict_first, fraction 1): a stream read once leaves the L2's other
// contents (e.g. partial sums a later kernel reads) in place.
__device__ __forceinline__ unsigned long long l2_evict_first_policy() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// cp_async16 with an L2 cache policy (from createpolicy).
template <int kL2PrefetchBytes = 0>
__device__ __forceinline__ void cp_async16_hint(void* smem, const void* gmem, bool valid, unsigned long long policy) {
  static_assert(kL2PrefetchBytes == 0 || kL2PrefetchBytes == 128 || kL2PrefetchBytes == 256,
                "cp_async16_hint: L2 prefetch sizes 0, 128 and 256 bytes");
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  if constexpr (kL2PrefetchBytes == 256)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;\n" ::"r"(s), "l"(gmem), "r"(bytes), "l"(policy));
  else if constexpr (kL2PrefetchBytes == 128)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::128B [%0], [%1], 16, %2, %3;\n" ::"r"(s), "l"(gmem), "r"(bytes), "l"(policy));
  else
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(s), "l"(gmem), "r"(bytes), "l"(policy));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's commit groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace baracuda::kernels
