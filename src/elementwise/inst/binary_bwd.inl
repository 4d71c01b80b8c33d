// Instance body: contiguous binary backward kernels (grad_a, grad_b or both) of one
// floating dtype (BARACUDA_INSTANCE_DTYPE), for the differentiable kinds of one part
// (BARACUDA_INSTANCE_PART).
#include <string>

#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
template <class T, BinaryKind K>
Status grad_contig(int which, const MapParams& p, cudaStream_t s) {
  using kernels::BinaryGradOp;
  if (which == 0) return kernels::launch_map_contig<T, T>(BinaryGradOp<K, 0>{}, p, s);
  if (which == 1) return kernels::launch_map_contig<T, T>(BinaryGradOp<K, 1>{}, p, s);
  return kernels::launch_map_contig<T, T>(BinaryGradOp<K, 2>{}, p, s);
}

template <class T, int Part>
Status bwd_part(BinaryKind kind, int which, const MapParams& p, cudaStream_t s) {
  switch (kind) {
#define BARACUDA_CASE(K)                                                                      \
  case BinaryKind::K:                                                                         \
    if constexpr (binary_part(BinaryKind::K) == Part) return grad_contig<T, BinaryKind::K>(which, p, s); \
    break;
    BARACUDA_BINARY_GRAD_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: break;
  }
  return Status(Code::kInternal, std::string("launch_binary_bwd_contig: ") + binary_kind_name(kind) + " is not in part " +
                                     std::to_string(Part));
}
}  // namespace

template <>
Status launch_binary_bwd_contig<DType::BARACUDA_INSTANCE_DTYPE, BARACUDA_INSTANCE_PART>(BinaryKind kind, int which,
                                                                                        const MapParams& p, cudaStream_t s) {
  return bwd_part<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, BARACUDA_INSTANCE_PART>(kind, which, p, s);
}
}  // namespace baracuda::elementwise
