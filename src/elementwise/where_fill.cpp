// WherePlan, WhereBackwardPlan and FillPlan: descriptors, validation and candidate tables.
// The kernels move bits only (kernels/select_map.cuh), one instance per element size.
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "baracuda/core/numeric.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/grad_passes.hpp"
#include "elementwise/launch_ternary.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

namespace {
using elementwise::number_text;
}  // namespace

std::size_t WhereDescriptor::hash() const noexcept {
  std::size_t h = 0x57e;
  for (const auto* t : {&cond, &a, &b, &out}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string WhereDescriptor::to_string() const {
  return "where(cond=" + cond.to_string() + ", a=" + a.to_string() + ", b=" + b.to_string() + ", out=" + out.to_string() + ")";
}
std::size_t WhereBackwardDescriptor::hash() const noexcept {
  std::size_t h = 0x57f;
  for (const auto* t : {&cond, &grad_out, &grad_a, &grad_b}) h = detail::hash_combine(h, t->hash());
  return detail::hash_combine(h, (compute_grad_a ? 1u : 0u) | (compute_grad_b ? 2u : 0u));
}
std::string WhereBackwardDescriptor::to_string() const {
  std::string s = "where_backward(cond=" + cond.to_string() + ", grad_out=" + grad_out.to_string();
  if (compute_grad_a) s += ", grad_a=" + grad_a.to_string();
  if (compute_grad_b) s += ", grad_b=" + grad_b.to_string();
  return s + ")";
}
std::size_t FillDescriptor::hash() const noexcept {
  return detail::hash_combine(y.hash(), std::hash<double>{}(value));
}
std::string FillDescriptor::to_string() const { return "fill(value=" + number_text(value) + ", y=" + y.to_string() + ")"; }

namespace elementwise {
namespace {

// Every real dtype of 1, 2, 4 or 8 bytes.
bool where_dtype(DType t) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kE4M3: case DType::kE5M2:
    case DType::kI64: case DType::kI32: case DType::kI16: case DType::kI8: case DType::kU8: case DType::kBool:
      return true;
    default: return false;
  }
}
constexpr const char* kWhereDtypes = "f64, f32, f16, bf16, e4m3, e5m2, i64, i32, i16, i8, u8, bool";

Status check_where_dtype(const TensorLayout& t, const char* field, const char* family) {
  if (where_dtype(t.dtype)) return Status::ok();
  return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t.dtype)) +
                                            " is not supported by " + family + " (" + kWhereDtypes + ")");
}
Status check_bool(const TensorLayout& t, const char* field) {
  if (t.dtype == DType::kBool) return Status::ok();
  return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t.dtype)) + " must be bool");
}

KernelSku bits_sku(const char* family, DType t, Direction dir) {
  KernelSku s;
  s.family = family;
  s.direction = dir;
  s.in = s.out = s.compute = s.precision.accumulator = t;
  return s;
}

struct WhereSpec {
  static MapOperands operands(const WhereDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 3;
    o.out[0] = {d.out, "out", d.out.alignment};
    o.in[0] = {broadcast_or_self(d.cond, d.out), "cond", d.cond.alignment};
    o.in[1] = {broadcast_or_self(d.a, d.out), "a", d.a.alignment};
    o.in[2] = {broadcast_or_self(d.b, d.out), "b", d.b.alignment};
    return o;
  }
  static KernelSku sku(const WhereDescriptor& d) { return bits_sku("where", d.a.dtype, Direction::kForward); }
  static int fp8_mode(const WhereDescriptor&) { return 0; }
  static MapPointers pointers(const WhereArgs& a) {
    MapPointers p;
    p.out[0] = a.out;
    p.in[0] = a.cond;
    p.in[1] = a.a;
    p.in[2] = a.b;
    return p;
  }
  static Status launch(const WhereDescriptor& d, const MapParams& p, cudaStream_t s) { return launch_where(d.a.dtype, p, s); }
};

// y's bits for `value` (validated): torch's Scalar conversions.
std::uint64_t fill_bits(DType t, double v) {
  switch (t) {
    case DType::kF64: {
      std::uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    case DType::kF32: {
      const float f = static_cast<float>(v);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case DType::kF16: return f32_to_f16_bits(static_cast<float>(v));
    case DType::kBF16: return f32_to_bf16_bits(static_cast<float>(v));
    case DType::kE4M3: return f32_to_e4m3_bits(static_cast<float>(v));
    case DType::kE5M2: return f32_to_e5m2_bits(static_cast<float>(v));
    case DType::kBool: return v != 0 ? 1 : 0;  // NaN is true, as bool(nan) in Python
    default: return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));  // the launcher keeps the low bytes
  }
}

struct FillSpec {
  static MapOperands operands(const FillDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 0;
    o.out[0] = {d.y, "y", d.y.alignment};
    return o;
  }
  static KernelSku sku(const FillDescriptor& d) { return bits_sku("fill", d.y.dtype, Direction::kForward); }
  static int fp8_mode(const FillDescriptor&) { return 0; }
  static MapPointers pointers(const FillArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    return p;
  }
  static Status launch(const FillDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_fill(d.y.dtype, fill_bits(d.y.dtype, d.value), p, s);
  }
};

// The bit maps have no rows kernel: contiguous, then strided.
template <class Spec, class Desc, class Args>
inline constexpr std::array<Candidate<Desc, Args>, 3> kSelectCandidates = {
    MapCandidate<Spec, Desc, Args, MapPath::kVecContig>::make(),
    MapCandidate<Spec, Desc, Args, MapPath::kStrided32>::make(),
    MapCandidate<Spec, Desc, Args, MapPath::kStrided64>::make(),
};

// ---------------------------------------------------------------- where backward
const TensorLayout& where_grad(const WhereBackwardDescriptor& d, int which) { return which == 0 ? d.grad_a : d.grad_b; }
bool where_computes(const WhereBackwardDescriptor& d, int which) { return which == 0 ? d.compute_grad_a : d.compute_grad_b; }
constexpr const char* kWhereGradField[2] = {"grad_a", "grad_b"};

MapOperands where_grad_inputs(const WhereBackwardDescriptor& d) {
  MapOperands o;
  o.num_in = 2;
  o.in[0] = {broadcast_or_self(d.cond, d.grad_out), "cond", d.cond.alignment};
  o.in[1] = {d.grad_out, "grad_out", d.grad_out.alignment};
  return o;
}

GradPasses where_passes(const WhereBackwardDescriptor& d, MapPath path, const DeviceCaps& caps) {
  std::array<GradRequest, 2> req;
  int n = 0;
  for (int k = 0; k < 2; ++k)
    if (where_computes(d, k))
      req[static_cast<std::size_t>(n++)] = {k, where_grad(d, k), where_grad(d, k), kWhereGradField[k], where_grad_inputs(d)};
  // The terms are g or 0 (exact in any dtype): the dense buffer keeps the gradient's dtype.
  return plan_grad_passes(d.grad_out, std::span(req.data(), static_cast<std::size_t>(n)), d.grad_out.dtype, path, caps);
}

std::array<MapPointers, 2> where_pass_pointers(const WhereBackwardDescriptor& d, const WhereBackwardArgs& a, int* count) {
  std::array<MapPointers, 2> ptrs;
  void* grads[2] = {a.grad_a, a.grad_b};
  int n = 0;
  for (int k = 0; k < 2; ++k)
    if (where_computes(d, k)) {
      MapPointers& p = ptrs[static_cast<std::size_t>(n++)];
      p.out[0] = grads[k];
      p.in[0] = a.cond;
      p.in[1] = a.grad_out;
    }
  *count = n;
  return ptrs;
}

template <MapPath P>
struct WhereBackwardCandidate {
  using Desc = WhereBackwardDescriptor;
  using Args = WhereBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = bits_sku("where", d.grad_out.dtype, Direction::kBackward);
    pr.sku.compute = pr.sku.precision.accumulator = d.grad_out.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
    pr.sku.impl = map_path_impl(P);
    const GradPasses g = where_passes(d, P, caps);
    pr.rejection = g.rejection;
    pr.workspace_bytes = g.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<GradPasses>(where_passes(d, P, caps)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    int n = 0;
    const auto ptrs = where_pass_pointers(d, a, &n);
    return run_grad_passes(*static_cast<const GradPasses*>(state), std::span(ptrs.data(), static_cast<std::size_t>(n)), ws,
                           s, [&](int which, bool, const MapParams& p) { return launch_where_grad(d.grad_out.dtype, which, p, s); },
                           [&](std::span<const int> which, MapParams p) {
                             if (which[0] == 1) std::swap(p.out[0], p.out[1]);  // the kernel writes grad_a first
                             return launch_where_grads(d.grad_out.dtype, p, s);
                           });
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

using WhereBwdCandidate = Candidate<WhereBackwardDescriptor, WhereBackwardArgs>;
constexpr std::array<WhereBwdCandidate, 3> kWhereBackwardCandidates = {
    WhereBackwardCandidate<MapPath::kVecContig>::make(),
    WhereBackwardCandidate<MapPath::kStrided32>::make(),
    WhereBackwardCandidate<MapPath::kStrided64>::make(),
};

MapOperands where_all_operands(const WhereBackwardDescriptor& d) {
  MapOperands o = where_grad_inputs(d);
  for (int k = 0; k < 2; ++k)
    if (where_computes(d, k)) {
      const TensorLayout& g = where_grad(d, k);
      o.out[static_cast<std::size_t>(o.num_out++)] = {
          grad_needs_reduction(g, d.grad_out) ? g : broadcast_or_self(g, d.grad_out), kWhereGradField[k], g.alignment};
    }
  return o;
}
MapPointers where_all_pointers(const WhereBackwardDescriptor& d, const WhereBackwardArgs& a) {
  MapPointers p;
  p.in[0] = a.cond;
  p.in[1] = a.grad_out;
  int n = 0;
  if (d.compute_grad_a) p.out[static_cast<std::size_t>(n++)] = a.grad_a;
  if (d.compute_grad_b) p.out[static_cast<std::size_t>(n++)] = a.grad_b;
  return p;
}

// An integer dtype's range, for fill values.
bool int_range(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::kI64: *lo = -9223372036854775808.0, *hi = 9223372036854775807.0; return true;
    case DType::kI32: *lo = -2147483648.0, *hi = 2147483647.0; return true;
    case DType::kI16: *lo = -32768, *hi = 32767; return true;
    case DType::kI8: *lo = -128, *hi = 127; return true;
    case DType::kU8: *lo = 0, *hi = 255; return true;
    default: return false;
  }
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<WhereDescriptor> {
  using Spec = elementwise::WhereSpec;
  static constexpr const char* kFamily = "where";
  static Status validate(const WhereDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(validate_layout(d.cond, "cond"));
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(validate_layout(d.out, "out"));
    BARACUDA_TRY(check_bool(d.cond, "cond"));
    BARACUDA_TRY(check_where_dtype(d.a, "a", kFamily));
    BARACUDA_TRY(check_same_dtype(d.b, "b", d.a, "a"));
    BARACUDA_TRY(check_same_dtype(d.out, "out", d.a, "a"));
    auto ca = broadcast_shape(d.cond, d.a, "cond", "a");
    if (!ca) return ca.error();
    auto cab = broadcast_shape(ca.value(), d.b, "broadcast(cond, a)", "b");
    if (!cab) return cab.error();
    BARACUDA_TRY(check_same_shape(d.out, "out", cab.value(), "the broadcast shape of the inputs"));
    return check_output_layout(d.out, "out");
  }
  static std::span<const Candidate<WhereDescriptor, WhereArgs>> candidates() {
    return elementwise::kSelectCandidates<Spec, WhereDescriptor, WhereArgs>;
  }
  static Status check_args(const WhereDescriptor& d, const WhereArgs& a) {
    return elementwise::check_map_pointers(Spec::operands(d), Spec::pointers(a));
  }
};

template <>
struct FamilyTraits<WhereBackwardDescriptor> {
  static constexpr const char* kFamily = "where_backward";
  static Status validate(const WhereBackwardDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(validate_layout(d.cond, "cond"));
    BARACUDA_TRY(validate_layout(d.grad_out, "grad_out"));
    BARACUDA_TRY(check_bool(d.cond, "cond"));
    BARACUDA_TRY(check_math_dtype(d.grad_out, "grad_out", kFamily));
    auto b = broadcast_to(d.cond, d.grad_out.rank, d.grad_out.shape, "cond");
    if (!b) return b.error();
    for (int k = 0; k < 2; ++k) {
      if (!where_computes(d, k)) continue;
      const TensorLayout& g = where_grad(d, k);
      BARACUDA_TRY(validate_layout(g, kWhereGradField[k]));
      BARACUDA_TRY(check_same_dtype(g, kWhereGradField[k], d.grad_out, "grad_out"));
      auto gb = broadcast_to(TensorLayout::contiguous(g.dtype, g.shape_span()), d.grad_out.rank, d.grad_out.shape,
                             kWhereGradField[k]);
      if (!gb) return gb.error();
      BARACUDA_TRY(check_output_layout(g, kWhereGradField[k]));
    }
    return Status::ok();
  }
  static std::span<const Candidate<WhereBackwardDescriptor, WhereBackwardArgs>> candidates() {
    return elementwise::kWhereBackwardCandidates;
  }
  static Status check_args(const WhereBackwardDescriptor& d, const WhereBackwardArgs& a) {
    using namespace elementwise;
    BARACUDA_TRY(check_map_pointers(where_all_operands(d), where_all_pointers(d, a)));
    int n = 0;
    const auto ptrs = where_pass_pointers(d, a, &n);
    return check_grad_aliasing(where_passes(d, MapPath::kStrided64, DeviceCaps{}),
                               std::span(ptrs.data(), static_cast<std::size_t>(n)));
  }
};

template <>
struct FamilyTraits<FillDescriptor> {
  using Spec = elementwise::FillSpec;
  static constexpr const char* kFamily = "fill";
  static Status validate(const FillDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(validate_layout(d.y, "y"));
    BARACUDA_TRY(check_where_dtype(d.y, "y", kFamily));
    double lo = 0, hi = 0;
    if (int_range(d.y.dtype, &lo, &hi)) {
      if (!std::isfinite(d.value) || d.value != std::trunc(d.value) || d.value < lo || d.value > hi ||
          (d.y.dtype == DType::kI64 && d.value >= 9223372036854775807.0))
        return Status(Code::kInvalidArgument, "value = " + number_text(d.value) + " is not an integer in the range of y.dtype = " +
                                                  std::string(dtype_name(d.y.dtype)));
    }
    return check_output_layout(d.y, "y");
  }
  static std::span<const Candidate<FillDescriptor, FillArgs>> candidates() {
    return elementwise::kSelectCandidates<Spec, FillDescriptor, FillArgs>;
  }
  static Status check_args(const FillDescriptor& d, const FillArgs& a) {
    return elementwise::check_map_pointers(Spec::operands(d), Spec::pointers(a));
  }
};

template class Plan<WhereDescriptor, WhereArgs>;
template class Plan<WhereBackwardDescriptor, WhereBackwardArgs>;
template class Plan<FillDescriptor, FillArgs>;

}  // namespace baracuda
