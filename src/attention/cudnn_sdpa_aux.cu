// Launches of the cuDNN SDPA helper kernels (kernels/cudnn_sdpa_aux.cuh).
#include <algorithm>

#include "attention/cudnn_sdpa_common.hpp"
#include "attention/kernels/cudnn_sdpa_aux.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::attention::cudnn_sdpa {
namespace {
unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kernels::attention::kCudnnAuxBlock - 1) / kernels::attention::kCudnnAuxBlock;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 65535));
}
}  // namespace

Status launch_prep(const PrepParams& p, cudaStream_t stream) {
  kernels::attention::cudnn_sdpa_prep_kernel<<<grid_for(p.batch + 1), kernels::attention::kCudnnAuxBlock, 0, stream>>>(p);
  return gemm::kernel_launch_status("cudnn_sdpa_prep");
}

Status launch_stats_copy(const StatsCopyParams& p, cudaStream_t stream) {
  const std::int64_t n = p.n0 * p.n1 * p.n2;
  if (n == 0) return Status::ok();
  kernels::attention::cudnn_sdpa_stats_copy_kernel<<<grid_for(n), kernels::attention::kCudnnAuxBlock, 0, stream>>>(p);
  return gemm::kernel_launch_status("cudnn_sdpa_stats_copy");
}

Status launch_empty_rows(const EmptyRowsParams& p, cudaStream_t stream) {
  const std::int64_t n = p.p.batch * p.p.sq * p.p.hq;
  if (n == 0) return Status::ok();
  kernels::attention::cudnn_sdpa_empty_rows_kernel<<<grid_for(n), kernels::attention::kCudnnAuxBlock, 0, stream>>>(p);
  return gemm::kernel_launch_status("cudnn_sdpa_empty_rows");
}

Status launch_zero_grads(const ZeroGradsParams& p, std::int64_t batch, cudaStream_t stream) {
  if (batch == 0) return Status::ok();
  kernels::attention::cudnn_sdpa_zero_grads_kernel<<<static_cast<unsigned>(batch), kernels::attention::kCudnnAuxBlock, 0,
                                                     stream>>>(p);
  return gemm::kernel_launch_status("cudnn_sdpa_zero_grads");
}

}  // namespace baracuda::attention::cudnn_sdpa
