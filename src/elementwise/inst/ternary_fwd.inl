// Instance body: ternary forward (clamp, fma, addcmul, addcdiv), ternary gradients and
// affine for one floating dtype (BARACUDA_INSTANCE_DTYPE), every map path.
#include <string>

#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ternary_ops.cuh"
#include "elementwise/launch_ternary.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
using C = kernels::Compute<T>;
}  // namespace

template <>
Status launch_ternary_fwd<DType::BARACUDA_INSTANCE_DTYPE>(TernaryKind kind, double value, const MapParams& p,
                                                         cudaStream_t s) {
  using kernels::launch_map;
  using kernels::TernaryOp;
  switch (kind) {
    case TernaryKind::kClamp: return launch_map<T, T>(TernaryOp<TernaryKind::kClamp>{value}, p, s);
    case TernaryKind::kFma: return launch_map<T, T>(TernaryOp<TernaryKind::kFma>{value}, p, s);
    case TernaryKind::kAddcmul: return launch_map<T, T>(TernaryOp<TernaryKind::kAddcmul>{value}, p, s);
    case TernaryKind::kAddcdiv: return launch_map<T, T>(TernaryOp<TernaryKind::kAddcdiv>{value}, p, s);
  }
  return Status(Code::kInternal, "launch_ternary_fwd: unknown kind");
}

template <>
Status launch_affine<DType::BARACUDA_INSTANCE_DTYPE>(double alpha, double beta, const MapParams& p, cudaStream_t s) {
  return kernels::launch_map<T, T>(kernels::AffineOp{alpha, beta}, p, s);
}

template <>
Status launch_ternary_grad<DType::BARACUDA_INSTANCE_DTYPE>(TernaryKind kind, int which, double value, bool to_compute,
                                                          const MapParams& p, cudaStream_t s) {
  const kernels::TernaryGradOp op{kind, which, value};
  if constexpr (!std::is_same_v<T, C>) {
    if (to_compute) return kernels::launch_map<T, C>(op, p, s);
  }
  return kernels::launch_map<T, T>(op, p, s);
}

namespace {
template <TernaryKind K>
Status grads_of_kind(std::span<const int> which, double value, const MapParams& p, cudaStream_t s) {
  if (which.size() == 2)
    return kernels::launch_map_contig<T, T>(kernels::TernaryGradsOp<K, 2>{{which[0], which[1]}, value}, p, s);
  if (which.size() == 3)
    return kernels::launch_map_contig<T, T>(kernels::TernaryGradsOp<K, 3>{{which[0], which[1], which[2]}, value}, p, s);
  return Status(Code::kInternal, "launch_ternary_grads: " + std::to_string(which.size()) + " gradients (2 or 3)");
}
}  // namespace

template <>
Status launch_ternary_grads<DType::BARACUDA_INSTANCE_DTYPE>(TernaryKind kind, std::span<const int> which, double value,
                                                           const MapParams& p, cudaStream_t s) {
  switch (kind) {
    case TernaryKind::kClamp: return grads_of_kind<TernaryKind::kClamp>(which, value, p, s);
    case TernaryKind::kFma: return grads_of_kind<TernaryKind::kFma>(which, value, p, s);
    case TernaryKind::kAddcmul: return grads_of_kind<TernaryKind::kAddcmul>(which, value, p, s);
    case TernaryKind::kAddcdiv: return grads_of_kind<TernaryKind::kAddcdiv>(which, value, p, s);
  }
  return Status(Code::kInvalidArgument, "launch_ternary_grads: kind = " + std::to_string(static_cast<int>(kind)));
}
}  // namespace baracuda::elementwise
