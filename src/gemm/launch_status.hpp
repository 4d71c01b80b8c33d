// The status of the GEMM family's last kernel launch (cudaGetLastError), naming the kernel.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "baracuda/core/status.hpp"

namespace baracuda::gemm {

inline Status kernel_launch_status(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string(kernel) + " kernel launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                static_cast<int>(e));
}

}  // namespace baracuda::gemm
