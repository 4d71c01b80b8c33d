// SdpaDecodePlan's launchers: the dtype switch of the tensor-core kernel (instances in
// decode_mma_bf16.cu / decode_mma_f16.cu) and the SIMT kernel (kernels/decode_simt.cuh)
// instances per (f64 | f32 | f16 | bf16, D bucket).
#include <string>

#include "attention/decode_launch.cuh"
#include "attention/kernels/decode_simt.cuh"

namespace baracuda::attention {

namespace {

template <class T>
Status launch_simt_t(const DecodeParams& p, cudaStream_t s) {
  const std::int64_t rows = p.batch * p.sq * p.hq;
  const dim3 grid(static_cast<unsigned>((rows + kernels::kSimtWarps - 1) / kernels::kSimtWarps));
  const int threads = kernels::kSimtWarps * 32;
  if (p.d <= 64) kernels::decode_simt_kernel<T, 2><<<grid, threads, 0, s>>>(p);
  else if (p.d <= 128) kernels::decode_simt_kernel<T, 4><<<grid, threads, 0, s>>>(p);
  else if (p.d <= 256) kernels::decode_simt_kernel<T, 8><<<grid, threads, 0, s>>>(p);
  else kernels::decode_simt_kernel<T, 16><<<grid, threads, 0, s>>>(p);
  return detail::launch_status("paged_decode simt_warp_row");
}

}  // namespace

Status launch_decode_mma(DType dtype, const DecodeParams& p, cudaStream_t s) {
  if (p.batch == 0 || p.sq == 0 || p.hq == 0) return Status::ok();
  if (dtype == DType::kBF16) return detail::launch_decode_mma_bf16(p, s);
  if (dtype == DType::kF16) return detail::launch_decode_mma_f16(p, s);
  return Status(Code::kInternal, "paged_decode mma_splitkv: no kernel for dtype " + std::string(dtype_name(dtype)));
}

Status launch_decode_simt(DType dtype, const DecodeParams& p, cudaStream_t s) {
  if (p.batch == 0 || p.sq == 0 || p.hq == 0) return Status::ok();
  switch (dtype) {
    case DType::kF64: return launch_simt_t<double>(p, s);
    case DType::kF32: return launch_simt_t<float>(p, s);
    case DType::kF16: return launch_simt_t<__half>(p, s);
    case DType::kBF16: return launch_simt_t<__nv_bfloat16>(p, s);
    default: return Status(Code::kInternal, "paged_decode simt_warp_row: no kernel for dtype " + std::string(dtype_name(dtype)));
  }
}

}  // namespace baracuda::attention
