// Plan<Descriptor, Args>: the lifecycle every op family shares.
//
//   auto plan = UnaryPlan::select(stream, desc, pref);   // walks the family's ordered candidates
//   plan->workspace_size();                              // bytes of scratch run() needs
//   plan->run(stream, workspace, UnaryArgs{.x = x, .y = y});
//   plan->sku().name();                                  // which kernel runs
//
// A plan is an immutable value (cheap to copy: it shares its state). run() validates the
// args against the descriptor, never allocates, never synchronizes, and may be called from
// several host threads at once. Families define Descriptor / Args types and instantiate
// this template in their own .cpp (see docs/architecture.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "baracuda/core/preference.hpp"
#include "baracuda/core/runtime.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/workspace.hpp"

namespace baracuda {

// One candidate's verdict for a descriptor on a device: accepted when `rejection` is empty;
// an accepting candidate with a `deferral` (why: measured slower here than a later one) is
// tried only after the accepting candidates without one.
struct CandidateReport {
  KernelSku sku;
  std::string rejection;
  std::size_t workspace_bytes = 0;
  std::string deferral;
};

namespace detail {
template <class Desc, class Args>
struct PlanImpl;
}

template <class Desc, class Args>
class Plan {
 public:
  using Descriptor = Desc;
  using Arguments = Args;

  // Choose the first candidate (in the family's order, deferred ones last) that accepts
  // `desc` on the stream's device under `pref`. On failure the error lists every candidate with its reason.
  static Expected<Plan> select(const Stream& stream, const Desc& desc, const PlanPreference& pref = {});
  // The same decision from a caps value (no GPU needed). The plan cannot run.
  static Expected<Plan> select_for_caps(const DeviceCaps& caps, const Desc& desc, const PlanPreference& pref = {});
  // Every candidate of the family with its verdict, in order (for tests, tools and logs).
  static Expected<std::vector<CandidateReport>> candidates(const DeviceCaps& caps, const Desc& desc,
                                                           const PlanPreference& pref = {});

  std::size_t workspace_size() const noexcept;
  const KernelSku& sku() const noexcept;
  const Desc& descriptor() const noexcept;
  std::string describe() const;  // descriptor, chosen SKU and the rejected candidates
  Status run(const Stream& stream, Workspace workspace, const Args& args) const;

 private:
  explicit Plan(std::shared_ptr<const detail::PlanImpl<Desc, Args>> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::PlanImpl<Desc, Args>> impl_;
};

}  // namespace baracuda
