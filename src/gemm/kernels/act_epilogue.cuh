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
//
// gemm_act_grad_kernel (the backward composites, `cublaslt_dact`): D = D .* act'(aux) in place,
// aux the forward's saved input (pre-activation in D's dtype, or for relu a bit mask read one
// bit per element: bit p * aux_batch_stride + o * aux_ld + i). Same vector scheme over D; the
// aux loads are vectors too except for the mask. act' in f32 (tanhf, erff, expf: a few ulp),
// product rounded once to D's dtype; relu' selects D or 0 exactly.
//   gelu_tanh'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3)),
//                   k = sqrt(2 / pi), c = 0.044715
//   gelu_erf'(x)  = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
//   silu'(x)      = s (1 + x (1 - s)), s = 1 / (1 + exp(-x))
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

template <ActKind kAct>
__device__ __forceinline__ float gemm_act_grad(float x) {
  if constexpr (kAct == ActKind::kGeluTanh) {
    constexpr float k = 0.79788456080286536f, c = 0.044715f;
    const float t = tanhf(k * (x + c * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
  } else if constexpr (kAct == ActKind::kGeluErf) {
    return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
  } else {
    const float s = 1.0f / (1.0f + expf(-x));
    return s * (1.0f + x * (1.0f - s));
  }
}

// The grid-stride walk both passes share: f(d offset, aux offset) for each step of kVec
// elements (offsets in elements of D and of aux; bits for the relu mask).
template <int kVec, class F>
__device__ __forceinline__ void for_each_act_step(const ActEpilogueParams& p, F&& f) {
  const std::int64_t per_row = p.inner / kVec;
  const std::int64_t total = p.batch * p.outer * per_row;
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * kActBlock + threadIdx.x; v < total;
       v += static_cast<std::int64_t>(gridDim.x) * kActBlock) {
    const std::int64_t row = v / per_row, i = (v % per_row) * kVec;
    const std::int64_t b = row / p.outer, o = row % p.outer;
    f(b * p.d_batch_stride + o * p.d_ld + i, b * p.aux_batch_stride + o * p.aux_ld + i);
  }
}

template <class T, int kVec>
__device__ __forceinline__ Vec<T, kVec> load_step(const T* ptr) {
  if constexpr (kVec == 1) return Vec<T, 1>{{*ptr}};
  else return load_vec<T, kVec, true>(ptr);
}
template <class T, int kVec>
__device__ __forceinline__ void store_step(T* ptr, const Vec<T, kVec>& x) {
  if constexpr (kVec == 1) *ptr = x.v[0];
  else store_vec<T, kVec, true>(ptr, x);
}

// aux = D (when wanted), D = act(D); kVec elements per step (1: scalar path).
template <class T, ActKind kAct, int kVec>
__global__ void __launch_bounds__(kActBlock) gemm_act_kernel(ActEpilogueParams p) {
  T* d = static_cast<T*>(p.d);
  T* aux = static_cast<T*>(p.aux);
  for_each_act_step<kVec>(p, [&](std::int64_t at_d, std::int64_t at_aux) {
    const Vec<T, kVec> x = load_step<T, kVec>(d + at_d);
    if (aux) store_step<T, kVec>(aux + at_aux, x);
    Vec<T, kVec> y;
#pragma unroll
    for (int k = 0; k < kVec; ++k) y.v[k] = from_compute<T>(gemm_act<kAct>(to_compute(x.v[k])));
    store_step<T, kVec>(d + at_d, y);
  });
}

// D = D .* act'(aux); kVec elements of D per step (1: scalar path).
template <class T, ActKind kAct, int kVec>
__global__ void __launch_bounds__(kActBlock) gemm_act_grad_kernel(ActEpilogueParams p) {
  T* d = static_cast<T*>(p.d);
  for_each_act_step<kVec>(p, [&](std::int64_t at_d, std::int64_t at_aux) {
    const Vec<T, kVec> x = load_step<T, kVec>(d + at_d);
    Vec<T, kVec> y;
    if constexpr (kAct == ActKind::kRelu) {
      const auto* mask = static_cast<const unsigned char*>(p.aux);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const std::int64_t bit = at_aux + k;
        y.v[k] = ((mask[bit >> 3] >> (bit & 7)) & 1) ? x.v[k] : from_compute<T>(0.0f);
      }
    } else {
      const Vec<T, kVec> pre = load_step<T, kVec>(static_cast<const T*>(p.aux) + at_aux);
#pragma unroll
      for (int k = 0; k < kVec; ++k) y.v[k] = from_compute<T>(to_compute(x.v[k]) * gemm_act_grad<kAct>(to_compute(pre.v[k])));
    }
    store_step<T, kVec>(d + at_d, y);
  });
}

}  // namespace baracuda::kernels
