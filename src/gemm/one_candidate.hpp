// The FamilyTraits pieces of a GEMM-family plan with one candidate whose preparation takes the
// preference (a cuBLASLt heuristic capped by max_workspace_bytes): IntGemmPlan, Fp8GemmPlan,
// GroupedGemmPlan. A family's traits derive from OneCandidateTraits and add kFamily,
// validate and check_args.
#pragma once

#include <array>
#include <memory>
#include <span>

#include "core/plan_impl.hpp"

namespace baracuda::gemm {

// Cand: static probe, prepare_pref(desc, caps, pref) and launch.
template <class Cand, class Desc>
Expected<std::shared_ptr<const void>> prepare_without_preference(const Desc& d, const DeviceCaps& caps) {
  auto p = Cand::prepare_pref(d, caps, PlanPreference{});
  if (!p) return p.error();
  return std::move(p->state);
}

template <class Desc, class Args, class Cand>
struct OneCandidateTraits {
  static constexpr std::array<Candidate<Desc, Args>, 1> kCandidates = {
      Candidate<Desc, Args>{&Cand::probe, &prepare_without_preference<Cand, Desc>, &Cand::launch}};
  static std::span<const Candidate<Desc, Args>> candidates() { return kCandidates; }
  static Expected<PreparedCandidate> prepare_with_preference(std::size_t, const Desc& d, const DeviceCaps& caps,
                                                             const PlanPreference& pref) {
    return Cand::prepare_pref(d, caps, pref);
  }
};

}  // namespace baracuda::gemm
