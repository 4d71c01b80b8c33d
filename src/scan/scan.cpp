// ScanPlan / ScanBackwardPlan: validation, the ordered candidates and their launch shapes.
// Candidates, best first (kernels: kernels/scan.cuh; seam: scan_params.hpp):
//   warp_row_vec16, warp_row       one warp per row (rows of at most 2048 elements)
//   cub                            cumsum of one contiguous f32 / f64 row by CUB's
//                                  DeviceScan (H100 session 12, f32 1 x 2^28: 0.873 ms against
//                                  the look-back's 1.351); not deterministic: skipped when
//                                  PlanPreference::deterministic asks for it
//   lookback_vec16, lookback       single-pass decoupled look-back over tiles of every row
//                                  (workspace: a ticket, flags and two states per tile); for
//                                  long rows too few to fill the device one block per row
//   block_row_vec16, block_row     one block per row walking it in tiles (any length)
//   column_split                   any axis stride, too few rows for a thread each: the axis
//                                  cut into segments (three passes, the input read twice)
//   column                         any axis stride: one thread per row walking the axis
// The tile kernels need the axis to be unit-stride in every operand; the vec16 ones also a
// length that is a multiple of the input's 16-byte vector and 16-byte aligned rows, and an
// op with one input (the forward kinds and cumsum's backward).
#include <algorithm>
#include <array>
#include <string>

#include "baracuda/ops/scan.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/table_candidates.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "scan/scan_params.hpp"

namespace baracuda {

const char* scan_kind_name(ScanKind k) noexcept {
  switch (k) {
    case ScanKind::kCumsum: return "cumsum";
    case ScanKind::kCumprod: return "cumprod";
    case ScanKind::kCummax: return "cummax";
    case ScanKind::kCummin: return "cummin";
    case ScanKind::kLogcumsumexp: return "logcumsumexp";
  }
  return "?";
}

namespace {
std::size_t scan_config_hash(int axis, ScanKind kind, bool reverse) {
  return static_cast<std::size_t>(axis + 64) * 16 + static_cast<std::size_t>(kind) * 2 + (reverse ? 1 : 0);
}
std::string scan_config_text(int axis, bool reverse) {
  return ", axis=" + std::to_string(axis) + (reverse ? ", reverse" : "") + ")";
}
}  // namespace

std::size_t ScanDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(x.hash(), y.hash()), indices.hash());
  return detail::hash_combine(h, scan_config_hash(axis, kind, reverse));
}
std::string ScanDescriptor::to_string() const {
  const bool idx = kind == ScanKind::kCummax || kind == ScanKind::kCummin;
  return std::string(scan_kind_name(kind)) + "(x=" + x.to_string() + ", y=" + y.to_string() +
         (idx ? ", indices=" + indices.to_string() : std::string()) + scan_config_text(axis, reverse);
}
std::size_t ScanBackwardDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(grad_y.hash(), x.hash()), y.hash());
  h = detail::hash_combine(detail::hash_combine(h, indices.hash()), grad_x.hash());
  return detail::hash_combine(h, scan_config_hash(axis, kind, reverse));
}
std::string ScanBackwardDescriptor::to_string() const {
  std::string s = std::string(scan_kind_name(kind)) + "_backward(grad_y=" + grad_y.to_string();
  if (kind == ScanKind::kCumprod || kind == ScanKind::kLogcumsumexp) s += ", x=" + x.to_string() + ", y=" + y.to_string();
  if (kind == ScanKind::kCummax || kind == ScanKind::kCummin) s += ", indices=" + indices.to_string();
  return s + ", grad_x=" + grad_x.to_string() + scan_config_text(axis, reverse);
}

namespace scan {
namespace {

bool is_maxmin(ScanKind k) { return k == ScanKind::kCummax || k == ScanKind::kCummin; }
bool is_integer(DType t) { return t == DType::kI32 || t == DType::kI64; }
bool is_float(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The operand slots of either direction (scan_params.hpp); null = unused by the kind.
struct Operands {
  std::array<const TensorLayout*, kScanOperands> op{};
  std::array<const char*, kScanOperands> field{};
  int axis;
  ScanKind kind;
  bool reverse;
  bool bwd;
  const TensorLayout& ref() const { return *op[2]; }
};

Operands operands_of(const ScanDescriptor& d) {
  Operands o{};
  o.op[0] = &d.y;
  o.op[2] = &d.x;
  if (is_maxmin(d.kind)) o.op[1] = &d.indices;
  o.field = {"y", "indices", "x", "", "", ""};
  o.axis = d.axis;
  o.kind = d.kind;
  o.reverse = d.reverse;
  o.bwd = false;
  return o;
}
Operands operands_of(const ScanBackwardDescriptor& d) {
  Operands o{};
  o.op[0] = &d.grad_x;
  o.op[2] = &d.grad_y;
  if (d.kind == ScanKind::kCumprod || d.kind == ScanKind::kLogcumsumexp) {
    o.op[3] = &d.x;
    o.op[4] = &d.y;
  }
  if (is_maxmin(d.kind)) o.op[5] = &d.indices;
  o.field = {"grad_x", "", "grad_y", "x", "y", "indices"};
  o.axis = d.axis;
  o.kind = d.kind;
  o.reverse = d.reverse;
  o.bwd = true;
  return o;
}

ScanOp op_of(const Operands& o) {
  switch (o.kind) {
    case ScanKind::kCumsum: return ScanOp::kSum;
    case ScanKind::kCumprod: return o.bwd ? ScanOp::kProdBwd : ScanOp::kProd;
    case ScanKind::kCummax: return o.bwd ? ScanOp::kMaxMinBwd : ScanOp::kMax;
    case ScanKind::kCummin: return o.bwd ? ScanOp::kMaxMinBwd : ScanOp::kMin;
    default: return o.bwd ? ScanOp::kLseBwd : ScanOp::kLse;
  }
}
bool single_input(ScanOp op) { return op != ScanOp::kProdBwd && op != ScanOp::kMaxMinBwd && op != ScanOp::kLseBwd; }

int norm_axis(const Operands& o) { return o.axis < 0 ? o.axis + o.ref().rank : o.axis; }

// Rows, length, collapsed kept dims and axis strides (no launch shape yet).
ScanParams base_params(const Operands& o) {
  ScanParams p;
  p.op = op_of(o);
  p.reverse = o.bwd ? !o.reverse : o.reverse;
  const int ax = norm_axis(o);
  const TensorLayout& ref = o.ref();
  p.len = ref.rank == 0 ? 1 : ref.shape[ax];
  TensorLayout kept[kScanOperands];
  const TensorLayout* ptrs[kScanOperands];
  int slot_of[kScanOperands];
  int n = 0;
  for (int k = 0; k < kScanOperands; ++k) {
    if (!o.op[k]) continue;
    const TensorLayout& l = *o.op[k];
    kept[n] = l;
    kept[n].rank = 0;
    for (int i = 0; i < l.rank; ++i) {
      if (i == ax) continue;
      kept[n].shape[kept[n].rank] = l.shape[i];
      kept[n].strides[kept[n].rank] = l.strides[i];
      ++kept[n].rank;
    }
    p.axis_stride[k] = (ref.rank == 0 || p.len == 1) ? 1 : l.strides[ax];
    ptrs[n] = &kept[n];
    slot_of[n] = k;
    ++n;
  }
  p.rows = kept[0].numel();
  const CollapsedDims c = collapse_dims(std::span<const TensorLayout* const>(ptrs, static_cast<std::size_t>(n)));
  p.kept_rank = p.rows <= 1 ? 0 : c.rank;
  for (int d = 0; d < p.kept_rank; ++d) {
    p.kept_shape[d] = c.shape[d];
    for (int k = 0; k < n; ++k) p.kept_stride[slot_of[k]][d] = c.strides[k][d];
  }
  return p;
}

int vec_of(const Operands& o) { return 16 / static_cast<int>(dtype_size(o.ref().dtype)); }

// Why the tile kernels (unit axis stride) cannot run; with `vec`, also the 16-byte vectors.
std::string row_rejection(const Operands& o, const ScanParams& p, bool vec) {
  for (int k = 0; k < kScanOperands; ++k)
    if (o.op[k] && p.axis_stride[k] != 1)
      return std::string(o.field[k]) + " stride along axis " + std::to_string(norm_axis(o)) + " = " +
             std::to_string(p.axis_stride[k]) + " (tile kernels need 1)";
  if (!vec) return "";
  if (!single_input(p.op))
    return std::string(scan_kind_name(o.kind)) + " backward reads several operands (scalar loads only)";
  const std::int64_t v = vec_of(o);
  if (p.len % v != 0)
    return "row length " + std::to_string(p.len) + " is not a multiple of the " + std::to_string(v) + "-element vector";
  for (int k = 0; k < kScanOperands; ++k) {
    if (!o.op[k]) continue;
    if (o.op[k]->alignment < 16)
      return std::string(o.field[k]) + ".alignment = " + std::to_string(o.op[k]->alignment) + " < 16 bytes";
    for (int d = 0; d < p.kept_rank; ++d)
      if (p.kept_stride[k][d] % v != 0)
        return std::string(o.field[k]) + " row stride " + std::to_string(p.kept_stride[k][d]) + " is not a multiple of " +
               std::to_string(v);
  }
  return "";
}

constexpr std::int64_t kMaxGrid = 0x7fffffff;
constexpr std::int64_t kWarpRowMax = 2048;
// The look-back takes rows longer than this when there are fewer than kLookbackRowsPerSm x
// SMs of them (one block per row would leave the device latency-bound).
constexpr std::int64_t kLookbackMinLen = 16384;
constexpr std::int64_t kLookbackRowsPerSm = 8;
// column_split aims at this many (segment, row) threads per SM, with segments of at least
// kMinSegment elements.
constexpr std::int64_t kSplitThreadsPerSm = 1024;
constexpr std::int64_t kMinSegment = 64;

struct Setup {
  std::string rejection;
  ScanParams params;
  std::size_t workspace = 0;
};

std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

Setup setup_for(ScanImpl impl, bool vec, const Operands& o, const DeviceCaps& caps) {
  Setup r;
  ScanParams& p = r.params;
  p = base_params(o);
  p.impl = impl;
  if (impl == ScanImpl::kColumnSplit) {
    const std::int64_t want = kSplitThreadsPerSm * caps.sm_count;
    if (p.rows * 2 > want || p.len < 4 * kMinSegment) {
      r.rejection = "rows x len = " + std::to_string(p.rows) + " x " + std::to_string(p.len) +
                    ": enough rows for a thread each, or a short axis (column)";
      return r;
    }
    const std::int64_t segs = std::min((want + p.rows - 1) / p.rows, p.len / kMinSegment);
    p.seg_len = (p.len + segs - 1) / segs;
    p.tiles = (p.len + p.seg_len - 1) / p.seg_len;
    if ((p.rows * p.tiles + 255) / 256 > kMaxGrid) r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
    r.workspace = round_up(static_cast<std::size_t>(p.rows * p.tiles) * kScanStateSlot, kWorkspaceAlignment);
    return r;
  }
  if (impl == ScanImpl::kColumn) {
    if ((p.rows + 255) / 256 > kMaxGrid) r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
    return r;
  }
  if (impl == ScanImpl::kCub) {
    const DType t = o.ref().dtype;
    if (p.op != ScanOp::kSum) r.rejection = std::string("cub scans cumsum only, not ") + scan_kind_name(o.kind);
    else if (t != DType::kF32 && t != DType::kF64) r.rejection = "cub scans f32 / f64, not " + std::string(dtype_name(t));
    else if (p.rows != 1) r.rejection = "rows = " + std::to_string(p.rows) + ": cub scans one row";
    else if (p.axis_stride[0] != 1 || p.axis_stride[2] != 1) r.rejection = "cub needs unit-stride operands along the axis";
    if (!r.rejection.empty()) return r;
    r.workspace = round_up(cub_cumsum_workspace(t, p.len, p.reverse), kWorkspaceAlignment);
    return r;
  }
  r.rejection = row_rejection(o, p, vec);
  if (!r.rejection.empty()) return r;
  p.vec = vec ? vec_of(o) : 1;
  p.k = scan_k(scan_state_bytes(p.op, o.ref().dtype), p.vec);
  switch (impl) {
    case ScanImpl::kWarpRow:
      if (p.len > kWarpRowMax)
        r.rejection = "row length " + std::to_string(p.len) + " > " + std::to_string(kWarpRowMax) + " (warp rows are for short rows)";
      else if ((p.rows + 7) / 8 > kMaxGrid)
        r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
      return r;
    case ScanImpl::kBlockRow:
      if (p.rows > kMaxGrid)
        r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
      return r;
    case ScanImpl::kLookback: {
      const std::int64_t max_rows = kLookbackRowsPerSm * caps.sm_count;
      if (p.len <= kLookbackMinLen || p.rows >= max_rows) {
        r.rejection = "rows x len = " + std::to_string(p.rows) + " x " + std::to_string(p.len) + ": the look-back is for rows > " +
                      std::to_string(kLookbackMinLen) + " elements, fewer than " + std::to_string(max_rows) +
                      " of them (block_row fills the device)";
        return r;
      }
      const std::int64_t tile = static_cast<std::int64_t>(kScanBlockThreads) * p.k * p.vec;
      p.tiles = std::max<std::int64_t>(1, (p.len + tile - 1) / tile);
      if (p.rows > kMaxGrid / p.tiles) {
        r.rejection = "rows x tiles = " + std::to_string(p.rows) + " x " + std::to_string(p.tiles) + " exceed the grid";
        return r;
      }
      const auto n = static_cast<std::size_t>(p.rows * p.tiles);
      p.flag_bytes = 256 + round_up(n * 4, kWorkspaceAlignment);
      r.workspace = round_up(p.flag_bytes + 2 * n * kScanStateSlot, kWorkspaceAlignment);
      return r;
    }
    default: r.rejection = "internal: unknown impl"; return r;
  }
}

struct ImplInfo {
  ScanImpl impl;
  bool vec;
  const char* name;
};
constexpr ImplInfo kImpls[] = {
    {ScanImpl::kWarpRow, true, "warp_row_vec16"},   {ScanImpl::kWarpRow, false, "warp_row"},
    {ScanImpl::kCub, false, "cub"},
    {ScanImpl::kLookback, true, "lookback_vec16"},  {ScanImpl::kLookback, false, "lookback"},
    {ScanImpl::kBlockRow, true, "block_row_vec16"}, {ScanImpl::kBlockRow, false, "block_row"},
    {ScanImpl::kColumnSplit, false, "column_split"}, {ScanImpl::kColumn, false, "column"},
};
constexpr int kNumImpls = sizeof(kImpls) / sizeof(kImpls[0]);

KernelSku sku_of(const Operands& o, const ImplInfo& info) {
  KernelSku s;
  s.family = scan_kind_name(o.kind);
  s.direction = o.bwd ? Direction::kBackward : Direction::kForward;
  s.impl = info.name;
  s.in = o.ref().dtype;
  s.out = o.op[0]->dtype;
  const DType t = o.ref().dtype;
  const ScanOp op = op_of(o);
  // the logcumsumexp backward's column kernels sum in f64 (kernels/scan.cuh, LseBwdOp)
  const bool f64 = t == DType::kF64 || (op == ScanOp::kLseBwd && is_column_impl(info.impl));
  const bool maxmin = op == ScanOp::kMax || op == ScanOp::kMin;
  s.compute = s.precision.accumulator =
      is_integer(t) ? (maxmin ? t : DType::kI64) : f64 ? DType::kF64 : DType::kF32;  // integer extrema: compared as they are
  // the look-backs (ours, CUB's) add a floating carry in the order predecessors finish
  const bool exact = is_integer(t) || maxmin;
  s.precision.deterministic = (info.impl != ScanImpl::kLookback && info.impl != ScanImpl::kCub) || exact;
  return s;
}

#define BARACUDA_SCAN_ALL_DTYPES(fn)                                        \
  switch (t) {                                                              \
    case DType::kF64: return fn<DType::kF64>(p, s);                         \
    case DType::kF32: return fn<DType::kF32>(p, s);                         \
    case DType::kF16: return fn<DType::kF16>(p, s);                         \
    case DType::kBF16: return fn<DType::kBF16>(p, s);                       \
    case DType::kI32: return fn<DType::kI32>(p, s);                         \
    case DType::kI64: return fn<DType::kI64>(p, s);                         \
    default: break;                                                         \
  }                                                                         \
  break;
#define BARACUDA_SCAN_FLOAT_DTYPES(fn)                                      \
  switch (t) {                                                              \
    case DType::kF64: return fn<DType::kF64>(p, s);                         \
    case DType::kF32: return fn<DType::kF32>(p, s);                         \
    case DType::kF16: return fn<DType::kF16>(p, s);                         \
    case DType::kBF16: return fn<DType::kBF16>(p, s);                       \
    default: break;                                                         \
  }                                                                         \
  break;

Status launch_dtype(DType t, const ScanParams& p, cudaStream_t s) {
  switch (p.op) {
    case ScanOp::kSum: BARACUDA_SCAN_ALL_DTYPES(launch_scan_sum)
    case ScanOp::kProd: BARACUDA_SCAN_ALL_DTYPES(launch_scan_prod)
    case ScanOp::kMax:
    case ScanOp::kMin: BARACUDA_SCAN_ALL_DTYPES(launch_scan_maxmin)
    case ScanOp::kLse: BARACUDA_SCAN_FLOAT_DTYPES(launch_scan_lse)
    default: BARACUDA_SCAN_FLOAT_DTYPES(launch_scan_bwd)
  }
  return Status(Code::kNotBuilt, "scan: no kernels for dtype " + std::string(dtype_name(t)));
}
#undef BARACUDA_SCAN_ALL_DTYPES
#undef BARACUDA_SCAN_FLOAT_DTYPES

void set_pointers(ScanParams& p, const ScanArgs& a) {
  p.out = a.y;
  p.out_idx = a.indices;
  p.in[0] = a.x;
}
void set_pointers(ScanParams& p, const ScanBackwardArgs& a) {
  p.out = a.grad_x;
  p.in[0] = a.grad_y;
  p.in[1] = a.x;
  p.in[2] = a.y;
  p.in[3] = a.indices;
}

// The candidate table (core/table_candidates.hpp): candidate i is kImpls[i].
struct ScanTable {
  using Params = ScanParams;
  static constexpr int kCount = kNumImpls;
  template <class Desc>
  static Setup setup(int i, const Desc& d, const DeviceCaps& caps) {
    return setup_for(kImpls[i].impl, kImpls[i].vec, operands_of(d), caps);
  }
  template <class Desc>
  static KernelSku sku(int i, const Desc& d) {
    return sku_of(operands_of(d), kImpls[i]);
  }
  template <class Desc, class Args>
  static Status launch(ScanParams p, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    set_pointers(p, a);
    p.workspace = ws.data;
    if (p.impl == ScanImpl::kCub) return launch_cub_cumsum(operands_of(d).ref().dtype, p, ws.bytes, s);
    return launch_dtype(operands_of(d).ref().dtype, p, s);
  }
};
template <class Desc, class Args>
inline constexpr auto kCandidates = kTableCandidates<ScanTable, Desc, Args>;

Status validate_operands(const Operands& o) {
  using namespace elementwise;
  if (static_cast<int>(o.kind) > static_cast<int>(ScanKind::kLogcumsumexp))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(o.kind)) + " is not a ScanKind");
  const char* name = scan_kind_name(o.kind);
  for (int k = 0; k < kScanOperands; ++k)
    if (o.op[k]) BARACUDA_TRY(validate_layout(*o.op[k], o.field[k]));
  const TensorLayout& ref = o.ref();
  const char* ref_field = o.field[2];
  const DType t = ref.dtype;
  const bool takes_int = !o.bwd && o.kind != ScanKind::kLogcumsumexp;
  const bool promotes = o.kind == ScanKind::kCumsum || o.kind == ScanKind::kCumprod;
  if (!is_float(t) && !(takes_int && is_integer(t)))
    return Status(Code::kInvalidArgument, std::string(ref_field) + ".dtype = " + std::string(dtype_name(t)) + ": " + name +
                                              (o.bwd ? " backward" : "") + " takes f64, f32, f16, bf16" +
                                              (takes_int ? ", i32, i64" : ""));
  // the output: x's dtype; i64 for the sums and products of integer x (torch's promotion)
  const DType want_out = is_integer(t) && promotes ? DType::kI64 : t;
  if (o.op[0]->dtype != want_out)
    return Status(Code::kInvalidArgument, std::string(o.field[0]) + ".dtype = " + std::string(dtype_name(o.op[0]->dtype)) +
                                              " must be " + std::string(dtype_name(want_out)) +
                                              (is_integer(t) && promotes ? " (integer sums and products write i64, as torch promotes)" : ""));
  for (int k = 0; k < kScanOperands; ++k) {
    if (!o.op[k] || k == 2) continue;
    const bool index = k == 1 || k == 5;
    if (index && o.op[k]->dtype != DType::kI64)
      return Status(Code::kInvalidArgument,
                    std::string(o.field[k]) + ".dtype = " + std::string(dtype_name(o.op[k]->dtype)) + " must be i64");
    if (!index && k != 0) BARACUDA_TRY(check_same_dtype(*o.op[k], o.field[k], ref, ref_field));
    BARACUDA_TRY(check_same_shape(*o.op[k], o.field[k], ref, ref_field));
  }
  const int rank = ref.rank;
  const int lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (o.axis < lo || o.axis > hi)
    return Status(Code::kInvalidArgument, "axis = " + std::to_string(o.axis) + " is out of range for " + ref_field +
                                              " of rank " + std::to_string(rank) + " (needs " + std::to_string(lo) +
                                              ".." + std::to_string(hi) + ")");
  BARACUDA_TRY(check_output_layout(*o.op[0], o.field[0]));
  if (o.op[1]) BARACUDA_TRY(check_output_layout(*o.op[1], o.field[1]));
  return Status::ok();
}

// Null / alignment / aliasing: an output may alias x (forward) or grad_y (backward) with the
// identical layout; the backward's other inputs are read at neighbouring positions after
// grad_x is written, so grad_x must not overlap them at all.
Status check_pointers(const Operands& o, void* const* outs, const void* const* ins) {
  elementwise::MapOperands m;
  elementwise::MapPointers ptr;
  for (int k = 0; k < 2; ++k)
    if (o.op[k]) {
      m.out[m.num_out] = {*o.op[k], o.field[k], o.op[k]->alignment};
      ptr.out[m.num_out++] = outs[k];
    }
  for (int k = 2; k < kScanOperands; ++k)
    if (o.op[k]) {
      m.in[m.num_in] = {*o.op[k], o.field[k], o.op[k]->alignment};
      ptr.in[m.num_in++] = ins[k - 2];
    }
  BARACUDA_TRY(elementwise::check_map_pointers(m, ptr));
  if (o.op[0]->numel() == 0) return Status::ok();
  for (int k = 3; k < kScanOperands; ++k)
    if (o.op[k] && byte_ranges_overlap(outs[0], *o.op[0], ins[k - 2], *o.op[k]))
      return Status(Code::kInvalidArgument, std::string("args.") + o.field[0] + " overlaps args." + o.field[k] + " (" +
                                                o.field[0] + " may alias only grad_y)");
  return Status::ok();
}

}  // namespace
}  // namespace scan

template <>
struct FamilyTraits<ScanDescriptor> {
  static constexpr const char* kFamily = "scan";
  static Status validate(const ScanDescriptor& d) { return scan::validate_operands(scan::operands_of(d)); }
  static std::span<const Candidate<ScanDescriptor, ScanArgs>> candidates() {
    return scan::kCandidates<ScanDescriptor, ScanArgs>;
  }
  static Status check_args(const ScanDescriptor& d, const ScanArgs& a) {
    void* outs[2] = {a.y, a.indices};
    const void* ins[4] = {a.x, nullptr, nullptr, nullptr};
    return scan::check_pointers(scan::operands_of(d), outs, ins);
  }
};

template <>
struct FamilyTraits<ScanBackwardDescriptor> {
  static constexpr const char* kFamily = "scan_backward";
  static Status validate(const ScanBackwardDescriptor& d) { return scan::validate_operands(scan::operands_of(d)); }
  static std::span<const Candidate<ScanBackwardDescriptor, ScanBackwardArgs>> candidates() {
    return scan::kCandidates<ScanBackwardDescriptor, ScanBackwardArgs>;
  }
  static Status check_args(const ScanBackwardDescriptor& d, const ScanBackwardArgs& a) {
    void* outs[2] = {a.grad_x, nullptr};
    const void* ins[4] = {a.grad_y, a.x, a.y, a.indices};
    return scan::check_pointers(scan::operands_of(d), outs, ins);
  }
};

template class Plan<ScanDescriptor, ScanArgs>;
template class Plan<ScanBackwardDescriptor, ScanBackwardArgs>;

}  // namespace baracuda
