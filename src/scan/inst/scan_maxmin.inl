// Instance body: the cummax and cummin kernels (values and i64 indices) for one dtype.
#include "scan/kernels/scan.cuh"

namespace baracuda::scan {
template <>
Status launch_scan_maxmin<DType::BARACUDA_INSTANCE_DTYPE>(const ScanParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  if (p.op == ScanOp::kMax) return kernels::launch_scan_op<kernels::MaxMinOp<T, true>, T>(p, s);
  return kernels::launch_scan_op<kernels::MaxMinOp<T, false>, T>(p, s);
}
}  // namespace baracuda::scan
