// Instances and launchers of Int4GemmPlan's kernels (kernels/int4_gemv.cuh,
// kernels/int4_dequant.cuh): per activation dtype (f16, bf16) and, for the decode kernel,
// per number of 8-row activation tiles (NT = 1 for M <= 8, 2 for M <= 16).
#include <mutex>

#include "gemm/kernels/int4_dequant.cuh"
#include "gemm/kernels/int4_gemv.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::gemm {

namespace {

template <class T>
auto gemv_kernel_for(std::int64_t m) {
  return m <= 8 ? &kernels::int4_gemv_kernel<T, 1> : &kernels::int4_gemv_kernel<T, 2>;
}

template <class T>
Status allow_smem_t(std::int64_t m, std::size_t bytes) {
  static std::mutex mu;  // cudaFuncSetAttribute is serialized across host threads
  std::lock_guard<std::mutex> lock(mu);
  const cudaError_t e =
      cudaFuncSetAttribute(gemv_kernel_for<T>(m), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(Code::kCudaError, std::string("int4 gemv: cudaFuncSetAttribute(MaxDynamicSharedMemorySize = ") +
                                      std::to_string(bytes) + "): " + cudaGetErrorString(e),
                StatusSource::kCuda, static_cast<int>(e));
}

template <class T>
Status launch_gemv_t(const Int4GemvParams& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.cfg.row_blocks), static_cast<unsigned>(p.cfg.splits));
  gemv_kernel_for<T>(p.m)<<<grid, kInt4GemvWarps * 32, p.cfg.smem_bytes, s>>>(p);
  BARACUDA_TRY(kernel_launch_status("int4 gemv"));
  if (p.cfg.splits == 1) return Status::ok();
  const std::int64_t total = p.m * p.wt.n;
  const std::int64_t blocks = (total + 255) / 256;
  kernels::int4_splitk_reduce_kernel<T><<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256, 0, s>>>(p);
  return kernel_launch_status("int4 split-k reduce");
}

template <class T>
Status launch_dequant_t(const Int4Weights& wt, void* wd, cudaStream_t s) {
  const std::int64_t total = wt.n * (wt.k / 32);
  if (total == 0) return Status::ok();
  const std::int64_t blocks = (total + 255) / 256;
  kernels::int4_dequant_kernel<T><<<static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20)), 256, 0, s>>>(
      wt, static_cast<T*>(wd));
  return kernel_launch_status("int4 dequant");
}

}  // namespace

Status int4_gemv_allow_smem(DType act, std::int64_t m, std::size_t bytes) {
  return act == DType::kF16 ? allow_smem_t<__half>(m, bytes) : allow_smem_t<__nv_bfloat16>(m, bytes);
}

Status launch_int4_gemv(const Int4GemvParams& p, cudaStream_t s) {
  return p.act == DType::kF16 ? launch_gemv_t<__half>(p, s) : launch_gemv_t<__nv_bfloat16>(p, s);
}

Status launch_int4_dequant(const Int4Weights& wt, DType act, void* wd, cudaStream_t s) {
  return act == DType::kF16 ? launch_dequant_t<__half>(wt, wd, s) : launch_dequant_t<__nv_bfloat16>(wt, wd, s);
}

}  // namespace baracuda::gemm
