// The reduction family's host code: descriptors, validation, the collapse of x into
// (kept dims, reduced dims), the ordered candidates and their launch shapes.
//
// Every forward plan (ReducePlan, ArgReducePlan, BoolReducePlan, CountReducePlan,
// TracePlan) becomes a Problem (x, y, the reduced-dim mask, the kernel op) and shares one
// candidate table, best first (kernels: kernels/reduce.cuh; seam: reduce_params.hpp):
//   warp_row_vec16, warp_row     reduced elements unit-stride, short rows: a warp per row
//   split_row_vec16, split_row   few long rows: slices of a row per block, partials in the
//                                workspace, then a deterministic finishing pass
//   block_row_vec16, block_row   a block per row
//   column_stream_vec16          sum over the leading dims of [rows, cols], y unit-stride: the
//                                elementwise family's column reduction (the bias gradient's,
//                                90% of copy on the H200 at bf16 [16384, 8192])
//   column_vec16, column         reduced dim strided with a unit-stride kept dim: threads
//                                along the kept dim, a split of the reduced dim (partials in
//                                the workspace) when the outputs are few
//   generic                      any layout (reduced dims unravelled), split when few outputs
// ReduceBackwardPlan has one candidate, `group` (kernels/reduce_bwd.cuh).
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "baracuda/ops/reduce.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/workspace_align.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch_column_reduce.hpp"
#include "elementwise/map_family.hpp"
#include "reduce/reduce_params.hpp"

namespace baracuda {

const char* reduce_kind_name(ReduceKind k) noexcept {
  switch (k) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kMean: return "mean";
    case ReduceKind::kProd: return "prod";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kAmax: return "amax";
    case ReduceKind::kAmin: return "amin";
    case ReduceKind::kNorm: return "norm";
    case ReduceKind::kLogSumExp: return "logsumexp";
    case ReduceKind::kVar: return "var";
    case ReduceKind::kStd: return "std";
  }
  return "?";
}

std::string ReduceAxes::to_string() const {
  if (count == 0) return "all";
  std::string s = "[";
  for (int i = 0; i < std::min(count, kMaxRank); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[static_cast<std::size_t>(i)]);
  }
  if (count > kMaxRank) s += ",...";
  return s + "]";
}

namespace {
std::size_t hash_axes(const ReduceAxes& a, bool keepdim) {
  std::size_t h = static_cast<std::size_t>(a.count) * 2 + (keepdim ? 1 : 0);
  for (int i = 0; i < std::min(a.count, kMaxRank); ++i)
    h = detail::hash_combine(h, static_cast<std::size_t>(a.dims[static_cast<std::size_t>(i)] + 64));
  return h;
}
std::size_t hash_double(double v) { return std::bit_cast<std::uint64_t>(v); }
std::string axes_text(const ReduceAxes& a, bool keepdim) {
  return ", axes=" + a.to_string() + (keepdim ? ", keepdim" : "");
}
}  // namespace

std::size_t ReduceDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(x.hash(), y.hash()), hash_axes(axes, keepdim));
  h = detail::hash_combine(h, static_cast<std::size_t>(kind));
  return detail::hash_combine(detail::hash_combine(h, hash_double(p)), hash_double(correction));
}
std::string ReduceDescriptor::to_string() const {
  std::string s = std::string(reduce_kind_name(kind)) + "(x=" + x.to_string() + ", y=" + y.to_string() + axes_text(axes, keepdim);
  if (kind == ReduceKind::kNorm) s += ", p=" + elementwise::number_text(p);
  if (kind == ReduceKind::kVar || kind == ReduceKind::kStd) s += ", correction=" + elementwise::number_text(correction);
  return s + ")";
}
std::size_t ReduceBackwardDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(grad_y.hash(), x.hash()), detail::hash_combine(y.hash(), grad_x.hash()));
  h = detail::hash_combine(detail::hash_combine(h, hash_axes(axes, keepdim)), static_cast<std::size_t>(kind));
  return detail::hash_combine(detail::hash_combine(h, hash_double(p)), hash_double(correction));
}
std::string ReduceBackwardDescriptor::to_string() const {
  std::string s = std::string(reduce_kind_name(kind)) + "_backward(grad_y=" + grad_y.to_string() + ", x=" + x.to_string() +
                  ", y=" + y.to_string() + ", grad_x=" + grad_x.to_string() + axes_text(axes, keepdim);
  if (kind == ReduceKind::kNorm) s += ", p=" + elementwise::number_text(p);
  if (kind == ReduceKind::kVar || kind == ReduceKind::kStd) s += ", correction=" + elementwise::number_text(correction);
  return s + ")";
}
namespace {
// hash / text of the plain forward descriptors (x, y, axes, keepdim, a kind).
std::size_t fwd_hash(const TensorLayout& x, const TensorLayout& y, const ReduceAxes& a, bool keepdim, int kind) {
  std::size_t h = detail::hash_combine(detail::hash_combine(x.hash(), y.hash()), hash_axes(a, keepdim));
  return detail::hash_combine(h, static_cast<std::size_t>(kind));
}
std::string fwd_text(const char* name, const TensorLayout& x, const TensorLayout& y, const ReduceAxes& a, bool keepdim) {
  return std::string(name) + "(x=" + x.to_string() + ", y=" + y.to_string() + axes_text(a, keepdim) + ")";
}
}  // namespace
std::size_t ArgReduceDescriptor::hash() const noexcept { return fwd_hash(x, y, axes, keepdim, static_cast<int>(kind)); }
std::string ArgReduceDescriptor::to_string() const {
  return fwd_text(kind == ArgReduceKind::kArgmax ? "argmax" : "argmin", x, y, axes, keepdim);
}
std::size_t BoolReduceDescriptor::hash() const noexcept { return fwd_hash(x, y, axes, keepdim, static_cast<int>(kind)); }
std::string BoolReduceDescriptor::to_string() const {
  return fwd_text(kind == BoolReduceKind::kAny ? "any" : "all", x, y, axes, keepdim);
}
std::size_t CountReduceDescriptor::hash() const noexcept { return fwd_hash(x, y, axes, keepdim, -1); }
std::string CountReduceDescriptor::to_string() const { return fwd_text("count_nonzero", x, y, axes, keepdim); }
std::size_t TraceDescriptor::hash() const noexcept { return detail::hash_combine(x.hash(), y.hash()); }
std::string TraceDescriptor::to_string() const { return "trace(x=" + x.to_string() + ", y=" + y.to_string() + ")"; }

namespace reduce {
namespace {

// The reduced-dim mask of x for `axes`, or the error naming the bad entry.
Expected<std::uint32_t> axes_mask(const ReduceAxes& axes, int rank, const char* x_field) {
  if (axes.count < 0 || axes.count > kMaxRank)
    return Status(Code::kInvalidArgument, "axes.count = " + std::to_string(axes.count) + " is not in 0.." + std::to_string(kMaxRank));
  if (axes.count == 0) return rank == 0 ? 0u : ((1u << rank) - 1u);
  const int r = std::max(rank, 1);  // a rank-0 x takes dim 0 / -1, as torch
  std::uint32_t mask = 0;
  for (int i = 0; i < axes.count; ++i) {
    const int a = axes.dims[static_cast<std::size_t>(i)];
    if (a < -r || a >= r)
      return Status(Code::kInvalidArgument, "axes[" + std::to_string(i) + "] = " + std::to_string(a) + " is out of range for " +
                                                x_field + " of rank " + std::to_string(rank) + " (needs " + std::to_string(-r) +
                                                ".." + std::to_string(r - 1) + ")");
    const int d = a < 0 ? a + r : a;
    if (mask & (1u << d))
      return Status(Code::kInvalidArgument, "axes[" + std::to_string(i) + "] = " + std::to_string(a) + " repeats dim " +
                                                std::to_string(d) + " (each dim may be reduced once)");
    mask |= 1u << d;
  }
  return rank == 0 ? 0u : mask;
}

TensorLayout reduced_of(const TensorLayout& x, std::uint32_t mask, bool keepdim, DType dt) {
  Dims shape{};
  int r = 0;
  for (int i = 0; i < x.rank; ++i) {
    if (mask & (1u << i)) {
      if (keepdim) shape[static_cast<std::size_t>(r++)] = 1;
    } else {
      shape[static_cast<std::size_t>(r++)] = x.shape[static_cast<std::size_t>(i)];
    }
  }
  return TensorLayout::contiguous(dt, std::span<const std::int64_t>(shape.data(), static_cast<std::size_t>(r)));
}

std::string shape_text(const TensorLayout& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) {
    if (i) s += ",";
    s += std::to_string(t.shape[static_cast<std::size_t>(i)]);
  }
  return s + "]";
}

Status check_reduced_shape(const TensorLayout& y, const char* y_field, const TensorLayout& x, const char* x_field,
                           std::uint32_t mask, bool keepdim) {
  const TensorLayout want = reduced_of(x, mask, keepdim, y.dtype);
  bool same = want.rank == y.rank;
  for (int i = 0; same && i < y.rank; ++i) same = want.shape[static_cast<std::size_t>(i)] == y.shape[static_cast<std::size_t>(i)];
  if (same) return Status::ok();
  return Status(Code::kInvalidArgument, std::string(y_field) + ".shape = " + shape_text(y) + " but reducing " + x_field + " = " +
                                            shape_text(x) + (keepdim ? " with keepdim" : " without keepdim") + " gives " +
                                            shape_text(want));
}

bool is_float(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }
bool is_sum_int(DType t) { return t == DType::kI32 || t == DType::kI64; }

Status dtype_error(const char* field, DType t, const std::string& what, const char* allowed) {
  return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t)) + " is not supported by " +
                                            what + " (" + allowed + ")");
}

Status need_dtype(const TensorLayout& t, const char* field, DType want, const std::string& what) {
  if (t.dtype == want) return Status::ok();
  return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t.dtype)) + " but " + what +
                                            " writes " + std::string(dtype_name(want)));
}

// The internal problem every forward plan becomes.
struct Problem {
  RedOp op = RedOp::kSum;
  std::string family;  // SKU family: the kind's name
  TensorLayout x, y;
  std::uint32_t mask = 0;
  bool keepdim = false;
  int norm_code = 2;
  double p = 2.0, correction = 1.0;
};

std::int64_t reduced_count(const TensorLayout& x, std::uint32_t mask) {
  std::int64_t n = 1;
  for (int i = 0; i < x.rank; ++i)
    if (mask & (1u << i)) n *= x.shape[static_cast<std::size_t>(i)];
  return n;
}

Status refuse_empty(const Problem& pr) {
  if (reduced_count(pr.x, pr.mask) != 0) return Status::ok();
  return Status(Code::kInvalidArgument, pr.family + " of x = " + pr.x.to_string() +
                                            " reduces over zero elements (no identity; torch raises)");
}

Status common_layout_checks(const TensorLayout& x, const TensorLayout& y) {
  BARACUDA_TRY(validate_layout(x, "x"));
  return validate_layout(y, "y");
}

std::uint64_t nonzero_mask(DType t) {
  switch (t) {
    case DType::kF64: return 0x7fffffffffffffffull;
    case DType::kF32: return 0x7fffffffull;
    case DType::kF16: case DType::kBF16: return 0x7fffull;
    case DType::kE4M3: case DType::kE5M2: return 0x7full;
    default: return ~0ull;
  }
}

// The kernel op of a ReduceKind (norm: by p; code 0, 1, 2, 3 = general p, 4 = +-inf).
Status kind_op(ReduceKind kind, double p, RedOp& op, int& norm_code) {
  switch (kind) {
    case ReduceKind::kSum: op = RedOp::kSum; break;
    case ReduceKind::kMean: op = RedOp::kMean; break;
    case ReduceKind::kProd: op = RedOp::kProd; break;
    case ReduceKind::kMax: case ReduceKind::kAmax: op = RedOp::kMax; break;
    case ReduceKind::kMin: case ReduceKind::kAmin: op = RedOp::kMin; break;
    case ReduceKind::kLogSumExp: op = RedOp::kLogSumExp; break;
    case ReduceKind::kVar: op = RedOp::kVar; break;
    case ReduceKind::kStd: op = RedOp::kStd; break;
    case ReduceKind::kNorm:
      if (std::isnan(p)) return Status(Code::kInvalidArgument, "p = nan is not a norm order");
      norm_code = std::isinf(p) ? 4 : p == 0 ? 0 : p == 1 ? 1 : p == 2 ? 2 : 3;
      op = norm_code == 4 ? (p > 0 ? RedOp::kNormInf : RedOp::kNormNegInf) : RedOp::kNorm;
      break;
  }
  return Status::ok();
}

Expected<Problem> problem_of(const ReduceDescriptor& d) {
  Problem pr;
  pr.family = reduce_kind_name(d.kind);
  if (static_cast<int>(d.kind) > static_cast<int>(ReduceKind::kStd))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(d.kind)) + " is not a ReduceKind");
  BARACUDA_TRY(common_layout_checks(d.x, d.y));
  auto mask = axes_mask(d.axes, d.x.rank, "x");
  if (!mask) return mask.error();
  pr.x = d.x;
  pr.y = d.y;
  pr.mask = mask.value();
  pr.keepdim = d.keepdim;
  const std::string what = std::string("reduce kind ") + pr.family;
  const bool int_ok = d.kind == ReduceKind::kSum || d.kind == ReduceKind::kProd;
  if (is_float(d.x.dtype)) {
    BARACUDA_TRY(need_dtype(d.y, "y", d.x.dtype, what));
  } else if (int_ok && is_sum_int(d.x.dtype)) {
    BARACUDA_TRY(need_dtype(d.y, "y", DType::kI64, what + " of " + std::string(dtype_name(d.x.dtype))));
  } else {
    return dtype_error("x", d.x.dtype, what, int_ok ? "f64, f32, f16, bf16, i64, i32" : "f64, f32, f16, bf16");
  }
  BARACUDA_TRY(kind_op(d.kind, d.p, pr.op, pr.norm_code));
  pr.p = d.p;
  if ((d.kind == ReduceKind::kVar || d.kind == ReduceKind::kStd) && std::isnan(d.correction))
    return Status(Code::kInvalidArgument, "correction = nan is not a number");
  pr.correction = d.correction;
  BARACUDA_TRY(check_reduced_shape(d.y, "y", d.x, "x", pr.mask, d.keepdim));
  BARACUDA_TRY(elementwise::check_output_layout(d.y, "y"));
  if (pr.op == RedOp::kMax || pr.op == RedOp::kMin || pr.op == RedOp::kNormInf || pr.op == RedOp::kNormNegInf)
    BARACUDA_TRY(refuse_empty(pr));
  return pr;
}

Expected<Problem> problem_of(const ArgReduceDescriptor& d) {
  Problem pr;
  pr.family = d.kind == ArgReduceKind::kArgmax ? "argmax" : "argmin";
  if (d.kind != ArgReduceKind::kArgmax && d.kind != ArgReduceKind::kArgmin)
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(d.kind)) + " is not an ArgReduceKind");
  BARACUDA_TRY(common_layout_checks(d.x, d.y));
  if (d.axes.count > 1)
    return Status(Code::kInvalidArgument, "axes = " + d.axes.to_string() + ": " + pr.family +
                                              " takes one axis or all axes (torch's dim or None)");
  auto mask = axes_mask(d.axes, d.x.rank, "x");
  if (!mask) return mask.error();
  pr.x = d.x;
  pr.y = d.y;
  pr.mask = mask.value();
  pr.keepdim = d.keepdim;
  pr.op = d.kind == ArgReduceKind::kArgmax ? RedOp::kArgmax : RedOp::kArgmin;
  if (!is_float(d.x.dtype) && !is_sum_int(d.x.dtype)) return dtype_error("x", d.x.dtype, pr.family, "f64, f32, f16, bf16, i64, i32");
  BARACUDA_TRY(need_dtype(d.y, "y", DType::kI64, pr.family));
  BARACUDA_TRY(check_reduced_shape(d.y, "y", d.x, "x", pr.mask, d.keepdim));
  BARACUDA_TRY(elementwise::check_output_layout(d.y, "y"));
  BARACUDA_TRY(refuse_empty(pr));
  return pr;
}

bool is_real(DType t) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kE4M3: case DType::kE5M2:
    case DType::kI64: case DType::kI32: case DType::kI16: case DType::kI8: case DType::kU8: case DType::kBool: return true;
    default: return false;
  }
}
constexpr const char* kRealList = "f64, f32, f16, bf16, e4m3, e5m2, i64, i32, i16, i8, u8, bool";

Expected<Problem> count_problem(const TensorLayout& x, const TensorLayout& y, const ReduceAxes& axes, bool keepdim, RedOp op,
                                const char* family, DType y_dtype) {
  Problem pr;
  pr.family = family;
  BARACUDA_TRY(common_layout_checks(x, y));
  auto mask = axes_mask(axes, x.rank, "x");
  if (!mask) return mask.error();
  pr.x = x;
  pr.y = y;
  pr.mask = mask.value();
  pr.keepdim = keepdim;
  pr.op = op;
  if (!is_real(x.dtype)) return dtype_error("x", x.dtype, family, kRealList);
  BARACUDA_TRY(need_dtype(y, "y", y_dtype, family));
  BARACUDA_TRY(check_reduced_shape(y, "y", x, "x", pr.mask, keepdim));
  BARACUDA_TRY(elementwise::check_output_layout(y, "y"));
  return pr;
}

Expected<Problem> problem_of(const BoolReduceDescriptor& d) {
  if (d.kind != BoolReduceKind::kAny && d.kind != BoolReduceKind::kAll)
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(d.kind)) + " is not a BoolReduceKind");
  const bool any = d.kind == BoolReduceKind::kAny;
  return count_problem(d.x, d.y, d.axes, d.keepdim, any ? RedOp::kAny : RedOp::kAll, any ? "any" : "all", DType::kBool);
}
Expected<Problem> problem_of(const CountReduceDescriptor& d) {
  return count_problem(d.x, d.y, d.axes, d.keepdim, RedOp::kCount, "count_nonzero", DType::kI64);
}

Expected<Problem> problem_of(const TraceDescriptor& d) {
  Problem pr;
  pr.family = "trace";
  BARACUDA_TRY(common_layout_checks(d.x, d.y));
  if (d.x.rank != 2) return Status(Code::kInvalidArgument, "x.rank = " + std::to_string(d.x.rank) + " but trace needs a 2-D x");
  if (d.y.rank != 0) return Status(Code::kInvalidArgument, "y.rank = " + std::to_string(d.y.rank) + " but trace writes a rank-0 y");
  if (is_float(d.x.dtype)) BARACUDA_TRY(need_dtype(d.y, "y", d.x.dtype, "trace"));
  else if (is_sum_int(d.x.dtype)) BARACUDA_TRY(need_dtype(d.y, "y", DType::kI64, "trace of " + std::string(dtype_name(d.x.dtype))));
  else return dtype_error("x", d.x.dtype, "trace", "f64, f32, f16, bf16, i64, i32");
  // The diagonal as a 1-D view: min(n, m) elements, stride s0 + s1.
  const std::int64_t len = std::min(d.x.shape[0], d.x.shape[1]);
  const std::int64_t shape[1] = {len};
  const std::int64_t stride[1] = {d.x.strides[0] + d.x.strides[1]};
  pr.x = TensorLayout::strided(d.x.dtype, shape, stride, d.x.alignment);
  pr.y = d.y;
  pr.mask = 1u;
  pr.op = RedOp::kSum;
  return pr;
}

DType acc_dtype(const Problem& pr) {
  if (pr.op == RedOp::kArgmax || pr.op == RedOp::kArgmin || pr.op == RedOp::kAny || pr.op == RedOp::kAll ||
      pr.op == RedOp::kCount || is_sum_int(pr.x.dtype))
    return DType::kI64;
  return pr.x.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
}

// Bytes of one partial accumulator (the Acc types of kernels/reduce_ops.cuh).
std::size_t acc_bytes(const Problem& pr) {
  const std::size_t c = pr.x.dtype == DType::kF64 || is_sum_int(pr.x.dtype) ? 8 : 4;
  switch (pr.op) {
    case RedOp::kLogSumExp: return 2 * c;
    case RedOp::kVar: case RedOp::kStd: return 8 + 2 * c;
    case RedOp::kArgmax: case RedOp::kArgmin: return 16;
    case RedOp::kAny: case RedOp::kAll: case RedOp::kCount: return 8;
    default: return c;
  }
}

// The collapsed problem without a launch shape.
struct Layout {
  ReduceParams p;
  bool row = false;     // reduced elements unit-stride (one collapsed dim, or n <= 1)
  bool column = false;  // one strided reduced dim and a unit-stride kept dim
  int inner_dim = -1;   // that kept dim (collapsed index)
};

Layout analyse(const Problem& pr) {
  Layout L;
  ReduceParams& p = L.p;
  p.op = pr.op;
  p.norm_code = pr.norm_code;
  p.p = pr.p;
  p.correction = pr.correction;
  p.mask = nonzero_mask(pr.x.dtype);
  TensorLayout xk = pr.x, yk = pr.y, xr = pr.x;
  xk.rank = yk.rank = xr.rank = 0;
  int yd = 0;
  for (int i = 0; i < pr.x.rank; ++i) {
    const auto si = static_cast<std::size_t>(i);
    if (pr.mask & (1u << i)) {
      xr.shape[static_cast<std::size_t>(xr.rank)] = pr.x.shape[si];
      xr.strides[static_cast<std::size_t>(xr.rank++)] = pr.x.strides[si];
      if (pr.keepdim) ++yd;
    } else {
      const auto k = static_cast<std::size_t>(xk.rank);
      xk.shape[k] = yk.shape[k] = pr.x.shape[si];
      xk.strides[k] = pr.x.strides[si];
      yk.strides[k] = pr.y.strides[static_cast<std::size_t>(yd++)];
      ++xk.rank;
      ++yk.rank;
    }
  }
  p.groups = xk.numel();
  p.n = xr.numel();
  const TensorLayout* kept[2] = {&xk, &yk};
  const CollapsedDims ck = collapse_dims(std::span<const TensorLayout* const>(kept, 2));
  p.kept_rank = p.groups <= 1 ? 0 : ck.rank;
  for (int d = 0; d < p.kept_rank; ++d) {
    p.kept_shape[d] = ck.shape[static_cast<std::size_t>(d)];
    p.kept_stride[0][d] = ck.strides[0][static_cast<std::size_t>(d)];
    p.kept_stride[1][d] = ck.strides[1][static_cast<std::size_t>(d)];
  }
  const TensorLayout* red[1] = {&xr};
  const CollapsedDims cr = collapse_dims(std::span<const TensorLayout* const>(red, 1));
  p.red_rank = p.n <= 1 ? 0 : cr.rank;
  for (int d = 0; d < p.red_rank; ++d) {
    p.red_shape[d] = cr.shape[static_cast<std::size_t>(d)];
    p.red_stride[d] = cr.strides[0][static_cast<std::size_t>(d)];
  }
  p.slice_len = p.n;
  L.row = p.red_rank == 0 || (p.red_rank == 1 && p.red_stride[0] == 1);
  if (!L.row && p.red_rank == 1)
    for (int d = p.kept_rank - 1; d >= 0; --d)
      if (p.kept_stride[0][d] == 1) {
        L.column = true;
        L.inner_dim = d;
        break;
      }
  return L;
}

// Takes the inner dim out of the kept dims (column mode).
void make_column(Layout& L) {
  ReduceParams& p = L.p;
  const int d0 = L.inner_dim;
  p.inner = p.kept_shape[d0];
  p.inner_stride_y = p.kept_stride[1][d0];
  for (int d = d0; d + 1 < p.kept_rank; ++d) {
    p.kept_shape[d] = p.kept_shape[d + 1];
    p.kept_stride[0][d] = p.kept_stride[0][d + 1];
    p.kept_stride[1][d] = p.kept_stride[1][d + 1];
  }
  --p.kept_rank;
}

std::string reduced_text(const ReduceParams& p) {
  std::string s = "reduced dims collapse to " + std::to_string(p.red_rank) + " dims with x strides [";
  for (int d = 0; d < p.red_rank; ++d) {
    if (d) s += ",";
    s += std::to_string(p.red_stride[d]);
  }
  return s + "]";
}

std::string vec_rejection(const Problem& pr, const ReduceParams& p, std::int64_t len, const char* len_name,
                          std::int64_t red_stride) {
  const std::int64_t v = 16 / static_cast<std::int64_t>(dtype_size(pr.x.dtype));
  if (len % v != 0)
    return std::string(len_name) + " = " + std::to_string(len) + " is not a multiple of the " + std::to_string(v) + "-element vector";
  if (pr.x.alignment < 16) return "x.alignment = " + std::to_string(pr.x.alignment) + " < 16 bytes";
  if (red_stride % v != 0) return "x reduced stride " + std::to_string(red_stride) + " is not a multiple of " + std::to_string(v);
  for (int d = 0; d < p.kept_rank; ++d)
    if (p.kept_stride[0][d] % v != 0)
      return "x kept stride " + std::to_string(p.kept_stride[0][d]) + " is not a multiple of " + std::to_string(v);
  return "";
}

struct Setup {
  std::string rejection;
  ReduceParams params;
  std::size_t workspace = 0;
};

constexpr std::int64_t kMaxGrid = 0x7fffffff;
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
int round_up32(std::int64_t n) { return static_cast<int>(std::clamp<std::int64_t>((n + 31) / 32 * 32, 32, 256)); }

// groups x slices accumulators (the partials of split plans and column_stream's chunks).
std::size_t partial_bytes(const Problem& pr, const ReduceParams& p) {
  return align_workspace(static_cast<std::size_t>(p.groups * p.slices) * acc_bytes(pr));
}
void set_workspace(Setup& r, const Problem& pr) {
  if (r.params.slices > 1) r.workspace = partial_bytes(pr, r.params);
}

Setup setup_for(ReduceImpl impl, bool vec, const Problem& pr, const DeviceCaps& caps) {
  Setup r;
  Layout L = analyse(pr);
  ReduceParams& p = L.p;
  p.impl = impl;
  const std::int64_t target = static_cast<std::int64_t>(std::max(caps.sm_count, 1)) * 8;  // 256-thread blocks
  const int V = vec ? static_cast<int>(16 / dtype_size(pr.x.dtype)) : 1;
  p.vec = V;
  auto done = [&]() {
    p.pdl = p.slices > 1 && caps.sm >= 90;  // finish_kernel's launch overlaps pass 1's last wave
    r.params = p;
    set_workspace(r, pr);
    return r;
  };
  if (impl == ReduceImpl::kGeneric) {
    p.threads = 256;
    if (p.groups < target && p.n > 8192) {
      p.slices = std::min(ceil_div(target, std::max<std::int64_t>(p.groups, 1)), ceil_div(p.n, 4096));
      p.slice_len = ceil_div(p.n, p.slices);
      p.slices = ceil_div(p.n, p.slice_len);
    }
    if (p.groups * p.slices > kMaxGrid) r.rejection = "groups x slices = " + std::to_string(p.groups * p.slices) + " exceed the grid";
    return done();
  }
  if (impl == ReduceImpl::kColumnStream) {
    if (p.op != RedOp::kSum || !is_float(pr.x.dtype)) {
      r.rejection = "column_stream takes floating sums only";
      return r;
    }
    if (!L.column || p.n == 0) {
      r.rejection = L.column ? "nothing to sum" : "not a column reduction (one strided reduced dim and a unit-stride kept dim)";
      return r;
    }
    make_column(L);
    if (p.kept_rank != 0 || p.inner_stride_y != 1) {
      r.rejection = "kept dims other than one unit-stride run, or y not unit-stride";
      return r;
    }
    r.rejection = vec_rejection(pr, p, p.inner, "inner kept dim", p.red_stride[0]);
    if (!r.rejection.empty()) return r;
    elementwise::ColumnReduceParams cr;
    cr.rows = p.n;
    cr.cols = p.inner;
    elementwise::choose_column_chunks(cr, V, caps);
    p.slices = cr.chunks;  // partials: chunks x cols accumulators (set_workspace)
    p.slice_len = cr.chunk_len;
    p.bx = cr.block_cols;
    p.pdl = cr.pdl;
    r.params = p;
    r.workspace = partial_bytes(pr, p);  // pass 1 writes partials even for one chunk
    return r;
  }
  if (impl == ReduceImpl::kColumn) {
    if (!L.column) {
      r.rejection = L.row ? "the reduced elements are unit-stride (row kernels)"
                          : reduced_text(p) + " and no kept dim is unit-stride (column kernels need one strided reduced dim "
                                              "and a unit-stride kept dim)";
      return r;
    }
    make_column(L);
    if (vec) {
      r.rejection = vec_rejection(pr, p, p.inner, "inner kept dim", p.red_stride[0]);
      if (!r.rejection.empty()) return r;
    }
    const std::int64_t vcols = ceil_div(p.inner, V);
    p.bx = static_cast<int>(std::min<std::int64_t>(64, std::bit_ceil(static_cast<std::uint64_t>(vcols))));
    p.by = 256 / p.bx;
    p.threads = 256;
    const std::int64_t base = (p.groups / p.inner) * ceil_div(vcols, p.bx);
    if (base < target && p.n >= 16LL * p.by) {
      p.slices = std::min(ceil_div(target, base), ceil_div(p.n, 8LL * p.by));
      p.slice_len = ceil_div(p.n, p.slices);
      p.slices = ceil_div(p.n, p.slice_len);
    }
    if (base * p.slices > kMaxGrid) r.rejection = "column blocks = " + std::to_string(base * p.slices) + " exceed the grid";
    return done();
  }
  // row kernels
  if (!L.row) {
    r.rejection = reduced_text(p) + " (row kernels need one unit-stride reduced dim)";
    return r;
  }
  if (vec) {
    r.rejection = vec_rejection(pr, p, p.n, "row length", 0);  // unit stride: no reduced-stride condition
    if (!r.rejection.empty()) return r;
  }
  switch (impl) {
    case ReduceImpl::kWarpRow: {
      const std::int64_t cap = vec ? 32LL * V * 4 : 128;
      if (p.n > cap) {
        r.rejection = "row length " + std::to_string(p.n) + " > " + std::to_string(cap) + " (a warp per row)";
        return r;
      }
      p.threads = 256;
      if (ceil_div(p.groups, 8) > kMaxGrid) r.rejection = "rows = " + std::to_string(p.groups) + " exceed the grid";
      return done();
    }
    case ReduceImpl::kBlockRow: {
      // var / std and argmax / argmin merge a heavy state up the block's tree (Welford's
      // (n, mean, m2), a value and a 64-bit index): two loaded chunks a thread where the row
      // allows, so half as many threads merge a row and twice as many rows share an SM.
      const bool heavy_merge = p.op == RedOp::kVar || p.op == RedOp::kStd || p.op == RedOp::kArgmax || p.op == RedOp::kArgmin;
      p.threads = round_up32(ceil_div(p.n, (heavy_merge ? 8LL : 4LL) * V));
      if (p.groups > kMaxGrid) r.rejection = "rows = " + std::to_string(p.groups) + " exceed the grid";
      return done();
    }
    case ReduceImpl::kSplitRow: {
      p.threads = 256;
      const std::int64_t min_slice = 256LL * V * 8;
      if (p.groups * 2 > target) {
        r.rejection = "rows = " + std::to_string(p.groups) + " already fill the device (" + std::to_string(target) + " blocks)";
        return r;
      }
      p.slices = std::min(ceil_div(target, std::max<std::int64_t>(p.groups, 1)), p.n / min_slice);
      if (p.slices < 2) {
        r.rejection = "row length " + std::to_string(p.n) + " < 2 slices of " + std::to_string(min_slice);
        p.slices = 1;
        return r;
      }
      const std::int64_t unit = 256LL * V;
      p.slice_len = ceil_div(ceil_div(p.n, p.slices), unit) * unit;
      p.slices = ceil_div(p.n, p.slice_len);
      if (p.groups * p.slices > kMaxGrid) r.rejection = "rows x slices exceed the grid";
      return done();
    }
    default: r.rejection = "internal: unknown impl"; return r;
  }
}

struct ImplInfo {
  ReduceImpl impl;
  bool vec;
  const char* name;
};
constexpr ImplInfo kImpls[] = {
    {ReduceImpl::kWarpRow, true, "warp_row_vec16"},   {ReduceImpl::kWarpRow, false, "warp_row"},
    {ReduceImpl::kSplitRow, true, "split_row_vec16"}, {ReduceImpl::kSplitRow, false, "split_row"},
    {ReduceImpl::kBlockRow, true, "block_row_vec16"}, {ReduceImpl::kBlockRow, false, "block_row"},
    {ReduceImpl::kColumnStream, true, "column_stream_vec16"},
    {ReduceImpl::kColumn, true, "column_vec16"},      {ReduceImpl::kColumn, false, "column"},
    {ReduceImpl::kGeneric, false, "generic"},
};
constexpr int kNumImpls = sizeof(kImpls) / sizeof(kImpls[0]);

KernelSku sku_of(const Problem& pr, const ImplInfo& info) {
  KernelSku s;
  s.family = pr.family;
  s.direction = Direction::kForward;
  s.impl = info.name;
  s.in = pr.x.dtype;
  s.out = pr.y.dtype;
  s.compute = s.precision.accumulator = acc_dtype(pr);
  return s;
}

DType width_dtype(DType t) {
  switch (dtype_size(t)) {
    case 1: return DType::kU8;
    case 2: return DType::kI16;
    case 4: return DType::kI32;
    default: return DType::kI64;
  }
}

// column_stream: the elementwise column reduction with kind add (grad_b = the sum of grad_out
// over the rows; it reads neither input).
Status launch_column_stream(const Problem& pr, const ReduceParams& p, cudaStream_t s) {
  elementwise::ColumnReduceParams cr;
  cr.which = 1;
  cr.grad_out = p.x;
  cr.grad_reduced = p.y;
  cr.partial = p.partial;
  cr.rows = p.n;
  cr.cols = p.inner;
  cr.row_stride[0] = p.red_stride[0];
  cr.chunks = p.slices;
  cr.chunk_len = p.slice_len;
  cr.block_cols = p.bx;
  cr.pdl = p.pdl;
  return elementwise::launch_binary_bwd_column_reduce(pr.x.dtype, BinaryKind::kAdd, cr, s);
}

Status launch_problem(const Problem& pr, const ReduceParams& p, cudaStream_t s) {
  if (p.impl == ReduceImpl::kColumnStream) return launch_column_stream(pr, p, s);
  const DType t = pr.x.dtype;
  auto by_dtype = [&](auto f64, auto f32, auto f16, auto bf16, auto i64, auto i32) -> Status {
    switch (t) {
      case DType::kF64: return f64(p, s);
      case DType::kF32: return f32(p, s);
      case DType::kF16: return f16(p, s);
      case DType::kBF16: return bf16(p, s);
      case DType::kI64: return i64(p, s);
      case DType::kI32: return i32(p, s);
      default: return Status(Code::kNotBuilt, "reduce: no kernels for dtype " + std::string(dtype_name(t)));
    }
  };
  switch (p.op) {
    case RedOp::kSum: case RedOp::kMean: case RedOp::kProd:
      return by_dtype(launch_reduce_sum<DType::kF64>, launch_reduce_sum<DType::kF32>, launch_reduce_sum<DType::kF16>,
                      launch_reduce_sum<DType::kBF16>, launch_reduce_sum<DType::kI64>, launch_reduce_sum<DType::kI32>);
    case RedOp::kMax: case RedOp::kMin: case RedOp::kNormInf: case RedOp::kNormNegInf: case RedOp::kArgmax: case RedOp::kArgmin:
      return by_dtype(launch_reduce_minmax<DType::kF64>, launch_reduce_minmax<DType::kF32>, launch_reduce_minmax<DType::kF16>,
                      launch_reduce_minmax<DType::kBF16>, launch_reduce_minmax<DType::kI64>, launch_reduce_minmax<DType::kI32>);
    case RedOp::kNorm: case RedOp::kLogSumExp: case RedOp::kVar: case RedOp::kStd:
      switch (t) {
        case DType::kF64: return launch_reduce_stat<DType::kF64>(p, s);
        case DType::kF32: return launch_reduce_stat<DType::kF32>(p, s);
        case DType::kF16: return launch_reduce_stat<DType::kF16>(p, s);
        case DType::kBF16: return launch_reduce_stat<DType::kBF16>(p, s);
        default: return Status(Code::kNotBuilt, "reduce: no kernels for dtype " + std::string(dtype_name(t)));
      }
    case RedOp::kAny: case RedOp::kAll: case RedOp::kCount:
      switch (width_dtype(t)) {
        case DType::kU8: return launch_reduce_count<DType::kU8>(p, s);
        case DType::kI16: return launch_reduce_count<DType::kI16>(p, s);
        case DType::kI32: return launch_reduce_count<DType::kI32>(p, s);
        default: return launch_reduce_count<DType::kI64>(p, s);
      }
  }
  return Status(Code::kInternal, "reduce: unknown op");
}

template <class Desc, class Args, int I>
struct ReduceCandidate {
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    typename Candidate<Desc, Args>::Probe pr;
    const Problem prob = problem_of(d).value();
    pr.sku = sku_of(prob, kImpls[I]);
    Setup s = setup_for(kImpls[I].impl, kImpls[I].vec, prob, caps);
    pr.rejection = s.rejection;
    pr.workspace_bytes = s.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    const Problem prob = problem_of(d).value();
    return std::shared_ptr<const void>(std::make_shared<ReduceParams>(setup_for(kImpls[I].impl, kImpls[I].vec, prob, caps).params));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    ReduceParams p = *static_cast<const ReduceParams*>(state);
    p.x = a.x;
    p.y = a.y;
    p.partial = ws.data;
    return launch_problem(problem_of(d).value(), p, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

template <class Desc, class Args, int... I>
constexpr std::array<Candidate<Desc, Args>, sizeof...(I)> make_candidates(std::integer_sequence<int, I...>) {
  return {ReduceCandidate<Desc, Args, I>::make()...};
}
template <class Desc, class Args>
inline constexpr auto kCandidates = make_candidates<Desc, Args>(std::make_integer_sequence<int, kNumImpls>{});

// Null / alignment / aliasing of a forward plan's pointers (x may be null when it is empty).
Status check_fwd_pointers(const TensorLayout& x, const void* xp, const TensorLayout& y, void* yp) {
  elementwise::MapOperands m;
  elementwise::MapPointers ptrs;
  m.num_out = 1;
  m.out[0] = {y, "y", y.alignment};
  ptrs.out[0] = yp;
  if (x.numel() > 0) {
    m.num_in = 1;
    m.in[0] = {x, "x", x.alignment};
    ptrs.in[0] = xp;
  }
  return elementwise::check_map_pointers(m, ptrs);
}

template <class Desc>
Status validate_desc(const Desc& d) {
  auto pr = problem_of(d);
  return pr ? Status::ok() : pr.error();
}

// ---- backward

struct BwdProblem {
  RedOp op = RedOp::kSum;
  std::uint32_t mask = 0;
  int norm_code = 2;
};

bool needs_x(ReduceKind k) { return k != ReduceKind::kSum && k != ReduceKind::kMean; }
bool needs_y(ReduceKind k) {
  return k != ReduceKind::kSum && k != ReduceKind::kMean && k != ReduceKind::kVar;
}

Expected<BwdProblem> bwd_problem(const ReduceBackwardDescriptor& d) {
  if (static_cast<int>(d.kind) > static_cast<int>(ReduceKind::kStd))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(d.kind)) + " is not a ReduceKind");
  const std::string family = std::string(reduce_kind_name(d.kind)) + "_backward";
  BARACUDA_TRY(validate_layout(d.grad_y, "grad_y"));
  BARACUDA_TRY(validate_layout(d.x, "x"));
  BARACUDA_TRY(validate_layout(d.y, "y"));
  BARACUDA_TRY(validate_layout(d.grad_x, "grad_x"));
  auto mask = axes_mask(d.axes, d.x.rank, "x");
  if (!mask) return mask.error();
  if (!is_float(d.x.dtype)) return dtype_error("x", d.x.dtype, family, "f64, f32, f16, bf16");
  BARACUDA_TRY(elementwise::check_same_dtype(d.grad_y, "grad_y", d.x, "x"));
  BARACUDA_TRY(elementwise::check_same_dtype(d.y, "y", d.x, "x"));
  BARACUDA_TRY(elementwise::check_same_dtype(d.grad_x, "grad_x", d.x, "x"));
  BARACUDA_TRY(elementwise::check_same_shape(d.grad_x, "grad_x", d.x, "x"));
  BARACUDA_TRY(check_reduced_shape(d.y, "y", d.x, "x", mask.value(), d.keepdim));
  BARACUDA_TRY(check_reduced_shape(d.grad_y, "grad_y", d.x, "x", mask.value(), d.keepdim));
  BARACUDA_TRY(elementwise::check_output_layout(d.grad_x, "grad_x"));
  BwdProblem b;
  b.mask = mask.value();
  BARACUDA_TRY(kind_op(d.kind, d.p, b.op, b.norm_code));
  if (b.op == RedOp::kNormInf || b.op == RedOp::kNormNegInf) b.op = RedOp::kNorm;  // the kernel keys on norm_code 4
  const bool no_identity = b.op == RedOp::kMax || b.op == RedOp::kMin || (b.op == RedOp::kNorm && b.norm_code == 4);
  if (no_identity && reduced_count(d.x, b.mask) == 0)
    return Status(Code::kInvalidArgument, family + " of x = " + d.x.to_string() + " reduces over zero elements");
  return b;
}

ReduceBwdParams bwd_params(const ReduceBackwardDescriptor& d, const BwdProblem& b) {
  ReduceBwdParams p;
  p.op = b.op;
  p.norm_code = b.norm_code;
  p.p = d.p;
  p.correction = d.correction;
  p.no_dim = d.axes.count == 0 || d.x.rank == 0;
  if (d.kind == ReduceKind::kMax || d.kind == ReduceKind::kMin) p.max_rule = p.no_dim ? 1 : 2;
  TensorLayout k[4] = {d.x, d.grad_x, d.y, d.grad_y};
  TensorLayout r[2] = {d.x, d.grad_x};
  for (auto& t : k) t.rank = 0;
  for (auto& t : r) t.rank = 0;
  int yd = 0;
  for (int i = 0; i < d.x.rank; ++i) {
    const auto si = static_cast<std::size_t>(i);
    if (b.mask & (1u << i)) {
      const auto j = static_cast<std::size_t>(r[0].rank);
      r[0].shape[j] = r[1].shape[j] = d.x.shape[si];
      r[0].strides[j] = d.x.strides[si];
      r[1].strides[j] = d.grad_x.strides[si];
      ++r[0].rank;
      ++r[1].rank;
      if (d.keepdim) ++yd;
    } else {
      const auto j = static_cast<std::size_t>(k[0].rank);
      for (auto& t : k) t.shape[j] = d.x.shape[si];
      k[0].strides[j] = d.x.strides[si];
      k[1].strides[j] = d.grad_x.strides[si];
      k[2].strides[j] = d.y.strides[static_cast<std::size_t>(yd)];
      k[3].strides[j] = d.grad_y.strides[static_cast<std::size_t>(yd)];
      ++yd;
      for (auto& t : k) ++t.rank;
    }
  }
  p.groups = k[0].numel();
  p.n = r[0].numel();
  const TensorLayout* kp[4] = {&k[0], &k[1], &k[2], &k[3]};
  const CollapsedDims ck = collapse_dims(std::span<const TensorLayout* const>(kp, 4));
  p.kept_rank = p.groups <= 1 ? 0 : ck.rank;
  for (int dd = 0; dd < p.kept_rank; ++dd) {
    p.kept_shape[dd] = ck.shape[static_cast<std::size_t>(dd)];
    for (int o = 0; o < 4; ++o) p.kept_stride[o][dd] = ck.strides[static_cast<std::size_t>(o)][static_cast<std::size_t>(dd)];
  }
  const TensorLayout* rp[2] = {&r[0], &r[1]};
  const CollapsedDims cr = collapse_dims(std::span<const TensorLayout* const>(rp, 2));
  p.red_rank = p.n <= 1 ? 0 : cr.rank;
  for (int dd = 0; dd < p.red_rank; ++dd) {
    p.red_shape[dd] = cr.shape[static_cast<std::size_t>(dd)];
    for (int o = 0; o < 2; ++o) p.red_stride[o][dd] = cr.strides[static_cast<std::size_t>(o)][static_cast<std::size_t>(dd)];
  }
  return p;
}

struct BwdCandidate {
  using Desc = ReduceBackwardDescriptor;
  using Args = ReduceBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku.family = reduce_kind_name(d.kind);
    pr.sku.direction = Direction::kBackward;
    pr.sku.impl = "group";
    pr.sku.in = pr.sku.out = d.x.dtype;
    pr.sku.compute = pr.sku.precision.accumulator = d.x.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
    const auto b = bwd_problem(d).value();
    const auto p = bwd_params(d, b);
    if (p.groups > kMaxGrid) pr.rejection = "groups = " + std::to_string(p.groups) + " exceed the grid";
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    return std::shared_ptr<const void>(std::make_shared<ReduceBwdParams>(bwd_params(d, bwd_problem(d).value())));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace, cudaStream_t s) {
    ReduceBwdParams p = *static_cast<const ReduceBwdParams*>(state);
    p.grad_y = a.grad_y;
    p.x = a.x;
    p.y = a.y;
    p.grad_x = a.grad_x;
    switch (d.x.dtype) {
      case DType::kF64: return launch_reduce_bwd<DType::kF64>(p, s);
      case DType::kF32: return launch_reduce_bwd<DType::kF32>(p, s);
      case DType::kF16: return launch_reduce_bwd<DType::kF16>(p, s);
      case DType::kBF16: return launch_reduce_bwd<DType::kBF16>(p, s);
      default: return Status(Code::kNotBuilt, "reduce backward: no kernels for dtype " + std::string(dtype_name(d.x.dtype)));
    }
  }
};
constexpr Candidate<ReduceBackwardDescriptor, ReduceBackwardArgs> kBwdCandidates[] = {
    {&BwdCandidate::probe, &BwdCandidate::prepare, &BwdCandidate::launch}};

Status check_bwd_pointers(const ReduceBackwardDescriptor& d, const ReduceBackwardArgs& a) {
  if (d.grad_x.numel() == 0) return Status::ok();
  if (needs_x(d.kind) && a.x == nullptr)
    return Status(Code::kInvalidArgument, std::string("args.x is null (") + reduce_kind_name(d.kind) + "_backward reads x)");
  if (needs_y(d.kind) && a.y == nullptr)
    return Status(Code::kInvalidArgument, std::string("args.y is null (") + reduce_kind_name(d.kind) + "_backward reads y)");
  elementwise::MapOperands m;
  elementwise::MapPointers ptrs;
  m.num_out = 1;
  m.out[0] = {d.grad_x, "grad_x", d.grad_x.alignment};
  ptrs.out[0] = a.grad_x;
  auto add_in = [&](const TensorLayout& t, const char* f, const void* p, bool always) {
    if (!always && p == nullptr) return;
    m.in[static_cast<std::size_t>(m.num_in)] = {t, f, t.alignment};
    ptrs.in[static_cast<std::size_t>(m.num_in++)] = p;
  };
  add_in(d.grad_y, "grad_y", a.grad_y, true);
  add_in(d.x, "x", a.x, false);
  add_in(d.y, "y", a.y, false);
  return elementwise::check_map_pointers(m, ptrs);
}

}  // namespace
}  // namespace reduce

Expected<TensorLayout> reduced_layout(const TensorLayout& x, const ReduceAxes& axes, bool keepdim, DType y_dtype) {
  auto mask = reduce::axes_mask(axes, x.rank, "x");
  if (!mask) return mask.error();
  return reduce::reduced_of(x, mask.value(), keepdim, y_dtype);
}

#define BARACUDA_REDUCE_TRAITS(DESC, ARGS, FAMILY)                                                          \
  template <>                                                                                               \
  struct FamilyTraits<DESC> {                                                                               \
    static constexpr const char* kFamily = FAMILY;                                                          \
    static Status validate(const DESC& d) { return reduce::validate_desc(d); }                              \
    static std::span<const Candidate<DESC, ARGS>> candidates() { return reduce::kCandidates<DESC, ARGS>; } \
    static Status check_args(const DESC& d, const ARGS& a) {                                                \
      return reduce::check_fwd_pointers(d.x, a.x, d.y, a.y);                                                \
    }                                                                                                       \
  };                                                                                                        \
  template class Plan<DESC, ARGS>;

BARACUDA_REDUCE_TRAITS(ReduceDescriptor, ReduceArgs, "reduce")
BARACUDA_REDUCE_TRAITS(ArgReduceDescriptor, ArgReduceArgs, "arg_reduce")
BARACUDA_REDUCE_TRAITS(BoolReduceDescriptor, BoolReduceArgs, "bool_reduce")
BARACUDA_REDUCE_TRAITS(CountReduceDescriptor, CountReduceArgs, "count_reduce")
BARACUDA_REDUCE_TRAITS(TraceDescriptor, TraceArgs, "trace")
#undef BARACUDA_REDUCE_TRAITS

template <>
struct FamilyTraits<ReduceBackwardDescriptor> {
  static constexpr const char* kFamily = "reduce_backward";
  static Status validate(const ReduceBackwardDescriptor& d) {
    auto b = reduce::bwd_problem(d);
    return b ? Status::ok() : b.error();
  }
  static std::span<const Candidate<ReduceBackwardDescriptor, ReduceBackwardArgs>> candidates() {
    return reduce::kBwdCandidates;
  }
  static Status check_args(const ReduceBackwardDescriptor& d, const ReduceBackwardArgs& a) {
    return reduce::check_bwd_pointers(d, a);
  }
};
template class Plan<ReduceBackwardDescriptor, ReduceBackwardArgs>;

}  // namespace baracuda
