// Instance body: the normalization forward (LayerNorm / RMSNorm, residual add) kernels, every mode and bucket, for one dtype.
#include "normalization/kernels/norm.cuh"
#include "normalization/kernels/norm_tma.cuh"
#include "normalization/kernels/norm_tma_lean.cuh"

namespace baracuda::norm {
template <>
Status launch_norm_fwd<DType::BARACUDA_INSTANCE_DTYPE>(const NormParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  if (p.impl == NormImpl::kTmaRow) return kernels::launch_norm_fwd_tma<T>(p, s);
  if (p.impl == NormImpl::kTmaLean) return kernels::launch_norm_fwd_tma_lean<T>(p, s);
  return kernels::launch_norm<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, false>(p, s);
}
}  // namespace baracuda::norm
