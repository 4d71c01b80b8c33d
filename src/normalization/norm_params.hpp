// The host/kernel seam of LayerNormPlan / RMSNormPlan and their backward (plain C++).
//
// The tensor is `rows` rows of `n` unit-stride elements (the normalized dims); row r of
// operand op starts at row_offset(op, r) through the collapsed kept dims. Operands:
// forward 0 = y, 1 = x, 2 = residual, 3 = residual_out; backward 0 = grad_x, 1 = grad_y, 2 = x.
// weight / bias / grad_weight / grad_bias are unit-stride [n]; mean / rstd are [rows].
//
// Implementations: kTmaRow (see below), kWarpRow (a warp per row), kBlockRow (a block per row), kClusterRow (a
// cluster of `cluster` blocks per row, sm_90), kSplitRow (any length: `cluster` blocks per row
// that are not a cluster; pass 1 writes each slice's statistic to row_stats, pass 2 re-reads
// the slice, merges the row's statistics in slice order and writes). The row lives in registers: thread t of the
// row (or of its slice) holds k vectors of `vec` elements. The backward runs `units`
// persistent row workers (warps / blocks / clusters), each taking rows unit, unit + units,
// ...; a worker adds grad_y * xhat and grad_y of its own columns over its rows in registers
// and writes them to the workspace (partial[unit][n], two planes), and a second kernel sums
// the units in order per column.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/ops/normalization.hpp"
#include "common/row_launchers.hpp"
#include "common/tma_rows.hpp"

namespace baracuda::norm {

enum class NormImpl : std::uint8_t { kWarpRow, kBlockRow, kClusterRow, kSplitRow, kTmaRow, kTmaLean };

// kTmaRow (forward, sm_90, kernels/norm_tma.cuh): persistent blocks of up to kTmaMaxThreads
// threads, each thread k = kTmaVecsPerThread = 4 16-byte vectors of the row (slices up to
// 2048 vectors), up to kTmaMaxStages rows in flight per block in shared memory.
// Launch-shape constants: common/tma_rows.hpp.
using rows::kTmaMaxStages;
using rows::kTmaMaxThreads;
using rows::kTmaVecsPerThread;
// kTmaLean (sm_90; forward kernels/norm_tma_lean.cuh, backward norm_bwd_tma_lean.cuh, whose
// units are its clusters): tma_row's scheme with compile-time
// LayerNorm / RMSNorm and residual, weight and bias in registers (no shared-memory slices),
// the smallest cluster whose slice fits rows::kTmaPreferThreads threads (two blocks an SM),
// and one push exchange (common/cluster_push.cuh) per row across a cluster. Shared memory
// of both: rows::tma_row_smem_bytes (tma_row keeps weight and bias in two fixed slices).
struct NormParams {
  NormArgs fwd;          // the forward's pointers (the plan's args, as given)
  NormBackwardArgs bwd;  // the backward's
  void* partial = nullptr;
  void* row_stats = nullptr;  // kSplitRow: rows x cluster statistics (workspace, after partial)
  std::size_t row_stats_offset = 0;  // bytes into the workspace
  bool layer = true;  // LayerNorm (else RMSNorm)
  bool has_weight = false, has_bias = false, save_stats = false, add_residual = false;
  double eps = 0;
  std::int64_t rows = 0, n = 0;
  double inv_n = 0;  // 1 / n
  int kept_rank = 0;
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[4][8] = {};
  NormImpl impl = NormImpl::kBlockRow;
  int vec = 1, k = 1, threads = 32, cluster = 1;  // cluster: blocks per row (kClusterRow, kSplitRow, kTmaRow, kTmaLean)
  std::int64_t units = 1;  // backward: persistent workers
  int stages = 0;          // kTmaRow / kTmaLean: rows in flight per block
  std::int64_t grid = 0;   // kTmaRow / kTmaLean: persistent blocks
};

// (vectorised, k) buckets with kernels. Forward: up to 4 vectors per thread (two arrays
// with the residual); backward: up to 2 16-byte vectors / 4 scalars (grad_y, x and two f32
// accumulators per element live in registers).
constexpr bool norm_bucket_built(NormImpl impl, bool vec, int k, bool bwd) {
  if (impl == NormImpl::kSplitRow) return vec ? k == 2 : k == 4;
  if (!vec) return impl != NormImpl::kClusterRow && (k == 1 || k == 4 || (k == 16 && !bwd));
  if (bwd) return k == 1 || k == 2;
  return k == 1 || k == 2 || k == 4;
}
// Threads per block of a bucket (its __launch_bounds__): f64 runs 256 (double math needs the
// registers); the forward runs 1024 with 16-byte vectors and <= 64 bytes of row registers
// per thread (x and residual), else 512; the backward at most 512 (its accumulators need the
// registers). Capping these buckets at 64 registers for >= 50% occupancy spills (measured
// with ptxas -v: forward bf16 k = 4 26..76 bytes, backward k = 1 at 1024 threads 24..80
// bytes), so there is no min-blocks bound; see docs/softmax-norm.md.
constexpr int norm_max_threads(int elem_bytes, int vec, int row_bytes_per_thread, bool bwd) {
  return elem_bytes == 8 ? 256 : (bwd || vec == 1 || row_bytes_per_thread > 64) ? 512 : 1024;
}

BARACUDA_ROW_LAUNCHERS("norm", NormParams, launch_norm_fwd, launch_norm_bwd)

}  // namespace baracuda::norm
