// LayerNormPlan / RMSNormPlan (+ fused residual add) and their backward: validation, the
// ordered candidates and launch shapes. Candidates, best first (kernels/norm.cuh, norm_tma.cuh):
//   tma_lean_vec16                 sm_90: persistent blocks, rows streamed into shared
//                                  memory by bulk copies, compile-time kinds, parameters in
//                                  registers and one push exchange per row over a cluster;
//                                  forward (kernels/norm_tma_lean.cuh) and backward
//                                  (norm_bwd_tma_lean.cuh). H100 session 12, bf16: forward
//                                  4096x131072 layer_norm 0.797 ms against tma_row's 1.614,
//                                  rms_norm 0.829 / 1.119; backward 16384x8192 layer_norm
//                                  0.351 ms (1.91x torch), 4096x131072 1.287 (2.19x)
//   tma_row_vec16                  the forward's first bulk-copy kernel (f32 rows past lean's
//                                  slices). It was the default for LayerNorm rows of one block
//                                  without the residual until session 14, when the two
//                                  measured equal (H100, 16384x8192 bf16: 0.2132 ms against
//                                  lean's 0.2123) and lean issues far fewer instructions
//   warp_row_vec16, warp_row       one warp per row (16-byte vectors / scalar loads)
//   block_row_vec16, block_row     one block per row, the row in registers
//   cluster_row_vec16              a cluster of 2..8 blocks per row (sm_90; bf16 rows up to
//                                  131072 forward, 65536 backward)
//   split_row_vec16, split_row     any length: blocks of slices, per-slice statistics in the
//                                  workspace, a second pass re-reads the slice and finishes
// The backward's workers are persistent (a fixed row assignment), and its parameter
// gradients go through the workspace (deterministic).
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "baracuda/ops/normalization.hpp"
#include "core/hash.hpp"
#include "common/row_plan.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/norm_params.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

namespace {
const char* kind_name(NormKind k) { return k == NormKind::kRMSNorm ? "rms_norm" : "layer_norm"; }
std::size_t flags_hash(std::initializer_list<bool> f) {
  std::size_t h = 0;
  for (bool b : f) h = h * 2 + static_cast<std::size_t>(b);
  return h;
}
}  // namespace

std::size_t NormDescriptor::hash() const noexcept {
  std::size_t h = flags_hash({kind == NormKind::kRMSNorm, has_weight, has_bias, save_stats, add_residual});
  for (const auto* t : {&x, &y, &weight, &bias, &residual, &residual_out}) h = detail::hash_combine(h, t->hash());
  h = detail::hash_combine(h, static_cast<std::size_t>(normalized_rank));
  return detail::hash_combine(h, std::hash<double>{}(eps));
}
std::string NormDescriptor::to_string() const {
  std::string s = std::string(kind_name(kind)) + "(x=" + x.to_string() + ", y=" + y.to_string() +
                  ", normalized_rank=" + std::to_string(normalized_rank);
  if (has_weight) s += ", weight=" + weight.to_string();
  if (has_bias) s += ", bias=" + bias.to_string();
  if (add_residual) s += ", residual=" + residual.to_string() + ", residual_out=" + residual_out.to_string();
  s += ", eps=" + elementwise::number_text(eps);
  return s + (save_stats ? ", save_stats)" : ")");
}
std::size_t NormBackwardDescriptor::hash() const noexcept {
  std::size_t h = flags_hash({kind == NormKind::kRMSNorm, has_weight, has_bias});
  for (const auto* t : {&grad_y, &x, &grad_x, &weight, &grad_weight, &grad_bias}) h = detail::hash_combine(h, t->hash());
  return detail::hash_combine(h, static_cast<std::size_t>(normalized_rank));
}
std::string NormBackwardDescriptor::to_string() const {
  std::string s = std::string(kind_name(kind)) + "_backward(grad_y=" + grad_y.to_string() + ", x=" + x.to_string() +
                  ", grad_x=" + grad_x.to_string() + ", normalized_rank=" + std::to_string(normalized_rank);
  if (has_weight) s += ", weight=" + weight.to_string() + ", grad_weight=" + grad_weight.to_string();
  if (has_bias) s += ", grad_bias=" + grad_bias.to_string();
  return s + ")";
}

namespace norm {
namespace {

// Row operands of either direction (index = the params' operand number) and the [n] ones.
struct RowOp {
  const TensorLayout* layout;
  const char* field;
};
struct NormShape {
  bool bwd;
  NormKind kind;
  int normalized_rank;
  std::vector<RowOp> rows;  // 0 = output (y / grad_x), 1 = x / grad_y, then the others
  std::vector<RowOp> vecs;  // weight / bias / grad_weight / grad_bias in use
  DType dtype() const { return rows[1].layout->dtype; }
};
NormShape shape_of(const NormDescriptor& d) {
  NormShape s{false, d.kind, d.normalized_rank, {{&d.y, "y"}, {&d.x, "x"}}, {}};
  if (d.add_residual) {
    s.rows.push_back({&d.residual, "residual"});
    s.rows.push_back({&d.residual_out, "residual_out"});
  }
  if (d.has_weight) s.vecs.push_back({&d.weight, "weight"});
  if (d.has_bias) s.vecs.push_back({&d.bias, "bias"});
  return s;
}
NormShape shape_of(const NormBackwardDescriptor& d) {
  NormShape s{true, d.kind, d.normalized_rank, {{&d.grad_x, "grad_x"}, {&d.grad_y, "grad_y"}, {&d.x, "x"}}, {}};
  if (d.has_weight) {
    s.vecs.push_back({&d.weight, "weight"});
    s.vecs.push_back({&d.grad_weight, "grad_weight"});
  }
  if (d.has_bias) s.vecs.push_back({&d.grad_bias, "grad_bias"});
  return s;
}

DType stats_dtype(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// The normalized shape (the last normalized_rank dims of x).
TensorLayout normalized_layout(const TensorLayout& x, int nr) {
  std::vector<std::int64_t> s;
  for (int i = x.rank - nr; i < x.rank; ++i) s.push_back(x.shape[i]);
  return TensorLayout::contiguous(x.dtype, s);
}

Status validate_shape(const NormShape& s, NormKind want, bool has_bias) {
  using namespace elementwise;
  if (s.kind != want)
    return Status(Code::kInvalidArgument, std::string("kind = ") + kind_name(s.kind) + " does not match the plan (" +
                                              kind_name(want) + ")");
  if (want == NormKind::kRMSNorm && has_bias)
    return Status(Code::kInvalidArgument, "has_bias = true: RMSNorm has no bias");
  const TensorLayout& x = *s.rows[1].layout;
  const char* xf = s.rows[1].field;
  for (const auto& r : s.rows) BARACUDA_TRY(validate_layout(*r.layout, r.field));
  for (const auto& r : s.vecs) BARACUDA_TRY(validate_layout(*r.layout, r.field));
  BARACUDA_TRY(check_math_dtype(x, xf, s.bwd ? (want == NormKind::kRMSNorm ? "rms_norm_backward" : "layer_norm_backward")
                                             : kind_name(want)));
  if (s.normalized_rank < 1 || s.normalized_rank > x.rank)
    return Status(Code::kInvalidArgument, "normalized_rank = " + std::to_string(s.normalized_rank) + " is out of range for " +
                                              xf + " of rank " + std::to_string(x.rank) + " (needs 1.." +
                                              std::to_string(x.rank) + ")");
  for (const auto& r : s.rows) {
    if (r.layout == &x) continue;
    BARACUDA_TRY(check_same_dtype(*r.layout, r.field, x, xf));
    BARACUDA_TRY(check_same_shape(*r.layout, r.field, x, xf));
  }
  const TensorLayout nl = normalized_layout(x, s.normalized_rank);
  for (const auto& r : s.vecs) {
    BARACUDA_TRY(check_same_dtype(*r.layout, r.field, x, xf));
    if (r.layout->rank != nl.rank || !std::equal(nl.shape.begin(), nl.shape.begin() + nl.rank, r.layout->shape.begin()))
      return Status(Code::kInvalidArgument, std::string(r.field) + " = " + r.layout->to_string() +
                                                " does not have the normalized shape " + nl.to_string() + " of " + xf);
  }
  BARACUDA_TRY(check_output_layout(*s.rows[0].layout, s.rows[0].field));
  if (!s.bwd && s.rows.size() > 3) BARACUDA_TRY(check_output_layout(*s.rows[3].layout, s.rows[3].field));
  for (const auto& r : s.vecs)
    if (std::string(r.field).rfind("grad_", 0) == 0) BARACUDA_TRY(check_output_layout(*r.layout, r.field));
  return Status::ok();
}

// Why the rows of `l` are not one unit-stride run over the normalized dims ("" = they are).
std::string run_rejection(const TensorLayout& l, const char* field, int nr) {
  std::int64_t expect = 1;
  for (int i = l.rank - 1; i >= l.rank - nr; --i) {
    if (l.shape[i] == 1) continue;
    if (l.strides[i] != expect)
      return std::string(field) + " = " + l.to_string() + ": the normalized dims are not one unit-stride run";
    expect *= l.shape[i];
  }
  return "";
}

NormParams base_params(const NormShape& s) {
  NormParams p;
  p.layer = s.kind == NormKind::kLayerNorm;
  const TensorLayout& x = *s.rows[1].layout;
  const int nr = s.normalized_rank;
  p.n = 1;
  for (int i = x.rank - nr; i < x.rank; ++i) p.n *= x.shape[i];
  p.inv_n = p.n > 0 ? 1.0 / static_cast<double>(p.n) : 0.0;
  TensorLayout kept[4];
  const TensorLayout* ptrs[4];
  const int num = static_cast<int>(s.rows.size());
  for (int k = 0; k < num; ++k) {
    kept[k] = *s.rows[k].layout;
    kept[k].rank = s.rows[k].layout->rank - nr;
    ptrs[k] = &kept[k];
  }
  p.rows = kept[0].numel();
  const CollapsedDims c = collapse_dims(std::span<const TensorLayout* const>(ptrs, static_cast<std::size_t>(num)));
  p.kept_rank = p.rows <= 1 ? 0 : c.rank;
  for (int d = 0; d < p.kept_rank; ++d) {
    p.kept_shape[d] = c.shape[d];
    for (int k = 0; k < num; ++k) p.kept_stride[k][d] = c.strides[k][d];
  }
  return p;
}

using Setup = rows::RowSetup<NormParams>;

// The backward's parameter partials: two planes (grad_weight, grad_bias) of units x n
// accumulators, none without parameter gradients.
std::size_t param_partial_bytes(const NormParams& p, const NormShape& s) {
  if (s.vecs.empty()) return 0;
  return rows::align_workspace(2 * static_cast<std::size_t>(p.units * p.n) * dtype_size(stats_dtype(s.dtype())));
}
using rows::kMaxGrid;
using rows::round_up32;

// tma_row (kernels/norm_tma.cuh): forward, sm_90, 16-bit and f32 rows of 4 KiB or more. A row
// (or, past kTmaMaxThreads * kTmaVecsPerThread vectors, its slice on each block of a cluster of
// 2..16) sits in one block; persistent blocks, as many per SM as keep at least two rows (x and
// the residual) in flight in each block's shared memory after weight and bias.
void tma_setup(Setup& r, const NormShape& s, const DeviceCaps& caps, bool lean) {
  NormParams& p = r.params;
  const std::int64_t esize = static_cast<std::int64_t>(dtype_size(s.dtype()));
  const std::int64_t row_bytes = p.n * esize, nvec = p.n / p.vec;
  if (s.bwd && !lean) r.rejection = "tma_row is forward only (its backward measured 0.47-0.67x PyTorch on the H200)";
  else r.rejection = rows::tma_row_refusal(caps.sm, caps.arch_name(), static_cast<int>(esize), p.rows, row_bytes);
  if (!r.rejection.empty()) return;
  // stage sources: x (and the residual) forward, grad_y and x backward
  const bool residual = s.rows.size() > 2;
  const bool two_sources = s.bwd || residual;
  // One register bucket, k = 4 (128 registers): a k = 2 bucket at 64 registers (512
  // threads, 2 blocks an SM) measured slower on the H200 (session 8: rms_norm 16384x8192
  // bf16 0.1705 ms against 0.1560, layer_norm 0.2223 against 0.1948; 131072 rows equal).
  // tma_row keeps weight and bias in two shared-memory slices; tma_lean in registers, and it
  // prefers blocks of kTmaPreferThreads (two an SM).
  // The lean LayerNorm backward of 16-bit rows that fit one block runs its own bucket
  // (kTmaBwdVecsPerThread under kTmaBwdRegCap: twice the warps an SM for its column sums of
  // dgamma / dbeta). H100 session 24, min ms k = 4 -> 2: layer_norm_bwd bf16 16384x8192 0.3408
  // -> 0.3300, f16 0.3384 -> 0.3311; slower elsewhere: f32 16384x8192 0.5603 -> 0.5726 (a
  // cluster of 2), rms_norm_bwd bf16 16384x8192 0.3045 -> 0.3129, 4096x131072 rows (clusters
  // of 16 x 512 threads) layer 1.111 -> 1.455, rms 1.089 -> 1.320.
  const bool bwd_bucket = s.bwd && lean && p.layer && esize == 2;
  rows::TmaRowShape shape;
  int k = kTmaVecsPerThread;
  for (int try_k : {rows::kTmaBwdVecsPerThread, kTmaVecsPerThread}) {
    if (!bwd_bucket && try_k != kTmaVecsPerThread) continue;
    k = try_k;
    r.rejection = rows::tma_row_shape(shape, p.n, nvec, static_cast<int>(esize), two_sources ? 2 : 1,
                                      !lean && !s.vecs.empty() ? 2 : 0, p.rows, std::max(1, caps.sm_count),
                                      static_cast<std::int64_t>(caps.smem_per_block_optin),
                                      lean && k == kTmaVecsPerThread ? rows::kTmaPreferThreads : kTmaMaxThreads, "normalized size",
                                      k, rows::tma_reg_cap(k));
    if (r.rejection.empty() && (k == kTmaVecsPerThread || shape.cluster == 1)) break;
  }
  p.k = k;
  p.threads = shape.threads;
  p.stages = shape.stages;
  p.cluster = shape.cluster;
  p.grid = shape.grid;
  if (s.bwd && r.rejection.empty()) {
    // tma_lean backward (kernels/norm_bwd_tma_lean.cuh): each cluster is a unit whose column
    // sums go to partial[unit][n], two planes
    p.units = p.grid / p.cluster;
    r.workspace = param_partial_bytes(p, s);
  }
}

Setup setup_for(NormImpl impl, bool vec, const NormShape& s, const DeviceCaps& caps) {
  Setup r;
  NormParams& p = r.params;
  p = base_params(s);
  p.impl = impl;
  if (impl == NormImpl::kClusterRow && caps.sm < 90) {
    r.rejection = "thread-block clusters need sm90+, device is " + caps.arch_name();
    return r;
  }
  for (const auto& op : s.rows) {
    r.rejection = run_rejection(*op.layout, op.field, s.normalized_rank);
    if (!r.rejection.empty()) return r;
  }
  for (const auto& op : s.vecs)
    if (!op.layout->is_contiguous()) {
      r.rejection = std::string(op.field) + " = " + op.layout->to_string() + " is not unit-stride";
      return r;
    }
  const int esize = static_cast<int>(dtype_size(s.dtype()));
  const int v = vec ? 16 / esize : 1;
  if (vec) {
    if (p.n % v != 0) {
      r.rejection = "normalized size " + std::to_string(p.n) + " is not a multiple of the " + std::to_string(v) +
                    "-element vector";
      return r;
    }
    auto check = [&](const TensorLayout& l, const char* f, int op) {
      if (l.alignment < 16) return std::string(f) + ".alignment = " + std::to_string(l.alignment) + " < 16 bytes";
      for (int d = 0; op >= 0 && d < p.kept_rank; ++d)
        if (p.kept_stride[op][d] % v != 0)
          return std::string(f) + " row stride " + std::to_string(p.kept_stride[op][d]) + " is not a multiple of " +
                 std::to_string(v);
      return std::string();
    };
    for (std::size_t k = 0; k < s.rows.size() && r.rejection.empty(); ++k)
      r.rejection = check(*s.rows[k].layout, s.rows[k].field, static_cast<int>(k));
    for (const auto& op : s.vecs)
      if (r.rejection.empty()) r.rejection = check(*op.layout, op.field, -1);
    if (!r.rejection.empty()) return r;
  }
  p.vec = v;
  if (impl == NormImpl::kTmaRow || impl == NormImpl::kTmaLean) {
    tma_setup(r, s, caps, impl == NormImpl::kTmaLean);
    return r;
  }
  const int ks[] = {1, 2, 4, 8, 16};
  auto built = [&](int k) { return norm_bucket_built(impl, vec, k, s.bwd); };
  auto max_thr = [&](int k) { return norm_max_threads(esize, v, esize * v * k * 2, s.bwd); };
  if (impl == NormImpl::kSplitRow) {
    for (int k : ks)
      if (built(k)) p.k = k;
    const std::int64_t kv = static_cast<std::int64_t>(p.k) * v;
    const std::int64_t slice = std::min(512, max_thr(p.k)) * kv;
    const std::int64_t n = std::max<std::int64_t>(1, (p.n + slice - 1) / slice);
    if (n > kMaxGrid) {
      r.rejection = "normalized size " + std::to_string(p.n) + " needs too many slices";
      return r;
    }
    p.cluster = static_cast<int>(n);
    p.threads = round_up32(((p.n + n - 1) / n + kv - 1) / kv);
  } else {
    const rows::RowLayout layout = impl == NormImpl::kWarpRow    ? rows::RowLayout::kWarp
                                   : impl == NormImpl::kBlockRow ? rows::RowLayout::kBlock
                                                                 : rows::RowLayout::kCluster;
    // forward: 2 vectors of x a thread in flight (k = 4 needs > 64 registers: 2 blocks of 256
    // an SM, no more bytes in flight than k = 2's 2 blocks of 512); backward: the old rule
    rows::RowShape shape = rows::row_shape(layout, p.n, v, built, max_thr, "normalized size", s.bwd ? 0 : 2);
    if (!shape.rejection.empty()) {
      r.rejection = std::move(shape.rejection);
      return r;
    }
    p.k = shape.k;
    p.threads = shape.threads;
    p.cluster = shape.cluster;
  }
  if (s.bwd) {
    // persistent workers: about two blocks' worth per SM
    const std::int64_t sms = std::max(1, caps.sm_count);
    std::int64_t units = impl == NormImpl::kWarpRow ? sms * 16 : impl == NormImpl::kBlockRow ? sms * 2 : std::max<std::int64_t>(1, sms * 2 / p.cluster);
    p.units = std::max<std::int64_t>(1, std::min(units, p.rows));
    r.workspace = param_partial_bytes(p, s);
  }
  if (impl == NormImpl::kSplitRow) {
    // one statistic per (row, slice) after the parameter partials: Sum2 (backward) or
    // Welford (forward) of the compute type
    const std::size_t bytes = static_cast<std::size_t>(p.rows * p.cluster) * (s.bwd ? 2 : 3) *
                              dtype_size(stats_dtype(s.dtype()));
    p.row_stats_offset = r.workspace;
    r.workspace += rows::align_workspace(bytes);
  }
  const std::int64_t items = s.bwd ? p.units : p.rows;
  const std::int64_t blocks = impl == NormImpl::kWarpRow ? (items + 7) / 8 : items * p.cluster;
  if (blocks > kMaxGrid) r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
  return r;
}

struct ImplInfo {
  NormImpl impl;
  bool vec;
  const char* name;
};
constexpr ImplInfo kImpls[] = {
    {NormImpl::kTmaLean, true, "tma_lean_vec16"},
    {NormImpl::kTmaRow, true, "tma_row_vec16"},
    {NormImpl::kWarpRow, true, "warp_row_vec16"},   {NormImpl::kWarpRow, false, "warp_row"},
    {NormImpl::kBlockRow, true, "block_row_vec16"}, {NormImpl::kBlockRow, false, "block_row"},
    {NormImpl::kClusterRow, true, "cluster_row_vec16"},
    {NormImpl::kSplitRow, true, "split_row_vec16"},     {NormImpl::kSplitRow, false, "split_row"},
};

KernelSku sku_of(const NormShape& s, const ImplInfo& info) {
  KernelSku k;
  k.family = kind_name(s.kind);
  k.direction = s.bwd ? Direction::kBackward : Direction::kForward;
  k.impl = info.name;
  k.in = k.out = s.dtype();
  k.compute = k.precision.accumulator = stats_dtype(s.dtype());
  if (info.impl == NormImpl::kClusterRow || info.impl == NormImpl::kTmaRow || info.impl == NormImpl::kTmaLean)
    k.min_sm = 90;
  return k;
}

void set_pointers(NormParams& p, const NormDescriptor& d, const NormArgs& a) {
  p.fwd = a;
  p.has_weight = d.has_weight;
  p.has_bias = d.has_bias;
  p.save_stats = d.save_stats;
  p.add_residual = d.add_residual;
  p.eps = d.eps;
}
void set_pointers(NormParams& p, const NormBackwardDescriptor& d, const NormBackwardArgs& a) {
  p.bwd = a;
  p.has_weight = d.has_weight;
  p.has_bias = d.has_bias;
}

// The candidate table's family hooks (common/row_plan.hpp).
struct NormFamily {
  using Params = NormParams;
  static constexpr const auto& kImpls = norm::kImpls;
  static constexpr auto view = [](const auto& d) { return shape_of(d); };
  static constexpr auto setup = &setup_for;
  static constexpr auto sku = &sku_of;
  template <class Desc, class Args>
  static Status launch(NormParams p, const NormShape& sh, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    set_pointers(p, d, a);
    p.partial = ws.data;
    if (p.impl == NormImpl::kSplitRow) p.row_stats = static_cast<char*>(ws.data) + p.row_stats_offset;
    return launch_by_dtype(sh.dtype(), sh.bwd, p, s);
  }
};
template <class Desc, class Args>
inline constexpr auto kCandidates = rows::kRowCandidates<NormFamily, Desc, Args>;

TensorLayout stats_layout(const NormShape& s) {
  const TensorLayout& x = *s.rows[1].layout;
  std::int64_t rows = 1;
  for (int i = 0; i < x.rank - s.normalized_rank; ++i) rows *= x.shape[i];
  return TensorLayout::contiguous(stats_dtype(x.dtype), {rows}, static_cast<int>(dtype_size(stats_dtype(x.dtype))));
}

Status check_fwd_args(const NormDescriptor& d, const NormArgs& a) {
  const NormShape s = shape_of(d);
  std::vector<PtrOperand> ops = {{a.y, d.y, "y", true}, {a.x, d.x, "x", false}};
  if (d.add_residual) {
    ops.push_back({a.residual_out, d.residual_out, "residual_out", true});
    ops.push_back({a.residual, d.residual, "residual", false});
  }
  if (d.has_weight) ops.push_back({a.weight, d.weight, "weight", false});
  if (d.has_bias) ops.push_back({a.bias, d.bias, "bias", false});
  if (d.save_stats) {
    if (d.kind == NormKind::kLayerNorm) ops.push_back({a.mean, stats_layout(s), "mean", true});
    ops.push_back({a.rstd, stats_layout(s), "rstd", true});
  }
  return check_operand_pointers(ops);
}
Status check_bwd_args(const NormBackwardDescriptor& d, const NormBackwardArgs& a) {
  const NormShape s = shape_of(d);
  std::vector<PtrOperand> ops = {{a.grad_x, d.grad_x, "grad_x", true}, {a.grad_y, d.grad_y, "grad_y", false},
                                 {a.x, d.x, "x", false}};
  if (d.kind == NormKind::kLayerNorm) ops.push_back({a.mean, stats_layout(s), "mean", false});
  ops.push_back({a.rstd, stats_layout(s), "rstd", false});
  if (d.has_weight) {
    ops.push_back({a.weight, d.weight, "weight", false});
    ops.push_back({a.grad_weight, d.grad_weight, "grad_weight", true});
  }
  if (d.has_bias) ops.push_back({a.grad_bias, d.grad_bias, "grad_bias", true});
  return check_operand_pointers(ops);
}

Status validate_eps(double eps) {
  if (!(eps >= 0) || !std::isfinite(eps))
    return Status(Code::kInvalidArgument, "eps = " + elementwise::number_text(eps) + " must be finite and >= 0");
  return Status::ok();
}

}  // namespace
}  // namespace norm

#define BARACUDA_NORM_FWD_TRAITS(DESC, KIND, NAME)                                                     \
  template <>                                                                                          \
  struct FamilyTraits<DESC> {                                                                          \
    static constexpr const char* kFamily = NAME;                                                       \
    static Status validate(const DESC& d) {                                                            \
      BARACUDA_TRY(norm::validate_shape(norm::shape_of(d), KIND, d.has_bias));                         \
      return norm::validate_eps(d.eps);                                                                \
    }                                                                                                  \
    static std::span<const Candidate<DESC, NormArgs>> candidates() { return norm::kCandidates<DESC, NormArgs>; } \
    static Status check_args(const DESC& d, const NormArgs& a) { return norm::check_fwd_args(d, a); }  \
  };
#define BARACUDA_NORM_BWD_TRAITS(DESC, KIND, NAME)                                                     \
  template <>                                                                                          \
  struct FamilyTraits<DESC> {                                                                          \
    static constexpr const char* kFamily = NAME;                                                       \
    static Status validate(const DESC& d) { return norm::validate_shape(norm::shape_of(d), KIND, d.has_bias); } \
    static std::span<const Candidate<DESC, NormBackwardArgs>> candidates() {                           \
      return norm::kCandidates<DESC, NormBackwardArgs>;                                                \
    }                                                                                                  \
    static Status check_args(const DESC& d, const NormBackwardArgs& a) { return norm::check_bwd_args(d, a); } \
  };
BARACUDA_NORM_FWD_TRAITS(LayerNormDescriptor, NormKind::kLayerNorm, "layer_norm")
BARACUDA_NORM_FWD_TRAITS(RMSNormDescriptor, NormKind::kRMSNorm, "rms_norm")
BARACUDA_NORM_BWD_TRAITS(LayerNormBackwardDescriptor, NormKind::kLayerNorm, "layer_norm_backward")
BARACUDA_NORM_BWD_TRAITS(RMSNormBackwardDescriptor, NormKind::kRMSNorm, "rms_norm_backward")
#undef BARACUDA_NORM_FWD_TRAITS
#undef BARACUDA_NORM_BWD_TRAITS

template class Plan<LayerNormDescriptor, NormArgs>;
template class Plan<RMSNormDescriptor, NormArgs>;
template class Plan<LayerNormBackwardDescriptor, NormBackwardArgs>;
template class Plan<RMSNormBackwardDescriptor, NormBackwardArgs>;

}  // namespace baracuda
