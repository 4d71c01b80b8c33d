// KvCacheAppendPlan: writes the keys and values of new tokens into a KV cache (the copy half
// of flash-attn's flash_attn_with_kvcache(k=, v=), vLLM's reshape_and_cache), paged through a
// block table or contiguous. A plain copy: no RoPE, no conversion (the cache dtype is the
// input's; any byte-sized dtype).
//
//   k_cache[slot(b, cache_seqlens[b] + s), h, :] = k_new[b, s, h, :]   (the same for v)
//
// Shapes (the head dim contiguous everywhere, other strides free):
//   k_new, v_new   [B, S_new, Hkv, D]
//   k_cache        paged: [num_pages, page_size, Hkv, D]; contiguous: [B, S_max, Hkv, D]
//   v_cache        k_cache's shape and dtype (strides may differ)
//   block_table    int32 [B, max_pages_per_seq]; rank 0: the contiguous cache. Position p of
//                  sequence b is page block_table[b, p / page_size], row p % page_size.
//   cache_seqlens  int32 [B] on the device: the number of tokens already in sequence b's cache
//                  (the write position; SdpaDecodePlan's seqlens_k is this + S_new afterwards).
//
// Nothing outside the target slots is written: a position outside [0, capacity) (capacity =
// max_pages_per_seq * page_size, or S_max) or a block-table entry outside [0, num_pages)
// skips that token's row. Rows of k_new / v_new must not overlap the caches (checked at run).
//
// SKUs (family "kv_cache_append"): vec16 (16-byte copies; needs D * element size and every
// row stride in whole 16-byte units, 16-byte alignment), then elementwise (any layout).
// Bit-exact, deterministic, graph-capturable, no workspace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct KvCacheAppendDescriptor {
  TensorLayout k_new;          // [B, S_new, Hkv, D]
  TensorLayout v_new;          // k_new's shape and dtype
  TensorLayout k_cache;        // [num_pages, page_size, Hkv, D] or [B, S_max, Hkv, D]
  TensorLayout v_cache;        // k_cache's shape, k_new's dtype
  TensorLayout block_table;    // i32 [B, max_pages_per_seq]; rank 0: contiguous cache
  TensorLayout cache_seqlens;  // i32 [B]

  bool paged() const noexcept { return block_table.rank != 0; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const KvCacheAppendDescriptor&, const KvCacheAppendDescriptor&) = default;
};

struct KvCacheAppendArgs {
  const void* k_new = nullptr;
  const void* v_new = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const std::int32_t* block_table = nullptr;  // when paged
  const std::int32_t* cache_seqlens = nullptr;
};

using KvCacheAppendPlan = Plan<KvCacheAppendDescriptor, KvCacheAppendArgs>;
extern template class Plan<KvCacheAppendDescriptor, KvCacheAppendArgs>;

}  // namespace baracuda
