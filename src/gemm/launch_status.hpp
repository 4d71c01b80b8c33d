// The status of the GEMM family's kernel launches, naming the kernel: the last <<<>>> launch
// (cudaGetLastError), or the error a cudaLaunchKernelEx-style call returned.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "baracuda/core/status.hpp"

namespace baracuda::gemm {

// The error `e` a launch call returned (cleared from the runtime's last error when set).
inline Status kernel_launch_status(cudaError_t e, const char* kernel) {
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(Code::kCudaError, std::string(kernel) + " kernel launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                static_cast<int>(e));
}

// The last <<<>>> launch's error.
inline Status kernel_launch_status(const char* kernel) { return kernel_launch_status(cudaGetLastError(), kernel); }

}  // namespace baracuda::gemm
