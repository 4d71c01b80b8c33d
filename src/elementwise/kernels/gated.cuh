// Gated activations on the device: y = act(gate) * up and its backward, as map functors
// (kernels/map.cuh runs them on the contiguous, rows and strided paths; a packed x
// [..., 2D] reaches them as two half views). act and act' are the unary kinds' device math
// (unary_math.cuh), so glu / reglu / swiglu / geglu share sigmoid / relu / silu / gelu's
// formulas, NaN rules and relu'(0) = 0 with UnaryPlan.
#pragma once

#include "baracuda/ops/gated.hpp"
#include "elementwise/kernels/unary_math.cuh"

namespace baracuda::kernels {

constexpr UnaryKind gated_act_kind(GatedKind k) {
  switch (k) {
    case GatedKind::kGlu: return UnaryKind::kSigmoid;
    case GatedKind::kReglu: return UnaryKind::kRelu;
    case GatedKind::kSwiglu: return UnaryKind::kSilu;
    case GatedKind::kGegluErf: return UnaryKind::kGeluErf;
    case GatedKind::kGegluTanh: return UnaryKind::kGeluTanh;
  }
  return UnaryKind::kSilu;
}

// in: gate, up   out: y
template <GatedKind K>
struct GatedFwdOp {
  static constexpr int kIn = 2, kOut = 1;
  static constexpr int kInFlight = K == GatedKind::kReglu ? 16 : 32;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = unary_fwd<gated_act_kind(K)>(in[0], UnaryScalars<C>{C(0), C(0), C(0)}) * in[1];
  }
};

// in: grad_y, gate, up   out: grad_gate, grad_up
template <GatedKind K>
struct GatedBwdOp {
  static constexpr int kIn = 3, kOut = 2;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    const UnaryScalars<C> s{C(0), C(0), C(0)};
    const C g = in[0], gate = in[1], up = in[2];
    out[0] = unary_grad<gated_act_kind(K)>(g * up, gate, s);
    out[1] = g * unary_fwd<gated_act_kind(K)>(gate, s);
  }
};

}  // namespace baracuda::kernels
