// Descriptor checks and cache geometry shared by SdpaDecodePlan and KvCacheAppendPlan
// (decode_shared.hpp).
#include "attention/decode_shared.hpp"

namespace baracuda::attention {

Status invalid(const std::string& msg) { return Status(Code::kInvalidArgument, msg); }
std::string s64(std::int64_t v) { return std::to_string(v); }
std::string dt(DType t) { return std::string(dtype_name(t)); }

Status check_rank(const TensorLayout& t, const char* field, int rank, const char* shape) {
  if (t.rank != rank) return invalid(std::string(field) + ".rank = " + std::to_string(t.rank) + ": " + field + " is " + shape);
  return Status::ok();
}

Status check_head_dim_contiguous(const TensorLayout& t, const char* field) {
  if (t.rank && t.shape[t.rank - 1] > 1 && t.strides[t.rank - 1] != 1)
    return invalid(std::string(field) + ".strides[" + std::to_string(t.rank - 1) + "] = " + s64(t.strides[t.rank - 1]) +
                   ": the head dim must be contiguous (stride 1)");
  return Status::ok();
}

Status check_element_alignment(const TensorLayout& t, const char* field) {
  if (t.rank && static_cast<std::size_t>(t.alignment) < dtype_size(t.dtype))
    return invalid(std::string(field) + ".alignment = " + std::to_string(t.alignment) + " bytes is below its element size " +
                   std::to_string(dtype_size(t.dtype)));
  return Status::ok();
}

Status check_cache_pair(const TensorLayout& k, const TensorLayout& v, const TensorLayout& ref, const char* ref_field) {
  const char* shape = "[num_pages, page_size, Hkv, D] (paged) or [B, S_max, Hkv, D]";
  BARACUDA_TRY(check_rank(k, "k_cache", 4, shape));
  BARACUDA_TRY(check_rank(v, "v_cache", 4, shape));
  const std::string rf(ref_field);
  if (k.dtype != ref.dtype) return invalid("k_cache.dtype = " + dt(k.dtype) + " differs from " + rf + ".dtype = " + dt(ref.dtype));
  if (v.dtype != ref.dtype) return invalid("v_cache.dtype = " + dt(v.dtype) + " differs from " + rf + ".dtype = " + dt(ref.dtype));
  if (k.shape[3] != ref.shape[3])
    return invalid("k_cache.shape[3] = " + s64(k.shape[3]) + " differs from " + rf + ".shape[3] = D = " + s64(ref.shape[3]));
  if (k.shape[2] < 1) return invalid("k_cache.shape[2] = Hkv = " + s64(k.shape[2]) + ": needs at least one KV head");
  for (int i = 0; i < 4; ++i)
    if (v.shape[i] != k.shape[i])
      return invalid("v_cache.shape[" + std::to_string(i) + "] = " + s64(v.shape[i]) + " differs from k_cache.shape[" +
                     std::to_string(i) + "] = " + s64(k.shape[i]) + " (Dv = D, one layout for both caches)");
  BARACUDA_TRY(check_head_dim_contiguous(k, "k_cache"));
  BARACUDA_TRY(check_head_dim_contiguous(v, "v_cache"));
  BARACUDA_TRY(check_element_alignment(k, "k_cache"));
  return check_element_alignment(v, "v_cache");
}

Status check_block_table(const TensorLayout& bt, const TensorLayout& k, std::int64_t batch) {
  if (bt.rank == 0) {
    if (k.shape[0] != batch)
      return invalid("k_cache.shape[0] = " + s64(k.shape[0]) + " differs from B = " + s64(batch) +
                     ": without a block_table the cache is [B, S_max, Hkv, D]");
    if (k.shape[1] > (std::int64_t{1} << 31))
      return invalid("k_cache.shape[1] = S_max = " + s64(k.shape[1]) + " exceeds 2^31 (the kernels index positions in 32 bits)");
    return Status::ok();
  }
  BARACUDA_TRY(check_rank(bt, "block_table", 2, "[B, max_pages_per_seq]"));
  if (bt.dtype != DType::kI32) return invalid("block_table.dtype = " + dt(bt.dtype) + ": block_table is i32");
  if (bt.shape[0] != batch) return invalid("block_table.shape[0] = " + s64(bt.shape[0]) + " differs from B = " + s64(batch));
  if (k.shape[1] < 1) return invalid("k_cache.shape[1] = page_size = " + s64(k.shape[1]) + ": pages need at least one row");
  if (bt.shape[1] > 0 && k.shape[1] > (std::int64_t{1} << 31) / bt.shape[1])
    return invalid("block_table.shape[1] * page_size = " + s64(bt.shape[1]) + " * " + s64(k.shape[1]) +
                   " positions per sequence exceed 2^31 (the kernels index positions in 32 bits)");
  return check_element_alignment(bt, "block_table");
}

Status check_seqlens(const TensorLayout& t, const char* field, std::int64_t batch) {
  BARACUDA_TRY(check_rank(t, field, 1, "[B]"));
  if (t.dtype != DType::kI32) return invalid(std::string(field) + ".dtype = " + dt(t.dtype) + ": " + field + " is i32");
  if (t.shape[0] != batch) return invalid(std::string(field) + ".shape[0] = " + s64(t.shape[0]) + " differs from B = " + s64(batch));
  return check_element_alignment(t, field);
}

CacheGeometry cache_geometry(const TensorLayout& k, const TensorLayout& bt, std::int64_t batch) {
  CacheGeometry g;
  g.page_size = k.shape[1];
  if (bt.rank) {
    g.max_pages = bt.shape[1];
    g.num_pages = k.shape[0];
    g.bt_stride[0] = bt.strides[0];
    g.bt_stride[1] = bt.strides[1];
  } else {
    g.max_pages = 1;
    g.num_pages = batch;
  }
  g.capacity = g.max_pages * g.page_size;
  return g;
}

Status check_with_cache_operands(std::vector<norm::PtrOperand> ops, const CachePointers& p, const CacheLayouts& l,
                                 const char* lens_field, bool cache_written) {
  ops.push_back({p.k, l.k, "k_cache", cache_written, false});
  ops.push_back({p.v, l.v, "v_cache", cache_written, false});
  ops.push_back({p.lens, l.lens, lens_field, false, false});
  if (l.table.rank) ops.push_back({p.table, l.table, "block_table", false, false});
  BARACUDA_TRY(norm::check_unused_pointer(p.table, l.table, "block_table"));
  return norm::check_operand_pointers(ops);
}

}  // namespace baracuda::attention
