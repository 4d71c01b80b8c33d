// Instance body: SoftmaxPlan's kernels (every row mode and bucket, and the column kernel)
// for one dtype.
#include "softmax/kernels/softmax.cuh"
#include "softmax/kernels/softmax_tma.cuh"

namespace baracuda::softmax {
template <>
Status launch_softmax_fwd<DType::BARACUDA_INSTANCE_DTYPE>(const SoftmaxParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  if (p.impl == SoftmaxImpl::kTmaRow && p.rows > 0 && p.len > 0) return kernels::launch_softmax_tma<T, false>(p, s);
  return kernels::launch_softmax<T, false>(p, s);
}
}  // namespace baracuda::softmax
