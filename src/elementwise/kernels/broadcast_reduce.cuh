// broadcast_reduce: the gradient of a broadcast operand of a binary op,
//   grad_x[k] = sum over the broadcast dims r of  d(op)/d(x)(g, a, b)[r, k]
// (the term is a functor: per kind, or with the kind chosen at run time).
//
// Scheme (deterministic, no atomics): the host orders the forward output's dims as
// [reduced..., kept...], so element (r, k) has linear index r * kept + k and consecutive
// threads read consecutive kept elements (coalesced for the usual [M, N] + [N] bias case).
// Pass 1: grid (ceil(kept / 256), chunks); a thread sums chunk_len values of r for one k in
// f64 (ReduceAcc) and writes partial[chunk][k] to the workspace. Pass 2: one thread per k
// adds its chunks in order and stores the result, rounded once, at the gradient's strides.
// f64 sums of the (f32-computed) terms: in f32, one chunk's partial sum can overflow to
// +inf and another's to -inf, giving NaN where the exact sum is +-inf (H200 session 8,
// fma backward with huge inputs); in f64 no sum of finite f32 terms overflows, so the result
// is the exactly rounded sum up to f64 rounding. This generic path is not the bandwidth-
// critical one (column_reduce.cuh takes the [M, N] + [N] bias gradients).
// 64-bit index math throughout. kSplit (the bcast_reduce_split SKU): the offsets of
// (r, k) are off(k) + off(r), because the kept and reduced dims are disjoint, so a thread
// decomposes k once and steps r by its stride (one reduced dim) instead of dividing the
// whole linear index for every element.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "common/device_types.cuh"
#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

inline constexpr int kReduceBlock = 256;

// The accumulator of the sums: f64 for the floating types (see above), the type itself else.
template <class T>
using ReduceAcc = std::conditional_t<std::is_floating_point_v<Compute<T>>, double, Compute<T>>;
static_assert(sizeof(ReduceAcc<float>) == elementwise::kBroadcastReduceAccBytes, "host workspace size");

// Grad: a functor (g, a, b) -> the gradient term (BinaryGradFn / BinaryDynGradFn).
template <class T, class Grad, bool kSplit>
__global__ void __launch_bounds__(kReduceBlock) broadcast_reduce_pass1(elementwise::BroadcastReduceParams p, Grad grad) {
  using C = Compute<T>;
  constexpr bool kReads = Grad::kReads;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kReduceBlock + threadIdx.x;
  if (k >= p.kept) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * p.chunk_len;
  const int64_t r1 = r0 + p.chunk_len < p.reduced ? r0 + p.chunk_len : p.reduced;
  const T* g = static_cast<const T*>(p.grad_out);
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  // offsets of (linear index, first..last permuted dim) for the three operands
  auto offsets = [&](int64_t linear, int first, int last, int64_t (&off)[3]) {
    off[0] = off[1] = off[2] = 0;
    for (int d = last - 1; d >= first; --d) {
      int64_t q = linear / p.shape[d];
      int64_t i = linear - q * p.shape[d];
      linear = q;
      off[0] += i * p.strides[0][d];
      off[1] += i * p.strides[1][d];
      off[2] += i * p.strides[2][d];
    }
  };
  auto term = [&](const int64_t (&off)[3]) -> C {
    const C gv = to_compute(g[off[0]]);
    const C av = kReads ? C(to_compute(a[off[1]])) : C(0);
    const C bv = kReads ? C(to_compute(b[off[2]])) : C(0);
    return grad(gv, av, bv);
  };
  ReduceAcc<T> acc = 0;
  if constexpr (kSplit) {
    int64_t kept_off[3], off[3];
    offsets(k, p.reduced_rank, p.rank, kept_off);
    if (p.reduced_rank == 1) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int o = 0; o < 3; ++o) off[o] = kept_off[o] + r * p.strides[o][0];
        acc += term(off);
      }
    } else {
      for (int64_t r = r0; r < r1; ++r) {
        offsets(r, 0, p.reduced_rank, off);
        for (int o = 0; o < 3; ++o) off[o] += kept_off[o];
        acc += term(off);
      }
    }
  } else {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off[3];
      offsets(r * p.kept + k, 0, p.rank, off);
      acc += term(off);
    }
  }
  static_cast<ReduceAcc<T>*>(p.partial)[static_cast<int64_t>(blockIdx.y) * p.kept + k] = acc;
}

template <class T>
__global__ void __launch_bounds__(kReduceBlock) broadcast_reduce_pass2(elementwise::BroadcastReduceParams p) {
  using A = ReduceAcc<T>;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kReduceBlock + threadIdx.x;
  if (k >= p.kept) return;
  const A* partial = static_cast<const A*>(p.partial);
  A acc = 0;
  for (int64_t c = 0; c < p.chunks; ++c) acc += partial[c * p.kept + k];
  int64_t linear = k, off = 0;
  for (int d = p.kept_rank - 1; d >= 0; --d) {
    int64_t q = linear / p.kept_shape[d];
    off += (linear - q * p.kept_shape[d]) * p.kept_strides[d];
    linear = q;
  }
  static_cast<T*>(p.grad)[off] = from_compute<T>(acc);  // rounded once from the f64 sum
}

// grad_a / grad_b: the functors of the two operands (p.which picks one).
template <class T, class GradA, class GradB>
Status launch_broadcast_reduce(const elementwise::BroadcastReduceParams& p, GradA grad_a, GradB grad_b,
                               cudaStream_t stream) {
  if (p.kept == 0) return Status::ok();
  const unsigned kb = static_cast<unsigned>((p.kept + kReduceBlock - 1) / kReduceBlock);
  if (p.reduced > 0) {
    dim3 grid(kb, static_cast<unsigned>(p.chunks));
    if (p.split_index) {
      if (p.which == 0) broadcast_reduce_pass1<T, GradA, true><<<grid, kReduceBlock, 0, stream>>>(p, grad_a);
      else broadcast_reduce_pass1<T, GradB, true><<<grid, kReduceBlock, 0, stream>>>(p, grad_b);
    } else {
      if (p.which == 0) broadcast_reduce_pass1<T, GradA, false><<<grid, kReduceBlock, 0, stream>>>(p, grad_a);
      else broadcast_reduce_pass1<T, GradB, false><<<grid, kReduceBlock, 0, stream>>>(p, grad_b);
    }
  }
  broadcast_reduce_pass2<T><<<kb, kReduceBlock, 0, stream>>>(p);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string("broadcast_reduce launch failed: ") + cudaGetErrorString(e),
                  StatusSource::kCuda, static_cast<int>(e));
  return Status::ok();
}

}  // namespace baracuda::kernels
