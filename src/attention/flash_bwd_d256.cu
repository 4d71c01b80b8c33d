// Flash SDPA backward (mma.sync) for head dim 256: f16 and bf16, the atomic-dQ and the
// deterministic dQ variants (kernels/flash_bwd.cuh). One TU per head dim.
#include "attention/kernels/flash_bwd.cuh"

namespace baracuda::attention {

template <>
Status launch_flash_bwd<256>(const FlashBwdParams& p, cudaStream_t stream) {
  return kernels::launch_flash_bwd_impl<256>(p, stream);
}

}  // namespace baracuda::attention
