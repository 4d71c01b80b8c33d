// Instance body: the ALiBi kernels (bias add / copy rows and the slope-gradient passes, 16-byte
// vectors and strided) for one dtype.
#include "attention/kernels/alibi.cuh"

namespace baracuda::alibi {
template <>
Status launch_alibi<DType::BARACUDA_INSTANCE_DTYPE>(const AlibiParams& p, cudaStream_t s) {
  return kernels::launch_alibi_dtype<baracuda::kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>(p, s);
}
}  // namespace baracuda::alibi
