// Instance body: the integer binary kinds on one integer or bool dtype
// (BARACUDA_INSTANCE_DTYPE): a per-kind contiguous kernel per kind, one run-time-kind
// kernel for the rows / strided paths. Bool takes the bitwise kinds only.
#include <string>
#include <type_traits>

#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;

constexpr bool takes(BinaryKind k) {
  if constexpr (std::is_same_v<T, bool>)
    return k == BinaryKind::kBitwiseAnd || k == BinaryKind::kBitwiseOr || k == BinaryKind::kBitwiseXor;
  else return true;
}
}  // namespace

template <>
Status launch_binary_int<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const MapParams& p, cudaStream_t s) {
  if (p.path != MapPath::kVecContig) return kernels::launch_map_general<T, T>(kernels::BinaryIntDynOp{kind}, p, s);
  switch (kind) {
#define BARACUDA_CASE(K)                                                                         \
  case BinaryKind::K:                                                                            \
    if constexpr (takes(BinaryKind::K))                                                          \
      return kernels::launch_map_contig<T, T>(kernels::BinaryIntOp<BinaryKind::K>{}, p, s);      \
    break;
    BARACUDA_BINARY_INT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: break;
  }
  return Status(Code::kInternal, std::string("launch_binary_int: ") + binary_kind_name(kind) + " has no kernel for dtype " +
                                     std::string(dtype_name(DType::BARACUDA_INSTANCE_DTYPE)));
}
}  // namespace baracuda::elementwise
