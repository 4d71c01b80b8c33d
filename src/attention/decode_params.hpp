// The host/kernel seam of SdpaDecodePlan and KvCacheAppendPlan (plain C++, no CUDA types):
// what the kernels of kernels/decode_*.cuh and kernels/kv_cache_append.cuh read, and their
// launchers (decode_simt_kernels.cu, decode_mma_{bf16,f16}.cu, kv_cache_kernels.cu). Rules in baracuda/ops/decode.hpp and
// baracuda/ops/kv_cache.hpp.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::attention {

// Tensor-core decode kernel: CTA of 4 warps, K/V tiles of 64 keys, up to 64 query rows
// (group heads x new tokens) per CTA.
inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeBlockN = 64;
inline constexpr int kDecodeRowsPerCta = 64;
// The most KV splits any decode SKU chooses (bulk_splitkv's cap; mma_splitkv stops at 64): the
// split combine keeps a row's split statistics in shared memory.
inline constexpr int kDecodeMaxSplits = 256;
inline constexpr int kDecodeSmemPad = 8;  // elements added to every shared-memory row (bank spread)

// Dynamic shared memory of the tensor-core kernel with `stages` cp.async stages (3, or 2 where
// 3 do not fit: D = 256, or sm_89's 99 KiB) for a CTA with `q_rows` (16, 32 or 64) query rows:
// the K and V stages, then the query tile, in elements of 2 bytes. At D = 128 with 3 stages
// and 16 rows two CTAs fit on an sm_90 SM.
constexpr std::int64_t decode_smem_bytes(std::int64_t d, int stages, std::int64_t q_rows) {
  return (2 * stages * kDecodeBlockN + q_rows) * (d + kDecodeSmemPad) * 2;
}

// Bulk-copy decode kernel (sm_90+, bulk_splitkv): CTA of 8 warps over `heads_per_cta` (1, 2, 4
// or 8) KV heads that lie next to each other in the cache rows; one warp per (head, 16-key
// chunk), so a tile holds 16 * 8 / heads_per_cta keys (128 head rows, 16 x 128 x D x 2 bytes
// for K and V). Up to 16 query rows (group heads x new tokens) per head. Shared memory: the
// mbarriers (128 bytes), then `stages` stages of K then V rows, each row heads_per_cta * D + 8
// elements (the 8 padding elements spread the ldmatrix rows over the banks).
inline constexpr int kBulkThreads = 256;
inline constexpr int kBulkWarps = kBulkThreads / 32;
inline constexpr int kBulkMaxRows = 16;
inline constexpr int kBulkBarrierBytes = 128;
constexpr std::int64_t decode_bulk_tile_keys(std::int64_t heads_per_cta) { return 16 * kBulkWarps / heads_per_cta; }
constexpr std::int64_t decode_bulk_stage_bytes(std::int64_t d, std::int64_t heads_per_cta) {
  return 2 * decode_bulk_tile_keys(heads_per_cta) * (heads_per_cta * d + kDecodeSmemPad) * 2;
}
constexpr std::int64_t decode_bulk_smem_bytes(std::int64_t d, int stages, std::int64_t heads_per_cta) {
  return kBulkBarrierBytes + stages * decode_bulk_stage_bytes(d, heads_per_cta);
}
// Stages of the bulk kernel per head dim: about 200 KiB of tiles in flight per SM (one CTA).
constexpr int decode_bulk_stages(std::int64_t d) { return d == 64 ? 6 : 3; }

struct DecodeParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const std::int32_t* block_table = nullptr;  // null: contiguous cache
  const std::int32_t* seqlens = nullptr;
  void* o = nullptr;
  float* lse = nullptr;          // null: not returned
  const float* alibi = nullptr;  // null: none
  float* ws_o = nullptr;         // splits > 1: partial outputs f32 [splits, B, Sq, Hq, D]
  float* ws_lse = nullptr;       // splits > 1: partial log2-sum-exp f32 [splits, B, Sq, Hq]

  std::int64_t batch = 0, sq = 0, hq = 0, hkv = 0, d = 0;
  std::int64_t group = 1;            // hq / hkv
  std::int64_t rows = 0;             // group * sq: query rows per (sequence, KV head); row r = t * group + g
  std::int64_t row_blocks = 1;       // ceil(rows / 64) (tensor-core kernel)
  std::int64_t q_stride[3] = {};     // b, t, h (elements; the head dim is unit-stride)
  std::int64_t o_stride[3] = {};
  std::int64_t k_stride[3] = {};     // page (or b), row, h
  std::int64_t v_stride[3] = {};
  std::int64_t bt_stride[2] = {};    // b, page slot
  std::int64_t seqlens_stride = 1;
  std::int64_t lse_stride[3] = {};   // b, h, t
  std::int64_t alibi_stride[2] = {}; // b (0 for [Hq]), h
  std::int64_t page_size = 0;        // contiguous: S_max (the whole sequence is "page" b)
  std::int64_t max_pages = 1;        // block-table slots per sequence (1 when contiguous)
  std::int64_t num_pages = 0;        // pages in the cache (B when contiguous)
  std::int64_t capacity = 0;         // max_pages * page_size: seqlens are clamped to it

  double scale = 1.0;
  double softcap = 0.0;   // 0: off
  bool causal = true;
  std::int64_t window_left = -1;

  int stages = 3;                  // cp.async stages of the tensor-core kernel (2 or 3)
  int splits = 1;                  // CTAs along the KV length (tensor-core kernels)
  int heads_per_cta = 1;           // bulk kernel: KV heads per CTA (1, 2, 4, 8; divides hkv)
  int pdl = 0;                     // 1 (sm_90+): the split combine is a programmatic dependent launch
  std::int64_t split_len = 0;      // keys per split, a multiple of 64
};

// Launches (decode_simt_kernels.cu). `dtype` is q's; the tensor-core kernel takes f16 / bf16 and
// D in {64, 128, 256}, then the split combine when splits > 1; the SIMT kernel any float
// dtype and D <= 512.
Status launch_decode_mma(DType dtype, const DecodeParams& p, cudaStream_t stream);
Status launch_decode_simt(DType dtype, const DecodeParams& p, cudaStream_t stream);
// The bulk-copy kernel (decode_bulk.cu): f16 / bf16, D in {64, 128}, sm_90+, then the combine.
Status launch_decode_bulk(DType dtype, const DecodeParams& p, cudaStream_t stream);

// KvCacheAppendPlan: one copy "unit" per thread (16 bytes for vec16, one element otherwise);
// strides and d counted in units.
struct KvAppendParams {
  const void* k_new = nullptr;
  const void* v_new = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const std::int32_t* block_table = nullptr;  // null: contiguous cache
  const std::int32_t* seqlens = nullptr;
  std::int64_t batch = 0, s_new = 0, hkv = 0, units = 0;  // units per head row
  std::int64_t new_stride[2][3] = {};    // [k|v][b, s, h]
  std::int64_t cache_stride[2][3] = {};  // [k|v][page (or b), row, h]
  std::int64_t bt_stride[2] = {};
  std::int64_t seqlens_stride = 1;
  std::int64_t page_size = 0, max_pages = 1, num_pages = 0, capacity = 0;
  int unit_bytes = 16;  // 1, 2, 4, 8 or 16
  bool vec16 = false;   // 16-byte units, 16-byte aligned (uint4 copies)
};
Status launch_kv_append(const KvAppendParams& p, cudaStream_t stream);

}  // namespace baracuda::attention
