// Shared host plumbing of GumbelSoftmaxPlan / SparsemaxPlan (see row_ops.hpp).
#include "softmax/row_ops.hpp"

#include <algorithm>

#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda::softmax {

namespace {

int norm_axis(const RowOpView& v) { return v.axis < 0 ? v.axis + v.op[1]->rank : v.axis; }
int elem_bytes(const RowOpView& v) { return static_cast<int>(dtype_size(v.op[1]->dtype)); }
int compute_bytes(const RowOpView& v) { return v.op[1]->dtype == DType::kF64 ? 8 : 4; }

// Rows, length, kept dims and axis strides of the present operands (absent slots: in0's).
RowOpParams base_params(const RowOpView& v) {
  RowOpParams p;
  const TensorLayout* ptrs[4];
  for (int k = 0; k < 4; ++k) ptrs[k] = v.op[k] ? v.op[k] : v.op[1];
  const rows::AxisGeometry g = rows::axis_geometry(std::span<const TensorLayout* const>(ptrs, 4), norm_axis(v));
  p.rows = g.rows;
  p.len = g.len;
  p.inner = g.inner;
  p.kept_rank = g.kept_rank;
  for (int k = 0; k < 4; ++k) p.axis_stride[k] = g.axis_stride[k];
  for (int d = 0; d < p.kept_rank; ++d) {
    p.kept_shape[d] = g.kept_shape[d];
    for (int k = 0; k < 4; ++k) p.kept_stride[k][d] = g.kept_stride[k][d];
  }
  return p;
}

// Why the register rows cannot hold these operands ("" = they can).
std::string register_row_rejection(const RowOpView& v, const RowOpParams& p) {
  for (int k = 0; k < 4; ++k)
    if (v.op[k] && p.axis_stride[k] != 1)
      return std::string(v.field[k]) + " stride along axis " + std::to_string(norm_axis(v)) + " = " +
             std::to_string(p.axis_stride[k]) + " (register rows need 1)";
  const std::int64_t vec = 16 / elem_bytes(v);
  if (p.len % vec != 0)
    return "row length " + std::to_string(p.len) + " is not a multiple of the " + std::to_string(vec) + "-element vector";
  for (int k = 0; k < 4; ++k) {
    if (!v.op[k]) continue;
    if (v.op[k]->alignment < 16)
      return std::string(v.field[k]) + ".alignment = " + std::to_string(v.op[k]->alignment) + " < 16 bytes";
    for (int d = 0; d < p.kept_rank; ++d)
      if (p.kept_stride[k][d] % vec != 0)
        return std::string(v.field[k]) + " row stride " + std::to_string(p.kept_stride[k][d]) + " is not a multiple of " +
               std::to_string(vec);
  }
  return "";
}

}  // namespace

Status validate_row_op(const RowOpView& v) {
  using namespace elementwise;
  for (int k = 0; k < 4; ++k)
    if (v.op[k]) BARACUDA_TRY(validate_layout(*v.op[k], v.field[k]));
  const std::string family = std::string(v.family) + (v.bwd ? "_backward" : "");
  BARACUDA_TRY(check_math_dtype(*v.op[1], v.field[1], family.c_str()));
  for (int k : {0, 2, 3}) {
    if (!v.op[k]) continue;
    BARACUDA_TRY(check_same_dtype(*v.op[k], v.field[k], *v.op[1], v.field[1]));
    BARACUDA_TRY(check_same_shape(*v.op[k], v.field[k], *v.op[1], v.field[1]));
  }
  const int rank = v.op[1]->rank;
  const int lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (v.axis < lo || v.axis > hi)
    return Status(Code::kInvalidArgument, "axis = " + std::to_string(v.axis) + " is out of range for " + v.field[1] +
                                              " of rank " + std::to_string(rank) + " (needs " + std::to_string(lo) + ".." +
                                              std::to_string(hi) + ")");
  for (int k : {0, 3})
    if (v.op[k]) BARACUDA_TRY(check_output_layout(*v.op[k], v.field[k]));
  return Status::ok();
}

Status check_row_op_pointers(const RowOpView& v, void* out, const void* in0, const void* in1, void* out2) {
  elementwise::MapOperands m;
  elementwise::MapPointers p;
  m.out[m.num_out] = {*v.op[0], v.field[0], v.op[0]->alignment};
  p.out[m.num_out++] = out;
  if (v.op[3]) {
    m.out[m.num_out] = {*v.op[3], v.field[3], v.op[3]->alignment};
    p.out[m.num_out++] = out2;
  }
  m.in[m.num_in] = {*v.op[1], v.field[1], v.op[1]->alignment};
  p.in[m.num_in++] = in0;
  if (v.op[2]) {
    m.in[m.num_in] = {*v.op[2], v.field[2], v.op[2]->alignment};
    p.in[m.num_in++] = in1;
  }
  return elementwise::check_map_pointers(m, p);
}

rows::RowSetup<RowOpParams> row_op_setup(RowOpImpl impl, bool, const RowOpView& v, const DeviceCaps&) {
  rows::RowSetup<RowOpParams> r;
  RowOpParams& p = r.params;
  p = base_params(v);
  p.impl = impl;
  if (p.rows > rows::kMaxGrid * (impl == RowOpImpl::kWarpRow ? 8 : 1)) {
    r.rejection = "rows = " + std::to_string(p.rows) + " exceed the grid";
    return r;
  }
  if (impl == RowOpImpl::kBlockLoop) {
    p.threads = static_cast<int>(std::min<std::int64_t>(kRowOpLoopThreads, rows::round_up32(p.len)));
    return r;
  }
  r.rejection = register_row_rejection(v, p);
  if (!r.rejection.empty()) return r;
  p.vec = 16 / elem_bytes(v);
  const int cb = compute_bytes(v), ops = v.reg_operands;
  rows::RowShape shape = rows::row_shape(
      impl == RowOpImpl::kWarpRow ? rows::RowLayout::kWarp : rows::RowLayout::kBlock, p.len, p.vec, rowop_bucket_built,
      [&](int k) { return rowop_max_threads(cb, p.vec, k, ops); }, "row length");
  if (!shape.rejection.empty()) {
    r.rejection = std::move(shape.rejection);
    return r;
  }
  p.k = shape.k;
  p.threads = shape.threads;
  return r;
}

KernelSku row_op_sku(const RowOpView& v, const RowOpImplInfo& info) {
  KernelSku s;
  s.family = v.family;
  s.direction = v.bwd ? Direction::kBackward : Direction::kForward;
  s.impl = info.name;
  s.in = s.out = v.op[1]->dtype;
  s.compute = s.precision.accumulator = v.op[1]->dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  return s;
}

}  // namespace baracuda::softmax
