// The per-dtype launcher declarations of a row family (softmax, normalization): a forward
// and a backward launcher template over the four float dtypes, specialised in the family's
// instance files, and launch_by_dtype that picks one at run time. Plain C++ (the host/kernel
// seam headers include it).
#pragma once

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

#define BARACUDA_ROW_LAUNCHER_SPEC(PARAMS, FWD, BWD, D)                  \
  template <> Status FWD<DType::D>(const PARAMS&, cudaStream_t); \
  template <> Status BWD<DType::D>(const PARAMS&, cudaStream_t);

// Declares (NAME: the family, for the error text) FWD<D> / BWD<D>(const PARAMS&, cudaStream_t) for f64 / f32 / f16 / bf16 and
// launch_by_dtype(DType, bool bwd, const PARAMS&, cudaStream_t).
#define BARACUDA_ROW_LAUNCHERS(NAME, PARAMS, FWD, BWD)                                               \
  template <DType D> Status FWD(const PARAMS& p, cudaStream_t s);                               \
  template <DType D> Status BWD(const PARAMS& p, cudaStream_t s);                               \
  BARACUDA_ROW_LAUNCHER_SPEC(PARAMS, FWD, BWD, kF64)                                            \
  BARACUDA_ROW_LAUNCHER_SPEC(PARAMS, FWD, BWD, kF32)                                            \
  BARACUDA_ROW_LAUNCHER_SPEC(PARAMS, FWD, BWD, kF16)                                            \
  BARACUDA_ROW_LAUNCHER_SPEC(PARAMS, FWD, BWD, kBF16)                                           \
  inline Status launch_by_dtype(DType t, bool bwd, const PARAMS& p, cudaStream_t s) {           \
    switch (t) {                                                                                \
      case DType::kF64: return bwd ? BWD<DType::kF64>(p, s) : FWD<DType::kF64>(p, s);           \
      case DType::kF32: return bwd ? BWD<DType::kF32>(p, s) : FWD<DType::kF32>(p, s);           \
      case DType::kF16: return bwd ? BWD<DType::kF16>(p, s) : FWD<DType::kF16>(p, s);           \
      case DType::kBF16: return bwd ? BWD<DType::kBF16>(p, s) : FWD<DType::kBF16>(p, s);        \
      default: return Status(Code::kNotBuilt, NAME ": no kernels for dtype " + std::string(dtype_name(t))); \
    }                                                                                           \
  }
