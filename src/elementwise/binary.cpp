// BinaryPlan and BinaryBackwardPlan: descriptors, validation and candidate tables.
//
// Kinds and dtypes: BinaryKindInfo (the table below); docs/semantics.md has the rows.
// Backward: when neither gradient needs a reduction (no operand was broadcast) one map
// computes both; a row broadcast (a bias) takes bcast_reduce_rows_vec16 (one vectorised
// pass for both gradients, then the chunk sums); otherwise the bcast_reduce candidates
// reduce each broadcast operand's gradient over its broadcast dims in two deterministic
// passes through the workspace.
#include <algorithm>
#include <array>
#include <string>

#include "baracuda/ops/elementwise.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch.hpp"
#include "elementwise/launch_column_reduce.hpp"
#include "elementwise/map_family.hpp"

namespace baracuda {

namespace {
// name, floating, integer, boolean, to_bool, differentiable
constexpr bool F = false, T = true;
constexpr std::array<BinaryKindInfo, kNumBinaryKinds> kBinaryInfo = {{
    {"add", T, T, F, F, T},          {"sub", T, T, F, F, T},          {"mul", T, T, F, F, T},
    {"div", T, F, F, F, T},          {"div_floor", T, T, F, F, T},    {"div_trunc", T, T, F, F, T},
    {"pow", T, F, F, F, T},          {"atan2", T, F, F, F, T},        {"hypot", T, F, F, F, T},
    {"copysign", T, F, F, F, T},     {"nextafter", T, F, F, F, F},    {"fmin", T, F, F, F, T},
    {"fmax", T, F, F, F, T},         {"maximum", T, T, F, F, T},      {"minimum", T, T, F, F, T},
    {"fmod", T, T, F, F, T},         {"remainder", T, T, F, F, T},    {"ldexp", T, F, F, F, T},
    {"xlogy", T, F, F, F, T},        {"bitwise_and", F, T, T, F, F},  {"bitwise_or", F, T, T, F, F},
    {"bitwise_xor", F, T, T, F, F},  {"shift_left", F, T, F, F, F},   {"shift_right", F, T, F, F, F},
    {"logical_and", T, T, T, T, F},  {"logical_or", T, T, T, T, F},   {"logical_xor", T, T, T, T, F},
}};
constexpr BinaryKindInfo kUnknownBinaryKind = {"unknown", F, F, F, F, F};
}  // namespace

const BinaryKindInfo& binary_kind_info(BinaryKind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < kBinaryInfo.size() ? kBinaryInfo[i] : kUnknownBinaryKind;
}

const char* binary_kind_name(BinaryKind k) noexcept { return binary_kind_info(k).name; }

std::optional<BinaryKind> parse_binary_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kBinaryInfo.size(); ++i)
    if (name == kBinaryInfo[i].name) return static_cast<BinaryKind>(i);
  return std::nullopt;
}

std::size_t BinaryDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(kind);
  for (const auto* t : {&a, &b, &out}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string BinaryDescriptor::to_string() const {
  return std::string(binary_kind_name(kind)) + "(a=" + a.to_string() + ", b=" + b.to_string() + ", out=" +
         out.to_string() + ")";
}
std::size_t BinaryBackwardDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(kind) * 4 + (compute_grad_a ? 2 : 0) + (compute_grad_b ? 1 : 0);
  for (const auto* t : {&grad_out, &a, &b, &grad_a, &grad_b}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string BinaryBackwardDescriptor::to_string() const {
  std::string s = std::string(binary_kind_name(kind)) + "_backward(grad_out=" + grad_out.to_string() +
                  ", a=" + a.to_string() + ", b=" + b.to_string();
  if (compute_grad_a) s += ", grad_a=" + grad_a.to_string();
  if (compute_grad_b) s += ", grad_b=" + grad_b.to_string();
  return s + ")";
}

namespace elementwise {
namespace {

Status check_kind(BinaryKind k) {
  if (static_cast<unsigned>(k) >= static_cast<unsigned>(kNumBinaryKinds))
    return Status(Code::kInvalidArgument, "kind = " + std::to_string(static_cast<int>(k)) + " is not a BinaryKind");
  return Status::ok();
}

bool is_floating(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

KernelSku binary_sku(DType t, DType out, Direction dir) {
  KernelSku s;
  s.family = "binary";
  s.direction = dir;
  s.in = t;
  s.out = out;
  s.compute = s.precision.accumulator = t == DType::kF64 ? DType::kF64 : (is_floating(t) ? DType::kF32 : t);
  return s;
}
KernelSku binary_sku(DType t, Direction dir) { return binary_sku(t, t, dir); }

// a's dtype must be one the kind runs on; out's is a's, or bool for the logical kinds.
Status check_kind_dtypes(BinaryKind k, const TensorLayout& a, const TensorLayout& out) {
  const BinaryKindInfo& i = binary_kind_info(k);
  return check_dtypes_of_kind(KindDtypes{"binary", i.name, i.floating, i.integer, i.boolean, i.to_bool}, a, "a", out, "out");
}

struct BinarySpec {
  static MapOperands operands(const BinaryDescriptor& d) {
    MapOperands o;
    o.num_out = 1;
    o.num_in = 2;
    o.out[0] = {d.out, "out", d.out.alignment};
    o.in[0] = {broadcast_or_self(d.a, d.out), "a", d.a.alignment};
    o.in[1] = {broadcast_or_self(d.b, d.out), "b", d.b.alignment};
    return o;
  }
  static KernelSku sku(const BinaryDescriptor& d) { return binary_sku(d.a.dtype, d.out.dtype, Direction::kForward); }
  static int fp8_mode(const BinaryDescriptor&) { return 0; }
  static MapPointers pointers(const BinaryArgs& a) {
    MapPointers p;
    p.out[0] = a.out;
    p.in[0] = a.a;
    p.in[1] = a.b;
    return p;
  }
  static Status launch(const BinaryDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_binary_fwd(d.a.dtype, d.kind, p, s);
  }
};

// ---------------------------------------------------------------- backward
bool needs_reduction(const TensorLayout& operand, const TensorLayout& out) { return operand.numel() != out.numel(); }

// The map over the gradients that need no reduction, selected by `which` (0 a, 1 b, 2 both).
MapOperands grad_map_operands(const BinaryBackwardDescriptor& d, int which) {
  MapOperands o;
  const TensorLayout& out = d.grad_out;
  if (which != 1) o.out[o.num_out++] = {broadcast_or_self(d.grad_a, out), "grad_a", d.grad_a.alignment};
  if (which != 0) o.out[o.num_out++] = {broadcast_or_self(d.grad_b, out), "grad_b", d.grad_b.alignment};
  o.in[o.num_in++] = {out, "grad_out", out.alignment};
  if (binary_grad_reads_inputs(d.kind)) {
    o.in[o.num_in++] = {broadcast_or_self(d.a, out), "a", d.a.alignment};
    o.in[o.num_in++] = {broadcast_or_self(d.b, out), "b", d.b.alignment};
  }
  return o;
}

int map_which(const BinaryBackwardDescriptor& d) {
  return d.compute_grad_a && d.compute_grad_b ? 2 : (d.compute_grad_a ? 0 : 1);
}

MapPointers grad_map_pointers(const BinaryBackwardDescriptor& d, const BinaryBackwardArgs& a, int which) {
  MapPointers p;
  int no = 0, ni = 0;
  if (which != 1) p.out[no++] = a.grad_a;
  if (which != 0) p.out[no++] = a.grad_b;
  p.in[ni++] = a.grad_out;
  if (binary_grad_reads_inputs(d.kind)) {
    p.in[ni++] = a.a;
    p.in[ni++] = a.b;
  }
  return p;
}

// Every operand of the backward, for pointer and aliasing checks (the map view: gradients
// that need a reduction have their own shape and so never pass as in-place aliases).
MapOperands all_operands(const BinaryBackwardDescriptor& d) {
  MapOperands o;
  if (d.compute_grad_a) o.out[o.num_out++] = {d.grad_a, "grad_a", d.grad_a.alignment};
  if (d.compute_grad_b) o.out[o.num_out++] = {d.grad_b, "grad_b", d.grad_b.alignment};
  o.in[o.num_in++] = {d.grad_out, "grad_out", d.grad_out.alignment};
  if (binary_grad_reads_inputs(d.kind)) {
    o.in[o.num_in++] = {d.a, "a", d.a.alignment};
    o.in[o.num_in++] = {d.b, "b", d.b.alignment};
  }
  // Compare each output against inputs in the output's own iteration shape.
  for (int k = 0; k < o.num_out; ++k)
    if (!needs_reduction(o.out[k].layout, d.grad_out)) o.out[k].layout = broadcast_or_self(o.out[k].layout, d.grad_out);
  for (int k = 0; k < o.num_in; ++k) o.in[k].layout = broadcast_or_self(o.in[k].layout, d.grad_out);
  return o;
}

MapPointers all_pointers(const BinaryBackwardDescriptor& d, const BinaryBackwardArgs& a) {
  MapPointers p;
  int no = 0, ni = 0;
  if (d.compute_grad_a) p.out[no++] = a.grad_a;
  if (d.compute_grad_b) p.out[no++] = a.grad_b;
  p.in[ni++] = a.grad_out;
  if (binary_grad_reads_inputs(d.kind)) {
    p.in[ni++] = a.a;
    p.in[ni++] = a.b;
  }
  return p;
}

struct BinaryBackwardMapSpec {
  static MapOperands operands(const BinaryBackwardDescriptor& d) { return grad_map_operands(d, map_which(d)); }
  static KernelSku sku(const BinaryBackwardDescriptor& d) { return binary_sku(d.grad_out.dtype, Direction::kBackward); }
  static int fp8_mode(const BinaryBackwardDescriptor&) { return 0; }
  static Status launch(const BinaryBackwardDescriptor& d, const MapParams& p, cudaStream_t s) {
    return launch_binary_bwd_map(d.grad_out.dtype, d.kind, map_which(d), p, s);
  }
};

// Map candidates wrapped so that they refuse problems needing a reduction.
template <MapPath P>
struct BackwardMapCandidate {
  using Desc = BinaryBackwardDescriptor;
  using Args = BinaryBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = BinaryBackwardMapSpec::sku(d);
    pr.sku.impl = map_path_impl(P);
    if (!d.compute_grad_a && !d.compute_grad_b) return pr;
    if (d.compute_grad_a && needs_reduction(d.a, d.grad_out)) pr.rejection = "grad_a needs a reduction over broadcast dims";
    else if (d.compute_grad_b && needs_reduction(d.b, d.grad_out)) pr.rejection = "grad_b needs a reduction over broadcast dims";
    else pr.rejection = map_path_rejection(BinaryBackwardMapSpec::operands(d), P);
    (void)caps;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    return std::shared_ptr<const void>(std::make_shared<MapParams>(make_map_params(BinaryBackwardMapSpec::operands(d), P, 0)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace, cudaStream_t s) {
    if (!d.compute_grad_a && !d.compute_grad_b) return Status::ok();
    MapParams p = *static_cast<const MapParams*>(state);
    MapPointers ptr = grad_map_pointers(d, a, map_which(d));
    for (int k = 0; k < p.num_out; ++k) p.out[k] = ptr.out[k];
    for (int k = 0; k < p.num_in; ++k) p.in[k] = ptr.in[k];
    return BinaryBackwardMapSpec::launch(d, p, s);
  }
};

// ---- bcast_reduce: the general backward
// Gradients of broadcast operands are reduced (pass 1 reads every input); the others are
// computed by one map afterwards, both in one pass when both need no reduction, so an
// in-place gradient (aliasing grad_out) is written only after every read of grad_out.
struct ReduceState {
  bool reduce[2] = {false, false};
  BroadcastReduceParams reduce_params[2];
  std::size_t ws_offset[2] = {0, 0};
  int map_which = -1;  // 0 a, 1 b, 2 both, -1 none
  MapParams map_params;
};

std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

// The forward output's dims of size > 1 in reduction order for operand `which`: the dims it
// was broadcast over (reduced), then the others (kept), each group in dim order.
// Returns the number of reduced dims; *rank gets the number of dims listed.
int reduction_dim_order(const BinaryBackwardDescriptor& d, int which, int (&order)[8], int* rank) {
  const TensorLayout& out = d.grad_out;
  const TensorLayout& x = which == 0 ? d.a : d.b;
  const int rank_diff = out.rank - x.rank;
  auto reduced_dim = [&](int dim) {
    std::int64_t xs = dim < rank_diff ? 1 : x.shape[dim - rank_diff];
    return out.shape[dim] > 1 && xs == 1;
  };
  int n = 0;
  for (int dim = 0; dim < out.rank; ++dim)
    if (reduced_dim(dim)) order[n++] = dim;
  const int num_reduced = n;
  for (int dim = 0; dim < out.rank; ++dim)
    if (!reduced_dim(dim) && out.shape[dim] != 1) order[n++] = dim;
  *rank = n;
  return num_reduced;
}

BroadcastReduceParams make_reduce_params(const BinaryBackwardDescriptor& d, int which, const DeviceCaps& caps,
                                         bool split_index) {
  const TensorLayout& out = d.grad_out;
  const TensorLayout xb = broadcast_or_self(which == 0 ? d.a : d.b, out);
  const TensorLayout gb = broadcast_or_self(which == 0 ? d.grad_a : d.grad_b, out);
  const TensorLayout ab = broadcast_or_self(d.a, out), bb = broadcast_or_self(d.b, out);
  const TensorLayout& x = which == 0 ? d.a : d.b;
  BroadcastReduceParams p;
  p.which = which;
  p.split_index = split_index;
  int order[8], n = 0;
  const int num_reduced = reduction_dim_order(d, which, order, &n);
  p.rank = n;
  p.reduced_rank = num_reduced;
  p.kept = 1;
  p.reduced = 1;
  for (int i = 0; i < n; ++i) {
    int dim = order[i];
    p.shape[i] = out.shape[dim];
    p.strides[0][i] = out.strides[dim];
    p.strides[1][i] = ab.strides[dim];
    p.strides[2][i] = bb.strides[dim];
    if (i < num_reduced) {
      p.reduced *= out.shape[dim];
    } else {
      p.kept_shape[p.kept_rank] = out.shape[dim];
      p.kept_strides[p.kept_rank] = gb.strides[dim];
      ++p.kept_rank;
      p.kept *= out.shape[dim];
    }
  }
  if (out.numel() == 0) {  // a zero-size dim: nothing to sum; the gradient is all zeros
    p.reduced = 0;
    p.kept = x.numel();
    p.rank = 0;
    p.kept_rank = 0;
    for (int dim = 0; dim < xb.rank; ++dim)
      if (out.shape[dim] != 0 && xb.shape[dim] > 1) {
        p.kept_shape[p.kept_rank] = xb.shape[dim];
        p.kept_strides[p.kept_rank++] = gb.strides[dim];
      }
  }
  // Enough (kept x chunk) threads to fill the device twice; chunk_len >= 16.
  const std::int64_t target = static_cast<std::int64_t>(caps.sm_count) * 2048 * 2;
  std::int64_t chunks = p.kept > 0 ? (target + p.kept - 1) / p.kept : 1;
  chunks = std::max<std::int64_t>(1, std::min({chunks, (p.reduced + 15) / 16, std::int64_t{65535}}));
  p.chunk_len = p.reduced > 0 ? (p.reduced + chunks - 1) / chunks : 0;
  p.chunks = p.reduced > 0 ? (p.reduced + p.chunk_len - 1) / p.chunk_len : 0;
  return p;
}

ReduceState make_reduce_state(const BinaryBackwardDescriptor& d, const DeviceCaps& caps, bool split_index,
                              std::size_t* workspace) {
  ReduceState st;
  std::size_t ws = 0;
  bool mapped[2] = {false, false};
  for (int which = 0; which < 2; ++which) {
    if (!(which == 0 ? d.compute_grad_a : d.compute_grad_b)) continue;
    st.reduce[which] = needs_reduction(which == 0 ? d.a : d.b, d.grad_out);
    if (!st.reduce[which]) {
      mapped[which] = true;
      continue;
    }
    st.reduce_params[which] = make_reduce_params(d, which, caps, split_index);
    st.ws_offset[which] = ws;
    const auto& rp = st.reduce_params[which];
    ws += round_up(static_cast<std::size_t>(std::max<std::int64_t>(rp.chunks, 1) * rp.kept) * kBroadcastReduceAccBytes,
                   kWorkspaceAlignment);
  }
  st.map_which = mapped[0] && mapped[1] ? 2 : (mapped[0] ? 0 : (mapped[1] ? 1 : -1));
  if (st.map_which >= 0) st.map_params = make_map_params(grad_map_operands(d, st.map_which), MapPath::kStrided64, 0);
  *workspace = ws;
  return st;
}

// kSplit: pass 1 with split kept / reduced offsets (see broadcast_reduce.cuh).
template <bool kSplit>
struct ReduceCandidate {
  using Desc = BinaryBackwardDescriptor;
  using Args = BinaryBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = BinaryBackwardMapSpec::sku(d);
    pr.sku.impl = kSplit ? "bcast_reduce_split_i64" : "bcast_reduce_i64";
    make_reduce_state(d, caps, kSplit, &pr.workspace_bytes);
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    std::size_t ws = 0;
    return std::shared_ptr<const void>(std::make_shared<ReduceState>(make_reduce_state(d, caps, kSplit, &ws)));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    const auto& st = *static_cast<const ReduceState*>(state);
    const DType t = d.grad_out.dtype;
    for (int which = 0; which < 2; ++which) {
      if (!st.reduce[which]) continue;
      BroadcastReduceParams p = st.reduce_params[which];
      p.grad_out = a.grad_out;
      p.a = a.a;
      p.b = a.b;
      p.grad = which == 0 ? a.grad_a : a.grad_b;
      p.partial = static_cast<char*>(ws.data) + st.ws_offset[which];
      BARACUDA_TRY(launch_binary_bwd_reduce(t, d.kind, p, s));
    }
    if (st.map_which < 0) return Status::ok();
    MapParams p = st.map_params;
    MapPointers ptr = grad_map_pointers(d, a, st.map_which);
    for (int k = 0; k < p.num_out; ++k) p.out[k] = ptr.out[k];
    for (int k = 0; k < p.num_in; ++k) p.in[k] = ptr.in[k];
    return launch_binary_bwd_map(t, d.kind, st.map_which, p, s);
  }
};

// ---- bcast_reduce_rows_vec16: one gradient reduced over leading rows (a bias gradient)
// One pass over [rows, cols] with 16-byte vectors writes the other gradient (if requested)
// and the reduced gradient's per-chunk column sums; a second pass adds the chunks in order
// (kernels/column_reduce.cuh). Accepts when exactly one requested gradient needs a
// reduction and, in the reduction order, every operand touched is [rows, cols] with a row
// stride and one unit-stride run of cols elements (a whole number of 16-byte vectors).

// `l` (broadcast to grad_out) in the order [reduced (nr dims)..., kept...]: the reduced
// dims must collapse to one row stride (a multiple of vec) and the kept dims to one
// unit-stride run. Returns why not ("" = it does) and sets *row_stride.
std::string rows_layout_rejection(const TensorLayout& l, const char* field, int alignment, const int (&order)[8],
                                  int rank, int nr, std::int64_t vec, std::int64_t* row_stride) {
  if (alignment < 16) return std::string(field) + ".alignment = " + std::to_string(alignment) + " < 16 bytes";
  std::int64_t expect = 1;
  for (int i = rank - 1; i >= nr; --i) {
    if (l.strides[order[i]] != expect)
      return std::string(field) + " = " + l.to_string() + " is not one unit-stride run over the kept dims";
    expect *= l.shape[order[i]];
  }
  expect = *row_stride = l.strides[order[nr - 1]];
  for (int i = nr - 2; i >= 0; --i) {
    expect *= l.shape[order[i + 1]];
    if (l.strides[order[i]] != expect)
      return std::string(field) + " = " + l.to_string() + " does not collapse the reduced dims to one row stride";
  }
  if (*row_stride % vec != 0)
    return std::string(field) + " row stride " + std::to_string(*row_stride) + " is not a multiple of " +
           std::to_string(vec);
  return "";
}

ColumnReduceSetup make_column_reduce(const BinaryBackwardDescriptor& d, const DeviceCaps& caps) {
  ColumnReduceSetup cr;
  const TensorLayout& out = d.grad_out;
  const bool reduce_a = d.compute_grad_a && needs_reduction(d.a, out);
  const bool reduce_b = d.compute_grad_b && needs_reduction(d.b, out);
  if (!reduce_a && !reduce_b) return column_reduce_refusal("no requested gradient needs a reduction");
  if (reduce_a && reduce_b) return column_reduce_refusal("both gradients need a reduction");
  if (out.numel() == 0) return column_reduce_refusal("grad_out is empty");
  const int which = reduce_a ? 0 : 1;
  const bool write_other = which == 0 ? d.compute_grad_b : d.compute_grad_a;
  int order[8], rank = 0;
  const int nr = reduction_dim_order(d, which, order, &rank);
  const std::int64_t vec = 16 / static_cast<std::int64_t>(dtype_size(out.dtype));
  ColumnReduceParams& p = cr.params;
  p.which = which;
  p.write_other = write_other;
  p.rows = p.cols = 1;
  for (int i = 0; i < rank; ++i) (i < nr ? p.rows : p.cols) *= out.shape[order[i]];
  if (rank == nr || p.cols % vec != 0)
    return column_reduce_refusal("cols = " + std::to_string(p.cols) + " is not a multiple of the " +
                                 std::to_string(vec) + "-element vector");
  // What the kernel touches: the three with a row stride (ColumnReduceParams::row_stride
  // order), then the reduced operand's input and its gradient (the same in every row).
  const TensorLayout& x = which == 0 ? d.a : d.b;
  const TensorLayout& y = which == 0 ? d.b : d.a;
  const TensorLayout& gx = which == 0 ? d.grad_a : d.grad_b;
  const TensorLayout& gy = which == 0 ? d.grad_b : d.grad_a;
  const bool reads = binary_grad_reads_inputs(d.kind);
  struct Touched {
    const TensorLayout* layout;
    const char* field;
    bool used;
  };
  const Touched touched[] = {{&out, "grad_out", true},
                             {&y, which == 0 ? "b" : "a", reads},
                             {&gy, which == 0 ? "grad_b" : "grad_a", write_other},
                             {&x, which == 0 ? "a" : "b", reads},
                             {&gx, which == 0 ? "grad_a" : "grad_b", true}};
  for (int k = 0; k < 5; ++k) {
    if (!touched[k].used) continue;
    std::int64_t row_stride = 0;
    std::string why = rows_layout_rejection(broadcast_or_self(*touched[k].layout, out), touched[k].field,
                                            touched[k].layout->alignment, order, rank, nr, vec, &row_stride);
    if (!why.empty()) return column_reduce_refusal(why);
    if (k < 3) p.row_stride[k] = row_stride;
  }
  choose_column_chunks(p, vec, caps);
  const std::size_t acc = out.dtype == DType::kF64 ? 8 : 4;
  cr.workspace = round_up(static_cast<std::size_t>(p.chunks * p.cols) * acc, kWorkspaceAlignment);
  return cr;
}

struct ColumnReduceCandidate {
  using Desc = BinaryBackwardDescriptor;
  using Args = BinaryBackwardArgs;
  static Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Args>::Probe pr;
    pr.sku = BinaryBackwardMapSpec::sku(d);
    pr.sku.impl = "bcast_reduce_rows_vec16";
    ColumnReduceSetup cr = make_column_reduce(d, caps);
    pr.rejection = cr.rejection;
    pr.workspace_bytes = cr.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<ColumnReduceParams>(make_column_reduce(d, caps).params));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    ColumnReduceParams p = *static_cast<const ColumnReduceParams*>(state);
    p.grad_out = a.grad_out;
    p.a = a.a;
    p.b = a.b;
    p.grad_reduced = p.which == 0 ? a.grad_a : a.grad_b;
    p.grad_other = p.which == 0 ? a.grad_b : a.grad_a;
    p.partial = ws.data;
    return launch_binary_bwd_column_reduce(d.grad_out.dtype, d.kind, p, s);
  }
};

using BwdCandidate = Candidate<BinaryBackwardDescriptor, BinaryBackwardArgs>;
// The row-broadcast reduction first (it refuses every problem the others suit better), then
// the maps; the split-index reduction before the plain one: it measured 2x faster on the
// H200 (bias_add_bwd bf16 [16384, 8192]: 0.55 ms against 1.12 ms).
constexpr std::array<BwdCandidate, 7> kBackwardCandidates = {
    BwdCandidate{&ColumnReduceCandidate::probe, &ColumnReduceCandidate::prepare, &ColumnReduceCandidate::launch},
    BwdCandidate{&BackwardMapCandidate<MapPath::kVecContig>::probe, &BackwardMapCandidate<MapPath::kVecContig>::prepare,
                 &BackwardMapCandidate<MapPath::kVecContig>::launch},
    BwdCandidate{&BackwardMapCandidate<MapPath::kVecRows>::probe, &BackwardMapCandidate<MapPath::kVecRows>::prepare,
                 &BackwardMapCandidate<MapPath::kVecRows>::launch},
    BwdCandidate{&BackwardMapCandidate<MapPath::kStrided32>::probe, &BackwardMapCandidate<MapPath::kStrided32>::prepare,
                 &BackwardMapCandidate<MapPath::kStrided32>::launch},
    BwdCandidate{&BackwardMapCandidate<MapPath::kStrided64>::probe, &BackwardMapCandidate<MapPath::kStrided64>::prepare,
                 &BackwardMapCandidate<MapPath::kStrided64>::launch},
    BwdCandidate{&ReduceCandidate<true>::probe, &ReduceCandidate<true>::prepare, &ReduceCandidate<true>::launch},
    BwdCandidate{&ReduceCandidate<false>::probe, &ReduceCandidate<false>::prepare, &ReduceCandidate<false>::launch},
};

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<BinaryDescriptor>
    : elementwise::MapFamilyTraits<elementwise::BinarySpec, BinaryDescriptor, BinaryArgs> {
  using Spec = elementwise::BinarySpec;
  static constexpr const char* kFamily = "binary";
  static Status validate(const BinaryDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    BARACUDA_TRY(validate_layout(d.out, "out"));
    BARACUDA_TRY(elementwise::check_kind_dtypes(d.kind, d.a, d.out));
    BARACUDA_TRY(elementwise::check_same_dtype(d.b, "b", d.a, "a"));
    auto shape = broadcast_shape(d.a, d.b, "a", "b");
    if (!shape) return shape.error();
    BARACUDA_TRY(elementwise::check_same_shape(d.out, "out", shape.value(), "broadcast(a, b)"));
    return elementwise::check_output_layout(d.out, "out");
  }
};

template <>
struct FamilyTraits<BinaryBackwardDescriptor> {
  static constexpr const char* kFamily = "binary_backward";
  static Status validate(const BinaryBackwardDescriptor& d) {
    BARACUDA_TRY(elementwise::check_kind(d.kind));
    BARACUDA_TRY(validate_layout(d.grad_out, "grad_out"));
    BARACUDA_TRY(validate_layout(d.a, "a"));
    BARACUDA_TRY(validate_layout(d.b, "b"));
    const BinaryKindInfo& info = binary_kind_info(d.kind);
    if (!info.differentiable)
      return Status(Code::kInvalidArgument, std::string("kind = ") + info.name + " has no backward (not differentiable)");
    BARACUDA_TRY(elementwise::check_math_dtype(d.grad_out, "grad_out", kFamily));
    BARACUDA_TRY(elementwise::check_same_dtype(d.a, "a", d.grad_out, "grad_out"));
    BARACUDA_TRY(elementwise::check_same_dtype(d.b, "b", d.grad_out, "grad_out"));
    auto shape = broadcast_shape(d.a, d.b, "a", "b");
    if (!shape) return shape.error();
    BARACUDA_TRY(elementwise::check_same_shape(d.grad_out, "grad_out", shape.value(), "broadcast(a, b)"));
    if (d.compute_grad_a) {
      BARACUDA_TRY(validate_layout(d.grad_a, "grad_a"));
      BARACUDA_TRY(elementwise::check_same_dtype(d.grad_a, "grad_a", d.grad_out, "grad_out"));
      BARACUDA_TRY(elementwise::check_same_shape(d.grad_a, "grad_a", d.a, "a"));
      BARACUDA_TRY(elementwise::check_output_layout(d.grad_a, "grad_a"));
    }
    if (d.compute_grad_b) {
      BARACUDA_TRY(validate_layout(d.grad_b, "grad_b"));
      BARACUDA_TRY(elementwise::check_same_dtype(d.grad_b, "grad_b", d.grad_out, "grad_out"));
      BARACUDA_TRY(elementwise::check_same_shape(d.grad_b, "grad_b", d.b, "b"));
      BARACUDA_TRY(elementwise::check_output_layout(d.grad_b, "grad_b"));
    }
    return Status::ok();
  }
  static std::span<const Candidate<BinaryBackwardDescriptor, BinaryBackwardArgs>> candidates() {
    return elementwise::kBackwardCandidates;
  }
  static Status check_args(const BinaryBackwardDescriptor& d, const BinaryBackwardArgs& a) {
    return elementwise::check_map_pointers(elementwise::all_operands(d), elementwise::all_pointers(d, a));
  }
};

template class Plan<BinaryDescriptor, BinaryArgs>;
template class Plan<BinaryBackwardDescriptor, BinaryBackwardArgs>;

}  // namespace baracuda
