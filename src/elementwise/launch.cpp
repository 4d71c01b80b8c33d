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

namespace {
template <DType D>
Status unary_fwd_float(UnaryKind kind, const UnaryParams& prm, const MapParams& p, cudaStream_t s) {
  if (p.path != MapPath::kVecContig) return launch_unary_fwd_general<D>(kind, prm, p, s);
  switch (unary_part(kind)) {
    case 0: return launch_unary_fwd_contig<D, 0>(kind, prm, p, s);
    case 1: return launch_unary_fwd_contig<D, 1>(kind, prm, p, s);
    case 2: return launch_unary_fwd_contig<D, 2>(kind, prm, p, s);
    default: return launch_unary_fwd_contig<D, 3>(kind, prm, p, s);
  }
}
template <DType D>
Status unary_bwd_float(UnaryKind kind, const UnaryParams& prm, const MapParams& p, cudaStream_t s) {
  if (p.path != MapPath::kVecContig) return launch_unary_bwd_general<D>(kind, prm, p, s);
  switch (unary_part(kind)) {
    case 0: return launch_unary_bwd_contig<D, 0>(kind, prm, p, s);
    case 1: return launch_unary_bwd_contig<D, 1>(kind, prm, p, s);
    case 2: return launch_unary_bwd_contig<D, 2>(kind, prm, p, s);
    default: return launch_unary_bwd_contig<D, 3>(kind, prm, p, s);
  }
}
bool is_predicate(UnaryKind k) {
  return k == UnaryKind::kIsnan || k == UnaryKind::kIsinf || k == UnaryKind::kIsfinite || k == UnaryKind::kLogicalNot;
}
}  // namespace

Status launch_unary_fwd(DType d, UnaryKind kind, const UnaryParams& prm, const MapParams& p, cudaStream_t s) {
  switch (d) {
    case DType::kI64: return launch_unary_int<DType::kI64>(kind, p, s);
    case DType::kI32: return launch_unary_int<DType::kI32>(kind, p, s);
    case DType::kI16: return launch_unary_int<DType::kI16>(kind, p, s);
    case DType::kI8: return launch_unary_int<DType::kI8>(kind, p, s);
    case DType::kU8: return launch_unary_int<DType::kU8>(kind, p, s);
    case DType::kBool: return launch_unary_int<DType::kBool>(kind, p, s);
    default: break;
  }
  if (is_predicate(kind)) BARACUDA_FLOAT_SWITCH(launch_unary_predicate, d, kind, p, s)
  BARACUDA_FLOAT_SWITCH(unary_fwd_float, d, kind, prm, p, s)
}
Status launch_unary_bwd(DType d, UnaryKind kind, const UnaryParams& prm, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(unary_bwd_float, d, kind, prm, p, s)
}
#undef BARACUDA_FLOAT_SWITCH

Status launch_cast(DType in, DType out, const MapParams& p, cudaStream_t s) {
  switch (in) {
    case DType::kF64: return launch_cast<DType::kF64>(out, p, s);
    case DType::kF32: return launch_cast<DType::kF32>(out, p, s);
    case DType::kF16: return launch_cast<DType::kF16>(out, p, s);
    case DType::kBF16: return launch_cast<DType::kBF16>(out, p, s);
    case DType::kE4M3: return launch_cast<DType::kE4M3>(out, p, s);
    case DType::kE5M2: return launch_cast<DType::kE5M2>(out, p, s);
    case DType::kI64: return launch_cast<DType::kI64>(out, p, s);
    case DType::kI32: return launch_cast<DType::kI32>(out, p, s);
    case DType::kI16: return launch_cast<DType::kI16>(out, p, s);
    case DType::kI8: return launch_cast<DType::kI8>(out, p, s);
    case DType::kU8: return launch_cast<DType::kU8>(out, p, s);
    case DType::kBool: return launch_cast<DType::kBool>(out, p, s);
    default: return not_built("launch_cast", in);
  }
}

}  // namespace baracuda::elementwise
