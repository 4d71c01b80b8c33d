// Instance body: contiguous binary forward kernels of one floating dtype
// (BARACUDA_INSTANCE_DTYPE), for the kinds of one part (BARACUDA_INSTANCE_PART; kinds are
// spread over kBinaryParts files so each translation unit stays small).
#include <string>

#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
template <class T, int Part>
Status fwd_part(BinaryKind kind, const MapParams& p, cudaStream_t s) {
  switch (kind) {
#define BARACUDA_CASE(K)                                                                  \
  case BinaryKind::K:                                                                     \
    if constexpr (binary_part(BinaryKind::K) == Part)                                     \
      return kernels::launch_map_contig<T, T>(kernels::BinaryFwdOp<BinaryKind::K, T>{}, p, s); \
    break;
    BARACUDA_BINARY_FLOAT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: break;
  }
  return Status(Code::kInternal, std::string("launch_binary_fwd_contig: ") + binary_kind_name(kind) + " is not in part " +
                                     std::to_string(Part));
}
}  // namespace

template <>
Status launch_binary_fwd_contig<DType::BARACUDA_INSTANCE_DTYPE, BARACUDA_INSTANCE_PART>(BinaryKind kind, const MapParams& p,
                                                                                        cudaStream_t s) {
  return fwd_part<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, BARACUDA_INSTANCE_PART>(kind, p, s);
}
}  // namespace baracuda::elementwise
