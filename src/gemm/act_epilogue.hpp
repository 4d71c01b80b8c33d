// The activation pass of the composite GEMM epilogues cuBLASLt lacks (gelu with erf, silu):
// the candidate `cublaslt_act` runs cuBLASLt (with its BIAS epilogue when there is a bias)
// writing the pre-activation to D, then this one elementwise pass over D
// (kernels/act_epilogue.cuh): aux = pre (when wanted), D = act(pre).
// And the activation-gradient pass of the composite backward epilogues (`cublaslt_dact`:
// cuBLASLt wrote the plain product to D): D = D .* act'(aux), aux being the forward's relu bit
// mask or pre-activation; the bias gradient (column sums of D) is then bias_grad.hpp's reduction.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::gemm {

// Forward pass: kGeluErf, kSilu. Gradient pass: all four (kRelu reads a bit mask).
enum class ActKind : std::uint8_t { kGeluErf, kSilu, kRelu, kGeluTanh };

// batch x outer x inner elements; element (p, o, i) of D at p * d_batch_stride + o * d_ld + i
// (and of aux likewise; for the relu bit mask, bit p * aux_batch_stride + o * aux_ld + i).
// inner is the unit-stride direction (N for row-major D).
struct ActEpilogueParams {
  void* d = nullptr;
  void* aux = nullptr;  // forward: null = no aux output; gradient pass: the input
  std::int64_t batch = 1, outer = 0, inner = 0;
  std::int64_t d_ld = 0, d_batch_stride = 0;
  std::int64_t aux_ld = 0, aux_batch_stride = 0;
  ActKind act = ActKind::kGeluErf;
};

// f32, f16 or bf16 (the GEMM's dtype), f32 math; no allocation, no synchronization.
Status launch_act_epilogue(DType t, const ActEpilogueParams& p, cudaStream_t stream);
// D = D .* act'(aux) in place (every ActKind; aux required), same dtypes and guarantees.
Status launch_act_grad_epilogue(DType t, const ActEpilogueParams& p, cudaStream_t stream);

}  // namespace baracuda::gemm
