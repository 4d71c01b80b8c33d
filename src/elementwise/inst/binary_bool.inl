// Instance body: the bool-valued binary ops (comparisons, isclose, logical and / or / xor)
// on one input dtype (BARACUDA_INSTANCE_DTYPE), every path, the op chosen at run time.
#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_binary_bool<DType::BARACUDA_INSTANCE_DTYPE>(BoolOpCode op, const IscloseScalars& sc, const MapParams& p,
                                                         cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::launch_map<T, bool>(kernels::BinaryBoolOp{op, sc}, p, s);
}
}  // namespace baracuda::elementwise
