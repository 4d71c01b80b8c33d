// Launches of the bias-gradient reduction (kernels/bias_grad.cuh) for the GEMM dtypes.
#include <string>

#include "gemm/bias_grad.hpp"
#include "gemm/launch_status.hpp"
#include "gemm/kernels/bias_grad.cuh"

namespace baracuda::gemm {
namespace {

template <class T>
Status launch_typed(const BiasGradParams& p, cudaStream_t stream) {
  using namespace kernels;
  if (p.x_count == 0 || p.batch == 0) return Status::ok();
  if (p.batch > 65535) return Status(Code::kNotSupported, "bias gradient: batch " + std::to_string(p.batch) + " > 65535");
  if (p.sx == 1) {
    const dim3 grid(static_cast<unsigned>((p.x_count + kBiasGradBlock - 1) / kBiasGradBlock), static_cast<unsigned>(p.batch));
    bias_grad_lines_kernel<T><<<grid, kBiasGradBlock, 0, stream>>>(p);
  } else {
    constexpr int kWarps = kBiasGradBlock / 32;
    const dim3 grid(static_cast<unsigned>((p.x_count + kWarps - 1) / kWarps), static_cast<unsigned>(p.batch));
    bias_grad_warp_kernel<T><<<grid, kBiasGradBlock, 0, stream>>>(p);
  }
  return kernel_launch_status("bias_grad");
}

}  // namespace

Status launch_bias_grad(DType t, const BiasGradParams& p, cudaStream_t stream) {
  switch (t) {
    case DType::kF64: return launch_typed<double>(p, stream);
    case DType::kF32: return launch_typed<float>(p, stream);
    case DType::kF16: return launch_typed<__half>(p, stream);
    case DType::kBF16: return launch_typed<__nv_bfloat16>(p, stream);
    default: return Status(Code::kNotSupported, "bias gradient: dtype " + std::string(dtype_name(t)));
  }
}

}  // namespace baracuda::gemm
