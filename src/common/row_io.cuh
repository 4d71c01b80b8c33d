// Row-in-registers helpers shared by the softmax and normalization kernels.
//
// A row (or a slice of it starting at `base`) of `len` unit-stride elements is spread over
// `nt` threads: thread t holds K vectors of V elements, vector j at element
// base + (j * nt + t) * V, so a warp's loads of one j are contiguous (16-byte loads when V > 1).
// Elements past len are filled with `fill` and never stored. row_offset finds a row's first
// element through the collapsed kept dims of a params struct (kept_rank / kept_shape /
// kept_stride[op]). cluster_allreduce merges one value per block of a thread-block cluster
// in rank order (sm_90; every block gets the same bits). Host side: launch_row_kernel (a
// plain or a cluster launch) and dispatch_row_bucket (the compile-time (vec, k) buckets).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "baracuda/core/status.hpp"
#include "common/device_types.cuh"
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

// V elements at element e of a unit-stride array (one 16-byte load when V > 1).
template <class T, int V>
__device__ __forceinline__ Vec<T, V> load_elems(const T* a, std::int64_t e) {
  Vec<T, V> r;
  if constexpr (V > 1) r = load_vec<T, V>(a + e);
  else r.v[0] = a[e];
  return r;
}

// A vector of V copies of `fill`. 16-bit elements are written as 32-bit words: element by
// element the compiler keeps each half in its own register and merges it (PRMT) into the
// loaded word, two instructions an element where a whole-vector fill costs one move a word.
template <class T, int V>
__device__ __forceinline__ Vec<T, V> filled_vec(T fill) {
  Vec<T, V> r;
  if constexpr (sizeof(T) == 2 && V % 2 == 0) {
    unsigned short h;
    __builtin_memcpy(&h, &fill, 2);
    const unsigned w = h * 0x10001u;
    unsigned* words = reinterpret_cast<unsigned*>(&r);
#pragma unroll
    for (int i = 0; i < V / 2; ++i) words[i] = w;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) r.v[i] = fill;
  }
  return r;
}

// Element i (a compile-time constant after unrolling) of a vector in the compute type.
// 16-bit vectors are read by 32-bit words: bf16 is the word shifted or masked, f16 one
// conversion of its half; through Vec::v[i] the compiler first moves each half out (PRMT).
template <class T, int V>
__device__ __forceinline__ Compute<T> vec_elem(const Vec<T, V>& v, int i) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && V % 2 == 0) {
    const unsigned w = reinterpret_cast<const unsigned*>(&v)[i / 2];
    return __uint_as_float(i % 2 ? w & 0xffff0000u : w << 16);
  } else if constexpr (std::is_same_v<T, __half> && V % 2 == 0) {
    const __half2 h = reinterpret_cast<const __half2*>(&v)[i / 2];
    return i % 2 ? __high2float(h) : __low2float(h);
  } else {
    return to_compute(v.v[i]);
  }
}

template <class T, int V, int K>
__device__ __forceinline__ void load_slice(Vec<T, V> (&buf)[K], const T* row, std::int64_t base, std::int64_t len,
                                           int t, int nt, T fill) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t e = slice_elem(base, j, t, nt, V);
    buf[j] = e < len ? load_elems<T, V>(row, e) : filled_vec<T, V>(fill);
  }
}

// One 16-byte vector to global memory as st.global.v4 (__stwb: write-back, as a plain
// store): through store_vec's uint4 copy nvcc 13 split some of the row kernels' vector
// stores into four 4-byte STG.E when the packed words did not sit in an aligned register
// quad (bf16 softmax block_row: 2 of its 4 vectors a thread; LayerNorm tma_row: 18 scalar
// stores beside 4 vector ones), four LSU instructions and partial sectors a vector.
template <class T, int V>
__device__ __forceinline__ void store_row_vec(T* p, const Vec<T, V>& v) {
  static_assert(sizeof(Vec<T, V>) % 16 == 0, "vector must be a multiple of 16 bytes");
  uint4* dst = reinterpret_cast<uint4*>(p);
  const uint4* src = reinterpret_cast<const uint4*>(&v);
#pragma unroll
  for (int c = 0; c < static_cast<int>(sizeof(Vec<T, V>) / 16); ++c) __stwb(dst + c, src[c]);
}

template <class T, int V, int K>
__device__ __forceinline__ void store_slice(const Vec<T, V> (&buf)[K], T* row, std::int64_t base, std::int64_t len,
                                            int t, int nt) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t e = slice_elem(base, j, t, nt, V);
    if (e < len) {
      if constexpr (V > 1) store_row_vec<T, V>(row + e, buf[j]);
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

// cluster_allreduce with one cluster barrier instead of two: consecutive calls alternate
// between slots[0] and slots[1] (`parity`, flipped here), so a block's write for call k + 2
// waits behind call k + 1's barrier, which every block reaches only after its reads of call
// k. Every block of the cluster makes the same calls, and the caller ends with
// cluster_sync_all() before exiting (no block leaves while others read its slots).
template <class R, class Merge>
__device__ __forceinline__ R cluster_allreduce_alternating(R v, Merge merge, R (&slots)[2], int& parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  R* slot = &slots[parity];
  parity ^= 1;
  if (threadIdx.x == 0) *slot = v;
  cluster.sync();
  const unsigned n = cluster.num_blocks();
  R acc = *cluster.map_shared_rank(slot, 0);
  for (unsigned r = 1; r < n; ++r) acc = merge(acc, *cluster.map_shared_rank(slot, r));
  return acc;
#else
  __trap();
  return v;
#endif
}
__device__ __forceinline__ void cluster_sync_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().sync();
#endif
}

inline Status row_launch_status(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string(what) + ": " + cudaGetErrorString(e));
}

// `blocks` blocks of `threads`; with `use_cluster`, in clusters of `cluster` blocks along x
// (more than 8, the non-portable sizes of sm_90, are opted into on the kernel first).
template <class Kernel, class Params>
Status launch_row_kernel(Kernel kernel, const Params& p, unsigned blocks, int threads, bool use_cluster, int cluster,
                         cudaStream_t s, const char* what) {
  if (!use_cluster) {
    kernel<<<blocks, threads, 0, s>>>(p);
    return row_launch_status(what);
  }
  cudaError_t e = cudaSuccess;
  if (cluster > 8) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (e == cudaSuccess) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    e = cudaLaunchKernelEx(&cfg, kernel, p);
  }
  if (e != cudaSuccess) return Status(Code::kCudaError, std::string(what) + " cluster_row: " + cudaGetErrorString(e));
  return Status::ok();
}

// Calls f(integral_constant<V>, integral_constant<K>) for the built (vec, k) buckets: 16-byte
// vectors (V = 16 / sizeof(T)) with k in {1, 2, 4, 8}, scalars with k in {1, 4, 16}.
template <class T, class F>
Status dispatch_row_bucket(int vec, int k, F&& f, const char* what) {
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  using std::integral_constant;
  if (vec > 1) {
    switch (k) {
      case 1: return f(integral_constant<int, kV>{}, integral_constant<int, 1>{});
      case 2: return f(integral_constant<int, kV>{}, integral_constant<int, 2>{});
      case 4: return f(integral_constant<int, kV>{}, integral_constant<int, 4>{});
      case 8: return f(integral_constant<int, kV>{}, integral_constant<int, 8>{});
      default: break;
    }
  } else {
    switch (k) {
      case 1: return f(integral_constant<int, 1>{}, integral_constant<int, 1>{});
      case 4: return f(integral_constant<int, 1>{}, integral_constant<int, 4>{});
      case 16: return f(integral_constant<int, 1>{}, integral_constant<int, 16>{});
      default: break;
    }
  }
  return Status(Code::kInternal,
                std::string(what) + ": no kernel for vec = " + std::to_string(vec) + ", k = " + std::to_string(k));
}

}  // namespace baracuda::kernels
