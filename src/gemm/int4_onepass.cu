// Instances and launcher of Int4GemmPlan's one-pass decode kernel (kernels/int4_onepass.cuh,
// SKU w4a16_onepass): per activation dtype (f16, bf16), number of 8-row activation tiles
// (NT = 1 for M <= 8, 2 up to 16; ring depth int4_streamk_stages(M)), weight kind (s4 / u4)
// and weight layout (row-major / tiled): 16 instances, launched in clusters of g.cfg.splits
// blocks when the K is sliced.
#include <algorithm>

#include "gemm/int4_launch.hpp"
#include "gemm/kernels/int4_onepass.cuh"

namespace baracuda::gemm {

namespace {

using OnePassKernel = void (*)(const Int4OnePassParams);
constexpr int kOnePassL2Prefetch = 128;

struct OnePassFamily {
  template <class T, int NT, bool kSigned, bool kTiled, int D>
  static OnePassKernel kernel() {
    return &kernels::int4_onepass_kernel<T, NT, kSigned, kTiled, D, kOnePassL2Prefetch>;
  }
};

OnePassKernel onepass_kernel_for(DType act, bool is_signed, bool tiled, std::int64_t m) {
  return int4_streamk_family_instance<OnePassFamily>(act, is_signed, tiled, m);
}

cudaLaunchConfig_t onepass_launch_config(unsigned grid, int splits, std::size_t smem, cudaStream_t s,
                                         cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kInt4StreamKWarps * 32);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(splits);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = splits > 1 ? 1 : 0;
  return cfg;
}

}  // namespace

Status int4_onepass_allow_smem(DType act, bool is_signed, bool tiled, std::int64_t m, std::size_t bytes) {
  return int4_allow_smem(onepass_kernel_for(act, is_signed, tiled, m), bytes);
}

int int4_onepass_max_clusters(DType act, bool is_signed, bool tiled, std::int64_t m, int splits, std::size_t bytes) {
  const OnePassKernel kernel = onepass_kernel_for(act, is_signed, tiled, m);
  if (splits <= 1) {
    int per_sm = 0, dev = 0, sms = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kInt4StreamKWarps * 32, bytes) != cudaSuccess ||
        cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return per_sm * sms;
  }
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = onepass_launch_config(static_cast<unsigned>(splits), splits, bytes, nullptr, attr);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return clusters;
}

Status launch_int4_onepass(const Int4OnePassParams& p, cudaStream_t s) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg =
      onepass_launch_config(static_cast<unsigned>(p.o.clusters * p.g.cfg.splits), p.g.cfg.splits, p.g.cfg.smem_bytes, s, attr);
  return kernel_launch_status(
      cudaLaunchKernelEx(&cfg, onepass_kernel_for(p.g.act, p.g.wt.is_signed, p.g.wt.tiled, p.g.m), p), "int4 one-pass");
}

}  // namespace baracuda::gemm
