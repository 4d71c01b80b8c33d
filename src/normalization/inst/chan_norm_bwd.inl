// Instance body: the BatchNorm / GroupNorm / InstanceNorm backward kernels (reduce, finalize, apply; vector and strided paths) for one dtype.
#include "normalization/kernels/chan_norm.cuh"

namespace baracuda::chnorm {
template <>
Status launch_chan_norm_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const ChanNormParams& p, cudaStream_t s) {
  return kernels::launch_chan_norm<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, true>(p, s);
}
}  // namespace baracuda::chnorm
