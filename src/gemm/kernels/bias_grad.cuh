// Bias gradient of a GEMM operand, for the layouts where cuBLASLt's BGRADA / BGRADB
// epilogues find no algorithm: out[p, x] = sum over y of in[p, x, y], where element
// (x, y) of batch p sits at p * in_batch_stride + x * sx + y * sy (elements) of a strided
// matrix (bias_grad of A: x = row i of op(A), y = k; of B: x = column j, y = k).
//
// Accumulation in f32 (f64 for f64) in a fixed order, so results are deterministic. Two
// shapes of the same reduction:
//  * bias_grad_lines_kernel: one thread per output x, looping over y. Used when the outputs
//    are the unit-stride direction (sx == 1), so a warp's 32 loads of one y are coalesced.
//  * bias_grad_warp_kernel: one warp per output x, lanes striding over y, then a butterfly
//    of shuffles. Used otherwise (y is the unit-stride direction, or neither is).
#pragma once

#include <cstdint>

#include "common/device_types.cuh"
#include "gemm/bias_grad.hpp"

namespace baracuda::kernels {

using gemm::BiasGradParams;

inline constexpr int kBiasGradBlock = 256;

template <class T>
__global__ void __launch_bounds__(kBiasGradBlock) bias_grad_lines_kernel(BiasGradParams p) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kBiasGradBlock + threadIdx.x;
  if (x >= p.x_count) return;
  const T* line = static_cast<const T*>(p.in) + blockIdx.y * p.in_batch_stride + x * p.sx;
  Compute<T> s = 0;
  for (std::int64_t y = 0; y < p.y_count; ++y) s += to_compute(line[y * p.sy]);
  static_cast<T*>(p.out)[blockIdx.y * p.out_batch_stride + x * p.out_stride] = from_compute<T>(s, 0);
}

template <class T>
__global__ void __launch_bounds__(kBiasGradBlock) bias_grad_warp_kernel(BiasGradParams p) {
  constexpr int kWarps = kBiasGradBlock / 32;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (x >= p.x_count) return;  // whole warps leave together
  const int lane = threadIdx.x % 32;
  const T* line = static_cast<const T*>(p.in) + blockIdx.y * p.in_batch_stride + x * p.sx;
  Compute<T> s = 0;
  for (std::int64_t y = lane; y < p.y_count; y += 32) s += to_compute(line[y * p.sy]);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
  if (lane == 0) static_cast<T*>(p.out)[blockIdx.y * p.out_batch_stride + x * p.out_stride] = from_compute<T>(s, 0);
}

}  // namespace baracuda::kernels
