// Flash SDPA forward (mma.sync) for head dim 96: f16 and bf16, fast and extras score paths
// (kernels/flash_fwd.cuh). One TU per head dim keeps cold builds parallel and small.
#include "attention/kernels/flash_fwd.cuh"

namespace baracuda::attention {

template <>
Status launch_flash_fwd<96>(const FlashFwdParams& p, cudaStream_t stream) {
  return kernels::launch_flash_fwd_impl<96>(p, stream);
}

}  // namespace baracuda::attention
