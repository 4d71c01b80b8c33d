// The SKU tables of the SDPA plans, one per backend file, so each backend lives in its own
// translation unit and sdpa.cpp only orders them:
//   cudnn_sdpa.cpp    cuDNN fused attention through the cuDNN frontend (f16, bf16, e4m3 fwd)
//   flash_sdpa.cpp    our flash kernels (wgmma + TMA on sm_90a, mma.sync on sm_80+)
//   sdpa_general.cpp  the general kernels (any dtype, any head dims, any mask)
// Each function returns its backend's candidates best first; select() has already run
// FamilyTraits<...>::validate (sdpa.cpp) on the descriptor before any probe sees it.
// FlashSdpaPlan / FlashSdpaBackwardPlan use the cuDNN and flash tables only.
#pragma once

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

}  // namespace baracuda::attention
