// Int4GemmPlan (baracuda/ops/gemm_int4.hpp): descriptor validation, the six candidates and
// the run-time argument checks. Candidates, in this order:
//  * "w4a16_onepass": M <= 16, group_size 128 or K, the one-pass decode kernel
//    (kernels/int4_onepass.cuh): w4a16_streamk's units and rings, but each cluster of K-slice
//    blocks owns whole output tiles and finishes them in shared memory: no workspace, no second
//    kernel; launch shape from onepass_config. Deferred (after every other candidate) for M > 8
//    and for fewer than 8 tiles a cluster: H100 session 32 measured it 2-6% faster than
//    w4a16_streamk at M = 1 / 4 / 8 on 28672 x 8192, 6-14% slower at M = 16;
//  * "w4a16_streamk": M <= 16, group_size 128 or K, the stream-K decode kernel
//    (kernels/int4_streamk.cuh): every warp of the device streams the same number of (16-row,
//    128-k) units through a cp.async ring, partial sums of the tiles it shares with its
//    neighbours reduced by a second kernel; launch shape from streamk_config;
//  * "w4a16_stream": M <= 16, the streaming decode kernel (kernels/int4_stream.cuh): the
//    fragments of w4a16_gemv with 2-3 chunks of weights in flight per warp, launch shape
//    sized to whole waves of resident blocks (stream_config), split-K as below;
//  * "w4a16_gemv": M <= 16, our decode kernel (kernels/int4_gemv.cuh), launch shape fixed
//    at select (split-K when N alone cannot fill the device or X's slice must fit in shared
//    memory), f32 partial sums in the workspace when split;
//  * "w4a16_bulk": sm_90+, M <= 16, after w4a16_stream and w4a16_gemv (measured slower on the H200), the bulk-copy decode kernel (kernels/int4_bulk.cuh): the
//    packed weights stream through a shared-memory ring filled by cp.async.bulk (one copy per
//    16-row tile row per 1024-k stage), launch shape from bulk_config (2 CTAs of 8 consumer
//    warps or 1 of 16 per SM, split-K when X's slice must shrink or N gives too few tiles);
//  * "dequant_cublaslt": any M, our dequantization kernel (kernels/int4_dequant.cuh) into the
//    workspace, then the GemmPlan chosen at select (cuBLASLt, bias epilogue).
#include <algorithm>
#include <array>
#include <span>
#include <string>

#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/gemm_int4.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/workspace_align.hpp"
#include "gemm/int4_params.hpp"
#include "gemm/lt_gemm.hpp"
#include "gemm/quant_checks.hpp"

namespace baracuda {

std::size_t Int4GemmDescriptor::hash() const noexcept {
  std::size_t h = gemm::quant_matrix_hash(x);
  h = detail::hash_combine(h, gemm::quant_matrix_hash(w));
  h = detail::hash_combine(h, gemm::quant_matrix_hash(y));
  h = detail::hash_combine(h, static_cast<std::size_t>(group_size));
  return detail::hash_combine(h, std::size_t{zeros} | (std::size_t{bias} << 1) | (static_cast<std::size_t>(w_layout) << 2));
}

std::string Int4GemmDescriptor::to_string() const {
  return "int4_gemm(x=" + gemm::quant_matrix_string(x) + ", w=" + gemm::quant_matrix_string(w) +
         ", y=" + gemm::quant_matrix_string(y) + ", group_size=" + std::to_string(group_size) + (zeros ? ", zeros" : "") +
         (bias ? ", bias" : "") +
         (w_layout != Int4WeightLayout::kRowMajor ? std::string(", w_layout=") + int4_weight_layout_name(w_layout) : "") + ")";
}

namespace gemm {
namespace {

std::string s64(std::int64_t v) { return std::to_string(v); }
std::string dt(DType t) { return std::string(dtype_name(t)); }

bool is_tiled(const Int4GemmDescriptor& d) { return d.w_layout == Int4WeightLayout::kTiled16x128; }

// The rejection of the decode kernels that read row-major weights only, for tiled weights.
std::string row_major_only(const Int4GemmDescriptor& d) {
  return std::string("w_layout = ") + int4_weight_layout_name(d.w_layout) + ": this decode kernel reads row-major weights";
}

Status validate_int4(const Int4GemmDescriptor& d) {
  BARACUDA_TRY(validate_matrix(d.x, "x"));
  BARACUDA_TRY(validate_matrix(d.w, "w"));
  BARACUDA_TRY(validate_matrix(d.y, "y"));
  const DType t = d.x.dtype;
  if (t != DType::kF16 && t != DType::kBF16)
    return quant_invalid("x.dtype = " + dt(t) + ": Int4GemmPlan takes f16 or bf16 activations");
  if (d.y.dtype != t) return quant_invalid("y.dtype = " + dt(d.y.dtype) + " differs from x.dtype = " + dt(t));
  if (d.w.dtype != DType::kS4 && d.w.dtype != DType::kU4)
    return quant_invalid("w.dtype = " + dt(d.w.dtype) + ": Int4GemmPlan takes s4 or u4 weights");
  for (const auto& [m, f] : {std::pair{&d.x, "x"}, std::pair{&d.w, "w"}, std::pair{&d.y, "y"}})
    if (m->order != MatrixOrder::kRowMajor)
      return quant_invalid(std::string(f) + ".order = column-major: Int4GemmPlan takes " + f + " row-major" +
                           (m == &d.w ? " (N x K, K contiguous, packed)" : ""));
  const std::int64_t M = d.m(), N = d.n(), K = d.k();
  if (d.w.cols != K) return quant_invalid("w.cols = " + s64(d.w.cols) + " differs from x.cols = K = " + s64(K));
  if (d.w.rows != N) return quant_invalid("w.rows = " + s64(d.w.rows) + " differs from y.cols = N = " + s64(N));
  if (d.x.rows != M) return quant_invalid("y.rows = " + s64(M) + " differs from x.rows = M = " + s64(d.x.rows));
  if (K <= 0 || K % 32 != 0) return quant_invalid("x.cols = K = " + s64(K) + " is not a positive multiple of 32");
  const std::int64_t gs = d.group_size;
  if (gs != 32 && gs != 64 && gs != 128 && gs != K)
    return quant_invalid("group_size = " + s64(gs) + ": Int4GemmPlan takes 32, 64, 128 or K (= " + s64(K) + ")");
  if (K % gs != 0) return quant_invalid("x.cols = K = " + s64(K) + " is not a multiple of group_size = " + s64(gs));
  if (d.w.dtype == DType::kU4 && !d.zeros)
    return quant_invalid("zeros = false with w.dtype = u4: unsigned weights need zero points (s4 takes none)");
  if (d.w.dtype == DType::kS4 && d.zeros)
    return quant_invalid("zeros = true with w.dtype = s4: signed weights take no zero points (use u4)");
  if (d.w.ld % 32 != 0)
    return quant_invalid("w.ld = " + s64(d.w.ld) + " is not a multiple of 32 elements (rows must be 16-byte aligned)");
  if (is_tiled(d)) {
    if (N % 16 != 0) return quant_invalid("w.rows = N = " + s64(N) + " is not a multiple of 16 (w_layout = tiled16x128)");
    if (K % 128 != 0) return quant_invalid("w.cols = K = " + s64(K) + " is not a multiple of 128 (w_layout = tiled16x128)");
    if (d.w.ld != K)
      return quant_invalid("w.ld = " + s64(d.w.ld) + " differs from K = " + s64(K) + " (w_layout = tiled16x128 has no row padding)");
  } else if (d.w_layout != Int4WeightLayout::kRowMajor) {
    return quant_invalid("w_layout = " + std::to_string(static_cast<int>(d.w_layout)) + " is not an Int4WeightLayout");
  }
  if (d.w.alignment < 16)
    return quant_invalid("w.alignment = " + s64(d.w.alignment) + " bytes is below 16 (the kernels read 16-byte vectors)");
  if (d.x.alignment < 2) return quant_invalid("x.alignment = " + s64(d.x.alignment) + " bytes is below one element (2)");
  if (d.y.alignment < 2) return quant_invalid("y.alignment = " + s64(d.y.alignment) + " bytes is below one element (2)");
  return Status::ok();
}

Int4Weights weights_of(const Int4GemmDescriptor& d, const Int4GemmArgs& a) {
  Int4Weights wt;
  wt.w = a.w;
  wt.ld_bytes = d.w.ld / 2;
  wt.scales = a.scales;
  wt.zeros = d.zeros ? a.zeros : nullptr;
  wt.is_signed = d.w.dtype == DType::kS4;
  wt.n = d.n();
  wt.k = d.k();
  wt.group_size = d.group_size;
  wt.groups = d.groups();
  wt.tiled = is_tiled(d);
  return wt;
}

// The operands of a run as the decode kernels take them (their launch shape and workspace are
// each SKU's own).
Int4GemvParams gemv_params_of(const Int4GemmDescriptor& d, const Int4GemmArgs& a) {
  Int4GemvParams p;
  p.wt = weights_of(d, a);
  p.act = d.x.dtype;
  p.x = a.x;
  p.ldx = d.x.ld;
  p.x_vec16 = pointer_alignment(a.x) >= 16 && d.x.ld % 8 == 0;
  p.bias = d.bias ? a.bias : nullptr;
  p.y = a.y;
  p.ldy = d.y.ld;
  p.m = d.m();
  return p;
}

KernelSku int4_sku(const Int4GemmDescriptor& d, const char* impl, Backend b) {
  KernelSku s;
  s.family = "int4_gemm";
  s.impl = impl;
  s.in = d.w.dtype;
  s.compute = s.precision.accumulator = DType::kF32;
  s.out = d.x.dtype;
  s.backend = b;
  s.min_sm = 80;
  s.graph_capturable = true;
  return s;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// ------------------------------------------------------------------------ decode kernel
// The largest dynamic shared memory a decode block asks for (two blocks still fit per SM).
constexpr std::size_t kGemvSmemBudget = std::size_t{96} << 10;
constexpr std::size_t kDefaultSmem = std::size_t{48} << 10;

Int4GemvConfig gemv_config(const Int4GemmDescriptor& d, const DeviceCaps& caps) {
  Int4GemvConfig c;
  const std::int64_t M = std::max<std::int64_t>(d.m(), 1), N = d.n(), K = d.k();
  c.row_blocks = ceil_div(N, kInt4GemvRowsPerBlock);
  const std::size_t budget =
      std::min(kGemvSmemBudget, caps.smem_per_block_optin > 0 ? caps.smem_per_block_optin : kDefaultSmem);
  std::int64_t kmax = static_cast<std::int64_t>(budget) / (2 * M) - 32;
  kmax = std::max<std::int64_t>(128, kmax / 128 * 128);
  // Enough blocks for about two resident per SM, and X's slice within the budget.
  const std::int64_t target = 2 * std::max(caps.sm_count, 1);
  std::int64_t splits = std::max(ceil_div(K, kmax), ceil_div(target, std::max<std::int64_t>(c.row_blocks, 1)));
  splits = std::min(splits, ceil_div(K, 128));
  c.kslice = ceil_div(ceil_div(K, splits), 128) * 128;
  c.splits = static_cast<int>(ceil_div(K, c.kslice));
  c.smem_bytes = int4_gemv_smem_bytes(M, c.kslice);
  return c;
}

// ------------------------------------------------------------------------ streaming decode kernel
// k >> shift == k / group_size for 0 <= k < K (group_size a power of two, or K: always 0).
int group_shift_of(std::int64_t gs) {
  int sh = 0;
  while ((std::int64_t{1} << sh) < gs) ++sh;
  return (std::int64_t{1} << sh) == gs ? sh : 63;
}

// The launch shape of w4a16_stream: among the split counts along K (slices of whole 128-k
// chunks, X's slice within the shared memory limit), the one of least modelled time. Model:
// blocks run in waves of kInt4StreamBlocksPerSm resident blocks per SM (fewer when X's slice
// limits them); a wave of u blocks of B weight bytes each takes max(u B / kStreamBw, B /
// kBlockRate) (the device's bandwidth shared, or one block's own rate: 8 warps x 3 chunks x
// 2 KB in flight over ~2 us of loaded latency); a split adds the reduction kernel's launch and
// its f32 traffic. Deterministic: a function of the descriptor and the device caps only.
Int4GemvConfig stream_config(const Int4GemmDescriptor& d, const DeviceCaps& caps) {
  constexpr double kStreamBw = 3.3e12, kBlockRate = 24e9, kReduceLaunch = 1.5e-6;
  Int4GemvConfig c;
  const std::int64_t M = std::max<std::int64_t>(d.m(), 1), N = d.n(), K = d.k();
  c.row_blocks = ceil_div(N, kInt4GemvRowsPerBlock);
  c.group_shift = group_shift_of(d.group_size);
  const std::int64_t sms = std::max(caps.sm_count, 1);
  const std::size_t optin = caps.smem_per_block_optin > 0 ? caps.smem_per_block_optin : kDefaultSmem;
  const std::size_t sm_smem = optin + 1024;  // per SM: the opt-in block limit + the 1 KB reserved per block
  const std::int64_t chunks = ceil_div(K, 128), blocks = std::max<std::int64_t>(c.row_blocks, 1);
  double best = -1;
  for (std::int64_t want = 1; want <= chunks; ++want) {
    const std::int64_t kslice = ceil_div(chunks, want) * 128, splits = ceil_div(K, kslice);
    if (splits != want) continue;  // each split count once
    const std::size_t smem = int4_gemv_smem_bytes(M, kslice);
    if (smem > optin) continue;
    const std::int64_t per_sm =
        std::min<std::int64_t>(kInt4StreamBlocksPerSm, static_cast<std::int64_t>(sm_smem / (smem + 1024)));
    if (per_sm < 1) continue;
    const double block_bytes = static_cast<double>(kInt4GemvRowsPerBlock / 2 * kslice);
    double t = 0;
    for (std::int64_t left = blocks * splits; left > 0; left -= per_sm * sms) {
      const double u = static_cast<double>(std::min(left, per_sm * sms));
      t += std::max(u * block_bytes / kStreamBw, block_bytes / kBlockRate);
    }
    if (splits > 1) t += kReduceLaunch + 8.0 * static_cast<double>(splits * M * N) / kStreamBw;
    if (best < 0 || t < best) {
      best = t;
      c.kslice = kslice;
      c.splits = static_cast<int>(splits);
      c.smem_bytes = smem;
    }
  }
  return c;
}

// ------------------------------------------------------------------------ bulk-copy decode kernel
std::size_t align128(std::size_t v) { return (v + 127) / 128 * 128; }

// Shared-memory layout of a w4a16_bulk CTA (kernels/int4_bulk.cuh): the mbarriers, X's slice
// (int4_stage_x's layout), the tile partials (consumer warps x 16 rows x M f32; double-buffered
// when that is at most 4 KB, else one buffer and a second barrier per tile), then c.stages
// stage buffers.
void bulk_layout(Int4BulkConfig& c, std::int64_t M, bool zeros) {
  c.x_off = kInt4BulkBarrierBytes;
  c.red_off = c.x_off + align128(int4_gemv_smem_bytes(M, c.kslice));
  const std::size_t red = static_cast<std::size_t>(c.groups * kInt4BulkChunkWarps * M * kInt4BulkTileRows) * 4;
  c.red_buffers = red <= 4096 ? 2 : 1;
  c.ring_off = c.red_off + align128(c.red_buffers * red);
  c.stage_bytes =
      align128(static_cast<std::size_t>(kInt4BulkTileRows) * (kInt4BulkRowBytes + (zeros ? 2 : 1) * c.scale_row_bytes));
  c.smem_bytes = c.ring_off + static_cast<std::size_t>(c.stages) * c.stage_bytes;
}

// The launch shape of w4a16_bulk: among 2 resident CTAs per SM (one consumer group each) or 1
// (two groups: 16 consumer warps per SM either way) and the split counts along K (slices of
// whole 1024-k stages, X's slice + partials + at least 4 stage buffers within the CTA's share
// of shared memory, as many buffers as fit up to 16, a multiple of the groups: a buffer is
// always read by the same group), the one of least modelled time. Model: one wave (grid <= CTAs per SM x SMs); the busiest SM streams its CTAs'
// bytes at min(kBw / the SMs with work, bytes in flight / kLatency) (in flight: all but one
// buffer of each of its CTAs); a split adds the reduction kernel's launch and its f32 traffic. Ties keep the
// earlier candidate (2 CTAs per SM: twice the consumer warps for the dequantization; fewer
// splits). Deterministic: a function of the descriptor and the device caps only.
Expected<Int4BulkConfig> bulk_config(const Int4GemmDescriptor& d, const DeviceCaps& caps) {
  constexpr double kBw = 3.6e12, kLatency = 1.5e-6, kReduceLaunch = 2e-6;
  const std::int64_t M = std::max<std::int64_t>(d.m(), 1), N = d.n(), K = d.k();
  const bool zeros = d.w.dtype == DType::kU4;
  const std::int64_t sms = std::max(caps.sm_count, 1);
  const std::size_t optin = caps.smem_per_block_optin > 0 ? caps.smem_per_block_optin : kDefaultSmem;
  const std::size_t sm_smem = optin + 1024;  // per SM: the opt-in block limit + the 1 KB reserved per block
  Int4BulkConfig base;
  base.tiles = ceil_div(std::max<std::int64_t>(N, 1), kInt4BulkTileRows);
  // A stage's scales of one row are a 16-byte run when each [N, G] row is (G % 8 == 0) and a
  // stage holds whole groups (group_size <= 1024; then 1024-k stage starts are 8-group aligned).
  if (d.groups() % 8 == 0 && d.group_size <= kInt4BulkStageK)
    base.scale_row_bytes = static_cast<int>(2 * kInt4BulkStageK / d.group_size);
  const std::int64_t stage_count = ceil_div(K, kInt4BulkStageK);
  double best_t = -1;
  Int4BulkConfig best;
  for (int per_sm : {2, 1}) {
    const std::size_t budget = std::min(optin, sm_smem / per_sm - 1024);
    for (std::int64_t want = 1; want <= stage_count; ++want) {
      Int4BulkConfig c = base;
      c.kslice = ceil_div(stage_count, want) * kInt4BulkStageK;
      c.splits = static_cast<int>(ceil_div(K, c.kslice));
      if (c.splits != want) continue;  // each split count once
      c.ctas_per_sm = per_sm;
      c.groups = per_sm == 1 ? 2 : 1;
      c.stages = 0;
      bulk_layout(c, M, zeros);
      if (c.smem_bytes + 4 * c.stage_bytes > budget) continue;
      c.stages = static_cast<int>(std::min<std::size_t>(kInt4BulkMaxStages, (budget - c.smem_bytes) / c.stage_bytes));
      c.stages -= c.stages % c.groups;
      bulk_layout(c, M, zeros);
      const std::int64_t cps = std::min(c.tiles, per_sm * sms / c.splits);
      if (cps < 1) continue;
      c.ctas_per_slice = static_cast<int>(cps);
      const double cta_bytes = static_cast<double>(ceil_div(c.tiles, cps) * kInt4BulkTileRows) *
                               static_cast<double>(c.kslice / 2 + (zeros ? 2 : 1) * c.kslice / d.group_size * 2);
      const std::int64_t grid = cps * c.splits, on_sm = std::min<std::int64_t>(per_sm, ceil_div(grid, sms));
      const double active = static_cast<double>(ceil_div(grid, on_sm));  // SMs with work
      const double in_flight = static_cast<double>(on_sm * (c.stages - 1)) * static_cast<double>(c.stage_bytes);
      const double rate = std::min(kBw / active, in_flight / kLatency);
      double t = static_cast<double>(on_sm) * cta_bytes / rate;
      if (c.splits > 1) t += kReduceLaunch + 8.0 * static_cast<double>(c.splits * M * N) / kBw;
      if (best_t < 0 || t < best_t) {
        best_t = t;
        best = c;
      }
    }
  }
  if (best_t < 0)
    return Status(Code::kNotSupported, "no K slice of X (M = " + s64(M) + ") with 4 stage buffers fits " +
                                           std::to_string(optin) + " bytes of shared memory per block");
  return best;
}

struct GemvState {
  Int4GemvConfig cfg;
};

// The two decode SKUs: kStream = true is w4a16_stream (kernels/int4_stream.cuh), false the
// original w4a16_gemv (kernels/int4_gemv.cuh); both M <= 16, same parameters and workspace rule.
template <bool kStream>
struct DecodeCandidate {
  using Desc = Int4GemmDescriptor;
  static Int4GemvConfig config(const Desc& d, const DeviceCaps& caps) {
    return kStream ? stream_config(d, caps) : gemv_config(d, caps);
  }
  static std::size_t workspace(const Desc& d, const Int4GemvConfig& c) {
    return c.splits > 1 ? static_cast<std::size_t>(c.splits * d.m() * d.n()) * 4 : 0;
  }
  static Candidate<Desc, Int4GemmArgs>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Int4GemmArgs>::Probe pr;
    pr.sku = int4_sku(d, kStream ? "w4a16_stream" : "w4a16_gemv", Backend::kHand);
    constexpr std::int64_t k31 = std::int64_t{1} << 31;
    if (is_tiled(d))
      pr.rejection = row_major_only(d);
    else if (d.m() > kInt4GemvMaxM)
      pr.rejection = "M = " + s64(d.m()) + " > " + s64(kInt4GemvMaxM) + ": the decode kernel covers at most 16 rows of x";
    else if (kStream && d.m() > 8 && (d.n() * d.groups() >= k31 || d.n() * (d.w.ld / 32) >= k31))
      pr.rejection = "N x G = " + s64(d.n() * d.groups()) + " scales or N x w.ld / 32 = " + s64(d.n() * (d.w.ld / 32)) +
                     " weight vectors >= 2^31: the streaming kernel indexes them in 32 bits for M > 8";
    else
      pr.workspace_bytes = workspace(d, config(d, caps));
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    auto st = std::make_shared<GemvState>();
    st->cfg = config(d, caps);
    if (caps.ordinal >= 0 && d.m() > 0 && st->cfg.smem_bytes > kDefaultSmem)
      BARACUDA_TRY(kStream ? int4_stream_allow_smem(d.x.dtype, d.w.dtype == DType::kS4, d.m(), st->cfg.smem_bytes)
                           : int4_gemv_allow_smem(d.x.dtype, d.m(), st->cfg.smem_bytes));
    return std::shared_ptr<const void>(st);
  }
  static Status launch(const void* state, const Desc& d, const Int4GemmArgs& a, Workspace ws, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const auto& st = *static_cast<const GemvState*>(state);
    Int4GemvParams p = gemv_params_of(d, a);
    p.cfg = st.cfg;
    p.partial = st.cfg.splits > 1 ? static_cast<float*>(ws.data) : nullptr;
    return kStream ? launch_int4_stream(p, s) : launch_int4_gemv(p, s);
  }
};
using StreamCandidate = DecodeCandidate<true>;
using GemvCandidate = DecodeCandidate<false>;

// w4a16_bulk (kernels/int4_bulk.cuh): sm_90+, M <= 16, launch shape from bulk_config.
struct BulkCandidate {
  using Desc = Int4GemmDescriptor;
  static std::size_t workspace(const Desc& d, const Int4BulkConfig& c) {
    return c.splits > 1 ? static_cast<std::size_t>(c.splits * d.m() * d.n()) * 4 : 0;
  }
  static Candidate<Desc, Int4GemmArgs>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Int4GemmArgs>::Probe pr;
    pr.sku = int4_sku(d, "w4a16_bulk", Backend::kHand);
    pr.sku.min_sm = 90;
    if (caps.sm < 90) {
      pr.rejection = "sm " + std::to_string(caps.sm) + " < 90: cp.async.bulk and mbarrier transaction counts need sm_90+";
    } else if (is_tiled(d)) {
      pr.rejection = row_major_only(d);
    } else if (d.m() > kInt4GemvMaxM) {
      pr.rejection = "M = " + s64(d.m()) + " > " + s64(kInt4GemvMaxM) + ": the decode kernel covers at most 16 rows of x";
    } else {
      auto c = bulk_config(d, caps);
      if (!c)
        pr.rejection = c.error().message();
      else
        pr.workspace_bytes = workspace(d, *c);
    }
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    auto c = bulk_config(d, caps);
    if (!c) return c.error();
    auto st = std::make_shared<Int4BulkConfig>(*c);
    if (caps.ordinal >= 0 && d.m() > 0 && st->smem_bytes > kDefaultSmem)
      BARACUDA_TRY(int4_bulk_allow_smem(d.x.dtype, d.w.dtype == DType::kS4, d.m(), st->groups, st->smem_bytes));
    return std::shared_ptr<const void>(st);
  }
  static Status launch(const void* state, const Desc& d, const Int4GemmArgs& a, Workspace ws, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const auto& c = *static_cast<const Int4BulkConfig*>(state);
    Int4BulkParams p;
    p.g = gemv_params_of(d, a);
    p.g.cfg.splits = c.splits;  // the bulk config carries the gemv part of the launch shape
    p.g.cfg.kslice = c.kslice;
    p.g.cfg.smem_bytes = c.smem_bytes;
    p.g.cfg.group_shift = group_shift_of(d.group_size);
    p.g.partial = c.splits > 1 ? static_cast<float*>(ws.data) : nullptr;
    p.b = c;
    // Scale (zero) rows go through the copy engine when they are 16-byte runs; else the
    // consumers read them from global memory (same values, more latency).
    p.scale_bulk = c.scale_row_bytes > 0 && pointer_alignment(a.scales) >= 16 &&
                   (!d.zeros || pointer_alignment(a.zeros) >= 16);
    return launch_int4_bulk(p, s);
  }
};

// ------------------------------------------------------------------------ stream-K decode kernel
struct StreamKShape {
  Int4GemvConfig g;   // kslice, splits, group_shift, smem_bytes
  Int4StreamKConfig k;
};

// The launch shape of w4a16_streamk: the fewest K slices (of whole 128-k chunks) whose X slice
// is at most kInt4StreamKMaxXBytes (+ its row padding) and, with the warp rings, fits one
// block's shared memory; per slice, one block of kInt4StreamKWarps warps
// per SM (sm_count / splits blocks). Below kStreamKMinUnits units per warp (small weights) it
// refuses: the partial slots then outweigh the balance (H200 session 9, 4096 x 4096 at 3.9
// units per warp: M = 1 0.0124 ms = w4a16_stream, M = 16 0.0222 against w4a16_gemv 0.0157);
// with tiled weights, which only this decode kernel reads, it runs fewer blocks instead.
// slots bounds the warps one tile's units can meet: a tile of c chunks spans at most
// ceil(c / (units per warp, at least)) + 1 warp ranges.
constexpr std::int64_t kStreamKMinUnits = 8;
Expected<StreamKShape> streamk_config(const Int4GemmDescriptor& d, const DeviceCaps& caps) {
  const std::int64_t M = std::max<std::int64_t>(d.m(), 1), N = d.n(), K = d.k();
  const std::int64_t sms = std::max(caps.sm_count, 1);
  const std::size_t optin = caps.smem_per_block_optin > 0 ? caps.smem_per_block_optin : kDefaultSmem;
  StreamKShape c;
  c.k.stages = int4_streamk_stages(M);
  c.k.tiles = ceil_div(std::max<std::int64_t>(N, 1), 16);
  c.k.pdl = caps.sm >= 90;
  c.g.group_shift = group_shift_of(d.group_size);
  const std::int64_t chunks = ceil_div(K, 128);
  for (std::int64_t want = 1; want <= std::min(chunks, sms); ++want) {
    const std::int64_t kslice = ceil_div(chunks, want) * 128, splits = ceil_div(K, kslice);
    if (splits != want) continue;  // each split count once
    const std::size_t smem = int4_streamk_smem_bytes(M, kslice, c.k.stages);
    if (smem > optin || int4_gemv_smem_bytes(M, kslice) > kInt4StreamKMaxXBytes + M * 64) continue;
    const std::int64_t last_chunks = ceil_div(K - (splits - 1) * kslice, 128), umin = c.k.tiles * last_chunks;
    std::int64_t blocks = std::max<std::int64_t>(sms / splits, 1);
    // Tiled weights have no row-major decode kernel to fall back to: fewer blocks instead, so
    // that each warp still gets kStreamKMinUnits units, and then at least one.
    if (is_tiled(d)) blocks = std::clamp<std::int64_t>(umin / (kStreamKMinUnits * kInt4StreamKWarps), 1, blocks);
    const std::int64_t min_units = is_tiled(d) ? 1 : kStreamKMinUnits;
    if (umin < min_units * blocks * kInt4StreamKWarps)
      return Status(Code::kNotSupported, "the smallest K slice has " + s64(umin) + " units of 16 rows x 128 k < " +
                                             s64(min_units) + " per warp x " + s64(blocks * kInt4StreamKWarps) +
                                             " warps (N = " + s64(N) + ", K = " + s64(K) + ", " + s64(splits) +
                                             " K slices): too small for the stream-K split");
    c.g.kslice = kslice;
    c.g.splits = static_cast<int>(splits);
    c.g.smem_bytes = smem;
    c.k.warps_per_split = blocks * kInt4StreamKWarps;
    c.k.grid = static_cast<int>(blocks * splits);
    c.k.slots = ceil_div(std::min(kslice / 128, chunks), umin / c.k.warps_per_split) + 1;
    c.k.ring_offset = int4_streamk_ring_offset(M, kslice);
    return c;
  }
  return Status(Code::kNotSupported, "no K slice of X (M = " + s64(M) + ") with " + std::to_string(c.k.stages) +
                                         "-unit warp rings fits " + std::to_string(optin) +
                                         " bytes of shared memory per block");
}

// The rejection shared by the decode kernels that apply one scale per 128-k chunk
// (w4a16_streamk, w4a16_onepass), or "" when M and group_size suit them; `kernel` names the kernel.
std::string chunk_scale_rejection(const Int4GemmDescriptor& d, const char* kernel) {
  if (d.m() > kInt4GemvMaxM)
    return "M = " + s64(d.m()) + " > " + s64(kInt4GemvMaxM) + ": the decode kernel covers at most 16 rows of x";
  if (d.group_size != 128 && d.group_size != d.k())
    return "group_size = " + s64(d.group_size) + ": the " + kernel +
           " kernel applies one scale per 128-k chunk (group_size 128 or K)";
  return {};
}

struct StreamKCandidate {
  using Desc = Int4GemmDescriptor;
  static std::size_t workspace(const Desc& d, const StreamKShape& c) {
    return int4_streamk_workspace_bytes(d.m(), c.g.splits, c.k);
  }
  static Candidate<Desc, Int4GemmArgs>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Int4GemmArgs>::Probe pr;
    pr.sku = int4_sku(d, "w4a16_streamk", Backend::kHand);
    pr.rejection = chunk_scale_rejection(d, "stream-K");
    if (!pr.rejection.empty()) return pr;
    if (ceil_div(std::max<std::int64_t>(d.n(), 1), 16) * 16 * d.m() >= (std::int64_t{1} << 31)) {
      pr.rejection = "N x M = " + s64(d.n() * d.m()) + " outputs >= 2^31: the stream-K reduction indexes them in 32 bits";
    } else {
      auto c = streamk_config(d, caps);
      if (!c)
        pr.rejection = c.error().message();
      else
        pr.workspace_bytes = workspace(d, *c);
    }
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    auto c = streamk_config(d, caps);
    if (!c) return c.error();
    auto st = std::make_shared<StreamKShape>(*c);
    if (caps.ordinal >= 0 && d.m() > 0 && st->g.smem_bytes > kDefaultSmem)
      BARACUDA_TRY(int4_streamk_allow_smem(d.x.dtype, d.w.dtype == DType::kS4, is_tiled(d), d.m(), st->g.smem_bytes));
    return std::shared_ptr<const void>(st);
  }
  static Status launch(const void* state, const Desc& d, const Int4GemmArgs& a, Workspace ws, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const auto& c = *static_cast<const StreamKShape*>(state);
    Int4StreamKParams p;
    p.g = gemv_params_of(d, a);
    p.g.cfg = c.g;
    p.g.partial = static_cast<float*>(ws.data);
    p.k = c.k;
    p.counts = reinterpret_cast<int*>(static_cast<unsigned char*>(ws.data) +
                                      int4_streamk_counts_offset(d.m(), c.g.splits, c.k));
    return launch_int4_streamk(p, s);
  }
};

// ------------------------------------------------------------------------ one-pass decode kernel
struct OnePassShape {
  Int4GemvConfig g;   // kslice, splits, group_shift, smem_bytes
  Int4OnePassConfig o;
};

// The launch shape of w4a16_onepass: the K slices as w4a16_streamk's (the fewest whose X slice
// is at most kInt4StreamKMaxXBytes), at most 8 (one portable cluster) and more than one only on
// sm_90+ (distributed shared memory); C clusters of `splits` blocks, C = the clusters the device
// holds at once (max_clusters, from the occupancy query at prepare; sm_count / splits without a
// device), so that cluster c owns floor or ceil(T / C) tiles. Refused when a block's smallest
// slice gives a warp fewer than kOnePassMinUnits units, or when no slice count up to 8 fits shared memory.
constexpr std::int64_t kOnePassMinUnits = 2;
// Below this many tiles a cluster, w4a16_onepass defers to w4a16_streamk (its measured wins
// had 13-27 tiles a cluster; at 8 the busiest cluster is at most 1/8 above the mean).
constexpr std::int64_t kOnePassMinTilesFirst = 8;
constexpr int kOnePassMaxSplits = 8;
Expected<OnePassShape> onepass_config(const Int4GemmDescriptor& d, const DeviceCaps& caps, std::int64_t max_clusters) {
  const std::int64_t M = std::max<std::int64_t>(d.m(), 1), N = d.n(), K = d.k();
  const std::int64_t sms = std::max(caps.sm_count, 1);
  const std::size_t optin = caps.smem_per_block_optin > 0 ? caps.smem_per_block_optin : kDefaultSmem;
  OnePassShape c;
  c.o.stages = int4_streamk_stages(M);
  c.o.tiles = ceil_div(std::max<std::int64_t>(N, 1), 16);
  c.g.group_shift = group_shift_of(d.group_size);
  const std::int64_t chunks = ceil_div(K, 128);
  std::string too_big;
  for (std::int64_t want = 1; want <= std::min<std::int64_t>(chunks, kOnePassMaxSplits); ++want) {
    const std::int64_t kslice = ceil_div(chunks, want) * 128, splits = ceil_div(K, kslice);
    if (splits != want) continue;  // each split count once
    if (int4_gemv_smem_bytes(M, kslice) > kInt4StreamKMaxXBytes + M * 64) continue;
    if (splits > 1 && caps.sm < 90)
      return Status(Code::kNotSupported, "M = " + s64(M) + ", K = " + s64(K) + " needs " + s64(splits) +
                                             " K slices, summed through a thread-block cluster: sm_90+ (device sm_" +
                                             std::to_string(caps.sm) + ")");
    std::int64_t clusters = max_clusters > 0 ? max_clusters : sms / splits;
    clusters = std::clamp<std::int64_t>(clusters, 1, c.o.tiles);
    const std::int64_t min_tiles = c.o.tiles / clusters, max_tiles = ceil_div(c.o.tiles, clusters);
    const std::int64_t last_chunks = ceil_div(K - (splits - 1) * kslice, 128);
    if (min_tiles * last_chunks < kOnePassMinUnits * kInt4StreamKWarps)
      return Status(Code::kNotSupported, "a block's smallest K slice has " + s64(min_tiles * last_chunks) +
                                             " units of 16 rows x 128 k < " + s64(kOnePassMinUnits) + " per warp x " +
                                             s64(kInt4StreamKWarps) + " warps (N = " + s64(N) + ", K = " + s64(K) +
                                             ", " + s64(clusters) + " clusters): too small for the one-pass split");
    if (max_tiles * ceil_div(kslice, 128) >= (std::int64_t{1} << 31))
      return Status(Code::kNotSupported, "N = " + s64(N) + ": a block's units exceed 2^31");
    c.g.kslice = kslice;
    c.g.splits = static_cast<int>(splits);
    c.o.clusters = clusters;
    const std::size_t smem = int4_onepass_layout(c.o, M, kslice, c.g.splits, max_tiles);
    if (smem > optin) {  // more slices: a smaller X slice
      too_big = "w4a16_onepass needs " + std::to_string(smem) + " bytes of shared memory a block with " + s64(splits) +
                " K slices (" + s64(max_tiles) + " tiles' sums, M = " + s64(M) + ") > " + std::to_string(optin);
      continue;
    }
    c.g.smem_bytes = smem;
    return c;
  }
  if (!too_big.empty()) return Status(Code::kNotSupported, too_big);
  return Status(Code::kNotSupported, "no K slice of X (M = " + s64(M) + ", K = " + s64(K) + ") in at most " +
                                         std::to_string(kOnePassMaxSplits) + " slices fits " +
                                         std::to_string(kInt4StreamKMaxXBytes) + " bytes");
}

struct OnePassCandidate {
  using Desc = Int4GemmDescriptor;
  static Candidate<Desc, Int4GemmArgs>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Int4GemmArgs>::Probe pr;
    pr.sku = int4_sku(d, "w4a16_onepass", Backend::kHand);
    pr.rejection = chunk_scale_rejection(d, "one-pass");
    if (!pr.rejection.empty()) return pr;
    auto c = onepass_config(d, caps, -1);
    if (!c) {
      pr.rejection = c.error().message();
    } else if (d.m() > 8) {
      pr.deferral = "M = " + s64(d.m()) + " > 8: slower than w4a16_streamk (H100 session 32, 28672 x 8192 M = 16: 0.0599 "
                    "against 0.0567 ms; 14336 x 4096: 0.0243 against 0.0223)";
    } else if (c->o.tiles / c->o.clusters < kOnePassMinTilesFirst) {
      pr.deferral = s64(c->o.tiles / c->o.clusters) + " tiles a cluster < " + s64(kOnePassMinTilesFirst) +
                    ": whole-tile ranges this short leave the busiest clusters far above the mean (not measured)";
    }
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    auto c = onepass_config(d, caps, -1);
    if (!c) return c.error();
    if (caps.ordinal >= 0 && d.m() > 0) {
      const DType act = d.x.dtype;
      const bool s4 = d.w.dtype == DType::kS4;
      if (c->g.smem_bytes > kDefaultSmem) BARACUDA_TRY(int4_onepass_allow_smem(act, s4, is_tiled(d), d.m(), c->g.smem_bytes));
      // The clusters the device holds at once (GPCs may not split evenly into clusters):
      // fewer clusters own more tiles each, a second wave of clusters would only wait.
      const int held = int4_onepass_max_clusters(act, s4, is_tiled(d), d.m(), c->g.splits, c->g.smem_bytes);
      if (held > 0 && held < c->o.clusters) {
        c = onepass_config(d, caps, held);
        if (!c) return c.error();
        if (c->g.smem_bytes > kDefaultSmem)
          BARACUDA_TRY(int4_onepass_allow_smem(act, s4, is_tiled(d), d.m(), c->g.smem_bytes));
      }
    }
    return std::shared_ptr<const void>(std::make_shared<OnePassShape>(*c));
  }
  static Status launch(const void* state, const Desc& d, const Int4GemmArgs& a, Workspace, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const auto& c = *static_cast<const OnePassShape*>(state);
    Int4OnePassParams p;
    p.g = gemv_params_of(d, a);
    p.g.cfg = c.g;
    p.o = c.o;
    return launch_int4_onepass(p, s);
  }
};

// ------------------------------------------------------------------------ dequant + cuBLASLt
std::size_t dequant_bytes(const Int4GemmDescriptor& d) {
  return align_workspace(static_cast<std::size_t>(d.n() * d.k()) * 2);
}

GemmDescriptor dequant_gemm(const Int4GemmDescriptor& d) {
  GemmDescriptor g;
  g.a = d.x;
  g.b = MatrixLayout{d.x.dtype, d.k(), d.n(), d.k(), MatrixOrder::kColMajor, 16};  // Wd^T: the N x K buffer
  g.d = d.y;
  g.epilogue.bias = d.bias;
  if (d.bias) g.bias = TensorLayout::contiguous(d.x.dtype, {d.n()}, 2);
  return g;
}

struct DequantState {
  GemmImpl gemm;
  std::size_t wd_bytes = 0;
};

struct DequantCandidate {
  using Desc = Int4GemmDescriptor;
  static Candidate<Desc, Int4GemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, Int4GemmArgs>::Probe pr;
    pr.sku = int4_sku(d, "dequant_cublaslt", Backend::kCublasLt);
    pr.rejection = lt_rejection(dequant_gemm(d));
    pr.workspace_bytes = dequant_bytes(d);
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    auto st = std::make_shared<DequantState>();
    st->wd_bytes = dequant_bytes(d);
    if (st->wd_bytes > pref.max_workspace_bytes)
      return Status(Code::kNotSupported, "the dequantized weight needs " + std::to_string(st->wd_bytes) +
                                             " bytes of workspace > max_workspace_bytes = " +
                                             std::to_string(pref.max_workspace_bytes));
    PlanPreference sub = pref;
    sub.force_sku.clear();  // the preference named the int4 SKU; the GEMM takes cuBLASLt's strict one
    sub.skip_skus.clear();
    sub.max_workspace_bytes = pref.max_workspace_bytes - st->wd_bytes;
    auto g = select_gemm_impl(caps, dequant_gemm(d), sub);
    if (!g) return g.error();
    st->gemm = g.value();
    return PreparedCandidate{st, st->wd_bytes + st->gemm->workspace_bytes};
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    auto p = prepare_pref(d, caps, PlanPreference{});
    if (!p) return p.error();
    return std::move(p->state);
  }
  static Status launch(const void* state, const Desc& d, const Int4GemmArgs& a, Workspace ws, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const auto& st = *static_cast<const DequantState*>(state);
    BARACUDA_TRY(launch_int4_dequant(weights_of(d, a), d.x.dtype, ws.data, s));
    const auto& g = *st.gemm;
    const GemmArgs ga{.a = a.x, .b = ws.data, .d = a.y, .bias = d.bias ? a.bias : nullptr};
    return g.candidate->launch(g.state.get(), g.desc, ga,
                               Workspace{static_cast<char*>(ws.data) + st.wd_bytes, ws.bytes - st.wd_bytes}, s);
  }
};

// w4a16_bulk after the register-ring kernels: on the H200 (session 8) it measured slower on
// every decode shape (28672x8192: M=1 0.1088 ms vs stream 0.0668, M=16 0.2004 vs 0.0950;
// 4096x4096 M=1 0.0148 vs 0.0125): it stays for forced runs while its copy scheme is reworked.
constexpr std::array<Candidate<Int4GemmDescriptor, Int4GemmArgs>, 6> kInt4Candidates = {
    Candidate<Int4GemmDescriptor, Int4GemmArgs>{&OnePassCandidate::probe, &OnePassCandidate::prepare,
                                                &OnePassCandidate::launch},
    Candidate<Int4GemmDescriptor, Int4GemmArgs>{&StreamKCandidate::probe, &StreamKCandidate::prepare,
                                                &StreamKCandidate::launch},
    Candidate<Int4GemmDescriptor, Int4GemmArgs>{&StreamCandidate::probe, &StreamCandidate::prepare,
                                                &StreamCandidate::launch},
    Candidate<Int4GemmDescriptor, Int4GemmArgs>{&GemvCandidate::probe, &GemvCandidate::prepare, &GemvCandidate::launch},
    Candidate<Int4GemmDescriptor, Int4GemmArgs>{&BulkCandidate::probe, &BulkCandidate::prepare, &BulkCandidate::launch},
    Candidate<Int4GemmDescriptor, Int4GemmArgs>{&DequantCandidate::probe, &DequantCandidate::prepare,
                                                &DequantCandidate::launch}};

}  // namespace

Status check_int4_gemm_args(const Int4GemmDescriptor& d, const Int4GemmArgs& a) {
  if (d.m() == 0 || d.n() == 0) return Status::ok();  // nothing is read or written
  const DType t = d.x.dtype;
  const TensorLayout groups = TensorLayout::contiguous(t, {d.n(), d.groups()}, 2);
  return check_quant_operands({
      {"y", a.y, d.y.as_tensor(), true, true},
      {"x", a.x, d.x.as_tensor(), true, false},
      {"w", a.w, d.w.as_tensor(), true, false},
      {"scales", a.scales, groups, true, false},
      {"zeros", a.zeros, groups, d.zeros, false},
      {"bias", a.bias, TensorLayout::contiguous(t, {d.n()}, 2), d.bias, false},
  });
}

}  // namespace gemm

template <>
struct FamilyTraits<Int4GemmDescriptor> {
  static constexpr const char* kFamily = "int4_gemm";
  static Status validate(const Int4GemmDescriptor& d) { return gemm::validate_int4(d); }
  static std::span<const Candidate<Int4GemmDescriptor, Int4GemmArgs>> candidates() { return gemm::kInt4Candidates; }
  static Expected<PreparedCandidate> prepare_with_preference(std::size_t i, const Int4GemmDescriptor& d, const DeviceCaps& caps,
                                                             const PlanPreference& pref) {
    switch (i) {  // kInt4Candidates' order
      case 0: {
        auto o = gemm::OnePassCandidate::prepare(d, caps);
        if (!o) return o.error();
        return PreparedCandidate{std::move(o.value()), 0};
      }
      case 1: {
        auto k = gemm::StreamKCandidate::prepare(d, caps);
        if (!k) return k.error();
        const auto& c = *static_cast<const gemm::StreamKShape*>(k.value().get());
        return PreparedCandidate{std::move(k.value()), gemm::StreamKCandidate::workspace(d, c)};
      }
      case 2:
      case 3: {
        auto st = i == 2 ? gemm::StreamCandidate::prepare(d, caps) : gemm::GemvCandidate::prepare(d, caps);
        if (!st) return st.error();
        const auto& cfg = static_cast<const gemm::GemvState*>(st.value().get())->cfg;
        return PreparedCandidate{std::move(st.value()), gemm::GemvCandidate::workspace(d, cfg)};
      }
      case 4: {
        auto b = gemm::BulkCandidate::prepare(d, caps);
        if (!b) return b.error();
        const auto& c = *static_cast<const gemm::Int4BulkConfig*>(b.value().get());
        return PreparedCandidate{std::move(b.value()), gemm::BulkCandidate::workspace(d, c)};
      }
      default:
        return gemm::DequantCandidate::prepare_pref(d, caps, pref);
    }
  }
  static Status check_args(const Int4GemmDescriptor& d, const Int4GemmArgs& a) { return gemm::check_int4_gemm_args(d, a); }
};

template class Plan<Int4GemmDescriptor, Int4GemmArgs>;

}  // namespace baracuda
