// Runtime DType -> the per-dtype launchers of the binary plans (launch_binary.hpp).
#include "elementwise/launch_binary.hpp"
#include "elementwise/launch_column_reduce.hpp"

#include <string>

namespace baracuda::elementwise {

namespace {
Status not_built(const char* what, DType d) {
  return Status(Code::kNotBuilt, std::string(what) + ": no kernels built for dtype " + std::string(dtype_name(d)));
}

#define BARACUDA_FLOAT_SWITCH(fn, d, ...)                    \
  switch (d) {                                               \
    case DType::kF64: return fn<DType::kF64>(__VA_ARGS__);   \
    case DType::kF32: return fn<DType::kF32>(__VA_ARGS__);   \
    case DType::kF16: return fn<DType::kF16>(__VA_ARGS__);   \
    case DType::kBF16: return fn<DType::kBF16>(__VA_ARGS__); \
    default: return not_built(#fn, d);                       \
  }

template <DType D>
Status fwd_float(BinaryKind kind, const MapParams& p, cudaStream_t s) {
  if (p.path != MapPath::kVecContig) return launch_binary_fwd_general<D>(kind, p, s);
  if (binary_part(kind) == 0) return launch_binary_fwd_contig<D, 0>(kind, p, s);
  return launch_binary_fwd_contig<D, 1>(kind, p, s);
}
template <DType D>
Status bwd_float(BinaryKind kind, int which, const MapParams& p, cudaStream_t s) {
  if (p.path != MapPath::kVecContig) return launch_binary_bwd_general<D>(kind, which, p, s);
  if (binary_part(kind) == 0) return launch_binary_bwd_contig<D, 0>(kind, which, p, s);
  return launch_binary_bwd_contig<D, 1>(kind, which, p, s);
}

bool is_logical(BinaryKind k) {
  return k == BinaryKind::kLogicalAnd || k == BinaryKind::kLogicalOr || k == BinaryKind::kLogicalXor;
}
BoolOpCode logical_code(BinaryKind k) {
  return k == BinaryKind::kLogicalAnd ? BoolOpCode::kLogicalAnd
                                      : (k == BinaryKind::kLogicalOr ? BoolOpCode::kLogicalOr : BoolOpCode::kLogicalXor);
}
}  // namespace

Status launch_binary_fwd(DType d, BinaryKind kind, const MapParams& p, cudaStream_t s) {
  if (is_logical(kind)) return launch_binary_bool(d, logical_code(kind), IscloseScalars{}, p, s);
  switch (d) {
    case DType::kI64: return launch_binary_int<DType::kI64>(kind, p, s);
    case DType::kI32: return launch_binary_int<DType::kI32>(kind, p, s);
    case DType::kI16: return launch_binary_int<DType::kI16>(kind, p, s);
    case DType::kI8: return launch_binary_int<DType::kI8>(kind, p, s);
    case DType::kU8: return launch_binary_int<DType::kU8>(kind, p, s);
    case DType::kBool: return launch_binary_int<DType::kBool>(kind, p, s);
    default: break;
  }
  BARACUDA_FLOAT_SWITCH(fwd_float, d, kind, p, s)
}

Status launch_binary_bwd_map(DType d, BinaryKind kind, int which, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(bwd_float, d, kind, which, p, s)
}

Status launch_binary_bwd_reduce(DType d, BinaryKind kind, const BroadcastReduceParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_binary_reduce, d, kind, p, s)
}

Status launch_binary_bwd_column_reduce(DType d, BinaryKind kind, const ColumnReduceParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_column_reduce, d, kind, p, s)
}

Status launch_binary_bool(DType d, BoolOpCode op, const IscloseScalars& sc, const MapParams& p, cudaStream_t s) {
  switch (d) {
    case DType::kF64: return launch_binary_bool<DType::kF64>(op, sc, p, s);
    case DType::kF32: return launch_binary_bool<DType::kF32>(op, sc, p, s);
    case DType::kF16: return launch_binary_bool<DType::kF16>(op, sc, p, s);
    case DType::kBF16: return launch_binary_bool<DType::kBF16>(op, sc, p, s);
    case DType::kI64: return launch_binary_bool<DType::kI64>(op, sc, p, s);
    case DType::kI32: return launch_binary_bool<DType::kI32>(op, sc, p, s);
    case DType::kI16: return launch_binary_bool<DType::kI16>(op, sc, p, s);
    case DType::kI8: return launch_binary_bool<DType::kI8>(op, sc, p, s);
    case DType::kU8: return launch_binary_bool<DType::kU8>(op, sc, p, s);
    case DType::kBool: return launch_binary_bool<DType::kBool>(op, sc, p, s);
    default: return not_built("launch_binary_bool", d);
  }
}

Status launch_binary_param_fwd(DType d, BinaryParamKind kind, double scalar, const MapParams& p, cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_binary_param_fwd, d, kind, scalar, p, s)
}

Status launch_binary_param_bwd(DType d, ParamGradMap map, int which, double ca, double cb, const MapParams& p,
                               cudaStream_t s) {
  BARACUDA_FLOAT_SWITCH(launch_binary_param_bwd, d, map, which, ca, cb, p, s)
}
#undef BARACUDA_FLOAT_SWITCH

}  // namespace baracuda::elementwise
