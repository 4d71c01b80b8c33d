// SdpaDecodePlan's tensor-core instances for bf16 (D 64 / 128 at 2 and 3 stages, D 256 at 2).
#include "attention/decode_launch.cuh"

namespace baracuda::attention::detail {
Status launch_decode_mma_bf16(const DecodeParams& p, cudaStream_t s) { return launch_mma_d<__nv_bfloat16>(p, s); }
}  // namespace baracuda::attention::detail
