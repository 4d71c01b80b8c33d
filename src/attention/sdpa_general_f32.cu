// The general SDPA kernels (kernels/sdpa_general.cuh) for f32: forward and backward launchers.
#include "attention/kernels/sdpa_general.cuh"

namespace baracuda::attention {
template Status launch_sdpa_general_fwd<DType::kF32>(const GeneralParams&, const GeneralConfig&, cudaStream_t);
template Status launch_sdpa_general_bwd<DType::kF32>(const GeneralParams&, const GeneralConfig&, cudaStream_t);
}  // namespace baracuda::attention
