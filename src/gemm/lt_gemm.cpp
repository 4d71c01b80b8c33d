// The cuBLASLt adapter of GemmPlan / BatchedGemmPlan (see lt_gemm.hpp and docs/gemm.md).
#include "gemm/lt_gemm.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "baracuda/core/runtime.hpp"
#include "gemm/lt_common.hpp"

namespace baracuda::gemm {

namespace {

// A logical r x c operand X as cuBLASLt's column-major layout + op(): a column-major buffer
// is X itself, a row-major one is X^T. `want_transpose`: the product needs X^T.
LtOperand as_column_major(const MatrixLayout& x, bool want_transpose) {
  const bool buffer_is_x = x.order == MatrixOrder::kColMajor;
  LtOperand o;
  o.rows = static_cast<std::uint64_t>(buffer_is_x ? x.rows : x.cols);
  o.cols = static_cast<std::uint64_t>(buffer_is_x ? x.cols : x.rows);
  o.ld = x.ld;
  o.trans = want_transpose ? buffer_is_x : !buffer_is_x;
  o.alignment = x.alignment;
  return o;
}

int lt_epilogue(const GemmEpilogue& e, bool swap) {
  if (e.activation_grad) {  // DRELU / DGELU (+ BGRAD: bias gradient along cuBLASLt's rows, N for row-major D)
    const int v = e.activation == GemmActivation::kRelu ? CUBLASLT_EPILOGUE_DRELU : CUBLASLT_EPILOGUE_DGELU;
    return e.bias_grad == GemmBiasGrad::kD ? (v | 16) : v;
  }
  if (e.bias_grad == GemmBiasGrad::kA) return swap ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BGRADA;
  if (e.bias_grad == GemmBiasGrad::kB) return swap ? CUBLASLT_EPILOGUE_BGRADA : CUBLASLT_EPILOGUE_BGRADB;
  int v = 0;
  if (e.activation == GemmActivation::kRelu) v |= CUBLASLT_EPILOGUE_RELU;
  if (e.activation == GemmActivation::kGeluTanh) v |= CUBLASLT_EPILOGUE_GELU;
  if (e.bias) v |= CUBLASLT_EPILOGUE_BIAS;
  if (e.aux) v |= 128;  // the *_AUX variants
  return v == 0 ? CUBLASLT_EPILOGUE_DEFAULT : v;
}

}  // namespace

LtProblem lt_problem(const GemmDescriptor& g, bool tf32) {
  LtProblem p;
  p.dtype = g.d.dtype;
  p.tf32 = tf32;
  p.swap = g.d.order == MatrixOrder::kRowMajor;
  if (p.swap) {  // D^T = B^T A^T
    p.a = as_column_major(g.b, true);
    p.b = as_column_major(g.a, true);
    p.d = as_column_major(g.d, true);
    if (g.with_c) p.c = as_column_major(g.c, true);
  } else {
    p.a = as_column_major(g.a, false);
    p.b = as_column_major(g.b, false);
    p.d = as_column_major(g.d, false);
    if (g.with_c) p.c = as_column_major(g.c, false);
  }
  if (!g.with_c) p.c = p.d;
  p.c.trans = p.d.trans = false;
  p.m = static_cast<std::int64_t>(p.d.rows);
  p.n = static_cast<std::int64_t>(p.d.cols);
  p.k = g.a.cols;
  p.with_c = g.with_c;
  p.epilogue = lt_epilogue(g.epilogue, p.swap);
  p.bias_in = g.epilogue.bias;
  p.bias_out = g.epilogue.bias_grad != GemmBiasGrad::kNone;
  p.bias_alignment = p.bias_in ? g.bias.alignment : g.bias_grad.alignment;
  p.aux = g.epilogue.aux;
  p.aux_ld = g.aux.ld;
  p.aux_alignment = g.aux.alignment;
  return p;
}

LtProblem lt_problem(const BatchedGemmDescriptor& d, bool tf32) {
  LtProblem p = lt_problem(d.gemm, tf32);
  p.batch = d.batch;
  // cuBLASLt's A is our B when swapped
  p.a.batch_stride = p.swap ? d.stride_b : d.stride_a;
  p.b.batch_stride = p.swap ? d.stride_a : d.stride_b;
  p.d.batch_stride = d.stride_d;
  p.c.batch_stride = d.gemm.with_c ? d.stride_c : d.stride_d;
  p.bias_stride = d.stride_bias;
  p.aux_stride = d.stride_aux;
  return p;
}

std::string lt_rejection(const GemmDescriptor& g) {
  const GemmEpilogue& e = g.epilogue;
  const bool has_epilogue = e.activation != GemmActivation::kNone || e.bias || e.aux || e.bias_grad != GemmBiasGrad::kNone;
  if (g.k() == 0) return "k = 0 (a.cols): cuBLASLt needs k >= 1";
  if (is_composite_activation(e.activation))
    return "activation " + std::string(gemm_activation_name(e.activation)) + " is not a cuBLASLt epilogue (the " +
           (e.activation_grad ? "cublaslt_dact" : "cublaslt_act") + " candidates run it)";
  if (has_epilogue && g.d.dtype == DType::kF64)
    return "epilogue " + e.to_string() + " with f64: cuBLASLt's epilogues take f32, f16 and bf16";
  if (e.bias && g.d.order != MatrixOrder::kRowMajor)
    return "epilogue bias with d column-major: cuBLASLt broadcasts its bias along D's rows in its column-major "
           "frame, which is bias[j] (j < N) only for row-major D";
  if (e.bias_grad == GemmBiasGrad::kD && g.d.order != MatrixOrder::kRowMajor)
    return "epilogue " + e.to_string() + " with d column-major: cuBLASLt's BGRAD sums along D's rows in its "
           "column-major frame, which is bias_grad[j] (j < N) only for row-major D (the cublaslt_dact candidates run it)";
  return "";
}

KernelSku lt_sku(DType t, bool tf32) {
  KernelSku s;
  s.family = "gemm";
  s.impl = tf32 ? "cublaslt_tf32" : "cublaslt";
  s.in = s.out = t;
  s.compute = s.precision.accumulator = t == DType::kF64 ? DType::kF64 : DType::kF32;
  s.precision.uses_tf32 = tf32;
  s.backend = Backend::kCublasLt;
  s.min_sm = 80;
  s.graph_capturable = true;
  return s;
}

// ------------------------------------------------------------------------------ state
struct LtState {
  LtProblem p;
  cublasLtHandle_t handle = nullptr;
  bool have_algo = false;
  cublasLtMatmulAlgo_t algo{};
  cublasLtMatrixLayoutOpaque_t layout_a{}, layout_b{}, layout_c{}, layout_d{};
  std::size_t workspace = 0;
};

namespace {

Status init_layout(cublasLtMatrixLayoutOpaque_t* l, DType t, const LtOperand& o, std::int64_t batch) {
  GEMM_LT_TRY(cublasLtMatrixLayoutInit(l, lt_cuda_type(t), o.rows, o.cols, o.ld));
  if (batch > 1) {
    const std::int32_t count = static_cast<std::int32_t>(batch);
    GEMM_LT_TRY(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    GEMM_LT_TRY(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &o.batch_stride,
                                                 sizeof(o.batch_stride)));
  }
  return Status::ok();
}

// The matmul descriptor of `p` with the epilogue's pointers (on the caller's stack: run()
// builds its own, so concurrent runs share nothing mutable).
Status init_desc(cublasLtMatmulDescOpaque_t* op, const LtProblem& p, const void* bias, const void* aux) {
  const bool f64 = p.dtype == DType::kF64;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : (p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  GEMM_LT_TRY(cublasLtMatmulDescInit(op, compute, f64 ? CUDA_R_64F : CUDA_R_32F));
  BARACUDA_TRY(lt_set_transposes(op, p.a.trans, p.b.trans));
  if (p.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const auto epi = static_cast<cublasLtEpilogue_t>(p.epilogue);
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, "set EPILOGUE"));
  }
  if (p.bias_in || p.bias_out) {
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "set BIAS_POINTER"));
    if (p.batch > 1) BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, p.bias_stride, "set BIAS_BATCH_STRIDE"));
  }
  if (p.aux) {
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux, "set EPILOGUE_AUX_POINTER"));
    BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, p.aux_ld, "set EPILOGUE_AUX_LD"));
    if (p.batch > 1)
      BARACUDA_TRY(lt_desc_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, p.aux_stride, "set EPILOGUE_AUX_BATCH_STRIDE"));
  }
  return Status::ok();
}

}  // namespace

Expected<PreparedCandidate> lt_prepare(const LtProblem& p, const DeviceCaps& caps, const PlanPreference& pref) {
  auto st = std::make_shared<LtState>();
  st->p = p;
  if (caps.ordinal < 0 || p.empty()) return PreparedCandidate{st, 0};  // no device: cannot run; empty: nothing to run
  auto handle = LibraryHandles::cublaslt(caps.ordinal);
  if (!handle) return handle.error();
  st->handle = handle.value();
  BARACUDA_TRY(init_layout(&st->layout_a, p.dtype, p.a, p.batch));
  BARACUDA_TRY(init_layout(&st->layout_b, p.dtype, p.b, p.batch));
  BARACUDA_TRY(init_layout(&st->layout_c, p.dtype, p.c, p.batch));
  BARACUDA_TRY(init_layout(&st->layout_d, p.dtype, p.d, p.batch));
  cublasLtMatmulDescOpaque_t op{};
  BARACUDA_TRY(init_desc(&op, p, lt_stand_in(p.bias_alignment), lt_stand_in(p.aux_alignment)));

  // Split-K partial sums are reduced in the compute type unless the caller allows the output type.
  auto found = lt_heuristic(st->handle, &op, {&st->layout_a, &st->layout_b, &st->layout_c, &st->layout_d},
                            {&p.a, &p.b, &p.c, &p.d}, std::min<std::size_t>(pref.max_workspace_bytes, kMaxLtWorkspace),
                            pref.math.allow_reduced_precision_reduction);
  if (!found) return found.error();
  const cublasLtMatmulHeuristicResult_t& result = found.value();
  st->algo = result.algo;
  st->have_algo = true;
  st->workspace = result.workspaceSize;
  return PreparedCandidate{st, result.workspaceSize};
}

Status lt_launch(const void* state, const GemmArgs& a, Workspace ws, cudaStream_t stream) {
  const auto& st = *static_cast<const LtState*>(state);
  const LtProblem& p = st.p;
  if (p.empty()) return Status::ok();
  if (!st.have_algo) return Status(Code::kInternal, "gemm: the plan has no cuBLASLt algorithm (selected without a device)");
  cublasLtMatmulDescOpaque_t op{};
  BARACUDA_TRY(init_desc(&op, p, p.bias_in ? a.bias : a.bias_grad, a.aux));
  // cuBLASLt's A is our B when swapped
  const void* lt_a = p.swap ? a.b : a.a;
  const void* lt_b = p.swap ? a.a : a.b;
  const void* c = p.with_c ? a.c : a.d;
  auto* la = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.layout_a);
  auto* lb = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.layout_b);
  auto* lc = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.layout_c);
  auto* ld = const_cast<cublasLtMatrixLayoutOpaque_t*>(&st.layout_d);
  cublasStatus_t s;
  if (p.dtype == DType::kF64) {
    const double alpha = a.alpha, beta = p.with_c ? a.beta : 0.0;
    s = cublasLtMatmul(st.handle, &op, &alpha, lt_a, la, lt_b, lb, &beta, c, lc, a.d, ld, &st.algo, ws.data, st.workspace,
                       stream);
  } else {
    const float alpha = static_cast<float>(a.alpha), beta = p.with_c ? static_cast<float>(a.beta) : 0.0f;
    s = cublasLtMatmul(st.handle, &op, &alpha, lt_a, la, lt_b, lb, &beta, c, lc, a.d, ld, &st.algo, ws.data, st.workspace,
                       stream);
  }
  return lt_status(s, "cublasLtMatmul");
}

}  // namespace baracuda::gemm
