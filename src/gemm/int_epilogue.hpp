// The host/kernel seam of IntGemmPlan's epilogue (plain C++, no CUDA types): the int32
// product that cuBLASLt wrote to the workspace, scaled and stored in D's dtype and layout
// (rules in baracuda/ops/gemm_quant.hpp; kernel in kernels/int_epilogue.cuh).
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::gemm {

struct IntEpilogueParams {
  const std::int32_t* acc = nullptr;  // M x N, dense: row-major (ld N) or column-major (ld M)
  bool acc_row_major = true;
  std::int64_t m = 0, n = 0;
  void* d = nullptr;
  DType d_dtype = DType::kF32;  // i8, f16, bf16 or f32
  std::int64_t ld = 0;
  bool d_row_major = true;
  const float* scale_a = nullptr;  // null, 1 value (per_row_a = false) or M values
  bool per_row_a = false;
  const float* scale_b = nullptr;  // null, 1 value or N values
  bool per_col_b = false;
  const float* bias = nullptr;  // null or N values
};

Status launch_int_epilogue(const IntEpilogueParams& p, cudaStream_t stream);

}  // namespace baracuda::gemm
