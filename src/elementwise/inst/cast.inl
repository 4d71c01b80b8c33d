// Instance body: casts from one input dtype (BARACUDA_INSTANCE_DTYPE) to every output dtype
// (kernels/cast.cuh has the conversion rules).
#include "elementwise/kernels/cast.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_cast<DType::BARACUDA_INSTANCE_DTYPE>(DType out, const MapParams& p, cudaStream_t s) {
  using TIn = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  const kernels::CastOp op{};
  switch (out) {
    case DType::kF64: return kernels::launch_map<TIn, double>(op, p, s);
    case DType::kF32: return kernels::launch_map<TIn, float>(op, p, s);
    case DType::kF16: return kernels::launch_map<TIn, __half>(op, p, s);
    case DType::kBF16: return kernels::launch_map<TIn, __nv_bfloat16>(op, p, s);
    case DType::kE4M3: return kernels::launch_map<TIn, __nv_fp8_e4m3>(op, p, s);
    case DType::kE5M2: return kernels::launch_map<TIn, __nv_fp8_e5m2>(op, p, s);
    case DType::kI64: return kernels::launch_map<TIn, std::int64_t>(op, p, s);
    case DType::kI32: return kernels::launch_map<TIn, std::int32_t>(op, p, s);
    case DType::kI16: return kernels::launch_map<TIn, std::int16_t>(op, p, s);
    case DType::kI8: return kernels::launch_map<TIn, std::int8_t>(op, p, s);
    case DType::kU8: return kernels::launch_map<TIn, std::uint8_t>(op, p, s);
    case DType::kBool: return kernels::launch_map<TIn, bool>(op, p, s);
    default: break;
  }
  return Status(Code::kNotBuilt, std::string("cast: output dtype ") + std::string(dtype_name(out)) + " is not built");
}
}  // namespace baracuda::elementwise
