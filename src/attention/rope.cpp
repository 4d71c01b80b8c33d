// RopePlan / RopeBackwardPlan: validation, HF's inv_freq rules, the two candidates and their
// launch shapes (kernels: kernels/rope.cuh; seam: rope_params.hpp). Candidates, best first:
//   vec16    unit-stride head dim, 16-byte vectors (R / 2 or R, and D, whole vectors)
//   strided  any strides (element loads, 64-bit offsets)
// Both directions share everything: the backward is the forward with sin negated.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "attention/rope_params.hpp"
#include "baracuda/ops/rope.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/table_candidates.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

const char* rope_style_name(RopeStyle s) noexcept {
  switch (s) {
    case RopeStyle::kNeox: return "neox";
    case RopeStyle::kInterleaved: return "interleaved";
  }
  return "?";
}
const char* rope_scaling_name(RopeScaling s) noexcept {
  switch (s) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kNtk: return "ntk";
    case RopeScaling::kYarn: return "yarn";
    case RopeScaling::kLlama3: return "llama3";
  }
  return "?";
}

namespace {

using elementwise::number_text;

Status bad_option(const char* field, double v, const char* why) {
  return Status(Code::kInvalidArgument, std::string("options.") + field + " = " + number_text(v) + ": " + why);
}
bool positive(double v) { return std::isfinite(v) && v > 0; }

// HF _compute_yarn_parameters' find_correction_dim.
double yarn_correction_dim(double rotations, double dim, double base, double max_pos) {
  return dim * std::log(max_pos / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}

}  // namespace

double rope_attention_factor(const RopeOptions& o) noexcept {
  if (o.scaling != RopeScaling::kYarn) return 1.0;
  if (o.attention_factor > 0) return o.attention_factor;
  return o.factor <= 1 ? 1.0 : 0.1 * std::log(o.factor) + 1.0;
}

Expected<std::vector<double>> rope_inv_freq(const RopeOptions& o, std::int64_t rotary_dim) {
  const std::int64_t r = rotary_dim;
  if (r < 2 || r % 2 != 0)
    return Status(Code::kInvalidArgument, "rotary_dim = " + std::to_string(r) + " must be even and >= 2");
  if (!positive(o.theta) || o.theta == 1.0) return bad_option("theta", o.theta, "the base must be finite, > 0 and != 1");
  if (static_cast<int>(o.scaling) > static_cast<int>(RopeScaling::kLlama3))
    return Status(Code::kInvalidArgument, "options.scaling = " + std::to_string(static_cast<int>(o.scaling)) +
                                              " is not a RopeScaling");
  if (o.scaling != RopeScaling::kNone && !positive(o.factor)) return bad_option("factor", o.factor, "must be finite and > 0");
  const double dim = static_cast<double>(r);
  double base = o.theta;
  if (o.scaling == RopeScaling::kNtk) {
    if (r == 2) return Status(Code::kInvalidArgument, "rotary_dim = 2: ntk scaling needs rotary_dim > 2 (factor^(R/(R-2)))");
    base = o.theta * std::pow(o.factor, dim / (dim - 2));
  }
  const auto n = static_cast<std::size_t>(r / 2);
  std::vector<double> inv(n);
  for (std::size_t i = 0; i < n; ++i) inv[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);
  switch (o.scaling) {
    case RopeScaling::kNone:
    case RopeScaling::kNtk: break;
    case RopeScaling::kLinear:
      for (auto& v : inv) v /= o.factor;
      break;
    case RopeScaling::kYarn: {
      if (o.original_max_position <= 0)
        return Status(Code::kInvalidArgument, "options.original_max_position = " + std::to_string(o.original_max_position) +
                                                  ": yarn needs the original context length (> 0)");
      if (!positive(o.beta_fast)) return bad_option("beta_fast", o.beta_fast, "must be finite and > 0");
      if (!positive(o.beta_slow)) return bad_option("beta_slow", o.beta_slow, "must be finite and > 0");
      if (!(o.attention_factor >= 0) || !std::isfinite(o.attention_factor))
        return bad_option("attention_factor", o.attention_factor, "must be finite and >= 0 (0: the default)");
      const double orig = static_cast<double>(o.original_max_position);
      double low = std::floor(yarn_correction_dim(o.beta_fast, dim, base, orig));
      double high = std::ceil(yarn_correction_dim(o.beta_slow, dim, base, orig));
      low = std::max(low, 0.0);
      high = std::min(high, dim - 1);
      if (low == high) high += 0.001;
      for (std::size_t i = 0; i < n; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1.0 - ramp;  // HF's inv_freq_extrapolation_factor
        const double interp = inv[i] / o.factor;
        inv[i] = interp * (1 - extrapolation) + inv[i] * extrapolation;
      }
      break;
    }
    case RopeScaling::kLlama3: {
      if (o.original_max_position <= 0)
        return Status(Code::kInvalidArgument, "options.original_max_position = " + std::to_string(o.original_max_position) +
                                                  ": llama3 needs the original context length (> 0)");
      if (!positive(o.low_freq_factor)) return bad_option("low_freq_factor", o.low_freq_factor, "must be finite and > 0");
      if (!positive(o.high_freq_factor) || o.high_freq_factor == o.low_freq_factor)
        return bad_option("high_freq_factor", o.high_freq_factor, "must be finite, > 0 and != low_freq_factor");
      const double old_len = static_cast<double>(o.original_max_position);
      const double low_wavelen = old_len / o.low_freq_factor, high_wavelen = old_len / o.high_freq_factor;
      for (auto& v : inv) {
        const double wavelen = 2 * std::numbers::pi / v;
        const double scaled = wavelen > low_wavelen ? v / o.factor : v;
        const double smooth = (old_len / wavelen - o.low_freq_factor) / (o.high_freq_factor - o.low_freq_factor);
        const double smoothed = (1 - smooth) * scaled / o.factor + smooth * scaled;
        const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
        v = medium ? smoothed : scaled;
      }
      break;
    }
  }
  return inv;
}

namespace {
std::size_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return static_cast<std::size_t>(b);
}
std::size_t options_hash(const RopeOptions& o) {
  std::size_t h = static_cast<std::size_t>(o.style) * 8 + static_cast<std::size_t>(o.scaling);
  for (std::int64_t v : {o.rotary_dim, static_cast<std::int64_t>(o.seq_axis), o.position_offset, o.original_max_position})
    h = detail::hash_combine(h, static_cast<std::size_t>(v));
  for (double v : {o.theta, o.factor, o.beta_fast, o.beta_slow, o.attention_factor, o.low_freq_factor, o.high_freq_factor})
    h = detail::hash_combine(h, bits_of(v));
  return h;
}
std::string options_text(const RopeOptions& o, bool cached) {
  std::string s = std::string(", style=") + rope_style_name(o.style) + ", rotary_dim=" + std::to_string(o.rotary_dim) +
                  ", seq_axis=" + std::to_string(o.seq_axis);
  if (o.position_offset) s += ", position_offset=" + std::to_string(o.position_offset);
  if (!cached) {
    s += ", theta=" + number_text(o.theta) + ", scaling=" + rope_scaling_name(o.scaling);
    if (o.scaling != RopeScaling::kNone) s += ", factor=" + number_text(o.factor);
    if (o.scaling == RopeScaling::kYarn)
      s += ", beta_fast=" + number_text(o.beta_fast) + ", beta_slow=" + number_text(o.beta_slow) +
           ", attention_factor=" + number_text(o.attention_factor);
    if (o.scaling == RopeScaling::kLlama3)
      s += ", low_freq_factor=" + number_text(o.low_freq_factor) + ", high_freq_factor=" + number_text(o.high_freq_factor);
    if (o.scaling == RopeScaling::kYarn || o.scaling == RopeScaling::kLlama3)
      s += ", original_max_position=" + std::to_string(o.original_max_position);
  }
  return s + ")";
}
std::string optional_text(const char* name, const TensorLayout& t) {
  return t.rank == 0 ? std::string() : std::string(", ") + name + "=" + t.to_string();
}
}  // namespace

std::size_t RopeDescriptor::hash() const noexcept {
  std::size_t h = options_hash(options);
  for (const auto* t : {&x, &y, &x2, &y2, &position_ids, &cos, &sin}) h = detail::hash_combine(h, t->hash());
  return h;
}
std::string RopeDescriptor::to_string() const {
  return "rope(x=" + x.to_string() + ", y=" + y.to_string() + optional_text("x2", x2) + optional_text("y2", y2) +
         optional_text("position_ids", position_ids) + optional_text("cos", cos) + optional_text("sin", sin) +
         options_text(options, cos.rank != 0);
}
std::size_t RopeBackwardDescriptor::hash() const noexcept {
  std::size_t h = options_hash(options) * 3 + 1;
  for (const auto* t : {&grad_y, &grad_x, &grad_y2, &grad_x2, &position_ids, &cos, &sin})
    h = detail::hash_combine(h, t->hash());
  return h;
}
std::string RopeBackwardDescriptor::to_string() const {
  return "rope_backward(grad_y=" + grad_y.to_string() + ", grad_x=" + grad_x.to_string() + optional_text("grad_y2", grad_y2) +
         optional_text("grad_x2", grad_x2) + optional_text("position_ids", position_ids) + optional_text("cos", cos) +
         optional_text("sin", sin) + options_text(options, cos.rank != 0);
}

namespace rope {
namespace {

// Both directions as one view: in[k] -> out[k] (k = 0: x / grad_y, 1: x2 / grad_y2).
struct Operands {
  const TensorLayout* in[2];
  const TensorLayout* out[2];
  const char* in_field[2];
  const char* out_field[2];
  const TensorLayout* position_ids;
  const TensorLayout* cos;
  const TensorLayout* sin;
  const RopeOptions* options;
  bool backward;
  bool has_second() const { return in[1]->rank != 0; }
  std::int64_t rotary_dim() const {
    return options->rotary_dim ? options->rotary_dim : in[0]->shape[in[0]->rank - 1];
  }
};
Operands operands_of(const RopeDescriptor& d) {
  return {{&d.x, &d.x2}, {&d.y, &d.y2}, {"x", "x2"}, {"y", "y2"}, &d.position_ids, &d.cos, &d.sin, &d.options, false};
}
Operands operands_of(const RopeBackwardDescriptor& d) {
  return {{&d.grad_y, &d.grad_y2}, {&d.grad_x, &d.grad_x2}, {"grad_y", "grad_y2"}, {"grad_x", "grad_x2"},
          &d.position_ids,         &d.cos,                   &d.sin,                 &d.options, true};
}

// Axes of x: rank 4 [B, S, H, D] (seq 1) / [B, H, S, D] (seq 2); rank 3 [S, H, D] (seq 0) /
// [B, S, D] (seq 1, one head).
struct Axes {
  int batch = -1, seq = 0, head = -1, dim = 0;
};
Axes axes_of(int rank, int seq_axis) {
  Axes a;
  a.seq = seq_axis;
  a.dim = rank - 1;
  if (rank == 4) {
    a.batch = 0;
    a.head = seq_axis == 1 ? 2 : 1;
  } else if (seq_axis == 0) {
    a.head = 1;
  } else {
    a.batch = 0;
  }
  return a;
}

Status check_cache(const TensorLayout& c, const char* field, const TensorLayout& x, std::int64_t half) {
  BARACUDA_TRY(validate_layout(c, field));
  if (c.dtype != DType::kF32 && c.dtype != x.dtype)
    return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(c.dtype)) +
                                              " must be f32 or x's dtype " + std::string(dtype_name(x.dtype)));
  if (c.rank != 2 || c.shape[1] != half)
    return Status(Code::kInvalidArgument, std::string(field) + " = " + c.to_string() + " must be [max_pos, rotary_dim / 2 = " +
                                              std::to_string(half) + "]");
  return Status::ok();
}

Status validate_operands(const Operands& o) {
  using namespace elementwise;
  const TensorLayout& x = *o.in[0];
  const char* xf = o.in_field[0];
  const char* family = o.backward ? "rope_backward" : "rope";
  BARACUDA_TRY(validate_layout(x, xf));
  BARACUDA_TRY(check_math_dtype(x, xf, family));
  if (x.rank != 3 && x.rank != 4)
    return Status(Code::kInvalidArgument, std::string(xf) + ".rank = " + std::to_string(x.rank) +
                                              " (rope takes [B, S, H, D], [B, H, S, D], [S, H, D] or [B, S, D])");
  const int seq = o.options->seq_axis;
  const bool seq_ok = x.rank == 4 ? (seq == 1 || seq == 2) : (seq == 0 || seq == 1);
  if (!seq_ok)
    return Status(Code::kInvalidArgument, "options.seq_axis = " + std::to_string(seq) + " for " + xf + " of rank " +
                                              std::to_string(x.rank) + " (needs " + (x.rank == 4 ? "1 or 2" : "0 or 1") + ")");
  if (static_cast<int>(o.options->style) > static_cast<int>(RopeStyle::kInterleaved))
    return Status(Code::kInvalidArgument, "options.style = " + std::to_string(static_cast<int>(o.options->style)) +
                                              " is not a RopeStyle");
  const Axes ax = axes_of(x.rank, seq);
  const std::int64_t d = x.shape[ax.dim];
  const std::int64_t r = o.rotary_dim();
  if (r < 2 || r % 2 != 0 || r > d || r > 2 * kMaxRotaryPairs)
    return Status(Code::kInvalidArgument, "options.rotary_dim = " + std::to_string(o.options->rotary_dim) + " (R = " +
                                              std::to_string(r) + ") must be even, >= 2, <= the head dim " +
                                              std::to_string(d) + " and <= " + std::to_string(2 * kMaxRotaryPairs));
  for (int k = 0; k < 2; ++k) {
    if (k == 1 && !o.has_second()) {
      if (o.out[1]->rank != 0)
        return Status(Code::kInvalidArgument, std::string(o.out_field[1]) + " = " + o.out[1]->to_string() + " is given without " +
                                                  o.in_field[1]);
      break;
    }
    const TensorLayout& in = *o.in[k];
    if (k == 1) {
      BARACUDA_TRY(validate_layout(in, o.in_field[1]));
      BARACUDA_TRY(check_same_dtype(in, o.in_field[1], x, xf));
      bool same = in.rank == x.rank;
      for (int i = 0; same && i < x.rank; ++i) same = i == ax.head || in.shape[i] == x.shape[i];
      if (!same)
        return Status(Code::kInvalidArgument, std::string(o.in_field[1]) + " = " + in.to_string() + " must match " + xf + " = " +
                                                  x.to_string() + " in every dim but the head dim");
    }
    BARACUDA_TRY(validate_layout(*o.out[k], o.out_field[k]));
    BARACUDA_TRY(check_same_dtype(*o.out[k], o.out_field[k], in, o.in_field[k]));
    BARACUDA_TRY(check_same_shape(*o.out[k], o.out_field[k], in, o.in_field[k]));
    BARACUDA_TRY(check_output_layout(*o.out[k], o.out_field[k]));
  }
  const std::int64_t s_len = x.shape[ax.seq];
  const std::int64_t b_len = ax.batch >= 0 ? x.shape[ax.batch] : 1;
  const TensorLayout& ids = *o.position_ids;
  if (ids.rank != 0) {
    BARACUDA_TRY(validate_layout(ids, "position_ids"));
    if (ids.dtype != DType::kI32 && ids.dtype != DType::kI64)
      return Status(Code::kInvalidArgument, "position_ids.dtype = " + std::string(dtype_name(ids.dtype)) + " must be i32 or i64");
    const bool ok = (ids.rank == 1 && ids.shape[0] == s_len) || (ids.rank == 2 && ids.shape[0] == b_len && ids.shape[1] == s_len);
    if (!ok)
      return Status(Code::kInvalidArgument, "position_ids = " + ids.to_string() + " must be [S] = [" + std::to_string(s_len) +
                                                "] or [B, S] = [" + std::to_string(b_len) + ", " + std::to_string(s_len) + "]");
  } else if (o.options->position_offset < 0) {
    return Status(Code::kInvalidArgument, "options.position_offset = " + std::to_string(o.options->position_offset) + " is negative");
  }
  const bool has_cos = o.cos->rank != 0, has_sin = o.sin->rank != 0;
  if (has_cos != has_sin)
    return Status(Code::kInvalidArgument, std::string(has_cos ? "cos" : "sin") + " is given without " + (has_cos ? "sin" : "cos") +
                                              " (pass both caches or neither)");
  if (has_cos) {
    BARACUDA_TRY(check_cache(*o.cos, "cos", x, r / 2));
    BARACUDA_TRY(check_cache(*o.sin, "sin", x, r / 2));
    BARACUDA_TRY(check_same_dtype(*o.sin, "sin", *o.cos, "cos"));
    BARACUDA_TRY(check_same_shape(*o.sin, "sin", *o.cos, "cos"));
    const std::int64_t max_pos = o.cos->shape[0];
    if (ids.rank == 0 && s_len > 0 && o.options->position_offset + s_len > max_pos)
      return Status(Code::kInvalidArgument, "options.position_offset = " + std::to_string(o.options->position_offset) +
                                                " + S = " + std::to_string(s_len) + " exceeds the cache's max_pos = " +
                                                std::to_string(max_pos));
  } else {
    auto inv = rope_inv_freq(*o.options, r);
    if (!inv) return inv.error();
  }
  return Status::ok();
}

enum class Impl { kVec16, kStrided };
constexpr Impl kImpls[] = {Impl::kVec16, Impl::kStrided};
constexpr const char* kImplNames[] = {"vec16", "strided"};

struct Setup {
  std::string rejection;
  RopeParams params;
  std::size_t workspace = 0;
};

void set_strides(const TensorLayout& l, const Axes& ax, std::int64_t (&st)[4]) {
  st[0] = ax.batch >= 0 ? l.strides[ax.batch] : 0;
  st[1] = l.strides[ax.seq];
  st[2] = ax.head >= 0 ? l.strides[ax.head] : 0;
  st[3] = l.strides[ax.dim];
}

Setup setup_for(Impl impl, const Operands& o) {
  Setup r;
  RopeParams& p = r.params;
  const TensorLayout& x = *o.in[0];
  const Axes ax = axes_of(x.rank, o.options->seq_axis);
  p.num_tensors = o.has_second() ? 2 : 1;
  p.batch = ax.batch >= 0 ? x.shape[ax.batch] : 1;
  p.seq = x.shape[ax.seq];
  p.head_dim = x.shape[ax.dim];
  p.rotary_dim = o.rotary_dim();
  p.interleaved = o.options->style == RopeStyle::kInterleaved;
  p.inverse = o.backward;
  for (int k = 0; k < p.num_tensors; ++k) {
    p.t[k].heads = ax.head >= 0 ? o.in[k]->shape[ax.head] : 1;
    set_strides(*o.in[k], ax, p.t[k].in_stride);
    set_strides(*o.out[k], ax, p.t[k].out_stride);
  }
  const TensorLayout& ids = *o.position_ids;
  if (ids.rank != 0) {
    p.pos_i64 = ids.dtype == DType::kI64;
    p.pos_stride[0] = ids.rank == 2 ? ids.strides[0] : 0;
    p.pos_stride[1] = ids.strides[ids.rank - 1];
  }
  p.position_offset = o.options->position_offset;
  if (o.cos->rank != 0) {
    p.cache_f32 = o.cos->dtype == DType::kF32;
    p.max_pos = o.cos->shape[0];
    for (int c = 0; c < 2; ++c) {
      const TensorLayout& t = c == 0 ? *o.cos : *o.sin;
      p.cache_stride[c][0] = t.strides[0];
      p.cache_stride[c][1] = t.strides[1];
    }
  } else {
    const auto inv = rope_inv_freq(*o.options, p.rotary_dim).value();
    std::copy(inv.begin(), inv.end(), p.inv_freq);
    p.attention_factor = rope_attention_factor(*o.options);
  }
  const std::int64_t half = p.rotary_dim / 2;
  if (impl == Impl::kVec16) {
    const std::int64_t v = 16 / static_cast<std::int64_t>(dtype_size(x.dtype));
    if ((p.interleaved ? p.rotary_dim : half) % v != 0) {
      r.rejection = std::string(p.interleaved ? "rotary_dim" : "rotary_dim / 2") + " = " +
                    std::to_string(p.interleaved ? p.rotary_dim : half) + " is not a multiple of the " + std::to_string(v) +
                    "-element vector";
      return r;
    }
    if (p.head_dim % v != 0) {
      r.rejection = "head dim " + std::to_string(p.head_dim) + " is not a multiple of the " + std::to_string(v) + "-element vector";
      return r;
    }
    for (int k = 0; k < p.num_tensors; ++k)
      for (int io = 0; io < 2; ++io) {
        const TensorLayout& l = io == 0 ? *o.in[k] : *o.out[k];
        const char* f = io == 0 ? o.in_field[k] : o.out_field[k];
        const std::int64_t* st = io == 0 ? p.t[k].in_stride : p.t[k].out_stride;
        if (l.alignment < 16) {
          r.rejection = std::string(f) + ".alignment = " + std::to_string(l.alignment) + " < 16 bytes";
          return r;
        }
        if (st[3] != 1) {
          r.rejection = std::string(f) + " head-dim stride " + std::to_string(st[3]) + " (needs 1)";
          return r;
        }
        for (int a = 0; a < 3; ++a)
          if (st[a] % v != 0) {
            r.rejection = std::string(f) + " = " + l.to_string() + " has a stride that is not a multiple of " + std::to_string(v);
            return r;
          }
      }
    p.vec = static_cast<int>(v);
    p.vec16 = true;
  } else {
    p.vec = p.interleaved ? 2 : 1;
  }
  p.rot_units = p.interleaved ? p.rotary_dim / p.vec : half / p.vec;
  p.pass_units = (p.head_dim - p.rotary_dim + p.vec - 1) / p.vec;
  const std::int64_t units = p.rot_units + p.pass_units;
  const std::int64_t heads = p.t[0].heads + (p.num_tensors > 1 ? p.t[1].heads : 0);
  // units x heads threads, about 128 (at most kRopeMaxThreads); each thread takes two heads per step
  p.block_x = static_cast<int>(std::min<std::int64_t>(units, kRopeMaxThreads));
  p.block_y = static_cast<int>(std::clamp<std::int64_t>(128 / p.block_x, 1, std::max<std::int64_t>((heads + 1) / 2, 1)));
  const std::int64_t positions = p.batch * p.seq;
  p.grid = (heads == 0 || units == 0) ? 0 : std::min<std::int64_t>(positions, 0x7fffffff);
  return r;
}

KernelSku sku_of(const Operands& o, int i) {
  KernelSku s;
  s.family = "rope";
  s.direction = o.backward ? Direction::kBackward : Direction::kForward;
  s.impl = kImplNames[i];
  s.in = s.out = o.in[0]->dtype;
  s.compute = s.precision.accumulator = o.in[0]->dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  return s;
}

Status launch_dtype(DType t, const RopeParams& p, cudaStream_t s) {
  switch (t) {
    case DType::kF64: return launch_rope<DType::kF64>(p, s);
    case DType::kF32: return launch_rope<DType::kF32>(p, s);
    case DType::kF16: return launch_rope<DType::kF16>(p, s);
    case DType::kBF16: return launch_rope<DType::kBF16>(p, s);
    default: return Status(Code::kNotBuilt, "rope: no kernels for dtype " + std::string(dtype_name(t)));
  }
}

struct Pointers {
  const void* in[2];
  void* out[2];
  const void* ids;
  const void* cos;
  const void* sin;
};
Pointers pointers_of(const RopeArgs& a) { return {{a.x, a.x2}, {a.y, a.y2}, a.position_ids, a.cos, a.sin}; }
Pointers pointers_of(const RopeBackwardArgs& a) {
  return {{a.grad_y, a.grad_y2}, {a.grad_x, a.grad_x2}, a.position_ids, a.cos, a.sin};
}

struct RopeTable {
  using Params = RopeParams;
  static constexpr int kCount = 2;
  template <class Desc>
  static Setup setup(int i, const Desc& d, const DeviceCaps&) {
    return setup_for(kImpls[i], operands_of(d));
  }
  template <class Desc>
  static KernelSku sku(int i, const Desc& d) {
    return sku_of(operands_of(d), i);
  }
  template <class Desc, class Args>
  static Status launch(RopeParams p, const Desc& d, const Args& a, Workspace, cudaStream_t s) {
    const Pointers ptr = pointers_of(a);
    for (int k = 0; k < 2; ++k) {
      p.in[k] = ptr.in[k];
      p.out[k] = ptr.out[k];
    }
    p.position_ids = operands_of(d).position_ids->rank ? ptr.ids : nullptr;
    p.cos = operands_of(d).cos->rank ? ptr.cos : nullptr;
    p.sin = operands_of(d).sin->rank ? ptr.sin : nullptr;
    return launch_dtype(operands_of(d).in[0]->dtype, p, s);
  }
};
template <class Desc, class Args>
inline constexpr auto kCandidates = kTableCandidates<RopeTable, Desc, Args>;

// Null, alignment and aliasing: out[k] may be in[k] exactly (in place); out[k] must not overlap
// the other tensor's input (another thread reads it at other positions), ids or the caches.
Status check_pointers(const Operands& o, const Pointers& ptr) {
  if (o.in[0]->numel() == 0 && (!o.has_second() || o.in[1]->numel() == 0)) return Status::ok();
  const int n = o.has_second() ? 2 : 1;
  for (int k = 0; k < n; ++k) {
    const int other = 1 - k;
    if (n == 2 && o.out[k]->numel() && o.in[other]->numel() && ptr.out[k] != nullptr && ptr.in[other] != nullptr &&
        byte_ranges_overlap(ptr.out[k], *o.out[k], ptr.in[other], *o.in[other]))
      return Status(Code::kInvalidArgument, std::string("args.") + o.out_field[k] + " overlaps args." + o.in_field[other] +
                                                " (" + o.out_field[k] + " may alias only " + o.in_field[k] + ")");
  }
  std::vector<norm::PtrOperand> ops;
  for (int k = 0; k < n; ++k) {
    ops.push_back({ptr.out[k], *o.out[k], o.out_field[k], true, true});
    ops.push_back({ptr.in[k], *o.in[k], o.in_field[k], false, true});
  }
  if (o.position_ids->rank) ops.push_back({ptr.ids, *o.position_ids, "position_ids", false, false});
  if (o.cos->rank) {
    ops.push_back({ptr.cos, *o.cos, "cos", false, false});
    ops.push_back({ptr.sin, *o.sin, "sin", false, false});
  }
  return norm::check_operand_pointers(ops);
}

}  // namespace
}  // namespace rope

template <>
struct FamilyTraits<RopeDescriptor> {
  static constexpr const char* kFamily = "rope";
  static Status validate(const RopeDescriptor& d) { return rope::validate_operands(rope::operands_of(d)); }
  static std::span<const Candidate<RopeDescriptor, RopeArgs>> candidates() { return rope::kCandidates<RopeDescriptor, RopeArgs>; }
  static Status check_args(const RopeDescriptor& d, const RopeArgs& a) {
    return rope::check_pointers(rope::operands_of(d), rope::pointers_of(a));
  }
};

template <>
struct FamilyTraits<RopeBackwardDescriptor> {
  static constexpr const char* kFamily = "rope_backward";
  static Status validate(const RopeBackwardDescriptor& d) { return rope::validate_operands(rope::operands_of(d)); }
  static std::span<const Candidate<RopeBackwardDescriptor, RopeBackwardArgs>> candidates() {
    return rope::kCandidates<RopeBackwardDescriptor, RopeBackwardArgs>;
  }
  static Status check_args(const RopeBackwardDescriptor& d, const RopeBackwardArgs& a) {
    return rope::check_pointers(rope::operands_of(d), rope::pointers_of(a));
  }
};

template class Plan<RopeDescriptor, RopeArgs>;
template class Plan<RopeBackwardDescriptor, RopeBackwardArgs>;

}  // namespace baracuda
