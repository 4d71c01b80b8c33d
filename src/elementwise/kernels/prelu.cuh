// PReLU on the device.
//  * PReluFwdOp: the map functor y = x > 0 ? x : w * x (the weight arrives as a broadcast
//    view, so the map kernels of map.cuh run it on every path).
//  * prelu_bwd_pass1: one block per (channel c, chunk k): its threads walk the chunk's
//    elements of channel c (x viewed as [outer, C, inner]), write grad_x = x > 0 ? g : w * g
//    and accumulate x > 0 ? 0 : x * g; a fixed-order shared-memory tree gives the block's
//    sum, stored as partial[k * C + c].
//  * prelu_bwd_pass2: one thread per channel adds its chunks in order and stores the
//    weight gradient. No atomics anywhere: the result depends only on the descriptor.
//    64-bit index math (offsets from the logical index through x's rank).
//  * PReluGradXFn / PReluGradWFn: the two gradients as functors of (g, a = x, b = w) for
//    the column reduction of column_reduce.cuh (the rows_vec16 SKU: x collapses to
//    [rows, C] with C unit-stride; the weight is the reduced operand b).
#pragma once

#include <cuda_runtime.h>

#include "common/device_types.cuh"
#include "elementwise/map_params.hpp"
#include "elementwise/prelu_params.hpp"

namespace baracuda::kernels {

struct PReluFwdOp {  // in: x, w   out: y
  static constexpr int kIn = 2, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = in[0] > C(0) ? in[0] : in[1] * in[0];
  }
};

// grad_x = x > 0 ? g : w * g and the weight-gradient term x > 0 ? 0 : x * g.
struct PReluGradXFn {
  static constexpr bool kReads = true;
  template <class C>
  __device__ __forceinline__ C operator()(C g, C x, C w) const {
    return x > C(0) ? g : w * g;
  }
};
struct PReluGradWFn {
  static constexpr bool kReads = true;
  template <class C>
  __device__ __forceinline__ C operator()(C g, C x, C) const {
    return x > C(0) ? C(0) : x * g;
  }
};

inline constexpr int kPReluBlock = 256;

__device__ __forceinline__ void prelu_offsets(const elementwise::PReluBwdParams& p, std::int64_t linear, std::int64_t (&off)[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const std::int64_t q = linear / p.shape[d];
    const std::int64_t i = linear - q * p.shape[d];
    linear = q;
    off[0] += i * p.strides[0][d];
    off[1] += i * p.strides[1][d];
    off[2] += i * p.strides[2][d];
  }
}

template <class T>
__global__ void __launch_bounds__(kPReluBlock) prelu_bwd_pass1(elementwise::PReluBwdParams p) {
  using C = Compute<T>;
  __shared__ C tree[kPReluBlock];
  const std::int64_t c = blockIdx.x;
  const std::int64_t len = p.outer * p.inner;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * p.chunk_len;
  const std::int64_t r1 = r0 + p.chunk_len < len ? r0 + p.chunk_len : len;
  const T* g = static_cast<const T*>(p.grad_y);
  const T* x = static_cast<const T*>(p.x);
  const C w = to_compute(static_cast<const T*>(p.weight)[c * p.weight_stride]);
  C acc = C(0);
  for (std::int64_t j = r0 + threadIdx.x; j < r1; j += kPReluBlock) {
    const std::int64_t o = j / p.inner, i = j - o * p.inner;
    std::int64_t off[3];
    prelu_offsets(p, (o * p.channels + c) * p.inner + i, off);
    const C gv = to_compute(g[off[0]]), xv = to_compute(x[off[1]]);
    const bool pos = xv > C(0);
    if (p.compute_grad_x) static_cast<T*>(p.grad_x)[off[2]] = from_compute<T>(pos ? gv : w * gv);
    if (!pos) acc += xv * gv;
  }
  if (!p.compute_grad_weight) return;
  tree[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kPReluBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) tree[threadIdx.x] += tree[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) static_cast<C*>(p.partial)[static_cast<std::int64_t>(blockIdx.y) * p.channels + c] = tree[0];
}

template <class T>
__global__ void __launch_bounds__(kPReluBlock) prelu_bwd_pass2(elementwise::PReluBwdParams p) {
  using C = Compute<T>;
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kPReluBlock + threadIdx.x;
  if (c >= p.channels) return;
  const C* partial = static_cast<const C*>(p.partial);
  C acc = C(0);
  for (std::int64_t k = 0; k < p.chunks; ++k) acc += partial[k * p.channels + c];
  static_cast<T*>(p.grad_weight)[c * p.grad_weight_stride] = from_compute<T>(acc);
}

}  // namespace baracuda::kernels
