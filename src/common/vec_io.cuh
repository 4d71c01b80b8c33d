// 16-byte vector loads and stores.
//
// load_vec / store_vec move N consecutive elements as N*sizeof(T)/16 aligned 16-byte
// transactions (ld.global.v4 / st.global.v4). Preconditions: N*sizeof(T) is a multiple of
// 16 and the pointer is 16-byte aligned (plans check this in select/run).
#pragma once

#include <cstdint>

namespace baracuda::kernels {

template <class T, int N>
struct alignas(N * sizeof(T) % 16 == 0 ? 16 : alignof(T)) Vec {
  T v[N];
};

// kStreaming: data touched once (large maps) - evict-first cache hints (ld.global.cs /
// st.global.cs) so a pass over a big tensor does not flush other data from L2.
template <class T, int N, bool kStreaming = false>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
  static_assert((N * sizeof(T)) % 16 == 0, "vector must be a multiple of 16 bytes");
  constexpr int kChunks = N * sizeof(T) / 16;
  Vec<T, N> r;
  const uint4* src = reinterpret_cast<const uint4*>(p);
  uint4* dst = reinterpret_cast<uint4*>(&r);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) dst[c] = kStreaming ? __ldcs(src + c) : src[c];
  return r;
}

template <class T, int N, bool kStreaming = false>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  static_assert((N * sizeof(T)) % 16 == 0, "vector must be a multiple of 16 bytes");
  constexpr int kChunks = N * sizeof(T) / 16;
  uint4* dst = reinterpret_cast<uint4*>(p);
  const uint4* src = reinterpret_cast<const uint4*>(&v);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if constexpr (kStreaming) __stcs(dst + c, src[c]);
    else dst[c] = src[c];
  }
}

}  // namespace baracuda::kernels
