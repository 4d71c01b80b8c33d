// The cuBLASLt adapter of IntGemmPlan / Fp8GemmPlan (see lt_quant.hpp, docs/gemm.md).
#include "gemm/lt_quant.hpp"

#include <algorithm>
#include <string>

#include <cublasLt.h>

#include "baracuda/core/runtime.hpp"

namespace baracuda::gemm {

namespace {

constexpr std::size_t kMaxLtWorkspace = std::size_t{32} << 20;  // as GemmPlan

Status quant_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status(Code::kLibraryError, std::string(what) + " failed: " + cublasLtGetStatusString(s), StatusSource::kCublas,
                static_cast<int>(s));
}
#define QUANT_LT_TRY(call) BARACUDA_TRY(quant_status((call), #call))

cudaDataType_t quant_cuda_type(DType t) {
  switch (t) {
    case DType::kI8: return CUDA_R_8I;
    case DType::kI32: return CUDA_R_32I;
    case DType::kE4M3: return CUDA_R_8F_E4M3;
    case DType::kE5M2: return CUDA_R_8F_E5M2;
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

template <class T>
Status desc_attr(cublasLtMatmulDescOpaque_t* op, cublasLtMatmulDescAttributes_t a, const T& v, const char* what) {
  return quant_status(cublasLtMatmulDescSetAttribute(op, a, &v, sizeof(v)), what);
}

// The matmul descriptor with the run's pointers (built on the caller's stack per run).
Status quant_desc(cublasLtMatmulDescOpaque_t* op, const LtQuantProblem& p, const LtQuantPointers& q) {
  const bool fp8 = p.kind == LtQuantKind::kFp8;
  QUANT_LT_TRY(cublasLtMatmulDescInit(op, fp8 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32I, fp8 ? CUDA_R_32F : CUDA_R_32I));
  const cublasOperation_t ta = p.frame.a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.frame.b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_TRANSA, ta, "set TRANSA"));
  BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_TRANSB, tb, "set TRANSB"));
  if (!fp8) return Status::ok();
  const std::int32_t mode_a = p.scale_mode_a, mode_b = p.scale_mode_b;
  if (mode_a != 0) BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a, "set A_SCALE_MODE"));
  if (mode_b != 0) BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b, "set B_SCALE_MODE"));
  BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, q.scale_a, "set A_SCALE_POINTER"));
  BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, q.scale_b, "set B_SCALE_POINTER"));
  if (p.scale_d) BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, q.scale_d, "set D_SCALE_POINTER"));
  if (p.amax) BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, q.amax, "set AMAX_D_POINTER"));
  const std::int8_t fast = p.fast_accum ? 1 : 0;
  BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "set FAST_ACCUM"));
  if (p.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, "set EPILOGUE"));
    const std::int32_t bt = quant_cuda_type(p.bias_type);
    BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt, "set BIAS_DATA_TYPE"));
    BARACUDA_TRY(desc_attr(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, q.bias, "set BIAS_POINTER"));
  }
  return Status::ok();
}

const void* stand_in(int alignment) { return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(std::max(alignment, 16))); }

}  // namespace

struct LtQuantState {
  LtQuantProblem p;
  cublasLtHandle_t handle = nullptr;
  bool have_algo = false;
  cublasLtMatmulAlgo_t algo{};
  cublasLtMatrixLayoutOpaque_t la{}, lb{}, lc{}, ld{};
  std::size_t lt_workspace = 0, extra_offset = 0;
};

Expected<PreparedCandidate> lt_quant_prepare(const LtQuantProblem& p, const DeviceCaps& caps, const PlanPreference& pref) {
  auto st = std::make_shared<LtQuantState>();
  st->p = p;
  if (caps.ordinal < 0 || p.empty()) return PreparedCandidate{st, p.empty() ? 0 : p.extra_workspace};
  auto handle = LibraryHandles::cublaslt(caps.ordinal);
  if (!handle) return handle.error();
  st->handle = handle.value();
  const LtProblem& f = p.frame;
  QUANT_LT_TRY(cublasLtMatrixLayoutInit(&st->la, quant_cuda_type(p.type_a), f.a.rows, f.a.cols, f.a.ld));
  QUANT_LT_TRY(cublasLtMatrixLayoutInit(&st->lb, quant_cuda_type(p.type_b), f.b.rows, f.b.cols, f.b.ld));
  QUANT_LT_TRY(cublasLtMatrixLayoutInit(&st->lc, quant_cuda_type(p.type_c), f.d.rows, f.d.cols, f.d.ld));
  QUANT_LT_TRY(cublasLtMatrixLayoutInit(&st->ld, quant_cuda_type(p.type_d), f.d.rows, f.d.cols, f.d.ld));
  LtQuantPointers fake;  // the heuristic reads the pointers' values for their alignment only
  fake.scale_a = fake.scale_b = fake.scale_d = stand_in(16);
  fake.amax = const_cast<void*>(stand_in(16));
  fake.bias = stand_in(p.bias_alignment);
  cublasLtMatmulDescOpaque_t op{};
  BARACUDA_TRY(quant_desc(&op, p, fake));

  cublasLtMatmulPreferenceOpaque_t pr{};
  QUANT_LT_TRY(cublasLtMatmulPreferenceInit(&pr));
  // cuBLASLt's part: at most 32 MiB (as GemmPlan), within what the preference leaves after ours
  const std::size_t room =
      pref.max_workspace_bytes > p.extra_workspace + 256 ? pref.max_workspace_bytes - p.extra_workspace - 256 : 0;
  const std::uint64_t max_ws = std::min<std::size_t>(room, kMaxLtWorkspace);
  QUANT_LT_TRY(cublasLtMatmulPreferenceSetAttribute(&pr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)));
  const std::uint32_t align[4] = {static_cast<std::uint32_t>(f.a.alignment), static_cast<std::uint32_t>(f.b.alignment),
                                  static_cast<std::uint32_t>(f.d.alignment), static_cast<std::uint32_t>(f.d.alignment)};
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    QUANT_LT_TRY(cublasLtMatmulPreferenceSetAttribute(&pr, align_attr[i], &align[i], sizeof(align[i])));

  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(st->handle, &op, &st->la, &st->lb, &st->lc, &st->ld, &pr, 1, &result, &returned);
  if (s != CUBLAS_STATUS_SUCCESS || returned == 0)
    return Status(Code::kNotSupported,
                  std::string("cublasLtMatmulAlgoGetHeuristic found no algorithm (") + cublasLtGetStatusString(s) +
                      ", workspace cap " + std::to_string(max_ws) + " bytes)",
                  StatusSource::kCublas, static_cast<int>(s));
  st->algo = result.algo;
  st->have_algo = true;
  st->lt_workspace = result.workspaceSize;
  st->extra_offset = p.extra_workspace == 0 ? 0 : (result.workspaceSize + 255) / 256 * 256;
  return PreparedCandidate{st, st->extra_offset + p.extra_workspace + (p.extra_workspace ? 0 : result.workspaceSize)};
}

std::size_t lt_quant_extra_offset(const void* state) noexcept {
  return static_cast<const LtQuantState*>(state)->extra_offset;
}

Status lt_quant_launch(const void* state, const LtQuantPointers& q, Workspace ws, cudaStream_t stream) {
  const auto& st = *static_cast<const LtQuantState*>(state);
  const LtQuantProblem& p = st.p;
  if (p.empty()) return Status::ok();
  if (!st.have_algo)
    return Status(Code::kInternal, "quantized gemm: the plan has no cuBLASLt algorithm (selected without a device)");
  cublasLtMatmulDescOpaque_t op{};
  BARACUDA_TRY(quant_desc(&op, p, q));
  auto* la = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.la);
  auto* lb = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.lb);
  auto* lc = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.lc);
  auto* ld = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.ld);
  cublasStatus_t s;
  if (p.kind == LtQuantKind::kInt8) {
    const std::int32_t alpha = 1, beta = 0;
    s = cublasLtMatmul(st.handle, &op, &alpha, q.a, la, q.b, lb, &beta, q.d, lc, q.d, ld, &st.algo, ws.data, st.lt_workspace,
                       stream);
  } else {
    // beta = 0: C is not read (nullptr, as PyTorch's scaled_gemm passes it)
    const float alpha = 1.0f, beta = 0.0f;
    s = cublasLtMatmul(st.handle, &op, &alpha, q.a, la, q.b, lb, &beta, nullptr, lc, q.d, ld, &st.algo, ws.data,
                       st.lt_workspace, stream);
  }
  return quant_status(s, "cublasLtMatmul");
}

}  // namespace baracuda::gemm
