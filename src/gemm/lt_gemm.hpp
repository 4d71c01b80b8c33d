// The cuBLASLt adapter of the GEMM family: a GEMM in cuBLASLt's column-major frame, the
// one heuristic query of select, and the launch.
//
// Row-major D (M x N, ld) is the column-major matrix D^T (N x M, ld), so a row-major problem
// is issued as D^T = B^T A^T: cuBLASLt's m, n are N, M, its A is our B and its B our A, and
// every operand is described as a column-major layout plus a transpose flag (a row-major
// operand read as itself is the transposed column-major view of its buffer). Column-major D
// needs no swap. See docs/gemm.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/preference.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/gemm_grouped.hpp"
#include "core/plan_impl.hpp"

namespace baracuda::gemm {

// One operand as cuBLASLt sees it: a column-major rows x cols layout (before op()).
struct LtOperand {
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::int64_t ld = 0;
  bool trans = false;            // op() = transpose (A and B only)
  int alignment = 16;            // bytes the caller promises for the pointer
  std::int64_t batch_stride = 0; // elements
};

// The whole problem in cuBLASLt's frame.
struct LtProblem {
  DType dtype = DType::kF32;
  bool tf32 = false;
  bool swap = false;  // row-major D: cuBLASLt computes D^T = B^T A^T
  std::int64_t m = 0, n = 0, k = 0;  // cuBLASLt's (swapped when `swap`)
  LtOperand a, b, c, d;
  bool with_c = false;
  std::int64_t batch = 1;
  int epilogue = 1;  // cublasLtEpilogue_t
  bool bias_in = false, bias_out = false, aux = false;
  int bias_alignment = 16, aux_alignment = 16;
  std::int64_t bias_stride = 0, aux_ld = 0, aux_stride = 0;
  bool reduced_precision_reduction = false;  // allow split-K reductions in the output type
  bool empty() const noexcept { return m == 0 || n == 0 || batch == 0; }
};

// The frame change (docs/gemm.md); strides of a batched descriptor go in `batched`.
LtProblem lt_problem(const GemmDescriptor& d, bool tf32);
LtProblem lt_problem(const BatchedGemmDescriptor& d, bool tf32);

// Why cuBLASLt cannot run this problem as we issue it ("" = it can, as far as select knows
// without asking the library).
std::string lt_rejection(const GemmDescriptor& d);

// gelu_erf and silu: no cuBLASLt epilogue; the composite candidates run them.
inline bool is_composite_activation(GemmActivation a) noexcept {
  return a == GemmActivation::kGeluErf || a == GemmActivation::kSilu;
}

// The state select caches: the problem, the handle, the layouts and the chosen algorithm.
struct LtState;
// Queries the heuristic once (workspace capped at min(pref.max_workspace_bytes, 32 MiB)).
// Without a device (caps.ordinal < 0) the state has no algorithm and cannot run.
Expected<PreparedCandidate> lt_prepare(const LtProblem& p, const DeviceCaps& caps, const PlanPreference& pref);
// cublasLtMatmul with the args' pointers (no allocation, no synchronization).
Status lt_launch(const void* state, const GemmArgs& args, Workspace ws, cudaStream_t stream);

// The SKU of an accepting cuBLASLt candidate.
KernelSku lt_sku(DType t, bool tf32);

// The names check_gemm_args gives the operands in its messages ("args.<name> is null",
// "<name>.alignment"): GemmArgs' own, or the caller's where a plan hands its fields to a GEMM
// under other roles (GemmBackwardPlan's grad_d is one GEMM's a and the other's b).
struct GemmArgNames {
  const char* a = "a";
  const char* b = "b";
  const char* c = "c";
  const char* bias = "bias";
  const char* aux = "aux";
  const char* d = "d";
  const char* bias_grad = "bias_grad";
};
// Run-time checks of GemmArgs against the layouts (null, alignment, aliasing): `batch`
// copies of each operand `stride_*` elements apart.
Status check_gemm_args(const BatchedGemmDescriptor& d, const GemmArgs& a, const GemmArgNames& names = {});

// GemmPlan's selection for plans built from GEMMs (GroupedGemmPlan), defined where
// FamilyTraits<GemmDescriptor> is: the implementation, launchable through its candidate.
using GemmImpl = std::shared_ptr<const detail::PlanImpl<GemmDescriptor, GemmArgs>>;
Expected<GemmImpl> select_gemm_impl(const DeviceCaps& caps, const GemmDescriptor& d, const PlanPreference& pref);

// Run-time checks of GroupedGemmPlan (null, alignment, D overlapping A or B).
Status check_grouped_gemm_args(const GroupedGemmDescriptor& d, const GroupedGemmArgs& a);

// Descriptor checks shared by both plans.
Status validate_gemm(const GemmDescriptor& d);

}  // namespace baracuda::gemm
