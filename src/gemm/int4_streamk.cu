// Instances and launcher of Int4GemmPlan's stream-K decode kernel (kernels/int4_streamk.cuh,
// SKU w4a16_streamk): per activation dtype (f16, bf16), number of 8-row activation tiles (NT = 1
// for M <= 8, NT = 2 up to 16; the ring depth int4_streamk_stages(M)), weight kind (s4 / u4) and weight
// layout (row-major / tiled: 16 instances); every
// instance asks the L2 to fetch whole 128-byte lines (cp.async .L2::128B: each row's 64-byte
// pieces of consecutive chunks share a line).
#include <algorithm>

#include "common/pdl.cuh"
#include "gemm/int4_launch.hpp"
#include "gemm/kernels/int4_streamk.cuh"

namespace baracuda::gemm {

namespace {

using StreamKKernel = void (*)(const Int4StreamKParams);
constexpr int kStreamKL2Prefetch = 128;

struct StreamKFamily {
  template <class T, int NT, bool kSigned, bool kTiled, int D>
  static StreamKKernel kernel() {
    return &kernels::int4_streamk_kernel<T, NT, kSigned, kTiled, D, kStreamKL2Prefetch>;
  }
};

StreamKKernel streamk_kernel_for(DType act, bool is_signed, bool tiled, std::int64_t m) {
  return int4_streamk_family_instance<StreamKFamily>(act, is_signed, tiled, m);
}

}  // namespace

Status int4_streamk_allow_smem(DType act, bool is_signed, bool tiled, std::int64_t m, std::size_t bytes) {
  return int4_allow_smem(streamk_kernel_for(act, is_signed, tiled, m), bytes);
}

Status launch_int4_streamk(const Int4StreamKParams& p, cudaStream_t s) {
  streamk_kernel_for(p.g.act, p.g.wt.is_signed, p.g.wt.tiled, p.g.m)<<<static_cast<unsigned>(p.k.grid), kInt4StreamKWarps * 32,
                                                          p.g.cfg.smem_bytes, s>>>(p);
  BARACUDA_TRY(kernel_launch_status("int4 stream-k"));
  const std::int64_t quads = p.k.tiles * 4 * p.g.m;  // a thread per 4 outputs
  constexpr int kReduceThreads = kernels::kInt4StreamKReduceThreads;  // small blocks: at M = 1 the 1792 tiles of 28672 rows are 56 blocks
  const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((quads + kReduceThreads - 1) / kReduceThreads, 65535));
  const cudaError_t e =
      p.g.act == DType::kF16
          ? baracuda::kernels::launch_dependent(p.k.pdl, kernels::int4_streamk_reduce_kernel<__half>, dim3(blocks), dim3(kReduceThreads), s, p)
          : baracuda::kernels::launch_dependent(p.k.pdl, kernels::int4_streamk_reduce_kernel<__nv_bfloat16>, dim3(blocks),
                                      dim3(kReduceThreads), s, p);
  return kernel_launch_status(e, "int4 stream-k reduce");
}

}  // namespace baracuda::gemm
