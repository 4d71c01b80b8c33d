// Instances of IntGemmPlan's epilogue kernel (kernels/int_epilogue.cuh), one per output dtype.
#include "gemm/kernels/int_epilogue.cuh"

namespace baracuda::gemm {

Status launch_int_epilogue(const IntEpilogueParams& p, cudaStream_t s) {
  switch (p.d_dtype) {
    case DType::kI8: return kernels::launch_int_epilogue_t<std::int8_t>(p, s);
    case DType::kF16: return kernels::launch_int_epilogue_t<__half>(p, s);
    case DType::kBF16: return kernels::launch_int_epilogue_t<__nv_bfloat16>(p, s);
    case DType::kF32: return kernels::launch_int_epilogue_t<float>(p, s);
    default: return Status(Code::kInternal, "int gemm epilogue: unexpected d dtype");
  }
}

}  // namespace baracuda::gemm
