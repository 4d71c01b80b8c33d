// Row-in-registers helpers shared by the softmax and normalization kernels.
//
// A row (or a slice of it starting at `base`) of `len` unit-stride elements is spread over
// `nt` threads: thread t holds K vectors of V elements, vector j at element
// base + (j * nt + t) * V, so a warp's loads of one j are contiguous (16-byte loads when V > 1).
// Elements past len are filled with `fill` and never stored. row_offset finds a row's first
// element through the collapsed kept dims of a params struct (kept_rank / kept_shape /
// kept_stride[op]). cluster_allreduce merges one value per block of a thread-block cluster
// in rank order (sm_90; every block gets the same bits).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "common/vec_io.cuh"

namespace baracuda::kernels {

template <class P>
__device__ __forceinline__ std::int64_t row_offset(const P& p, int op, std::int64_t row) {
  if (p.kept_rank <= 1) return p.kept_rank == 0 ? 0 : row * p.kept_stride[op][0];
  std::int64_t off = 0;
  for (int d = p.kept_rank - 1; d >= 0; --d) {
    const std::int64_t q = row / p.kept_shape[d];
    off += (row - q * p.kept_shape[d]) * p.kept_stride[op][d];
    row = q;
  }
  return off;
}

__device__ __forceinline__ std::int64_t slice_elem(std::int64_t base, int j, int t, int nt, int v) {
  return base + (static_cast<std::int64_t>(j) * nt + t) * v;
}

template <class T, int V, int K>
__device__ __forceinline__ void load_slice(Vec<T, V> (&buf)[K], const T* row, std::int64_t base, std::int64_t len,
                                           int t, int nt, T fill) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t e = slice_elem(base, j, t, nt, V);
    if (e < len) {
      if constexpr (V > 1) buf[j] = load_vec<T, V>(row + e);
      else buf[j].v[0] = row[e];
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) buf[j].v[i] = fill;
    }
  }
}

template <class T, int V, int K>
__device__ __forceinline__ void store_slice(const Vec<T, V> (&buf)[K], T* row, std::int64_t base, std::int64_t len,
                                            int t, int nt) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t e = slice_elem(base, j, t, nt, V);
    if (e < len) {
      if constexpr (V > 1) store_vec<T, V>(row + e, buf[j]);
      else row[e] = buf[j].v[0];
    }
  }
}

// Every thread of every block of the cluster calls this with its block's value (the same in
// all threads of a block); `slot` is a __shared__ R not otherwise in use.
template <class R, class Merge>
__device__ __forceinline__ R cluster_allreduce(R v, Merge merge, R* slot) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) *slot = v;
  cluster.sync();
  const unsigned n = cluster.num_blocks();
  R acc = *cluster.map_shared_rank(slot, 0);
  for (unsigned r = 1; r < n; ++r) acc = merge(acc, *cluster.map_shared_rank(slot, r));
  cluster.sync();  // no block reuses or frees its slot while others read it
  return acc;
#else
  __trap();
  return v;
#endif
}

}  // namespace baracuda::kernels
