// Instance body: the rows and strided unary kernels (forward and backward) of one dtype
// (BARACUDA_INSTANCE_DTYPE), built once with the kind chosen at run time.
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_unary_fwd_general<DType::BARACUDA_INSTANCE_DTYPE>(UnaryKind kind, const UnaryParams& prm, const MapParams& p,
                                                                cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::launch_map_general<T, T>(kernels::UnaryDynOp{kind, prm.a, prm.b, prm.c}, p, s);
}
template <>
Status launch_unary_bwd_general<DType::BARACUDA_INSTANCE_DTYPE>(UnaryKind kind, const UnaryParams& prm, const MapParams& p,
                                                                cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::launch_map_general<T, T>(kernels::UnaryDynGradOp{kind, prm.a, prm.b, prm.c}, p, s);
}
}  // namespace baracuda::elementwise
