// The cuBLASLt adapter of the quantized GEMMs (IntGemmPlan, Fp8GemmPlan): the same frame
// change as GemmPlan (lt_problem of lt_gemm.hpp, reused as is), with a data type per operand,
// the int32 / fp8 compute and scale types, and the scale / amax pointers of the fp8 kernels.
// A separate adapter (not a change of lt_gemm.cpp, whose LtProblem has one dtype).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/preference.hpp"
#include "gemm/lt_gemm.hpp"

namespace baracuda::gemm {

enum class LtQuantKind : std::uint8_t { kInt8, kFp8 };

// Everything in cuBLASLt's frame (lt "a" is our B when frame.swap).
struct LtQuantProblem {
  LtProblem frame;  // operands, m, n, k, swap (dtype / epilogue fields unused)
  LtQuantKind kind = LtQuantKind::kInt8;
  DType type_a = DType::kI8, type_b = DType::kI8, type_c = DType::kI32, type_d = DType::kI32;
  int scale_mode_a = 0, scale_mode_b = 0;  // cublasLtMatmulMatrixScale_t (fp8)
  bool scale_d = false, amax = false, bias = false, fast_accum = false;
  DType bias_type = DType::kBF16;
  int bias_alignment = 16;
  std::size_t extra_workspace = 0;  // bytes the plan adds after cuBLASLt's (256-aligned start)
  bool empty() const noexcept { return frame.m == 0 || frame.n == 0; }
};

// Pointers in cuBLASLt's frame.
struct LtQuantPointers {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const void* scale_a = nullptr;
  const void* scale_b = nullptr;
  const void* scale_d = nullptr;
  void* amax = nullptr;
  const void* bias = nullptr;
};

// Heuristic once (workspace capped at min(pref.max_workspace_bytes, 32 MiB) minus the extra);
// the prepared workspace is round_up(cuBLASLt's, 256) + extra_workspace.
Expected<PreparedCandidate> lt_quant_prepare(const LtQuantProblem& p, const DeviceCaps& caps, const PlanPreference& pref);
// cublasLtMatmul (no allocation, no synchronization); ws.data is cuBLASLt's part.
Status lt_quant_launch(const void* state, const LtQuantPointers& ptrs, Workspace ws, cudaStream_t stream);
// Offset of the plan's extra workspace in the prepared state's workspace.
std::size_t lt_quant_extra_offset(const void* state) noexcept;

}  // namespace baracuda::gemm
