// Instance body: casts from one input dtype (BARACUDA_INSTANCE_DTYPE) to every output dtype.
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_cast<DType::BARACUDA_INSTANCE_DTYPE>(DType out, const MapParams& p, cudaStream_t s) {
  using TIn = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  switch (out) {
    case DType::kF32: return kernels::launch_map<TIn, float>(kernels::CastOp{}, p, s);
    case DType::kF16: return kernels::launch_map<TIn, __half>(kernels::CastOp{}, p, s);
    case DType::kBF16: return kernels::launch_map<TIn, __nv_bfloat16>(kernels::CastOp{}, p, s);
    case DType::kE4M3: return kernels::launch_map<TIn, __nv_fp8_e4m3>(kernels::CastOp{}, p, s);
    case DType::kE5M2: return kernels::launch_map<TIn, __nv_fp8_e5m2>(kernels::CastOp{}, p, s);
    default: break;
  }
  return Status(Code::kNotSupported, std::string("cast: output dtype ") + std::string(dtype_name(out)) + " is not built");
}
}  // namespace baracuda::elementwise
