// Placeholder: the cudnn SDPA backend's candidate tables (empty until the backend lands).
#include "attention/sdpa_candidates.hpp"

namespace baracuda::attention {

std::span<const SdpaCandidate> cudnn_sdpa_forward_candidates() { return {}; }
std::span<const SdpaBackwardCandidate> cudnn_sdpa_backward_candidates() { return {}; }

}  // namespace baracuda::attention
