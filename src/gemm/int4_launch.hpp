// Host-side launch helpers shared by Int4GemmPlan's kernel instance files (int4_kernels.cu,
// int4_bulk.cu): the dynamic shared memory opt-in of a decode kernel and the split-K reduction.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <string>

#include "gemm/int4_params.hpp"
#include "gemm/launch_status.hpp"

namespace baracuda::gemm {

inline std::mutex& int4_smem_attr_mutex() {
  static std::mutex mu;  // cudaFuncSetAttribute is serialized across host threads
  return mu;
}

// Raises `kernel`'s dynamic shared memory limit to `bytes` (once per select; needs the device).
template <class P>
Status int4_allow_smem(void (*kernel)(const P), std::size_t bytes) {
  std::lock_guard<std::mutex> lock(int4_smem_attr_mutex());
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(Code::kCudaError, std::string("int4 gemm: cudaFuncSetAttribute(MaxDynamicSharedMemorySize = ") +
                                      std::to_string(bytes) + "): " + cudaGetErrorString(e),
                StatusSource::kCuda, static_cast<int>(e));
}

// y = the sum of the p.cfg.splits partial sums in p.partial (+ bias), in split order
// (kernels/int4_gemv.cuh int4_splitk_reduce_kernel).
Status launch_int4_splitk_reduce(const Int4GemvParams& p, cudaStream_t s);

}  // namespace baracuda::gemm
