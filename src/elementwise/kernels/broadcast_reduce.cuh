// broadcast_reduce: the gradient of a broadcast operand of a binary op,
//   grad_x[k] = sum over the broadcast dims r of  d(op)/d(x)(g, a, b)[r, k].
//
// Scheme (deterministic, no atomics): the host orders the forward output's dims as
// [reduced..., kept...], so element (r, k) has linear index r * kept + k and consecutive
// threads read consecutive kept elements (coalesced for the usual [M, N] + [N] bias case).
// Pass 1: grid (ceil(kept / 256), chunks); a thread sums chunk_len values of r for one k in
// the compute type and writes partial[chunk][k] to the workspace. Pass 2: one thread per k
// adds its chunks in order and stores the rounded result at the gradient's strides.
// 64-bit index math throughout.
#pragma once

#include <cuda_runtime.h>

#include "common/device_types.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

inline constexpr int kReduceBlock = 256;

template <class T, BinaryKind K, int Which>
__global__ void __launch_bounds__(kReduceBlock) broadcast_reduce_pass1(elementwise::BroadcastReduceParams p) {
  using C = Compute<T>;
  constexpr bool kReads = elementwise::binary_grad_reads_inputs(K);
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kReduceBlock + threadIdx.x;
  if (k >= p.kept) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * p.chunk_len;
  const int64_t r1 = r0 + p.chunk_len < p.reduced ? r0 + p.chunk_len : p.reduced;
  const T* g = static_cast<const T*>(p.grad_out);
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  C acc = C(0);
  for (int64_t r = r0; r < r1; ++r) {
    int64_t linear = r * p.kept + k;
    int64_t off[3] = {0, 0, 0};
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t q = linear / p.shape[d];
      int64_t i = linear - q * p.shape[d];
      linear = q;
      off[0] += i * p.strides[0][d];
      off[1] += i * p.strides[1][d];
      off[2] += i * p.strides[2][d];
    }
    const C gv = to_compute(g[off[0]]);
    const C av = kReads ? C(to_compute(a[off[1]])) : C(0);
    const C bv = kReads ? C(to_compute(b[off[2]])) : C(0);
    acc += Which == 0 ? binary_grad_a<K>(gv, av, bv) : binary_grad_b<K>(gv, av, bv);
  }
  static_cast<C*>(p.partial)[static_cast<int64_t>(blockIdx.y) * p.kept + k] = acc;
}

template <class T>
__global__ void __launch_bounds__(kReduceBlock) broadcast_reduce_pass2(elementwise::BroadcastReduceParams p) {
  using C = Compute<T>;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kReduceBlock + threadIdx.x;
  if (k >= p.kept) return;
  const C* partial = static_cast<const C*>(p.partial);
  C acc = C(0);
  for (int64_t c = 0; c < p.chunks; ++c) acc += partial[c * p.kept + k];
  int64_t linear = k, off = 0;
  for (int d = p.kept_rank - 1; d >= 0; --d) {
    int64_t q = linear / p.kept_shape[d];
    off += (linear - q * p.kept_shape[d]) * p.kept_strides[d];
    linear = q;
  }
  static_cast<T*>(p.grad)[off] = from_compute<T>(acc);
}

template <class T, BinaryKind K>
Status launch_broadcast_reduce(const elementwise::BroadcastReduceParams& p, cudaStream_t stream) {
  if (p.kept == 0) return Status::ok();
  const unsigned kb = static_cast<unsigned>((p.kept + kReduceBlock - 1) / kReduceBlock);
  if (p.reduced > 0) {
    dim3 grid(kb, static_cast<unsigned>(p.chunks));
    if (p.which == 0) broadcast_reduce_pass1<T, K, 0><<<grid, kReduceBlock, 0, stream>>>(p);
    else broadcast_reduce_pass1<T, K, 1><<<grid, kReduceBlock, 0, stream>>>(p);
  }
  broadcast_reduce_pass2<T><<<kb, kReduceBlock, 0, stream>>>(p);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string("broadcast_reduce launch failed: ") + cudaGetErrorString(e),
                  StatusSource::kCuda, static_cast<int>(e));
  return Status::ok();
}

}  // namespace baracuda::kernels
