// AlibiPlan / AlibiBackwardPlan: validation, the slopes helper, two candidates and their launch
// shapes (kernels: kernels/alibi.cuh; seam: alibi_params.hpp). Candidates, best first:
//   vec16_rows  unit-stride key dim, 16-byte vectors (Skv and the other strides whole vectors)
//   strided     any strides (element loads, 64-bit offsets)
// The backward's slope gradient runs two passes through the workspace (deterministic).
#include <algorithm>
#include <cmath>
#include <string>

#include "attention/alibi_params.hpp"
#include "baracuda/ops/alibi.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/table_candidates.hpp"
#include "core/workspace_align.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

std::vector<float> alibi_slopes(std::int64_t num_heads) {
  std::vector<float> out;
  if (num_heads < 1) return out;
  // HF build_alibi_tensor: closest_power_of_2 = 2 ** floor(log2(n)); base = 2^(-(2^-(log2(p) - 3)))
  std::int64_t p = 1;
  while (p * 2 <= num_heads) p *= 2;
  auto slope = [](std::int64_t pw, std::int64_t k) {  // base^k with base = 2^(-8 / pw)
    return static_cast<float>(std::pow(2.0, -8.0 * static_cast<double>(k) / static_cast<double>(pw)));
  };
  for (std::int64_t k = 1; k <= p; ++k) out.push_back(slope(p, k));
  for (std::int64_t k = 1; static_cast<std::int64_t>(out.size()) < num_heads; k += 2) out.push_back(slope(2 * p, k));
  return out;
}

namespace {
const char* align_text(CausalAlign a) { return a == CausalAlign::kTopLeft ? "top_left" : "bottom_right"; }
std::string opt(const char* name, const TensorLayout& t) {
  return t.rank == 0 ? std::string() : std::string(", ") + name + "=" + t.to_string();
}
}  // namespace

std::size_t AlibiDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(align) + 7;
  for (const auto* t : {&s, &y, &slopes}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string AlibiDescriptor::to_string() const {
  return "alibi(" + (s.rank ? "s=" + s.to_string() + ", " : std::string()) + "y=" + y.to_string() +
         ", slopes=" + slopes.to_string() + ", align=" + align_text(align) + ")";
}
std::size_t AlibiBackwardDescriptor::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(align) + 13;
  for (const auto* t : {&grad_y, &grad_s, &grad_slopes}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string AlibiBackwardDescriptor::to_string() const {
  return "alibi_backward(grad_y=" + grad_y.to_string() + opt("grad_s", grad_s) + opt("grad_slopes", grad_slopes) +
         ", align=" + align_text(align) + ")";
}

namespace alibi {
namespace {

// Both directions as one view: in -> out (either may be absent), slopes or their gradient.
struct Operands {
  const TensorLayout* in;
  const TensorLayout* out;
  const TensorLayout* slopes;
  const char* in_field;
  const char* out_field;
  const char* slopes_field;
  CausalAlign align;
  bool backward;
  const TensorLayout& scores() const { return backward ? *in : *out; }
  bool has_in() const { return in->rank != 0; }
  bool has_out() const { return out->rank != 0; }
  bool has_slopes() const { return slopes->rank != 0; }
};
Operands operands_of(const AlibiDescriptor& d) { return {&d.s, &d.y, &d.slopes, "s", "y", "slopes", d.align, false}; }
Operands operands_of(const AlibiBackwardDescriptor& d) {
  return {&d.grad_y, &d.grad_s, &d.grad_slopes, "grad_y", "grad_s", "grad_slopes", d.align, true};
}

Status validate_operands(const Operands& o) {
  using namespace elementwise;
  const TensorLayout& sc = o.scores();
  const char* sf = o.backward ? o.in_field : o.out_field;
  if (static_cast<int>(o.align) > static_cast<int>(CausalAlign::kBottomRight))
    return Status(Code::kInvalidArgument, "align = " + std::to_string(static_cast<int>(o.align)) + " is not a CausalAlign");
  BARACUDA_TRY(validate_layout(sc, sf));
  BARACUDA_TRY(check_math_dtype(sc, sf, o.backward ? "alibi_backward" : "alibi"));
  if (sc.rank != 4)
    return Status(Code::kInvalidArgument, std::string(sf) + " = " + sc.to_string() + " must be [B, H, Sq, Skv] (rank 4)");
  const TensorLayout* other = o.backward ? o.out : o.in;
  const char* of = o.backward ? o.out_field : o.in_field;
  if (other->rank != 0) {
    BARACUDA_TRY(validate_layout(*other, of));
    BARACUDA_TRY(check_same_dtype(*other, of, sc, sf));
    BARACUDA_TRY(check_same_shape(*other, of, sc, sf));
  }
  if (o.has_out()) BARACUDA_TRY(check_output_layout(*o.out, o.out_field));
  if (o.backward && !o.has_out() && !o.has_slopes())
    return Status(Code::kInvalidArgument, "grad_s and grad_slopes are both absent: nothing to compute");
  if (!o.has_slopes()) {
    if (!o.backward) return Status(Code::kInvalidArgument, "slopes are absent (f32 [H] or [B, H] needed)");
    return Status::ok();
  }
  const TensorLayout& sl = *o.slopes;
  BARACUDA_TRY(validate_layout(sl, o.slopes_field));
  if (sl.dtype != DType::kF32)
    return Status(Code::kInvalidArgument, std::string(o.slopes_field) + ".dtype = " + std::string(dtype_name(sl.dtype)) + " must be f32");
  const std::int64_t b = sc.shape[0], h = sc.shape[1];
  const bool ok = (sl.rank == 1 && sl.shape[0] == h) || (sl.rank == 2 && sl.shape[0] == b && sl.shape[1] == h);
  if (!ok)
    return Status(Code::kInvalidArgument, std::string(o.slopes_field) + " = " + sl.to_string() + " must be [H] = [" +
                                              std::to_string(h) + "] or [B, H] = [" + std::to_string(b) + ", " +
                                              std::to_string(h) + "]");
  if (o.backward) BARACUDA_TRY(check_output_layout(sl, o.slopes_field));
  return Status::ok();
}

constexpr const char* kImplNames[] = {"vec16_rows", "strided"};

struct Setup {
  std::string rejection;
  AlibiParams params;
  std::size_t workspace = 0;
};

constexpr std::int64_t kTargetBlocks = 2048;  // slope-gradient pass 1: about this many blocks

Setup setup_for(int impl, const Operands& o) {
  Setup r;
  AlibiParams& p = r.params;
  const TensorLayout& sc = o.scores();
  p.batch = sc.shape[0];
  p.heads = sc.shape[1];
  p.sq = sc.shape[2];
  p.skv = sc.shape[3];
  p.offset = o.align == CausalAlign::kBottomRight ? p.skv - p.sq : 0;
  p.add_bias = !o.backward;
  for (int a = 0; a < 4; ++a) {
    p.in_stride[a] = o.has_in() ? o.in->strides[a] : 0;
    p.out_stride[a] = o.has_out() ? o.out->strides[a] : 0;
  }
  if (o.has_slopes()) {
    p.per_batch = o.slopes->rank == 2;
    p.slope_stride[0] = p.per_batch ? o.slopes->strides[0] : 0;
    p.slope_stride[1] = o.slopes->strides[o.slopes->rank - 1];
  }
  if (impl == 0) {
    const std::int64_t v = 16 / static_cast<std::int64_t>(dtype_size(sc.dtype));
    if (p.skv % v != 0) {
      r.rejection = "Skv = " + std::to_string(p.skv) + " is not a multiple of the " + std::to_string(v) + "-element vector";
      return r;
    }
    for (int k = 0; k < 2; ++k) {
      const bool present = k == 0 ? o.has_in() : o.has_out();
      if (!present) continue;
      const TensorLayout& l = k == 0 ? *o.in : *o.out;
      const char* f = k == 0 ? o.in_field : o.out_field;
      if (l.alignment < 16) {
        r.rejection = std::string(f) + ".alignment = " + std::to_string(l.alignment) + " < 16 bytes";
        return r;
      }
      if (l.strides[3] != 1 && p.skv > 1) {
        r.rejection = std::string(f) + " key stride " + std::to_string(l.strides[3]) + " (needs 1)";
        return r;
      }
      for (int a = 0; a < 3; ++a)
        if (l.strides[a] % v != 0) {
          r.rejection = std::string(f) + " = " + l.to_string() + " has a stride that is not a multiple of " + std::to_string(v);
          return r;
        }
    }
    p.vec = static_cast<int>(v);
    p.vec16 = true;
  }
  const std::int64_t rows = p.batch * p.heads * p.sq;
  const std::int64_t wpb = kAlibiThreads / 32;
  const bool work = sc.numel() > 0 && (!o.backward || o.has_out());
  p.grid = work ? std::min<std::int64_t>((rows + wpb - 1) / wpb, 0x7fffffff) : 0;
  if (o.backward && o.has_slopes()) {
    p.groups = p.per_batch ? p.batch * p.heads : p.heads;
    const std::int64_t group_rows = p.per_batch ? p.sq : p.batch * p.sq;
    std::int64_t chunks = std::clamp<std::int64_t>((kTargetBlocks + p.groups - 1) / std::max<std::int64_t>(p.groups, 1), 1,
                                                   std::max<std::int64_t>(group_rows, 1));
    p.rows_per_chunk = std::max<std::int64_t>((group_rows + chunks - 1) / chunks, 1);
    p.chunks = std::max<std::int64_t>((group_rows + p.rows_per_chunk - 1) / p.rows_per_chunk, 1);
    if (p.groups * p.chunks > 0x7fffffff) {
      r.rejection = "slopes x chunks = " + std::to_string(p.groups * p.chunks) + " exceed the grid";
      return r;
    }
    const auto bytes = static_cast<std::size_t>(p.groups * p.chunks) * sizeof(double);
    r.workspace = align_workspace(bytes);
  }
  return r;
}

KernelSku sku_of(const Operands& o, int i) {
  KernelSku s;
  s.family = "alibi";
  s.direction = o.backward ? Direction::kBackward : Direction::kForward;
  s.impl = kImplNames[i];
  s.in = s.out = o.scores().dtype;
  const bool f64 = s.in == DType::kF64 || (o.backward && o.has_slopes());
  s.compute = s.precision.accumulator = f64 ? DType::kF64 : DType::kF32;
  return s;
}

Status launch_dtype(DType t, const AlibiParams& p, cudaStream_t s) {
  switch (t) {
    case DType::kF64: return launch_alibi<DType::kF64>(p, s);
    case DType::kF32: return launch_alibi<DType::kF32>(p, s);
    case DType::kF16: return launch_alibi<DType::kF16>(p, s);
    case DType::kBF16: return launch_alibi<DType::kBF16>(p, s);
    default: return Status(Code::kNotBuilt, "alibi: no kernels for dtype " + std::string(dtype_name(t)));
  }
}

void bind(AlibiParams& p, const Operands&, const AlibiArgs& a, Workspace) {
  p.in = a.s;
  p.out = a.y;
  p.slopes = a.slopes;
}
void bind(AlibiParams& p, const Operands& o, const AlibiBackwardArgs& a, Workspace ws) {
  p.in = a.grad_y;
  // grad_s in place of grad_y holds the result already
  p.out = o.has_out() && a.grad_s != a.grad_y ? a.grad_s : nullptr;
  p.grad_slopes = o.has_slopes() ? a.grad_slopes : nullptr;
  p.partial = static_cast<double*>(ws.data);
  if (p.out == nullptr) p.grid = 0;
}

struct AlibiTable {
  using Params = AlibiParams;
  static constexpr int kCount = 2;
  template <class Desc>
  static Setup setup(int i, const Desc& d, const DeviceCaps&) {
    return setup_for(i, operands_of(d));
  }
  template <class Desc>
  static KernelSku sku(int i, const Desc& d) {
    return sku_of(operands_of(d), i);
  }
  template <class Desc, class Args>
  static Status launch(AlibiParams p, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    const Operands o = operands_of(d);
    bind(p, o, a, ws);
    if (!o.has_in()) p.in = nullptr;
    return launch_dtype(o.scores().dtype, p, s);
  }
};
template <class Desc, class Args>
inline constexpr auto kCandidates = kTableCandidates<AlibiTable, Desc, Args>;

Status check_pointers(const Operands& o, const void* in, void* out, const void* slopes) {
  std::vector<norm::PtrOperand> ops;
  if (o.has_out()) ops.push_back({out, *o.out, o.out_field, true, true});
  if (o.has_slopes()) ops.push_back({slopes, *o.slopes, o.slopes_field, o.backward, false});
  if (o.has_in()) ops.push_back({in, *o.in, o.in_field, false, true});
  return norm::check_operand_pointers(ops);
}

}  // namespace
}  // namespace alibi

template <>
struct FamilyTraits<AlibiDescriptor> {
  static constexpr const char* kFamily = "alibi";
  static Status validate(const AlibiDescriptor& d) { return alibi::validate_operands(alibi::operands_of(d)); }
  static std::span<const Candidate<AlibiDescriptor, AlibiArgs>> candidates() {
    return alibi::kCandidates<AlibiDescriptor, AlibiArgs>;
  }
  static Status check_args(const AlibiDescriptor& d, const AlibiArgs& a) {
    return alibi::check_pointers(alibi::operands_of(d), a.s, a.y, a.slopes);
  }
};

template <>
struct FamilyTraits<AlibiBackwardDescriptor> {
  static constexpr const char* kFamily = "alibi_backward";
  static Status validate(const AlibiBackwardDescriptor& d) { return alibi::validate_operands(alibi::operands_of(d)); }
  static std::span<const Candidate<AlibiBackwardDescriptor, AlibiBackwardArgs>> candidates() {
    return alibi::kCandidates<AlibiBackwardDescriptor, AlibiBackwardArgs>;
  }
  static Status check_args(const AlibiBackwardDescriptor& d, const AlibiBackwardArgs& a) {
    return alibi::check_pointers(alibi::operands_of(d), a.grad_y, a.grad_s, a.grad_slopes);
  }
};

template class Plan<AlibiDescriptor, AlibiArgs>;
template class Plan<AlibiBackwardDescriptor, AlibiBackwardArgs>;

}  // namespace baracuda
