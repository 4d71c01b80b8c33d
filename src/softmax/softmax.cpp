// SoftmaxPlan / SoftmaxBackwardPlan: validation, the ordered candidates and their launch
// shapes. Candidates, best first (kernels: kernels/softmax.cuh; seam: softmax_params.hpp):
//   warp_row_vec16, warp_row       one warp per row (16-byte vectors / scalar loads)
//   block_row_vec16, block_row     one block per row, the row in registers
//   tma_row_vec16                  sm_90: persistent blocks, rows streamed into shared
//                                  memory by bulk copies, long rows split over a cluster with
//                                  one push exchange a row (H100 session 12, bf16
//                                  4096x131072: forward 0.960 ms against cluster_row's 1.471,
//                                  backward 1.129 against 2.226; at 16384x8192 block_row,
//                                  earlier in the order, is as fast)
//   cluster_row_vec16              a cluster of 2..8 blocks per row (sm_90), in registers
//   split_row_vec16, split_row     any length: statistics of slices in the workspace, then
//                                  a second pass (the input read twice)
//   column                         any axis stride: one thread per row walking the axis
// GumbelSoftmaxBackwardPlan takes this backward table too (times 1 / tau; SKUs named
// gumbel_softmax.bwd.*): its old loop kernels made two passes of 2-byte loads and reached
// 0.93x PyTorch at 4096x131072 bf16 (H200, session 12).
// The row kernels need the axis to be unit-stride in every operand; the vec16 ones also a
// length that is a multiple of the vector and 16-byte aligned rows.
#include <algorithm>
#include <string>

#include "baracuda/ops/gumbel_softmax.hpp"
#include "baracuda/ops/softmax.hpp"
#include "core/hash.hpp"
#include "common/row_plan.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "common/tma_rows.hpp"
#include "softmax/softmax_backward_table.hpp"
#include "softmax/softmax_params.hpp"

namespace baracuda {

const char* softmax_kind_name(SoftmaxKind k) noexcept {
  return k == SoftmaxKind::kLogSoftmax ? "log_softmax" : "softmax";
}

std::size_t SoftmaxDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(x.hash(), y.hash());
  return detail::hash_combine(h, static_cast<std::size_t>(axis) * 4 + static_cast<std::size_t>(kind));
}
std::string SoftmaxDescriptor::to_string() const {
  return std::string(softmax_kind_name(kind)) + "(x=" + x.to_string() + ", y=" + y.to_string() +
         ", axis=" + std::to_string(axis) + ")";
}
std::size_t SoftmaxBackwardDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(grad_y.hash(), y.hash()), grad_x.hash());
  return detail::hash_combine(h, static_cast<std::size_t>(axis) * 4 + static_cast<std::size_t>(kind));
}
std::string SoftmaxBackwardDescriptor::to_string() const {
  return std::string(softmax_kind_name(kind)) + "_backward(grad_y=" + grad_y.to_string() + ", y=" + y.to_string() +
         ", grad_x=" + grad_x.to_string() + ", axis=" + std::to_string(axis) + ")";
}

namespace softmax {
namespace {

constexpr const char* kForwardFields[3] = {"y", "x", ""};
constexpr const char* kBackwardFields[3] = {"grad_x", "grad_y", "y"};
constexpr const char* kGumbelBackwardFields[3] = {"grad_x", "grad_y", "y_soft"};

// The operands of either direction: out (y / grad_x), in0 (x / grad_y), in1 (y, backward),
// the names they go by in messages, and the SKU's family.
struct Operands {
  const TensorLayout* out;
  const TensorLayout* in0;
  const TensorLayout* in1;  // null in the forward
  int axis;
  SoftmaxKind kind;
  bool bwd;
  const char* const* fields;
  const char* family;  // null: softmax_kind_name(kind)
  int num() const { return in1 ? 3 : 2; }
  const TensorLayout& op(int k) const { return k == 0 ? *out : k == 1 ? *in0 : *in1; }
  const char* field(int k) const { return fields[k]; }
};
Operands operands_of(const SoftmaxDescriptor& d) {
  return {&d.y, &d.x, nullptr, d.axis, d.kind, false, kForwardFields, nullptr};
}
Operands operands_of(const SoftmaxBackwardDescriptor& d) {
  return {&d.grad_x, &d.grad_y, &d.y, d.axis, d.kind, true, kBackwardFields, nullptr};
}
// gumbel_softmax's backward is softmax's times 1 / tau (y_soft is the softmax of the
// perturbed logits): the same kernels with SoftmaxParams::scale.
Operands operands_of(const GumbelSoftmaxBackwardDescriptor& d) {
  return {&d.grad_x, &d.grad_y, &d.y_soft, d.axis, SoftmaxKind::kSoftmax, true, kGumbelBackwardFields, "gumbel_softmax"};
}

int norm_axis(const Operands& o) { return o.axis < 0 ? o.axis + o.in0->rank : o.axis; }

// Rows, length, collapsed kept dims and axis strides (no launch shape yet).
SoftmaxParams base_params(const Operands& o) {
  SoftmaxParams p;
  p.log = o.kind == SoftmaxKind::kLogSoftmax;
  const TensorLayout* ptrs[3];
  for (int k = 0; k < o.num(); ++k) ptrs[k] = &o.op(k);
  const rows::AxisGeometry g =
      rows::axis_geometry(std::span<const TensorLayout* const>(ptrs, static_cast<std::size_t>(o.num())), norm_axis(o));
  p.len = g.len;
  p.rows = g.rows;
  p.kept_rank = g.kept_rank;
  for (int k = 0; k < o.num(); ++k) p.axis_stride[k] = g.axis_stride[k];
  for (int d = 0; d < p.kept_rank; ++d) {
    p.kept_shape[d] = g.kept_shape[d];
    for (int k = 0; k < o.num(); ++k) p.kept_stride[k][d] = g.kept_stride[k][d];
  }
  return p;
}

int elem_bytes(const Operands& o) { return static_cast<int>(dtype_size(o.in0->dtype)); }
DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// Why the row kernels (unit axis stride) cannot run; with `vec`, also the 16-byte vectors.
std::string row_rejection(const Operands& o, const SoftmaxParams& p, bool vec) {
  for (int k = 0; k < o.num(); ++k)
    if (p.axis_stride[k] != 1)
      return std::string(o.field(k)) + " stride along axis " + std::to_string(norm_axis(o)) + " = " +
             std::to_string(p.axis_stride[k]) + " (row kernels need 1)";
  if (!vec) return "";
  const std::int64_t v = 16 / elem_bytes(o);
  if (p.len % v != 0)
    return "row length " + std::to_string(p.len) + " is not a multiple of the " + std::to_string(v) + "-element vector";
  for (int k = 0; k < o.num(); ++k) {
    if (o.op(k).alignment < 16)
      return std::string(o.field(k)) + ".alignment = " + std::to_string(o.op(k).alignment) + " < 16 bytes";
    for (int d = 0; d < p.kept_rank; ++d)
      if (p.kept_stride[k][d] % v != 0)
        return std::string(o.field(k)) + " row stride " + std::to_string(p.kept_stride[k][d]) +
               " is not a multiple of " + std::to_string(v);
  }
  return "";
}

// The largest block the (vec, k) bucket runs with (row_max_threads: its launch bounds).
int max_threads(const Operands& o, int v, int k) {
  return row_max_threads(elem_bytes(o), v, elem_bytes(o) * v * k * (o.bwd ? 2 : 1));
}

using Setup = rows::RowSetup<SoftmaxParams>;
using rows::kMaxGrid;

// tma_row (kernels/softmax_tma.cuh): sm_90, 16-bit and f32 rows of 4 KiB or more with
// unit-stride 16-byte vectors; the launch shape of common/tma_rows.hpp (blocks of up to 256
// threads preferred: two an SM).
void tma_setup(Setup& r, const Operands& o, const DeviceCaps& caps) {
  SoftmaxParams& p = r.params;
  const int esize = elem_bytes(o);
  r.rejection = rows::tma_row_refusal(caps.sm, caps.arch_name(), esize, p.rows, p.len * esize);
  if (r.rejection.empty()) r.rejection = row_rejection(o, p, true);
  if (!r.rejection.empty()) return;
  p.vec = 16 / esize;
  rows::TmaRowShape shape;
  r.rejection = rows::tma_row_shape(shape, p.len, p.len / p.vec, esize, o.bwd ? 2 : 1, 0, p.rows, std::max(1, caps.sm_count),
                                    static_cast<std::int64_t>(caps.smem_per_block_optin), rows::kTmaPreferThreads,
                                    "row length");
  p.k = rows::kTmaVecsPerThread;
  p.threads = shape.threads;
  p.cluster = shape.cluster;
  p.slices = shape.cluster;
  p.stages = shape.stages;
  p.grid = shape.grid;
}

Setup setup_for(SoftmaxImpl impl, bool vec, const Operands& o, const DeviceCaps& caps) {
  Setup r;
  SoftmaxParams& p = r.params;
  p = base_params(o);
  p.impl = impl;
  if (impl == SoftmaxImpl::kColumn) {
    p.threads = 256;
    if ((p.rows + 255) / 256 > kMaxGrid) r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
    return r;
  }
  if (impl == SoftmaxImpl::kTmaRow) {
    tma_setup(r, o, caps);
    return r;
  }
  if (impl == SoftmaxImpl::kClusterRow && caps.sm < 90) {
    r.rejection = "thread-block clusters need sm90+, device is " + caps.arch_name();
    return r;
  }
  r.rejection = row_rejection(o, p, vec);
  if (!r.rejection.empty()) return r;
  const int v = vec ? 16 / elem_bytes(o) : 1;
  p.vec = v;
  const int ks[] = {1, 2, 4, 8, 16};
  auto built = [&](int k) { return row_bucket_built(impl, vec, k, o.bwd); };
  if (impl != SoftmaxImpl::kSplitRow) {
    const rows::RowLayout layout = impl == SoftmaxImpl::kWarpRow    ? rows::RowLayout::kWarp
                                   : impl == SoftmaxImpl::kBlockRow ? rows::RowLayout::kBlock
                                                                    : rows::RowLayout::kCluster;
    rows::RowShape shape = rows::row_shape(layout, p.len, v, built, [&](int k) { return max_threads(o, v, k); }, "row length",
                                           o.bwd ? 2 : 4);  // 2..4 16-byte loads in flight a thread
    if (!shape.rejection.empty()) {
      r.rejection = std::move(shape.rejection);
      return r;
    }
    p.k = shape.k;
    p.threads = shape.threads;
    p.cluster = shape.cluster;
    if (impl == SoftmaxImpl::kClusterRow) p.slices = shape.cluster;
    const std::int64_t blocks = impl == SoftmaxImpl::kWarpRow ? (p.rows + 7) / 8 : p.rows * p.slices;
    if (blocks > kMaxGrid) r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
    return r;
  }
  switch (impl) {
    case SoftmaxImpl::kSplitRow: {
      for (int k : ks)
        if (built(k)) p.k = k;
      p.threads = std::min(512, max_threads(o, v, p.k));
      const std::int64_t slice = static_cast<std::int64_t>(p.threads) * p.k * v;
      p.slices = std::max<std::int64_t>(1, (p.len + slice - 1) / slice);
      if (p.rows * p.slices > kMaxGrid) {
        r.rejection = "rows x slices = " + std::to_string(p.rows) + " x " + std::to_string(p.slices) + " exceed the grid";
        return r;
      }
      // one statistic per (row, slice): (max, sum) forward, a sum backward; 16 bytes each
      r.workspace = rows::align_workspace(static_cast<std::size_t>(p.rows * p.slices) * 16);
      return r;
    }
    default: r.rejection = "internal: unknown impl"; return r;
  }
}

struct ImplInfo {
  SoftmaxImpl impl;
  bool vec;
  const char* name;
};
constexpr ImplInfo kImpls[] = {
    {SoftmaxImpl::kWarpRow, true, "warp_row_vec16"},       {SoftmaxImpl::kWarpRow, false, "warp_row"},
    {SoftmaxImpl::kBlockRow, true, "block_row_vec16"},     {SoftmaxImpl::kBlockRow, false, "block_row"},
    {SoftmaxImpl::kTmaRow, true, "tma_row_vec16"},
    {SoftmaxImpl::kClusterRow, true, "cluster_row_vec16"}, {SoftmaxImpl::kSplitRow, true, "split_row_vec16"},
    {SoftmaxImpl::kSplitRow, false, "split_row"},          {SoftmaxImpl::kColumn, false, "column"},
};

KernelSku sku_of(const Operands& o, const ImplInfo& info) {
  KernelSku s;
  s.family = o.family ? o.family : softmax_kind_name(o.kind);
  s.direction = o.bwd ? Direction::kBackward : Direction::kForward;
  s.impl = info.name;
  s.in = s.out = o.in0->dtype;
  s.compute = s.precision.accumulator = compute_of(o.in0->dtype);
  if (info.impl == SoftmaxImpl::kClusterRow || info.impl == SoftmaxImpl::kTmaRow) s.min_sm = 90;
  return s;
}

void set_pointers(SoftmaxParams& p, const SoftmaxArgs& a) {
  p.out = a.y;
  p.in0 = a.x;
}
void set_pointers(SoftmaxParams& p, const SoftmaxBackwardArgs& a) {
  p.out = a.grad_x;
  p.in0 = a.grad_y;
  p.in1 = a.y;
}
void set_pointers(SoftmaxParams& p, const GumbelSoftmaxBackwardArgs& a) {
  p.out = a.grad_x;
  p.in0 = a.grad_y;
  p.in1 = a.y_soft;
}
double scale_of(const SoftmaxDescriptor&) { return 1.0; }
double scale_of(const SoftmaxBackwardDescriptor&) { return 1.0; }
double scale_of(const GumbelSoftmaxBackwardDescriptor& d) { return 1.0 / d.tau; }

// The candidate table's family hooks (common/row_plan.hpp).
struct SoftmaxFamily {
  using Params = SoftmaxParams;
  static constexpr const auto& kImpls = softmax::kImpls;
  static constexpr auto view = [](const auto& d) { return operands_of(d); };
  static constexpr auto setup = &setup_for;
  static constexpr auto sku = &sku_of;
  template <class Desc, class Args>
  static Status launch(SoftmaxParams p, const Operands& o, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    set_pointers(p, a);
    p.scale = scale_of(d);
    p.partial = ws.data;
    return launch_by_dtype(o.in0->dtype, o.bwd, p, s);
  }
};
template <class Desc, class Args>
inline constexpr auto kCandidates = rows::kRowCandidates<SoftmaxFamily, Desc, Args>;

Status validate_operands(const Operands& o) {
  using namespace elementwise;
  const char* family = o.bwd ? "softmax_backward" : "softmax";
  if (o.kind != SoftmaxKind::kSoftmax && o.kind != SoftmaxKind::kLogSoftmax)
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(o.kind)) + " is not a SoftmaxKind");
  for (int k = 0; k < o.num(); ++k) BARACUDA_TRY(validate_layout(o.op(k), o.field(k)));
  BARACUDA_TRY(check_math_dtype(*o.in0, o.field(1), family));
  for (int k : {0, 2}) {
    if (k >= o.num()) continue;
    BARACUDA_TRY(check_same_dtype(o.op(k), o.field(k), *o.in0, o.field(1)));
    BARACUDA_TRY(check_same_shape(o.op(k), o.field(k), *o.in0, o.field(1)));
  }
  const int rank = o.in0->rank;
  const int lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (o.axis < lo || o.axis > hi)
    return Status(Code::kInvalidArgument, "axis = " + std::to_string(o.axis) + " is out of range for " +
                                              o.field(1) + " of rank " + std::to_string(rank) + " (needs " +
                                              std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return check_output_layout(*o.out, o.field(0));
}

elementwise::MapOperands pointer_operands(const Operands& o) {
  elementwise::MapOperands m;
  m.num_out = 1;
  m.out[0] = {*o.out, o.field(0), o.out->alignment};
  m.num_in = o.num() - 1;
  for (int k = 1; k < o.num(); ++k) m.in[k - 1] = {o.op(k), o.field(k), o.op(k).alignment};
  return m;
}

}  // namespace

std::span<const Candidate<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>> gumbel_backward_candidates() {
  return kCandidates<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>;
}

}  // namespace softmax

template <>
struct FamilyTraits<SoftmaxDescriptor> {
  static constexpr const char* kFamily = "softmax";
  static Status validate(const SoftmaxDescriptor& d) { return softmax::validate_operands(softmax::operands_of(d)); }
  static std::span<const Candidate<SoftmaxDescriptor, SoftmaxArgs>> candidates() {
    return softmax::kCandidates<SoftmaxDescriptor, SoftmaxArgs>;
  }
  static Status check_args(const SoftmaxDescriptor& d, const SoftmaxArgs& a) {
    elementwise::MapPointers p;
    p.out[0] = a.y;
    p.in[0] = a.x;
    return elementwise::check_map_pointers(softmax::pointer_operands(softmax::operands_of(d)), p);
  }
};

template <>
struct FamilyTraits<SoftmaxBackwardDescriptor> {
  static constexpr const char* kFamily = "softmax_backward";
  static Status validate(const SoftmaxBackwardDescriptor& d) {
    return softmax::validate_operands(softmax::operands_of(d));
  }
  static std::span<const Candidate<SoftmaxBackwardDescriptor, SoftmaxBackwardArgs>> candidates() {
    return softmax::kCandidates<SoftmaxBackwardDescriptor, SoftmaxBackwardArgs>;
  }
  static Status check_args(const SoftmaxBackwardDescriptor& d, const SoftmaxBackwardArgs& a) {
    elementwise::MapPointers p;
    p.out[0] = a.grad_x;
    p.in[0] = a.grad_y;
    p.in[1] = a.y;
    return elementwise::check_map_pointers(softmax::pointer_operands(softmax::operands_of(d)), p);
  }
};

template class Plan<SoftmaxDescriptor, SoftmaxArgs>;
template class Plan<SoftmaxBackwardDescriptor, SoftmaxBackwardArgs>;

}  // namespace baracuda
