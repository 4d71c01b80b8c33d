// SdpaPlan / SdpaBackwardPlan / FlashSdpaPlan / FlashSdpaBackwardPlan: descriptor hash and
// text, validation, and the order of the backends' candidate tables (sdpa_candidates.hpp).
// SdpaPlan walks cuDNN, then our flash kernels, then the e4m3 composite (sdpa_fp8.cpp: e4m3
// only), then the general kernels; the Flash plans walk the two fused backends only (and the
// composite whose inner plan is fused), through FusedCandidates, which re-types the shared tables.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attention/sdpa_candidates.hpp"
#include "core/hash.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/map_family.hpp"
#include "normalization/pointer_checks.hpp"

namespace baracuda {

const char* causal_align_name(CausalAlign a) noexcept {
  return a == CausalAlign::kTopLeft ? "top_left" : "bottom_right";
}

namespace attention {
namespace {

std::size_t hash_options(const SdpaOptions& o) {
  std::size_t h = std::hash<double>{}(o.scale);
  h = detail::hash_combine(h, std::hash<double>{}(o.softcap));
  h = detail::hash_combine(h, std::hash<double>{}(o.dropout_p));
  h = detail::hash_combine(h, static_cast<std::size_t>(o.window_left));
  h = detail::hash_combine(h, static_cast<std::size_t>(o.window_right));
  h = detail::hash_combine(h, static_cast<std::size_t>(o.batch));
  h = detail::hash_combine(h, static_cast<std::size_t>(o.max_seqlen_q) * 31 + static_cast<std::size_t>(o.max_seqlen_k));
  return detail::hash_combine(h, static_cast<std::size_t>(o.causal) * 4 + static_cast<std::size_t>(o.align) * 2 +
                                     static_cast<std::size_t>(o.varlen));
}

std::string options_text(const SdpaOptions& o) {
  std::string s;
  if (o.scale != 0) s += ", scale=" + elementwise::number_text(o.scale);
  if (o.causal) s += std::string(", causal ") + causal_align_name(o.align);
  if (o.window_left >= 0 || o.window_right >= 0)
    s += ", window=(" + std::to_string(o.window_left) + "," + std::to_string(o.window_right) + ") " +
         causal_align_name(o.align);
  if (o.softcap != 0) s += ", softcap=" + elementwise::number_text(o.softcap);
  if (o.dropout_p != 0) s += ", dropout_p=" + elementwise::number_text(o.dropout_p);
  if (o.varlen)
    s += ", varlen batch=" + std::to_string(o.batch) + " max_seqlen=(" + std::to_string(o.max_seqlen_q) + "," +
         std::to_string(o.max_seqlen_k) + ")";
  return s;
}

void add_optional(std::string& s, const char* name, const TensorLayout& t) {
  if (t.rank > 0) s += std::string(", ") + name + "=" + t.to_string();
}
std::size_t hash_layouts(std::initializer_list<const TensorLayout*> ts) {
  std::size_t h = 0;
  for (const TensorLayout* t : ts) h = detail::hash_combine(h, t->rank > 0 ? t->hash() : 0);
  return h;
}

// The backends' tables in order, as one table.
template <class Desc, class Args, std::span<const Candidate<Desc, Args>> (*... Tables)()>
std::span<const Candidate<Desc, Args>> joined() {
  static const std::vector<Candidate<Desc, Args>> all = [] {
    std::vector<Candidate<Desc, Args>> v;
    for (auto table : {Tables...})
      for (const auto& c : table()) v.push_back(c);
    return v;
  }();
  return all;
}

// Re-types a shared candidate table for a descriptor type derived from the table's (the Flash
// plans' descriptors add no field), one forwarding function per slot.
template <class FDesc, class Desc, class Args, std::span<const Candidate<Desc, Args>> (*... Tables)()>
struct FusedCandidates {
  static constexpr std::size_t kMaxSlots = 16;
  static std::span<const Candidate<Desc, Args>> base() { return joined<Desc, Args, Tables...>(); }
  template <std::size_t I>
  static typename Candidate<FDesc, Args>::Probe probe(const FDesc& d, const DeviceCaps& caps) {
    auto p = base()[I].probe(d, caps);
    return {std::move(p.sku), std::move(p.rejection), p.workspace_bytes, std::move(p.deferral)};
  }
  template <std::size_t I>
  static Expected<std::shared_ptr<const void>> prepare(const FDesc& d, const DeviceCaps& caps) {
    return base()[I].prepare(d, caps);
  }
  template <std::size_t I>
  static Status launch(const void* state, const FDesc& d, const Args& a, Workspace ws, cudaStream_t stream) {
    return base()[I].launch(state, d, a, ws, stream);
  }
  template <std::size_t... I>
  static std::vector<Candidate<FDesc, Args>> make(std::index_sequence<I...>) {
    std::vector<Candidate<FDesc, Args>> v;
    ((I < base().size() ? v.push_back({&probe<I>, &prepare<I>, &launch<I>}) : void()), ...);
    return v;
  }
  static std::span<const Candidate<FDesc, Args>> table() {
    static const std::vector<Candidate<FDesc, Args>> t = make(std::make_index_sequence<kMaxSlots>{});
    return t;
  }
};

// ---- validation (descriptor only; every message names the field and its value)
Status invalid(const std::string& msg) { return Status(Code::kInvalidArgument, msg); }
std::string dim_text(const char* field, int k, std::int64_t v) {
  return std::string(field) + ".shape[" + std::to_string(k) + "] = " + std::to_string(v);
}
Status check_dim(const TensorLayout& t, const char* field, int k, std::int64_t want, const std::string& what) {
  if (t.shape[k] != want) return invalid(dim_text(field, k, t.shape[k]) + " != " + what + " = " + std::to_string(want));
  return Status::ok();
}
Status check_rank(const TensorLayout& t, const char* field, int want, const char* form) {
  if (t.rank != want)
    return invalid(std::string(field) + ".rank = " + std::to_string(t.rank) + ", expected " + std::to_string(want) + " (" +
                   form + ")");
  return Status::ok();
}
Status check_dtype(const TensorLayout& t, const char* field, DType want, const char* why) {
  if (t.dtype != want)
    return invalid(std::string(field) + ".dtype = " + std::string(dtype_name(t.dtype)) + ", expected " +
                   std::string(dtype_name(want)) + " (" + why + ")");
  return Status::ok();
}

Status check_options(const SdpaOptions& o) {
  if (!std::isfinite(o.scale)) return invalid("options.scale = " + elementwise::number_text(o.scale) + " is not finite");
  if (!std::isfinite(o.softcap) || o.softcap < 0)
    return invalid("options.softcap = " + elementwise::number_text(o.softcap) + " (needs a finite value >= 0; 0 = off)");
  if (!(o.dropout_p >= 0 && o.dropout_p < 1))
    return invalid("options.dropout_p = " + elementwise::number_text(o.dropout_p) + " is not in [0, 1)");
  if (o.window_left < -1) return invalid("options.window_left = " + std::to_string(o.window_left) + " < -1");
  if (o.window_right < -1) return invalid("options.window_right = " + std::to_string(o.window_right) + " < -1");
  if (o.align != CausalAlign::kTopLeft && o.align != CausalAlign::kBottomRight)
    return invalid("options.align = " + std::to_string(static_cast<int>(o.align)) + " is not a CausalAlign");
  if (o.varlen) {
    if (o.batch <= 0) return invalid("options.batch = " + std::to_string(o.batch) + " (varlen needs batch > 0)");
    if (o.max_seqlen_q <= 0)
      return invalid("options.max_seqlen_q = " + std::to_string(o.max_seqlen_q) + " (varlen needs max_seqlen_q > 0)");
    if (o.max_seqlen_k <= 0)
      return invalid("options.max_seqlen_k = " + std::to_string(o.max_seqlen_k) + " (varlen needs max_seqlen_k > 0)");
  } else if (o.batch != 0 || o.max_seqlen_q != 0 || o.max_seqlen_k != 0) {
    return invalid("options.batch = " + std::to_string(o.batch) + ", max_seqlen_q = " + std::to_string(o.max_seqlen_q) +
                   ", max_seqlen_k = " + std::to_string(o.max_seqlen_k) +
                   " are set but options.varlen = false (they describe packed batches only)");
  }
  return Status::ok();
}

// The sizes q, k, v, o agree on (read from q, k and v).
struct Sizes {
  std::int64_t b, hq, hkv, sq, skv, dk, dv, tq, tk;
};

// q, k, v, o: ranks, dtypes, shapes, GQA. `fwd` allows the e4m3 forward.
Expected<Sizes> check_qkvo(const TensorLayout& q, const TensorLayout& k, const TensorLayout& v, const TensorLayout& o,
                           const SdpaOptions& opt, bool fwd) {
  const bool vl = opt.varlen;
  const int r = vl ? 3 : 4;
  const char* form = vl ? "varlen [T, H, D]" : "[B, H, S, D]";
  for (auto [t, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}, {&o, "o"}}) {
    BARACUDA_TRY(validate_layout(*t, name));
    BARACUDA_TRY(check_rank(*t, name, r, form));
  }
  const DType dt = q.dtype;
  const bool ok_dtype = dt == DType::kF64 || dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16 ||
                        (fwd && dt == DType::kE4M3);
  if (!ok_dtype)
    return invalid("q.dtype = " + std::string(dtype_name(dt)) + " (sdpa takes f64, f32, f16, bf16" +
                   (fwd ? ", e4m3 forward)" : "; e4m3 is forward only)"));
  BARACUDA_TRY(check_dtype(k, "k", dt, "q, k, v and o share one dtype"));
  BARACUDA_TRY(check_dtype(v, "v", dt, "q, k, v and o share one dtype"));
  BARACUDA_TRY(check_dtype(o, "o", dt, "q, k, v and o share one dtype"));
  Sizes s{};
  const int h = 1, d = r - 1, sd = vl ? 0 : 2;
  s.hq = q.shape[h];
  s.hkv = k.shape[h];
  s.dk = q.shape[d];
  s.dv = v.shape[d];
  if (vl) {
    s.b = opt.batch;
    s.sq = opt.max_seqlen_q;
    s.skv = opt.max_seqlen_k;
    s.tq = q.shape[0];
    s.tk = k.shape[0];
  } else {
    s.b = q.shape[0];
    s.sq = q.shape[2];
    s.skv = k.shape[2];
    BARACUDA_TRY(check_dim(k, "k", 0, s.b, "q.shape[0] (batch)"));
    BARACUDA_TRY(check_dim(v, "v", 0, s.b, "q.shape[0] (batch)"));
    BARACUDA_TRY(check_dim(o, "o", 0, s.b, "q.shape[0] (batch)"));
  }
  if (s.hkv <= 0) return invalid(dim_text("k", h, s.hkv) + " (needs at least one KV head)");
  if (s.hq % s.hkv != 0)
    return invalid(dim_text("k", h, s.hkv) + " does not divide " + dim_text("q", h, s.hq) + " (GQA needs Hq % Hkv == 0)");
  if (s.dk <= 0) return invalid(dim_text("q", d, s.dk) + " (the head dim d_k must be > 0)");
  if (s.dv <= 0) return invalid(dim_text("v", d, s.dv) + " (the head dim d_v must be > 0)");
  BARACUDA_TRY(check_dim(k, "k", d, s.dk, "q.shape[" + std::to_string(d) + "] (d_k)"));
  BARACUDA_TRY(check_dim(v, "v", h, s.hkv, "k.shape[" + std::to_string(h) + "] (KV heads)"));
  BARACUDA_TRY(check_dim(v, "v", sd, k.shape[sd], vl ? "k.shape[0] (key tokens)" : "k.shape[2] (Skv)"));
  BARACUDA_TRY(check_dim(o, "o", h, s.hq, "q.shape[" + std::to_string(h) + "] (query heads)"));
  BARACUDA_TRY(check_dim(o, "o", sd, q.shape[sd], vl ? "q.shape[0] (query tokens)" : "q.shape[2] (Sq)"));
  BARACUDA_TRY(check_dim(o, "o", d, s.dv, "v.shape[" + std::to_string(d) + "] (d_v)"));
  return s;
}

Status check_lse(const TensorLayout& lse, const Sizes& s, bool varlen) {
  BARACUDA_TRY(validate_layout(lse, "lse"));
  BARACUDA_TRY(check_dtype(lse, "lse", DType::kF32, "the logsumexp is f32"));
  if (varlen) {
    BARACUDA_TRY(check_rank(lse, "lse", 2, "varlen [Hq, Tq]"));
    BARACUDA_TRY(check_dim(lse, "lse", 0, s.hq, "q.shape[1] (Hq)"));
    return check_dim(lse, "lse", 1, s.tq, "q.shape[0] (Tq)");
  }
  BARACUDA_TRY(check_rank(lse, "lse", 3, "[B, Hq, Sq]"));
  BARACUDA_TRY(check_dim(lse, "lse", 0, s.b, "q.shape[0] (B)"));
  BARACUDA_TRY(check_dim(lse, "lse", 1, s.hq, "q.shape[1] (Hq)"));
  return check_dim(lse, "lse", 2, s.sq, "q.shape[2] (Sq)");
}

// bias / mask / grad_bias: rank <= 4, each dim 1 or the matching dim of [B, Hq, Sq, Skv].
Status check_broadcast4(const TensorLayout& t, const char* field, const Sizes& s) {
  BARACUDA_TRY(validate_layout(t, field));
  if (t.rank > 4)
    return invalid(std::string(field) + ".rank = " + std::to_string(t.rank) + " (broadcast to [B, Hq, Sq, Skv]: rank <= 4)");
  const std::int64_t full[4] = {s.b, s.hq, s.sq, s.skv};
  const char* names[4] = {"B", "Hq", "Sq", "Skv"};
  for (int k = 0; k < t.rank; ++k) {
    const int dim = 4 - t.rank + k;
    if (t.shape[k] != 1 && t.shape[k] != full[dim])
      return invalid(dim_text(field, k, t.shape[k]) + " does not broadcast to " + names[dim] + " = " +
                     std::to_string(full[dim]) + " (" + field + " broadcasts to [B, Hq, Sq, Skv] = [" +
                     std::to_string(s.b) + ", " + std::to_string(s.hq) + ", " + std::to_string(s.sq) + ", " +
                     std::to_string(s.skv) + "])");
  }
  return Status::ok();
}

Status check_extras(const TensorLayout& bias, const TensorLayout& mask, const TensorLayout& alibi, DType qt,
                    const Sizes& s, bool varlen) {
  if (varlen && bias.rank > 0)
    return invalid("bias = " + bias.to_string() + " with options.varlen = true (bias is dense only)");
  if (varlen && mask.rank > 0)
    return invalid("mask = " + mask.to_string() + " with options.varlen = true (mask is dense only)");
  if (bias.rank > 0) {
    if (bias.dtype != qt && bias.dtype != DType::kF32)
      return invalid("bias.dtype = " + std::string(dtype_name(bias.dtype)) + ", expected q's dtype " +
                     std::string(dtype_name(qt)) + " or f32");
    BARACUDA_TRY(check_broadcast4(bias, "bias", s));
  }
  if (mask.rank > 0) {
    BARACUDA_TRY(check_dtype(mask, "mask", DType::kU8, "bool mask in u8 storage, 1 = take part"));
    BARACUDA_TRY(check_broadcast4(mask, "mask", s));
  }
  if (alibi.rank > 0) {
    BARACUDA_TRY(validate_layout(alibi, "alibi_slopes"));
    BARACUDA_TRY(check_dtype(alibi, "alibi_slopes", DType::kF32, "slopes are f32"));
    if (alibi.rank > 2)
      return invalid("alibi_slopes.rank = " + std::to_string(alibi.rank) + " (alibi_slopes is [Hq] or [B, Hq])");
    BARACUDA_TRY(check_dim(alibi, "alibi_slopes", alibi.rank - 1, s.hq, "q's heads (Hq)"));
    if (alibi.rank == 2 && alibi.shape[0] != 1)
      BARACUDA_TRY(check_dim(alibi, "alibi_slopes", 0, s.b, varlen ? "options.batch (B)" : "q.shape[0] (B)"));
  }
  return Status::ok();
}

Status validate_forward(const SdpaDescriptor& d) {
  BARACUDA_TRY(check_options(d.options));
  auto s = check_qkvo(d.q, d.k, d.v, d.o, d.options, true);
  if (!s) return s.error();
  BARACUDA_TRY(elementwise::check_output_layout(d.o, "o"));
  if (d.lse.rank > 0) {
    BARACUDA_TRY(check_lse(d.lse, *s, d.options.varlen));
    BARACUDA_TRY(elementwise::check_output_layout(d.lse, "lse"));
  }
  return check_extras(d.bias, d.mask, d.alibi_slopes, d.q.dtype, *s, d.options.varlen);
}

Status validate_backward(const SdpaBackwardDescriptor& d) {
  BARACUDA_TRY(check_options(d.options));
  auto s = check_qkvo(d.q, d.k, d.v, d.o, d.options, false);
  if (!s) return s.error();
  if (d.lse.rank == 0) return invalid("lse.rank = 0: the backward needs the forward's logsumexp");
  BARACUDA_TRY(check_lse(d.lse, *s, d.options.varlen));
  BARACUDA_TRY(check_extras(d.bias, d.mask, d.alibi_slopes, d.q.dtype, *s, d.options.varlen));
  struct Same {
    const TensorLayout* t;
    const char* name;
    const TensorLayout* like;
    const char* like_name;
  };
  for (const Same& g : {Same{&d.grad_o, "grad_o", &d.o, "o"}, Same{&d.grad_q, "grad_q", &d.q, "q"},
                        Same{&d.grad_k, "grad_k", &d.k, "k"}, Same{&d.grad_v, "grad_v", &d.v, "v"}}) {
    BARACUDA_TRY(validate_layout(*g.t, g.name));
    BARACUDA_TRY(check_dtype(*g.t, g.name, d.q.dtype, "gradients have q's dtype"));
    BARACUDA_TRY(elementwise::check_same_shape(*g.t, g.name, *g.like, g.like_name));
  }
  for (auto [t, name] : {std::pair{&d.grad_q, "grad_q"}, {&d.grad_k, "grad_k"}, {&d.grad_v, "grad_v"}})
    BARACUDA_TRY(elementwise::check_output_layout(*t, name));
  if (d.grad_bias.rank > 0) {
    if (d.bias.rank == 0) return invalid("grad_bias = " + d.grad_bias.to_string() + " without a bias");
    BARACUDA_TRY(validate_layout(d.grad_bias, "grad_bias"));
    BARACUDA_TRY(check_dtype(d.grad_bias, "grad_bias", d.bias.dtype, "grad_bias has bias's dtype"));
    BARACUDA_TRY(elementwise::check_same_shape(d.grad_bias, "grad_bias", d.bias, "bias"));
    BARACUDA_TRY(elementwise::check_output_layout(d.grad_bias, "grad_bias"));
  }
  return Status::ok();
}

// ---- run-time pointer checks (null, declared alignment, aliasing of outputs)
TensorLayout cu_seqlens_layout(std::int64_t batch) { return TensorLayout::contiguous(DType::kI32, {batch + 1}, 4); }

Status check_seed_pointer(const std::uint64_t* p) {
  if (p != nullptr && reinterpret_cast<std::uintptr_t>(p) % 8 != 0)
    return Status(Code::kMisaligned, "args.philox_seed_offset = " + elementwise::hex_ptr(p) + " is not 8-byte aligned");
  return Status::ok();
}
void add_common(std::vector<norm::PtrOperand>& ops, const TensorLayout& bias, const TensorLayout& mask,
                const TensorLayout& alibi, const SdpaOptions& o, const void* pb, const void* pm, const void* pa,
                const void* cq, const void* ck) {
  if (bias.rank > 0) ops.push_back({pb, bias, "bias", false, false});
  if (mask.rank > 0) ops.push_back({pm, mask, "mask", false, false});
  if (alibi.rank > 0) ops.push_back({pa, alibi, "alibi_slopes", false, false});
  if (o.varlen) {
    ops.push_back({cq, cu_seqlens_layout(o.batch), "cu_seqlens_q", false, false});
    ops.push_back({ck, cu_seqlens_layout(o.batch), "cu_seqlens_k", false, false});
  }
}
Status check_varlen_pointers(const SdpaOptions& o, const void* cq, const void* ck) {
  if (!o.varlen) {
    if (cq != nullptr) return invalid("args.cu_seqlens_q is set but options.varlen = false");
    if (ck != nullptr) return invalid("args.cu_seqlens_k is set but options.varlen = false");
    return Status::ok();
  }
  // Checked even when every tensor is empty: the kernels read them for each sequence.
  if (cq == nullptr) return invalid("args.cu_seqlens_q is null (options.varlen = true)");
  if (ck == nullptr) return invalid("args.cu_seqlens_k is null (options.varlen = true)");
  return Status::ok();
}

// args.fp8 (sdpa_fp8.cpp's SKU reads descale_q / k / v and scale_o, writes amax_o when given;
// descale_s and scale_s are not read): with e4m3 operands the four scales are required
// (checked with the other operands: null, 4-byte alignment, amax_o aliasing), amax_s is refused
// (nothing produces it); with any other dtype every fp8 pointer must be null.
Status add_fp8_operands(const SdpaDescriptor& d, const SdpaFp8Scales& f, std::vector<norm::PtrOperand>& ops) {
  const struct {
    const void* p;
    const char* name;
  } all[] = {{f.descale_q, "descale_q"}, {f.descale_k, "descale_k"}, {f.descale_v, "descale_v"}, {f.descale_s, "descale_s"},
             {f.scale_s, "scale_s"},     {f.scale_o, "scale_o"},     {f.amax_s, "amax_s"},       {f.amax_o, "amax_o"}};
  if (d.q.dtype != DType::kE4M3) {
    for (const auto& x : all)
      if (x.p != nullptr)
        return invalid(std::string("args.fp8.") + x.name + " is set but q.dtype = " + std::string(dtype_name(d.q.dtype)) +
                       " (the fp8 scales belong to the e4m3 forward)");
    return Status::ok();
  }
  if (f.amax_s != nullptr)
    return Status(Code::kNotSupported, "args.fp8.amax_s is set: the e4m3 forward keeps the probabilities in f32 / bf16 "
                                       "and produces no amax_s (pass null)");
  const TensorLayout scalar = TensorLayout::contiguous(DType::kF32, {1}, 4);
  ops.push_back({f.descale_q, scalar, "fp8.descale_q", false, false});
  ops.push_back({f.descale_k, scalar, "fp8.descale_k", false, false});
  ops.push_back({f.descale_v, scalar, "fp8.descale_v", false, false});
  ops.push_back({f.scale_o, scalar, "fp8.scale_o", false, false});
  if (f.amax_o != nullptr) ops.push_back({f.amax_o, scalar, "fp8.amax_o", true, false});
  return Status::ok();
}

Status check_forward_args(const SdpaDescriptor& d, const SdpaArgs& a) {
  BARACUDA_TRY(norm::check_unused_pointer(a.lse, d.lse, "lse"));
  BARACUDA_TRY(norm::check_unused_pointer(a.bias, d.bias, "bias"));
  BARACUDA_TRY(norm::check_unused_pointer(a.mask, d.mask, "mask"));
  BARACUDA_TRY(norm::check_unused_pointer(a.alibi_slopes, d.alibi_slopes, "alibi_slopes"));
  BARACUDA_TRY(check_varlen_pointers(d.options, a.cu_seqlens_q, a.cu_seqlens_k));
  BARACUDA_TRY(check_seed_pointer(a.philox_seed_offset));
  std::vector<norm::PtrOperand> ops = {{a.o, d.o, "o", true, false}};
  if (d.lse.rank > 0) ops.push_back({a.lse, d.lse, "lse", true, false});
  ops.push_back({a.q, d.q, "q", false, false});
  ops.push_back({a.k, d.k, "k", false, false});
  ops.push_back({a.v, d.v, "v", false, false});
  add_common(ops, d.bias, d.mask, d.alibi_slopes, d.options, a.bias, a.mask, a.alibi_slopes, a.cu_seqlens_q,
             a.cu_seqlens_k);
  BARACUDA_TRY(add_fp8_operands(d, a.fp8, ops));
  return norm::check_operand_pointers(ops);
}

Status check_backward_args(const SdpaBackwardDescriptor& d, const SdpaBackwardArgs& a) {
  BARACUDA_TRY(norm::check_unused_pointer(a.bias, d.bias, "bias"));
  BARACUDA_TRY(norm::check_unused_pointer(a.mask, d.mask, "mask"));
  BARACUDA_TRY(norm::check_unused_pointer(a.alibi_slopes, d.alibi_slopes, "alibi_slopes"));
  BARACUDA_TRY(norm::check_unused_pointer(a.grad_bias, d.grad_bias, "grad_bias"));
  BARACUDA_TRY(check_varlen_pointers(d.options, a.cu_seqlens_q, a.cu_seqlens_k));
  BARACUDA_TRY(check_seed_pointer(a.philox_seed_offset));
  std::vector<norm::PtrOperand> ops = {{a.grad_q, d.grad_q, "grad_q", true, false},
                                       {a.grad_k, d.grad_k, "grad_k", true, false},
                                       {a.grad_v, d.grad_v, "grad_v", true, false}};
  if (d.grad_bias.rank > 0) ops.push_back({a.grad_bias, d.grad_bias, "grad_bias", true, false});
  ops.push_back({a.q, d.q, "q", false, false});
  ops.push_back({a.k, d.k, "k", false, false});
  ops.push_back({a.v, d.v, "v", false, false});
  ops.push_back({a.o, d.o, "o", false, false});
  ops.push_back({a.grad_o, d.grad_o, "grad_o", false, false});
  // lse is read for every query row, even when q is empty it has no elements either.
  ops.push_back({a.lse, d.lse, "lse", false, false});
  add_common(ops, d.bias, d.mask, d.alibi_slopes, d.options, a.bias, a.mask, a.alibi_slopes, a.cu_seqlens_q,
             a.cu_seqlens_k);
  return norm::check_operand_pointers(ops);
}

}  // namespace
}  // namespace attention

std::size_t SdpaDescriptor::hash() const noexcept {
  return detail::hash_combine(attention::hash_layouts({&q, &k, &v, &o, &lse, &bias, &mask, &alibi_slopes}),
                              attention::hash_options(options));
}
std::string SdpaDescriptor::to_string() const {
  std::string s = "sdpa(q=" + q.to_string() + ", k=" + k.to_string() + ", v=" + v.to_string() + ", o=" + o.to_string();
  attention::add_optional(s, "lse", lse);
  attention::add_optional(s, "bias", bias);
  attention::add_optional(s, "mask", mask);
  attention::add_optional(s, "alibi_slopes", alibi_slopes);
  return s + attention::options_text(options) + ")";
}
std::size_t SdpaBackwardDescriptor::hash() const noexcept {
  return detail::hash_combine(attention::hash_layouts({&q, &k, &v, &o, &grad_o, &lse, &grad_q, &grad_k, &grad_v, &bias,
                                                       &mask, &alibi_slopes, &grad_bias}),
                              attention::hash_options(options));
}
std::string SdpaBackwardDescriptor::to_string() const {
  std::string s = "sdpa_backward(q=" + q.to_string() + ", k=" + k.to_string() + ", v=" + v.to_string() +
                  ", o=" + o.to_string() + ", grad_o=" + grad_o.to_string() + ", lse=" + lse.to_string() +
                  ", grad_q=" + grad_q.to_string() + ", grad_k=" + grad_k.to_string() + ", grad_v=" + grad_v.to_string();
  attention::add_optional(s, "bias", bias);
  attention::add_optional(s, "mask", mask);
  attention::add_optional(s, "alibi_slopes", alibi_slopes);
  attention::add_optional(s, "grad_bias", grad_bias);
  return s + attention::options_text(options) + ")";
}

// validate / check_args shared by the plain and the Flash plans of one direction.
struct SdpaForwardChecks {
  static Status validate(const SdpaDescriptor& d) { return attention::validate_forward(d); }
  static Status check_args(const SdpaDescriptor& d, const SdpaArgs& a) { return attention::check_forward_args(d, a); }
};
struct SdpaBackwardChecks {
  static Status validate(const SdpaBackwardDescriptor& d) { return attention::validate_backward(d); }
  static Status check_args(const SdpaBackwardDescriptor& d, const SdpaBackwardArgs& a) {
    return attention::check_backward_args(d, a);
  }
};

// The candidates of one SDPA plan: the given backend tables in order, re-typed through
// FusedCandidates when the plan's descriptor (FDesc) is the Flash one derived from Desc.
template <class FDesc, class Desc, class Args, class Checks, std::span<const Candidate<Desc, Args>> (*... Tables)()>
struct SdpaTraits : Checks {
  static std::span<const Candidate<FDesc, Args>> candidates() {
    if constexpr (std::is_same_v<FDesc, Desc>) return attention::joined<Desc, Args, Tables...>();
    else return attention::FusedCandidates<FDesc, Desc, Args, Tables...>::table();
  }
  // Prepares candidate i. The workspace is the prepared state's exact size where the backend
  // knows it only once prepared (cuDNN: aux + the built graph's, which the probe can only
  // bound), else the probe's.
  static Expected<PreparedCandidate> prepare_with_preference(std::size_t i, const FDesc& d, const DeviceCaps& caps,
                                                             const PlanPreference& pref) {
    const Candidate<Desc, Args>& c = attention::joined<Desc, Args, Tables...>()[i];  // candidates()[i], backend-typed
    if constexpr (std::is_same_v<Desc, SdpaDescriptor>)  // the fp8 composite selects its inner plan under `pref`
      if (auto composite = attention::fp8_sdpa_prepare_with_preference(c, d, caps, pref)) return std::move(*composite);
    auto state = c.prepare(d, caps);
    if (!state) return state.error();
    const std::optional<std::size_t> exact = attention::cudnn_sdpa_prepared_workspace(c, state.value().get());
    const std::size_t ws = exact ? *exact : c.probe(d, caps).workspace_bytes;
    return PreparedCandidate{std::move(state.value()), ws};
  }
};

template <>
struct FamilyTraits<SdpaDescriptor>
    : SdpaTraits<SdpaDescriptor, SdpaDescriptor, SdpaArgs, SdpaForwardChecks, attention::cudnn_sdpa_forward_candidates,
                 attention::flash_sdpa_forward_candidates, attention::fp8_sdpa_forward_candidates,
                 attention::general_sdpa_forward_candidates> {
  static constexpr const char* kFamily = "sdpa";
};
template <>
struct FamilyTraits<FlashSdpaDescriptor>
    : SdpaTraits<FlashSdpaDescriptor, SdpaDescriptor, SdpaArgs, SdpaForwardChecks,
                 attention::cudnn_sdpa_forward_candidates, attention::flash_sdpa_forward_candidates,
                 attention::fp8_flash_sdpa_forward_candidates> {
  static constexpr const char* kFamily = "flash_sdpa";
};
template <>
struct FamilyTraits<SdpaBackwardDescriptor>
    : SdpaTraits<SdpaBackwardDescriptor, SdpaBackwardDescriptor, SdpaBackwardArgs, SdpaBackwardChecks,
                 attention::cudnn_sdpa_backward_candidates, attention::flash_sdpa_backward_candidates,
                 attention::general_sdpa_backward_candidates> {
  static constexpr const char* kFamily = "sdpa_backward";
};
template <>
struct FamilyTraits<FlashSdpaBackwardDescriptor>
    : SdpaTraits<FlashSdpaBackwardDescriptor, SdpaBackwardDescriptor, SdpaBackwardArgs, SdpaBackwardChecks,
                 attention::cudnn_sdpa_backward_candidates, attention::flash_sdpa_backward_candidates> {
  static constexpr const char* kFamily = "flash_sdpa_backward";
};

template class Plan<SdpaDescriptor, SdpaArgs>;
template class Plan<FlashSdpaDescriptor, SdpaArgs>;
template class Plan<SdpaBackwardDescriptor, SdpaBackwardArgs>;
template class Plan<FlashSdpaBackwardDescriptor, SdpaBackwardArgs>;

// The fp8 composite's inner plan (sdpa_candidates.hpp): SdpaPlan's or FlashSdpaPlan's select.
namespace attention {
namespace {
template <class D>
Status launch_inner(const void* impl, const SdpaArgs& a, Workspace ws, cudaStream_t stream) {
  const auto& p = *static_cast<const detail::PlanImpl<D, SdpaArgs>*>(impl);
  return p.candidate->launch(p.state.get(), p.desc, a, ws, stream);
}
template <class D>
Expected<SdpaInnerPlan> select_inner(const DeviceCaps& caps, const D& d, const PlanPreference& pref) {
  auto impl = detail::select_impl<D, SdpaArgs>(caps, d, pref, caps.ordinal);
  if (!impl) return impl.error();
  SdpaInnerPlan p;
  p.sku = impl.value()->sku;
  p.workspace_bytes = impl.value()->workspace_bytes;
  p.impl = std::move(impl.value());
  p.launch = &launch_inner<D>;
  return p;
}
}  // namespace

Expected<SdpaInnerPlan> select_sdpa_inner(const DeviceCaps& caps, const SdpaDescriptor& d, const PlanPreference& pref,
                                          bool fused) {
  if (fused) return select_inner(caps, FlashSdpaDescriptor{d}, pref);
  return select_inner(caps, d, pref);
}
}  // namespace attention

}  // namespace baracuda
