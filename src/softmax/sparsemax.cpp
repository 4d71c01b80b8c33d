// SparsemaxPlan / SparsemaxBackwardPlan: descriptors, validation and the candidate table
// (shared plumbing: row_ops.hpp; kernels: kernels/sparsemax.cuh). Candidates, best first:
// warp_row_vec16 (a warp per row, in registers), block_row_vec16 (a block per row, in
// registers), block_loop (any stride, any length).
#include <string>

#include "baracuda/ops/sparsemax.hpp"
#include "core/hash.hpp"
#include "softmax/row_ops.hpp"

namespace baracuda {

std::size_t SparsemaxDescriptor::hash() const noexcept {
  return detail::hash_combine(detail::hash_combine(x.hash(), y.hash()), static_cast<std::size_t>(axis));
}
std::string SparsemaxDescriptor::to_string() const {
  return "sparsemax(x=" + x.to_string() + ", y=" + y.to_string() + ", axis=" + std::to_string(axis) + ")";
}
std::size_t SparsemaxBackwardDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(grad_y.hash(), y.hash()), grad_x.hash());
  return detail::hash_combine(h, static_cast<std::size_t>(axis));
}
std::string SparsemaxBackwardDescriptor::to_string() const {
  return "sparsemax_backward(grad_y=" + grad_y.to_string() + ", y=" + y.to_string() + ", grad_x=" + grad_x.to_string() +
         ", axis=" + std::to_string(axis) + ")";
}

namespace softmax {
namespace {

RowOpView view_of(const SparsemaxDescriptor& d) {
  return {"sparsemax", false, {&d.y, &d.x, nullptr, nullptr}, {"y", "x", "", ""}, d.axis, 1};
}
RowOpView view_of(const SparsemaxBackwardDescriptor& d) {
  return {"sparsemax", true, {&d.grad_x, &d.grad_y, &d.y, nullptr}, {"grad_x", "grad_y", "y", ""}, d.axis, 2};
}

struct SparsemaxFamily {
  using Params = RowOpParams;
  static constexpr const auto& kImpls = kRowOpImpls;
  static constexpr auto view = [](const auto& d) { return view_of(d); };
  static constexpr auto setup = &row_op_setup;
  static constexpr auto sku = &row_op_sku;
  static Status launch(RowOpParams p, const RowOpView& v, const SparsemaxDescriptor&, const SparsemaxArgs& a, Workspace,
                       cudaStream_t s) {
    p.out = a.y;
    p.in0 = a.x;
    return sparse::launch_by_dtype(v.op[1]->dtype, false, p, s);
  }
  static Status launch(RowOpParams p, const RowOpView& v, const SparsemaxBackwardDescriptor&,
                       const SparsemaxBackwardArgs& a, Workspace, cudaStream_t s) {
    p.out = a.grad_x;
    p.in0 = a.grad_y;
    p.in1 = a.y;
    return sparse::launch_by_dtype(v.op[1]->dtype, true, p, s);
  }
};

}  // namespace
}  // namespace softmax

template <>
struct FamilyTraits<SparsemaxDescriptor> {
  static constexpr const char* kFamily = "sparsemax";
  static Status validate(const SparsemaxDescriptor& d) { return softmax::validate_row_op(softmax::view_of(d)); }
  static std::span<const Candidate<SparsemaxDescriptor, SparsemaxArgs>> candidates() {
    return rows::kRowCandidates<softmax::SparsemaxFamily, SparsemaxDescriptor, SparsemaxArgs>;
  }
  static Status check_args(const SparsemaxDescriptor& d, const SparsemaxArgs& a) {
    return softmax::check_row_op_pointers(softmax::view_of(d), a.y, a.x, nullptr, nullptr);
  }
};

template <>
struct FamilyTraits<SparsemaxBackwardDescriptor> {
  static constexpr const char* kFamily = "sparsemax_backward";
  static Status validate(const SparsemaxBackwardDescriptor& d) { return softmax::validate_row_op(softmax::view_of(d)); }
  static std::span<const Candidate<SparsemaxBackwardDescriptor, SparsemaxBackwardArgs>> candidates() {
    return rows::kRowCandidates<softmax::SparsemaxFamily, SparsemaxBackwardDescriptor, SparsemaxBackwardArgs>;
  }
  static Status check_args(const SparsemaxBackwardDescriptor& d, const SparsemaxBackwardArgs& a) {
    return softmax::check_row_op_pointers(softmax::view_of(d), a.grad_x, a.grad_y, a.y, nullptr);
  }
};

template class Plan<SparsemaxDescriptor, SparsemaxArgs>;
template class Plan<SparsemaxBackwardDescriptor, SparsemaxBackwardArgs>;

}  // namespace baracuda
