// BatchNormPlan / GroupNormPlan / InstanceNormPlan and their backward: descriptors'
// hash / to_string, validation, the candidate table and launch parameters
// (kernels/chan_norm.cuh; seam chan_norm_params.hpp). Candidates, best first:
//   planes_vec16    every [N, C, S] operand has unit-stride spatial dims (NCHW-like) with
//                   S and the N / C strides whole 16-byte vectors, 16-byte aligned
//   planes_strided  any strides (64-bit offsets through the spatial dims)
// Both: pass 1 with one warp per (segment, chunk) over about 64 warps per SM, an f64
// finalize kernel, then the apply map; the workspace holds the partials, the per-(n, c)
// coefficients and (GroupNorm backward, InstanceNorm running stats) per-plane sums.
#include <algorithm>
#include <array>
#include <memory>
#include <type_traits>
#include <utility>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "baracuda/ops/batch_norm.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/workspace_align.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/chan_norm_params.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

namespace {
std::size_t hash_all(std::initializer_list<const TensorLayout*> ts, std::initializer_list<std::size_t> extra) {
  std::size_t h = 0;
  for (const auto* t : ts) h = detail::hash_combine(h, t->hash());
  for (std::size_t e : extra) h = detail::hash_combine(h, e);
  return h;
}
std::size_t hd(double v) { return std::hash<double>{}(v); }
std::string num(double v) { return elementwise::number_text(v); }
std::string opt(bool on, const char* name, const TensorLayout& l) { return on ? std::string(", ") + name + "=" + l.to_string() : ""; }
}  // namespace

std::size_t BatchNormDescriptor::hash() const noexcept {
  return hash_all({&x, &y, &weight, &bias, &running_mean, &running_var},
                  {std::size_t{training} | std::size_t{has_weight} << 1 | std::size_t{has_bias} << 2 |
                       std::size_t{has_running_stats} << 3 | std::size_t{save_stats} << 4,
                   hd(momentum), hd(eps)});
}
std::string BatchNormDescriptor::to_string() const {
  return "batch_norm(x=" + x.to_string() + ", y=" + y.to_string() + (training ? ", training" : ", eval") +
         opt(has_weight, "weight", weight) + opt(has_bias, "bias", bias) +
         opt(has_running_stats, "running_mean", running_mean) + opt(has_running_stats, "running_var", running_var) +
         ", momentum=" + num(momentum) + ", eps=" + num(eps) + (save_stats ? ", save_stats)" : ")");
}
std::size_t BatchNormBackwardDescriptor::hash() const noexcept {
  return hash_all({&grad_y, &x, &grad_x, &weight, &grad_weight, &grad_bias, &running_mean, &running_var},
                  {std::size_t{training} | std::size_t{has_weight} << 1 | std::size_t{compute_grad_weight} << 2 |
                       std::size_t{compute_grad_bias} << 3,
                   hd(eps)});
}
std::string BatchNormBackwardDescriptor::to_string() const {
  return "batch_norm_backward(grad_y=" + grad_y.to_string() + ", x=" + x.to_string() + ", grad_x=" + grad_x.to_string() +
         (training ? ", training" : ", eval") + opt(has_weight, "weight", weight) +
         opt(compute_grad_weight, "grad_weight", grad_weight) + opt(compute_grad_bias, "grad_bias", grad_bias) +
         opt(!training, "running_mean", running_mean) + opt(!training, "running_var", running_var) +
         (training ? ")" : ", eps=" + num(eps) + ")");
}
std::size_t GroupNormDescriptor::hash() const noexcept {
  return hash_all({&x, &y, &weight, &bias},
                  {static_cast<std::size_t>(num_groups),
                   std::size_t{has_weight} | std::size_t{has_bias} << 1 | std::size_t{save_stats} << 2, hd(eps)});
}
std::string GroupNormDescriptor::to_string() const {
  return "group_norm(x=" + x.to_string() + ", y=" + y.to_string() + ", num_groups=" + std::to_string(num_groups) +
         opt(has_weight, "weight", weight) + opt(has_bias, "bias", bias) + ", eps=" + num(eps) +
         (save_stats ? ", save_stats)" : ")");
}
std::size_t GroupNormBackwardDescriptor::hash() const noexcept {
  return hash_all({&grad_y, &x, &grad_x, &weight, &grad_weight, &grad_bias},
                  {static_cast<std::size_t>(num_groups),
                   std::size_t{has_weight} | std::size_t{compute_grad_weight} << 1 | std::size_t{compute_grad_bias} << 2});
}
std::string GroupNormBackwardDescriptor::to_string() const {
  return "group_norm_backward(grad_y=" + grad_y.to_string() + ", x=" + x.to_string() + ", grad_x=" + grad_x.to_string() +
         ", num_groups=" + std::to_string(num_groups) + opt(has_weight, "weight", weight) +
         opt(compute_grad_weight, "grad_weight", grad_weight) + opt(compute_grad_bias, "grad_bias", grad_bias) + ")";
}
std::size_t InstanceNormDescriptor::hash() const noexcept {
  return hash_all({&x, &y, &weight, &bias, &running_mean, &running_var},
                  {std::size_t{use_input_stats} | std::size_t{has_weight} << 1 | std::size_t{has_bias} << 2 |
                       std::size_t{has_running_stats} << 3 | std::size_t{save_stats} << 4,
                   hd(momentum), hd(eps)});
}
std::string InstanceNormDescriptor::to_string() const {
  return "instance_norm(x=" + x.to_string() + ", y=" + y.to_string() +
         (use_input_stats ? ", use_input_stats" : ", running stats") + opt(has_weight, "weight", weight) +
         opt(has_bias, "bias", bias) + opt(has_running_stats, "running_mean", running_mean) +
         opt(has_running_stats, "running_var", running_var) + ", momentum=" + num(momentum) + ", eps=" + num(eps) +
         (save_stats ? ", save_stats)" : ")");
}
std::size_t InstanceNormBackwardDescriptor::hash() const noexcept {
  return hash_all({&grad_y, &x, &grad_x, &weight, &grad_weight, &grad_bias, &running_mean, &running_var},
                  {std::size_t{use_input_stats} | std::size_t{has_weight} << 1 | std::size_t{compute_grad_weight} << 2 |
                       std::size_t{compute_grad_bias} << 3,
                   hd(eps)});
}
std::string InstanceNormBackwardDescriptor::to_string() const {
  return "instance_norm_backward(grad_y=" + grad_y.to_string() + ", x=" + x.to_string() +
         ", grad_x=" + grad_x.to_string() + (use_input_stats ? ", use_input_stats" : ", running stats") +
         opt(has_weight, "weight", weight) + opt(compute_grad_weight, "grad_weight", grad_weight) +
         opt(compute_grad_bias, "grad_bias", grad_bias) + opt(!use_input_stats, "running_mean", running_mean) +
         opt(!use_input_stats, "running_var", running_var) + (use_input_stats ? ")" : ", eps=" + num(eps) + ")");
}

namespace chnorm {
namespace {

DType compute_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// A per-channel [C] array in use.
struct ChanArray {
  const TensorLayout* l = nullptr;  // null: not used
  const char* field = "";
  bool output = false;
};

// The family-independent view of a descriptor.
struct View {
  const char* family = "";
  bool bwd = false;
  ChanOp op = ChanOp::kBatchTrain;
  int groups = 0;  // kGroup: groups (InstanceNorm: C)
  bool instance = false;
  const TensorLayout* x = nullptr;
  const TensorLayout* io = nullptr;  // y (forward) or grad_y (backward)
  const char* io_field = "y";
  const TensorLayout* gx = nullptr;  // grad_x (backward)
  ChanArray w, b, rm, rv, gw, gb;
  bool save_stats = false, update_running = false;
  double eps = 0, momentum = 0;
  bool check_eps = false;
  std::int64_t N() const { return x->shape[0]; }
  std::int64_t C() const { return x->shape[1]; }
  std::int64_t S() const {
    std::int64_t s = 1;
    for (int i = 2; i < x->rank; ++i) s *= x->shape[i];
    return s;
  }
  std::int64_t stats_count() const { return op == ChanOp::kGroup ? N() * groups : C(); }
};

ChanArray arr(bool on, const TensorLayout& l, const char* f, bool out = false) {
  return on ? ChanArray{&l, f, out} : ChanArray{};
}

View view_of(const BatchNormDescriptor& d) {
  View v;
  v.family = "batch_norm";
  v.op = d.training ? ChanOp::kBatchTrain : ChanOp::kEval;
  v.x = &d.x;
  v.io = &d.y;
  v.w = arr(d.has_weight, d.weight, "weight");
  v.b = arr(d.has_bias, d.bias, "bias");
  const bool running = d.has_running_stats || !d.training;
  v.rm = arr(running, d.running_mean, "running_mean", d.training);
  v.rv = arr(running, d.running_var, "running_var", d.training);
  v.save_stats = d.training && d.save_stats;
  v.update_running = d.training && d.has_running_stats;
  v.eps = d.eps;
  v.momentum = d.momentum;
  v.check_eps = true;
  return v;
}
View view_of(const BatchNormBackwardDescriptor& d) {
  View v;
  v.family = "batch_norm_backward";
  v.bwd = true;
  v.op = d.training ? ChanOp::kBatchTrain : ChanOp::kEval;
  v.x = &d.x;
  v.io = &d.grad_y;
  v.io_field = "grad_y";
  v.gx = &d.grad_x;
  v.w = arr(d.has_weight, d.weight, "weight");
  v.gw = arr(d.compute_grad_weight, d.grad_weight, "grad_weight", true);
  v.gb = arr(d.compute_grad_bias, d.grad_bias, "grad_bias", true);
  v.rm = arr(!d.training, d.running_mean, "running_mean");
  v.rv = arr(!d.training, d.running_var, "running_var");
  v.eps = d.eps;
  v.check_eps = !d.training;
  return v;
}
View view_of(const GroupNormDescriptor& d) {
  View v;
  v.family = "group_norm";
  v.op = ChanOp::kGroup;
  v.groups = d.num_groups;
  v.x = &d.x;
  v.io = &d.y;
  v.w = arr(d.has_weight, d.weight, "weight");
  v.b = arr(d.has_bias, d.bias, "bias");
  v.save_stats = d.save_stats;
  v.eps = d.eps;
  v.check_eps = true;
  return v;
}
View view_of(const GroupNormBackwardDescriptor& d) {
  View v;
  v.family = "group_norm_backward";
  v.bwd = true;
  v.op = ChanOp::kGroup;
  v.groups = d.num_groups;
  v.x = &d.x;
  v.io = &d.grad_y;
  v.io_field = "grad_y";
  v.gx = &d.grad_x;
  v.w = arr(d.has_weight, d.weight, "weight");
  v.gw = arr(d.compute_grad_weight, d.grad_weight, "grad_weight", true);
  v.gb = arr(d.compute_grad_bias, d.grad_bias, "grad_bias", true);
  return v;
}
View view_of(const InstanceNormDescriptor& d) {
  View v;
  v.family = "instance_norm";
  v.instance = true;
  v.op = d.use_input_stats ? ChanOp::kGroup : ChanOp::kEval;
  v.groups = d.x.rank >= 2 ? static_cast<int>(std::min<std::int64_t>(d.x.shape[1], 0x7fffffff)) : 1;
  v.x = &d.x;
  v.io = &d.y;
  v.w = arr(d.has_weight, d.weight, "weight");
  v.b = arr(d.has_bias, d.bias, "bias");
  const bool running = d.has_running_stats || !d.use_input_stats;
  v.rm = arr(running, d.running_mean, "running_mean", d.use_input_stats);
  v.rv = arr(running, d.running_var, "running_var", d.use_input_stats);
  v.save_stats = d.use_input_stats && d.save_stats;
  v.update_running = d.use_input_stats && d.has_running_stats;
  v.eps = d.eps;
  v.momentum = d.momentum;
  v.check_eps = true;
  return v;
}
View view_of(const InstanceNormBackwardDescriptor& d) {
  View v;
  v.family = "instance_norm_backward";
  v.instance = true;
  v.bwd = true;
  v.op = d.use_input_stats ? ChanOp::kGroup : ChanOp::kEval;
  v.groups = d.x.rank >= 2 ? static_cast<int>(std::min<std::int64_t>(d.x.shape[1], 0x7fffffff)) : 1;
  v.x = &d.x;
  v.io = &d.grad_y;
  v.io_field = "grad_y";
  v.gx = &d.grad_x;
  v.w = arr(d.has_weight, d.weight, "weight");
  v.gw = arr(d.compute_grad_weight, d.grad_weight, "grad_weight", true);
  v.gb = arr(d.compute_grad_bias, d.grad_bias, "grad_bias", true);
  v.rm = arr(!d.use_input_stats, d.running_mean, "running_mean");
  v.rv = arr(!d.use_input_stats, d.running_var, "running_var");
  v.eps = d.eps;
  v.check_eps = !d.use_input_stats;
  return v;
}

// The big operands: x, y / grad_y, grad_x.
struct BigOp {
  const TensorLayout* l;
  const char* field;
};
std::vector<BigOp> bigs(const View& v) {
  std::vector<BigOp> r = {{v.x, "x"}, {v.io, v.io_field}};
  if (v.gx) r.push_back({v.gx, "grad_x"});
  return r;
}
std::vector<ChanArray> arrays(const View& v) {
  std::vector<ChanArray> r;
  for (const ChanArray* a : {&v.w, &v.b, &v.rm, &v.rv, &v.gw, &v.gb})
    if (a->l) r.push_back(*a);
  return r;
}

Status validate_view(const View& v) {
  using namespace elementwise;
  for (const auto& o : bigs(v)) BARACUDA_TRY(validate_layout(*o.l, o.field));
  for (const auto& a : arrays(v)) BARACUDA_TRY(validate_layout(*a.l, a.field));
  const TensorLayout& x = *v.x;
  BARACUDA_TRY(check_math_dtype(x, "x", v.family));
  if (x.rank < 2)
    return Status(Code::kInvalidArgument, "x.rank = " + std::to_string(x.rank) + ": " + v.family +
                                              " needs x as [N, C, *] (rank >= 2)");
  for (const auto& o : bigs(v)) {
    if (o.l == v.x) continue;
    BARACUDA_TRY(check_same_dtype(*o.l, o.field, x, "x"));
    BARACUDA_TRY(check_same_shape(*o.l, o.field, x, "x"));
  }
  BARACUDA_TRY(check_output_layout(v.gx ? *v.gx : *v.io, v.gx ? "grad_x" : "y"));
  const std::int64_t C = v.C();
  if (C < 1) return Status(Code::kInvalidArgument, "x.shape[1] = " + std::to_string(C) + ": no channels");
  const DType cd = compute_of(x.dtype);
  for (const auto& a : arrays(v)) {
    if (a.l->rank != 1 || a.l->shape[0] != C)
      return Status(Code::kInvalidArgument, std::string(a.field) + " = " + a.l->to_string() + " is not [C] = [" +
                                                std::to_string(C) + "] (x.shape[1])");
    if (a.l->dtype != x.dtype && a.l->dtype != cd)
      return Status(Code::kInvalidArgument, std::string(a.field) + ".dtype = " + std::string(dtype_name(a.l->dtype)) +
                                                " is neither x.dtype = " + std::string(dtype_name(x.dtype)) +
                                                " nor the compute type " + std::string(dtype_name(cd)));
    if (a.output) BARACUDA_TRY(check_output_layout(*a.l, a.field));
  }
  if (v.op == ChanOp::kGroup && !v.instance) {
    if (v.groups < 1 || C % v.groups != 0)
      return Status(Code::kInvalidArgument, "num_groups = " + std::to_string(v.groups) + " does not divide x.shape[1] = " +
                                                std::to_string(C) + " (needs num_groups >= 1)");
  }
  if (v.check_eps && (!(v.eps >= 0) || !std::isfinite(v.eps)))
    return Status(Code::kInvalidArgument, "eps = " + num(v.eps) + " must be finite and >= 0");
  if (v.update_running && !std::isfinite(v.momentum))
    return Status(Code::kInvalidArgument, "momentum = " + num(v.momentum) + " must be finite");
  // PyTorch's refusals (F.batch_norm / F.instance_norm / F.group_norm); empty inputs are
  // accepted as torch accepts them (see setup_for and the header for what they write).
  const std::int64_t N = v.N(), S = v.S();
  if (v.op == ChanOp::kBatchTrain && !v.bwd && N * S == 1)
    return Status(Code::kInvalidArgument, "x = " + x.to_string() + ": batch_norm training needs more than 1 value per "
                                              "channel (N * spatial = 1)");
  if (v.op == ChanOp::kGroup && v.instance && !v.bwd && S == 1)
    return Status(Code::kInvalidArgument, "x = " + x.to_string() + ": instance_norm with input stats needs more than 1 "
                                              "spatial element (spatial = 1)");
  if (v.op == ChanOp::kGroup && !v.instance && !v.bwd && N > 0 && S < 1)
    return Status(Code::kInvalidArgument, "x = " + x.to_string() + ": spatial size 0 (no values per group)");
  return Status::ok();
}

// ---- candidates
struct Setup {
  std::string rejection;
  ChanNormParams params;
  std::size_t workspace = 0;
};

Setup setup_for(const View& v, bool vec, const DeviceCaps& caps) {
  Setup r;
  ChanNormParams& p = r.params;
  p.op = v.op;
  p.bwd = v.bwd;
  p.N = v.N();
  p.C = v.C();
  p.S = v.S();
  p.G = v.op == ChanOp::kGroup ? v.groups : p.C;
  p.Cg = p.C / p.G;
  const auto ops = bigs(v);
  const int nops = static_cast<int>(ops.size());
  // operand k of the params: 0 = x, 1 = y / grad_y, 2 = grad_x (same order as bigs)
  for (int k = 0; k < nops; ++k) {
    p.sN[k] = ops[k].l->strides[0];
    p.sC[k] = ops[k].l->strides[1];
  }
  // the spatial dims, collapsed over every operand
  const int sr = v.x->rank - 2;
  if (sr > 0) {
    TensorLayout sp[kOps];
    const TensorLayout* ptrs[kOps];
    for (int k = 0; k < nops; ++k) {
      sp[k] = *ops[k].l;
      sp[k].rank = sr;
      for (int i = 0; i < sr; ++i) {
        sp[k].shape[i] = ops[k].l->shape[i + 2];
        sp[k].strides[i] = ops[k].l->strides[i + 2];
      }
      ptrs[k] = &sp[k];
    }
    const CollapsedDims c = collapse_dims(std::span<const TensorLayout* const>(ptrs, static_cast<std::size_t>(nops)));
    p.sp_rank = c.rank;
    for (int d = 0; d < c.rank; ++d) {
      p.sp_shape[d] = c.shape[d];
      for (int k = 0; k < nops; ++k) p.sp_stride[k][d] = c.strides[k][d];
    }
  }
  const DType t = v.x->dtype;
  const int esize = static_cast<int>(dtype_size(t));
  p.vec = vec ? 16 / esize : 1;
  if (vec) {
    const std::int64_t V = p.vec;
    if (p.S % V != 0) {
      r.rejection = "spatial size " + std::to_string(p.S) + " is not a multiple of the " + std::to_string(V) +
                    "-element vector";
      return r;
    }
    for (int k = 0; k < nops; ++k) {
      const TensorLayout& l = *ops[k].l;
      const std::string f = ops[k].field;
      if (p.sp_rank != 1 || p.sp_stride[k][0] != 1) {
        r.rejection = f + " = " + l.to_string() + ": the spatial dims are not one unit-stride run";
        return r;
      }
      if (l.alignment < 16) {
        r.rejection = f + ".alignment = " + std::to_string(l.alignment) + " < 16 bytes";
        return r;
      }
      if ((p.N > 1 && p.sN[k] % V != 0) || (p.C > 1 && p.sC[k] % V != 0)) {
        r.rejection = f + " = " + l.to_string() + ": the N / C strides are not whole " + std::to_string(V) +
                      "-element vectors";
        return r;
      }
    }
  }
  // pass 1 segments
  if (v.op != ChanOp::kGroup) {
    p.segs = p.C;
    p.seg_lo = p.C;
    p.planes = p.N;
    for (int k = 0; k < nops; ++k) {
      p.seg_lo_stride[k] = p.sC[k];
      p.plane_stride[k] = p.sN[k];
    }
  } else if (!v.bwd) {
    p.segs = p.N * p.G;
    p.seg_lo = p.G;
    p.planes = p.Cg;
    for (int k = 0; k < nops; ++k) {
      p.seg_hi_stride[k] = p.sN[k];
      p.seg_lo_stride[k] = p.Cg * p.sC[k];
      p.plane_stride[k] = p.sC[k];
    }
  } else {
    p.segs = p.N * p.C;
    p.seg_lo = p.C;
    p.planes = 1;
    p.mean_div = p.Cg;
    for (int k = 0; k < nops; ++k) {
      p.seg_hi_stride[k] = p.sN[k];
      p.seg_lo_stride[k] = p.sC[k];
    }
  }
  const std::int64_t m = p.planes * p.S;
  const std::int64_t sweep = 32 * static_cast<std::int64_t>(p.vec);  // one warp-wide load
  const std::int64_t target = std::max(1, caps.sm_count) * 64;      // ~64 resident warps per SM
  std::int64_t chunks = std::max<std::int64_t>(1, (target + p.segs - 1) / std::max<std::int64_t>(1, p.segs));
  chunks = std::min(chunks, std::max<std::int64_t>(1, (m + sweep - 1) / sweep));
  chunks = std::max(chunks, (m + (1 << 22) - 1) / (1 << 22));  // f32 counts stay exact
  std::int64_t len = std::max<std::int64_t>(1, (m + chunks - 1) / chunks);
  len = (len + sweep - 1) / sweep * sweep;
  p.chunk_len = len;
  p.chunks = std::max<std::int64_t>(1, (m + len - 1) / len);
  if ((p.segs * p.chunks + kWarpsPerBlock - 1) / kWarpsPerBlock > 0x7fffffff) {
    r.rejection = "x = " + v.x->to_string() + " needs too many pass-1 blocks";
    return r;
  }
  p.coef_n_stride = v.op == ChanOp::kGroup ? p.C : 0;
  const std::int64_t total = p.N * p.C * (p.S / p.vec);
  p.apply_blocks = std::clamp<std::int64_t>((total + 255) / 256, 1, std::max(1, caps.sm_count) * 32);
  // flags and per-channel arrays
  p.has_weight = v.w.l != nullptr;
  p.has_bias = v.b.l != nullptr;
  p.save_stats = v.save_stats;
  // Empty inputs (as PyTorch): BatchNorm with N * S == 0 and InstanceNorm with S == 0 leave
  // the running stats as they are; InstanceNorm with N == 0 averages the update over no
  // instance and writes NaN (chan_finalize_instance_running).
  p.update_running = v.update_running && (v.op == ChanOp::kGroup ? p.N == 0 || p.S > 0 : p.N * p.S > 0);
  p.grad_weight_on = v.gw.l != nullptr;
  p.grad_bias_on = v.gb.l != nullptr;
  auto chan = [&](const ChanArray& a, std::int64_t& stride, bool& is_c) {
    if (!a.l) return;
    stride = a.l->strides[0];
    is_c = a.l->dtype != t;
  };
  chan(v.w, p.w_stride, p.w_c);
  chan(v.b, p.b_stride, p.b_c);
  chan(v.rm, p.rm_stride, p.rm_c);
  chan(v.rv, p.rv_stride, p.rv_c);
  chan(v.gw, p.gw_stride, p.gw_c);
  chan(v.gb, p.gb_stride, p.gb_c);
  p.eps = v.eps;
  p.momentum = v.momentum;
  // workspace: partials | coefficients | extra
  const std::size_t cs = dtype_size(compute_of(t));
  const bool pass1 = v.bwd || v.op != ChanOp::kEval;
  const std::size_t partial = pass1 ? static_cast<std::size_t>(p.segs * p.chunks) * (v.bwd ? 2 : 3) * cs : 0;
  const std::size_t coefs = static_cast<std::size_t>(v.op == ChanOp::kGroup ? p.N * p.C : p.C) * 4 * cs;
  const bool extra = v.op == ChanOp::kGroup && (v.bwd || v.update_running);
  p.partial_off = 0;
  p.coef_off = align_workspace(partial);
  p.extra_off = p.coef_off + align_workspace(coefs);
  r.workspace = p.extra_off + (extra ? align_workspace(static_cast<std::size_t>(p.N * p.C) * 2 * sizeof(double)) : 0);
  return r;
}

struct ImplInfo {
  bool vec;
  const char* name;
};
constexpr ImplInfo kImpls[] = {{true, "planes_vec16"}, {false, "planes_strided"}};

KernelSku sku_of(const View& v, const ImplInfo& info) {
  KernelSku k;
  k.family = v.family;
  if (v.bwd) k.family.resize(k.family.size() - std::string("_backward").size());
  k.direction = v.bwd ? Direction::kBackward : Direction::kForward;
  k.impl = info.name;
  k.in = k.out = v.x->dtype;
  k.compute = k.precision.accumulator = compute_of(v.x->dtype);
  return k;
}

// ---- run: pointers
// The saved statistics: [count] contiguous in the compute type.
TensorLayout stats_layout(const View& v) {
  const DType cd = compute_of(v.x->dtype);
  return TensorLayout::contiguous(cd, {v.stats_count()}, static_cast<int>(dtype_size(cd)));
}

// Every pointer of the plan with its layout, in a fixed order (big operands, arrays, stats).
struct RunPtrs {
  const void* x = nullptr;
  const void* io = nullptr;  // y (fwd, written) / grad_y (bwd, read)
  const void* gx = nullptr;
  const void* w = nullptr;
  const void* b = nullptr;
  const void* rm = nullptr;
  const void* rv = nullptr;
  const void* gw = nullptr;
  const void* gb = nullptr;
  const void* mean = nullptr;
  const void* rstd = nullptr;
};
Status check_run_pointers(const View& v, const RunPtrs& r, const char* mean_field, const char* rstd_field) {
  using norm::PtrOperand;
  std::vector<PtrOperand> ops = {{r.x, *v.x, "x", false}, {r.io, *v.io, v.io_field, !v.bwd}};
  if (v.gx) ops.push_back({r.gx, *v.gx, "grad_x", true});
  const std::pair<const ChanArray*, const void*> arrs[] = {{&v.w, r.w},   {&v.b, r.b},   {&v.rm, r.rm},
                                                          {&v.rv, r.rv}, {&v.gw, r.gw}, {&v.gb, r.gb}};
  for (const auto& [a, ptr] : arrs)
    if (a->l) ops.push_back({ptr, *a->l, a->field, a->output, false});
  const bool stats = v.bwd ? v.op != ChanOp::kEval : v.save_stats;
  if (stats) {
    ops.push_back({r.mean, stats_layout(v), mean_field, !v.bwd, false});
    ops.push_back({r.rstd, stats_layout(v), rstd_field, !v.bwd, false});
  }
  return norm::check_operand_pointers(ops);
}

Status launch_params(ChanNormParams p, DType t, Workspace ws, cudaStream_t s) {
  p.ws = ws.data;
  switch (t) {
    case DType::kF64: return p.bwd ? launch_chan_norm_bwd<DType::kF64>(p, s) : launch_chan_norm_fwd<DType::kF64>(p, s);
    case DType::kF32: return p.bwd ? launch_chan_norm_bwd<DType::kF32>(p, s) : launch_chan_norm_fwd<DType::kF32>(p, s);
    case DType::kF16: return p.bwd ? launch_chan_norm_bwd<DType::kF16>(p, s) : launch_chan_norm_fwd<DType::kF16>(p, s);
    case DType::kBF16: return p.bwd ? launch_chan_norm_bwd<DType::kBF16>(p, s) : launch_chan_norm_fwd<DType::kBF16>(p, s);
    default: return Status(Code::kNotBuilt, "chan_norm: no kernels for dtype " + std::string(dtype_name(t)));
  }
}

// Args -> run pointers and params pointers, per plan.
RunPtrs run_ptrs(const BatchNormArgs& a) {
  return {a.x, a.y, nullptr, a.weight, a.bias, a.running_mean, a.running_var, nullptr, nullptr, a.save_mean, a.save_invstd};
}
RunPtrs run_ptrs(const BatchNormBackwardArgs& a) {
  return {a.x, a.grad_y, a.grad_x, a.weight, nullptr, a.running_mean, a.running_var, a.grad_weight, a.grad_bias,
          a.save_mean, a.save_invstd};
}
RunPtrs run_ptrs(const GroupNormArgs& a) {
  return {a.x, a.y, nullptr, a.weight, a.bias, nullptr, nullptr, nullptr, nullptr, a.mean, a.rstd};
}
RunPtrs run_ptrs(const GroupNormBackwardArgs& a) {
  return {a.x, a.grad_y, a.grad_x, a.weight, nullptr, nullptr, nullptr, a.grad_weight, a.grad_bias, a.mean, a.rstd};
}
RunPtrs run_ptrs(const InstanceNormArgs& a) {
  return {a.x, a.y, nullptr, a.weight, a.bias, a.running_mean, a.running_var, nullptr, nullptr, a.mean, a.rstd};
}
RunPtrs run_ptrs(const InstanceNormBackwardArgs& a) {
  return {a.x, a.grad_y, a.grad_x, a.weight, nullptr, a.running_mean, a.running_var, a.grad_weight, a.grad_bias,
          a.mean, a.rstd};
}
template <class Args>
constexpr const char* mean_field() {
  return std::is_same_v<Args, BatchNormArgs> || std::is_same_v<Args, BatchNormBackwardArgs> ? "save_mean" : "mean";
}
template <class Args>
constexpr const char* rstd_field() {
  return std::is_same_v<Args, BatchNormArgs> || std::is_same_v<Args, BatchNormBackwardArgs> ? "save_invstd" : "rstd";
}

template <class Desc, class Args, int I>
struct ChanCandidate {
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    typename Candidate<Desc, Args>::Probe pr;
    const View v = view_of(d);
    pr.sku = sku_of(v, kImpls[I]);
    Setup st = setup_for(v, kImpls[I].vec, caps);
    pr.rejection = std::move(st.rejection);
    pr.workspace_bytes = st.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<ChanNormParams>(setup_for(view_of(d), kImpls[I].vec, caps).params));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    ChanNormParams p = *static_cast<const ChanNormParams*>(state);
    const RunPtrs r = run_ptrs(a);
    p.x = r.x;
    if (p.bwd) {
      p.dy = r.io;
      p.out = const_cast<void*>(r.gx);
    } else {
      p.out = const_cast<void*>(r.io);
    }
    p.weight = r.w;
    p.bias = r.b;
    p.running_mean = const_cast<void*>(r.rm);
    p.running_var = const_cast<void*>(r.rv);
    p.grad_weight = const_cast<void*>(r.gw);
    p.grad_bias = const_cast<void*>(r.gb);
    p.stat_mean = const_cast<void*>(r.mean);
    p.stat_rstd = const_cast<void*>(r.rstd);
    return launch_params(p, d.x.dtype, ws, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};
template <class Desc, class Args>
inline constexpr std::array<Candidate<Desc, Args>, 2> kCandidates = {ChanCandidate<Desc, Args, 0>::make(),
                                                                    ChanCandidate<Desc, Args, 1>::make()};

}  // namespace
}  // namespace chnorm

#define BARACUDA_CHAN_NORM_TRAITS(DESC, ARGS, NAME)                                                       \
  template <>                                                                                             \
  struct FamilyTraits<DESC> {                                                                             \
    static constexpr const char* kFamily = NAME;                                                          \
    static Status validate(const DESC& d) { return chnorm::validate_view(chnorm::view_of(d)); }           \
    static std::span<const Candidate<DESC, ARGS>> candidates() { return chnorm::kCandidates<DESC, ARGS>; } \
    static Status check_args(const DESC& d, const ARGS& a) {                                              \
      return chnorm::check_run_pointers(chnorm::view_of(d), chnorm::run_ptrs(a), chnorm::mean_field<ARGS>(), \
                                        chnorm::rstd_field<ARGS>());                                      \
    }                                                                                                     \
  };                                                                                                      \
  template class Plan<DESC, ARGS>;
BARACUDA_CHAN_NORM_TRAITS(BatchNormDescriptor, BatchNormArgs, "batch_norm")
BARACUDA_CHAN_NORM_TRAITS(BatchNormBackwardDescriptor, BatchNormBackwardArgs, "batch_norm_backward")
BARACUDA_CHAN_NORM_TRAITS(GroupNormDescriptor, GroupNormArgs, "group_norm")
BARACUDA_CHAN_NORM_TRAITS(GroupNormBackwardDescriptor, GroupNormBackwardArgs, "group_norm_backward")
BARACUDA_CHAN_NORM_TRAITS(InstanceNormDescriptor, InstanceNormArgs, "instance_norm")
BARACUDA_CHAN_NORM_TRAITS(InstanceNormBackwardDescriptor, InstanceNormBackwardArgs, "instance_norm_backward")
#undef BARACUDA_CHAN_NORM_TRAITS

}  // namespace baracuda
