// CPU oracle of the gated activations (see gated.hpp).
#include "baracuda/reference/gated.hpp"

#include <cmath>
#include <string>

namespace baracuda::reference {

UnaryKind gated_act_kind(GatedKind k) {
  switch (k) {
    case GatedKind::kGlu: return UnaryKind::kSigmoid;
    case GatedKind::kReglu: return UnaryKind::kRelu;
    case GatedKind::kSwiglu: return UnaryKind::kSilu;
    case GatedKind::kGegluErf: return UnaryKind::kGeluErf;
    case GatedKind::kGegluTanh: return UnaryKind::kGeluTanh;
  }
  return UnaryKind::kSilu;
}

template <class C>
C gated_value(GatedKind k, C gate, C up) {
  return unary_value<C>(gated_act_kind(k), gate, UnaryParams{}) * up;
}

template <class C>
std::pair<C, C> gated_grads(GatedKind k, C g, C gate, C up) {
  const UnaryKind a = gated_act_kind(k);
  return {unary_grad<C>(a, g * up, gate, UnaryParams{}), g * unary_value<C>(a, gate, UnaryParams{})};
}

template float gated_value<float>(GatedKind, float, float);
template double gated_value<double>(GatedKind, double, double);
template std::pair<float, float> gated_grads<float>(GatedKind, float, float, float);
template std::pair<double, double> gated_grads<double>(GatedKind, double, double, double);

namespace {

// Reads the gate and up of output element i (y's logical index) from the packed or split inputs.
struct GatedReader {
  GatedInput input;
  int gate_half = 1;  // packed: index of the gate half
  const HostTensor* x = nullptr;
  TensorLayout gate_view, up_view;  // split: broadcast into the output shape
  const HostTensor* gate = nullptr;
  const HostTensor* up = nullptr;
  std::int64_t d = 0;  // half width

  std::pair<double, double> operator()(std::int64_t i) const {
    if (input == GatedInput::kPacked) {
      const std::int64_t row = i / d, col = i % d;
      const std::int64_t gi = row * 2 * d + gate_half * d + col, ui = row * 2 * d + (1 - gate_half) * d + col;
      return {x->get(gi), x->get(ui)};
    }
    return {load_as_double(gate_view.dtype, gate->data(), offset_of(gate_view, i)),
            load_as_double(up_view.dtype, up->data(), offset_of(up_view, i))};
  }
};

Expected<GatedReader> make_reader(GatedInput input, GateHalf half, const TensorLayout& out, const HostTensor* x,
                                  const HostTensor* gate, const HostTensor* up) {
  GatedReader r;
  r.input = input;
  r.gate_half = half == GateHalf::kFirst ? 0 : 1;
  r.d = out.rank == 0 ? 1 : out.shape[out.rank - 1];
  if (input == GatedInput::kPacked) {
    if (x == nullptr) return Status(Code::kInvalidArgument, "reference: gated packed form needs x");
    r.x = x;
    return r;
  }
  if (gate == nullptr || up == nullptr) return Status(Code::kInvalidArgument, "reference: gated split form needs gate and up");
  auto gv = broadcast_to(gate->layout(), out.rank, out.shape, "gate");
  auto uv = broadcast_to(up->layout(), out.rank, out.shape, "up");
  if (!gv) return gv.error();
  if (!uv) return uv.error();
  r.gate = gate;
  r.up = up;
  r.gate_view = gv.value();
  r.up_view = uv.value();
  return r;
}

double act_scale(GatedKind k, double gate) {
  const UnaryKind a = gated_act_kind(k);
  const double s = unary_scale(a, gate, UnaryParams{}) + std::fabs(unary_value<double>(a, gate, UnaryParams{}));
  return std::isfinite(s) ? s : 0.0;
}

}  // namespace

Expected<Result> gated_activation(const GatedActivationDescriptor& d, const HostTensor* x, const HostTensor* gate,
                                  const HostTensor* up) {
  auto rd = make_reader(d.input, d.gate_half, d.y, x, gate, up);
  if (!rd) return rd.error();
  const bool f64 = d.y.dtype == DType::kF64;
  Result r;
  const auto n = static_cast<std::size_t>(d.y.numel());
  r.exact.resize(n);
  r.naive.resize(n);
  r.scale.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto [gv, uv] = rd.value()(static_cast<std::int64_t>(i));
    r.exact[i] = gated_value<double>(d.kind, gv, uv);
    r.naive[i] = round_to(d.y.dtype, f64 ? r.exact[i]
                                         : gated_value<float>(d.kind, static_cast<float>(gv), static_cast<float>(uv)));
    const double s = act_scale(d.kind, gv) * std::fabs(uv);
    r.scale[i] = std::isfinite(s) ? s : 0.0;
  }
  return r;
}

Expected<GatedGrads> gated_activation_backward(const GatedActivationBackwardDescriptor& d, const HostTensor& grad_y,
                                               const HostTensor* x, const HostTensor* gate, const HostTensor* up) {
  auto rd = make_reader(d.input, d.gate_half, d.grad_y, x, gate, up);
  if (!rd) return rd.error();
  const bool f64 = d.grad_y.dtype == DType::kF64;
  const DType t = d.grad_y.dtype;
  const auto n = static_cast<std::size_t>(d.grad_y.numel());
  Result rg, ru;
  for (Result* r : {&rg, &ru}) {
    r->exact.resize(n);
    r->naive.resize(n);
    r->scale.resize(n);
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto [gv, uv] = rd.value()(static_cast<std::int64_t>(i));
    const double g = grad_y.get(static_cast<std::int64_t>(i));
    auto [eg, eu] = gated_grads<double>(d.kind, g, gv, uv);
    rg.exact[i] = eg;
    ru.exact[i] = eu;
    if (f64) {
      rg.naive[i] = eg;
      ru.naive[i] = eu;
    } else {
      auto [ng, nu] = gated_grads<float>(d.kind, static_cast<float>(g), static_cast<float>(gv), static_cast<float>(uv));
      rg.naive[i] = round_to(t, ng);
      ru.naive[i] = round_to(t, nu);
    }
    const UnaryKind a = gated_act_kind(d.kind);
    const double sg = unary_grad_scale(a, g * uv, gv, UnaryParams{}) + std::fabs(g * uv) + std::fabs(eg);
    rg.scale[i] = std::isfinite(sg) ? sg : 0.0;
    const double su = std::fabs(g) * act_scale(d.kind, gv);
    ru.scale[i] = std::isfinite(su) ? su : 0.0;
  }
  GatedGrads out;
  if (d.input == GatedInput::kSplit) {
    out.grad_gate = std::move(rg);
    out.grad_up = std::move(ru);
    return out;
  }
  // Interleave into grad_x's logical order: row r = [first half | second half].
  const std::int64_t dd = d.grad_y.rank == 0 ? 1 : d.grad_y.shape[d.grad_y.rank - 1];
  const int gh = d.gate_half == GateHalf::kFirst ? 0 : 1;
  Result& gx = out.grad_x;
  gx.exact.resize(2 * n);
  gx.naive.resize(2 * n);
  gx.scale.resize(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto row = static_cast<std::int64_t>(i) / dd, col = static_cast<std::int64_t>(i) % dd;
    const auto gi = static_cast<std::size_t>(row * 2 * dd + gh * dd + col);
    const auto ui = static_cast<std::size_t>(row * 2 * dd + (1 - gh) * dd + col);
    gx.exact[gi] = rg.exact[i], gx.naive[gi] = rg.naive[i], gx.scale[gi] = rg.scale[i];
    gx.exact[ui] = ru.exact[i], gx.naive[ui] = ru.naive[i], gx.scale[ui] = ru.scale[i];
  }
  return out;
}

}  // namespace baracuda::reference
