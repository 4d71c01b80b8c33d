// BinaryParamPlan and BinaryParamBackwardPlan: lerp (scalar and tensor weight) and add /
// sub with alpha on the floating dtypes.
//
// Backward: at most two maps, both on one map path. Map W (lerp_tensor's grad_weight, from
// grad_out, a and b) runs first, then map A (grad_a and / or grad_b, from grad_out and, for
// lerp_tensor, weight), so grad_a / grad_b may overwrite grad_out in place; grad_weight may
// not alias anything map A reads.
#include <array>
#include <cmath>
#include <functional>
#include <string>

#include "baracuda/ops/elementwise_binary.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

namespace {
constexpr std::array<const char*, kNumBinaryParamKinds> kParamNames = {"lerp", "lerp_tensor", "add_alpha", "sub_alpha"};
}

const char* binary_param_kind_name(BinaryParamKind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < kParamNames.size() ? kParamNames[i] : "unknown";
}

std::optional<BinaryParamKind> parse_binary_param_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kParamNames.size(); ++i)
    if (name == kParamNames[i]) return static_cast<BinaryParamKind>(i);
  return std::nullopt;
}

namespace {
bool tensor_weight(BinaryParamKind k) { return k == BinaryParamKind::kLerpTensor; }
std::string scalar_text(BinaryParamKind k, double v) {
  if (tensor_weight(k)) return "";
  return (k == BinaryParamKind::kLerp ? "weight=" : "alpha=") + std::to_string(v) + ", ";
}
}  // namespace

std::size_t BinaryParamDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(static_cast<std::size_t>(kind), std::hash<double>{}(scalar));
  for (const auto* t : {&a, &b, &weight, &out}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string BinaryParamDescriptor::to_string() const {
  std::string s = std::string(binary_param_kind_name(kind)) + "(" + scalar_text(kind, scalar) + "a=" + a.to_string() +
                  ", b=" + b.to_string();
  if (tensor_weight(kind)) s += ", weight=" + weight.to_string();
  return s + ", out=" + out.to_string() + ")";
}
std::size_t BinaryParamBackwardDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(kind) * 8 + (compute_grad_a ? 4 : 0) + (compute_grad_b ? 2 : 0) +
                  (compute_grad_weight ? 1 : 0);
  h = detail::hash_combine(h, std::hash<double>{}(scalar));
  for (const auto* t : {&grad_out, &a, &b, &weight, &grad_a, &grad_b, &grad_weight}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string BinaryParamBackwardDescriptor::to_string() const {
  std::string s = std::string(binary_param_kind_name(kind)) + "_backward(" + scalar_text(kind, scalar) +
                  "grad_out=" + grad_out.to_string();
  if (tensor_weight(kind)) s += ", a=" + a.to_string() + ", b=" + b.to_string() + ", weight=" + weight.to_string();
  if (compute_grad_a) s += ", grad_a=" + grad_a.to_string();
  if (compute_grad_b) s += ", grad_b=" + grad_b.to_string();
  if (tensor_weight(kind) && compute_grad_weight) s += ", grad_weight=" + grad_weight.to_string();
  return s + ")";
}

namespace elementwise {
namespace {

KernelSku param_sku(DType t, Direction dir) {
  KernelSku s;
  s.family = "binary_param";
  s.direction = dir;
  s.in = s.out = t;
  s.compute = s.precision.accumulator = t == DType::kF64 ? DType::kF64 : DType::kF32;
  return s;
}

Status check_param_kind(BinaryParamKind k, double scalar) {
  if (static_cast<unsigned>(k) >= static_cast<unsigned>(kNumBinaryParamKinds))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(k)) + " is not a BinaryParamKind");
  if (!tensor_weight(k) && !std::isfinite(scalar))
    return Status(Code::kInvalidArgument, "scalar = " + std::to_string(scalar) + " is not finite (kind " +
                                              binary_param_kind_name(k) + ")");
  return Status::ok();
}

// The broadcast shape of a, b (and weight for lerp_tensor).
Expected<TensorLayout> input_shape(BinaryParamKind k, const TensorLayout& a, const TensorLayout& b, const TensorLayout& w) {
  auto ab = broadcast_shape(a, b, "a", "b");
  if (!ab || !tensor_weight(k)) return ab;
  return broadcast_shape(ab.value(), w, "broadcast(a, b)", "weight");
}

// ---- forward
struct ParamFwdSpec {
  static MapOperands operands(const BinaryParamDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.out[0] = {d.out, "out", d.out.alignment};
    o.in[o.num_in++] = {broadcast_or_self(d.a, d.out), "a", d.a.alignment};
    o.in[o.num_in++] = {broadcast_or_self(d.b, d.out), "b", d.b.alignment};
    if (tensor_weight(d.kind)) o.in[o.num_in++] = {broadcast_or_self(d.weight, d.out), "weight", d.weight.alignment};
    return o;
  }
  static KernelSku sku(const BinaryParamDescriptor& d) { return param_sku(d.a.dtype, Direction::kForward); }
  static int fp8_mode(const BinaryParamDescriptor&) { return 0; }
  static MapPointers pointers(const BinaryParamArgs& a) {
    MapPointers p;
    p.out[0] = a.out;
    p.in[0] = a.a;
    p.in[1] = a.b;
    p.in[2] = a.weight;
    return p;
  }
  static Status launch(const BinaryParamDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_binary_param_fwd(d.a.dtype, d.kind, d.scalar, p, s);
  }
};

// ---- backward
using PBDesc = BinaryParamBackwardDescriptor;
using PBArgs = BinaryParamBackwardArgs;

bool wants_weight(const PBDesc& d) { return tensor_weight(d.kind) && d.compute_grad_weight; }
int map_a_which(const PBDesc& d) {
  return d.compute_grad_a && d.compute_grad_b ? 2 : (d.compute_grad_a ? 0 : (d.compute_grad_b ? 1 : -1));
}

// Map A: grad_a / grad_b from grad_out (and weight for lerp_tensor).
MapOperands map_a_operands(const PBDesc& d) {
  MapOperands o;
  const TensorLayout& g = d.grad_out;
  if (d.compute_grad_a) o.out[o.num_out++] = {d.grad_a, "grad_a", d.grad_a.alignment};
  if (d.compute_grad_b) o.out[o.num_out++] = {d.grad_b, "grad_b", d.grad_b.alignment};
  o.in[o.num_in++] = {g, "grad_out", g.alignment};
  if (tensor_weight(d.kind)) o.in[o.num_in++] = {broadcast_or_self(d.weight, g), "weight", d.weight.alignment};
  return o;
}
MapPointers map_a_pointers(const PBDesc& d, const PBArgs& a) {
  MapPointers p;
  int no = 0;
  if (d.compute_grad_a) p.out[no++] = a.grad_a;
  if (d.compute_grad_b) p.out[no++] = a.grad_b;
  p.in[0] = a.grad_out;
  p.in[1] = a.weight;
  return p;
}
// Map W: grad_weight from grad_out, a and b.
MapOperands map_w_operands(const PBDesc& d) {
  MapOperands o;
  const TensorLayout& g = d.grad_out;
  o.num_out = 1;
  o.num_in = 3;
  o.out[0] = {d.grad_weight, "grad_weight", d.grad_weight.alignment};
  o.in[0] = {g, "grad_out", g.alignment};
  o.in[1] = {broadcast_or_self(d.a, g), "a", d.a.alignment};
  o.in[2] = {broadcast_or_self(d.b, g), "b", d.b.alignment};
  return o;
}
MapPointers map_w_pointers(const PBArgs& a) {
  MapPointers p;
  p.out[0] = a.grad_weight;
  p.in[0] = a.grad_out;
  p.in[1] = a.a;
  p.in[2] = a.b;
  return p;
}

struct ParamBwdState {
  bool map_a = false, map_w = false;
  MapParams a, w;
};

template <MapPath P>
struct ParamBwdCandidate {
  static Candidate<PBDesc, PBArgs>::Probe probe(const PBDesc& d, const DeviceCaps&) {
    Candidate<PBDesc, PBArgs>::Probe pr;
    pr.sku = param_sku(d.grad_out.dtype, Direction::kBackward);
    pr.sku.impl = map_path_impl(P);
    if (map_a_which(d) >= 0) pr.rejection = map_path_rejection(map_a_operands(d), P);
    if (pr.rejection.empty() && wants_weight(d)) pr.rejection = map_path_rejection(map_w_operands(d), P);
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const PBDesc& d, const DeviceCaps&) {
    auto st = std::make_shared<ParamBwdState>();
    st->map_a = map_a_which(d) >= 0;
    st->map_w = wants_weight(d);
    if (st->map_a) st->a = make_map_params(map_a_operands(d), P, 0);
    if (st->map_w) st->w = make_map_params(map_w_operands(d), P, 0);
    return std::shared_ptr<const void>(st);
  }
  static Status launch(const void* state, const PBDesc& d, const PBArgs& a, Workspace, cudaStream_t s) {
    const auto& st = *static_cast<const ParamBwdState*>(state);
    const DType t = d.grad_out.dtype;
    if (st.map_w) {
      MapParams p = st.w;
      MapPointers ptr = map_w_pointers(a);
      p.out[0] = ptr.out[0];
      for (int k = 0; k < p.num_in; ++k) p.in[k] = ptr.in[k];
      BARACUDA_TRY(launch_binary_param_bwd(t, ParamGradMap::kLerpWeight, 0, 0, 0, p, s));
    }
    if (!st.map_a) return Status::ok();
    MapParams p = st.a;
    MapPointers ptr = map_a_pointers(d, a);
    for (int k = 0; k < p.num_out; ++k) p.out[k] = ptr.out[k];
    for (int k = 0; k < p.num_in; ++k) p.in[k] = ptr.in[k];
    const int which = map_a_which(d);
    if (tensor_weight(d.kind)) return launch_binary_param_bwd(t, ParamGradMap::kLerpTensor, which, 0, 0, p, s);
    // torch: lerp  grad * (1 - weight), grad * weight; alpha  grad, grad * (+-alpha)
    double ca = 1, cb = d.scalar;
    if (d.kind == BinaryParamKind::kLerp) ca = 1 - d.scalar;
    if (d.kind == BinaryParamKind::kSubAlpha) cb = -d.scalar;
    return launch_binary_param_bwd(t, ParamGradMap::kScaled, which, ca, cb, p, s);
  }
  static constexpr Candidate<PBDesc, PBArgs> make() { return {&probe, &prepare, &launch}; }
};

constexpr std::array<Candidate<PBDesc, PBArgs>, 4> kParamBwdCandidates = {
    ParamBwdCandidate<MapPath::kVecContig>::make(), ParamBwdCandidate<MapPath::kVecRows>::make(),
    ParamBwdCandidate<MapPath::kStrided32>::make(), ParamBwdCandidate<MapPath::kStrided64>::make()};

Status check_grad(const TensorLayout& grad, const char* field, const TensorLayout& g) {
  BARACUDA_TRY(validate_layout(grad, field));
  BARACUDA_TRY(check_same_dtype(grad, field, g, "grad_out"));
  BARACUDA_TRY(check_same_shape(grad, field, g, "grad_out"));
  return check_output_layout(grad, field);
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<BinaryParamDescriptor>
    : elementwise::MapFamilyTraits<elementwise::ParamFwdSpec, BinaryParamDescriptor, BinaryParamArgs> {
  using Spec = elementwise::ParamFwdSpec;
  static constexpr const char* kFamily = "binary_param";
  static Status validate(const BinaryParamDescriptor& d) {
    BARACUDA_TRY(elementwise::check_param_kind(d.kind, d.scalar));
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(validate_layout(d.out, "out"));
    BARACUDA_TRY(elementwise::check_math_dtype(d.a, "a", kFamily));
    BARACUDA_TRY(elementwise::check_same_dtype(d.b, "b", d.a, "a"));
    if (tensor_weight(d.kind)) {
      BARACUDA_TRY(validate_layout(d.weight, "weight"));
      BARACUDA_TRY(elementwise::check_same_dtype(d.weight, "weight", d.a, "a"));
    }
    BARACUDA_TRY(elementwise::check_same_dtype(d.out, "out", d.a, "a"));
    auto shape = elementwise::input_shape(d.kind, d.a, d.b, d.weight);
    if (!shape) return shape.error();
    BARACUDA_TRY(elementwise::check_same_shape(d.out, "out", shape.value(),
                                               tensor_weight(d.kind) ? "broadcast(a, b, weight)" : "broadcast(a, b)"));
    return elementwise::check_output_layout(d.out, "out");
  }
};

template <>
struct FamilyTraits<BinaryParamBackwardDescriptor> {
  static constexpr const char* kFamily = "binary_param_backward";
  static Status validate(const BinaryParamBackwardDescriptor& d) {
    BARACUDA_TRY(elementwise::check_param_kind(d.kind, d.scalar));
    BARACUDA_TRY(validate_layout(d.grad_out, "grad_out"));
    BARACUDA_TRY(elementwise::check_math_dtype(d.grad_out, "grad_out", kFamily));
    // The forward inputs fix the shape; a and b are read only by grad_weight, but their
    // shapes must broadcast to grad_out's in every case.
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(elementwise::check_same_dtype(d.a, "a", d.grad_out, "grad_out"));
    BARACUDA_TRY(elementwise::check_same_dtype(d.b, "b", d.grad_out, "grad_out"));
    if (tensor_weight(d.kind)) {
      BARACUDA_TRY(validate_layout(d.weight, "weight"));
      BARACUDA_TRY(elementwise::check_same_dtype(d.weight, "weight", d.grad_out, "grad_out"));
    }
    auto shape = elementwise::input_shape(d.kind, d.a, d.b, d.weight);
    if (!shape) return shape.error();
    BARACUDA_TRY(elementwise::check_same_shape(d.grad_out, "grad_out", shape.value(),
                                               tensor_weight(d.kind) ? "broadcast(a, b, weight)" : "broadcast(a, b)"));
    if (d.compute_grad_a) BARACUDA_TRY(elementwise::check_grad(d.grad_a, "grad_a", d.grad_out));
    if (d.compute_grad_b) BARACUDA_TRY(elementwise::check_grad(d.grad_b, "grad_b", d.grad_out));
    if (elementwise::wants_weight(d)) BARACUDA_TRY(elementwise::check_grad(d.grad_weight, "grad_weight", d.grad_out));
    return Status::ok();
  }
  static std::span<const Candidate<BinaryParamBackwardDescriptor, BinaryParamBackwardArgs>> candidates() {
    return elementwise::kParamBwdCandidates;
  }
  static Status check_args(const BinaryParamBackwardDescriptor& d, const BinaryParamBackwardArgs& a) {
    using namespace elementwise;
    const bool map_a = map_a_which(d) >= 0, map_w = wants_weight(d);
    if (map_a) BARACUDA_TRY(check_map_pointers(map_a_operands(d), map_a_pointers(d, a)));
    if (!map_w) return Status::ok();
    const MapOperands w_ops = map_w_operands(d);
    BARACUDA_TRY(check_map_pointers(w_ops, map_w_pointers(a)));
    if (!map_a || d.grad_out.numel() == 0) return Status::ok();
    // grad_weight is written before map A runs: it may not touch what map A reads or writes.
    const MapOperands a_ops = map_a_operands(d);
    const MapPointers a_ptr = map_a_pointers(d, a);
    for (int k = 0; k < a_ops.num_out; ++k)
      if (byte_ranges_overlap(a.grad_weight, d.grad_weight, a_ptr.out[k], a_ops.out[k].layout))
        return Status(Code::kInvalidArgument, std::string("args.grad_weight and args.") + a_ops.out[k].field +
                                                  " overlap (outputs must be distinct)");
    for (int k = 0; k < a_ops.num_in; ++k)
      if (byte_ranges_overlap(a.grad_weight, d.grad_weight, a_ptr.in[k], a_ops.in[k].layout))
        return Status(Code::kInvalidArgument, std::string("args.grad_weight overlaps args.") + a_ops.in[k].field +
                                                  ", which the grad_a / grad_b map reads after grad_weight is written "
                                                  "(unsafe aliasing)");
    return Status::ok();
  }
};

template class Plan<BinaryParamDescriptor, BinaryParamArgs>;
template class Plan<BinaryParamBackwardDescriptor, BinaryParamBackwardArgs>;

}  // namespace baracuda
