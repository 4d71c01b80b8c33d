// The generic half of Plan<Desc, Args>: candidate walk, preference filters, dispatch log,
// and the run() checks every family shares. A family supplies FamilyTraits<Desc> and
// instantiates Plan in its own .cpp:
//
//   template <> struct FamilyTraits<UnaryDescriptor> {
//     using Args = UnaryArgs;
//     static constexpr const char* kFamily = "unary";
//     static Status validate(const UnaryDescriptor&);                // descriptor only
//     static std::span<const Candidate<UnaryDescriptor, UnaryArgs>> candidates();
//     static Status check_args(const UnaryDescriptor&, const UnaryArgs&);  // null/alignment/aliasing
//   };
//   template class Plan<UnaryDescriptor, UnaryArgs>;
#pragma once

#include <concepts>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "baracuda/core/plan.hpp"
#include "core/log.hpp"

namespace baracuda {

template <class Desc>
struct FamilyTraits;

// A candidate: pure functions, no state. probe() decides (cheaply, without a GPU) whether
// it can run the descriptor on a device with `caps`, and names the SKU; prepare() does the
// one-off work of select (launch parameters, library queries); launch() enqueues.
template <class Desc, class Args>
struct Candidate {
  struct Probe {
    KernelSku sku;
    std::string rejection;  // empty = accepts
    std::size_t workspace_bytes = 0;
    // Non-empty (only with an empty rejection): the candidate accepts but measured slower
    // than a later one for this case, so select tries it only after every candidate that
    // does not defer; the text says why. Forcing its SKU still selects it.
    std::string deferral;
  };
  Probe (*probe)(const Desc& desc, const DeviceCaps& caps);
  Expected<std::shared_ptr<const void>> (*prepare)(const Desc& desc, const DeviceCaps& caps);
  Status (*launch)(const void* state, const Desc& desc, const Args& args, Workspace ws, cudaStream_t stream);
};

// What a candidate's one-off preparation produced: its state and the workspace that state
// needs (which may be known only after a library query, e.g. cuBLASLt's chosen algorithm).
struct PreparedCandidate {
  PreparedCandidate() = default;
  PreparedCandidate(std::shared_ptr<const void> prepared_state, std::size_t workspace, std::string why_deferred = {})
      : state(std::move(prepared_state)), workspace_bytes(workspace), deferral(std::move(why_deferred)) {}
  std::shared_ptr<const void> state;
  std::size_t workspace_bytes = 0;
  // Non-empty: prepared, but under this preference it runs a slower path (a workspace cap
  // dropped its fast one, say), so select takes it only if no other candidate can run,
  // deferred ones included; the text says why.
  std::string deferral;
};

// Optional family hook, for candidates whose preparation depends on the preference (a library
// heuristic capped by max_workspace_bytes, say) or decides the workspace:
//   static Expected<PreparedCandidate> prepare_with_preference(std::size_t candidate_index,
//       const Desc&, const DeviceCaps&, const PlanPreference&);
// Without it, Candidate::prepare runs and the probe's workspace stands.
template <class Traits, class Desc>
concept HasPreferencePrepare = requires(std::size_t i, const Desc& d, const DeviceCaps& c, const PlanPreference& p) {
  { Traits::prepare_with_preference(i, d, c, p) } -> std::same_as<Expected<PreparedCandidate>>;
};

namespace detail {

template <class Desc, class Args>
struct PlanImpl {
  Desc desc;
  KernelSku sku;
  std::size_t workspace_bytes = 0;
  const Candidate<Desc, Args>* candidate = nullptr;
  std::shared_ptr<const void> state;
  int device = -1;  // -1: selected from caps alone, cannot run
  std::vector<CandidateReport> reports;
};

// The family-independent rules of selection, applied after a candidate's own probe:
// returns the reason a preference or the device excludes the SKU, or "".
std::string preference_rejection(const KernelSku& sku, std::size_t workspace, const DeviceCaps& caps,
                                 const PlanPreference& pref, bool have_device);
// Log line + error message helpers.
std::string format_reports(const std::vector<CandidateReport>& reports);
void log_dispatch(const char* family, const std::string& desc, const std::vector<CandidateReport>& reports,
                  int chosen);
Status check_workspace(Workspace ws, std::size_t needed);
Status check_stream_device(int plan_device, int stream_device);
Expected<bool> stream_is_capturing(const Stream& stream);

// A candidate's probe with the preference's rules applied.
template <class Desc, class Args>
CandidateReport probe_report(const Candidate<Desc, Args>& c, const Desc& desc, const DeviceCaps& caps,
                             const PlanPreference& pref, bool have_device) {
  auto probe = c.probe(desc, caps);
  CandidateReport r{probe.sku, probe.rejection, probe.workspace_bytes, probe.rejection.empty() ? probe.deferral : ""};
  if (r.rejection.empty()) r.rejection = preference_rejection(probe.sku, probe.workspace_bytes, caps, pref, have_device);
  return r;
}

template <class Desc, class Args>
Expected<std::shared_ptr<const PlanImpl<Desc, Args>>> select_impl(const DeviceCaps& caps, const Desc& desc,
                                                                  const PlanPreference& pref, int device) {
  using Traits = FamilyTraits<Desc>;
  Status st = Traits::validate(desc);
  if (!st) return st.add_context(std::string("select ") + Traits::kFamily);
  auto impl = std::make_shared<PlanImpl<Desc, Args>>();
  impl->desc = desc;
  impl->device = device;
  int chosen = -1;
  auto cands = Traits::candidates();
  for (const auto& c : cands) impl->reports.push_back(probe_report(c, desc, caps, pref, device >= 0));
  // The candidates that accept, in the family's order, the deferred ones after the others;
  // the first whose preparation succeeds within the workspace cap is chosen, except that one
  // whose preparation defers is kept as the fallback.
  int fallback = -1;
  PreparedCandidate fallback_prepared;
  auto try_prepare = [&](std::size_t i) {
    CandidateReport& r = impl->reports[i];
    Expected<PreparedCandidate> prepared = PreparedCandidate{};
    if constexpr (HasPreferencePrepare<Traits, Desc>) {
      prepared = Traits::prepare_with_preference(i, desc, caps, pref);
    } else {
      auto state = cands[i].prepare(desc, caps);
      if (state) prepared = PreparedCandidate{std::move(state.value()), r.workspace_bytes};
      else prepared = state.error();
    }
    if (!prepared) {
      r.rejection = "prepare failed: " + prepared.error().to_string();
      return;
    }
    if (prepared->workspace_bytes > pref.max_workspace_bytes) {
      r.rejection = "needs " + std::to_string(prepared->workspace_bytes) + " bytes of workspace > max_workspace_bytes = " +
                    std::to_string(pref.max_workspace_bytes);
      return;
    }
    r.workspace_bytes = prepared->workspace_bytes;
    if (!prepared->deferral.empty()) {
      r.deferral = prepared->deferral;
      if (fallback < 0) {
        fallback = static_cast<int>(i);
        fallback_prepared = std::move(prepared.value());
      }
      return;
    }
    chosen = static_cast<int>(i);
    impl->state = std::move(prepared->state);
  };
  std::vector<bool> tried(cands.size(), false);
  for (int deferred = 0; deferred < 2 && chosen < 0; ++deferred)
    for (std::size_t i = 0; i < cands.size() && chosen < 0; ++i)
      if (!tried[i] && impl->reports[i].rejection.empty() && impl->reports[i].deferral.empty() == (deferred == 0)) {
        tried[i] = true;
        try_prepare(i);
      }
  if (chosen < 0 && fallback >= 0) {
    chosen = fallback;
    impl->state = std::move(fallback_prepared.state);
  }
  if (chosen >= 0) {
    impl->sku = impl->reports[chosen].sku;
    impl->workspace_bytes = impl->reports[chosen].workspace_bytes;
    impl->candidate = &cands[chosen];
  }
  if (log_enabled(LogTopic::kDispatch)) log_dispatch(Traits::kFamily, desc.to_string(), impl->reports, chosen);
  if (chosen < 0) {
    std::string msg = std::string(Traits::kFamily) + ": no candidate accepts " + desc.to_string() + " on " +
                      caps.arch_name() + ":" + format_reports(impl->reports);
    return Status(Code::kNotSupported, msg);
  }
  return std::shared_ptr<const PlanImpl<Desc, Args>>(std::move(impl));
}

}  // namespace detail

template <class Desc, class Args>
Expected<Plan<Desc, Args>> Plan<Desc, Args>::select(const Stream& stream, const Desc& desc,
                                                    const PlanPreference& pref) {
  auto caps = stream.caps();
  if (!caps) return caps.error();
  auto impl = detail::select_impl<Desc, Args>(*caps.value(), desc, pref, stream.device());
  if (!impl) return impl.error();
  return Plan(std::move(impl.value()));
}

template <class Desc, class Args>
Expected<Plan<Desc, Args>> Plan<Desc, Args>::select_for_caps(const DeviceCaps& caps, const Desc& desc,
                                                             const PlanPreference& pref) {
  auto impl = detail::select_impl<Desc, Args>(caps, desc, pref, -1);
  if (!impl) return impl.error();
  return Plan(std::move(impl.value()));
}

template <class Desc, class Args>
Expected<std::vector<CandidateReport>> Plan<Desc, Args>::candidates(const DeviceCaps& caps, const Desc& desc,
                                                                    const PlanPreference& pref) {
  using Traits = FamilyTraits<Desc>;
  Status st = Traits::validate(desc);
  if (!st) return st;
  std::vector<CandidateReport> out;
  for (const auto& c : Traits::candidates()) {
    out.push_back(detail::probe_report(c, desc, caps, pref, caps.ordinal >= 0));
  }
  return out;
}

template <class Desc, class Args>
std::size_t Plan<Desc, Args>::workspace_size() const noexcept {
  return impl_ ? impl_->workspace_bytes : 0;
}

template <class Desc, class Args>
const KernelSku& Plan<Desc, Args>::sku() const noexcept {
  return impl_->sku;
}

template <class Desc, class Args>
const Desc& Plan<Desc, Args>::descriptor() const noexcept {
  return impl_->desc;
}

template <class Desc, class Args>
std::string Plan<Desc, Args>::describe() const {
  if (!impl_) return "<empty plan>";
  return std::string(FamilyTraits<Desc>::kFamily) + " " + impl_->desc.to_string() + " -> " + impl_->sku.name() +
         detail::format_reports(impl_->reports);
}

template <class Desc, class Args>
Status Plan<Desc, Args>::run(const Stream& stream, Workspace ws, const Args& args) const {
  using Traits = FamilyTraits<Desc>;
  if (!impl_) return Status(Code::kInvalidArgument, "run: the plan is empty (select failed or was never called)");
  BARACUDA_TRY(detail::check_stream_device(impl_->device, stream.device()));
  BARACUDA_TRY(Traits::check_args(impl_->desc, args));
  BARACUDA_TRY(detail::check_workspace(ws, impl_->workspace_bytes));
  if (!impl_->sku.graph_capturable) {
    auto cap = detail::stream_is_capturing(stream);
    if (!cap) return cap.error();
    if (cap.value())
      return Status(Code::kNotSupported, "run: SKU " + impl_->sku.name() + " is not graph-capturable but the stream is capturing");
  }
  return impl_->candidate->launch(impl_->state.get(), impl_->desc, args, ws, stream.handle());
}

}  // namespace baracuda
