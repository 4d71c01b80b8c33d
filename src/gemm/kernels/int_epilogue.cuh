// IntGemmPlan's epilogue: D[i, j] = store(f32(acc[i, j]) * sa * sb + bias[j]).
//
// What: reads the exact int32 product cuBLASLt wrote to the workspace (dense, row- or
// column-major), applies the per-tensor / per-row / per-column f32 scales and the f32 bias,
// and stores D in its dtype (i8, f16, bf16, f32) and layout (either order, any ld).
// Parallel scheme: one thread per element over a grid-stride loop, the linear index running
// along D's contiguous dimension so the stores (and the reads when the intermediate has D's
// order, which select arranges whenever cuBLASLt's int8 rules allow) are coalesced.
// Numerics: int32 -> f32 round to nearest even (cvt.rn), then each multiply / add in f32
// with explicit round-to-nearest intrinsics (no FMA contraction), in the order
// ((acc * sa) * sb) + bias; the store rounds to nearest even; i8 saturates to [-128, 127]
// and NaN stores 0. reference/gemm_quant.cpp computes the same f32 expression on the host.
// Memory-bound (4 bytes read + <= 4 bytes written per element); speed: bench case
// gemm.int8.8192^3.{f16,bf16} (the scaled outputs).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gemm/int_epilogue.hpp"

namespace baracuda::gemm::kernels {

template <class T>
__device__ __forceinline__ T int_store(float v);
template <>
__device__ __forceinline__ float int_store<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half int_store<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 int_store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ std::int8_t int_store<std::int8_t>(float v) {
  if (v != v) return 0;
  const int r = __float2int_rn(v);  // saturates to the int32 range
  return static_cast<std::int8_t>(r < -128 ? -128 : (r > 127 ? 127 : r));
}

template <class T>
__global__ void int_epilogue_kernel(const IntEpilogueParams p) {
  const std::int64_t total = p.m * p.n;
  const std::int64_t inner = p.d_row_major ? p.n : p.m;
  T* d = static_cast<T*>(p.d);
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t outer = idx / inner, in = idx - outer * inner;
    const std::int64_t i = p.d_row_major ? outer : in, j = p.d_row_major ? in : outer;
    const std::int32_t a = p.acc[p.acc_row_major ? i * p.n + j : j * p.m + i];
    float v = __int2float_rn(a);
    if (p.scale_a) v = __fmul_rn(v, p.scale_a[p.per_row_a ? i : 0]);
    if (p.scale_b) v = __fmul_rn(v, p.scale_b[p.per_col_b ? j : 0]);
    if (p.bias) v = __fadd_rn(v, p.bias[j]);
    d[outer * p.ld + in] = int_store<T>(v);
  }
}

template <class T>
Status launch_int_epilogue_t(const IntEpilogueParams& p, cudaStream_t s) {
  const std::int64_t total = p.m * p.n;
  if (total == 0) return Status::ok();
  constexpr int kThreads = 256;
  const std::int64_t want = (total + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < (std::int64_t{1} << 20) ? want : (std::int64_t{1} << 20));
  int_epilogue_kernel<T><<<blocks, kThreads, 0, s>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string("int gemm epilogue launch: ") + cudaGetErrorString(e));
}

}  // namespace baracuda::gemm::kernels
