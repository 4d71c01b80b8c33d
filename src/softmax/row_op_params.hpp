// The host/kernel seam of GumbelSoftmaxPlan and SparsemaxPlan (and their backward), plain
// C++, no CUDA types. Host code: row_ops.cpp, gumbel_softmax.cpp, sparsemax.cpp; kernels:
// kernels/row_ops.cuh with kernels/gumbel_softmax.cuh and kernels/sparsemax.cuh.
//
// As SoftmaxParams, the tensor is `rows` rows of `len` elements along the axis; row r's
// element k of operand op sits at row_offset(op, r) + k * axis_stride[op]. Operands:
//   0 out   y (forward) / grad_x (backward)
//   1 in0   x / grad_y
//   2 in1   gumbel forward: the noise tensor (null: Philox noise); backward: y_soft / y;
//           sparsemax forward: none (null)
//   3 out2  gumbel hard forward with save_soft: y_soft (else null)
// `inner` (the product of the dims after the axis) gives each element's logical index,
// (r / inner * len + k) * inner + r % inner, which keys its Philox noise.
//
// Implementations (RowOpImpl):
//  * kWarpRow:   one warp per row, the row in registers (16-byte vectors, K per thread).
//  * kBlockRow:  one block per row, the row in registers (16-byte vectors, K per thread).
//  * kBlockLoop: one block per row walking the row in memory with any axis stride, any
//                length (one pass per statistic; the input is re-read from memory / L2).
#pragma once

#include <cstdint>

#include "common/row_launchers.hpp"

namespace baracuda::softmax {

enum class RowOpImpl : std::uint8_t { kWarpRow, kBlockRow, kBlockLoop };

struct RowOpParams {
  void* out = nullptr;
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  void* out2 = nullptr;
  std::int64_t rows = 0, len = 0, inner = 1;
  int kept_rank = 0;  // collapsed kept dims (0: a single row)
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[4][8] = {};
  std::int64_t axis_stride[4] = {};
  // gumbel_softmax
  double tau = 1.0;
  bool hard = false;
  std::uint64_t seed = 0, offset = 0;
  // launch shape
  RowOpImpl impl = RowOpImpl::kBlockLoop;
  int vec = 1;       // elements per 16-byte vector (register rows)
  int k = 1;         // vectors per thread (compile-time bucket)
  int threads = 32;  // per row (block rows, block loop) or per block (warp rows: 8 rows)
};

// The register buckets that have kernels: K vectors of 16 bytes per thread, K in {1, 4}.
constexpr bool rowop_bucket_built(int k) { return k == 1 || k == 4; }
// The largest block of a register bucket (its __launch_bounds__): 256 for f64, else 1024
// while the row takes at most 64 bytes of f32 registers a thread, else 512. The loop
// kernel runs up to 512 threads.
constexpr int rowop_max_threads(int compute_bytes, int vec, int k, int operands) {
  return compute_bytes == 8 ? 256 : compute_bytes * vec * k * operands <= 64 ? 1024 : 512;
}
constexpr int kRowOpLoopThreads = 512;

// Per dtype, per direction (instances in src/softmax/inst/gumbel_*.inl, sparsemax_*.inl).
// (one namespace each: the macro also defines launch_by_dtype)
namespace gumbel {
// (the backward runs softmax's kernels: softmax/softmax_backward_table.hpp)
BARACUDA_ROW_LAUNCHER("gumbel_softmax", RowOpParams, launch_gumbel_fwd)
}
namespace sparse {
BARACUDA_ROW_LAUNCHERS("sparsemax", RowOpParams, launch_sparsemax_fwd, launch_sparsemax_bwd)
}

}  // namespace baracuda::softmax
