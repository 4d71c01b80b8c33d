// Instance body: the bool-valued unary kinds (isnan, isinf, isfinite, logical_not) on one
// floating dtype (BARACUDA_INSTANCE_DTYPE), every path.
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_unary_predicate<DType::BARACUDA_INSTANCE_DTYPE>(UnaryKind kind, const MapParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  using kernels::launch_map;
  using kernels::UnaryPredicateOp;
  switch (kind) {
    case UnaryKind::kIsnan: return launch_map<T, bool>(UnaryPredicateOp<UnaryKind::kIsnan>{}, p, s);
    case UnaryKind::kIsinf: return launch_map<T, bool>(UnaryPredicateOp<UnaryKind::kIsinf>{}, p, s);
    case UnaryKind::kIsfinite: return launch_map<T, bool>(UnaryPredicateOp<UnaryKind::kIsfinite>{}, p, s);
    case UnaryKind::kLogicalNot: return launch_map<T, bool>(UnaryPredicateOp<UnaryKind::kLogicalNot>{}, p, s);
    default: break;
  }
  return Status(Code::kInternal, std::string("launch_unary_predicate: ") + unary_kind_name(kind) + " is not a predicate");
}
}  // namespace baracuda::elementwise
