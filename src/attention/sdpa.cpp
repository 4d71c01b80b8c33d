// SdpaPlan / SdpaBackwardPlan / FlashSdpaPlan / FlashSdpaBackwardPlan: descriptor hash and
// text, validation, and the order of the backends' candidate tables (sdpa_candidates.hpp).
// SdpaPlan walks cuDNN, then our flash kernels, then the general kernels; the Flash plans walk
// the two fused backends only (through FusedCandidates, which re-types the shared tables).
#include <string>
#include <utility>
#include <vector>

#include "attention/sdpa_candidates.hpp"
#include "core/hash.hpp"
#include "elementwise/checks.hpp"

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

// Re-types a shared candidate table for a descriptor type derived from the table's (the Flash
// plans' descriptors add no field), one forwarding function per slot.
template <class FDesc, class Desc, class Args, std::span<const Candidate<Desc, Args>> (*... Tables)()>
struct FusedCandidates {
  static constexpr std::size_t kMaxSlots = 16;
  static const std::vector<Candidate<Desc, Args>>& base() {
    static const std::vector<Candidate<Desc, Args>> all = [] {
      std::vector<Candidate<Desc, Args>> v;
      for (auto table : {Tables...})
        for (const auto& c : table()) v.push_back(c);
      return v;
    }();
    return all;
  }
  template <std::size_t I>
  static typename Candidate<FDesc, Args>::Probe probe(const FDesc& d, const DeviceCaps& caps) {
    auto p = base()[I].probe(d, caps);
    return {std::move(p.sku), std::move(p.rejection), p.workspace_bytes};
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

// TODO(sdpa-core): full validation (shapes, GQA, dtypes, masks, varlen, options) and the
// run-time pointer checks; this placeholder only checks the ranks.
Status validate_forward(const SdpaDescriptor& d) {
  const int want = d.options.varlen ? 3 : 4;
  for (auto [t, name] : {std::pair{&d.q, "q"}, {&d.k, "k"}, {&d.v, "v"}, {&d.o, "o"}})
    if (t->rank != want)
      return Status(Code::kInvalidArgument, std::string(name) + ".rank = " + std::to_string(t->rank) + ", expected " +
                                                std::to_string(want));
  return Status::ok();
}
Status validate_backward(const SdpaBackwardDescriptor& d) {
  const int want = d.options.varlen ? 3 : 4;
  for (auto [t, name] : {std::pair{&d.q, "q"}, {&d.k, "k"}, {&d.v, "v"}, {&d.o, "o"}, {&d.grad_o, "grad_o"},
                         {&d.grad_q, "grad_q"}, {&d.grad_k, "grad_k"}, {&d.grad_v, "grad_v"}})
    if (t->rank != want)
      return Status(Code::kInvalidArgument, std::string(name) + ".rank = " + std::to_string(t->rank) + ", expected " +
                                                std::to_string(want));
  return Status::ok();
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

template <>
struct FamilyTraits<SdpaDescriptor> {
  static constexpr const char* kFamily = "sdpa";
  static Status validate(const SdpaDescriptor& d) { return attention::validate_forward(d); }
  static std::span<const Candidate<SdpaDescriptor, SdpaArgs>> candidates() {
    return attention::joined<SdpaDescriptor, SdpaArgs, attention::cudnn_sdpa_forward_candidates,
                             attention::flash_sdpa_forward_candidates, attention::general_sdpa_forward_candidates>();
  }
  static Status check_args(const SdpaDescriptor&, const SdpaArgs&) { return Status::ok(); }
};

template <>
struct FamilyTraits<FlashSdpaDescriptor> {
  static constexpr const char* kFamily = "flash_sdpa";
  static Status validate(const FlashSdpaDescriptor& d) { return attention::validate_forward(d); }
  static std::span<const Candidate<FlashSdpaDescriptor, SdpaArgs>> candidates() {
    return attention::FusedCandidates<FlashSdpaDescriptor, SdpaDescriptor, SdpaArgs,
                                      attention::cudnn_sdpa_forward_candidates,
                                      attention::flash_sdpa_forward_candidates>::table();
  }
  static Status check_args(const FlashSdpaDescriptor&, const SdpaArgs&) { return Status::ok(); }
};

template <>
struct FamilyTraits<SdpaBackwardDescriptor> {
  static constexpr const char* kFamily = "sdpa_backward";
  static Status validate(const SdpaBackwardDescriptor& d) { return attention::validate_backward(d); }
  static std::span<const Candidate<SdpaBackwardDescriptor, SdpaBackwardArgs>> candidates() {
    return attention::joined<SdpaBackwardDescriptor, SdpaBackwardArgs, attention::cudnn_sdpa_backward_candidates,
                             attention::flash_sdpa_backward_candidates, attention::general_sdpa_backward_candidates>();
  }
  static Status check_args(const SdpaBackwardDescriptor&, const SdpaBackwardArgs&) { return Status::ok(); }
};

template <>
struct FamilyTraits<FlashSdpaBackwardDescriptor> {
  static constexpr const char* kFamily = "flash_sdpa_backward";
  static Status validate(const FlashSdpaBackwardDescriptor& d) { return attention::validate_backward(d); }
  static std::span<const Candidate<FlashSdpaBackwardDescriptor, SdpaBackwardArgs>> candidates() {
    return attention::FusedCandidates<FlashSdpaBackwardDescriptor, SdpaBackwardDescriptor, SdpaBackwardArgs,
                                      attention::cudnn_sdpa_backward_candidates,
                                      attention::flash_sdpa_backward_candidates>::table();
  }
  static Status check_args(const FlashSdpaBackwardDescriptor&, const SdpaBackwardArgs&) { return Status::ok(); }
};

template class Plan<SdpaDescriptor, SdpaArgs>;
template class Plan<FlashSdpaDescriptor, SdpaArgs>;
template class Plan<SdpaBackwardDescriptor, SdpaBackwardArgs>;
template class Plan<FlashSdpaBackwardDescriptor, SdpaBackwardArgs>;

}  // namespace baracuda
