// Instance body: contiguous unary backward kernels of one dtype (BARACUDA_INSTANCE_DTYPE),
// for the kinds of one part (BARACUDA_INSTANCE_PART; kinds are spread over kUnaryParts
// files so each translation unit stays small).
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/kernels/unary_fast16.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
template <class T, int Part>
Status bwd_part(UnaryKind kind, const UnaryParams& prm, const MapParams& p, cudaStream_t s) {
  switch (kind) {
#define BARACUDA_CASE(K)                                                                                     \
  case UnaryKind::K:                                                                                         \
    if constexpr (unary_part(UnaryKind::K) == Part) {                                                        \
      if constexpr (kernels::has_fast16_grad(UnaryKind::K) && sizeof(T) == 2)                               \
        return kernels::launch_map_contig<T, T>(kernels::UnaryFast16GradOp<UnaryKind::K>{}, p, s);           \
      else                                                                                                   \
        return kernels::launch_map_contig<T, T>(kernels::UnaryGradOp<UnaryKind::K>{prm.a, prm.b, prm.c}, p, s); \
    }                                                                                                        \
    break;
    BARACUDA_UNARY_FLOAT_KINDS(BARACUDA_CASE)
#undef BARACUDA_CASE
    default: break;
  }
  return Status(Code::kInternal, std::string("launch_unary_bwd_contig: ") + unary_kind_name(kind) + " is not in part " +
                                     std::to_string(Part));
}
}  // namespace

template <>
Status launch_unary_bwd_contig<DType::BARACUDA_INSTANCE_DTYPE, BARACUDA_INSTANCE_PART>(UnaryKind kind, const UnaryParams& prm,
                                                                                       const MapParams& p, cudaStream_t s) {
  return bwd_part<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>, BARACUDA_INSTANCE_PART>(kind, prm, p, s);
}
}  // namespace baracuda::elementwise
