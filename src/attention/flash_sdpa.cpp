// Placeholder: the flash SDPA backend's candidate tables (empty until the backend lands).
#include "attention/sdpa_candidates.hpp"

namespace baracuda::attention {

std::span<const SdpaCandidate> flash_sdpa_forward_candidates() { return {}; }
std::span<const SdpaBackwardCandidate> flash_sdpa_backward_candidates() { return {}; }

}  // namespace baracuda::attention
