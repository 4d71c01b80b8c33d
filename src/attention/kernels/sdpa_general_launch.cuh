// Launchers of the general SDPA kernels (kernels/sdpa_general.cuh), instantiated per dtype in
// sdpa_general_<dtype>.cu: grid sizes, the dynamic shared-memory opt-in, and the backward's
// kernel sequence (delta, f64 lse, dQ, dK / dV, broadcast grad_bias).
#pragma once

#include <mutex>
#include <string>

#include "attention/kernels/sdpa_general.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::attention {

namespace general_detail {
inline Status allow_smem(void (*kernel)(GeneralParams), std::size_t bytes, const char* name) {
  if (bytes <= 48 * 1024) return Status::ok();
  static std::mutex mu;  // cudaFuncSetAttribute is serialized across host threads
  std::lock_guard<std::mutex> lock(mu);
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(Code::kCudaError, std::string(name) + ": cudaFuncSetAttribute(MaxDynamicSharedMemorySize = " +
                                      std::to_string(bytes) + "): " + cudaGetErrorString(e),
                StatusSource::kCuda, static_cast<int>(e));
}
// One tiled kernel: ceil(seq / rows) * heads * batch blocks of R = rows, `smem` dynamic bytes
// (nothing to launch when the grid is empty).
inline Status launch_tiled(void (*kernel)(GeneralParams), GeneralParams g, int rows, std::size_t smem, std::int64_t seq,
                           std::int64_t heads, const char* name, cudaStream_t s) {
  const auto grid = static_cast<unsigned>((seq + rows - 1) / rows * heads * g.p.batch);
  if (grid == 0) return Status::ok();
  BARACUDA_TRY(allow_smem(kernel, smem, name));
  g.rows = rows;
  kernel<<<grid, kGeneralThreads, smem, s>>>(g);
  return gemm::kernel_launch_status(name);
}
}  // namespace general_detail

template <DType D>
Status launch_sdpa_general_fwd(const GeneralParams& g, const GeneralConfig& cfg, cudaStream_t s) {
  using T = typename kernels::DeviceTypeOf<D>::type;
  return general_detail::launch_tiled(&kernels::attention::sdpa_general_fwd<T, false>, g, cfg.fwd_rows, cfg.fwd_smem,
                                      g.p.sq, g.p.hq, "sdpa general forward", s);
}

template <DType D>
Status launch_sdpa_general_bwd(const GeneralParams& g, const GeneralConfig& cfg, cudaStream_t s) {
  using T = typename kernels::DeviceTypeOf<D>::type;
  using general_detail::launch_tiled;
  const SdpaProblem& p = g.p;
  if (cfg.q_rows > 0) {
    const auto blocks = static_cast<unsigned>((cfg.q_rows + kGeneralWarps - 1) / kGeneralWarps);
    kernels::attention::sdpa_general_bwd_delta<T><<<blocks, kGeneralThreads, 0, s>>>(g, cfg.q_rows);
    BARACUDA_TRY(gemm::kernel_launch_status("sdpa general backward delta"));
  }
  if (cfg.stats_rows > 0)  // f64: the exact lse
    BARACUDA_TRY(launch_tiled(&kernels::attention::sdpa_general_fwd<T, true>, g, cfg.stats_rows, cfg.stats_smem, p.sq,
                              p.hq, "sdpa general backward lse", s));
  BARACUDA_TRY(launch_tiled(&kernels::attention::sdpa_general_bwd_dq<T>, g, cfg.dq_rows, cfg.dq_smem, p.sq, p.hq,
                            "sdpa general backward dq", s));
  BARACUDA_TRY(launch_tiled(&kernels::attention::sdpa_general_bwd_dkdv<T>, g, cfg.dkdv_rows, cfg.dkdv_smem, p.skv, p.hkv,
                            "sdpa general backward dk/dv", s));
  if (cfg.grad_bias_elems > 0) {
    const auto blocks = static_cast<unsigned>((cfg.grad_bias_elems + kGeneralThreads - 1) / kGeneralThreads);
    kernels::attention::sdpa_general_bwd_grad_bias<T><<<blocks, kGeneralThreads, 0, s>>>(g, cfg.grad_bias_elems);
    BARACUDA_TRY(gemm::kernel_launch_status("sdpa general backward grad_bias"));
  }
  return Status::ok();
}

}  // namespace baracuda::attention
