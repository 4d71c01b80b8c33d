// The host/kernel seam of Int4GemmPlan (plain C++, no CUDA types): the decode kernel's
// launch (kernels/int4_gemv.cuh), its split-K reduction, and the dequantization kernel of
// the cuBLASLt path (kernels/int4_dequant.cuh). Rules in baracuda/ops/gemm_int4.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "core/workspace_align.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::gemm {

// The weight operand as every int4 kernel reads it.
struct Int4Weights {
  const void* w = nullptr;         // packed, row n at byte n * ld_bytes, 16-byte aligned (row-major)
  std::int64_t ld_bytes = 0;       // a multiple of 16
  const void* scales = nullptr;    // [N, G], act dtype
  const void* zeros = nullptr;     // [N, G], act dtype; null for s4
  bool is_signed = true;           // s4 (no zeros) or u4 (zeros)
  bool tiled = false;              // Int4WeightLayout::kTiled16x128: vector (n, k) at int4_tiled_offset(n, k, K)
  std::int64_t n = 0, k = 0;
  std::int64_t group_size = 0;     // 32, 64, 128 or K
  std::int64_t groups = 0;         // K / group_size
};

// Launch shape of the decode kernel, fixed at select from M, N, K and the device.
struct Int4GemvConfig {
  int splits = 1;             // blocks along K; > 1: partial sums in the workspace
  std::int64_t kslice = 0;    // K per split, a multiple of 128
  std::size_t smem_bytes = 0; // dynamic shared memory per block (the staged X slice)
  std::int64_t row_blocks = 0;
  int group_shift = 63;       // w4a16_stream: k >> group_shift is k / group_size for k < K
};
inline constexpr int kInt4GemvWarps = 8;         // warps per block
inline constexpr int kInt4GemvRowsPerWarp = 32;  // two 16-row mma tiles
inline constexpr int kInt4GemvRowsPerBlock = kInt4GemvWarps * kInt4GemvRowsPerWarp;
inline constexpr int kInt4GemvMaxM = 16;
// X row stride in shared memory: kslice + 32 elements (64 bytes of padding: the 16-byte
// reads of a quarter warp hit distinct banks).
inline std::size_t int4_gemv_smem_bytes(std::int64_t m, std::int64_t kslice) {
  return static_cast<std::size_t>(m * (kslice + 32) * 2);
}

struct Int4GemvParams {
  Int4Weights wt;
  DType act = DType::kBF16;  // f16 or bf16
  const void* x = nullptr;
  std::int64_t ldx = 0;
  bool x_vec16 = false;      // x 16-byte aligned and ldx % 8 == 0: 16-byte loads of x
  const void* bias = nullptr;
  void* y = nullptr;
  std::int64_t ldy = 0;
  std::int64_t m = 0;
  Int4GemvConfig cfg;
  float* partial = nullptr;  // cfg.splits > 1: [splits, M, N] f32 in the workspace
};

// Sets the kernel's dynamic shared memory limit (once per select; needs the device).
Status int4_gemv_allow_smem(DType act, std::int64_t m, std::size_t smem_bytes);
Status launch_int4_gemv(const Int4GemvParams& p, cudaStream_t stream);

// The streaming decode kernel (kernels/int4_stream.cuh, SKU w4a16_stream): same parameters
// (cfg from the stream launch shape, group_shift set); at most 2 blocks of
// kInt4GemvWarps warps per SM.
inline constexpr int kInt4StreamBlocksPerSm = 2;
Status int4_stream_allow_smem(DType act, bool is_signed, std::int64_t m, std::size_t smem_bytes);
Status launch_int4_stream(const Int4GemvParams& p, cudaStream_t stream);

// The bulk-copy decode kernel (kernels/int4_bulk.cuh, SKU w4a16_bulk, sm_90+): a CTA of
// `groups` x kInt4BulkChunkWarps consumer warps + 1 producer warp owns a run of 16-row weight
// tiles of one K slice; the producer streams stages of 16 rows x kInt4BulkStageK k (one
// cp.async.bulk per row, kInt4BulkRowBytes apart in shared memory, the rows' scales / zeros
// beside them) through a ring of `stages` shared-memory stages; consumer group i takes the
// stages i, i + groups, ... (kInt4BulkChunkWarps warps, one 128-k chunk each). Shape fixed at
// select (bulk_config).
inline constexpr int kInt4BulkChunkWarps = 8;  // consumer warps of a group: one 128-k chunk each
inline constexpr int kInt4BulkMaxGroups = 2;
inline constexpr int kInt4BulkTileRows = 16;
inline constexpr std::int64_t kInt4BulkStageK = 128 * kInt4BulkChunkWarps;
inline constexpr int kInt4BulkRowBytes = static_cast<int>(kInt4BulkStageK / 2) + 64;  // + 64: conflict-free 16-byte reads
inline constexpr int kInt4BulkMaxStages = 16;
inline constexpr std::size_t kInt4BulkBarrierBytes = 2 * kInt4BulkMaxStages * 8;  // full + empty mbarriers
constexpr int int4_bulk_threads(int groups) { return (groups * kInt4BulkChunkWarps + 1) * 32; }

struct Int4BulkConfig {
  int splits = 1;                 // K slices; > 1: f32 partial sums in the workspace, reduced after
  std::int64_t kslice = 0;        // a multiple of kInt4BulkStageK
  std::int64_t tiles = 0;         // ceil(N / 16)
  int ctas_per_slice = 1;         // grid = ctas_per_slice x splits (one wave: <= ctas_per_sm x SMs)
  int ctas_per_sm = 1;            // resident CTAs per SM the shape was sized for (1 or 2)
  int groups = 1;                 // consumer groups (2 with 1 CTA per SM: 16 consumer warps)
  int stages = 0;                 // ring depth, a multiple of groups, <= kInt4BulkMaxStages
  int red_buffers = 2;            // tile-partial buffers: 2 (one barrier per tile) or 1 (two;
                                  // when a buffer is large: more room for stages)
  int scale_row_bytes = 0;        // one row's scales (or zeros) of a full stage when they can be
                                  // bulk-copied (G % 8 == 0), else 0 (read from global memory)
  std::size_t x_off = 0, red_off = 0, ring_off = 0;  // shared-memory offsets (bytes)
  std::size_t stage_bytes = 0;    // weights, then scales, then zeros of one stage
  std::size_t smem_bytes = 0;     // dynamic shared memory per CTA
};

struct Int4BulkParams {
  Int4GemvParams g;               // g.cfg.kslice / splits / group_shift mirror the bulk shape (X
                                  // staging and the split-K reduction are shared with w4a16_gemv)
  Int4BulkConfig b;
  bool scale_bulk = false;        // b.scale_row_bytes > 0 and scales (zeros) 16-byte aligned
};
Status int4_bulk_allow_smem(DType act, bool is_signed, std::int64_t m, int groups, std::size_t smem_bytes);
Status launch_int4_bulk(const Int4BulkParams& p, cudaStream_t stream);

// The stream-K decode kernel (kernels/int4_streamk.cuh, SKU w4a16_streamk): blocks of
// kInt4StreamKWarps warps, one resident per SM, block b on K slice b % splits (g.cfg:
// kslice, splits, group_shift, smem_bytes); warp j of a slice's warps_per_split takes the
// units (16-row tile, 128-k chunk) [j U / W, (j + 1) U / W); partial sums
// [splits, tiles, slots, 16, M] f32 in the workspace, reduced by a second kernel.
inline constexpr int kInt4StreamKWarps = 16;
// Units in flight per warp (the ring's depth): 4 for M <= 8 (NT = 1), 3 for M <= 16, and K slices
// whose X is at most kInt4StreamKMaxXBytes (a short X staging before the stream starts): the
// best of D in {3, 4, 6, 8} x {1, 2, 4} slices on the H200 (bench/results/h200-2026-12-04-session10.md).
inline constexpr int int4_streamk_stages(std::int64_t m) { return m <= 8 ? 4 : 3; }
inline constexpr std::size_t kInt4StreamKMaxXBytes = 64 * 1024;
struct Int4StreamKConfig {
  std::int64_t tiles = 0;            // ceil(N / 16)
  std::int64_t warps_per_split = 0;  // W (<= the units of every slice)
  std::int64_t slots = 0;            // partial slots per (slice, tile): at least the most warps a tile meets
  int grid = 0;                      // blocks: a multiple of g.cfg.splits
  int stages = 4;                    // int4_streamk_stages(M)
  std::size_t ring_offset = 0;       // int4_streamk_ring_offset(M, kslice)
  bool pdl = false;                  // the reduction as a programmatic dependent launch (sm_90+)
};
struct Int4StreamKParams {
  Int4GemvParams g;               // g.partial: the slots, at the workspace's start
  Int4StreamKConfig k;
  int* counts = nullptr;          // [splits, tiles]: the slots each (slice, tile) filled, written
                                  // by its last warp (int4_streamk_counts_offset into the workspace)
};
// Shared memory of a w4a16_streamk block: X's slice (int4_gemv_smem_bytes), then each warp's
// ring of `stages` units (1 KiB each: 32 lanes x 2 rows x 16 bytes).
inline std::size_t int4_streamk_ring_offset(std::int64_t m, std::int64_t kslice) {
  return (int4_gemv_smem_bytes(m, kslice) + 127) / 128 * 128;
}
inline std::size_t int4_streamk_smem_bytes(std::int64_t m, std::int64_t kslice, int stages) {
  return int4_streamk_ring_offset(m, kslice) + static_cast<std::size_t>(kInt4StreamKWarps) * stages * 1024;
}
// Workspace of w4a16_streamk: the partial slots [splits, tiles, slots, 16, M] f32, then (at a
// 256-byte boundary) the slot counts [splits, tiles] int32.
inline std::size_t int4_streamk_counts_offset(std::int64_t m, std::int64_t splits, const Int4StreamKConfig& k) {
  return align_workspace(static_cast<std::size_t>(splits * k.tiles * k.slots * 16 * m) * sizeof(float));
}
inline std::size_t int4_streamk_workspace_bytes(std::int64_t m, std::int64_t splits, const Int4StreamKConfig& k) {
  return int4_streamk_counts_offset(m, splits, k) + static_cast<std::size_t>(splits * k.tiles) * sizeof(int);
}
Status int4_streamk_allow_smem(DType act, bool is_signed, bool tiled, std::int64_t m, std::size_t smem_bytes);
Status launch_int4_streamk(const Int4StreamKParams& p, cudaStream_t stream);

// The one-pass decode kernel (kernels/int4_onepass.cuh, SKU w4a16_onepass): the units and
// warp rings of w4a16_streamk, but cluster c of `clusters` (g.cfg.splits blocks, block r on K
// slice r) owns tiles [c T / C, (c + 1) T / C) and the 16 warps of a block split the block's
// units; tiles are finished inside the kernel (shared memory, then distributed shared memory
// across the slices): no workspace, no second kernel.
struct Int4OnePassConfig {
  std::int64_t tiles = 0;         // ceil(N / 16)
  std::int64_t clusters = 0;      // C: grid = C x g.cfg.splits blocks
  int stages = 4;                 // int4_streamk_stages(M)
  std::size_t ring_offset = 0;    // the warps' rings (after X's slice)
  std::size_t slots_offset = 0;   // [warp][first / last tile][16][M] f32
  std::size_t sums_offset = 0;    // [local tile][16][M] f32 (splits > 1)
};
struct Int4OnePassParams {
  Int4GemvParams g;
  Int4OnePassConfig o;
};
// Fills o's shared-memory offsets for `max_tiles` tiles a block; returns the dynamic shared memory.
inline std::size_t int4_onepass_layout(Int4OnePassConfig& o, std::int64_t m, std::int64_t kslice, int splits,
                                       std::int64_t max_tiles) {
  o.ring_offset = int4_streamk_ring_offset(m, kslice);
  o.slots_offset = o.ring_offset + static_cast<std::size_t>(kInt4StreamKWarps) * o.stages * 1024;
  o.sums_offset = o.slots_offset + static_cast<std::size_t>(kInt4StreamKWarps * 2 * 16 * m) * sizeof(float);
  return o.sums_offset + (splits > 1 ? static_cast<std::size_t>(max_tiles * 16 * m) * sizeof(float) : 0);
}
Status int4_onepass_allow_smem(DType act, bool is_signed, bool tiled, std::int64_t m, std::size_t smem_bytes);
// Clusters of `splits` blocks with smem_bytes each that the device holds at once (sm_90+;
// splits = 1: the blocks one wave holds); 0 when the query fails.
int int4_onepass_max_clusters(DType act, bool is_signed, bool tiled, std::int64_t m, int splits, std::size_t smem_bytes);
Status launch_int4_onepass(const Int4OnePassParams& p, cudaStream_t stream);

// Dequantizes W into wd (N x K row-major, ld = K, act dtype), values as the decode kernel.
Status launch_int4_dequant(const Int4Weights& wt, DType act, void* wd, cudaStream_t stream);

}  // namespace baracuda::gemm
