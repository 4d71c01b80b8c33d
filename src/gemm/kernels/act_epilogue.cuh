// Activation pass of the composite GEMM epilogues (gelu with erf, silu), run over D after
// cuBLASLt has written the pre-activation x there (bias already added by cuBLASLt's BIAS
// epilogue): aux = x (the backward's input, D's dtype) when wanted, then D = act(x).
//
//   gelu_erf(x) = 0.5 x (1 + erf(x / sqrt 2))      (PyTorch's F.gelu, approximate='none')
//   silu(x)     = x / (1 + exp(-x))                 (PyTorch's F.silu)
//
// Parallel scheme: a grid-stride loop over vectors of kVec elements along the unit-stride
// direction of D (16 bytes: 4 f32 or 8 f16/bf16 per load and store) when the inner extent,
// the lds, the batch strides and both pointers allow it; one element at a time otherwise.
// Memory-bound: one read and one or two writes of D's bytes.
// Numerics: f32 math with erff / expf (full-precision libdevice, max 2 ulp) and IEEE
// division, one rounding to the output dtype; the reference's bound (reference/gemm.cpp)
// allows 2^-21 |x| for the evaluation.
// Preconditions (checked by the launcher): pointers aligned to one element; vector path only
// with 16-byte aligned pointers and every stride a multiple of kVec.
#pragma once

#include <cstdint>

#include "common/device_types.cuh"
#include "common/vec_io.cuh"
#include "gemm/act_epilogue.hpp"

namespace baracuda::kernels {

using gemm::ActEpilogueParams;
using gemm::ActKind;

inline constexpr int kActBlock = 256;

template <ActKind kAct>
__device__ __forceinline__ float gemm_act(float x) {
  if constexpr (kAct == ActKind::kGeluErf) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else {
    return x / (1.0f + expf(-x));
  }
}

// kVec elements per step (1: scalar path).
template <class T, ActKind kAct, int kVec>
__global__ void __launch_bounds__(kActBlock) gemm_act_kernel(ActEpilogueParams p) {
  const std::int64_t per_row = p.inner / kVec;
  const std::int64_t rows = p.batch * p.outer;
  const std::int64_t total = rows * per_row;
  T* d = static_cast<T*>(p.d);
  T* aux = static_cast<T*>(p.aux);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * kActBlock + threadIdx.x; v < total;
       v += static_cast<std::int64_t>(gridDim.x) * kActBlock) {
    const std::int64_t row = v / per_row, i = (v % per_row) * kVec;
    const std::int64_t b = row / p.outer, o = row % p.outer;
    T* dp = d + b * p.d_batch_stride + o * p.d_ld + i;
    if constexpr (kVec == 1) {
      const T x = *dp;
      if (aux) aux[b * p.aux_batch_stride + o * p.aux_ld + i] = x;
      *dp = from_compute<T>(gemm_act<kAct>(to_compute(x)));
    } else {
      const Vec<T, kVec> x = load_vec<T, kVec, true>(dp);
      if (aux) store_vec<T, kVec, true>(aux + b * p.aux_batch_stride + o * p.aux_ld + i, x);
      Vec<T, kVec> y;
#pragma unroll
      for (int k = 0; k < kVec; ++k) y.v[k] = from_compute<T>(gemm_act<kAct>(to_compute(x.v[k])));
      store_vec<T, kVec, true>(dp, y);
    }
  }
}

}  // namespace baracuda::kernels
