// TernaryPlan, TernaryBackwardPlan and AffinePlan: descriptors, validation and candidate tables.
#include <array>
#include <cmath>
#include <functional>
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/grad_passes.hpp"
#include "elementwise/launch_ternary.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

namespace {
constexpr std::array<const char*, kNumTernaryKinds> kTernaryNames = {"clamp", "fma", "addcmul", "addcdiv"};
std::size_t hash_double(std::size_t h, double v) { return detail::hash_combine(h, std::hash<double>{}(v)); }
using elementwise::number_text;
}  // namespace

const char* ternary_kind_name(TernaryKind k) noexcept {
  const auto i = static_cast<std::size_t>(k);
  return i < kTernaryNames.size() ? kTernaryNames[i] : "unknown";
}
std::optional<TernaryKind> parse_ternary_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kTernaryNames.size(); ++i)
    if (name == kTernaryNames[i]) return static_cast<TernaryKind>(i);
  return std::nullopt;
}

std::size_t TernaryDescriptor::hash() const noexcept {
  std::size_t h = hash_double(static_cast<std::size_t>(kind), value);
  for (const auto* t : {&a, &b, &c, &out}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string TernaryDescriptor::to_string() const {
  std::string s = std::string(ternary_kind_name(kind)) + "(";
  if (kind == TernaryKind::kAddcmul || kind == TernaryKind::kAddcdiv) s += "value=" + number_text(value) + ", ";
  return s + "a=" + a.to_string() + ", b=" + b.to_string() + ", c=" + c.to_string() + ", out=" + out.to_string() + ")";
}
std::size_t TernaryBackwardDescriptor::hash() const noexcept {
  std::size_t h = hash_double(static_cast<std::size_t>(kind), value);
  for (const auto* t : {&grad_out, &a, &b, &c, &grad_a, &grad_b, &grad_c}) h = detail::hash_combine(h, t->hash());
  return detail::hash_combine(h, (compute_grad_a ? 1u : 0u) | (compute_grad_b ? 2u : 0u) | (compute_grad_c ? 4u : 0u));
}
std::string TernaryBackwardDescriptor::to_string() const {
  std::string s = std::string(ternary_kind_name(kind)) + "_backward(";
  if (kind == TernaryKind::kAddcmul || kind == TernaryKind::kAddcdiv) s += "value=" + number_text(value) + ", ";
  s += "grad_out=" + grad_out.to_string() + ", a=" + a.to_string() + ", b=" + b.to_string() + ", c=" + c.to_string();
  if (compute_grad_a) s += ", grad_a=" + grad_a.to_string();
  if (compute_grad_b) s += ", grad_b=" + grad_b.to_string();
  if (compute_grad_c) s += ", grad_c=" + grad_c.to_string();
  return s + ")";
}
std::size_t AffineDescriptor::hash() const noexcept {
  return detail::hash_combine(detail::hash_combine(hash_double(hash_double(0, alpha), beta), x.hash()), y.hash());
}
std::string AffineDescriptor::to_string() const {
  return "affine(alpha=" + number_text(alpha) + ", beta=" + number_text(beta) + ", x=" + x.to_string() + ", y=" + y.to_string() + ")";
}

namespace elementwise {
namespace {

bool is_floating(DType t) { return dtype_in_classes(t, true, false, false); }
bool is_integer(DType t) { return dtype_in_classes(t, false, true, false); }
DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : (is_floating(t) ? DType::kF32 : t); }

KernelSku ternary_sku(const char* family, DType t, Direction dir) {
  KernelSku s;
  s.family = family;
  s.direction = dir;
  s.in = s.out = t;
  s.compute = s.precision.accumulator = compute_of(t);
  return s;
}

Status check_kind(TernaryKind k) {
  if (static_cast<unsigned>(k) >= static_cast<unsigned>(kNumTernaryKinds))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(k)) + " is not a TernaryKind");
  return Status::ok();
}

Status check_value(TernaryKind k, double value) {
  if ((k == TernaryKind::kAddcmul || k == TernaryKind::kAddcdiv) && !std::isfinite(value))
    return Status(Code::kInvalidArgument, "value = " + number_text(value) + " is not finite (kind " + ternary_kind_name(k) + ")");
  return Status::ok();
}

// clamp: floating and integer dtypes; the other kinds floating.
Status check_ternary_dtype(TernaryKind k, const TensorLayout& a, const char* family) {
  const bool integer = k == TernaryKind::kClamp;
  if (dtype_in_classes(a.dtype, true, integer, false)) return Status::ok();
  return Status(Code::kInvalidArgument, "a.dtype = " + std::string(dtype_name(a.dtype)) + " is not supported by " + family +
                                            " kind " + ternary_kind_name(k) + " (" + dtype_class_list(true, integer, false) + ")");
}

// out's shape must be broadcast(a, b, c).
Status check_broadcast3(const TensorLayout& a, const char* fa, const TensorLayout& b, const char* fb,
                        const TensorLayout& c, const char* fc, const TensorLayout& out, const char* fout) {
  auto ab = broadcast_shape(a, b, fa, fb);
  if (!ab) return ab.error();
  auto abc = broadcast_shape(ab.value(), c, "broadcast(a, b)", fc);
  if (!abc) return abc.error();
  return check_same_shape(out, fout, abc.value(), "the broadcast shape of the inputs");
}

struct TernarySpec {
  static MapOperands operands(const TernaryDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 3;
    o.out[0] = {d.out, "out", d.out.alignment};
    o.in[0] = {broadcast_or_self(d.a, d.out), "a", d.a.alignment};
    o.in[1] = {broadcast_or_self(d.b, d.out), "b", d.b.alignment};
    o.in[2] = {broadcast_or_self(d.c, d.out), "c", d.c.alignment};
    return o;
  }
  static KernelSku sku(const TernaryDescriptor& d) { return ternary_sku("ternary", d.a.dtype, Direction::kForward); }
  static int fp8_mode(const TernaryDescriptor&) { return 0; }
  static MapPointers pointers(const TernaryArgs& a) {
    MapPointers p;
    p.out[0] = a.out;
    p.in[0] = a.a;
    p.in[1] = a.b;
    p.in[2] = a.c;
    return p;
  }
  static Status launch(const TernaryDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_ternary_fwd(d.a.dtype, d.kind, d.value, p, s);
  }
};

struct AffineSpec {
  static MapOperands operands(const AffineDescriptor& d) {
    MapOperands o;
    o.num_out = o.num_in = 1;
    o.out[0] = {d.y, "y", d.y.alignment};
    o.in[0] = {broadcast_or_self(d.x, d.y), "x", d.x.alignment};
    return o;
  }
  static KernelSku sku(const AffineDescriptor& d) { return ternary_sku("affine", d.x.dtype, Direction::kForward); }
  static int fp8_mode(const AffineDescriptor&) { return 0; }
  static MapPointers pointers(const AffineArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    p.in[0] = a.x;
    return p;
  }
  static Status launch(const AffineDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_affine(d.x.dtype, d.alpha, d.beta, p, s);
  }
};

// ---------------------------------------------------------------- backward
// Which forward operands a kind's gradients read (the others may be null).
bool grad_reads(TernaryKind k, int operand) {
  switch (k) {
    case TernaryKind::kClamp: return true;
    case TernaryKind::kFma: return operand != 2;
    default: return operand != 0;
  }
}

bool computes(const TernaryBackwardDescriptor& d, int which) {
  return which == 0 ? d.compute_grad_a : (which == 1 ? d.compute_grad_b : d.compute_grad_c);
}
const TensorLayout& operand_of(const TernaryBackwardDescriptor& d, int which) {
  return which == 0 ? d.a : (which == 1 ? d.b : d.c);
}
const TensorLayout& grad_of(const TernaryBackwardDescriptor& d, int which) {
  return which == 0 ? d.grad_a : (which == 1 ? d.grad_b : d.grad_c);
}
constexpr const char* kOperandField[3] = {"a", "b", "c"};
constexpr const char* kGradField[3] = {"grad_a", "grad_b", "grad_c"};

// The map of one gradient: in = grad_out, a, b, c (an operand the kind does not read is
// replaced by grad_out, so the kernel never dereferences a null pointer).
MapOperands grad_inputs(const TernaryBackwardDescriptor& d) {
  MapOperands o;
  o.num_in = 4;
  o.in[0] = {d.grad_out, "grad_out", d.grad_out.alignment};
  for (int k = 0; k < 3; ++k) {
    const TensorLayout& t = operand_of(d, k);
    o.in[k + 1] = grad_reads(d.kind, k) ? MapOperand{broadcast_or_self(t, d.grad_out), kOperandField[k], t.alignment}
                                        : o.in[0];
  }
  return o;
}
MapPointers grad_input_pointers(const TernaryBackwardDescriptor& d, const TernaryBackwardArgs& a) {
  MapPointers p;
  p.in[0] = a.grad_out;
  const void* ops[3] = {a.a, a.b, a.c};
  for (int k = 0; k < 3; ++k) p.in[k + 1] = grad_reads(d.kind, k) ? ops[k] : a.grad_out;
  return p;
}

GradPasses ternary_passes(const TernaryBackwardDescriptor& d, MapPath path, const DeviceCaps& caps) {
  std::array<GradRequest, 3> req;
  int n = 0;
  for (int k = 0; k < 3; ++k)
    if (computes(d, k)) req[static_cast<std::size_t>(n++)] = {k, operand_of(d, k), grad_of(d, k), kGradField[k], grad_inputs(d)};
  return plan_grad_passes(d.grad_out, std::span(req.data(), static_cast<std::size_t>(n)), compute_of(d.grad_out.dtype), path,
                          caps);
}

std::array<MapPointers, 3> ternary_pass_pointers(const TernaryBackwardDescriptor& d, const TernaryBackwardArgs& a,
                                                 int* count) {
  std::array<MapPointers, 3> ptrs;
  void* grads[3] = {a.grad_a, a.grad_b, a.grad_c};
  int n = 0;
  for (int k = 0; k < 3; ++k)
    if (computes(d, k)) {
      MapPointers p = grad_input_pointers(d, a);
      p.out[0] = grads[k];
      ptrs[static_cast<std::size_t>(n++)] = p;
    }
  *count = n;
  return ptrs;
}

template <MapPath P>
struct TernaryBackwardCandidate {
  using Desc = TernaryBackwardDescriptor;
  using Args = TernaryBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = ternary_sku("ternary", d.grad_out.dtype, Direction::kBackward);
    pr.sku.impl = map_path_impl(P);
    const GradPasses g = ternary_passes(d, P, caps);
    pr.rejection = g.rejection;
    pr.workspace_bytes = g.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<GradPasses>(ternary_passes(d, P, caps)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    const auto& g = *static_cast<const GradPasses*>(state);
    int n = 0;
    const auto ptrs = ternary_pass_pointers(d, a, &n);
    return run_grad_passes(g, std::span(ptrs.data(), static_cast<std::size_t>(n)), ws, s,
                           [&](int which, bool to_buffer, const MapParams& p) {
                             return launch_ternary_grad(d.grad_out.dtype, d.kind, which, d.value, to_buffer, p, s);
                           },
                           [&](std::span<const int> which, const MapParams& p) {
                             return launch_ternary_grads(d.grad_out.dtype, d.kind, which, d.value, p, s);
                           });
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

// Every operand of the backward for the pointer checks: gradients that need a reduction keep
// their own layout (and so can never pass as in-place aliases of an input).
MapOperands all_operands(const TernaryBackwardDescriptor& d) {
  MapOperands o = grad_inputs(d);
  for (int k = 0; k < 3; ++k)
    if (computes(d, k)) {
      const TensorLayout& g = grad_of(d, k);
      o.out[static_cast<std::size_t>(o.num_out++)] = {
          grad_needs_reduction(operand_of(d, k), d.grad_out) ? g : broadcast_or_self(g, d.grad_out), kGradField[k],
          g.alignment};
    }
  return o;
}
MapPointers all_pointers(const TernaryBackwardDescriptor& d, const TernaryBackwardArgs& a) {
  MapPointers p = grad_input_pointers(d, a);
  void* grads[3] = {a.grad_a, a.grad_b, a.grad_c};
  int n = 0;
  for (int k = 0; k < 3; ++k)
    if (computes(d, k)) p.out[static_cast<std::size_t>(n++)] = grads[k];
  return p;
}

using TernaryBwdCandidate = Candidate<TernaryBackwardDescriptor, TernaryBackwardArgs>;
constexpr std::array<TernaryBwdCandidate, 3> kTernaryBackwardCandidates = {
    TernaryBackwardCandidate<MapPath::kVecContig>::make(),
    TernaryBackwardCandidate<MapPath::kStrided32>::make(),
    TernaryBackwardCandidate<MapPath::kStrided64>::make(),
};

Status check_integral_scalar(const char* field, double v) {
  if (!std::isfinite(v) || v != std::trunc(v) || std::fabs(v) > 9007199254740992.0)
    return Status(Code::kInvalidArgument, std::string(field) + " = " + number_text(v) +
                                              " must be an integer of magnitude <= 2^53 for an integer dtype");
  return Status::ok();
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<TernaryDescriptor>
    : elementwise::MapFamilyTraits<elementwise::TernarySpec, TernaryDescriptor, TernaryArgs> {
  using Spec = elementwise::TernarySpec;
  static constexpr const char* kFamily = "ternary";
  static Status validate(const TernaryDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(elementwise::check_value(d.kind, d.value));
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(validate_layout(d.c, "c"));
    BARACUDA_TRY(validate_layout(d.out, "out"));
    BARACUDA_TRY(elementwise::check_ternary_dtype(d.kind, d.a, kFamily));
    BARACUDA_TRY(elementwise::check_same_dtype(d.b, "b", d.a, "a"));
    BARACUDA_TRY(elementwise::check_same_dtype(d.c, "c", d.a, "a"));
    BARACUDA_TRY(elementwise::check_same_dtype(d.out, "out", d.a, "a"));
    BARACUDA_TRY(elementwise::check_broadcast3(d.a, "a", d.b, "b", d.c, "c", d.out, "out"));
    return elementwise::check_output_layout(d.out, "out");
  }
};

template <>
struct FamilyTraits<TernaryBackwardDescriptor> {
  static constexpr const char* kFamily = "ternary_backward";
  static Status validate(const TernaryBackwardDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(check_kind(d.kind));
    BARACUDA_TRY(check_value(d.kind, d.value));
    BARACUDA_TRY(validate_layout(d.grad_out, "grad_out"));
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(validate_layout(d.c, "c"));
    BARACUDA_TRY(check_math_dtype(d.grad_out, "grad_out", kFamily));
    for (int k = 0; k < 3; ++k) BARACUDA_TRY(check_same_dtype(operand_of(d, k), kOperandField[k], d.grad_out, "grad_out"));
    BARACUDA_TRY(check_broadcast3(d.a, "a", d.b, "b", d.c, "c", d.grad_out, "grad_out"));
    for (int k = 0; k < 3; ++k) {
      if (!computes(d, k)) continue;
      const TensorLayout& g = grad_of(d, k);
      BARACUDA_TRY(validate_layout(g, kGradField[k]));
      BARACUDA_TRY(check_same_dtype(g, kGradField[k], d.grad_out, "grad_out"));
      BARACUDA_TRY(check_same_shape(g, kGradField[k], operand_of(d, k), kOperandField[k]));
      BARACUDA_TRY(check_output_layout(g, kGradField[k]));
    }
    return Status::ok();
  }
  static std::span<const Candidate<TernaryBackwardDescriptor, TernaryBackwardArgs>> candidates() {
    return elementwise::kTernaryBackwardCandidates;
  }
  static Status check_args(const TernaryBackwardDescriptor& d, const TernaryBackwardArgs& a) {
    using namespace elementwise;
    BARACUDA_TRY(check_map_pointers(all_operands(d), all_pointers(d, a)));
    int n = 0;
    const auto ptrs = ternary_pass_pointers(d, a, &n);
    // The aliasing rule depends only on pointers and layouts, not on the SKU.
    const GradPasses g = ternary_passes(d, MapPath::kStrided64, DeviceCaps{});
    return check_grad_aliasing(g, std::span(ptrs.data(), static_cast<std::size_t>(n)));
  }
};

template <>
struct FamilyTraits<AffineDescriptor>
    : elementwise::MapFamilyTraits<elementwise::AffineSpec, AffineDescriptor, AffineArgs> {
  using Spec = elementwise::AffineSpec;
  static constexpr const char* kFamily = "affine";
  static Status validate(const AffineDescriptor& d) {
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    const DType t = d.x.dtype;
    if (!elementwise::dtype_in_classes(t, true, true, false))
      return Status(Code::kInvalidArgument, "x.dtype = " + std::string(dtype_name(t)) + " is not supported by affine (" +
                                                elementwise::dtype_class_list(true, true, false) + ")");
    BARACUDA_TRY(elementwise::check_same_dtype(d.y, "y", d.x, "x"));
    if (elementwise::is_integer(t)) {
      BARACUDA_TRY(elementwise::check_integral_scalar("alpha", d.alpha));
      BARACUDA_TRY(elementwise::check_integral_scalar("beta", d.beta));
    } else {
      if (!std::isfinite(d.alpha)) return Status(Code::kInvalidArgument, "alpha = " + number_text(d.alpha) + " is not finite");
      if (!std::isfinite(d.beta)) return Status(Code::kInvalidArgument, "beta = " + number_text(d.beta) + " is not finite");
    }
    auto b = broadcast_to(d.x, d.y.rank, d.y.shape, "x");
    if (!b) return b.error();
    return elementwise::check_output_layout(d.y, "y");
  }
};

template class Plan<TernaryDescriptor, TernaryArgs>;
template class Plan<TernaryBackwardDescriptor, TernaryBackwardArgs>;
template class Plan<AffineDescriptor, AffineArgs>;

}  // namespace baracuda
