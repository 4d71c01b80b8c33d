// SdpaDecodePlan (baracuda/ops/decode.hpp): descriptor validation, the split heuristics, the
// three candidates and the run-time argument checks. Candidates, in this order (by H200
// measurement, session 7: mma_splitkv is as fast or faster than bulk_splitkv on every bench
// shape, so it comes first; bulk_splitkv stays selectable by force_sku):
//  * "mma_splitkv": tensor-core kernel (kernels/decode_mma.cuh), f16 / bf16, D in {64, 128,
//    256}, page_size % 16 == 0, 16-byte cache rows; the number of KV splits is fixed here from
//    the device's SM count (deterministic), with the partials in the workspace;
//  * "bulk_splitkv": sm_90+ bulk-copy kernel (kernels/decode_bulk.cuh), f16 / bf16, D in {64,
//    128}, <= 16 query rows per KV head; one CTA per SM, splits chosen for whole waves;
//  * "simt_warp_row": one warp per query row on CUDA cores (kernels/decode_simt.cuh), any
//    float dtype, D <= 512, any page size and strides; no workspace.
#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>

#include "attention/decode_params.hpp"
#include "attention/decode_shared.hpp"
#include "baracuda/ops/decode.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

std::size_t SdpaDecodeDescriptor::hash() const noexcept {
  std::size_t h = 0;
  for (const auto* t : {&q, &k_cache, &v_cache, &block_table, &seqlens_k, &o, &lse, &alibi_slopes})
    h = detail::hash_combine(h, t->hash());
  h = detail::hash_combine(h, std::hash<double>{}(options.scale));
  h = detail::hash_combine(h, std::hash<double>{}(options.softcap));
  h = detail::hash_combine(h, static_cast<std::size_t>(options.window_left));
  return detail::hash_combine(h, static_cast<std::size_t>(options.causal));
}

std::string SdpaDecodeDescriptor::to_string() const {
  std::string s = "paged_decode(q=" + q.to_string() + ", k_cache=" + k_cache.to_string() + ", v_cache=" + v_cache.to_string();
  if (block_table.rank) s += ", block_table=" + block_table.to_string();
  s += ", seqlens_k=" + seqlens_k.to_string() + ", o=" + o.to_string();
  if (lse.rank) s += ", lse=" + lse.to_string();
  if (alibi_slopes.rank) s += ", alibi_slopes=" + alibi_slopes.to_string();
  s += ", scale=" + elementwise::number_text(options.scale) + (options.causal ? ", causal" : ", not causal");
  if (options.window_left >= 0) s += ", window_left=" + std::to_string(options.window_left);
  if (options.softcap > 0) s += ", softcap=" + elementwise::number_text(options.softcap);
  return s + ")";
}

namespace attention {
namespace {

Status validate_decode(const SdpaDecodeDescriptor& d) {
  BARACUDA_TRY(validate_layout(d.q, "q"));
  BARACUDA_TRY(validate_layout(d.k_cache, "k_cache"));
  BARACUDA_TRY(validate_layout(d.v_cache, "v_cache"));
  BARACUDA_TRY(validate_layout(d.seqlens_k, "seqlens_k"));
  BARACUDA_TRY(validate_layout(d.o, "o"));
  BARACUDA_TRY(validate_layout(d.block_table, "block_table"));
  BARACUDA_TRY(validate_layout(d.lse, "lse"));
  BARACUDA_TRY(validate_layout(d.alibi_slopes, "alibi_slopes"));
  BARACUDA_TRY(check_rank(d.q, "q", 4, "[B, Sq, Hq, D]"));
  BARACUDA_TRY(elementwise::check_math_dtype(d.q, "q", "paged_decode"));
  const std::int64_t batch = d.q.shape[0], sq = d.q.shape[1], hq = d.q.shape[2], dim = d.q.shape[3];
  if (sq < 1 || sq > 16)
    return invalid("q.shape[1] = Sq = " + s64(sq) + " is outside 1 .. 16 (new query tokens per sequence)");
  if (hq < 1) return invalid("q.shape[2] = Hq = " + s64(hq) + ": needs at least one query head");
  if (dim < 1) return invalid("q.shape[3] = D = " + s64(dim) + ": needs a head dim of at least 1");
  BARACUDA_TRY(check_head_dim_contiguous(d.q, "q"));
  BARACUDA_TRY(check_cache_pair(d.k_cache, d.v_cache, d.q, "q"));
  const std::int64_t hkv = d.k_cache.shape[2];
  if (hq % hkv != 0)
    return invalid("q.shape[2] = Hq = " + s64(hq) + " is not a multiple of k_cache.shape[2] = Hkv = " + s64(hkv));
  BARACUDA_TRY(check_block_table(d.block_table, d.k_cache, batch));
  BARACUDA_TRY(check_seqlens(d.seqlens_k, "seqlens_k", batch));
  BARACUDA_TRY(elementwise::check_same_dtype(d.o, "o", d.q, "q"));
  BARACUDA_TRY(elementwise::check_same_shape(d.o, "o", d.q, "q"));
  BARACUDA_TRY(check_head_dim_contiguous(d.o, "o"));
  BARACUDA_TRY(elementwise::check_output_layout(d.o, "o"));
  if (d.lse.rank) {
    if (d.lse.dtype != DType::kF32) return invalid("lse.dtype = " + dt(d.lse.dtype) + ": lse is f32");
    if (d.lse.rank != 3 || d.lse.shape[0] != batch || d.lse.shape[1] != hq || d.lse.shape[2] != sq)
      return invalid("lse = " + d.lse.to_string() + " is not [B, Hq, Sq] = [" + s64(batch) + ", " + s64(hq) + ", " + s64(sq) + "]");
    BARACUDA_TRY(elementwise::check_output_layout(d.lse, "lse"));
  }
  if (d.alibi_slopes.rank) {
    const TensorLayout& a = d.alibi_slopes;
    if (a.dtype != DType::kF32) return invalid("alibi_slopes.dtype = " + dt(a.dtype) + ": alibi_slopes are f32");
    const bool ok = (a.rank == 1 && a.shape[0] == hq) || (a.rank == 2 && a.shape[0] == batch && a.shape[1] == hq);
    if (!ok) return invalid("alibi_slopes = " + a.to_string() + " is neither [Hq] nor [B, Hq] (Hq = " + s64(hq) + ")");
  }
  const auto& op = d.options;
  if (!(op.scale >= 0) || !std::isfinite(op.scale))
    return invalid("options.scale = " + elementwise::number_text(op.scale) + " must be finite and >= 0 (0: 1 / sqrt(D))");
  if (!(op.softcap >= 0) || !std::isfinite(op.softcap))
    return invalid("options.softcap = " + elementwise::number_text(op.softcap) + " must be finite and >= 0 (0: off)");
  if (op.window_left < -1) return invalid("options.window_left = " + s64(op.window_left) + " must be >= -1 (-1: unbounded)");
  for (const auto& [t, f] : {std::pair{&d.q, "q"}, std::pair{&d.o, "o"}, std::pair{&d.lse, "lse"}, std::pair{&d.alibi_slopes, "alibi_slopes"}})
    BARACUDA_TRY(check_element_alignment(*t, f));
  return Status::ok();
}

// The parameters of both SKUs, pointers left null, one split.
DecodeParams make_params(const SdpaDecodeDescriptor& d) {
  DecodeParams p;
  p.batch = d.q.shape[0];
  p.sq = d.q.shape[1];
  p.hq = d.q.shape[2];
  p.d = d.q.shape[3];
  p.hkv = d.k_cache.shape[2];
  p.group = p.hq / p.hkv;
  p.rows = p.group * p.sq;
  p.row_blocks = (p.rows + kDecodeRowsPerCta - 1) / kDecodeRowsPerCta;
  for (int i = 0; i < 3; ++i) {
    p.q_stride[i] = d.q.strides[i];
    p.o_stride[i] = d.o.strides[i];
    p.k_stride[i] = d.k_cache.strides[i];
    p.v_stride[i] = d.v_cache.strides[i];
  }
  const CacheGeometry g = cache_geometry(d.k_cache, d.block_table, p.batch);
  p.page_size = g.page_size;
  p.max_pages = g.max_pages;
  p.num_pages = g.num_pages;
  p.capacity = g.capacity;
  p.bt_stride[0] = g.bt_stride[0];
  p.bt_stride[1] = g.bt_stride[1];
  p.seqlens_stride = d.seqlens_k.strides[0];
  if (d.lse.rank)
    for (int i = 0; i < 3; ++i) p.lse_stride[i] = d.lse.strides[i];
  if (d.alibi_slopes.rank == 1) p.alibi_stride[1] = d.alibi_slopes.strides[0];
  if (d.alibi_slopes.rank == 2) {
    p.alibi_stride[0] = d.alibi_slopes.strides[0];
    p.alibi_stride[1] = d.alibi_slopes.strides[1];
  }
  p.scale = d.options.scale > 0 ? d.options.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  p.softcap = d.options.softcap;
  p.causal = d.options.causal;
  p.window_left = d.options.window_left;
  p.split_len = std::max<std::int64_t>(p.capacity, 1);
  return p;
}

// Query rows of the tensor-core kernel's first row block, rounded to its m16 warp layout.
std::int64_t mma_q_rows(const DecodeParams& p) {
  const std::int64_t rows = std::min<std::int64_t>(p.rows, kDecodeRowsPerCta);
  const std::int64_t mtiles = (rows + 15) / 16;
  return 16 * (mtiles == 1 ? 1 : (mtiles == 2 ? 2 : 4));
}

constexpr std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// Three stages where they fit the device's shared memory with 64 query rows (two at D = 256).
int choose_stages(std::int64_t dim, const DeviceCaps& caps) {
  if (dim == 256) return 2;
  return decode_smem_bytes(dim, 3, kDecodeRowsPerCta) <= static_cast<std::int64_t>(caps.smem_per_block_optin) ? 3 : 2;
}

// The fewest splits of the KV length whose wave efficiency (CTAs / (waves x slots)) is within
// `within` of the best over 1 .. max_splits, for `base` CTAs per split and `slots` CTAs
// resident at once; with tile > 0, counted after rounding the split length up to a multiple
// of `tile` (of `capacity` keys). Fixed at select: run() is deterministic.
std::int64_t wave_splits(double base, double slots, std::int64_t max_splits, double within, std::int64_t capacity = 0,
                         std::int64_t tile = 0) {
  auto eff = [&](std::int64_t s) {
    if (tile > 0) {
      const std::int64_t len = (capacity + s - 1) / s;
      const std::int64_t rounded = (len + tile - 1) / tile * tile;
      s = (capacity + rounded - 1) / rounded;
    }
    const double waves = base * static_cast<double>(s) / slots;
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (std::int64_t s = 1; s <= max_splits; ++s) best = std::max(best, eff(s));
  std::int64_t s = 1;
  while (s < max_splits && eff(s) < within * best) ++s;
  return s;
}

// Split length (a multiple of `tile`) and count for `s` wanted splits.
void set_splits(DecodeParams& p, std::int64_t s, std::int64_t tile) {
  p.split_len = round_up((p.capacity + s - 1) / s, tile);
  p.splits = static_cast<int>((p.capacity + p.split_len - 1) / p.split_len);
}

// Splits of the KV length (flash-attn's rule): the fewest splits whose wave efficiency
// (slots = SMs x CTAs per SM by shared memory) is within 85% of the best over
// 1 .. min(64, capacity / 256).
void choose_splits(DecodeParams& p, const DeviceCaps& caps) {
  p.splits = 1;
  p.split_len = round_up(std::max<std::int64_t>(p.capacity, 1), kDecodeBlockN);
  if (p.batch == 0 || p.capacity == 0) return;
  const std::int64_t smem = decode_smem_bytes(p.d, p.stages, p.row_blocks > 1 ? kDecodeRowsPerCta : mma_q_rows(p));
  const std::int64_t sm_smem = static_cast<std::int64_t>(caps.smem_per_block_optin) + 1024;
  const std::int64_t per_sm = std::clamp<std::int64_t>(sm_smem / (smem + 1024), 1, 4);
  const double slots = static_cast<double>(std::max(caps.sm_count, 1) * per_sm);
  const double base = static_cast<double>(p.batch * p.hkv * p.row_blocks);
  const std::int64_t max_splits = std::clamp<std::int64_t>((p.capacity + 255) / 256, 1, 64);
  set_splits(p, wave_splits(base, slots, max_splits, 0.85), kDecodeBlockN);
}

// Two stages instead of three (three CTAs an SM instead of two, splits chosen again for them)
// where page 16, D = 128 and at most 8 query rows per KV head split the KV length anyway: the
// copy-bound split cases hide their page-16 address work better with more CTAs (H100 session
// 25, min ms 3 -> 2 stages: B8 x 8k 64 / 8 heads 0.1131 -> 0.1075, 32 / 8 heads 0.1091 ->
// 0.1044, B16 x 8k 0.2081 -> 0.1961, B4 x 16k 0.1090 -> 0.1055, B2 x 32k 0.1175 -> 0.1099,
// B1 x 32k 0.0660 -> 0.0616). Not where 3 stages need no split (B64 x 4k: tied, 0.3905 / 0.3914,
// at the cost of a split and its combine), nor at 16 rows (Sq 4 x group 4: 0.4146 -> 0.4366) or
// page 256 (B8 x 8k 0.1046 -> 0.1074). Measured on sm_90 only.
void prefer_two_stages(const SdpaDecodeDescriptor& d, DecodeParams& p, const DeviceCaps& caps) {
  if (caps.sm < 90 || !d.paged() || p.page_size != 16 || p.d != 128 || p.rows > 8 || p.stages != 3 || p.splits <= 1) return;
  p.stages = 2;
  choose_splits(p, caps);
}

std::size_t split_workspace(const DecodeParams& p) {
  if (p.splits <= 1) return 0;
  const std::int64_t rows = static_cast<std::int64_t>(p.splits) * p.batch * p.sq * p.hq;
  return round_up(rows * p.d * 4, kWorkspaceAlignment) + round_up(rows * 4, kWorkspaceAlignment);
}

KernelSku decode_sku(DType t, const char* impl) {
  KernelSku s;
  s.family = "paged_decode";
  s.impl = impl;
  s.in = s.out = t;
  s.compute = s.precision.accumulator = t == DType::kF64 ? DType::kF64 : DType::kF32;
  s.min_sm = 80;
  s.backend = Backend::kHand;
  s.graph_capturable = true;
  return s;
}

// The cache rows of the tensor-core kernels: 16-byte aligned, strides in whole 16 bytes; with
// heads_per_row > 1 the heads of a token row packed (head stride D: one bulk copy per row).
std::string cache_row_rejection(const SdpaDecodeDescriptor& d, std::int64_t heads_per_row) {
  for (const auto& [t, f] : {std::pair{&d.k_cache, "k_cache"}, std::pair{&d.v_cache, "v_cache"}}) {
    if (t->alignment < 16) return std::string(f) + ".alignment = " + s64(t->alignment) + " < 16 bytes";
    for (int i = 0; i < 3; ++i)
      if (t->shape[i] > 1 && t->strides[i] % 8 != 0)
        return std::string(f) + ".strides[" + std::to_string(i) + "] = " + s64(t->strides[i]) +
               " is not a multiple of 8 elements (16-byte rows)";
    if (heads_per_row > 1 && t->strides[2] != t->shape[3])
      return std::string(f) + ".strides[2] = " + s64(t->strides[2]) + " != D = " + s64(t->shape[3]) +
             ": the KV heads of a token row must be packed (one copy per row)";
  }
  return "";
}

std::string smem_rejection(std::int64_t bytes, const DeviceCaps& caps) {
  if (bytes > static_cast<std::int64_t>(caps.smem_per_block_optin))
    return "needs " + s64(bytes) + " bytes of shared memory > the device's " + s64(static_cast<std::int64_t>(caps.smem_per_block_optin));
  return "";
}

// Why the tensor-core kernel cannot run `d` ("" = it can).
std::string mma_rejection(const SdpaDecodeDescriptor& d, const DeviceCaps& caps) {
  const DType t = d.q.dtype;
  if (t != DType::kF16 && t != DType::kBF16) return "q.dtype = " + dt(t) + ": the tensor-core kernel takes f16 or bf16";
  const std::int64_t dim = d.q.shape[3];
  if (dim != 64 && dim != 128 && dim != 256) return "D = " + s64(dim) + ": the tensor-core kernel is built for D in {64, 128, 256}";
  if (d.paged() && d.k_cache.shape[1] % 16 != 0)
    return "k_cache.shape[1] = page_size = " + s64(d.k_cache.shape[1]) + " is not a multiple of 16";
  if (std::string why = cache_row_rejection(d, 1); !why.empty()) return why;
  const DecodeParams p = make_params(d);
  if (p.batch * p.hkv * p.row_blocks > 0x7FFFFFFF)
    return "B * Hkv * ceil(Hq / Hkv * Sq / 64) = " + s64(p.batch * p.hkv * p.row_blocks) + " CTAs > 2^31 - 1";
  return smem_rejection(decode_smem_bytes(dim, choose_stages(dim, caps), kDecodeRowsPerCta), caps);
}

struct MmaCandidate {
  using Desc = SdpaDecodeDescriptor;
  using Args = SdpaDecodeArgs;
  static DecodeParams setup(const Desc& d, const DeviceCaps& caps) {
    DecodeParams p = make_params(d);
    p.stages = choose_stages(p.d, caps);
    p.pdl = caps.sm >= 90 ? 1 : 0;
    choose_splits(p, caps);
    prefer_two_stages(d, p, caps);
    return p;
  }
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = decode_sku(d.q.dtype, "mma_splitkv");
    pr.rejection = mma_rejection(d, caps);
    if (pr.rejection.empty()) pr.workspace_bytes = split_workspace(setup(d, caps));
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<DecodeParams>(setup(d, caps)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    DecodeParams p = with_pointers(*static_cast<const DecodeParams*>(state), a);
    set_workspace(p, ws);
    return launch_decode_mma(d.q.dtype, p, s);
  }
  // The split partials in the workspace (split_workspace's layout).
  static void set_workspace(DecodeParams& p, Workspace ws) {
    if (p.splits <= 1) return;
    const std::int64_t rows = static_cast<std::int64_t>(p.splits) * p.batch * p.sq * p.hq;
    p.ws_o = static_cast<float*>(ws.data);
    p.ws_lse = reinterpret_cast<float*>(static_cast<char*>(ws.data) + round_up(rows * p.d * 4, kWorkspaceAlignment));
  }
  static DecodeParams with_pointers(DecodeParams p, const Args& a) {
    p.q = a.q;
    p.k = a.k_cache;
    p.v = a.v_cache;
    p.block_table = a.block_table;
    p.seqlens = a.seqlens_k;
    p.o = a.o;
    p.lse = a.lse;
    p.alibi = a.alibi_slopes;
    return p;
  }
};

// The bulk-copy kernel (kernels/decode_bulk.cuh): KV heads per CTA, the largest of 8, 4, 2, 1
// dividing Hkv (8: a whole 2 KiB token row of the must-show shape per copy).
std::int64_t bulk_heads_per_cta(std::int64_t hkv) {
  for (std::int64_t hb : {8, 4, 2}) if (hkv % hb == 0) return hb;
  return 1;
}

// Why the bulk-copy kernel cannot run `d` ("" = it can).
std::string bulk_rejection(const SdpaDecodeDescriptor& d, const DeviceCaps& caps) {
  if (caps.sm < 90) return "sm " + std::to_string(caps.sm) + " < 90: cp.async.bulk needs sm_90+";
  const DType t = d.q.dtype;
  if (t != DType::kF16 && t != DType::kBF16) return "q.dtype = " + dt(t) + ": the bulk-copy kernel takes f16 or bf16";
  const std::int64_t dim = d.q.shape[3];
  if (dim != 64 && dim != 128) return "D = " + s64(dim) + ": the bulk-copy kernel is built for D in {64, 128}";
  const std::int64_t rows = d.q.shape[2] / d.k_cache.shape[2] * d.q.shape[1];
  if (rows > kBulkMaxRows)
    return "Hq / Hkv * Sq = " + s64(rows) + " query rows per KV head > " + std::to_string(kBulkMaxRows) + " (one m16 tile)";
  const std::int64_t hb = bulk_heads_per_cta(d.k_cache.shape[2]);
  if (std::string why = cache_row_rejection(d, hb); !why.empty()) return why;
  const DecodeParams p = make_params(d);
  if (p.batch * (p.hkv / hb) > 0x7FFFFFFF) return "B * Hkv / " + s64(hb) + " = " + s64(p.batch * (p.hkv / hb)) + " CTAs > 2^31 - 1";
  return smem_rejection(decode_bulk_smem_bytes(dim, decode_bulk_stages(dim), 1), caps);
}

struct BulkCandidate {
  using Desc = SdpaDecodeDescriptor;
  using Args = SdpaDecodeArgs;
  // One CTA per SM (~200 KiB of stages): the split count makes B * Hkv / hb * splits CTAs
  // fill whole waves of the SMs (within 95% of the best), up to 256 splits of >= one tile.
  static DecodeParams setup(const Desc& d, const DeviceCaps& caps) {
    DecodeParams p = make_params(d);
    p.pdl = 1;  // sm_90+ only
    p.heads_per_cta = static_cast<int>(bulk_heads_per_cta(p.hkv));
    const std::int64_t tile = decode_bulk_tile_keys(p.heads_per_cta);
    p.splits = 1;
    p.split_len = round_up(std::max<std::int64_t>(p.capacity, 1), tile);
    if (p.batch == 0 || p.capacity == 0) return p;
    const double base = static_cast<double>(p.batch * (p.hkv / p.heads_per_cta));
    const std::int64_t max_splits = std::clamp<std::int64_t>(p.capacity / (2 * tile), 1, kDecodeMaxSplits);
    set_splits(p, wave_splits(base, static_cast<double>(std::max(caps.sm_count, 1)), max_splits, 0.95, p.capacity, tile),
               tile);
    return p;
  }
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = decode_sku(d.q.dtype, "bulk_splitkv");
    pr.sku.min_sm = 90;
    pr.rejection = bulk_rejection(d, caps);
    if (pr.rejection.empty()) pr.workspace_bytes = split_workspace(setup(d, caps));
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<DecodeParams>(setup(d, caps)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    DecodeParams p = MmaCandidate::with_pointers(*static_cast<const DecodeParams*>(state), a);
    MmaCandidate::set_workspace(p, ws);
    return launch_decode_bulk(d.q.dtype, p, s);
  }
};

struct SimtCandidate {
  using Desc = SdpaDecodeDescriptor;
  using Args = SdpaDecodeArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = decode_sku(d.q.dtype, "simt_warp_row");
    if (d.q.shape[3] > 512) pr.rejection = "D = " + s64(d.q.shape[3]) + " > 512 (16 dims per lane)";
    else if (d.q.shape[0] * d.q.shape[1] * d.q.shape[2] > std::int64_t{0x7FFFFFFF} * 4)
      pr.rejection = "B * Sq * Hq = " + s64(d.q.shape[0] * d.q.shape[1] * d.q.shape[2]) + " rows need more than 2^31 - 1 blocks";
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    return std::shared_ptr<const void>(std::make_shared<DecodeParams>(make_params(d)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace, cudaStream_t s) {
    return launch_decode_simt(d.q.dtype, MmaCandidate::with_pointers(*static_cast<const DecodeParams*>(state), a), s);
  }
};

constexpr std::array<Candidate<SdpaDecodeDescriptor, SdpaDecodeArgs>, 3> kDecodeCandidates = {
    Candidate<SdpaDecodeDescriptor, SdpaDecodeArgs>{&MmaCandidate::probe, &MmaCandidate::prepare, &MmaCandidate::launch},
    Candidate<SdpaDecodeDescriptor, SdpaDecodeArgs>{&BulkCandidate::probe, &BulkCandidate::prepare, &BulkCandidate::launch},
    Candidate<SdpaDecodeDescriptor, SdpaDecodeArgs>{&SimtCandidate::probe, &SimtCandidate::prepare, &SimtCandidate::launch}};

}  // namespace

Status check_decode_args(const SdpaDecodeDescriptor& d, const SdpaDecodeArgs& a) {
  std::vector<norm::PtrOperand> ops = {{a.o, d.o, "o", true, false}, {a.q, d.q, "q", false, false}};
  if (d.lse.rank) ops.push_back({a.lse, d.lse, "lse", true, false});
  if (d.alibi_slopes.rank) ops.push_back({a.alibi_slopes, d.alibi_slopes, "alibi_slopes", false, false});
  BARACUDA_TRY(norm::check_unused_pointer(a.lse, d.lse, "lse"));
  BARACUDA_TRY(norm::check_unused_pointer(a.alibi_slopes, d.alibi_slopes, "alibi_slopes"));
  return check_with_cache_operands(std::move(ops), {a.k_cache, a.v_cache, a.block_table, a.seqlens_k},
                                   {d.k_cache, d.v_cache, d.block_table, d.seqlens_k}, "seqlens_k", false);
}

}  // namespace attention

template <>
struct FamilyTraits<SdpaDecodeDescriptor>
    : attention::CacheFamilyTraits<SdpaDecodeDescriptor, SdpaDecodeArgs, attention::kDecodeFamily, &attention::validate_decode,
                                   attention::kDecodeCandidates, &attention::check_decode_args> {};

template class Plan<SdpaDecodeDescriptor, SdpaDecodeArgs>;

}  // namespace baracuda
