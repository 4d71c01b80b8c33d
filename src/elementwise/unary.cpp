// UnaryPlan and UnaryBackwardPlan: descriptors, validation and candidate tables.
#include <array>
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

namespace {
constexpr std::array<const char*, kNumUnaryKinds> kUnaryNames = {"relu", "gelu_erf", "gelu_tanh", "silu", "exp"};
}

const char* unary_kind_name(UnaryKind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < kUnaryNames.size() ? kUnaryNames[i] : "unknown";
}

std::optional<UnaryKind> parse_unary_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kUnaryNames.size(); ++i)
    if (name == kUnaryNames[i]) return static_cast<UnaryKind>(i);
  if (name == "gelu") return UnaryKind::kGeluErf;
  return std::nullopt;
}

std::size_t UnaryDescriptor::hash() const noexcept {
  return detail::hash_combine(detail::hash_combine(static_cast<std::size_t>(kind), x.hash()), y.hash());
}
std::string UnaryDescriptor::to_string() const {
  return std::string(unary_kind_name(kind)) + "(x=" + x.to_string() + ", y=" + y.to_string() + ")";
}
std::size_t UnaryBackwardDescriptor::hash() const noexcept {
  return detail::hash_combine(
      detail::hash_combine(detail::hash_combine(static_cast<std::size_t>(kind), grad_out.hash()), x.hash()),
      grad_in.hash());
}
std::string UnaryBackwardDescriptor::to_string() const {
  return std::string(unary_kind_name(kind)) + "_backward(grad_out=" + grad_out.to_string() + ", x=" + x.to_string() +
         ", grad_in=" + grad_in.to_string() + ")";
}

namespace elementwise {
namespace {

struct UnarySpec {
  static MapOperands operands(const UnaryDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 1;
    o.out[0] = {d.y, "y", d.y.alignment};
    o.in[0] = {broadcast_or_self(d.x, d.y), "x", d.x.alignment};
    return o;
  }
  static KernelSku sku(const UnaryDescriptor& d) {
    KernelSku s;
    s.family = "unary";
    s.direction = Direction::kForward;
    s.in = s.out = d.x.dtype;
    s.compute = s.precision.accumulator = d.x.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
    return s;
  }
  static int fp8_mode(const UnaryDescriptor&) { return 0; }
  static MapPointers pointers(const UnaryArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    p.in[0] = a.x;
    return p;
  }
  static Status launch(const UnaryDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_unary_fwd(d.x.dtype, d.kind, p, s);
  }
};

struct UnaryBackwardSpec {
  static MapOperands operands(const UnaryBackwardDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.grad_in, "grad_in", d.grad_in.alignment};
    o.in[0] = {d.grad_out, "grad_out", d.grad_out.alignment};
    o.in[1] = {d.x, "x", d.x.alignment};
    return o;
  }
  static KernelSku sku(const UnaryBackwardDescriptor& d) {
    KernelSku s = UnarySpec::sku(UnaryDescriptor{d.kind, d.x, d.grad_in});
    s.direction = Direction::kBackward;
    return s;
  }
  static int fp8_mode(const UnaryBackwardDescriptor&) { return 0; }
  static MapPointers pointers(const UnaryBackwardArgs& a) {
    MapPointers p;
    p.out[0] = a.grad_in;
    p.in[0] = a.grad_out;
    p.in[1] = a.x;
    return p;
  }
  static Status launch(const UnaryBackwardDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_unary_bwd(d.x.dtype, d.kind, p, s);
  }
};

Status check_kind(UnaryKind k) {
  if (static_cast<unsigned>(k) >= static_cast<unsigned>(kNumUnaryKinds))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(k)) + " is not a UnaryKind");
  return Status::ok();
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<UnaryDescriptor> {
  using Spec = elementwise::UnarySpec;
  static constexpr const char* kFamily = "unary";
  static Status validate(const UnaryDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    BARACUDA_TRY(elementwise::check_math_dtype(d.x, "x", kFamily));
    BARACUDA_TRY(elementwise::check_same_dtype(d.y, "y", d.x, "x"));
    auto b = broadcast_to(d.x, d.y.rank, d.y.shape, "x");
    if (!b) return b.error();
    return elementwise::check_output_layout(d.y, "y");
  }
  static std::span<const Candidate<UnaryDescriptor, UnaryArgs>> candidates() {
    return elementwise::kMapCandidates<Spec, UnaryDescriptor, UnaryArgs>;
  }
  static Status check_args(const UnaryDescriptor& d, const UnaryArgs& a) {
    return elementwise::check_map_pointers(Spec::operands(d), Spec::pointers(a));
  }
};

template <>
struct FamilyTraits<UnaryBackwardDescriptor> {
  using Spec = elementwise::UnaryBackwardSpec;
  static constexpr const char* kFamily = "unary_backward";
  static Status validate(const UnaryBackwardDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(validate_layout(d.grad_out, "grad_out"));
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.grad_in, "grad_in"));
    BARACUDA_TRY(elementwise::check_math_dtype(d.x, "x", kFamily));
    BARACUDA_TRY(elementwise::check_same_dtype(d.grad_out, "grad_out", d.x, "x"));
    BARACUDA_TRY(elementwise::check_same_dtype(d.grad_in, "grad_in", d.x, "x"));
    BARACUDA_TRY(elementwise::check_same_shape(d.grad_out, "grad_out", d.grad_in, "grad_in"));
    BARACUDA_TRY(elementwise::check_same_shape(d.x, "x", d.grad_in, "grad_in"));
    return elementwise::check_output_layout(d.grad_in, "grad_in");
  }
  static std::span<const Candidate<UnaryBackwardDescriptor, UnaryBackwardArgs>> candidates() {
    return elementwise::kMapCandidates<Spec, UnaryBackwardDescriptor, UnaryBackwardArgs>;
  }
  static Status check_args(const UnaryBackwardDescriptor& d, const UnaryBackwardArgs& a) {
    return elementwise::check_map_pointers(Spec::operands(d), Spec::pointers(a));
  }
};

template class Plan<UnaryDescriptor, UnaryArgs>;
template class Plan<UnaryBackwardDescriptor, UnaryBackwardArgs>;

}  // namespace baracuda
