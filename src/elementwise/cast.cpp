// CastPlan: dtype conversion among f64, f32, f16, bf16, fp8 e4m3, fp8 e5m2, i64, i32, i16,
// i8, u8 and bool (every pair; rules in kernels/cast.cuh and docs/semantics.md, "Cast").
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

std::size_t CastDescriptor::hash() const noexcept {
  return detail::hash_combine(detail::hash_combine(static_cast<std::size_t>(fp8_overflow), x.hash()), y.hash());
}
std::string CastDescriptor::to_string() const {
  std::string s = "cast(x=" + x.to_string() + ", y=" + y.to_string();
  if (fp8_overflow == Fp8Overflow::kSaturate) s += ", fp8_overflow=saturate";
  return s + ")";
}

namespace elementwise {
namespace {

bool cast_dtype_supported(DType t) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kE4M3: case DType::kE5M2:
    case DType::kI64: case DType::kI32: case DType::kI16: case DType::kI8: case DType::kU8: case DType::kBool:
      return true;
    default:
      return false;
  }
}

// The type the conversion goes through: the integer itself, f64 between f64 and an integer
// or f64, else f32 (f64 -> 16/8-bit floats round through f32).
DType cast_compute(DType in, DType out) {
  if (!dtype_is_floating(in)) return in;
  if (in == DType::kF64 && (out == DType::kF64 || !dtype_is_floating(out))) return DType::kF64;
  return DType::kF32;
}

struct CastSpec {
  static MapOperands operands(const CastDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 1;
    o.out[0] = {d.y, "y", d.y.alignment};
    o.in[0] = {broadcast_or_self(d.x, d.y), "x", d.x.alignment};
    return o;
  }
  static KernelSku sku(const CastDescriptor& d) {
    KernelSku s;
    s.family = "cast";
    s.in = d.x.dtype;
    s.out = d.y.dtype;
    s.compute = s.precision.accumulator = cast_compute(d.x.dtype, d.y.dtype);
    return s;
  }
  static int fp8_mode(const CastDescriptor& d) { return static_cast<int>(d.fp8_overflow); }
  static MapPointers pointers(const CastArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    p.in[0] = a.x;
    return p;
  }
  static Status launch(const CastDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_cast(d.x.dtype, d.y.dtype, p, s);
  }
};

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<CastDescriptor> : elementwise::MapFamilyTraits<elementwise::CastSpec, CastDescriptor, CastArgs> {
  using Spec = elementwise::CastSpec;
  static constexpr const char* kFamily = "cast";
  static Status validate(const CastDescriptor& d) {
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    for (auto [t, field] : {std::pair{&d.x, "x"}, std::pair{&d.y, "y"}})
      if (!elementwise::cast_dtype_supported(t->dtype))
        return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t->dtype)) +
                                                  " is not supported by cast (f64, f32, f16, bf16, e4m3, e5m2, i64, i32, i16, i8, u8, bool)");
    if (d.fp8_overflow != Fp8Overflow::kPyTorch && d.fp8_overflow != Fp8Overflow::kSaturate)
      return Status(Code::kInvalidArgument,
                    "fp8_overflow = " + std::to_string(static_cast<int>(d.fp8_overflow)) + " is not an Fp8Overflow");
    auto b = broadcast_to(d.x, d.y.rank, d.y.shape, "x");
    if (!b) return b.error();
    return elementwise::check_output_layout(d.y, "y");
  }
};

template class Plan<CastDescriptor, CastArgs>;

}  // namespace baracuda
