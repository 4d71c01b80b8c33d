// Flash SDPA forward on sm_90a, warp-specialized TMA + wgmma (EXPERIMENTAL), head dim 128: f16 and
// bf16 (kernels/flash_fwd_sm90_ws.cuh). Other architectures compile an empty body (the SKU is
// arch-specific: select never picks it there).
#include "attention/kernels/flash_fwd_sm90_ws.cuh"

namespace baracuda::attention {

template <>
Status launch_flash_fwd_sm90_ws<128>(const FlashFwdParams& p, int* tile_counter, int sm_count, cudaStream_t stream) {
  return kernels::launch_flash_fwd_sm90_ws_impl<128>(p, tile_counter, sm_count, stream);
}

}  // namespace baracuda::attention
