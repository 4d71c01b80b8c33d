// PReluPlan (a map with the weight as a broadcast view: every map path) and
// PReluBackwardPlan, two SKUs, both deterministic (two passes through the workspace):
//  * "rows_vec16" first: x, grad_y and grad_x collapse to [rows, C] with the channel dim
//    innermost and unit-stride (x [N, C], [N, C, 1, ...]); the column reduction of
//    kernels/column_reduce.cuh with 16-byte vectors (a = x, b = weight);
//  * "chunked_reduce_i64": any layout; one block per (channel, chunk), 64-bit offsets
//    through x's rank (kernels/prelu.cuh).
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/workspace_align.hpp"
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

// Calls launch(std::integral_constant<DType, D>) for the floating dtypes built.
template <class Launch>
Status with_float_dtype(DType t, const char* what, Launch&& launch) {
  switch (t) {
    case DType::kF64: return launch(std::integral_constant<DType, DType::kF64>{});
    case DType::kF32: return launch(std::integral_constant<DType, DType::kF32>{});
    case DType::kF16: return launch(std::integral_constant<DType, DType::kF16>{});
    case DType::kBF16: return launch(std::integral_constant<DType, DType::kBF16>{});
    default: return Status(Code::kNotBuilt, std::string(what) + ": no kernels for dtype " + std::string(dtype_name(t)));
  }
}
Status launch_fwd(DType t, const MapParams& p, cudaStream_t s) {
  return with_float_dtype(t, "prelu", [&](auto d) { return launch_prelu_fwd<decltype(d)::value>(p, s); });
}
Status launch_bwd(DType t, const PReluBwdParams& p, cudaStream_t s) {
  return with_float_dtype(t, "prelu_backward", [&](auto d) { return launch_prelu_bwd<decltype(d)::value>(p, s); });
}
Status launch_rows(DType t, const ColumnReduceParams& p, cudaStream_t s) {
  return with_float_dtype(t, "prelu_backward", [&](auto d) { return launch_prelu_bwd_rows<decltype(d)::value>(p, s); });
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

// Workspace of both SKUs: chunks x channels partial sums in the compute type, none without
// the weight gradient.
std::size_t partials_workspace(const PReluBackwardDescriptor& d, std::int64_t chunks, std::int64_t channels) {
  if (!d.compute_grad_weight) return 0;
  const std::size_t bytes = static_cast<std::size_t>(chunks * channels) * (d.x.dtype == DType::kF64 ? 8 : 4);
  return align_workspace(bytes);
}

// ---- rows_vec16: the channel dim is the innermost unit-stride run: [rows, C].
// Why `l` ([rows, C, 1, ...]) is not rows of C unit-stride elements, 16-byte aligned,
// with a row stride that keeps every row aligned ("" = it is); sets *row_stride.
std::string rows_operand_rejection(const TensorLayout& l, const char* field, std::int64_t vec,
                                   std::int64_t* row_stride) {
  if (l.alignment < 16) return std::string(field) + ".alignment = " + std::to_string(l.alignment) + " < 16 bytes";
  if (l.strides[1] != 1)
    return std::string(field) + " = " + l.to_string() + " has channel stride " + std::to_string(l.strides[1]) +
           " (needs 1)";
  *row_stride = l.shape[0] > 1 ? l.strides[0] : 0;
  if (*row_stride % vec != 0)
    return std::string(field) + " row stride " + std::to_string(*row_stride) + " is not a multiple of " +
           std::to_string(vec);
  return "";
}
// The 1-D weight or its gradient: unit stride, 16-byte aligned.
std::string rows_channel_rejection(const TensorLayout& l, const char* field) {
  if (l.alignment < 16) return std::string(field) + ".alignment = " + std::to_string(l.alignment) + " < 16 bytes";
  if (l.strides[0] != 1) return std::string(field) + " = " + l.to_string() + " is not unit-stride";
  return "";
}

ColumnReduceSetup make_rows(const PReluBackwardDescriptor& d, const DeviceCaps& caps) {
  const TensorLayout& x = d.x;
  if (d.weight.numel() == 1)
    return column_reduce_refusal("weight = " + d.weight.to_string() + " is a single weight (no channel dim)");
  if (x.numel() == 0) return column_reduce_refusal("x is empty");
  for (int i = 2; i < x.rank; ++i)
    if (x.shape[i] != 1)
      return column_reduce_refusal("x = " + x.to_string() + " has dims of size > 1 after the channel dim 1");
  const std::int64_t vec = 16 / static_cast<std::int64_t>(dtype_size(x.dtype));
  ColumnReduceSetup r;
  ColumnReduceParams& p = r.params;
  p.which = 1;  // a = x, b = weight: the weight's gradient is reduced
  p.write_other = d.compute_grad_x;
  p.write_reduced = d.compute_grad_weight;
  p.rows = x.shape[0];
  p.cols = x.shape[1];
  if (p.cols % vec != 0)
    return column_reduce_refusal("channels = " + std::to_string(p.cols) + " is not a multiple of the " +
                                 std::to_string(vec) + "-element vector");
  struct Touched {
    const TensorLayout* layout;
    const char* field;
    bool used;
  };
  const Touched rows[] = {{&d.grad_y, "grad_y", true}, {&x, "x", true}, {&d.grad_x, "grad_x", d.compute_grad_x}};
  for (int k = 0; k < 3; ++k) {
    if (!rows[k].used) continue;
    std::string why = rows_operand_rejection(*rows[k].layout, rows[k].field, vec, &p.row_stride[k]);
    if (!why.empty()) return column_reduce_refusal(why);
  }
  std::string why = rows_channel_rejection(d.weight, "weight");
  if (why.empty() && d.compute_grad_weight) why = rows_channel_rejection(d.grad_weight, "grad_weight");
  if (!why.empty()) return column_reduce_refusal(why);
  choose_column_chunks(p, vec, caps);
  r.workspace = partials_workspace(d, p.chunks, p.cols);
  return r;
}

// Run: the pointers of `a` into the SKU's parameters, then its launcher.
Status launch_rows_with(ColumnReduceParams p, DType t, const PReluBackwardArgs& a, Workspace ws, cudaStream_t s) {
  p.grad_out = a.grad_y;
  p.a = a.x;
  p.b = a.weight;
  p.grad_other = a.grad_x;
  p.grad_reduced = a.grad_weight;
  p.partial = ws.data;
  return launch_rows(t, p, s);
}
Status launch_chunked_with(PReluBwdParams p, DType t, const PReluBackwardArgs& a, Workspace ws, cudaStream_t s) {
  p.grad_y = a.grad_y;
  p.x = a.x;
  p.weight = a.weight;
  p.grad_x = a.grad_x;
  p.grad_weight = a.grad_weight;
  p.partial = ws.data;
  return launch_bwd(t, p, s);
}

// The two SKUs: their names, select-time setup (rejection, parameters, workspace) and run.
struct RowsSku {
  static constexpr const char* kImpl = "rows_vec16";
  static ColumnReduceSetup setup(const PReluBackwardDescriptor& d, const DeviceCaps& caps) {
    return make_rows(d, caps);
  }
  static constexpr auto launch = &launch_rows_with;
};
struct ChunkedSku {
  static constexpr const char* kImpl = "chunked_reduce_i64";
  struct Setup {
    std::string rejection;  // none: any layout
    PReluBwdParams params;
    std::size_t workspace = 0;
  };
  static Setup setup(const PReluBackwardDescriptor& d, const DeviceCaps&) {
    Setup r{"", make_bwd_params(d)};
    r.workspace = partials_workspace(d, r.params.chunks, r.params.channels);
    return r;
  }
  static constexpr auto launch = &launch_chunked_with;
};

template <class Sku>
struct PReluBwdCandidate {
  using Desc = PReluBackwardDescriptor;
  using Args = PReluBackwardArgs;
  using Params = decltype(Sku::setup(std::declval<const Desc&>(), std::declval<const DeviceCaps&>()).params);
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = prelu_sku(d.x.dtype, Direction::kBackward);
    pr.sku.impl = Sku::kImpl;
    auto r = Sku::setup(d, caps);
    pr.rejection = r.rejection;
    pr.workspace_bytes = r.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<Params>(Sku::setup(d, caps).params));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    return Sku::launch(*static_cast<const Params*>(state), d.x.dtype, a, ws, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};
// rows_vec16 first: it refuses every layout but [rows, C] with C unit-stride.
inline constexpr std::array<Candidate<PReluBackwardDescriptor, PReluBackwardArgs>, 2> kPReluBwdCandidates = {
    PReluBwdCandidate<RowsSku>::make(), PReluBwdCandidate<ChunkedSku>::make()};

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
struct FamilyTraits<PReluDescriptor>
    : elementwise::MapFamilyTraits<elementwise::PReluFwdSpec, PReluDescriptor, PReluArgs> {
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
