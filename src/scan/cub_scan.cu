// cumsum of one contiguous f32 / f64 row by cub::DeviceScan::InclusiveSum: the `cub` SKU of
// ScanPlan / ScanBackwardPlan (host side: scan.cpp; seam: scan_params.hpp). CUB's
// single-pass decoupled look-back is tuned per architecture (sm_90: tiles of 3072 f32 /
// 5376 f64 elements); PyTorch's cumsum of a long 1-D tensor runs the same routine. reverse
// (the backward of cumsum, or reverse = true) scans through reverse iterators. Like our
// look-back, a tile's carry is added in the order its predecessors publish: the f32 / f64
// bits are not run-to-run deterministic.
#include <cub/device/device_scan.cuh>
#include <cuda/std/iterator>

#include <string>

#include "scan/scan_params.hpp"

namespace baracuda::scan {
namespace {

template <class T>
cudaError_t inclusive_sum(void* ws, std::size_t& bytes, const T* in, T* out, std::int64_t n, bool reverse,
                          cudaStream_t s) {
  if (!reverse) return cub::DeviceScan::InclusiveSum(ws, bytes, in, out, n, s);
  return cub::DeviceScan::InclusiveSum(ws, bytes, cuda::std::reverse_iterator<const T*>(in + n),
                                       cuda::std::reverse_iterator<T*>(out + n), n, s);
}

template <class T>
cudaError_t query(std::size_t& bytes, std::int64_t n, bool reverse) {
  return inclusive_sum<T>(nullptr, bytes, nullptr, nullptr, n, reverse, nullptr);
}

}  // namespace

std::size_t cub_cumsum_workspace(DType t, std::int64_t len, bool reverse) {
  std::size_t bytes = 0;
  const cudaError_t e = t == DType::kF64 ? query<double>(bytes, len, reverse) : query<float>(bytes, len, reverse);
  if (e == cudaSuccess) return bytes;
  (void)cudaGetLastError();  // no device here (select_for_caps on a host): a bound instead
  // tiles of at least 256 elements, at most 32 bytes of tile state each, CUB's padding
  return static_cast<std::size_t>(len / 256 + 1 + 64) * 32 + 1024;
}

Status launch_cub_cumsum(DType t, const ScanParams& p, std::size_t ws_bytes, cudaStream_t s) {
  if (p.len == 0) return Status::ok();
  // CUB refuses (cudaErrorInvalidValue) a temporary storage smaller than it needs
  std::size_t bytes = ws_bytes;
  const cudaError_t e =
      t == DType::kF64
          ? inclusive_sum(p.workspace, bytes, static_cast<const double*>(p.in[0]), static_cast<double*>(p.out), p.len,
                          p.reverse, s)
          : inclusive_sum(p.workspace, bytes, static_cast<const float*>(p.in[0]), static_cast<float*>(p.out), p.len,
                          p.reverse, s);
  if (e != cudaSuccess) return Status(Code::kCudaError, std::string("scan cub: ") + cudaGetErrorString(e));
  return Status::ok();
}

}  // namespace baracuda::scan
