// Flash SDPA forward on sm_90a (wgmma, EXPERIMENTAL) for head dim 64: f16 and bf16, fast and
// extras score paths (kernels/flash_fwd_sm90.cuh). Other architectures compile an empty body
// (the SKU is arch-specific: select never picks it there).
#include "attention/kernels/flash_fwd_sm90.cuh"

namespace baracuda::attention {

template <>
Status launch_flash_fwd_sm90<64>(const FlashFwdParams& p, cudaStream_t stream) {
  return kernels::launch_flash_fwd_sm90_impl<64>(p, stream);
}

}  // namespace baracuda::attention
