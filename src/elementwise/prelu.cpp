// PReluPlan (a map with the weight as a broadcast view: every map path) and
// PReluBackwardPlan (one SKU, "chunked_reduce_i64": grad_x and the per-channel weight
// gradient in two deterministic passes through the workspace; kernels/prelu.cuh).
#include <algorithm>
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "elementwise/prelu_params.hpp"

namespace baracuda {

std::size_t PReluDescriptor::hash() const noexcept {
  return detail::hash_combine(detail::hash_combine(x.hash(), weight.hash()), y.hash());
}
std::string PReluDescriptor::to_string() const {
  return "prelu(x=" + x.to_string() + ", weight=" + weight.to_string() + ", y=" + y.to_string() + ")";
}
std::size_t PReluBackwardDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(compute_grad_x) * 2 + static_cast<std::size_t>(compute_grad_weight);
  for (const auto* t : {&grad_y, &x, &weight, &grad_x, &grad_weight}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string PReluBackwardDescriptor::to_string() const {
  std::string s = "prelu_backward(grad_y=" + grad_y.to_string() + ", x=" + x.to_string() + ", weight=" + weight.to_string();
  if (compute_grad_x) s += ", grad_x=" + grad_x.to_string();
  if (compute_grad_weight) s += ", grad_weight=" + grad_weight.to_string();
  return s + ")";
}

namespace elementwise {
namespace {

std::int64_t channels_of(const TensorLayout& x, const TensorLayout& w) {
  return w.numel() == 1 ? 1 : (x.rank >= 2 ? x.shape[1] : 1);
}
std::int64_t weight_stride(const TensorLayout& w) { return w.rank == 1 ? w.strides[0] : 0; }

// The weight seen in x's shape: stride along dim 1 for a per-channel weight, 0 elsewhere.
TensorLayout weight_view(const TensorLayout& x, const TensorLayout& w) {
  TensorLayout v = x;
  v.dtype = w.dtype;
  v.alignment = w.alignment;
  for (int i = 0; i < v.rank; ++i) v.strides[i] = 0;
  if (w.numel() != 1 && x.rank >= 2) v.strides[1] = weight_stride(w);
  return v;
}

DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

KernelSku prelu_sku(DType t, Direction dir) {
  KernelSku s;
  s.family = "prelu";
  s.direction = dir;
  s.in = s.out = t;
  s.compute = s.precision.accumulator = compute_of(t);
  return s;
}

Status launch_fwd(DType t, const MapParams& p, cudaStream_t s) {
  switch (t) {
    case DType::kF64: return launch_prelu_fwd<DType::kF64>(p, s);
    case DType::kF32: return launch_prelu_fwd<DType::kF32>(p, s);
    case DType::kF16: return launch_prelu_fwd<DType::kF16>(p, s);
    case DType::kBF16: return launch_prelu_fwd<DType::kBF16>(p, s);
    default: return Status(Code::kNotBuilt, "prelu: no kernels for dtype " + std::string(dtype_name(t)));
  }
}
Status launch_bwd(DType t, const PReluBwdParams& p, cudaStream_t s) {
  switch (t) {
    case DType::kF64: return launch_prelu_bwd<DType::kF64>(p, s);
    case DType::kF32: return launch_prelu_bwd<DType::kF32>(p, s);
    case DType::kF16: return launch_prelu_bwd<DType::kF16>(p, s);
    case DType::kBF16: return launch_prelu_bwd<DType::kBF16>(p, s);
    default: return Status(Code::kNotBuilt, "prelu_backward: no kernels for dtype " + std::string(dtype_name(t)));
  }
}

struct PReluFwdSpec {
  static MapOperands operands(const PReluDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.y, "y", d.y.alignment};
    o.in[0] = {d.x, "x", d.x.alignment};
    o.in[1] = {weight_view(d.x, d.weight), "weight", d.weight.alignment};
    return o;
  }
  static KernelSku sku(const PReluDescriptor& d) { return prelu_sku(d.x.dtype, Direction::kForward); }
  static int fp8_mode(const PReluDescriptor&) { return 0; }
  static MapPointers pointers(const PReluArgs& a) {
    MapPointers p;
    p.out[0] = a.y;
    p.in[0] = a.x;
    p.in[1] = a.weight;
    return p;
  }
  static Status launch(const PReluDescriptor& d, const MapParams& p, cudaStream_t s) { return launch_fwd(d.x.dtype, p, s); }
};

// The weight rule shared by forward and backward.
Status check_weight(const TensorLayout& x, const TensorLayout& w) {
  if (w.rank > 1)
    return Status(Code::kInvalidArgument, "weight.rank = " + std::to_string(w.rank) + " (weight is [C] or a single element)");
  const std::int64_t c = x.rank >= 2 ? x.shape[1] : 1;
  if (w.numel() != 1 && w.numel() != c)
    return Status(Code::kInvalidArgument, "weight = " + w.to_string() + " has " + std::to_string(w.numel()) +
                                              " elements: needs 1 or x.shape[1] = " + (x.rank >= 2 ? std::to_string(c) : "(x has no dim 1)"));
  return Status::ok();
}

// ---- backward
struct PReluBwdState {
  PReluBwdParams params;
};

PReluBwdParams make_bwd_params(const PReluBackwardDescriptor& d) {
  PReluBwdParams p;
  p.compute_grad_x = d.compute_grad_x;
  p.compute_grad_weight = d.compute_grad_weight;
  const TensorLayout& x = d.x;
  p.channels = channels_of(x, d.weight);
  if (p.channels == 1) {
    p.outer = 1;
    p.inner = x.numel();
  } else {
    p.outer = x.shape[0];
    p.inner = 1;
    for (int i = 2; i < x.rank; ++i) p.inner *= x.shape[i];
  }
  const std::int64_t len = p.outer * p.inner;
  if (len > 0) {
    // ~2048 blocks in all, at least 256 elements per chunk, at most 65535 chunks.
    std::int64_t chunks = std::clamp<std::int64_t>((2048 + p.channels - 1) / p.channels, 1, 65535);
    chunks = std::min(chunks, (len + 255) / 256);
    p.chunk_len = (len + chunks - 1) / chunks;
    p.chunks = (len + p.chunk_len - 1) / p.chunk_len;
  }
  p.weight_stride = weight_stride(d.weight);
  p.grad_weight_stride = weight_stride(d.grad_weight);
  p.rank = x.rank;
  for (int i = 0; i < x.rank; ++i) {
    p.shape[i] = x.shape[i];
    p.strides[0][i] = d.grad_y.strides[i];
    p.strides[1][i] = x.strides[i];
    p.strides[2][i] = d.compute_grad_x ? d.grad_x.strides[i] : 0;
  }
  return p;
}

std::size_t bwd_workspace(const PReluBackwardDescriptor& d, const PReluBwdParams& p) {
  if (!d.compute_grad_weight) return 0;
  const std::size_t bytes = static_cast<std::size_t>(p.chunks * p.channels) * (d.x.dtype == DType::kF64 ? 8 : 4);
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

struct PReluBwdCandidate {
  using Desc = PReluBackwardDescriptor;
  using Args = PReluBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = prelu_sku(d.x.dtype, Direction::kBackward);
    pr.sku.impl = "chunked_reduce_i64";
    pr.workspace_bytes = bwd_workspace(d, make_bwd_params(d));
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    return std::shared_ptr<const void>(std::make_shared<PReluBwdState>(PReluBwdState{make_bwd_params(d)}));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    PReluBwdParams p = static_cast<const PReluBwdState*>(state)->params;
    p.grad_y = a.grad_y;
    p.x = a.x;
    p.weight = a.weight;
    p.grad_x = a.grad_x;
    p.grad_weight = a.grad_weight;
    p.partial = ws.data;
    return launch_bwd(d.x.dtype, p, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};
inline constexpr std::array<Candidate<PReluBackwardDescriptor, PReluBackwardArgs>, 1> kPReluBwdCandidates = {
    PReluBwdCandidate::make()};

// Outputs first (grad_weight, then grad_x), then grad_y, x, weight, for the pointer checks.
MapOperands bwd_operands(const PReluBackwardDescriptor& d) {
  MapOperands o;
  if (d.compute_grad_weight) o.out[o.num_out++] = {d.grad_weight, "grad_weight", d.grad_weight.alignment};
  if (d.compute_grad_x) o.out[o.num_out++] = {d.grad_x, "grad_x", d.grad_x.alignment};
  o.in[o.num_in++] = {d.grad_y, "grad_y", d.grad_y.alignment};
  o.in[o.num_in++] = {d.x, "x", d.x.alignment};
  o.in[o.num_in++] = {d.weight, "weight", d.weight.alignment};
  return o;
}
MapPointers bwd_pointers(const PReluBackwardDescriptor& d, const PReluBackwardArgs& a) {
  MapPointers p;
  int k = 0;
  if (d.compute_grad_weight) p.out[k++] = a.grad_weight;
  if (d.compute_grad_x) p.out[k++] = a.grad_x;
  p.in[0] = a.grad_y;
  p.in[1] = a.x;
  p.in[2] = a.weight;
  return p;
}

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<PReluDescriptor> {
  using Spec = elementwise::PReluFwdSpec;
  static constexpr const char* kFamily = "prelu";
  static Status validate(const PReluDescriptor& d) {
    using namespace elementwise;
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.weight, "weight"));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    BARACUDA_TRY(check_math_dtype(d.x, "x", "prelu"));
    BARACUDA_TRY(check_same_dtype(d.weight, "weight", d.x, "x"));
    BARACUDA_TRY(check_same_dtype(d.y, "y", d.x, "x"));
    BARACUDA_TRY(check_same_shape(d.y, "y", d.x, "x"));
    BARACUDA_TRY(check_weight(d.x, d.weight));
    return check_output_layout(d.y, "y");
  }
  static std::span<const Candidate<PReluDescriptor, PReluArgs>> candidates() {
    return elementwise::kMapCandidates<Spec, PReluDescriptor, PReluArgs>;
  }
  static Status check_args(const PReluDescriptor& d, const PReluArgs& a) {
    return elementwise::check_map_pointers(Spec::operands(d), Spec::pointers(a));
  }
};

template <>
struct FamilyTraits<PReluBackwardDescriptor> {
  static constexpr const char* kFamily = "prelu_backward";
  static Status validate(const PReluBackwardDescriptor& d) {
    using namespace elementwise;
    if (!d.compute_grad_x && !d.compute_grad_weight)
      return Status(Code::kInvalidArgument, "compute_grad_x = false and compute_grad_weight = false: nothing to compute");
    BARACUDA_TRY(validate_layout(d.grad_y, "grad_y"));
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.weight, "weight"));
    BARACUDA_TRY(check_math_dtype(d.x, "x", "prelu_backward"));
    BARACUDA_TRY(check_same_dtype(d.grad_y, "grad_y", d.x, "x"));
    BARACUDA_TRY(check_same_dtype(d.weight, "weight", d.x, "x"));
    BARACUDA_TRY(check_same_shape(d.grad_y, "grad_y", d.x, "x"));
    BARACUDA_TRY(check_weight(d.x, d.weight));
    if (d.compute_grad_x) {
      BARACUDA_TRY(validate_layout(d.grad_x, "grad_x"));
      BARACUDA_TRY(check_same_dtype(d.grad_x, "grad_x", d.x, "x"));
      BARACUDA_TRY(check_same_shape(d.grad_x, "grad_x", d.x, "x"));
      BARACUDA_TRY(check_output_layout(d.grad_x, "grad_x"));
    }
    if (d.compute_grad_weight) {
      BARACUDA_TRY(validate_layout(d.grad_weight, "grad_weight"));
      BARACUDA_TRY(check_same_dtype(d.grad_weight, "grad_weight", d.x, "x"));
      BARACUDA_TRY(check_same_shape(d.grad_weight, "grad_weight", d.weight, "weight"));
      BARACUDA_TRY(check_output_layout(d.grad_weight, "grad_weight"));
    }
    return Status::ok();
  }
  static std::span<const Candidate<PReluBackwardDescriptor, PReluBackwardArgs>> candidates() {
    return elementwise::kPReluBwdCandidates;
  }
  static Status check_args(const PReluBackwardDescriptor& d, const PReluBackwardArgs& a) {
    return elementwise::check_map_pointers(elementwise::bwd_operands(d), elementwise::bwd_pointers(d, a));
  }
};

template class Plan<PReluDescriptor, PReluArgs>;
template class Plan<PReluBackwardDescriptor, PReluBackwardArgs>;

}  // namespace baracuda
