// Instance body: ReduceBackwardPlan's group kernel for one floating dtype.
#include "reduce/kernels/reduce_bwd.cuh"

namespace baracuda::reduce {
template <>
Status launch_reduce_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const ReduceBwdParams& p, cudaStream_t s) {
  return kernels::reduce::launch_bwd<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>(p, s);
}
}  // namespace baracuda::reduce
