// Instance body: the normalization backward (grad_x and the deterministic parameter gradients) kernels, every mode and bucket, for one dtype.
#include "normalization/kernels/norm.cuh"
#include "normalization/kernels/norm_bwd_tma_lean.cuh"

namespace baracuda::norm {
template <>
Status launch_norm_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const NormParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  if (p.impl == NormImpl::kTmaLean) return kernels::launch_norm_bwd_tma_lean<T>(p, s);
  return kernels::launch_norm<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, true>(p, s);
}
}  // namespace baracuda::norm
