// Instances and launchers of BinGemmPlan's kernels (kernels/bin_gemm.cuh): popc_tile and
// mma_b1, each for the xor ops (xnor_dot, xnor_count) and the and op.
#include "gemm/kernels/bin_gemm.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::gemm {

namespace {

dim3 bin_grid(const BinGemmParams& p) {
  return dim3(static_cast<unsigned>((p.m + kBinTile - 1) / kBinTile), static_cast<unsigned>((p.n + kBinTile - 1) / kBinTile));
}

}  // namespace

Status launch_bin_gemm_popc(const BinGemmParams& p, cudaStream_t s) {
  if (p.op == 2) kernels::bin_gemm_popc_kernel<true><<<bin_grid(p), kBinThreads, 0, s>>>(p);
  else kernels::bin_gemm_popc_kernel<false><<<bin_grid(p), kBinThreads, 0, s>>>(p);
  return kernel_launch_status("bin_gemm popc_tile");
}

Status launch_bin_gemm_mma(const BinGemmParams& p, cudaStream_t s) {
  if (p.op == 2) kernels::bin_gemm_mma_kernel<true><<<bin_grid(p), kBinThreads, 0, s>>>(p);
  else kernels::bin_gemm_mma_kernel<false><<<bin_grid(p), kBinThreads, 0, s>>>(p);
  return kernel_launch_status("bin_gemm mma_b1");
}

}  // namespace baracuda::gemm
