// The SKU tables of the SDPA plans, one per backend file, so each backend lives in its own
// translation unit and sdpa.cpp only orders them:
//   cudnn_sdpa.cpp    cuDNN fused attention through the cuDNN frontend (f16, bf16, e4m3 fwd)
//   flash_sdpa.cpp    our flash kernels (wgmma + TMA on sm_90a, mma.sync on sm_80+)
//   sdpa_general.cpp  the general kernels (any dtype, any head dims, any mask)
// Each function returns its backend's candidates best first; select() has already run
// FamilyTraits<...>::validate (sdpa.cpp) on the descriptor before any probe sees it.
// FlashSdpaPlan / FlashSdpaBackwardPlan use the cuDNN and flash tables only. select() takes a
// candidate's workspace from its prepared state where the backend reports one (cuDNN below).
#pragma once

#include <cstddef>
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

// The exact workspace of a state prepared by one of the cuDNN candidates above (aux + the built
// graph's; the probe reports an upper bound because only the built graph knows its size), or
// nullopt for any other candidate and for a state prepared from caps alone (no graph built).
std::optional<std::size_t> cudnn_sdpa_prepared_workspace(const SdpaCandidate& c, const void* state);
std::optional<std::size_t> cudnn_sdpa_prepared_workspace(const SdpaBackwardCandidate& c, const void* state);

}  // namespace baracuda::attention
