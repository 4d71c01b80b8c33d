// BinaryCmpPlan: out = a (cmp) b as bool (eq, ne, lt, le, gt, ge, isclose) on every real
// dtype, with broadcasting. One run-time-op kernel per input dtype on every map path.
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
constexpr std::array<const char*, kNumBinaryCmpKinds> kCmpNames = {"eq", "ne", "lt", "le", "gt", "ge", "isclose"};
}

const char* binary_cmp_kind_name(BinaryCmpKind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < kCmpNames.size() ? kCmpNames[i] : "unknown";
}

std::optional<BinaryCmpKind> parse_binary_cmp_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kCmpNames.size(); ++i)
    if (name == kCmpNames[i]) return static_cast<BinaryCmpKind>(i);
  return std::nullopt;
}

std::size_t BinaryCmpDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(kind) * 2 + (equal_nan ? 1 : 0);
  h = detail::hash_combine(detail::hash_combine(h, std::hash<double>{}(rtol)), std::hash<double>{}(atol));
  for (const auto* t : {&a, &b, &out}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string BinaryCmpDescriptor::to_string() const {
  std::string s = std::string(binary_cmp_kind_name(kind)) + "(";
  if (kind == BinaryCmpKind::kIsclose)
    s += "rtol=" + std::to_string(rtol) + ", atol=" + std::to_string(atol) + ", equal_nan=" + (equal_nan ? "1" : "0") + ", ";
  return s + "a=" + a.to_string() + ", b=" + b.to_string() + ", out=" + out.to_string() + ")";
}

namespace elementwise {
namespace {

bool is_real(DType t) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kI64: case DType::kI32:
    case DType::kI16: case DType::kI8: case DType::kU8: case DType::kBool: return true;
    default: return false;
  }
}

struct BinaryCmpSpec {
  static MapOperands operands(const BinaryCmpDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.out, "out", d.out.alignment};
    o.in[0] = {broadcast_or_self(d.a, d.out), "a", d.a.alignment};
    o.in[1] = {broadcast_or_self(d.b, d.out), "b", d.b.alignment};
    return o;
  }
  static KernelSku sku(const BinaryCmpDescriptor& d) {
    KernelSku s;
    s.family = "binary_cmp";
    s.direction = Direction::kForward;
    s.in = d.a.dtype;
    s.out = DType::kBool;
    const bool f = d.a.dtype == DType::kF32 || d.a.dtype == DType::kF16 || d.a.dtype == DType::kBF16;
    s.compute = s.precision.accumulator = f ? DType::kF32 : d.a.dtype;
    return s;
  }
  static int fp8_mode(const BinaryCmpDescriptor&) { return 0; }
  static MapPointers pointers(const BinaryArgs& a) {
    MapPointers p;
    p.out[0] = a.out;
    p.in[0] = a.a;
    p.in[1] = a.b;
    return p;
  }
  static Status launch(const BinaryCmpDescriptor& d, const MapParams& p, cudaStream_t s) {
    const IscloseScalars sc{d.rtol, d.atol, d.equal_nan};
    return launch_binary_bool(d.a.dtype, static_cast<BoolOpCode>(d.kind), sc, p, s);
  }
};
static_assert(static_cast<int>(BoolOpCode::kIsclose) == static_cast<int>(BinaryCmpKind::kIsclose),
              "BoolOpCode starts with the BinaryCmpKind values");

Status check_tolerance(double v, const char* field) {
  if (!std::isfinite(v) || v < 0)
    return Status(Code::kInvalidArgument, std::string(field) + " = " + std::to_string(v) + " must be finite and >= 0 (isclose)");
  return Status::ok();
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<BinaryCmpDescriptor>
    : elementwise::MapFamilyTraits<elementwise::BinaryCmpSpec, BinaryCmpDescriptor, BinaryArgs> {
  using Spec = elementwise::BinaryCmpSpec;
  static constexpr const char* kFamily = "binary_cmp";
  static Status validate(const BinaryCmpDescriptor& d) {
    if (static_cast<unsigned>(d.kind) >= static_cast<unsigned>(kNumBinaryCmpKinds))
      return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(d.kind)) + " is not a BinaryCmpKind");
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(validate_layout(d.out, "out"));
    if (!elementwise::is_real(d.a.dtype))
      return Status(Code::kInvalidArgument, "a.dtype = " + std::string(dtype_name(d.a.dtype)) +
                                                " is not supported by binary_cmp (f64, f32, f16, bf16, i64, i32, i16, i8, u8, bool)");
    BARACUDA_TRY(elementwise::check_same_dtype(d.b, "b", d.a, "a"));
    if (d.out.dtype != DType::kBool)
      return Status(Code::kInvalidArgument, "out.dtype = " + std::string(dtype_name(d.out.dtype)) + " must be bool (binary_cmp)");
    if (d.kind == BinaryCmpKind::kIsclose) {
      BARACUDA_TRY(elementwise::check_tolerance(d.rtol, "rtol"));
      BARACUDA_TRY(elementwise::check_tolerance(d.atol, "atol"));
    }
    auto shape = broadcast_shape(d.a, d.b, "a", "b");
    if (!shape) return shape.error();
    BARACUDA_TRY(elementwise::check_same_shape(d.out, "out", shape.value(), "broadcast(a, b)"));
    return elementwise::check_output_layout(d.out, "out");
  }
};

template class Plan<BinaryCmpDescriptor, BinaryArgs>;

}  // namespace baracuda
