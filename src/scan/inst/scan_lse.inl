// Instance body: the logcumsumexp kernels for one dtype.
#include "scan/kernels/scan.cuh"

namespace baracuda::scan {
template <>
Status launch_scan_lse<DType::BARACUDA_INSTANCE_DTYPE>(const ScanParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::launch_scan_op<kernels::LseOp<T>, T>(p, s);
}
}  // namespace baracuda::scan
