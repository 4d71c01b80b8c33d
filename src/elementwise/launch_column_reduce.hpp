// The host/kernel seam of the bcast_reduce_rows_vec16 SKU of BinaryBackwardPlan (kernels in
// kernels/column_reduce.cuh): parameters and the per-dtype launchers. Plain C++, no CUDA
// types.
//
// Iteration space [rows, cols]: the reduced dims of the forward output collapsed to one
// `rows` dim, the kept dims to one unit-stride run of `cols` elements (a bias gradient:
// grad_out [M, N], b [N], rows = M, cols = N).
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/elementwise.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::elementwise {

inline constexpr int kColumnBlock = 256;      // threads of both passes
inline constexpr int kColumnBlocksPerSm = 4;  // pass 1: resident blocks per SM (__launch_bounds__)

struct ColumnReduceParams {
  int which = 1;               // the reduced gradient: 0 = grad_a, 1 = grad_b
  bool write_other = false;    // also write the other operand's gradient ([rows, cols])
  const void* grad_out = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* grad_reduced = nullptr;  // [cols], unit stride
  void* grad_other = nullptr;    // [rows, cols], unit inner stride
  void* partial = nullptr;       // workspace: [chunks][cols] accumulators (f32; f64 for f64)
  std::int64_t rows = 0;
  std::int64_t cols = 0;         // a multiple of the 16-byte vector width
  // Row strides in elements: grad_out, the other operand's input, the other gradient (the
  // reduced operand's input is the same in every row).
  std::int64_t row_stride[3] = {};
  std::int64_t chunks = 1;       // row chunks (pass 1 grid.y)
  std::int64_t chunk_len = 0;    // rows per chunk
  int block_cols = 32;           // 16-byte column vectors per pass-1 block (a power of two <= kColumnBlock)
};

// Pass 1 then pass 2 for kind's gradients (per-kind functors for add, sub, mul, div and the
// zero-gradient kinds, the run-time-kind functor for the others).
template <DType D> Status launch_column_reduce(BinaryKind kind, const ColumnReduceParams& p, cudaStream_t s);
template <> Status launch_column_reduce<DType::kF64>(BinaryKind, const ColumnReduceParams&, cudaStream_t);
template <> Status launch_column_reduce<DType::kF32>(BinaryKind, const ColumnReduceParams&, cudaStream_t);
template <> Status launch_column_reduce<DType::kF16>(BinaryKind, const ColumnReduceParams&, cudaStream_t);
template <> Status launch_column_reduce<DType::kBF16>(BinaryKind, const ColumnReduceParams&, cudaStream_t);

// Run-time dtype dispatch (launch_binary.cpp).
Status launch_binary_bwd_column_reduce(DType d, BinaryKind kind, const ColumnReduceParams& p, cudaStream_t s);

}  // namespace baracuda::elementwise
