// Instance body: the integer unary kinds (neg, abs, sign, bitwise_not, popcount, clz,
// logical_not) on one integer or bool dtype (BARACUDA_INSTANCE_DTYPE), every path.
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
template <class T>
Status int_kind(UnaryKind kind, const MapParams& p, cudaStream_t s) {
  using kernels::launch_map;
  using kernels::UnaryIntOp;
  if (kind == UnaryKind::kLogicalNot) return launch_map<T, bool>(UnaryIntOp<UnaryKind::kLogicalNot>{}, p, s);
  if (kind == UnaryKind::kBitwiseNot) return launch_map<T, T>(UnaryIntOp<UnaryKind::kBitwiseNot>{}, p, s);
  if constexpr (!std::is_same_v<T, bool>) {
    switch (kind) {
      case UnaryKind::kNeg: return launch_map<T, T>(UnaryIntOp<UnaryKind::kNeg>{}, p, s);
      case UnaryKind::kAbs: return launch_map<T, T>(UnaryIntOp<UnaryKind::kAbs>{}, p, s);
      case UnaryKind::kSign: return launch_map<T, T>(UnaryIntOp<UnaryKind::kSign>{}, p, s);
      case UnaryKind::kPopcount: return launch_map<T, T>(UnaryIntOp<UnaryKind::kPopcount>{}, p, s);
      case UnaryKind::kClz: return launch_map<T, T>(UnaryIntOp<UnaryKind::kClz>{}, p, s);
      default: break;
    }
  }
  return Status(Code::kInternal, std::string("launch_unary_int: ") + unary_kind_name(kind) + " has no integer kernel");
}
}  // namespace

template <>
Status launch_unary_int<DType::BARACUDA_INSTANCE_DTYPE>(UnaryKind kind, const MapParams& p, cudaStream_t s) {
  return int_kind<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>(kind, p, s);
}
}  // namespace baracuda::elementwise
