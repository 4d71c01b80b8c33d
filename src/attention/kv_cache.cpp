// KvCacheAppendPlan (baracuda/ops/kv_cache.hpp): descriptor validation, the two candidates
// and the run-time argument checks. Candidates, in this order (kernels/kv_cache_append.cuh):
//  * "vec16": 16-byte copies; head rows and every stride in whole 16-byte units, 16-byte
//    aligned operands;
//  * "elementwise": one element per thread, any layout of a byte-sized dtype.
#include <array>
#include <span>
#include <string>

#include "attention/decode_params.hpp"
#include "attention/decode_shared.hpp"
#include "baracuda/ops/kv_cache.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

std::size_t KvCacheAppendDescriptor::hash() const noexcept {
  std::size_t h = 0;
  for (const auto* t : {&k_new, &v_new, &k_cache, &v_cache, &block_table, &cache_seqlens}) h = detail::hash_combine(h, t->hash());
  return h;
}

std::string KvCacheAppendDescriptor::to_string() const {
  std::string s = "kv_cache_append(k_new=" + k_new.to_string() + ", v_new=" + v_new.to_string() +
                  ", k_cache=" + k_cache.to_string() + ", v_cache=" + v_cache.to_string();
  if (block_table.rank) s += ", block_table=" + block_table.to_string();
  return s + ", cache_seqlens=" + cache_seqlens.to_string() + ")";
}

namespace attention {
namespace {

Status validate_append(const KvCacheAppendDescriptor& d) {
  for (const auto& [t, f] : {std::pair{&d.k_new, "k_new"}, std::pair{&d.v_new, "v_new"}, std::pair{&d.k_cache, "k_cache"},
                             std::pair{&d.v_cache, "v_cache"}, std::pair{&d.block_table, "block_table"},
                             std::pair{&d.cache_seqlens, "cache_seqlens"}})
    BARACUDA_TRY(validate_layout(*t, f));
  BARACUDA_TRY(check_rank(d.k_new, "k_new", 4, "[B, S_new, Hkv, D]"));
  if (dtype_is_packed(d.k_new.dtype))
    return invalid("k_new.dtype = " + dt(d.k_new.dtype) + ": packed sub-byte dtypes are not supported (whole elements only)");
  BARACUDA_TRY(elementwise::check_same_dtype(d.v_new, "v_new", d.k_new, "k_new"));
  BARACUDA_TRY(elementwise::check_same_shape(d.v_new, "v_new", d.k_new, "k_new"));
  BARACUDA_TRY(check_head_dim_contiguous(d.k_new, "k_new"));
  BARACUDA_TRY(check_head_dim_contiguous(d.v_new, "v_new"));
  BARACUDA_TRY(check_element_alignment(d.k_new, "k_new"));
  BARACUDA_TRY(check_element_alignment(d.v_new, "v_new"));
  BARACUDA_TRY(check_cache_pair(d.k_cache, d.v_cache, d.k_new, "k_new"));
  if (d.k_cache.shape[2] != d.k_new.shape[2])
    return invalid("k_cache.shape[2] = Hkv = " + s64(d.k_cache.shape[2]) + " differs from k_new.shape[2] = " + s64(d.k_new.shape[2]));
  const std::int64_t batch = d.k_new.shape[0];
  BARACUDA_TRY(check_block_table(d.block_table, d.k_cache, batch));
  BARACUDA_TRY(check_seqlens(d.cache_seqlens, "cache_seqlens", batch));
  BARACUDA_TRY(elementwise::check_output_layout(d.k_cache, "k_cache"));
  return elementwise::check_output_layout(d.v_cache, "v_cache");
}

// Why the 16-byte copy cannot run `d` ("" = it can).
std::string vec16_rejection(const KvCacheAppendDescriptor& d) {
  const std::int64_t esize = static_cast<std::int64_t>(dtype_size(d.k_new.dtype));
  if (d.k_new.shape[3] * esize % 16 != 0)
    return "D * element size = " + s64(d.k_new.shape[3] * esize) + " bytes is not a multiple of 16";
  for (const auto& [t, f] : {std::pair{&d.k_new, "k_new"}, std::pair{&d.v_new, "v_new"}, std::pair{&d.k_cache, "k_cache"},
                             std::pair{&d.v_cache, "v_cache"}}) {
    if (t->alignment < 16) return std::string(f) + ".alignment = " + s64(t->alignment) + " < 16 bytes";
    for (int i = 0; i < 3; ++i)
      if (t->shape[i] > 1 && t->strides[i] * esize % 16 != 0)
        return std::string(f) + ".strides[" + std::to_string(i) + "] = " + s64(t->strides[i]) + " elements is not a whole number of 16-byte units";
  }
  return "";
}

KvAppendParams make_append_params(const KvCacheAppendDescriptor& d, bool vec16) {
  KvAppendParams p;
  const std::int64_t esize = static_cast<std::int64_t>(dtype_size(d.k_new.dtype));
  const std::int64_t per_unit = vec16 ? 16 / esize : 1;  // elements per copy unit
  p.vec16 = vec16;
  p.unit_bytes = static_cast<int>(vec16 ? 16 : esize);
  p.batch = d.k_new.shape[0];
  p.s_new = d.k_new.shape[1];
  p.hkv = d.k_new.shape[2];
  p.units = d.k_new.shape[3] / per_unit;
  const TensorLayout* news[2] = {&d.k_new, &d.v_new};
  const TensorLayout* caches[2] = {&d.k_cache, &d.v_cache};
  for (int w = 0; w < 2; ++w)
    for (int i = 0; i < 3; ++i) {
      p.new_stride[w][i] = news[w]->strides[i] / per_unit;
      p.cache_stride[w][i] = caches[w]->strides[i] / per_unit;
    }
  const CacheGeometry g = cache_geometry(d.k_cache, d.block_table, p.batch);
  p.page_size = g.page_size;
  p.max_pages = g.max_pages;
  p.num_pages = g.num_pages;
  p.capacity = g.capacity;
  p.bt_stride[0] = g.bt_stride[0];
  p.bt_stride[1] = g.bt_stride[1];
  p.seqlens_stride = d.cache_seqlens.strides[0];
  return p;
}

template <bool kVec16>
struct AppendCandidate {
  using Desc = KvCacheAppendDescriptor;
  using Args = KvCacheAppendArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku.family = "kv_cache_append";
    pr.sku.impl = kVec16 ? "vec16" : "elementwise";
    pr.sku.in = pr.sku.compute = pr.sku.out = d.k_new.dtype;
    pr.sku.precision.accumulator = d.k_new.dtype;
    pr.sku.min_sm = 80;
    if (kVec16) pr.rejection = vec16_rejection(d);
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    return std::shared_ptr<const void>(std::make_shared<KvAppendParams>(make_append_params(d, kVec16)));
  }
  static Status launch(const void* state, const Desc&, const Args& a, Workspace, cudaStream_t s) {
    KvAppendParams p = *static_cast<const KvAppendParams*>(state);
    p.k_new = a.k_new;
    p.v_new = a.v_new;
    p.k_cache = a.k_cache;
    p.v_cache = a.v_cache;
    p.block_table = a.block_table;
    p.seqlens = a.cache_seqlens;
    return launch_kv_append(p, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

constexpr std::array<Candidate<KvCacheAppendDescriptor, KvCacheAppendArgs>, 2> kAppendCandidates = {
    AppendCandidate<true>::make(), AppendCandidate<false>::make()};

}  // namespace

Status check_append_args(const KvCacheAppendDescriptor& d, const KvCacheAppendArgs& a) {
  return check_with_cache_operands({{a.k_new, d.k_new, "k_new", false, false}, {a.v_new, d.v_new, "v_new", false, false}},
                                   {a.k_cache, a.v_cache, a.block_table, a.cache_seqlens},
                                   {d.k_cache, d.v_cache, d.block_table, d.cache_seqlens}, "cache_seqlens", true);
}

}  // namespace attention

template <>
struct FamilyTraits<KvCacheAppendDescriptor>
    : attention::CacheFamilyTraits<KvCacheAppendDescriptor, KvCacheAppendArgs, attention::kAppendFamily,
                                   &attention::validate_append, attention::kAppendCandidates, &attention::check_append_args> {};

template class Plan<KvCacheAppendDescriptor, KvCacheAppendArgs>;

}  // namespace baracuda
