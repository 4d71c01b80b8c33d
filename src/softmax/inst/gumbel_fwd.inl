// Instance body: the gumbel_softmax forward kernels (register rows of 1 and 4
// vectors a thread, one warp or one block per row, and the block loop) for one dtype.
#include "softmax/kernels/gumbel_softmax.cuh"

namespace baracuda::softmax::gumbel {
template <>
Status launch_gumbel_fwd<DType::BARACUDA_INSTANCE_DTYPE>(const RowOpParams& p, cudaStream_t s) {
  return kernels::rowop::launch_rowop<kernels::gumbel::Forward, kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>(p, s);
}
}  // namespace baracuda::softmax::gumbel
