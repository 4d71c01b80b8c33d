// The host/kernel seam of SoftmaxPlan / SoftmaxBackwardPlan (plain C++, no CUDA types).
//
// The tensor is seen as `rows` independent rows of `len` elements along the axis: a row is
// one position of the kept dims (every dim but the axis, collapsed across the operands),
// its element k sits at row_offset(op, row) + k * axis_stride[op]. Operands: 0 = the output
// (y or grad_x), 1 = the first input (x or grad_y), 2 = the second input (y, backward only).
//
// Implementations (SoftmaxImpl), chosen at select:
//  * kWarpRow:    one warp per row, the row in registers (short rows).
//  * kBlockRow:   one block of `threads` per row, the row in registers.
//  * kClusterRow: a thread-block cluster of `cluster` blocks per row (sm_90), each holding a
//                 slice in registers; the (max, sum) pairs are merged through distributed
//                 shared memory.
//  * kSplitRow:   any length: pass 1 writes per-slice statistics to the workspace, pass 2
//                 merges them (fixed order) and writes its slice (the input read twice).
//  * kColumn:     any axis stride: one thread per row walking the axis (coalesced across
//                 rows when the innermost kept dim is dense), two sweeps.
//  * kTmaRow:     sm_90, 16-bit and f32 rows of 4 KiB or more: persistent blocks (or
//                 clusters of 2..16 for long rows) with `stages` rows in flight in shared
//                 memory, filled by bulk copies (kernels/softmax_tma.cuh, common/tma_rows.hpp).
// The row kernels need axis_stride == 1; `vec` (elements per 16-byte vector, or 1) and `k`
// (vectors per thread) size the per-thread registers; a slice is threads * k * vec elements.
#pragma once

#include <cstdint>

#include "common/row_launchers.hpp"

namespace baracuda::softmax {

enum class SoftmaxImpl : std::uint8_t { kWarpRow, kBlockRow, kClusterRow, kSplitRow, kColumn, kTmaRow };

struct SoftmaxParams {
  void* out = nullptr;
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  void* partial = nullptr;  // kSplitRow: rows * slices statistics (2 compute values each)
  bool log = false;
  double scale = 1.0;  // backward: grad_x is multiplied by it (GumbelSoftmaxBackwardPlan: 1 / tau)
  std::int64_t rows = 0, len = 0;
  int kept_rank = 0;  // collapsed kept dims (0: a single row)
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[3][8] = {};
  std::int64_t axis_stride[3] = {};
  // launch shape
  SoftmaxImpl impl = SoftmaxImpl::kColumn;
  int vec = 1;              // 1 or 16 / sizeof(T)
  int k = 1;                // vectors per thread (compile-time bucket)
  int threads = 32;         // per row (block / cluster / split), or per block (warp rows, column)
  int cluster = 1;          // kClusterRow, kTmaRow
  std::int64_t slices = 1;  // kClusterRow: == cluster; kSplitRow: slices per row
  int stages = 0;           // kTmaRow: rows in flight per block
  std::int64_t grid = 0;    // kTmaRow: persistent blocks
};

// Per dtype, per direction (instances in src/softmax/inst/).
BARACUDA_ROW_LAUNCHERS("softmax", SoftmaxParams, launch_softmax_fwd, launch_softmax_bwd)

}  // namespace baracuda::softmax

namespace baracuda::softmax {

// The (impl, vectorised, k) buckets that have kernels (vectors of 16 bytes per thread: at
// most 8 for one operand, 4 for two, so a 1024-thread block stays within 64 registers).
// Host and device both read this table.
// The largest block of a bucket (its __launch_bounds__, which keeps the row in registers
// without spills): 1024 threads for 16-byte vectors of 16/32-bit types with at most 64 bytes
// of row registers per thread, else 512 (scalar loads), and 256 for f64 (its exp needs the
// registers).
constexpr int row_max_threads(int elem_bytes, int vec, int row_bytes_per_thread) {
  return elem_bytes == 8 ? 256 : (vec == 1 || row_bytes_per_thread > 64) ? 512 : 1024;
}
constexpr bool row_bucket_built(SoftmaxImpl impl, bool vec, int k, bool bwd) {
  switch (impl) {
    case SoftmaxImpl::kWarpRow: return vec ? (k == 1 || k == 2 || k == 4) : (k == 1 || k == 4 || k == 16);
    case SoftmaxImpl::kBlockRow: return vec ? (k == 1 || k == 2 || k == 4 || (k == 8 && !bwd)) : (k == 4 || k == 16);
    case SoftmaxImpl::kClusterRow: return vec && (k == 4 || (k == 8 && !bwd));
    case SoftmaxImpl::kSplitRow: return vec ? k == 2 : k == 4;
    default: return false;
  }
}

}  // namespace baracuda::softmax
