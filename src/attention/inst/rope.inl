// Instance body: the RoPE kernels (16-byte vectors and strided, neox and interleaved, forward and
// backward share them) for one dtype.
#include "attention/kernels/rope.cuh"

namespace baracuda::rope {
template <>
Status launch_rope<DType::BARACUDA_INSTANCE_DTYPE>(const RopeParams& p, cudaStream_t s) {
  return kernels::launch_rope_dtype<baracuda::kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>(p, s);
}
}  // namespace baracuda::rope
