// Runtime DType -> the per-dtype launcher of the elementwise family.
#include "elementwise/launch.hpp"

#include <string>

namespace baracuda::elementwise {

namespace {
Status not_built(const char* what, DType d) {
  return Status(Code::kNotBuilt, std::string(what) + ": no kernels built for dtype " + std::string(dtype_name(d)));
}
}  // namespace

#define BARACUDA_FLOAT_SWITCH(fn, d, ...)                              \
  switch (d) {                                                         \
    case DType::kF64: return fn<DType::kF64>(__VA_ARGS__);             \
    case DType::kF32: return fn<DType::kF32>(__VA_ARGS__);             \
    case DType::kF16: return fn<DType::kF16>(__VA_ARGS__);             \
    case DType::kBF16: return fn<DType::kBF16>(__VA_ARGS__);           \
    default: return not_built(#fn, d);                                 \
  }

Status launch_unary_fwd(DType d, UnaryKind kind, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_unary_fwd, d, kind, p, s)
}
Status launch_unary_bwd(DType d, UnaryKind kind, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_unary_bwd, d, kind, p, s)
}
Status launch_binary_fwd(DType d, BinaryKind kind, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_binary_fwd, d, kind, p, s)
}
Status launch_binary_bwd_map(DType d, BinaryKind kind, int which, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_binary_bwd_map, d, kind, which, p, s)
}
Status launch_binary_bwd_reduce(DType d, BinaryKind kind, const BroadcastReduceParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_binary_bwd_reduce, d, kind, p, s)
}
#undef BARACUDA_FLOAT_SWITCH

Status launch_cast(DType in, DType out, const MapParams& p, cudaStream_t s) {
  switch (in) {
    case DType::kF32: return launch_cast<DType::kF32>(out, p, s);
    case DType::kF16: return launch_cast<DType::kF16>(out, p, s);
    case DType::kBF16: return launch_cast<DType::kBF16>(out, p, s);
    case DType::kE4M3: return launch_cast<DType::kE4M3>(out, p, s);
    case DType::kE5M2: return launch_cast<DType::kE5M2>(out, p, s);
    default: return not_built("launch_cast", in);
  }
}

}  // namespace baracuda::elementwise
