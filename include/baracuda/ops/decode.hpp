// Attention decode over a KV cache (flash-attn's flash_attn_with_kvcache, vLLM's
// paged_attention): Sq = 1..16 new query tokens per sequence (speculative decoding) attend to
// the keys and values already in a cache, paged through a block table or contiguous.
//
//   s_tj = scale * q_t . k_j                       (scale = 1/sqrt(D) unless given)
//   s_tj = softcap * tanh(s_tj / softcap)           (when softcap > 0)
//   s_tj -= alibi_slope_h * |qpos_t - j|            (when alibi_slopes are given)
//   s_tj = -inf where the mask hides key j from token t
//   o_t  = sum_j softmax_j(s_tj) v_j,   lse_t = log(sum_j exp(s_tj))  (natural log)
//
// The names follow baracuda/ops/attention.hpp (scale, softcap, window_left, alibi_slopes, lse).
//
// Shapes (B sequences, Hq query heads, Hkv KV heads, head dim D; the head dim is contiguous
// in every tensor, other strides are free):
//   q            [B, Sq, Hq, D]                 f64, f32, f16 or bf16
//   o            [B, Sq, Hq, D]                 q's dtype
//   lse          f32 [B, Hq, Sq]                optional (rank 0: not returned)
//   k_cache      paged: [num_pages, page_size, Hkv, D]   (flash-attn / vLLM layout)
//                contiguous (no block table): [B, S_max, Hkv, D]
//   v_cache      k_cache's shape and dtype (Dv = D); its strides may differ from k_cache's
//   block_table  int32 [B, max_pages_per_seq] (any strides); rank 0: the contiguous cache.
//                Key j of sequence b lives in page block_table[b, j / page_size], row
//                j % page_size.
//   seqlens_k    int32 [B] on the device: the number of keys of sequence b, the new tokens'
//                keys included (they must be in the cache already: KvCacheAppendPlan).
//   alibi_slopes f32 [Hq] or [B, Hq]; rank 0: none.
// Hq must be a multiple of Hkv: query head h reads KV head h / (Hq / Hkv) (GQA; MQA when
// Hkv = 1).
//
// Mask. Token t (0-based, of Sq) has the absolute position qpos_t = seqlen_k - Sq + t. With
// `causal` (the default: flash-attn's bottom-right causal decode) it sees keys j <= qpos_t;
// without it every key j < seqlen_k. With window_left >= 0 it also sees only keys
// j >= qpos_t - window_left. A token that sees no key (seqlen_k = 0, or seqlen_k < Sq with
// causal) gives o = 0 and lse = -inf, never NaN.
//
// Device-side values the host cannot check (documented contract, never out-of-bounds):
// seqlens_k[b] is clamped to [0, capacity] (capacity = max_pages_per_seq * page_size, or
// S_max); a block-table entry outside [0, num_pages) reads as a page of zeros.
//
// Plans. SdpaDecodePlan chooses, in this order (family "paged_decode"):
//   paged_decode.fwd.mma_splitkv[f16|bf16,f32]  tensor cores (mma.sync m16n8k16), f16 / bf16,
//       D in {64, 128, 256}, page_size a multiple of 16, 16-byte aligned cache rows. The query
//       heads of a KV group and the Sq tokens are the rows of one tile (up to 64 rows per
//       CTA), so each KV byte is read once per group; K/V tiles of 64 keys stream through a
//       cp.async pipeline; the KV length is split over CTAs (a fixed number of splits chosen
//       at select from the device's SM count) with partial (o, lse) in the workspace and a
//       combine kernel that adds the splits in a fixed order: deterministic.
//   paged_decode.fwd.bulk_splitkv[f16|bf16,f32]  sm_90+: one CTA per (sequence, group of up to
//       8 neighbouring KV heads, KV split) streams whole token rows (the group's heads, one
//       cp.async.bulk each) through an mbarrier pipeline; f16 / bf16, D in {64, 128}, at most
//       16 query rows (Hq / Hkv x Sq) per KV head, the heads of a cache row packed (head
//       stride D) unless Hkv is odd, 16-byte aligned cache rows, any page size. Splits and
//       combine as mma_splitkv (deterministic). Measured no faster than mma_splitkv on the
//       H200, so default dispatch reaches it only where mma_splitkv refuses (a page size
//       that is not a multiple of 16) or by force_sku.
//   paged_decode.fwd.simt_warp_row[T,f32|f64]  any float dtype (f64 computes in f64), any D
//       <= 512, any page size, any strides: one warp per query row on CUDA cores; no workspace.
// Numerics: softmax statistics in f32 (f64 for f64), probabilities rounded to the input dtype
// before the PV product on the tensor-core SKU (as flash attention does); lse in natural log.
// run() allocates nothing and never synchronizes; every SKU is graph-capturable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct SdpaDecodeOptions {
  double scale = 0.0;              // 0: 1 / sqrt(D)
  bool causal = true;              // bottom-right (qpos_t = seqlen_k - Sq + t)
  std::int64_t window_left = -1;   // -1: unbounded
  double softcap = 0.0;            // 0: off
  friend bool operator==(const SdpaDecodeOptions&, const SdpaDecodeOptions&) = default;
};

// Optional operands have rank 0 when absent.
struct SdpaDecodeDescriptor {
  TensorLayout q;             // [B, Sq, Hq, D]
  TensorLayout k_cache;       // [num_pages, page_size, Hkv, D] (paged) or [B, S_max, Hkv, D]
  TensorLayout v_cache;       // k_cache's shape and dtype
  TensorLayout block_table;   // i32 [B, max_pages_per_seq]; rank 0: contiguous cache
  TensorLayout seqlens_k;     // i32 [B]
  TensorLayout o;             // q's shape and dtype
  TensorLayout lse;           // f32 [B, Hq, Sq]; rank 0: not returned
  TensorLayout alibi_slopes;  // f32 [Hq] or [B, Hq]; rank 0: none
  SdpaDecodeOptions options;

  bool paged() const noexcept { return block_table.rank != 0; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const SdpaDecodeDescriptor&, const SdpaDecodeDescriptor&) = default;
};

struct SdpaDecodeArgs {
  const void* q = nullptr;
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  const std::int32_t* block_table = nullptr;  // when paged
  const std::int32_t* seqlens_k = nullptr;
  void* o = nullptr;
  float* lse = nullptr;                // when the descriptor has lse
  const float* alibi_slopes = nullptr; // when the descriptor has alibi_slopes
};

using SdpaDecodePlan = Plan<SdpaDecodeDescriptor, SdpaDecodeArgs>;
extern template class Plan<SdpaDecodeDescriptor, SdpaDecodeArgs>;

}  // namespace baracuda
