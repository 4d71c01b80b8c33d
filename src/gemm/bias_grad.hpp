// The bias-gradient reduction of the GEMM family (kernels/bias_grad.cuh): the candidate
// `cublaslt_bgrad_reduce` runs cuBLASLt without a bias-gradient epilogue and then this
// reduction, for the operand layouts where cuBLASLt's BGRADA / BGRADB find no algorithm.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::gemm {

// out[p, x] = sum over y < y_count of in[p * in_batch_stride + x * sx + y * sy], for
// x < x_count and p < batch; out element (p, x) at p * out_batch_stride + x * out_stride.
struct BiasGradParams {
  const void* in = nullptr;
  void* out = nullptr;
  std::int64_t x_count = 0, y_count = 0;
  std::int64_t sx = 0, sy = 0;
  std::int64_t in_batch_stride = 0;
  std::int64_t out_stride = 1;
  std::int64_t out_batch_stride = 0;
  std::int64_t batch = 1;
};

// f64, f32, f16 or bf16 (the GEMM's dtype); no allocation, no synchronization.
Status launch_bias_grad(DType t, const BiasGradParams& p, cudaStream_t stream);

}  // namespace baracuda::gemm
