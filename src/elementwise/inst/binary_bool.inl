// Instance body: the bool-valued binary ops (comparisons, isclose, logical and / or / xor)
// on one input dtype (BARACUDA_INSTANCE_DTYPE), every path, the op chosen at run time;
// floating inputs on the contiguous path get one kernel per comparison.
#include <type_traits>

#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
template <>
Status launch_binary_bool<DType::BARACUDA_INSTANCE_DTYPE>(BoolOpCode op, const IscloseScalars& sc, const MapParams& p,
                                                         cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  if constexpr (!std::is_integral_v<T>) {
    if (p.path == MapPath::kVecContig) {
      using kernels::BinaryBoolFixedOp;
      switch (op) {
        case BoolOpCode::kEq: return kernels::launch_map_contig<T, bool>(BinaryBoolFixedOp<BoolOpCode::kEq>{}, p, s);
        case BoolOpCode::kNe: return kernels::launch_map_contig<T, bool>(BinaryBoolFixedOp<BoolOpCode::kNe>{}, p, s);
        case BoolOpCode::kLt: return kernels::launch_map_contig<T, bool>(BinaryBoolFixedOp<BoolOpCode::kLt>{}, p, s);
        case BoolOpCode::kLe: return kernels::launch_map_contig<T, bool>(BinaryBoolFixedOp<BoolOpCode::kLe>{}, p, s);
        case BoolOpCode::kGt: return kernels::launch_map_contig<T, bool>(BinaryBoolFixedOp<BoolOpCode::kGt>{}, p, s);
        case BoolOpCode::kGe: return kernels::launch_map_contig<T, bool>(BinaryBoolFixedOp<BoolOpCode::kGe>{}, p, s);
        default: break;  // isclose and the logical kinds: the run-time op below
      }
    }
  }
  return kernels::launch_map<T, bool>(kernels::BinaryBoolOp{op, sc}, p, s);
}
}  // namespace baracuda::elementwise
