// One-instruction MUFU approximations for f32 math under 16-bit results.
//
// A bf16 / f16 result keeps 8 / 11 significant bits, so the f32 math under it needs ~2^-14
// relative accuracy, not the 1-2 ulp of expf / logf (10-40 instructions each). ex2.approx,
// lg2.approx and rcp.approx are 2^-22 relative or better at one instruction each. The forms
// without .ftz keep subnormal arguments and results (bf16 shares f32's exponent range); the
// .ftz forms are one instruction shorter, for values whose subnormals do not matter.
// Users: elementwise/kernels/unary_fast16.cuh, softmax/kernels/softmax.cuh, the logsumexp of
// reduce/kernels/reduce_ops.cuh and the logcumsumexp of scan/kernels/scan.cuh (16-bit rows).
#pragma once

#include <cuda_runtime.h>

namespace baracuda::kernels::mufu {

#define BARACUDA_MUFU(name, instruction)            \
  __device__ __forceinline__ float name(float x) {  \
    float r;                                        \
    asm(instruction " %0, %1;" : "=f"(r) : "f"(x)); \
    return r;                                       \
  }
BARACUDA_MUFU(ex2, "ex2.approx.f32")
BARACUDA_MUFU(lg2, "lg2.approx.f32")
BARACUDA_MUFU(rcp, "rcp.approx.f32")
BARACUDA_MUFU(ex2_ftz, "ex2.approx.ftz.f32")
BARACUDA_MUFU(lg2_ftz, "lg2.approx.ftz.f32")
BARACUDA_MUFU(rcp_ftz, "rcp.approx.ftz.f32")
#undef BARACUDA_MUFU

inline constexpr float kLog2e = 1.44269504088896340736f, kLn2 = 0.69314718055994530942f;

// e^x as one MUFU ex2 of x log2(e) (.ftz: results below 2^-126 are 0).
__device__ __forceinline__ float exp_ftz(float x) { return ex2_ftz(x * kLog2e); }

// max(a, b) that returns NaN when either is NaN (PTX max.NaN, sm_80+): one instruction.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

}  // namespace baracuda::kernels::mufu
