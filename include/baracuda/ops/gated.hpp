// Gated activations: y = act(gate) * up, elementwise over [..., D].
//
//   kind        act(gate)                 PyTorch equivalent (packed, GateHalf::kSecond)
//   glu         sigmoid(gate)             F.glu(x, dim=-1)
//   reglu       relu(gate)                a * F.relu(b)  with a, b = x.chunk(2, -1)
//   swiglu      silu(gate)                a * F.silu(b)
//   geglu_erf   gelu(gate)                a * F.gelu(b)
//   geglu_tanh  gelu(gate, 'tanh')        a * F.gelu(b, approximate='tanh')
//
// Inputs come in one of two forms:
//  * kPacked: x = [..., 2D]; the halves x[..., :D] and x[..., D:] are the value ("up") and
//    the gate. GateHalf says which half is the gate: kSecond (the default) is
//    torch.nn.functional.glu's split, out = first * act(second); kFirst is the fused
//    gate_up projection of vLLM / FlashInfer (silu_and_mul: out = act(first) * second).
//  * kSplit: gate and up as separate [..., D] tensors (may broadcast into y for the
//    forward; the backward needs y's shape).
// Backward (PyTorch's autograd of the composed expression): d_up = g * act(gate),
// d_gate = (g * up) * act'(gate) with act' as UnaryBackwardPlan's (relu'(0) = 0). Packed:
// grad_x = [..., 2D] holds both halves in x's order; split: grad_gate and grad_up.
// Dtypes f64, f32, f16, bf16 (16-bit computed in f32), one dtype for all operands.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class GatedKind : std::uint8_t { kGlu, kReglu, kSwiglu, kGegluErf, kGegluTanh };
inline constexpr int kNumGatedKinds = 5;
const char* gated_kind_name(GatedKind k) noexcept;  // "glu", "reglu", "swiglu", "geglu_erf", "geglu_tanh"
std::optional<GatedKind> parse_gated_kind(std::string_view name) noexcept;  // also "geglu" = geglu_erf

enum class GatedInput : std::uint8_t { kPacked, kSplit };
enum class GateHalf : std::uint8_t { kSecond, kFirst };

struct GatedActivationDescriptor {
  GatedKind kind = GatedKind::kSwiglu;
  GatedInput input = GatedInput::kPacked;
  GateHalf gate_half = GateHalf::kSecond;  // kPacked only
  TensorLayout x;     // kPacked: [..., 2D], any strides
  TensorLayout gate;  // kSplit: [..., D] (may broadcast into y)
  TensorLayout up;    // kSplit
  TensorLayout y;     // [..., D]
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GatedActivationDescriptor&, const GatedActivationDescriptor&) = default;
};
struct GatedActivationArgs {
  const void* x = nullptr;     // kPacked
  const void* gate = nullptr;  // kSplit
  const void* up = nullptr;    // kSplit
  void* y = nullptr;
};
using GatedActivationPlan = Plan<GatedActivationDescriptor, GatedActivationArgs>;

struct GatedActivationBackwardDescriptor {
  GatedKind kind = GatedKind::kSwiglu;
  GatedInput input = GatedInput::kPacked;
  GateHalf gate_half = GateHalf::kSecond;
  TensorLayout grad_y;     // [..., D]
  TensorLayout x;          // kPacked: [..., 2D]
  TensorLayout gate;       // kSplit: grad_y's shape
  TensorLayout up;         // kSplit: grad_y's shape
  TensorLayout grad_x;     // kPacked: x's shape
  TensorLayout grad_gate;  // kSplit: grad_y's shape
  TensorLayout grad_up;    // kSplit: grad_y's shape
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GatedActivationBackwardDescriptor&, const GatedActivationBackwardDescriptor&) = default;
};
struct GatedActivationBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;     // kPacked
  const void* gate = nullptr;  // kSplit
  const void* up = nullptr;    // kSplit
  void* grad_x = nullptr;      // kPacked
  void* grad_gate = nullptr;   // kSplit
  void* grad_up = nullptr;     // kSplit
};
using GatedActivationBackwardPlan = Plan<GatedActivationBackwardDescriptor, GatedActivationBackwardArgs>;

extern template class Plan<GatedActivationDescriptor, GatedActivationArgs>;
extern template class Plan<GatedActivationBackwardDescriptor, GatedActivationBackwardArgs>;

}  // namespace baracuda
