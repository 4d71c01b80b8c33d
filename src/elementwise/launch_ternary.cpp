// Runtime DType -> the per-dtype (or per-element-size) launcher of the ternary group.
#include "elementwise/launch_ternary.hpp"

#include <string>

namespace baracuda::elementwise {

namespace {
Status not_built(const char* what, DType d) {
  return Status(Code::kNotBuilt, std::string(what) + ": no kernels built for dtype " + std::string(dtype_name(d)));
}
}  // namespace

#define BARACUDA_TERNARY_SWITCH(fn, d, with_int, ...)                                 \
  switch (d) {                                                                        \
    case DType::kF64: return fn<DType::kF64>(__VA_ARGS__);                            \
    case DType::kF32: return fn<DType::kF32>(__VA_ARGS__);                            \
    case DType::kF16: return fn<DType::kF16>(__VA_ARGS__);                            \
    case DType::kBF16: return fn<DType::kBF16>(__VA_ARGS__);                          \
    case DType::kI64: if (with_int) return fn<DType::kI64>(__VA_ARGS__); break;       \
    case DType::kI32: if (with_int) return fn<DType::kI32>(__VA_ARGS__); break;       \
    case DType::kI16: if (with_int) return fn<DType::kI16>(__VA_ARGS__); break;       \
    case DType::kI8: if (with_int) return fn<DType::kI8>(__VA_ARGS__); break;         \
    case DType::kU8: if (with_int) return fn<DType::kU8>(__VA_ARGS__); break;         \
    default: break;                                                                   \
  }                                                                                   \
  return not_built(#fn, d);

Status launch_ternary_fwd(DType d, TernaryKind kind, double value, const MapParams& p, cudaStream_t s) {
  BARACUDA_TERNARY_SWITCH(launch_ternary_fwd, d, true, kind, value, p, s)
}
Status launch_affine(DType d, double alpha, double beta, const MapParams& p, cudaStream_t s) {
  BARACUDA_TERNARY_SWITCH(launch_affine, d, true, alpha, beta, p, s)
}
Status launch_ternary_grad(DType d, TernaryKind kind, int which, double value, bool to_compute, const MapParams& p,
                           cudaStream_t s) {
  switch (d) {
    case DType::kF64: return launch_ternary_grad<DType::kF64>(kind, which, value, to_compute, p, s);
    case DType::kF32: return launch_ternary_grad<DType::kF32>(kind, which, value, to_compute, p, s);
    case DType::kF16: return launch_ternary_grad<DType::kF16>(kind, which, value, to_compute, p, s);
    case DType::kBF16: return launch_ternary_grad<DType::kBF16>(kind, which, value, to_compute, p, s);
    default: return not_built("launch_ternary_grad", d);
  }
}
Status launch_ternary_grads(DType d, TernaryKind kind, std::span<const int> which, double value, const MapParams& p,
                            cudaStream_t s) {
  switch (d) {
    case DType::kF64: return launch_ternary_grads<DType::kF64>(kind, which, value, p, s);
    case DType::kF32: return launch_ternary_grads<DType::kF32>(kind, which, value, p, s);
    case DType::kF16: return launch_ternary_grads<DType::kF16>(kind, which, value, p, s);
    case DType::kBF16: return launch_ternary_grads<DType::kBF16>(kind, which, value, p, s);
    default: return not_built("launch_ternary_grads", d);
  }
}
#undef BARACUDA_TERNARY_SWITCH

#define BARACUDA_SIZE_SWITCH(fn, d, ...)            \
  switch (dtype_bits(d)) {                          \
    case 8: return fn<1>(__VA_ARGS__);              \
    case 16: return fn<2>(__VA_ARGS__);             \
    case 32: return fn<4>(__VA_ARGS__);             \
    case 64: return fn<8>(__VA_ARGS__);             \
    default: return not_built(#fn, d);              \
  }

Status launch_where(DType d, const MapParams& p, cudaStream_t s) { BARACUDA_SIZE_SWITCH(launch_where, d, p, s) }
Status launch_where_grad(DType d, int which, const MapParams& p, cudaStream_t s) {
  BARACUDA_SIZE_SWITCH(launch_where_grad, d, which, p, s)
}
Status launch_where_grads(DType d, const MapParams& p, cudaStream_t s) { BARACUDA_SIZE_SWITCH(launch_where_grads, d, p, s) }
Status launch_fill(DType d, std::uint64_t bits, const MapParams& p, cudaStream_t s) {
  BARACUDA_SIZE_SWITCH(launch_fill, d, bits, p, s)
}
#undef BARACUDA_SIZE_SWITCH

}  // namespace baracuda::elementwise
