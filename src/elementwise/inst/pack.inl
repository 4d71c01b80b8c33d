// Instance body: pack and unpack kernels of one packed dtype (BARACUDA_INSTANCE_DTYPE: S4,
// U4 or Bit), general (bytes_i64) and contiguous (vec16_contig).
#include <string>

#include "elementwise/kernels/pack.cuh"

namespace baracuda::elementwise {
template <>
Status launch_pack<DType::BARACUDA_INSTANCE_DTYPE>(const PackParams& p, cudaStream_t s) {
  if (p.bytes == 0) return Status::ok();
  const auto blocks = static_cast<unsigned>((p.bytes + kernels::kPackBlock - 1) / kernels::kPackBlock);
  kernels::pack_kernel<DType::BARACUDA_INSTANCE_DTYPE><<<blocks, kernels::kPackBlock, 0, s>>>(p);
  return kernels::pack_launch_status("pack_kernel");
}
template <>
Status launch_unpack<DType::BARACUDA_INSTANCE_DTYPE>(const PackParams& p, cudaStream_t s) {
  if (p.numel == 0) return Status::ok();
  const auto blocks = static_cast<unsigned>((p.numel + kernels::kPackBlock - 1) / kernels::kPackBlock);
  kernels::unpack_kernel<DType::BARACUDA_INSTANCE_DTYPE><<<blocks, kernels::kPackBlock, 0, s>>>(p);
  return kernels::pack_launch_status("unpack_kernel");
}
template <>
Status launch_pack_contig<DType::BARACUDA_INSTANCE_DTYPE>(const PackParams& p, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(kernels::pack_contig_blocks(p.numel));
  if (blocks == 0) return Status::ok();
  kernels::pack_contig_kernel<DType::BARACUDA_INSTANCE_DTYPE><<<blocks, kernels::kPackBlock, 0, s>>>(p);
  return kernels::pack_launch_status("pack_contig_kernel");
}
template <>
Status launch_unpack_contig<DType::BARACUDA_INSTANCE_DTYPE>(const PackParams& p, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(kernels::pack_contig_blocks(p.numel));
  if (blocks == 0) return Status::ok();
  kernels::unpack_contig_kernel<DType::BARACUDA_INSTANCE_DTYPE><<<blocks, kernels::kPackBlock, 0, s>>>(p);
  return kernels::pack_launch_status("unpack_contig_kernel");
}
}  // namespace baracuda::elementwise
