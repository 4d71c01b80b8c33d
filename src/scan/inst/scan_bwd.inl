// Instance body: the backward scans of cumprod, cummax / cummin and logcumsumexp (scalar
// loads; cumsum's backward is the reversed sum scan) for one dtype.
#include "scan/kernels/scan.cuh"

namespace baracuda::scan {
template <>
Status launch_scan_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const ScanParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  switch (p.op) {
    case ScanOp::kProdBwd: return kernels::launch_scan_op<kernels::ProdBwdOp<T>, T>(p, s);
    case ScanOp::kMaxMinBwd: return kernels::launch_scan_op<kernels::MaxMinBwdOp<T>, T>(p, s);
    case ScanOp::kLseBwd:  // the sequential column kernels sum in f64, kColumn's compensated for f64 inputs (kernels/scan.cuh, LseBwdOp)
      if constexpr (std::is_same_v<T, double>)
        if (p.impl == ScanImpl::kColumn) return kernels::launch_scan_column<kernels::LseBwdOp<T, double, true>>(p, s);
      if (is_column_impl(p.impl)) return kernels::launch_scan_columns<kernels::LseBwdOp<T, double>>(p, s);
      return kernels::launch_scan_tiles<kernels::LseBwdOp<T>, T>(p, s);
    default: return Status(Code::kInternal, "scan backward: not a backward op");
  }
}
}  // namespace baracuda::scan
