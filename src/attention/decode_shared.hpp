// Descriptor checks and cache geometry shared by SdpaDecodePlan (decode.cpp) and
// KvCacheAppendPlan (kv_cache.cpp): every message names the field and its value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/decode.hpp"
#include "baracuda/ops/kv_cache.hpp"
#include "core/plan_impl.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda::attention {

Status invalid(const std::string& msg);  // Code::kInvalidArgument
std::string s64(std::int64_t v);
std::string dt(DType t);

// t.rank == rank, else "<field>.rank = r: <field> is <shape>".
Status check_rank(const TensorLayout& t, const char* field, int rank, const char* shape);
// The last dim has unit stride (or size 1).
Status check_head_dim_contiguous(const TensorLayout& t, const char* field);
// alignment >= the element size (kernels read whole elements).
Status check_element_alignment(const TensorLayout& t, const char* field);
// k_cache / v_cache: rank 4, ref's dtype and head dim D = ref.shape[3], Hkv >= 1, the same
// shape, head dims contiguous.
Status check_cache_pair(const TensorLayout& k, const TensorLayout& v, const TensorLayout& ref, const char* ref_field);
// Paged: block_table i32 [B, max_pages] and page_size = k_cache.shape[1] >= 1; contiguous
// (rank 0): k_cache.shape[0] == B.
Status check_block_table(const TensorLayout& block_table, const TensorLayout& k_cache, std::int64_t batch);
// i32 [B].
Status check_seqlens(const TensorLayout& t, const char* field, std::int64_t batch);

struct CacheGeometry {
  std::int64_t page_size = 0, max_pages = 1, num_pages = 0, capacity = 0;
  std::int64_t bt_stride[2] = {};
};
// A contiguous cache is one "page" of S_max rows per sequence (page b of sequence b).
CacheGeometry cache_geometry(const TensorLayout& k_cache, const TensorLayout& block_table, std::int64_t batch);

// The cache-side operands of both plans: k / v caches (outputs when `cache_written`), the
// block table (when the layout has one) and the lengths (`lens_field`).
struct CachePointers {
  const void* k;
  const void* v;
  const void* table;
  const void* lens;
};
struct CacheLayouts {
  const TensorLayout& k;
  const TensorLayout& v;
  const TensorLayout& table;
  const TensorLayout& lens;
};
// norm::check_operand_pointers over `ops` then the cache-side operands, none sharing memory
// with another (in_place_ok false).
Status check_with_cache_operands(std::vector<norm::PtrOperand> ops, const CachePointers& p, const CacheLayouts& l,
                                 const char* lens_field, bool cache_written);

// The run-time argument checks of the two plans (null, declared alignment, an output
// overlapping anything): decode.cpp, kv_cache.cpp.
Status check_decode_args(const SdpaDecodeDescriptor& d, const SdpaDecodeArgs& a);
Status check_append_args(const KvCacheAppendDescriptor& d, const KvCacheAppendArgs& a);

// The FamilyTraits of both plans (decode.cpp, kv_cache.cpp): `kName` the family, then the
// descriptor check, the candidate table and the run-time argument check.
template <class Desc, class Args, const char* kName, Status (*kValidate)(const Desc&), const auto& kCandidates,
          Status (*kCheckArgs)(const Desc&, const Args&)>
struct CacheFamilyTraits {
  static constexpr const char* kFamily = kName;
  static Status validate(const Desc& d) { return kValidate(d); }
  static std::span<const Candidate<Desc, Args>> candidates() { return kCandidates; }
  static Status check_args(const Desc& d, const Args& a) { return kCheckArgs(d, a); }
};
inline constexpr char kDecodeFamily[] = "paged_decode";
inline constexpr char kAppendFamily[] = "kv_cache_append";

}  // namespace baracuda::attention
