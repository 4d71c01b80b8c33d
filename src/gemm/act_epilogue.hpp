// The activation pass of the composite GEMM epilogues cuBLASLt lacks (gelu with erf, silu):
// the candidate `cublaslt_act` runs cuBLASLt (with its BIAS epilogue when there is a bias)
// writing the pre-activation to D, then this one elementwise pass over D
// (kernels/act_epilogue.cuh): aux = pre (when wanted), D = act(pre).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::gemm {

enum class ActKind : std::uint8_t { kGeluErf, kSilu };

// batch x outer x inner elements; element (p, o, i) of D at p * d_batch_stride + o * d_ld + i
// (and of aux likewise). inner is the unit-stride direction (N for row-major D).
struct ActEpilogueParams {
  void* d = nullptr;
  void* aux = nullptr;  // null: no aux output
  std::int64_t batch = 1, outer = 0, inner = 0;
  std::int64_t d_ld = 0, d_batch_stride = 0;
  std::int64_t aux_ld = 0, aux_batch_stride = 0;
  ActKind act = ActKind::kGeluErf;
};

// f32, f16 or bf16 (the GEMM's dtype), f32 math; no allocation, no synchronization.
Status launch_act_epilogue(DType t, const ActEpilogueParams& p, cudaStream_t stream);

}  // namespace baracuda::gemm
