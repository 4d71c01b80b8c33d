// The host/kernel seam of the column reductions (kernels in kernels/column_reduce.cuh): the
// bcast_reduce_rows_vec16 SKU of BinaryBackwardPlan and the rows_vec16 SKU of
// PReluBackwardPlan (a = x, b = weight, which = 1). Parameters, the chunk choice and the
// binary per-dtype launchers. Plain C++, no CUDA types.
//
// Iteration space [rows, cols]: the reduced dims of the forward output collapsed to one
// `rows` dim, the kept dims to one unit-stride run of `cols` elements (a bias gradient:
// grad_out [M, N], b [N], rows = M, cols = N; PReLU: x [N, C], weight [C]).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/runtime.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/elementwise.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::elementwise {

inline constexpr int kColumnBlock = 256;      // threads of both passes
inline constexpr int kColumnBlocksPerSm = 4;  // pass 1: resident blocks per SM (__launch_bounds__)

struct ColumnReduceParams {
  int which = 1;               // the reduced gradient: 0 = grad_a, 1 = grad_b
  bool write_other = false;    // also write the other operand's gradient ([rows, cols])
  bool write_reduced = true;   // the reduced gradient (false: pass 1 writes only the other one)
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
  int block_cols = 16;           // 16-byte column vectors per pass-1 block (a power of two <= kColumnBlock)
  bool pdl = false;              // launch pass 2 as a programmatic dependent of pass 1 (sm_90+)
};

// What a plan's select makes of a problem: why the SKU refuses it ("" = it accepts), else
// the parameters (pointers set at run) and the workspace for the partial sums.
struct ColumnReduceSetup {
  std::string rejection;
  ColumnReduceParams params;
  std::size_t workspace = 0;
};
inline ColumnReduceSetup column_reduce_refusal(std::string why) {
  ColumnReduceSetup cr;
  cr.rejection = std::move(why);
  return cr;
}

// Rows per chunk: about kColumnWaves waves of resident pass-1 blocks (kColumnBlocksPerSm per
// SM: one wave would leave the kernel waiting on its slowest SM, many more would grow the
// workspace and pass 2), at least 4 rows per row lane; blocks of at most kColumnBlockCols
// column vectors (more row lanes a block). Measured on the H200 (session 8, bias_add_bwd bf16
// [16384, 8192], % of copy): block_cols 8 / 16 / 32 / 64 / 128 / 256 at two waves 83.5 /
// 89.0 / 88.5 / 87.2 / 85.9 / 83.6; 16 at three waves 90.1-90.2 (one wave 87.4 and four
// waves 88.0 at 32). Sets block_cols, chunks and chunk_len from rows and cols (a multiple of
// vec, the elements of a 16-byte vector).
inline constexpr int kColumnBlockCols = 16;
inline constexpr int kColumnWaves = 3;
inline void choose_column_chunks(ColumnReduceParams& p, std::int64_t vec, const DeviceCaps& caps) {
  const std::int64_t vecs = p.cols / vec;
  p.block_cols = 1;
  while (p.block_cols < kColumnBlockCols && p.block_cols < vecs) p.block_cols *= 2;
  const std::int64_t lanes = kColumnBlock / p.block_cols;
  const std::int64_t col_blocks = (vecs + p.block_cols - 1) / p.block_cols;
  const std::int64_t target = static_cast<std::int64_t>(std::max(caps.sm_count, 1)) * kColumnBlocksPerSm * kColumnWaves;
  std::int64_t chunks = std::max<std::int64_t>(1, target / col_blocks);
  chunks = std::min({chunks, (p.rows + lanes * 4 - 1) / (lanes * 4), std::int64_t{65535}});
  p.chunk_len = (p.rows + chunks - 1) / chunks;
  p.chunks = (p.rows + p.chunk_len - 1) / p.chunk_len;
  p.pdl = caps.sm >= 90;
}

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
