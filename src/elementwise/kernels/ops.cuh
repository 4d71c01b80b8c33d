// Elementwise functors: one struct per op, evaluated in the compute type C (float or
// double). Formulas follow PyTorch's CUDA kernels (see docs/semantics.md), with no fast
// math: erf/tanh/exp are the full-precision library functions.
#pragma once

#include <cuda_runtime.h>

#include "baracuda/ops/elementwise.hpp"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

// ------------------------------------------------------------------------ unary forward
template <UnaryKind K>
struct UnaryOp {
  static constexpr int kIn = 1, kOut = 1;
  static constexpr int kInFlight = (K == UnaryKind::kRelu || K == UnaryKind::kExp) ? 16 : 32;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    const C v = x[0];
    if constexpr (K == UnaryKind::kRelu) {
      y[0] = v != v ? v : (v > C(0) ? v : C(0));  // NaN propagates (torch.relu)
    } else if constexpr (K == UnaryKind::kGeluErf) {
      y[0] = C(0.5) * v * (C(1) + erf(v * C(0.70710678118654752440)));
    } else if constexpr (K == UnaryKind::kGeluTanh) {
      const C inner = C(0.79788456080286535588) * (v + C(0.044715) * v * v * v);
      y[0] = C(0.5) * v * (C(1) + tanh(inner));
    } else if constexpr (K == UnaryKind::kSilu) {
      y[0] = v / (C(1) + exp(-v));
    } else if constexpr (K == UnaryKind::kExp) {
      y[0] = exp(v);
    }
  }
};

// gelu (erf form) for f16 / bf16 outputs: erf from Abramowitz & Stegun 7.1.26
// (|error| <= 1.5e-7, far below half an ulp of a 16-bit result), evaluated with one
// approximate reciprocal and one exp2 (MUFU). It keeps the bf16 gelu memory-bound on H200
// (3.9-4.0 TB/s against 3.2 TB/s with erff; playground/elementwise/map_variants.cu);
// f32 and f64 outputs keep the library erf. Exhaustively checked over every f16 and bf16
// input against the oracle's tolerance.
struct GeluErfLowPrecisionOp {
  static constexpr int kIn = 1, kOut = 1;
  __device__ __forceinline__ static float ex2_approx(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
  }
  __device__ __forceinline__ static float rcp_approx(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
  }
  __device__ __forceinline__ void operator()(const float* x, float* y) const {
    const float v = x[0], t = fabsf(v) * 0.70710678118654752440f;
    const float k = rcp_approx(fmaf(0.3275911f, t, 1.0f));
    const float p =
        fmaf(fmaf(fmaf(fmaf(1.061405429f, k, -1.453152027f), k, 1.421413741f), k, -0.284496736f), k, 0.254829592f) * k;
    const float e = ex2_approx(v * v * -0.72134752044448170368f);  // exp(-v^2 / 2)
    const float erf_abs = fmaf(-p, e, 1.0f);                        // erf(|v| / sqrt 2)
    const float hv = 0.5f * v;
    y[0] = fmaf(hv, copysignf(erf_abs, v), hv);  // 0.5 v (1 + erf(v / sqrt 2)); NaN and -inf give NaN as torch
  }
};

// ------------------------------------------------------------------------ unary backward
// in: grad_out, x   out: grad_in
template <UnaryKind K>
struct UnaryGradOp {
  static constexpr int kIn = 2, kOut = 1;
  static constexpr int kInFlight = K == UnaryKind::kRelu ? 16 : 64;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    const C g = in[0], x = in[1];
    if constexpr (K == UnaryKind::kRelu) {
      out[0] = x <= C(0) ? C(0) : g;  // torch threshold_backward: NaN input passes grad
    } else if constexpr (K == UnaryKind::kGeluErf) {
      const C cdf = C(0.5) * (C(1) + erf(x * C(0.70710678118654752440)));
      const C pdf = exp(C(-0.5) * x * x) * C(0.39894228040143267794);  // 1/sqrt(2 pi)
      out[0] = g * (cdf + x * pdf);
    } else if constexpr (K == UnaryKind::kGeluTanh) {
      const C kBeta = C(0.79788456080286535588), kKappa = C(0.044715);
      const C x2 = x * x;
      const C t = tanh(kBeta * (x + kKappa * x2 * x));
      const C left = C(0.5) * x, right = C(1) + t;
      const C dleft = C(0.5) * right;
      const C dright = left * (C(1) - t * t) * kBeta * (C(1) + C(3) * kKappa * x2);
      out[0] = g * (dleft + dright);
    } else if constexpr (K == UnaryKind::kSilu) {
      const C s = C(1) / (C(1) + exp(-x));
      out[0] = g * s * (C(1) + x * (C(1) - s));
    } else if constexpr (K == UnaryKind::kExp) {
      out[0] = g * exp(x);
    }
  }
};

// ------------------------------------------------------------------------ binary forward
template <BinaryKind K, class C>
__device__ __forceinline__ C binary_apply(C a, C b) {
  if constexpr (K == BinaryKind::kAdd) return a + b;
  else if constexpr (K == BinaryKind::kSub) return a - b;
  else if constexpr (K == BinaryKind::kMul) return a * b;
  else return a / b;
}

template <BinaryKind K>
struct BinaryOp {
  static constexpr int kIn = 2, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_apply<K>(in[0], in[1]);
  }
};

// ------------------------------------------------------------------------ binary backward
// d(out)/d(a) * g and d(out)/d(b) * g, torch's formulas.
template <BinaryKind K, class C>
__device__ __forceinline__ C binary_grad_a(C g, C a, C b) {
  (void)a;
  if constexpr (K == BinaryKind::kAdd || K == BinaryKind::kSub) return g;
  else if constexpr (K == BinaryKind::kMul) return g * b;
  else return g / b;
}
template <BinaryKind K, class C>
__device__ __forceinline__ C binary_grad_b(C g, C a, C b) {
  if constexpr (K == BinaryKind::kAdd) return g;
  else if constexpr (K == BinaryKind::kSub) return -g;
  else if constexpr (K == BinaryKind::kMul) return g * a;
  else return -g * a / (b * b);
}

// in: grad_out (and a, b when the kind reads them)   out: grad_a and/or grad_b
// (Which: 0 = a, 1 = b, 2 = both)
template <BinaryKind K, int Which>
struct BinaryGradOp {
  static constexpr int kIn = elementwise::binary_grad_reads_inputs(K) ? 3 : 1;
  static constexpr int kOut = Which == 2 ? 2 : 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    const C g = in[0];
    const C a = kIn == 3 ? in[kIn == 3 ? 1 : 0] : C(0);
    const C b = kIn == 3 ? in[kIn == 3 ? 2 : 0] : C(0);
    if constexpr (Which == 0) out[0] = binary_grad_a<K>(g, a, b);
    else if constexpr (Which == 1) out[0] = binary_grad_b<K>(g, a, b);
    else {
      out[0] = binary_grad_a<K>(g, a, b);
      out[1] = binary_grad_b<K>(g, a, b);
    }
  }
};

// ------------------------------------------------------------------------ cast
struct CastOp {
  static constexpr int kIn = 1, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = x[0];
  }
};

}  // namespace baracuda::kernels
