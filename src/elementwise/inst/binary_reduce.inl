// Instance body: the broadcast reduction of binary gradients (broadcast_reduce.cuh) for one
// floating dtype (BARACUDA_INSTANCE_DTYPE): per-kind kernels for add, sub, mul, div and the
// zero-gradient kinds, one run-time-kind kernel for the others (with_grad_fns).
#include "elementwise/kernels/broadcast_reduce.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_binary_reduce<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const BroadcastReduceParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::with_grad_fns(kind, [&](auto grad_a, auto grad_b) {
    return kernels::launch_broadcast_reduce<T>(p, grad_a, grad_b, s);
  });
}
}  // namespace baracuda::elementwise
