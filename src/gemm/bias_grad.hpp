// The bias-gradient reduction of the GEMM family: the candidates `cublaslt_bgrad_reduce`
// (cuBLASLt without a bias-gradient epilogue, for the operand layouts where BGRADA / BGRADB
// find no algorithm) and `cublaslt_dact` (the column sums of D) run cuBLASLt and then this
// reduction. Two ways, chosen at select by plan_bias_grad:
//  * column_stream: the sums run down unit-stride runs of columns (one batch, 16-byte
//    aligned operand and output, whole 16-byte vectors): the elementwise family's column
//    reduction (elementwise/launch_column_reduce.hpp, the one ReducePlan's
//    column_stream_vec16 and BinaryBackwardPlan's bias gradient run): row chunks over the
//    whole device, f32 partials (f64 for f64) in the workspace, added in chunk order;
//  * otherwise kernels/bias_grad.cuh (one thread or one warp per output, any strides and
//    batches; no workspace).
// Both deterministic.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/runtime.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/workspace.hpp"
#include "elementwise/launch_column_reduce.hpp"

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

// What select makes of one bias gradient: the shape, and the column reduction's parameters
// and partials when it takes the case (workspace > 0 then).
struct BiasGradPlan {
  DType dtype = DType::kF32;
  BiasGradParams shape;
  bool column_stream = false;
  elementwise::ColumnReduceParams column;
  std::size_t workspace = 0;
};

// in_alignment / out_alignment: the bytes the operand summed and bias_grad promise.
// bias_grad_by_columns: whether plan_bias_grad takes the column reduction for the shape
// (before any workspace cap).
bool bias_grad_by_columns(DType t, const BiasGradParams& shape, int in_alignment, int out_alignment);
BiasGradPlan plan_bias_grad(DType t, const BiasGradParams& shape, int in_alignment, int out_alignment,
                            const DeviceCaps& caps);

// f64, f32, f16 or bf16 (the GEMM's dtype); `partial` holds plan.workspace bytes (256-byte
// aligned). No allocation, no synchronization.
Status launch_bias_grad(const BiasGradPlan& plan, const void* in, void* out, void* partial, cudaStream_t stream);

}  // namespace baracuda::gemm
