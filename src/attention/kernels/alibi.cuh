// ALiBi kernels (AlibiPlan, AlibiBackwardPlan; seam: attention/alibi_params.hpp).
//
// What: y = s - slope[b, h] * |i + off - j| over scores [B, H, Sq, Skv] (or the bias alone, or,
// for the backward, grad_s = grad_y), and the slope gradient -sum grad_y * |i + off - j|.
// Parallel scheme: one warp per row (b, h, i), lanes over j in units of V elements, four units
// in flight per lane (loads issued before the stores, which may alias them in place); 256-thread
// blocks, grid-stride over rows. The slope gradient: pass 1 one block per (slope, chunk of its
// rows) reduces in f64 (lane sums in order, then the fixed-tree block_allreduce) into the
// workspace, pass 2 one thread per slope adds the chunks in order: deterministic, no atomics.
// Preconditions (select): vec16: unit-stride j in s and y, Skv and the other strides multiples
// of V = 16 / sizeof(T), 16-byte aligned pointers.
// Numerics: bias and sum in Compute<T> (f32; f64 for f64) - distance exact below 2^24 -, one
// rounding to T (nvcc may fuse s - slope * d into one FMA); slope gradient terms exact in f64
// (the distance there an f64 integer, exact at any length).
// Speed: `baracuda-bench --suite attention --op alibi` (bf16 [8,16,2048,2048] in place of s).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/alibi_params.hpp"
#include "common/block_reduce.cuh"
#include "common/device_types.cuh"
#include "common/vec_io.cuh"

namespace baracuda::alibi::kernels {

using baracuda::kernels::Compute;
using baracuda::kernels::from_compute;
using baracuda::kernels::to_compute;

// One row by one warp. kGrad: returns the lane's f64 sum of x * distance (x is copied to out
// when out is given); else out = x + bias (x = 0 without an input; the bias is 0 for a copy).
template <class T, int V, bool kVec, bool kGrad>
__device__ __forceinline__ double warp_row(const AlibiParams& p, std::int64_t b, std::int64_t h, std::int64_t i,
                                           Compute<T> slope) {
  using C = Compute<T>;
  constexpr int kBatch = 4;
  const T* in = p.in ? static_cast<const T*>(p.in) + b * p.in_stride[0] + h * p.in_stride[1] + i * p.in_stride[2] : nullptr;
  T* out = p.out ? static_cast<T*>(p.out) + b * p.out_stride[0] + h * p.out_stride[1] + i * p.out_stride[2] : nullptr;
  const std::int64_t sji = p.in_stride[3], sjo = p.out_stride[3];
  const std::int64_t nvec = p.skv / V;
  const std::int64_t base = i + p.offset;
  const int lane = static_cast<int>(threadIdx.x & 31);
  double acc = 0;
  for (std::int64_t v0 = lane; v0 < nvec; v0 += 32 * kBatch) {
    C x[kBatch][V];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const std::int64_t v = v0 + 32 * k;
      if (v >= nvec) break;
      if (in == nullptr) {
#pragma unroll
        for (int q = 0; q < V; ++q) x[k][q] = C(0);
      } else if constexpr (kVec) {
        const auto r = baracuda::kernels::load_vec<T, V>(in + v * V);
#pragma unroll
        for (int q = 0; q < V; ++q) x[k][q] = to_compute(r.v[q]);
      } else {
#pragma unroll
        for (int q = 0; q < V; ++q) x[k][q] = to_compute(in[(v * V + q) * sji]);
      }
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const std::int64_t v = v0 + 32 * k;
      if (v >= nvec) break;
      if constexpr (kGrad) {
        // The distance in f64 (|d0 - q|, exact), one int64 -> f64 conversion per batch of units
        // (per unit in the strided kernel): the per-element int64 -> float -> double chain made
        // this pass conversion-bound. Same terms (below 2^24), same order.
        const double d0 = kVec ? static_cast<double>(base - v0 * V) - static_cast<double>(32 * V * k)
                               : static_cast<double>(base - v * V);
#pragma unroll
        for (int q = 0; q < V; ++q) acc += static_cast<double>(x[k][q]) * fabs(d0 - static_cast<double>(q));
      } else {
#pragma unroll
        for (int q = 0; q < V; ++q) {
          const std::int64_t d = base - (v * V + q);
          x[k][q] = x[k][q] - slope * static_cast<C>(d < 0 ? -d : d);
        }
      }
      if (out == nullptr) continue;
      if constexpr (kVec) {
        baracuda::kernels::Vec<T, V> r;
#pragma unroll
        for (int q = 0; q < V; ++q) r.v[q] = from_compute<T>(x[k][q]);
        baracuda::kernels::store_vec<T, V>(out + v * V, r);
      } else {
#pragma unroll
        for (int q = 0; q < V; ++q) out[(v * V + q) * sjo] = from_compute<T>(x[k][q]);
      }
    }
  }
  return acc;
}

template <class T, int V, bool kVec>
__global__ void __launch_bounds__(kAlibiThreads) alibi_rows(const __grid_constant__ AlibiParams p) {
  using C = Compute<T>;
  const std::int64_t wpb = blockDim.x / 32, warp = threadIdx.x / 32;
  const std::int64_t rows = p.batch * p.heads * p.sq;
  for (std::int64_t r = blockIdx.x * wpb + warp; r < rows; r += static_cast<std::int64_t>(gridDim.x) * wpb) {
    const std::int64_t bh = r / p.sq, i = r - bh * p.sq;
    const std::int64_t b = bh / p.heads, h = bh - b * p.heads;
    const C slope = p.add_bias ? static_cast<C>(p.slopes[b * p.slope_stride[0] + h * p.slope_stride[1]]) : C(0);
    (void)warp_row<T, V, kVec, false>(p, b, h, i, slope);
  }
}

// Pass 1: block (group g, chunk c) sums its rows into partial[g * chunks + c].
template <class T, int V, bool kVec>
__global__ void __launch_bounds__(kAlibiThreads) alibi_grad_chunks(const __grid_constant__ AlibiParams p) {
  __shared__ double smem[33];
  const std::int64_t blk = blockIdx.x;
  const std::int64_t g = blk / p.chunks, c = blk - g * p.chunks;
  const std::int64_t group_rows = p.per_batch ? p.sq : p.batch * p.sq;
  const std::int64_t r0 = c * p.rows_per_chunk;
  const std::int64_t r1 = r0 + p.rows_per_chunk < group_rows ? r0 + p.rows_per_chunk : group_rows;
  const std::int64_t wpb = blockDim.x / 32, warp = threadIdx.x / 32;
  double acc = 0;
  for (std::int64_t r = r0 + warp; r < r1; r += wpb) {
    std::int64_t b, h, i;
    if (p.per_batch) {
      b = g / p.heads;
      h = g - b * p.heads;
      i = r;
    } else {
      h = g;
      b = r / p.sq;
      i = r - b * p.sq;
    }
    acc += warp_row<T, V, kVec, true>(p, b, h, i, Compute<T>(0));
  }
  acc = baracuda::kernels::block_allreduce(acc, [](double a, double b2) { return a + b2; }, 0.0, smem);
  if (threadIdx.x == 0) p.partial[blk] = acc;
}

// Pass 2: slope g's chunks added in order; grad_slope = -sum. (A template only so that each
// instance file's copy is its own symbol.)
template <class T>
__global__ void alibi_grad_finish(const AlibiParams p) {
  const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= p.groups) return;
  double sum = 0;
  for (std::int64_t c = 0; c < p.chunks; ++c) sum += p.partial[g * p.chunks + c];
  const std::int64_t b = p.per_batch ? g / p.heads : 0, h = p.per_batch ? g - b * p.heads : g;
  p.grad_slopes[b * p.slope_stride[0] + h * p.slope_stride[1]] = static_cast<float>(-sum);
}

inline Status launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string(what) + ": " + cudaGetErrorString(e), StatusSource::kCuda, e);
  return Status::ok();
}

template <class T, int V, bool kVec>
Status launch_with(const AlibiParams& p, cudaStream_t s) {
  if (p.grad_slopes != nullptr) {
    if (p.groups == 0) return Status::ok();
    alibi_grad_chunks<T, V, kVec><<<static_cast<unsigned>(p.groups * p.chunks), kAlibiThreads, 0, s>>>(p);
    BARACUDA_TRY(launched("alibi slope gradient (pass 1)"));
    alibi_grad_finish<T><<<static_cast<unsigned>((p.groups + 127) / 128), 128, 0, s>>>(p);
    return launched("alibi slope gradient (pass 2)");
  }
  if (p.grid == 0) return Status::ok();
  alibi_rows<T, V, kVec><<<static_cast<unsigned>(p.grid), kAlibiThreads, 0, s>>>(p);
  return launched("alibi");
}

template <class T>
Status launch_alibi_dtype(const AlibiParams& p, cudaStream_t s) {
  constexpr int kV = static_cast<int>(16 / sizeof(T));
  return p.vec16 ? launch_with<T, kV, true>(p, s) : launch_with<T, 1, false>(p, s);
}

}  // namespace baracuda::alibi::kernels
