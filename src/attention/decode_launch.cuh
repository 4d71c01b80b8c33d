// Launch helpers of SdpaDecodePlan's instance files (decode_mma_bf16.cu, decode_mma_f16.cu,
// decode_simt_kernels.cu): the launch status, the one-off shared-memory opt-in, and the
// tensor-core launcher (kernel, then the split combine) per (dtype, D, stages). One TU per
// dtype keeps the tensor-core instances (5 per dtype) apart from the 16 SIMT ones.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <string>

#include "attention/decode_params.hpp"
#include "attention/kernels/decode_mma.cuh"

namespace baracuda::attention::detail {

inline Status launch_status(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string(kernel) + " kernel launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                static_cast<int>(e));
}

// Opts the kernel in to `bytes` of dynamic shared memory on the current device, once per
// (kernel, device); cudaFuncSetAttribute is serialized across host threads.
template <class Kernel>
Status allow_smem(Kernel kernel, std::atomic<unsigned long long>& done, std::int64_t bytes) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (e == cudaSuccess && bit && (done.load(std::memory_order_acquire) & bit)) return Status::ok();
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) {
    cudaGetLastError();
    return Status(Code::kCudaError, "paged_decode: cudaFuncSetAttribute(MaxDynamicSharedMemorySize = " +
                                        std::to_string(bytes) + "): " + cudaGetErrorString(e),
                  StatusSource::kCuda, static_cast<int>(e));
  }
  done.fetch_or(bit, std::memory_order_release);
  return Status::ok();
}

// The split combine after a tensor-core kernel (nothing with one split).
template <class T>
Status launch_split_combine(const DecodeParams& p, cudaStream_t s) {
  if (p.splits == 1) return Status::ok();
  if (p.splits > kDecodeMaxSplits)  // the combine keeps a row's split statistics in shared memory
    return Status(Code::kInternal, "paged_decode: " + std::to_string(p.splits) + " KV splits > " +
                                       std::to_string(kDecodeMaxSplits) + " (the split combine's limit)");
  const int threads = p.d >= 128 ? 128 : 64;
  (void)baracuda::kernels::launch_dependent(p.pdl != 0, kernels::decode_combine_kernel<T>,
                                            dim3(static_cast<unsigned>(p.batch * p.sq * p.hq)), dim3(threads), s, p);
  return launch_status("paged_decode split combine");  // the launch's error, if any, is the last error
}

template <class T, int D, int kStages>
Status launch_mma_t(const DecodeParams& p, cudaStream_t s) {
  auto kernel = &kernels::decode_mma_kernel<T, D, kStages>;
  static std::atomic<unsigned long long> opted{0};
  BARACUDA_TRY(allow_smem(kernel, opted, decode_smem_bytes(D, kStages, kDecodeRowsPerCta)));
  const std::int64_t rows_first = p.rows < kDecodeRowsPerCta ? p.rows : kDecodeRowsPerCta;
  const std::int64_t mtiles = (rows_first + 15) / 16;
  const std::int64_t q_rows = 16 * (mtiles == 1 ? 1 : (mtiles == 2 ? 2 : 4));
  // Every row block but the last has 64 rows: size for the largest.
  const std::int64_t smem = decode_smem_bytes(D, kStages, p.row_blocks > 1 ? kDecodeRowsPerCta : q_rows);
  const dim3 grid(static_cast<unsigned>(p.batch * p.hkv * p.row_blocks), static_cast<unsigned>(p.splits));
  kernel<<<grid, kDecodeThreads, static_cast<std::size_t>(smem), s>>>(p);
  BARACUDA_TRY(launch_status("paged_decode mma_splitkv"));
  return launch_split_combine<T>(p, s);
}

template <class T>
Status launch_mma_d(const DecodeParams& p, cudaStream_t s) {
  const bool three = p.stages == 3;
  switch (p.d) {
    case 64: return three ? launch_mma_t<T, 64, 3>(p, s) : launch_mma_t<T, 64, 2>(p, s);
    case 128: return three ? launch_mma_t<T, 128, 3>(p, s) : launch_mma_t<T, 128, 2>(p, s);
    case 256: return launch_mma_t<T, 256, 2>(p, s);
    default: return Status(Code::kInternal, "paged_decode mma_splitkv: no kernel for D = " + std::to_string(p.d));
  }
}

// The per-dtype instance files.
Status launch_decode_mma_bf16(const DecodeParams& p, cudaStream_t s);  // decode_mma_bf16.cu
Status launch_decode_mma_f16(const DecodeParams& p, cudaStream_t s);   // decode_mma_f16.cu

}  // namespace baracuda::attention::detail
