// Instance body: binary forward kernels for one dtype (BARACUDA_INSTANCE_DTYPE).
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_binary_fwd<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const MapParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  switch (kind) {
    case BinaryKind::kAdd: return kernels::launch_map<T, T>(kernels::BinaryOp<BinaryKind::kAdd>{}, p, s);
    case BinaryKind::kSub: return kernels::launch_map<T, T>(kernels::BinaryOp<BinaryKind::kSub>{}, p, s);
    case BinaryKind::kMul: return kernels::launch_map<T, T>(kernels::BinaryOp<BinaryKind::kMul>{}, p, s);
    case BinaryKind::kDiv: return kernels::launch_map<T, T>(kernels::BinaryOp<BinaryKind::kDiv>{}, p, s);
  }
  return Status(Code::kInternal, "launch_binary_fwd: unknown kind");
}
}  // namespace baracuda::elementwise
