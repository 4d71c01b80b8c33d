// The SKU tables of the SDPA plans, one per backend file, so each backend lives in its own
// translation unit and sdpa.cpp only orders them:
//   cudnn_sdpa_*.cpp  cuDNN fused attention through the cuDNN frontend (f16, bf16)
//   flash_sdpa.cpp    our flash kernels (wgmma + TMA on sm_90a, mma.sync on sm_80+)
//   sdpa_general.cpp  the general kernels (any dtype, any head dims, any mask)
//   sdpa_fp8.cpp      the e4m3 forward: dequantize to bf16, an inner bf16 plan, quantize o
// Each function returns its backend's candidates best first; select() has already run
// FamilyTraits<...>::validate (sdpa.cpp) on the descriptor before any probe sees it.
// FlashSdpaPlan / FlashSdpaBackwardPlan use the cuDNN and flash tables (and the forward the
// fused-inner fp8 table) only. select() takes a candidate's workspace from its prepared state
// where the backend reports one (cuDNN and the fp8 composite below).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>

#include "baracuda/ops/attention.hpp"
#include "core/plan_impl.hpp"

namespace baracuda::attention {

using SdpaCandidate = Candidate<SdpaDescriptor, SdpaArgs>;
using SdpaBackwardCandidate = Candidate<SdpaBackwardDescriptor, SdpaBackwardArgs>;

std::span<const SdpaCandidate> cudnn_sdpa_forward_candidates();
std::span<const SdpaBackwardCandidate> cudnn_sdpa_backward_candidates();
std::span<const SdpaCandidate> flash_sdpa_forward_candidates();
std::span<const SdpaBackwardCandidate> flash_sdpa_backward_candidates();
std::span<const SdpaCandidate> general_sdpa_forward_candidates();
std::span<const SdpaBackwardCandidate> general_sdpa_backward_candidates();
// The e4m3 forward (sdpa_fp8.cpp), a composite: its inner bf16 plan is SdpaPlan's choice for the
// first table (SdpaPlan orders it) and FlashSdpaPlan's (fused SKUs only) for the second.
std::span<const SdpaCandidate> fp8_sdpa_forward_candidates();
std::span<const SdpaCandidate> fp8_flash_sdpa_forward_candidates();

// The exact workspace of a state prepared by one of the cuDNN candidates above (aux + the built
// graph's; the probe reports an upper bound because only the built graph knows its size), or
// nullopt for any other candidate and for a state prepared from caps alone (no graph built).
std::optional<std::size_t> cudnn_sdpa_prepared_workspace(const SdpaCandidate& c, const void* state);
std::optional<std::size_t> cudnn_sdpa_prepared_workspace(const SdpaBackwardCandidate& c, const void* state);

// ---- the e4m3 composite's inner plan
// A plan of SdpaPlan (fused = false) or FlashSdpaPlan (fused = true) selected by sdpa.cpp, which
// owns the tables' order, type-erased so that both look alike to sdpa_fp8.cpp.
struct SdpaInnerPlan {
  std::shared_ptr<const void> impl;  // detail::PlanImpl<SdpaDescriptor or FlashSdpaDescriptor, SdpaArgs>
  KernelSku sku;
  std::size_t workspace_bytes = 0;
  Status (*launch)(const void* impl, const SdpaArgs& args, Workspace ws, cudaStream_t stream) = nullptr;
};
// select() of the plan on `caps` (device caps.ordinal; -1: from caps alone, cannot run).
Expected<SdpaInnerPlan> select_sdpa_inner(const DeviceCaps& caps, const SdpaDescriptor& d, const PlanPreference& pref,
                                          bool fused);
// The preference-aware preparation of a candidate of the fp8 tables (its state holds the inner
// plan chosen under `pref`, its workspace is exact: the bf16 buffers + the inner plan's), or
// nullopt for every other candidate (the SdpaPlan / FlashSdpaPlan traits call it first).
std::optional<Expected<PreparedCandidate>> fp8_sdpa_prepare_with_preference(const SdpaCandidate& c,
                                                                            const SdpaDescriptor& d,
                                                                            const DeviceCaps& caps,
                                                                            const PlanPreference& pref);

}  // namespace baracuda::attention
