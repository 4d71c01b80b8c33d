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
// (GPU test UnaryAllPatternsGpu), the backward forms likewise (UnaryBackwardAllPatternsGpu)
// and by UnaryBackwardGpu; f32 and f64 outputs
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

// k P(k), k = 1 / (1 + 0.3275911 t): erfc(t) = k P(k) exp(-t^2) for t >= 0 (A&S 7.1.26).
__device__ __forceinline__ float erfc_poly(float t) {
  const float k = rcp_ftz(fmaf(0.3275911f, t, 1.0f));  // argument >= 1 (inf at t = inf: k = 0)
  return fmaf(fmaf(fmaf(fmaf(1.061405429f, k, -1.453152027f), k, 1.421413741f), k, -0.284496736f), k, 0.254829592f) * k;
}

// erf(|v|) - sign restored by the caller: Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7)
// for |v| >= 1/64, the Taylor series 2/sqrt(pi) (v - v^3 / 3) below (relative error
// v^4 / 10 < 2^-25), where 1.5e-7 would be too coarse relative to erf's size.
__device__ __forceinline__ float erf_abs(float t) {
  const float p = erfc_poly(t);
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
// gelu_erf' = Phi(x) + x phi(x) with one ex2 for both: E = exp(-x^2 / 2), phi = E / sqrt(2 pi),
// and 0.5 erfc(|x| / sqrt 2) = 0.5 k P(k) E (Abramowitz & Stegun 7.1.26, the erf_abs form:
// absolute error <= 0.75e-7 in Phi, below 2^-14 of Phi above x = -3). Below x = -3 that
// error is no longer small against Phi, so Phi = phi R(|x|) there, R the Mills ratio from
// 5 levels of Laplace's continued fraction 1 / (x + 1 / (x + 2 / (x + ...))) collapsed to
// x (y^2 + 14 y + 33) / (y^3 + 15 y^2 + 45 y + 15), y = x^2 (moves gelu' by < 1e-5 relative
// for |x| >= 3; x clamped at 16, where phi is 0 in f32 anyway, so y^3 cannot overflow).
// Branch-free: every element pays 1 ex2, 2 rcp and ~15 FMAs (the former erfcf tail made
// every warp diverge on the bench's uniform [-4, 4] data). NaN gives NaN; +-inf gives NaN
// (x phi = inf * 0), as torch's formula does.
// Proven over every f16 and bf16 x (NaNs, infinities, subnormals, both zeros) with random
// grad_out by the GPU test UnaryBackwardAllPatternsGpu, and on the layout cases of
// UnaryBackwardGpu (every SKU forced).
constexpr bool has_fast16_grad(UnaryKind k) {
  return k == UnaryKind::kTanh || k == UnaryKind::kSigmoid || k == UnaryKind::kGeluErf;
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
      const float e = ex2(x * x * (-0.5f * kLog2e));
      const float pdf = e * 0.39894228040143267794f;
      const float half_erfc = 0.5f * erfc_poly(ax * 0.70710678118654752440f) * e;  // Phi(-|x|)
      const float xc = fminf(ax, 16.0f), y = xc * xc;
      const float mills = xc * fmaf(y + 14.0f, y, 33.0f) * rcp_ftz(fmaf(fmaf(y + 15.0f, y, 45.0f), y, 15.0f));
      const float cdf = x >= 0.0f ? 1.0f - half_erfc : (x > -3.0f ? half_erfc : pdf * mills);
      out[0] = g * fmaf(x, pdf, cdf);
    }
  }
};

}  // namespace baracuda::kernels
