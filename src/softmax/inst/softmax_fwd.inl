// Instance body: SoftmaxPlan's kernels (every row mode and bucket, and the column kernel)
// for one dtype.
#include "softmax/kernels/softmax.cuh"

namespace baracuda::softmax {
template <>
Status launch_softmax_fwd<DType::BARACUDA_INSTANCE_DTYPE>(const SoftmaxParams& p, cudaStream_t s) {
  return kernels::launch_softmax<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, false>(p, s);
}
}  // namespace baracuda::softmax
