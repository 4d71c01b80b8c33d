// Instances and launchers of Int4GemmPlan's kernels (kernels/int4_gemv.cuh,
// kernels/int4_dequant.cuh): per activation dtype (f16, bf16) and, for the decode kernel,
// per number of 8-row activation tiles (NT = 1 for M <= 8, 2 for M <= 16), and for the streaming
// decode kernel also per weight kind (s4 / u4).
#include "gemm/int4_launch.hpp"
#include "gemm/kernels/int4_dequant.cuh"
#include "gemm/kernels/int4_gemv.cuh"
#include "gemm/kernels/int4_stream.cuh"

namespace baracuda::gemm {

namespace {

template <class T>
auto gemv_kernel_for(std::int64_t m) {
  return m <= 8 ? &kernels::int4_gemv_kernel<T, 1> : &kernels::int4_gemv_kernel<T, 2>;
}

template <class T>
auto stream_kernel_for(bool is_signed, std::int64_t m) {
  if (is_signed) return m <= 8 ? &kernels::int4_stream_kernel<T, 1, true> : &kernels::int4_stream_kernel<T, 2, true>;
  return m <= 8 ? &kernels::int4_stream_kernel<T, 1, false> : &kernels::int4_stream_kernel<T, 2, false>;
}

Status launch_gemv_t(void (*kernel)(const Int4GemvParams), const Int4GemvParams& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.cfg.row_blocks), static_cast<unsigned>(p.cfg.splits));
  kernel<<<grid, kInt4GemvWarps * 32, p.cfg.smem_bytes, s>>>(p);
  BARACUDA_TRY(kernel_launch_status("int4 gemv"));
  return p.cfg.splits == 1 ? Status::ok() : launch_int4_splitk_reduce(p, s);
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

Status launch_int4_splitk_reduce(const Int4GemvParams& p, cudaStream_t s) {
  const std::int64_t total = p.m * p.wt.n;
  const std::int64_t blocks = (total + 255) / 256;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  if (p.act == DType::kF16)
    kernels::int4_splitk_reduce_kernel<__half><<<grid, 256, 0, s>>>(p);
  else
    kernels::int4_splitk_reduce_kernel<__nv_bfloat16><<<grid, 256, 0, s>>>(p);
  return kernel_launch_status("int4 split-k reduce");
}

Status int4_gemv_allow_smem(DType act, std::int64_t m, std::size_t bytes) {
  return int4_allow_smem(act == DType::kF16 ? gemv_kernel_for<__half>(m) : gemv_kernel_for<__nv_bfloat16>(m), bytes);
}

Status launch_int4_gemv(const Int4GemvParams& p, cudaStream_t s) {
  return p.act == DType::kF16 ? launch_gemv_t(gemv_kernel_for<__half>(p.m), p, s)
                              : launch_gemv_t(gemv_kernel_for<__nv_bfloat16>(p.m), p, s);
}

Status int4_stream_allow_smem(DType act, bool is_signed, std::int64_t m, std::size_t bytes) {
  return int4_allow_smem(act == DType::kF16 ? stream_kernel_for<__half>(is_signed, m)
                                         : stream_kernel_for<__nv_bfloat16>(is_signed, m),
                      bytes);
}

Status launch_int4_stream(const Int4GemvParams& p, cudaStream_t s) {
  return p.act == DType::kF16 ? launch_gemv_t(stream_kernel_for<__half>(p.wt.is_signed, p.m), p, s)
                              : launch_gemv_t(stream_kernel_for<__nv_bfloat16>(p.wt.is_signed, p.m), p, s);
}

Status launch_int4_dequant(const Int4Weights& wt, DType act, void* wd, cudaStream_t s) {
  return act == DType::kF16 ? launch_dequant_t<__half>(wt, wd, s) : launch_dequant_t<__nv_bfloat16>(wt, wd, s);
}

}  // namespace baracuda::gemm
