// The per-dtype launcher declarations of a row family (softmax, normalization): a forward
// and a backward launcher template over the four float dtypes, specialised in the family's
// instance files, and launch_by_dtype that picks one at run time. Plain C++ (the host/kernel
// seam headers include it).
#pragma once

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

// Declares FN<D>(const PARAMS&, cudaStream_t) and its specialisations for f64 / f32 / f16 / bf16.
#define BARACUDA_DTYPE_LAUNCHER(PARAMS, FN)                        \
  template <DType D> Status FN(const PARAMS& p, cudaStream_t s);   \
  template <> Status FN<DType::kF64>(const PARAMS&, cudaStream_t); \
  template <> Status FN<DType::kF32>(const PARAMS&, cudaStream_t); \
  template <> Status FN<DType::kF16>(const PARAMS&, cudaStream_t); \
  template <> Status FN<DType::kBF16>(const PARAMS&, cudaStream_t);

// return FN<t>(p, s) (NAME: the family, for the error text of other dtypes).
#define BARACUDA_DTYPE_DISPATCH(NAME, FN, t, p, s)                                                 \
  switch (t) {                                                                                    \
    case DType::kF64: return FN<DType::kF64>(p, s);                                               \
    case DType::kF32: return FN<DType::kF32>(p, s);                                               \
    case DType::kF16: return FN<DType::kF16>(p, s);                                               \
    case DType::kBF16: return FN<DType::kBF16>(p, s);                                             \
    default: return Status(Code::kNotBuilt, NAME ": no kernels for dtype " + std::string(dtype_name(t))); \
  }

// Declares FWD<D> / BWD<D>(const PARAMS&, cudaStream_t) for the four dtypes and
// launch_by_dtype(DType, bool bwd, const PARAMS&, cudaStream_t).
#define BARACUDA_ROW_LAUNCHERS(NAME, PARAMS, FWD, BWD)                                 \
  BARACUDA_DTYPE_LAUNCHER(PARAMS, FWD)                                                \
  BARACUDA_DTYPE_LAUNCHER(PARAMS, BWD)                                                \
  inline Status launch_by_dtype(DType t, bool bwd, const PARAMS& p, cudaStream_t s) { \
    if (bwd) BARACUDA_DTYPE_DISPATCH(NAME, BWD, t, p, s)                               \
    BARACUDA_DTYPE_DISPATCH(NAME, FWD, t, p, s)                                        \
  }

// One direction only (a family whose other direction runs another family's kernels):
// FN<D> for the four dtypes and launch_by_dtype(DType, const PARAMS&, cudaStream_t).
#define BARACUDA_ROW_LAUNCHER(NAME, PARAMS, FN)                              \
  BARACUDA_DTYPE_LAUNCHER(PARAMS, FN)                                       \
  inline Status launch_by_dtype(DType t, const PARAMS& p, cudaStream_t s) { \
    BARACUDA_DTYPE_DISPATCH(NAME, FN, t, p, s)                               \
  }
