// The warp-specialized sm_90a flash forward (kernels/flash_fwd_sm90_ws.cuh, SKU flash_wgmma_ws):
// its kernel parameter of TMA descriptors and the per-head-dim launchers (one TU each:
// flash_fwd_sm90_ws_d<D>.cu). The launchers build the tensor maps from the pointers of the run
// (a host-only encode: no allocation, no sync, graph-capturable).
#pragma once

#include <cuda.h>

#include "attention/flash_params.hpp"

namespace baracuda::attention {

// TMA descriptors of q, k, v (4-D maps d, s, h, b; 128-byte swizzle), passed __grid_constant__.
struct FlashWsMaps {
  CUtensorMap q, k, v;
};

// The kernel is persistent (one CTA per SM, at most sm_count) and claims its work tiles from
// `tile_counter`, a device int the launcher zeroes (stream-ordered) before the kernel.
template <int D>
Status launch_flash_fwd_sm90_ws(const FlashFwdParams& p, int* tile_counter, int sm_count, cudaStream_t stream);
template <>
Status launch_flash_fwd_sm90_ws<64>(const FlashFwdParams& p, int* tile_counter, int sm_count, cudaStream_t stream);
template <>
Status launch_flash_fwd_sm90_ws<128>(const FlashFwdParams& p, int* tile_counter, int sm_count, cudaStream_t stream);

}  // namespace baracuda::attention
