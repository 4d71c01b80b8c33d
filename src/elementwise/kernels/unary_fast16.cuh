// Fast forms of the transcendental unary kinds for f16 / bf16 outputs (contiguous path).
//
// A 16-bit result keeps 8 (bf16) or 11 (f16) significant bits, so the f32 math under it
// needs ~2^-14 relative accuracy, not the library's 1-2 ulp of f32. The MUFU approximations
// (ex2.approx, lg2.approx, rcp.approx: 2^-22 relative or better) are that accurate and
// cost one instruction each, where expf / logf / log1pf / erff cost 10-40; with them these
// kinds stay memory-bound on the H200 (bf16 16384x8192: log and erf were at 83% of the copy
// bandwidth, softplus and mish at 50%). The non-ftz forms keep subnormal inputs and results
// (bf16 shares f32's exponent range).
//
// Each forward form is proven over every f16 and bf16 input against the oracle's tolerance
// (GPU test UnaryAllPatternsGpu), the backward forms by UnaryBackwardGpu; f32 and f64 outputs
// keep the library math of unary_math.cuh.
#pragma once

#include <cuda_runtime.h>

#include "baracuda/ops/elementwise.hpp"
#include "common/mufu.cuh"
#include "elementwise/kernels/unary_math.cuh"

namespace baracuda::kernels {

namespace fast16 {
using namespace mufu;  // ex2, lg2, rcp (+ _ftz), kLog2e, kLn2: common/mufu.cuh

// log1p(e) for e >= 0 (e = exp(x) in softplus): e (1 - e / 2) below 2^-10 (error e^3 / 3),
// else log2(1 + e) ln 2, where rounding 1 + e costs at most 2^-24 / e <= 2^-14 relative.
__device__ __forceinline__ float log1p_of_exp(float e) {
  return e < 0.0009765625f ? e * fmaf(-0.5f, e, 1.0f) : lg2_ftz(1.0f + e) * kLn2;  // 1 + e >= 1
}

// erf(|v|) - sign restored by the caller: Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7)
// for |v| >= 1/64, the Taylor series 2/sqrt(pi) (v - v^3 / 3) below (relative error
// v^4 / 10 < 2^-25), where 1.5e-7 would be too coarse relative to erf's size.
__device__ __forceinline__ float erf_abs(float t) {
  const float k = rcp_ftz(fmaf(0.3275911f, t, 1.0f));  // argument >= 1
  const float p =
      fmaf(fmaf(fmaf(fmaf(1.061405429f, k, -1.453152027f), k, 1.421413741f), k, -0.284496736f), k, 0.254829592f) * k;
  const float far = fmaf(-p, ex2_ftz(-t * t * kLog2e), 1.0f);  // a subnormal term is lost against 1 anyway
  const float near = t * fmaf(-0.37612638903183752f, t * t, 1.12837916709551257390f);
  return t < 0.015625f ? near : far;
}
}  // namespace fast16

constexpr bool has_fast16(UnaryKind k) {
  return k == UnaryKind::kLog || k == UnaryKind::kLog2 || k == UnaryKind::kErf || k == UnaryKind::kGeluErf ||
         k == UnaryKind::kSoftplus || k == UnaryKind::kMish;
}

// Instantiated only where has_fast16(K) (a static_assert would fire in the discarded
// branches of the instance files' kind switch, whose types are not dependent).
template <UnaryKind K>
struct UnaryFast16Op {
  static constexpr int kIn = 1, kOut = 1;
  float a = 0, b = 0;  // softplus: beta, threshold
  __device__ __forceinline__ void operator()(const float* x, float* y) const {
    using namespace fast16;
    const float v = x[0];
    if constexpr (K == UnaryKind::kLog) {
      y[0] = lg2(v) * kLn2;
    } else if constexpr (K == UnaryKind::kLog2) {
      y[0] = lg2(v);
    } else if constexpr (K == UnaryKind::kErf) {
      y[0] = copysignf(erf_abs(fabsf(v)), v);  // NaN stays NaN (every comparison false -> far form of NaN)
    } else if constexpr (K == UnaryKind::kGeluErf) {
      const float hv = 0.5f * v;
      y[0] = fmaf(hv, copysignf(erf_abs(fabsf(v) * 0.70710678118654752440f), v), hv);  // NaN and -inf give NaN as torch
    } else if constexpr (K == UnaryKind::kSoftplus) {
      const float bx = v * a;  // torch: x when beta x > threshold, else log1p(exp(beta x)) / beta
      y[0] = bx > b ? v : log1p_of_exp(ex2(bx * kLog2e)) * rcp(a);  // rcp(a): same for every element
    } else if constexpr (K == UnaryKind::kMish) {
      // tanh(log(1 + e)) = n / (n + 2) with n = e (e + 2), e = exp(x): no log and no tanh;
      // from x > 15 the factor is 1 in f32 (and n would overflow at x > 44)
      const float e = ex2(v * kLog2e), n = e * (e + 2.0f);
      y[0] = v > 15.0f ? v : v * n * rcp_ftz(n + 2.0f);  // n + 2 >= 2
    }
  }
};

// Backward forms (in: grad_out g, x): tanh' = 1 - tanh^2 = 4e / (1 + e)^2 with
// e = exp(-2|x|), and sigmoid' = s (1 - s) = e / (1 + e)^2 with e = exp(-|x|): no
// cancellation anywhere (1 - t^2 loses every bit as |x| grows), one ex2 and one rcp.
// e keeps its subnormals (the gradient of a large |x| is tiny, not zero); (1 + e)^2 is in
// [1, 4]. Both give 0 at +-inf and NaN at NaN, as torch.
//
// gelu_erf' = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) by one ex2. Phi from the
// fast erf above x = -3, where its absolute error (0.75e-7) is below 2^-14 of Phi (>= 1.3e-3);
// below, 0.5 erfc(|x| / sqrt 2) from the library's erfcf, whose tail keeps its relative
// accuracy (A&S 7.1.26 does not: its error is absolute). A warp pays for erfcf only when one
// of its elements is below -3. NaN gives NaN; -inf gives NaN (0 + -inf * 0), +inf NaN
// (1 + inf * 0), as torch's formula does.
// Off unless built with -DBARACUDA_FAST16_GRAD=ON (CMake option): these forms have not yet run
// on a GPU; turn the default on once UnaryBackwardGpu passes with them on the H200.
constexpr bool has_fast16_grad(UnaryKind k) {
#ifdef BARACUDA_FAST16_GRAD
  return k == UnaryKind::kTanh || k == UnaryKind::kSigmoid || k == UnaryKind::kGeluErf;
#else
  (void)k;
  return false;
#endif
}

template <UnaryKind K>
struct UnaryFast16GradOp {
  static constexpr int kIn = 2, kOut = 1;
  static constexpr int kInFlight = 32;
  __device__ __forceinline__ void operator()(const float* in, float* out) const {
    using namespace fast16;
    const float g = in[0], ax = fabsf(in[1]);
    if constexpr (K == UnaryKind::kTanh) {
      const float e = ex2(ax * (-2.0f * kLog2e)), d = 1.0f + e;
      out[0] = g * (4.0f * e) * rcp_ftz(d * d);
    } else if constexpr (K == UnaryKind::kSigmoid) {
      const float e = ex2(ax * -kLog2e), d = 1.0f + e;
      out[0] = g * e * rcp_ftz(d * d);
    } else if constexpr (K == UnaryKind::kGeluErf) {
      const float x = in[1];
      const float pdf = ex2(x * x * (-0.5f * kLog2e)) * 0.39894228040143267794f;
      const float t = ax * 0.70710678118654752440f;
      const float cdf = x > -3.0f ? 0.5f + 0.5f * copysignf(erf_abs(t), x) : 0.5f * erfcf(t);
      out[0] = g * fmaf(x, pdf, cdf);
    }
  }
};

}  // namespace baracuda::kernels
