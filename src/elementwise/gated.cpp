// GatedActivationPlan / GatedActivationBackwardPlan (include/baracuda/ops/gated.hpp): map
// plans whose operands are the halves of a packed x [..., 2D] (two views of one tensor, at
// byte offsets 0 and D * stride) or the separate gate and up tensors. The four map paths
// of map_family.hpp apply; a packed x usually takes vec16_rows (rows of 2D, halves of D).
#include <array>
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch_gated.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

const char* gated_kind_name(GatedKind k) noexcept {
  switch (k) {
    case GatedKind::kGlu: return "glu";
    case GatedKind::kReglu: return "reglu";
    case GatedKind::kSwiglu: return "swiglu";
    case GatedKind::kGegluErf: return "geglu_erf";
    case GatedKind::kGegluTanh: return "geglu_tanh";
  }
  return "unknown";
}

std::optional<GatedKind> parse_gated_kind(std::string_view name) noexcept {
  for (int k = 0; k < kNumGatedKinds; ++k)
    if (name == gated_kind_name(static_cast<GatedKind>(k))) return static_cast<GatedKind>(k);
  if (name == "geglu") return GatedKind::kGegluErf;
  return std::nullopt;
}

namespace {
std::size_t hash_modes(GatedKind k, GatedInput in, GateHalf h) {
  return static_cast<std::size_t>(k) * 16 + static_cast<std::size_t>(in) * 4 + static_cast<std::size_t>(h);
}
std::string modes_string(GatedKind k, GatedInput in, GateHalf h) {
  std::string s = gated_kind_name(k);
  if (in == GatedInput::kSplit) return s + ", split";
  return s + (h == GateHalf::kFirst ? ", gate=first" : ", gate=second");
}
}  // namespace

std::size_t GatedActivationDescriptor::hash() const noexcept {
  std::size_t h = hash_modes(kind, input, gate_half);
  for (const auto* t : {&x, &gate, &up, &y}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string GatedActivationDescriptor::to_string() const {
  std::string s = "gated(" + modes_string(kind, input, gate_half);
  if (input == GatedInput::kPacked) s += ", x=" + x.to_string();
  else s += ", gate=" + gate.to_string() + ", up=" + up.to_string();
  return s + ", y=" + y.to_string() + ")";
}
std::size_t GatedActivationBackwardDescriptor::hash() const noexcept {
  std::size_t h = hash_modes(kind, input, gate_half) + 7;
  for (const auto* t : {&grad_y, &x, &gate, &up, &grad_x, &grad_gate, &grad_up}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string GatedActivationBackwardDescriptor::to_string() const {
  std::string s = "gated_backward(" + modes_string(kind, input, gate_half) + ", grad_y=" + grad_y.to_string();
  if (input == GatedInput::kPacked) s += ", x=" + x.to_string() + ", grad_x=" + grad_x.to_string();
  else
    s += ", gate=" + gate.to_string() + ", up=" + up.to_string() + ", grad_gate=" + grad_gate.to_string() +
         ", grad_up=" + grad_up.to_string();
  return s + ")";
}

namespace elementwise {
namespace {

DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// Half h (0 = first, 1 = second) of a packed [..., 2D] layout: its byte offset, and its view.
std::int64_t half_offset_bytes(const TensorLayout& t, int h) {
  if (t.rank == 0) return 0;
  const int last = t.rank - 1;
  return static_cast<std::int64_t>(h) * (t.shape[last] / 2) * t.strides[last] * static_cast<std::int64_t>(dtype_size(t.dtype));
}
TensorLayout half_view(const TensorLayout& t, int h) {
  TensorLayout v = t;
  if (t.rank == 0) return v;
  const int last = t.rank - 1;
  v.shape[last] = t.shape[last] / 2;
  const std::int64_t off = half_offset_bytes(t, h);
  if (off != 0) {
    const std::int64_t low = off < 0 ? -off & off : off & -off;  // largest power of two dividing off
    if (low < v.alignment) v.alignment = static_cast<int>(low);
  }
  return v;
}
const void* at(const void* p, std::int64_t off) { return p == nullptr ? nullptr : static_cast<const char*>(p) + off; }
void* at(void* p, std::int64_t off) { return p == nullptr ? nullptr : static_cast<char*>(p) + off; }
int gate_index(GateHalf h) { return h == GateHalf::kFirst ? 0 : 1; }

// The gate and up halves of a packed operand: as map operands, and their addresses.
std::array<MapOperand, 2> gate_up_operands(const TensorLayout& t, GateHalf h, const char* gate_field, const char* up_field) {
  const int g = gate_index(h);
  const TensorLayout gv = half_view(t, g), uv = half_view(t, 1 - g);
  return {MapOperand{gv, gate_field, gv.alignment}, MapOperand{uv, up_field, uv.alignment}};
}
template <class P>
std::array<P, 2> gate_up_addresses(P p, const TensorLayout& t, GateHalf h) {
  const int g = gate_index(h);
  return {at(p, half_offset_bytes(t, g)), at(p, half_offset_bytes(t, 1 - g))};
}

Status launch_fwd(DType t, GatedKind k, const MapParams& p, cudaStream_t s) {
  switch (t) {
    case DType::kF64: return launch_gated_fwd<DType::kF64>(k, p, s);
    case DType::kF32: return launch_gated_fwd<DType::kF32>(k, p, s);
    case DType::kF16: return launch_gated_fwd<DType::kF16>(k, p, s);
    case DType::kBF16: return launch_gated_fwd<DType::kBF16>(k, p, s);
    default: return Status(Code::kNotBuilt, "gated: no kernels for dtype " + std::string(dtype_name(t)));
  }
}
Status launch_bwd(DType t, GatedKind k, const MapParams& p, cudaStream_t s) {
  switch (t) {
    case DType::kF64: return launch_gated_bwd<DType::kF64>(k, p, s);
    case DType::kF32: return launch_gated_bwd<DType::kF32>(k, p, s);
    case DType::kF16: return launch_gated_bwd<DType::kF16>(k, p, s);
    case DType::kBF16: return launch_gated_bwd<DType::kBF16>(k, p, s);
    default: return Status(Code::kNotBuilt, "gated_backward: no kernels for dtype " + std::string(dtype_name(t)));
  }
}

KernelSku gated_sku(DType t, Direction dir) {
  KernelSku s;
  s.family = "gated";
  s.direction = dir;
  s.in = s.out = t;
  s.compute = s.precision.accumulator = compute_of(t);
  return s;
}

// y = act(gate) * up: y, then gate and up (halves of x, or the split tensors).
struct GatedFwdSpec {
  static MapOperands operands(const GatedActivationDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.y, "y", d.y.alignment};
    if (d.input == GatedInput::kPacked) {
      const auto x = gate_up_operands(d.x, d.gate_half, "x (gate half)", "x (up half)");
      o.in[0] = x[0];
      o.in[1] = x[1];
    } else {
      o.in[0] = {broadcast_or_self(d.gate, d.y), "gate", d.gate.alignment};
      o.in[1] = {broadcast_or_self(d.up, d.y), "up", d.up.alignment};
    }
    return o;
  }
  // The operands as the caller passes them (a packed x whole), for the pointer checks.
  static MapOperands whole_operands(const GatedActivationDescriptor& d) {
    if (d.input == GatedInput::kSplit) return operands(d);
    MapOperands o;
    o.num_out = 1;
    o.num_in = 1;
    o.out[0] = {d.y, "y", d.y.alignment};
    o.in[0] = {d.x, "x", d.x.alignment};
    return o;
  }
  static MapPointers whole_pointers(const GatedActivationDescriptor& d, const GatedActivationArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    p.in[0] = d.input == GatedInput::kPacked ? a.x : a.gate;
    p.in[1] = a.up;
    return p;
  }
  static KernelSku sku(const GatedActivationDescriptor& d) { return gated_sku(d.y.dtype, Direction::kForward); }
  static int fp8_mode(const GatedActivationDescriptor&) { return 0; }
  static MapPointers pointers(const GatedActivationDescriptor& d, const GatedActivationArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    if (d.input == GatedInput::kPacked) {
      const auto x = gate_up_addresses(a.x, d.x, d.gate_half);
      p.in[0] = x[0];
      p.in[1] = x[1];
    } else {
      p.in[0] = a.gate;
      p.in[1] = a.up;
    }
    return p;
  }
  static Status launch(const GatedActivationDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_fwd(d.y.dtype, d.kind, p, s);
  }
};

// grad_gate, grad_up (halves of grad_x, or the split tensors), then grad_y, gate, up.
struct GatedBwdSpec {
  using Desc = GatedActivationBackwardDescriptor;
  using Args = GatedActivationBackwardArgs;
  static MapOperands operands(const Desc& d) {
    MapOperands o;
    o.num_out = 2;
    o.num_in = 3;
    o.in[0] = {d.grad_y, "grad_y", d.grad_y.alignment};
    if (d.input == GatedInput::kPacked) {
      const auto gx = gate_up_operands(d.grad_x, d.gate_half, "grad_x (gate half)", "grad_x (up half)");
      const auto x = gate_up_operands(d.x, d.gate_half, "x (gate half)", "x (up half)");
      o.out[0] = gx[0];
      o.out[1] = gx[1];
      o.in[1] = x[0];
      o.in[2] = x[1];
    } else {
      o.out[0] = {d.grad_gate, "grad_gate", d.grad_gate.alignment};
      o.out[1] = {d.grad_up, "grad_up", d.grad_up.alignment};
      o.in[1] = {d.gate, "gate", d.gate.alignment};
      o.in[2] = {d.up, "up", d.up.alignment};
    }
    return o;
  }
  static MapOperands whole_operands(const Desc& d) {
    if (d.input == GatedInput::kSplit) return operands(d);
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.grad_x, "grad_x", d.grad_x.alignment};
    o.in[0] = {d.grad_y, "grad_y", d.grad_y.alignment};
    o.in[1] = {d.x, "x", d.x.alignment};
    return o;
  }
  static MapPointers whole_pointers(const Desc& d, const Args& a) {
    MapPointers p;
    if (d.input == GatedInput::kPacked) {
      p.out[0] = a.grad_x;
      p.in[0] = a.grad_y;
      p.in[1] = a.x;
    } else {
      p.out[0] = a.grad_gate;
      p.out[1] = a.grad_up;
      p.in[0] = a.grad_y;
      p.in[1] = a.gate;
      p.in[2] = a.up;
    }
    return p;
  }
  static KernelSku sku(const Desc& d) { return gated_sku(d.grad_y.dtype, Direction::kBackward); }
  static int fp8_mode(const Desc&) { return 0; }
  static MapPointers pointers(const Desc& d, const Args& a) {
    MapPointers p;
    p.in[0] = a.grad_y;
    if (d.input == GatedInput::kPacked) {
      const auto gx = gate_up_addresses(a.grad_x, d.grad_x, d.gate_half);
      const auto x = gate_up_addresses(a.x, d.x, d.gate_half);
      p.out[0] = gx[0];
      p.out[1] = gx[1];
      p.in[1] = x[0];
      p.in[2] = x[1];
    } else {
      p.out[0] = a.grad_gate;
      p.out[1] = a.grad_up;
      p.in[1] = a.gate;
      p.in[2] = a.up;
    }
    return p;
  }
  static Status launch(const Desc& d, const MapParams& p, cudaStream_t s) { return launch_bwd(d.grad_y.dtype, d.kind, p, s); }
};

Status check_modes(GatedKind k, GatedInput in, GateHalf h) {
  if (static_cast<int>(k) >= kNumGatedKinds)
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(k)) + " is not a GatedKind");
  if (in != GatedInput::kPacked && in != GatedInput::kSplit)
    return Status(Code::kInvalidArgument, "input = " + std::to_string(static_cast<int>(in)) + " is not a GatedInput");
  if (h != GateHalf::kFirst && h != GateHalf::kSecond)
    return Status(Code::kInvalidArgument, "gate_half = " + std::to_string(static_cast<int>(h)) + " is not a GateHalf");
  return Status::ok();
}

// `packed` (field) is [..., 2D] for `half` = [..., D].
Status check_packed_shape(const TensorLayout& packed, const char* field, const TensorLayout& half, const char* half_field) {
  if (packed.rank == 0)
    return Status(Code::kInvalidArgument, std::string(field) + ".rank = 0: a packed input needs a last dim of 2D");
  const int last = packed.rank - 1;
  if (packed.shape[last] % 2 != 0)
    return Status(Code::kInvalidArgument, std::string(field) + ".shape[" + std::to_string(last) + "] = " +
                                              std::to_string(packed.shape[last]) + " is odd (a packed input is [..., 2D])");
  bool same = packed.rank == half.rank && half.shape[last] * 2 == packed.shape[last];
  for (int i = 0; same && i < last; ++i) same = packed.shape[i] == half.shape[i];
  if (!same)
    return Status(Code::kInvalidArgument, std::string(half_field) + " = " + half.to_string() + " is not " + field + " = " +
                                              packed.to_string() + " with the last dim halved");
  return Status::ok();
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<GatedActivationDescriptor>
    : elementwise::MapFamilyTraits<elementwise::GatedFwdSpec, GatedActivationDescriptor, GatedActivationArgs> {
  using Spec = elementwise::GatedFwdSpec;
  static constexpr const char* kFamily = "gated";
  static Status validate(const GatedActivationDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(check_modes(d.kind, d.input, d.gate_half));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    BARACUDA_TRY(check_math_dtype(d.y, "y", "gated"));
    if (d.input == GatedInput::kPacked) {
      BARACUDA_TRY(validate_layout(d.x, "x"));
      BARACUDA_TRY(check_same_dtype(d.x, "x", d.y, "y"));
      BARACUDA_TRY(check_packed_shape(d.x, "x", d.y, "y"));
    } else {
      for (auto [t, f] : {std::pair{&d.gate, "gate"}, std::pair{&d.up, "up"}}) {
        BARACUDA_TRY(validate_layout(*t, f));
        BARACUDA_TRY(check_same_dtype(*t, f, d.y, "y"));
        auto b = broadcast_to(*t, d.y.rank, d.y.shape, f);
        if (!b) return b.error();
      }
    }
    return check_output_layout(d.y, "y");
  }
};

template <>
struct FamilyTraits<GatedActivationBackwardDescriptor>
    : elementwise::MapFamilyTraits<elementwise::GatedBwdSpec, GatedActivationBackwardDescriptor, GatedActivationBackwardArgs> {
  using Spec = elementwise::GatedBwdSpec;
  static constexpr const char* kFamily = "gated_backward";
  static Status validate(const GatedActivationBackwardDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(check_modes(d.kind, d.input, d.gate_half));
    BARACUDA_TRY(validate_layout(d.grad_y, "grad_y"));
    BARACUDA_TRY(check_math_dtype(d.grad_y, "grad_y", "gated_backward"));
    if (d.input == GatedInput::kPacked) {
      for (auto [t, f] : {std::pair{&d.x, "x"}, std::pair{&d.grad_x, "grad_x"}}) {
        BARACUDA_TRY(validate_layout(*t, f));
        BARACUDA_TRY(check_same_dtype(*t, f, d.grad_y, "grad_y"));
        BARACUDA_TRY(check_packed_shape(*t, f, d.grad_y, "grad_y"));
      }
      return check_output_layout(d.grad_x, "grad_x");
    }
    for (auto [t, f] : {std::pair{&d.gate, "gate"}, std::pair{&d.up, "up"}, std::pair{&d.grad_gate, "grad_gate"},
                        std::pair{&d.grad_up, "grad_up"}}) {
      BARACUDA_TRY(validate_layout(*t, f));
      BARACUDA_TRY(check_same_dtype(*t, f, d.grad_y, "grad_y"));
      BARACUDA_TRY(check_same_shape(*t, f, d.grad_y, "grad_y"));
    }
    BARACUDA_TRY(check_output_layout(d.grad_gate, "grad_gate"));
    return check_output_layout(d.grad_up, "grad_up");
  }
};

template class Plan<GatedActivationDescriptor, GatedActivationArgs>;
template class Plan<GatedActivationBackwardDescriptor, GatedActivationBackwardArgs>;

}  // namespace baracuda
