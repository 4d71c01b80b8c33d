// Instance body: clamp and affine on one integer dtype (BARACUDA_INSTANCE_DTYPE), computed
// in the integer type, every map path.
#include <string>

#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ternary_ops.cuh"
#include "elementwise/launch_ternary.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
}  // namespace

template <>
Status launch_ternary_fwd<DType::BARACUDA_INSTANCE_DTYPE>(TernaryKind kind, double value, const MapParams& p,
                                                         cudaStream_t s) {
  if (kind == TernaryKind::kClamp)
    return kernels::launch_map<T, T>(kernels::TernaryOp<TernaryKind::kClamp>{value}, p, s);
  return Status(Code::kInternal, std::string("launch_ternary_fwd: ") + ternary_kind_name(kind) + " has no integer kernel");
}

template <>
Status launch_affine<DType::BARACUDA_INSTANCE_DTYPE>(double alpha, double beta, const MapParams& p, cudaStream_t s) {
  return kernels::launch_map<T, T>(kernels::AffineOp{alpha, beta}, p, s);
}
}  // namespace baracuda::elementwise
