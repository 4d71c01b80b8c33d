// Shared pieces of the cuBLASLt adapters (see lt_common.hpp).
#include "gemm/lt_common.hpp"

#include <algorithm>
#include <string>

namespace baracuda::gemm {

Status lt_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status(Code::kLibraryError, std::string(what) + " failed: " + cublasLtGetStatusString(s), StatusSource::kCublas,
                static_cast<int>(s));
}

cudaDataType_t lt_cuda_type(DType t) {
  switch (t) {
    case DType::kF64: return CUDA_R_64F;
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kI8: return CUDA_R_8I;
    case DType::kI32: return CUDA_R_32I;
    case DType::kE4M3: return CUDA_R_8F_E4M3;
    case DType::kE5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
  }
}

Status lt_set_transposes(cublasLtMatmulDescOpaque_t* op, bool trans_a, bool trans_b) {
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_TRANSA, ta, "set TRANSA"));
  return lt_desc_attr(op, CUBLASLT_MATMUL_DESC_TRANSB, tb, "set TRANSB");
}

const void* lt_stand_in(int alignment) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(std::max(alignment, 1)));
}

Expected<cublasLtMatmulHeuristicResult_t> lt_heuristic(cublasLtHandle_t handle, cublasLtMatmulDescOpaque_t* op,
                                                       const LtLayouts& layouts, const LtAlignments& alignments,
                                                       std::uint64_t max_workspace, bool reduced_precision_reduction) {
  cublasLtMatmulPreferenceOpaque_t pr{};
  GEMM_LT_TRY(cublasLtMatmulPreferenceInit(&pr));
  GEMM_LT_TRY(cublasLtMatmulPreferenceSetAttribute(&pr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                   sizeof(max_workspace)));
  if (!reduced_precision_reduction) {
    const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    GEMM_LT_TRY(cublasLtMatmulPreferenceSetAttribute(&pr, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)));
  }
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    const auto bytes = static_cast<std::uint32_t>(alignments[i]->alignment);
    GEMM_LT_TRY(cublasLtMatmulPreferenceSetAttribute(&pr, align_attr[i], &bytes, sizeof(bytes)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, op, layouts[0], layouts[1], layouts[2], layouts[3], &pr, 1, &result, &returned);
  if (s != CUBLAS_STATUS_SUCCESS || returned == 0)
    return Status(Code::kNotSupported,
                  std::string("cublasLtMatmulAlgoGetHeuristic found no algorithm (") + cublasLtGetStatusString(s) +
                      ", workspace cap " + std::to_string(max_workspace) + " bytes)",
                  StatusSource::kCublas, static_cast<int>(s));
  return result;
}

}  // namespace baracuda::gemm
