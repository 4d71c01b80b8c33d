// The cuBLASLt adapter of IntGemmPlan / Fp8GemmPlan (see lt_quant.hpp, docs/gemm.md).
#include "gemm/lt_quant.hpp"

#include <algorithm>
#include <string>

#include "baracuda/core/runtime.hpp"
#include "core/workspace_align.hpp"
#include "gemm/lt_common.hpp"

namespace baracuda::gemm {

namespace {

// The matmul descriptor with the run's pointers (built on the caller's stack per run).
Status quant_desc(cublasLtMatmulDescOpaque_t* op, const LtQuantProblem& p, const LtQuantPointers& q) {
  const bool fp8 = p.kind == LtQuantKind::kFp8;
  GEMM_LT_TRY(cublasLtMatmulDescInit(op, fp8 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32I, fp8 ? CUDA_R_32F : CUDA_R_32I));
  BARACUDA_TRY(lt_set_transposes(op, p.frame.a.trans, p.frame.b.trans));
  if (!fp8) return Status::ok();
  const std::int32_t mode_a = p.scale_mode_a, mode_b = p.scale_mode_b;
  if (mode_a != 0) BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a, "set A_SCALE_MODE"));
  if (mode_b != 0) BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b, "set B_SCALE_MODE"));
  BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, q.scale_a, "set A_SCALE_POINTER"));
  BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, q.scale_b, "set B_SCALE_POINTER"));
  if (p.scale_d) BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, q.scale_d, "set D_SCALE_POINTER"));
  if (p.amax) BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, q.amax, "set AMAX_D_POINTER"));
  const std::int8_t fast = p.fast_accum ? 1 : 0;
  BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "set FAST_ACCUM"));
  if (p.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, "set EPILOGUE"));
    const std::int32_t bt = lt_cuda_type(p.bias_type);
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt, "set BIAS_DATA_TYPE"));
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, q.bias, "set BIAS_POINTER"));
  }
  return Status::ok();
}

// The heuristic reads the scale / amax / bias pointers' values for their alignment (at least 16).
const void* stand_in(int alignment) { return lt_stand_in(std::max(alignment, 16)); }

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
  GEMM_LT_TRY(cublasLtMatrixLayoutInit(&st->la, lt_cuda_type(p.type_a), f.a.rows, f.a.cols, f.a.ld));
  GEMM_LT_TRY(cublasLtMatrixLayoutInit(&st->lb, lt_cuda_type(p.type_b), f.b.rows, f.b.cols, f.b.ld));
  GEMM_LT_TRY(cublasLtMatrixLayoutInit(&st->lc, lt_cuda_type(p.type_c), f.d.rows, f.d.cols, f.d.ld));
  GEMM_LT_TRY(cublasLtMatrixLayoutInit(&st->ld, lt_cuda_type(p.type_d), f.d.rows, f.d.cols, f.d.ld));
  LtQuantPointers fake;  // the heuristic reads the pointers' values for their alignment only
  fake.scale_a = fake.scale_b = fake.scale_d = stand_in(16);
  fake.amax = const_cast<void*>(stand_in(16));
  fake.bias = stand_in(p.bias_alignment);
  cublasLtMatmulDescOpaque_t op{};
  BARACUDA_TRY(quant_desc(&op, p, fake));

  // cuBLASLt's part: at most 32 MiB (as GemmPlan), within what the preference leaves after ours
  const std::size_t room =
      pref.max_workspace_bytes > p.extra_workspace + 256 ? pref.max_workspace_bytes - p.extra_workspace - 256 : 0;
  const std::uint64_t max_ws = std::min<std::size_t>(room, kMaxLtWorkspace);
  // C has D's layout; no reduction-scheme restriction (as before this adapter shared the query)
  auto found = lt_heuristic(st->handle, &op, {&st->la, &st->lb, &st->lc, &st->ld}, {&f.a, &f.b, &f.d, &f.d}, max_ws, true);
  if (!found) return found.error();
  const cublasLtMatmulHeuristicResult_t& result = found.value();
  st->algo = result.algo;
  st->have_algo = true;
  st->lt_workspace = result.workspaceSize;
  st->extra_offset = p.extra_workspace == 0 ? 0 : align_workspace(result.workspaceSize);
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
  return lt_status(s, "cublasLtMatmul");
}

}  // namespace baracuda::gemm
