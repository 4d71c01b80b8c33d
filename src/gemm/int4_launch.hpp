// Host-side launch helpers shared by Int4GemmPlan's kernel instance files (int4_kernels.cu,
// int4_bulk.cu, int4_streamk.cu, int4_onepass.cu): the dynamic shared memory opt-in of a decode
// kernel, the instance choice of the stream-K kernel family and the split-K reduction.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

// The instance of a kernel of the stream-K family (w4a16_streamk, w4a16_onepass: the same
// template parameters) for an activation dtype, weight kind, weight layout and M: NT = 1 with
// the ring depth int4_streamk_stages(8) for M <= 8, else NT = 2 with int4_streamk_stages(16).
// Family::kernel<T, NT, kSigned, kTiled, D>() returns the instance's address.
template <class Family, class T, bool kSigned, bool kTiled>
auto int4_streamk_family_instance(std::int64_t m) {
  return m <= 8 ? Family::template kernel<T, 1, kSigned, kTiled, int4_streamk_stages(8)>()
                : Family::template kernel<T, 2, kSigned, kTiled, int4_streamk_stages(16)>();
}
template <class Family, class T>
auto int4_streamk_family_instance(bool is_signed, bool tiled, std::int64_t m) {
  if (tiled)
    return is_signed ? int4_streamk_family_instance<Family, T, true, true>(m)
                     : int4_streamk_family_instance<Family, T, false, true>(m);
  return is_signed ? int4_streamk_family_instance<Family, T, true, false>(m)
                   : int4_streamk_family_instance<Family, T, false, false>(m);
}
template <class Family>
auto int4_streamk_family_instance(DType act, bool is_signed, bool tiled, std::int64_t m) {
  return act == DType::kF16 ? int4_streamk_family_instance<Family, __half>(is_signed, tiled, m)
                            : int4_streamk_family_instance<Family, __nv_bfloat16>(is_signed, tiled, m);
}

// y = the sum of the p.cfg.splits partial sums in p.partial (+ bias), in split order
// (kernels/int4_gemv.cuh int4_splitk_reduce_kernel).
Status launch_int4_splitk_reduce(const Int4GemvParams& p, cudaStream_t s);

}  // namespace baracuda::gemm
