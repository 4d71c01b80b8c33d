// Instance body: binary backward kernels (map and broadcast reduction) for one dtype.
#include "elementwise/kernels/broadcast_reduce.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;

template <BinaryKind K>
Status grad_map(int which, const MapParams& p, cudaStream_t s) {
  if (which == 0) return kernels::launch_map<T, T>(kernels::BinaryGradOp<K, 0>{}, p, s);
  if (which == 1) return kernels::launch_map<T, T>(kernels::BinaryGradOp<K, 1>{}, p, s);
  return kernels::launch_map<T, T>(kernels::BinaryGradOp<K, 2>{}, p, s);
}
}  // namespace

template <>
Status launch_binary_bwd_map<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, int which, const MapParams& p,
                                                            cudaStream_t s) {
  switch (kind) {
    case BinaryKind::kAdd: return grad_map<BinaryKind::kAdd>(which, p, s);
    case BinaryKind::kSub: return grad_map<BinaryKind::kSub>(which, p, s);
    case BinaryKind::kMul: return grad_map<BinaryKind::kMul>(which, p, s);
    case BinaryKind::kDiv: return grad_map<BinaryKind::kDiv>(which, p, s);
  }
  return Status(Code::kInternal, "launch_binary_bwd_map: unknown kind");
}

template <>
Status launch_binary_bwd_reduce<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const BroadcastReduceParams& p,
                                                               cudaStream_t s) {
  switch (kind) {
    case BinaryKind::kAdd: return kernels::launch_broadcast_reduce<T, BinaryKind::kAdd>(p, s);
    case BinaryKind::kSub: return kernels::launch_broadcast_reduce<T, BinaryKind::kSub>(p, s);
    case BinaryKind::kMul: return kernels::launch_broadcast_reduce<T, BinaryKind::kMul>(p, s);
    case BinaryKind::kDiv: return kernels::launch_broadcast_reduce<T, BinaryKind::kDiv>(p, s);
  }
  return Status(Code::kInternal, "launch_binary_bwd_reduce: unknown kind");
}
}  // namespace baracuda::elementwise
