// Pieces of the cuBLASLt adapters written once for GemmPlan (lt_gemm.cpp) and the quantized
// GEMMs (lt_quant.cpp): status conversion, data types, descriptor attributes, the stand-in
// pointers the heuristic reads alignments from, and the one heuristic query of select.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <cublasLt.h>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "gemm/lt_gemm.hpp"

namespace baracuda::gemm {

// The most workspace select lets cuBLASLt plan for (what PyTorch gives it on Hopper).
inline constexpr std::size_t kMaxLtWorkspace = std::size_t{32} << 20;

Status lt_status(cublasStatus_t s, const char* what);
#define GEMM_LT_TRY(call) BARACUDA_TRY(::baracuda::gemm::lt_status((call), #call))

// f64, f32, f16, bf16, i8, i32, e4m3, e5m2 (anything else: f32).
cudaDataType_t lt_cuda_type(DType t);

template <class T>
Status lt_desc_attr(cublasLtMatmulDescOpaque_t* op, cublasLtMatmulDescAttributes_t a, const T& v, const char* what) {
  return lt_status(cublasLtMatmulDescSetAttribute(op, a, &v, sizeof(v)), what);
}

// TRANSA / TRANSB from the frame's transpose flags.
Status lt_set_transposes(cublasLtMatmulDescOpaque_t* op, bool trans_a, bool trans_b);

// A stand-in pointer aligned to exactly max(alignment, 1) bytes: the heuristic reads the
// epilogue and scale pointers' values to learn their alignment, never their data.
const void* lt_stand_in(int alignment);

// The heuristic's first algorithm for the layouts (A, B, C, D), within max_workspace bytes,
// with the operands' promised alignments; split-K reductions restricted to the compute type
// unless `reduced_precision_reduction`. kNotSupported when it finds none.
using LtLayouts = std::array<cublasLtMatrixLayoutOpaque_t*, 4>;
using LtAlignments = std::array<const LtOperand*, 4>;
Expected<cublasLtMatmulHeuristicResult_t> lt_heuristic(cublasLtHandle_t handle, cublasLtMatmulDescOpaque_t* op,
                                                       const LtLayouts& layouts, const LtAlignments& alignments,
                                                       std::uint64_t max_workspace, bool reduced_precision_reduction);

}  // namespace baracuda::gemm
