// UnaryPlan and UnaryBackwardPlan: descriptors, validation and candidate tables.
#include <array>
#include <cmath>
#include <functional>
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

namespace {
// name, floating, integer, boolean, to_bool, differentiable, parametric, plain
constexpr bool F = false, T = true;
constexpr std::array<UnaryKindInfo, kNumUnaryKinds> kUnaryInfo = {{
    {"neg", T, T, F, F, T, F, T},        {"abs", T, T, F, F, T, F, T},         {"sign", T, T, F, F, T, F, T},
    {"reciprocal", T, F, F, F, T, F, T}, {"square", T, F, F, F, T, F, T},      {"cube", T, F, F, F, T, F, T},
    {"sqrt", T, F, F, F, T, F, T},       {"rsqrt", T, F, F, F, T, F, T},       {"cbrt", T, F, F, F, T, F, T},
    {"exp", T, F, F, F, T, F, T},        {"exp2", T, F, F, F, T, F, T},        {"expm1", T, F, F, F, T, F, T},
    {"log", T, F, F, F, T, F, T},        {"log2", T, F, F, F, T, F, T},        {"log10", T, F, F, F, T, F, T},
    {"log1p", T, F, F, F, T, F, T},      {"sin", T, F, F, F, T, F, T},         {"cos", T, F, F, F, T, F, T},
    {"tan", T, F, F, F, T, F, T},        {"asin", T, F, F, F, T, F, T},        {"acos", T, F, F, F, T, F, T},
    {"atan", T, F, F, F, T, F, T},       {"sinh", T, F, F, F, T, F, T},        {"cosh", T, F, F, F, T, F, T},
    {"tanh", T, F, F, F, T, F, T},       {"asinh", T, F, F, F, T, F, T},       {"acosh", T, F, F, F, T, F, T},
    {"atanh", T, F, F, F, T, F, T},      {"floor", T, F, F, F, T, F, T},       {"ceil", T, F, F, F, T, F, T},
    {"round", T, F, F, F, T, F, T},      {"trunc", T, F, F, F, T, F, T},       {"frac", T, F, F, F, T, F, T},
    {"erf", T, F, F, F, T, F, T},        {"erfc", T, F, F, F, T, F, T},        {"erfinv", T, F, F, F, T, F, T},
    {"lgamma", T, F, F, F, T, F, T},     {"digamma", T, F, F, F, T, F, T},     {"relu", T, F, F, F, T, F, T},
    {"relu6", T, F, F, F, T, F, T},      {"gelu_erf", T, F, F, F, T, F, T},    {"gelu_tanh", T, F, F, F, T, F, T},
    {"silu", T, F, F, F, T, F, T},       {"mish", T, F, F, F, T, F, T},        {"sigmoid", T, F, F, F, T, F, T},
    {"logit", T, F, F, F, T, T, T},      {"softplus", T, F, F, F, T, T, T},    {"softsign", T, F, F, F, T, F, T},
    {"tanhshrink", T, F, F, F, T, F, T}, {"hardswish", T, F, F, F, T, F, T},   {"hardsigmoid", T, F, F, F, T, F, T},
    {"hardtanh", T, F, F, F, T, T, T},   {"selu", T, F, F, F, T, F, T},        {"celu", T, F, F, F, T, T, T},
    {"elu", T, F, F, F, T, T, T},        {"leaky_relu", T, F, F, F, T, T, T},  {"hardshrink", T, F, F, F, T, T, T},
    {"softshrink", T, F, F, F, T, T, T}, {"step", T, F, F, F, T, F, T},        {"logical_not", T, T, T, T, F, F, T},
    {"bitwise_not", F, T, T, F, F, F, T}, {"isnan", T, F, F, T, F, F, T},      {"isinf", T, F, F, T, F, F, T},
    {"isfinite", T, F, F, T, F, F, T},   {"nan_to_num", T, F, F, F, T, T, T},  {"popcount", F, T, F, F, F, F, T},
    {"clz", F, T, F, F, F, F, T},        {"threshold", T, F, F, F, T, T, F},   {"pow", T, F, F, F, T, T, F},
}};
constexpr UnaryKindInfo kUnknownKind = {"unknown", F, F, F, F, F, F, F};
}  // namespace

const UnaryKindInfo& unary_kind_info(UnaryKind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < kUnaryInfo.size() ? kUnaryInfo[i] : kUnknownKind;
}

const char* unary_kind_name(UnaryKind k) noexcept { return unary_kind_info(k).name; }

std::optional<UnaryKind> parse_unary_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kUnaryInfo.size(); ++i)
    if (name == kUnaryInfo[i].name) return static_cast<UnaryKind>(i);
  if (name == "gelu") return UnaryKind::kGeluErf;
  return std::nullopt;
}

UnaryParams default_unary_params(UnaryKind k, DType t) noexcept {
  switch (k) {
    case UnaryKind::kLeakyRelu: return {0.01, 0, 0};
    case UnaryKind::kElu:
    case UnaryKind::kCelu: return {1, 0, 0};
    case UnaryKind::kHardtanh: return {-1, 1, 0};
    case UnaryKind::kSoftplus: return {1, 20, 0};
    case UnaryKind::kHardshrink:
    case UnaryKind::kSoftshrink: return {0.5, 0, 0};
    case UnaryKind::kLogit: return {-1, 0, 0};
    case UnaryKind::kNanToNum: {
      const double big = t == DType::kF64   ? 1.7976931348623157e308
                         : t == DType::kF16 ? 65504.0
                         : t == DType::kBF16 ? 3.3895313892515355e38
                                             : 3.4028234663852886e38;
      return {0, big, -big};
    }
    default: return {};
  }
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

std::size_t UnaryParamDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(static_cast<std::size_t>(kind), std::hash<double>{}(params.a));
  h = detail::hash_combine(detail::hash_combine(h, std::hash<double>{}(params.b)), std::hash<double>{}(params.c));
  return detail::hash_combine(detail::hash_combine(h, x.hash()), y.hash());
}
std::string UnaryParamDescriptor::to_string() const {
  return std::string(unary_kind_name(kind)) + "(a=" + std::to_string(params.a) + ", b=" + std::to_string(params.b) +
         ", c=" + std::to_string(params.c) + ", x=" + x.to_string() + ", y=" + y.to_string() + ")";
}
std::size_t UnaryParamBackwardDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(static_cast<std::size_t>(kind), std::hash<double>{}(params.a));
  h = detail::hash_combine(detail::hash_combine(h, std::hash<double>{}(params.b)), std::hash<double>{}(params.c));
  return detail::hash_combine(detail::hash_combine(detail::hash_combine(h, grad_out.hash()), x.hash()), grad_in.hash());
}
std::string UnaryParamBackwardDescriptor::to_string() const {
  return std::string(unary_kind_name(kind)) + "_backward(a=" + std::to_string(params.a) + ", b=" + std::to_string(params.b) +
         ", c=" + std::to_string(params.c) + ", grad_out=" + grad_out.to_string() + ", x=" + x.to_string() +
         ", grad_in=" + grad_in.to_string() + ")";
}

namespace elementwise {
namespace {

UnaryParams params_of(const UnaryDescriptor& d) { return default_unary_params(d.kind, d.y.dtype); }
UnaryParams params_of(const UnaryParamDescriptor& d) { return d.params; }
UnaryParams params_of(const UnaryBackwardDescriptor& d) { return default_unary_params(d.kind, d.grad_in.dtype); }
UnaryParams params_of(const UnaryParamBackwardDescriptor& d) { return d.params; }

bool is_floating(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }
DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : (is_floating(t) ? DType::kF32 : t); }

// y = f(x): y and x (broadcast to y's shape).
template <class Desc>
struct UnaryFwdSpec {
  static MapOperands operands(const Desc& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 1;
    o.out[0] = {d.y, "y", d.y.alignment};
    o.in[0] = {broadcast_or_self(d.x, d.y), "x", d.x.alignment};
    return o;
  }
  static KernelSku sku(const Desc& d) {
    KernelSku s;
    s.family = "unary";
    s.direction = Direction::kForward;
    s.in = d.x.dtype;
    s.out = d.y.dtype;
    s.compute = s.precision.accumulator = compute_of(d.x.dtype);
    return s;
  }
  static int fp8_mode(const Desc&) { return 0; }
  static MapPointers pointers(const UnaryArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    p.in[0] = a.x;
    return p;
  }
  static Status launch(const Desc& d, const MapParams& p, cudaStream_t s) {
    return launch_unary_fwd(d.x.dtype, d.kind, params_of(d), p, s);
  }
};

// grad_in = g * f'(x): grad_in, then grad_out and x.
template <class Desc>
struct UnaryBwdSpec {
  static MapOperands operands(const Desc& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.grad_in, "grad_in", d.grad_in.alignment};
    o.in[0] = {d.grad_out, "grad_out", d.grad_out.alignment};
    o.in[1] = {d.x, "x", d.x.alignment};
    return o;
  }
  static KernelSku sku(const Desc& d) {
    KernelSku s;
    s.family = "unary";
    s.direction = Direction::kBackward;
    s.in = s.out = d.x.dtype;
    s.compute = s.precision.accumulator = compute_of(d.x.dtype);
    return s;
  }
  static int fp8_mode(const Desc&) { return 0; }
  static MapPointers pointers(const UnaryBackwardArgs& a) {
    MapPointers p;
    p.out[0] = a.grad_in;
    p.in[0] = a.grad_out;
    p.in[1] = a.x;
    return p;
  }
  static Status launch(const Desc& d, const MapParams& p, cudaStream_t s) {
    return launch_unary_bwd(d.x.dtype, d.kind, params_of(d), p, s);
  }
};

Status check_kind(UnaryKind k) {
  if (static_cast<unsigned>(k) >= static_cast<unsigned>(kNumUnaryKinds))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(k)) + " is not a UnaryKind");
  return Status::ok();
}

// x's dtype must be one the kind runs on; y's is x's, or bool for the predicates.
Status check_kind_dtypes(UnaryKind k, const TensorLayout& x, const TensorLayout& y) {
  const UnaryKindInfo& i = unary_kind_info(k);
  return check_dtypes_of_kind(KindDtypes{"unary", i.name, i.floating, i.integer, i.boolean, i.to_bool}, x, "x", y, "y");
}

Status check_params(UnaryKind k, const UnaryParams& p) {
  const UnaryKindInfo& info = unary_kind_info(k);
  if (!info.parametric)
    return Status(Code::kInvalidArgument,
                  std::string("kind = ") + info.name + " takes no parameters (UnaryParamPlan takes threshold, leaky_relu, elu, "
                                                       "celu, hardtanh, softplus, pow, hardshrink, softshrink, nan_to_num, logit)");
  auto bad = [&](const char* field, double v, const char* why) {
    return Status(Code::kInvalidArgument,
                  std::string("params.") + field + " = " + std::to_string(v) + " " + why + " (kind " + info.name + ")");
  };
  if (k != UnaryKind::kNanToNum) {
    if (!std::isfinite(p.a)) return bad("a", p.a, "is not finite");
    if (!std::isfinite(p.b)) return bad("b", p.b, "is not finite");
  }
  if (k == UnaryKind::kCelu && p.a == 0) return bad("a", p.a, "(alpha) must not be 0");
  if (k == UnaryKind::kSoftplus && p.a == 0) return bad("a", p.a, "(beta) must not be 0");
  if (k == UnaryKind::kSoftshrink && p.a < 0) return bad("a", p.a, "(lambda) must be >= 0");
  if (k == UnaryKind::kHardtanh && p.a > p.b) return bad("a", p.a, "(min_val) must be <= params.b (max_val)");
  if (k == UnaryKind::kLogit && p.a >= 0.5) return bad("a", p.a, "(eps) must be < 0.5 (or < 0 for none)");
  return Status::ok();
}

template <class Desc>
Status validate_fwd(const Desc& d) {
  BARACUDA_TRY(check_kind(d.kind));
  BARACUDA_TRY(validate_layout(d.x, "x"));
  BARACUDA_TRY(validate_layout(d.y, "y"));
  BARACUDA_TRY(check_kind_dtypes(d.kind, d.x, d.y));
  auto b = broadcast_to(d.x, d.y.rank, d.y.shape, "x");
  if (!b) return b.error();
  return check_output_layout(d.y, "y");
}

template <class Desc>
Status validate_bwd(const Desc& d, const char* family) {
  BARACUDA_TRY(check_kind(d.kind));
  BARACUDA_TRY(validate_layout(d.grad_out, "grad_out"));
  BARACUDA_TRY(validate_layout(d.x, "x"));
  BARACUDA_TRY(validate_layout(d.grad_in, "grad_in"));
  const UnaryKindInfo& info = unary_kind_info(d.kind);
  if (!info.differentiable)
    return Status(Code::kInvalidArgument, std::string("kind = ") + info.name + " has no backward (not differentiable)");
  BARACUDA_TRY(check_math_dtype(d.x, "x", family));
  BARACUDA_TRY(check_same_dtype(d.grad_out, "grad_out", d.x, "x"));
  BARACUDA_TRY(check_same_dtype(d.grad_in, "grad_in", d.x, "x"));
  BARACUDA_TRY(check_same_shape(d.grad_out, "grad_out", d.grad_in, "grad_in"));
  BARACUDA_TRY(check_same_shape(d.x, "x", d.grad_in, "grad_in"));
  return check_output_layout(d.grad_in, "grad_in");
}

Status check_plain(UnaryKind k) {
  if (!unary_kind_info(k).plain)
    return Status(Code::kInvalidArgument,
                  std::string("kind = ") + unary_kind_name(k) + " needs parameters: use UnaryParamPlan / UnaryParamBackwardPlan");
  return Status::ok();
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<UnaryDescriptor>
    : elementwise::MapFamilyTraits<elementwise::UnaryFwdSpec<UnaryDescriptor>, UnaryDescriptor, UnaryArgs> {
  using Spec = elementwise::UnaryFwdSpec<UnaryDescriptor>;
  static constexpr const char* kFamily = "unary";
  static Status validate(const UnaryDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(elementwise::check_plain(d.kind));
    return elementwise::validate_fwd(d);
  }
};

template <>
struct FamilyTraits<UnaryBackwardDescriptor>
    : elementwise::MapFamilyTraits<elementwise::UnaryBwdSpec<UnaryBackwardDescriptor>, UnaryBackwardDescriptor, UnaryBackwardArgs> {
  using Spec = elementwise::UnaryBwdSpec<UnaryBackwardDescriptor>;
  static constexpr const char* kFamily = "unary_backward";
  static Status validate(const UnaryBackwardDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(elementwise::check_plain(d.kind));
    return elementwise::validate_bwd(d, kFamily);
  }
};

template <>
struct FamilyTraits<UnaryParamDescriptor>
    : elementwise::MapFamilyTraits<elementwise::UnaryFwdSpec<UnaryParamDescriptor>, UnaryParamDescriptor, UnaryArgs> {
  using Spec = elementwise::UnaryFwdSpec<UnaryParamDescriptor>;
  static constexpr const char* kFamily = "unary_param";
  static Status validate(const UnaryParamDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(elementwise::check_params(d.kind, d.params));
    return elementwise::validate_fwd(d);
  }
};

template <>
struct FamilyTraits<UnaryParamBackwardDescriptor>
    : elementwise::MapFamilyTraits<elementwise::UnaryBwdSpec<UnaryParamBackwardDescriptor>, UnaryParamBackwardDescriptor, UnaryBackwardArgs> {
  using Spec = elementwise::UnaryBwdSpec<UnaryParamBackwardDescriptor>;
  static constexpr const char* kFamily = "unary_param_backward";
  static Status validate(const UnaryParamBackwardDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(elementwise::check_params(d.kind, d.params));
    return elementwise::validate_bwd(d, kFamily);
  }
};

template class Plan<UnaryDescriptor, UnaryArgs>;
template class Plan<UnaryBackwardDescriptor, UnaryBackwardArgs>;
template class Plan<UnaryParamDescriptor, UnaryArgs>;
template class Plan<UnaryParamBackwardDescriptor, UnaryBackwardArgs>;

}  // namespace baracuda
