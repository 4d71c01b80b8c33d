// Instances and launcher of Int4GemmPlan's bulk-copy decode kernel (kernels/int4_bulk.cuh,
// SKU w4a16_bulk): per activation dtype (f16, bf16), number of 8-row activation tiles (NT = 1
// for M <= 8, 2 for M <= 16), weight kind (s4 / u4) and consumer groups (1: 2 CTAs per SM;
// 2: 1 CTA per SM).
#include "gemm/int4_launch.hpp"
#include "gemm/kernels/int4_bulk.cuh"

namespace baracuda::gemm {

namespace {

using BulkKernel = void (*)(const Int4BulkParams);

template <class T, int G>
BulkKernel bulk_kernel_for(bool is_signed, std::int64_t m) {
  if (is_signed) return m <= 8 ? &kernels::int4_bulk_kernel<T, 1, true, G> : &kernels::int4_bulk_kernel<T, 2, true, G>;
  return m <= 8 ? &kernels::int4_bulk_kernel<T, 1, false, G> : &kernels::int4_bulk_kernel<T, 2, false, G>;
}

BulkKernel bulk_kernel_for(DType act, bool is_signed, std::int64_t m, int groups) {
  if (act == DType::kF16)
    return groups == 1 ? bulk_kernel_for<__half, 1>(is_signed, m) : bulk_kernel_for<__half, 2>(is_signed, m);
  return groups == 1 ? bulk_kernel_for<__nv_bfloat16, 1>(is_signed, m) : bulk_kernel_for<__nv_bfloat16, 2>(is_signed, m);
}

}  // namespace

Status int4_bulk_allow_smem(DType act, bool is_signed, std::int64_t m, int groups, std::size_t bytes) {
  const auto kernel = bulk_kernel_for(act, is_signed, m, groups);
  BARACUDA_TRY(int4_allow_smem(kernel, bytes));
  // the whole unified L1 / shared array as shared memory: 2 CTAs of ~113 KB per SM must fit
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             static_cast<int>(cudaSharedmemCarveoutMaxShared));
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(Code::kCudaError, std::string("int4 bulk: cudaFuncSetAttribute(PreferredSharedMemoryCarveout): ") +
                                      cudaGetErrorString(e),
                StatusSource::kCuda, static_cast<int>(e));
}

Status launch_int4_bulk(const Int4BulkParams& p, cudaStream_t s) {
  const unsigned grid = static_cast<unsigned>(p.b.ctas_per_slice) * static_cast<unsigned>(p.b.splits);
  bulk_kernel_for(p.g.act, p.g.wt.is_signed, p.g.m, p.b.groups)<<<grid, int4_bulk_threads(p.b.groups), p.b.smem_bytes, s>>>(p);
  BARACUDA_TRY(kernel_launch_status("int4 bulk"));
  return p.b.splits == 1 ? Status::ok() : launch_int4_splitk_reduce(p.g, s);
}

}  // namespace baracuda::gemm
