// Elementwise functors: one struct per op, evaluated in the compute type C (float or
// double). Formulas follow PyTorch's CUDA kernels (see docs/semantics.md), with no fast
// math: erf/tanh/exp are the full-precision library functions.
#pragma once

#include <cuda_runtime.h>

#include "baracuda/ops/elementwise.hpp"
#include "elementwise/kernels/unary_math.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

// ------------------------------------------------------------------------ unary
// Per-kind functors (contiguous kernels) and run-time-kind functors (rows / strided
// kernels); the math is in unary_math.cuh. Scalars travel as doubles and convert to the
// compute type once per thread.
template <UnaryKind K>
struct UnaryFwdOp {
  static constexpr int kIn = 1, kOut = 1;
  static constexpr int kInFlight = unary_is_light(K) ? 16 : 32;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_fwd<K>(x[0], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

template <UnaryKind K>
struct UnaryGradOp {  // in: grad_out, x   out: grad_in
  static constexpr int kIn = 2, kOut = 1;
  static constexpr int kInFlight = unary_is_light(K) ? 16 : 64;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = unary_grad<K>(in[0], in[1], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

struct UnaryDynOp {
  static constexpr int kIn = 1, kOut = 1;
  UnaryKind kind;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_fwd_dyn(kind, x[0], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

struct UnaryDynGradOp {
  static constexpr int kIn = 2, kOut = 1;
  UnaryKind kind;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = unary_grad_dyn(kind, in[0], in[1], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

template <UnaryKind K>
struct UnaryIntOp {  // integer kinds, computed in the integer type
  static constexpr int kIn = 1, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_int<K>(x[0]);
  }
};

template <UnaryKind K>
struct UnaryPredicateOp {  // isnan, isinf, isfinite, logical_not -> 0 / 1, stored as bool
  static constexpr int kIn = 1, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_predicate<K>(x[0]);
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

// Binary functors: elementwise/kernels/binary_ops.cuh.

}  // namespace baracuda::kernels
