// Instance body: the prod scan kernels (column, warp / block rows and look-back, 16-byte
// vectors and scalar loads) for one input dtype.
#include "scan/kernels/scan.cuh"

namespace baracuda::scan {
template <>
Status launch_scan_prod<DType::BARACUDA_INSTANCE_DTYPE>(const ScanParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::launch_scan_op<kernels::ProdOp<T>, T>(p, s);
}
}  // namespace baracuda::scan
