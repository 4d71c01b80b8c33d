// The host/kernel seam of ScanPlan / ScanBackwardPlan (plain C++, no CUDA types).
//
// The tensor is seen as `rows` independent rows of `len` elements along the axis: a row is
// one position of the kept dims (every dim but the axis, collapsed across the operands); its
// element i sits at row_offset(op, row) + i * axis_stride[op]. Operand slots: 0 = the output
// (y or grad_x), 1 = indices (cummax / cummin forward), 2 = x (forward) or grad_y
// (backward), 3 = x, 4 = y, 5 = indices (backward).
//
// Implementations (ScanImpl), chosen at select:
//  * kWarpRow:  one warp per row walking it in tiles of 32 * K * V elements (short rows).
//  * kBlockRow: one block of 256 threads per row walking it in tiles of 256 * K * V.
//  * kLookback: single-pass decoupled look-back: one tile of 256 * K * V per block, tiles
//               handed out in launch order by a ticket counter in the workspace; a tile's
//               carry comes from its predecessors' published aggregates / inclusive prefixes.
//  * kColumnSplit: any axis stride, few rows: the axis cut into `tiles` segments of
//               `seg_len`; pass 1 writes each (segment, row)'s aggregate to the workspace,
//               pass 2 turns each row's aggregates into exclusive prefixes (in order), pass 3
//               rescans each segment from its prefix (the input read twice; deterministic).
//  * kColumn:   any axis stride: one thread per row walking the axis (coalesced across rows
//               when the innermost kept dim is dense).
//  * kCub:      cumsum of one contiguous f32 / f64 row (either direction) by
//               cub::DeviceScan::InclusiveSum (cub_scan.cu); its temporary storage is the
//               workspace.
// The row kernels need axis_stride == 1; `vec` (elements per 16-byte vector of the input,
// or 1) and K (vectors per thread, scan_k) size the per-thread registers.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::scan {

enum class ScanImpl : std::uint8_t { kWarpRow, kBlockRow, kLookback, kColumnSplit, kColumn, kCub };
// The sequential column kernels (one thread walks a row or a segment of it), as against the
// tile kernels; the logcumsumexp backward sums in f64 there (kernels/scan.cuh, LseBwdOp).
constexpr bool is_column_impl(ScanImpl impl) { return impl == ScanImpl::kColumn || impl == ScanImpl::kColumnSplit; }
// The combine a kernel runs: the forward kinds, and the three backward scans that are not a
// plain (reversed) cumsum.
enum class ScanOp : std::uint8_t { kSum, kProd, kMax, kMin, kLse, kProdBwd, kMaxMinBwd, kLseBwd };

inline constexpr int kScanOperands = 6;
inline constexpr int kScanBlockThreads = 256;

struct ScanParams {
  void* out = nullptr;
  void* out_idx = nullptr;
  const void* in[4] = {};    // slots 2..5
  void* workspace = nullptr; // kLookback: ticket, flags, aggregates, inclusive prefixes
  ScanOp op = ScanOp::kSum;
  bool reverse = false;      // the direction this kernel scans (backward: the forward's flipped)
  std::int64_t rows = 0, len = 0;
  int kept_rank = 0;
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[kScanOperands][8] = {};
  std::int64_t axis_stride[kScanOperands] = {};
  // launch shape
  ScanImpl impl = ScanImpl::kColumn;
  int vec = 1;                    // 1 or 16 / sizeof(input element)
  int k = 1;                      // tile kernels: vectors per thread (scan_k; the kernel checks it)
  std::int64_t tiles = 1;         // kLookback: tiles per row; kColumnSplit: segments per row
  std::int64_t seg_len = 0;       // kColumnSplit: elements per segment
  std::size_t flag_bytes = 0;     // kLookback: ticket + flags, zeroed before the launch
};

// Bytes of a kernel's scan state (the combine's operand; device code static_asserts it).
constexpr int scan_state_bytes(ScanOp op, DType t) {
  const bool f64 = t == DType::kF64, integer = t == DType::kI32 || t == DType::kI64;
  switch (op) {
    case ScanOp::kSum:
    case ScanOp::kProd: return (f64 || integer) ? 8 : 4;
    case ScanOp::kLse: return 8;  // f32 (m, s), the linear form; f64 the log-domain value
    case ScanOp::kMax:
    case ScanOp::kMin: return 16;           // value (compute type; integers as themselves) + i64 index
    case ScanOp::kProdBwd: return f64 ? 16 : 8;
    case ScanOp::kLseBwd: return f64 ? 32 : 16;  // (m, s) of the positive and the negative sums
    case ScanOp::kMaxMinBwd: return f64 ? 32 : 24;  // two i64 indices, a sum, a flag
  }
  return 32;
}
inline constexpr int kScanStateSlot = 32;  // workspace bytes per published state

// Vectors per thread: at most 64 bytes of states per thread (registers), 1..4.
constexpr int scan_k(int state_bytes, int vec) {
  const int k = 64 / (state_bytes * vec);
  return k < 1 ? 1 : (k > 4 ? 4 : k);
}

// Per dtype (instances in src/scan/inst/): cumsum, cumprod, cummax / cummin for every dtype;
// logcumsumexp and the backward scans for floating dtypes.
template <DType D> Status launch_scan_sum(const ScanParams& p, cudaStream_t s);
template <DType D> Status launch_scan_prod(const ScanParams& p, cudaStream_t s);
template <DType D> Status launch_scan_maxmin(const ScanParams& p, cudaStream_t s);
template <DType D> Status launch_scan_lse(const ScanParams& p, cudaStream_t s);
template <DType D> Status launch_scan_bwd(const ScanParams& p, cudaStream_t s);
#define BARACUDA_SCAN_SPECS(D)                                                      \
  template <> Status launch_scan_sum<DType::D>(const ScanParams&, cudaStream_t);   \
  template <> Status launch_scan_prod<DType::D>(const ScanParams&, cudaStream_t);  \
  template <> Status launch_scan_maxmin<DType::D>(const ScanParams&, cudaStream_t);
BARACUDA_SCAN_SPECS(kF64)
BARACUDA_SCAN_SPECS(kF32)
BARACUDA_SCAN_SPECS(kF16)
BARACUDA_SCAN_SPECS(kBF16)
BARACUDA_SCAN_SPECS(kI32)
BARACUDA_SCAN_SPECS(kI64)
#undef BARACUDA_SCAN_SPECS
#define BARACUDA_SCAN_FLOAT_SPECS(D)                                                 \
  template <> Status launch_scan_lse<DType::D>(const ScanParams&, cudaStream_t);    \
  template <> Status launch_scan_bwd<DType::D>(const ScanParams&, cudaStream_t);
BARACUDA_SCAN_FLOAT_SPECS(kF64)
BARACUDA_SCAN_FLOAT_SPECS(kF32)
BARACUDA_SCAN_FLOAT_SPECS(kF16)
BARACUDA_SCAN_FLOAT_SPECS(kBF16)
#undef BARACUDA_SCAN_FLOAT_SPECS

// kCub (cub_scan.cu): the workspace CUB asks for (a bound when no device answers), and the
// launch (ws_bytes: the workspace given).
std::size_t cub_cumsum_workspace(DType t, std::int64_t len, bool reverse);
Status launch_cub_cumsum(DType t, const ScanParams& p, std::size_t ws_bytes, cudaStream_t s);

}  // namespace baracuda::scan
