// Instance body: SoftmaxBackwardPlan's kernels (every row mode and bucket, and the column
// kernel) for one dtype.
#include "softmax/kernels/softmax.cuh"

namespace baracuda::softmax {
template <>
Status launch_softmax_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const SoftmaxParams& p, cudaStream_t s) {
  return kernels::launch_softmax<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, true>(p, s);
}
}  // namespace baracuda::softmax
