// Host plumbing shared by GumbelSoftmaxPlan and SparsemaxPlan (and their backward): the
// operand view of a descriptor, validation of the along-an-axis operands, the launch shape of
// the three implementations (row_op_params.hpp) and the run-time pointer checks. The
// families (gumbel_softmax.cpp, sparsemax.cpp) add their descriptors, SKUs and launchers.
#pragma once

#include <string>

#include "baracuda/core/tensor.hpp"
#include "common/row_plan.hpp"
#include "core/plan_impl.hpp"
#include "softmax/row_op_params.hpp"

namespace baracuda::softmax {

// Operands by slot (row_op_params.hpp): 0 out, 1 in0, 2 in1, 3 out2; null: absent.
struct RowOpView {
  const char* family;  // "gumbel_softmax", "sparsemax" (SKU family and messages)
  bool bwd;
  const TensorLayout* op[4];
  const char* field[4];
  int axis;
  int reg_operands;  // compute-type arrays a register row holds (the kernel's Op::kTwo ? 2 : 1)
};

// Layouts, dtypes (f64 / f32 / f16 / bf16, one for all), shapes (in0's), axis range,
// non-overlapping outputs.
Status validate_row_op(const RowOpView& v);
// Null, alignment and aliasing of the present operands' pointers (slot order).
Status check_row_op_pointers(const RowOpView& v, void* out, const void* in0, const void* in1, void* out2);

struct RowOpImplInfo {
  RowOpImpl impl;
  bool vec;
  const char* name;
};
// warp_row_vec16, block_row_vec16, block_loop: the order of both families' candidates.
inline constexpr RowOpImplInfo kRowOpImpls[] = {
    {RowOpImpl::kWarpRow, true, "warp_row_vec16"},
    {RowOpImpl::kBlockRow, true, "block_row_vec16"},
    {RowOpImpl::kBlockLoop, false, "block_loop"},
};
rows::RowSetup<RowOpParams> row_op_setup(RowOpImpl impl, bool vec, const RowOpView& v, const DeviceCaps& caps);
KernelSku row_op_sku(const RowOpView& v, const RowOpImplInfo& info);

}  // namespace baracuda::softmax
