// baracuda::reference for SdpaDecodePlan and KvCacheAppendPlan (rules in
// baracuda/ops/decode.hpp and baracuda/ops/kv_cache.hpp).
//
// sdpa_decode gathers each sequence's keys and values through the block table (an entry
// outside [0, num_pages) reads as zeros; seqlens clamped to the capacity, as the kernels do)
// and evaluates the attention twice:
//   exact: in double (scores, softmax, PV and lse);
//   naive: what a plain implementation in the input precision gets (flash-attn's
//          attention_ref without upcast): scores accumulated in f32, scaled, rounded to the
//          dtype; softcap in f32, rounded; ALiBi added in f32; softmax in f32 rounded to the
//          dtype; PV accumulated in f32 and rounded to the dtype; lse in f32 from the rounded
//          scores. For f32 nothing is rounded beyond f32; for f64 naive == exact.
// Results are in the output's logical order (o: [B, Sq, Hq, D], lse: [B, Hq, Sq]).
//
// Tolerance (compare_decode, flash-attn's rule per tensor): max |got - exact| <=
// 3 max |naive - exact| + atol, with atol = one ulp of the dtype at 0.3 + max |exact| (FA3's
// fwd_atol); f64: 1e-12 (1 + max |exact|), since exact is itself double. lse: the same rule
// with atol = 8 ulp(f32) (1 + max |lse|). Besides: a row the mask leaves empty must give o
// exactly 0 and lse exactly -inf, no NaN anywhere, and the zero-trust rule of compare.hpp.
//
// kv_cache_append applies the append to host copies of the caches (bit copies; the same
// run-time guards as the kernel); the GPU tests compare every byte of the caches' storage.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "baracuda/ops/decode.hpp"
#include "baracuda/ops/kv_cache.hpp"
#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Dense descriptors for tests, `baracuda check` and examples: q / o [B, Sq, Hq, D]; a paged
// cache [num_pages, page_size, Hkv, D] with block_table [B, max_pages] when num_pages > 0,
// else a contiguous [B, page_size, Hkv, D] cache (S_max = page_size); seqlens [B]; lse
// [B, Hq, Sq] when `lse`; alibi_slopes none (0), [Hq] (1) or [B, Hq] (2).
struct DecodeShape {
  DType dtype = DType::kBF16;
  std::int64_t batch = 1, sq = 1, hq = 1, hkv = 1, d = 128;
  std::int64_t page_size = 16, max_pages = 1, num_pages = 0;
  bool lse = true;
  int alibi = 0;
};
// A paged shape (max_pages slots per sequence, B * max_pages + spare_pages pages) or, with
// paged = false, a contiguous cache of page * max_pages rows per sequence.
DecodeShape decode_shape(DType t, std::int64_t batch, std::int64_t sq, std::int64_t hq, std::int64_t hkv, std::int64_t d,
                         std::int64_t page, std::int64_t max_pages, bool paged, std::int64_t spare_pages = 0);
SdpaDecodeDescriptor decode_descriptor(const DecodeShape& s);
// k_new / v_new [B, S_new, Hkv, D] and the caches of `s` (s.sq is S_new; s.hq unused).
KvCacheAppendDescriptor append_descriptor(const DecodeShape& s);

struct DecodeResult {
  Result o;    // [B, Sq, Hq, D]
  Result lse;  // [B, Hq, Sq]; exact -inf for a row that sees no key
  std::vector<std::uint8_t> empty;  // per o row (b, t, hq): 1 when the row sees no key
};

// block_table / alibi_slopes may be null when the descriptor has none.
Expected<DecodeResult> sdpa_decode(const SdpaDecodeDescriptor& d, const HostTensor& q, const HostTensor& k_cache,
                                   const HostTensor& v_cache, const HostTensor* block_table, const HostTensor& seqlens_k,
                                   const HostTensor* alibi_slopes);

// got_lse may be null (then lse is not checked).
Comparison compare_decode(const HostTensor& got_o, const HostTensor* got_lse, const DecodeResult& want);

// Test inputs: every slot of every sequence mapped to a distinct page, in a random order
// (needs num_pages >= the number of slots); and every cache row no sequence uses (positions at
// or past its length, pages no slot maps) set to NaN, so a kernel that reads one shows it.
void fill_block_table(HostTensor& block_table, std::int64_t num_pages, std::mt19937_64& rng);
void poison_unused_rows(HostTensor& cache, const HostTensor* block_table, const std::vector<std::int32_t>& lens);

// Writes k_new / v_new into k_cache / v_cache (host copies laid out as the descriptor says).
Status kv_cache_append(const KvCacheAppendDescriptor& d, const HostTensor& k_new, const HostTensor& v_new, HostTensor& k_cache,
                       HostTensor& v_cache, const HostTensor* block_table, const HostTensor& cache_seqlens);

}  // namespace baracuda::reference
