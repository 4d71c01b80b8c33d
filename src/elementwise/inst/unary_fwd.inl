// Instance body: unary forward kernels for one dtype (BARACUDA_INSTANCE_DTYPE).
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_unary_fwd<DType::BARACUDA_INSTANCE_DTYPE>(UnaryKind kind, const MapParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  switch (kind) {
    case UnaryKind::kRelu: return kernels::launch_map<T, T>(kernels::UnaryOp<UnaryKind::kRelu>{}, p, s);
    case UnaryKind::kGeluErf:
      if constexpr (sizeof(T) == 2) return kernels::launch_map<T, T>(kernels::GeluErfLowPrecisionOp{}, p, s);
      else return kernels::launch_map<T, T>(kernels::UnaryOp<UnaryKind::kGeluErf>{}, p, s);
    case UnaryKind::kGeluTanh: return kernels::launch_map<T, T>(kernels::UnaryOp<UnaryKind::kGeluTanh>{}, p, s);
    case UnaryKind::kSilu: return kernels::launch_map<T, T>(kernels::UnaryOp<UnaryKind::kSilu>{}, p, s);
    case UnaryKind::kExp: return kernels::launch_map<T, T>(kernels::UnaryOp<UnaryKind::kExp>{}, p, s);
  }
  return Status(Code::kInternal, "launch_unary_fwd: unknown kind");
}
}  // namespace baracuda::elementwise
