// Kernel launchers of the binary plans (BinaryPlan, BinaryBackwardPlan, BinaryCmpPlan,
// BinaryParamPlan, BinaryParamBackwardPlan): per-dtype entry points defined by the
// generated instance files (inst/binary_*.inl), and the run-time-dtype dispatchers
// (launch_binary.cpp) the host code calls. Plain C++, no CUDA types.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "elementwise/map_params.hpp"

namespace baracuda::elementwise {

// Floating kinds spread over kBinaryParts instance files per dtype (contiguous kernels).
inline constexpr int kBinaryParts = 2;
constexpr int binary_part(BinaryKind k) { return static_cast<int>(k) % kBinaryParts; }

// The bool-valued ops (comparisons and logical kinds) share one run-time code.
enum class BoolOpCode : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIsclose, kLogicalAnd, kLogicalOr, kLogicalXor };
struct IscloseScalars {
  double rtol = 0, atol = 0;
  bool equal_nan = false;
};

// What the parametric backward maps compute.
enum class ParamGradMap : std::uint8_t {
  kScaled,      // in g: grad_a = g * ca, grad_b = g * cb (scalar lerp, add/sub alpha)
  kLerpTensor,  // in g, w: grad_a = g * (1 - w), grad_b = g * w
  kLerpWeight,  // in g, a, b: grad_weight = g * (b - a)
};

// ---- per-dtype launchers (explicit specializations in the instance files)
// which: 0 = grad_a, 1 = grad_b, 2 = both
template <DType D, int Part> Status launch_binary_fwd_contig(BinaryKind kind, const MapParams& p, cudaStream_t s);
template <DType D, int Part> Status launch_binary_bwd_contig(BinaryKind kind, int which, const MapParams& p, cudaStream_t s);
template <DType D> Status launch_binary_fwd_general(BinaryKind kind, const MapParams& p, cudaStream_t s);
template <DType D> Status launch_binary_bwd_general(BinaryKind kind, int which, const MapParams& p, cudaStream_t s);
template <DType D> Status launch_binary_reduce(BinaryKind kind, const BroadcastReduceParams& p, cudaStream_t s);
template <DType D> Status launch_binary_int(BinaryKind kind, const MapParams& p, cudaStream_t s);  // integer / bool dtypes
template <DType D> Status launch_binary_bool(BoolOpCode op, const IscloseScalars& s, const MapParams& p, cudaStream_t st);
template <DType D> Status launch_binary_param_fwd(BinaryParamKind kind, double scalar, const MapParams& p, cudaStream_t s);
template <DType D>
Status launch_binary_param_bwd(ParamGradMap map, int which, double ca, double cb, const MapParams& p, cudaStream_t s);

#define BARACUDA_BINARY_PART_SPECS(D, P)                                                                     \
  template <> Status launch_binary_fwd_contig<DType::D, P>(BinaryKind, const MapParams&, cudaStream_t);      \
  template <> Status launch_binary_bwd_contig<DType::D, P>(BinaryKind, int, const MapParams&, cudaStream_t);
#define BARACUDA_BINARY_FLOAT_SPECS(D)                                                                         \
  BARACUDA_BINARY_PART_SPECS(D, 0) BARACUDA_BINARY_PART_SPECS(D, 1)                                            \
  template <> Status launch_binary_fwd_general<DType::D>(BinaryKind, const MapParams&, cudaStream_t);          \
  template <> Status launch_binary_bwd_general<DType::D>(BinaryKind, int, const MapParams&, cudaStream_t);     \
  template <> Status launch_binary_reduce<DType::D>(BinaryKind, const BroadcastReduceParams&, cudaStream_t);   \
  template <> Status launch_binary_param_fwd<DType::D>(BinaryParamKind, double, const MapParams&, cudaStream_t); \
  template <> Status launch_binary_param_bwd<DType::D>(ParamGradMap, int, double, double, const MapParams&, cudaStream_t);
BARACUDA_BINARY_FLOAT_SPECS(kF64)
BARACUDA_BINARY_FLOAT_SPECS(kF32)
BARACUDA_BINARY_FLOAT_SPECS(kF16)
BARACUDA_BINARY_FLOAT_SPECS(kBF16)
#undef BARACUDA_BINARY_FLOAT_SPECS
#undef BARACUDA_BINARY_PART_SPECS
static_assert(kBinaryParts == 2, "BARACUDA_BINARY_FLOAT_SPECS lists two parts");

#define BARACUDA_BINARY_INT_SPECS(D) \
  template <> Status launch_binary_int<DType::D>(BinaryKind, const MapParams&, cudaStream_t);
BARACUDA_BINARY_INT_SPECS(kI64)
BARACUDA_BINARY_INT_SPECS(kI32)
BARACUDA_BINARY_INT_SPECS(kI16)
BARACUDA_BINARY_INT_SPECS(kI8)
BARACUDA_BINARY_INT_SPECS(kU8)
BARACUDA_BINARY_INT_SPECS(kBool)
#undef BARACUDA_BINARY_INT_SPECS

#define BARACUDA_BINARY_BOOL_SPECS(D) \
  template <> Status launch_binary_bool<DType::D>(BoolOpCode, const IscloseScalars&, const MapParams&, cudaStream_t);
BARACUDA_BINARY_BOOL_SPECS(kF64)
BARACUDA_BINARY_BOOL_SPECS(kF32)
BARACUDA_BINARY_BOOL_SPECS(kF16)
BARACUDA_BINARY_BOOL_SPECS(kBF16)
BARACUDA_BINARY_BOOL_SPECS(kI64)
BARACUDA_BINARY_BOOL_SPECS(kI32)
BARACUDA_BINARY_BOOL_SPECS(kI16)
BARACUDA_BINARY_BOOL_SPECS(kI8)
BARACUDA_BINARY_BOOL_SPECS(kU8)
BARACUDA_BINARY_BOOL_SPECS(kBool)
#undef BARACUDA_BINARY_BOOL_SPECS

// ---- run-time dtype dispatchers (launch_binary.cpp)
// Forward of any kind on a's dtype d: logical kinds -> launch_binary_bool, integer and bool
// dtypes -> launch_binary_int, floating kinds -> the per-kind contiguous kernel or the
// run-time-kind rows / strided kernel.
Status launch_binary_fwd(DType d, BinaryKind kind, const MapParams& p, cudaStream_t s);
Status launch_binary_bwd_map(DType d, BinaryKind kind, int which, const MapParams& p, cudaStream_t s);
Status launch_binary_bwd_reduce(DType d, BinaryKind kind, const BroadcastReduceParams& p, cudaStream_t s);
Status launch_binary_bool(DType d, BoolOpCode op, const IscloseScalars& sc, const MapParams& p, cudaStream_t s);
Status launch_binary_param_fwd(DType d, BinaryParamKind kind, double scalar, const MapParams& p, cudaStream_t s);
Status launch_binary_param_bwd(DType d, ParamGradMap map, int which, double ca, double cb, const MapParams& p,
                               cudaStream_t s);

}  // namespace baracuda::elementwise
