// Programmatic dependent launch (PDL, sm_90+): lets a kernel that consumes a predecessor's
// output be launched while the predecessor is still finishing, hiding the launch gap of a
// short second pass.
//
//  * The secondary is launched with launch_dependent() (cudaLaunchAttributeProgrammatic-
//    StreamSerialization); before reading anything the predecessor writes it calls
//    pdl_wait(), which returns once the whole predecessor grid has completed and its
//    memory is visible — so correctness never depends on where the trigger below sits.
//  * The predecessor calls pdl_trigger() in each block once its main work is done: the
//    secondary's blocks are scheduled when every block of the predecessor has triggered
//    (or exited). Triggering late keeps the waiting secondary blocks from taking SM slots
//    the predecessor's own later blocks still need.
// Both device calls compile to nothing below sm_90, where launch_dependent() launches
// normally (the attribute is only set when `enabled`).
#pragma once

#include <cuda_runtime.h>

namespace baracuda::kernels {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Launches kernel<<<grid, block, 0, stream>>>(args...) as a programmatic dependent of the
// stream's previous kernel when `enabled` (callers pass true only on sm_90+ devices).
template <class... Params, class... Args>
cudaError_t launch_dependent(bool enabled, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                             Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = enabled ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

}  // namespace baracuda::kernels
