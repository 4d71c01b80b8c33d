// GumbelSoftmaxPlan / GumbelSoftmaxBackwardPlan: descriptors, validation and the candidate
// tables. Forward (shared plumbing: row_ops.hpp; kernels: kernels/gumbel_softmax.cuh),
// best first: warp_row_vec16 (a warp per row, in registers), block_row_vec16 (a block per
// row, in registers), block_loop (any stride, any length). Backward: softmax's backward
// table times 1 / tau (softmax/softmax_backward_table.hpp; SKUs gumbel_softmax.bwd.*).
#include <cmath>
#include <string>

#include "baracuda/ops/gumbel_softmax.hpp"
#include "core/hash.hpp"
#include "elementwise/checks.hpp"
#include "softmax/row_ops.hpp"
#include "softmax/softmax_backward_table.hpp"

namespace baracuda {

namespace {
bool uses_soft(const GumbelSoftmaxDescriptor& d) { return d.hard && d.save_soft; }
bool uses_noise(const GumbelSoftmaxDescriptor& d) { return d.noise_source == GumbelNoise::kTensor; }
std::size_t tau_hash(double tau) { return std::hash<double>{}(tau); }
}  // namespace

std::size_t GumbelSoftmaxDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(x.hash(), y.hash());
  if (uses_soft(*this)) h = detail::hash_combine(h, y_soft.hash());
  if (uses_noise(*this)) h = detail::hash_combine(h, noise.hash());
  h = detail::hash_combine(h, tau_hash(tau));
  return detail::hash_combine(h, static_cast<std::size_t>(axis) * 16 + static_cast<std::size_t>(hard) * 8 +
                                     static_cast<std::size_t>(save_soft) * 4 + static_cast<std::size_t>(noise_source));
}
std::string GumbelSoftmaxDescriptor::to_string() const {
  std::string s = std::string("gumbel_softmax(x=") + x.to_string() + ", y=" + y.to_string();
  if (uses_soft(*this)) s += ", y_soft=" + y_soft.to_string();
  if (uses_noise(*this)) s += ", noise=" + noise.to_string();
  return s + ", axis=" + std::to_string(axis) + ", tau=" + elementwise::number_text(tau) + (hard ? ", hard" : ", soft") +
         (uses_noise(*this) ? ", noise tensor" : ", philox") + ")";
}
std::size_t GumbelSoftmaxBackwardDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(detail::hash_combine(grad_y.hash(), y_soft.hash()), grad_x.hash());
  return detail::hash_combine(detail::hash_combine(h, tau_hash(tau)), static_cast<std::size_t>(axis));
}
std::string GumbelSoftmaxBackwardDescriptor::to_string() const {
  return "gumbel_softmax_backward(grad_y=" + grad_y.to_string() + ", y_soft=" + y_soft.to_string() +
         ", grad_x=" + grad_x.to_string() + ", axis=" + std::to_string(axis) + ", tau=" + elementwise::number_text(tau) + ")";
}

namespace softmax {
namespace {

RowOpView view_of(const GumbelSoftmaxDescriptor& d) {
  return {"gumbel_softmax", false,
          {&d.y, &d.x, uses_noise(d) ? &d.noise : nullptr, uses_soft(d) ? &d.y_soft : nullptr},
          {"y", "x", "noise", "y_soft"}, d.axis, 2};
}
RowOpView view_of(const GumbelSoftmaxBackwardDescriptor& d) {
  return {"gumbel_softmax", true, {&d.grad_x, &d.grad_y, &d.y_soft, nullptr}, {"grad_x", "grad_y", "y_soft", ""}, d.axis, 2};
}

Status check_tau(double tau) {
  if (!(tau > 0) || !std::isfinite(tau))
    return Status(Code::kInvalidArgument, "tau = " + elementwise::number_text(tau) + " must be > 0 and finite");
  return Status::ok();
}

struct GumbelFamily {
  using Params = RowOpParams;
  static constexpr const auto& kImpls = kRowOpImpls;
  static constexpr auto view = [](const auto& d) { return view_of(d); };
  static constexpr auto setup = &row_op_setup;
  static constexpr auto sku = &row_op_sku;
  static Status launch(RowOpParams p, const RowOpView& v, const GumbelSoftmaxDescriptor& d, const GumbelSoftmaxArgs& a,
                       Workspace, cudaStream_t s) {
    p.out = a.y;
    p.in0 = a.x;
    p.in1 = uses_noise(d) ? a.noise : nullptr;
    p.out2 = uses_soft(d) ? a.y_soft : nullptr;
    p.tau = d.tau;
    p.hard = d.hard;
    p.seed = a.seed;
    p.offset = a.offset;
    return gumbel::launch_by_dtype(v.op[1]->dtype, p, s);
  }
};

}  // namespace
}  // namespace softmax

template <>
struct FamilyTraits<GumbelSoftmaxDescriptor> {
  static constexpr const char* kFamily = "gumbel_softmax";
  static Status validate(const GumbelSoftmaxDescriptor& d) {
    if (d.noise_source != GumbelNoise::kPhilox && d.noise_source != GumbelNoise::kTensor)
      return Status(Code::kInvalidArgument,
                    "noise_source = " + std::to_string(static_cast<int>(d.noise_source)) + " is not a GumbelNoise");
    if (d.save_soft && !d.hard)
      return Status(Code::kInvalidArgument, "save_soft = true needs hard = true (a soft y is the soft sample)");
    BARACUDA_TRY(softmax::check_tau(d.tau));
    return softmax::validate_row_op(softmax::view_of(d));
  }
  static std::span<const Candidate<GumbelSoftmaxDescriptor, GumbelSoftmaxArgs>> candidates() {
    return rows::kRowCandidates<softmax::GumbelFamily, GumbelSoftmaxDescriptor, GumbelSoftmaxArgs>;
  }
  static Status check_args(const GumbelSoftmaxDescriptor& d, const GumbelSoftmaxArgs& a) {
    return softmax::check_row_op_pointers(softmax::view_of(d), a.y, a.x, a.noise, a.y_soft);
  }
};

template <>
struct FamilyTraits<GumbelSoftmaxBackwardDescriptor> {
  static constexpr const char* kFamily = "gumbel_softmax_backward";
  static Status validate(const GumbelSoftmaxBackwardDescriptor& d) {
    BARACUDA_TRY(softmax::check_tau(d.tau));
    return softmax::validate_row_op(softmax::view_of(d));
  }
  static std::span<const Candidate<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>> candidates() {
    return softmax::gumbel_backward_candidates();
  }
  static Status check_args(const GumbelSoftmaxBackwardDescriptor& d, const GumbelSoftmaxBackwardArgs& a) {
    return softmax::check_row_op_pointers(softmax::view_of(d), a.grad_x, a.grad_y, a.y_soft, nullptr);
  }
};

template class Plan<GumbelSoftmaxDescriptor, GumbelSoftmaxArgs>;
template class Plan<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>;

}  // namespace baracuda
