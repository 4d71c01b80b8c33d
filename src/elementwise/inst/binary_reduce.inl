// Instance body: the broadcast reduction of binary gradients (broadcast_reduce.cuh) for one
// floating dtype (BARACUDA_INSTANCE_DTYPE): per-kind kernels for add, sub, mul, div and the
// zero-gradient kinds, one run-time-kind kernel for the others.
#include "elementwise/kernels/broadcast_reduce.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;

template <BinaryKind K>
Status per_kind(const BroadcastReduceParams& p, cudaStream_t s) {
  return kernels::launch_broadcast_reduce<T>(p, kernels::BinaryGradFn<K, 0>{}, kernels::BinaryGradFn<K, 1>{}, s);
}
}  // namespace

template <>
Status launch_binary_reduce<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const BroadcastReduceParams& p, cudaStream_t s) {
  switch (kind) {
    case BinaryKind::kAdd: return per_kind<BinaryKind::kAdd>(p, s);
    case BinaryKind::kSub: return per_kind<BinaryKind::kSub>(p, s);
    case BinaryKind::kMul: return per_kind<BinaryKind::kMul>(p, s);
    case BinaryKind::kDiv: return per_kind<BinaryKind::kDiv>(p, s);
    case BinaryKind::kDivFloor:
    case BinaryKind::kDivTrunc: return per_kind<BinaryKind::kDivFloor>(p, s);  // zero gradients
    default: break;
  }
  return kernels::launch_broadcast_reduce<T>(p, kernels::BinaryDynGradFn<0>{kind}, kernels::BinaryDynGradFn<1>{kind}, s);
}
}  // namespace baracuda::elementwise
