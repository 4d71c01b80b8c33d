// baracuda::reference for IntGemmPlan / Fp8GemmPlan (rules in baracuda/ops/gemm_quant.hpp).
//
// IntGemmPlan: the int32 product exactly (int64 sums), then the plan's f32 formula
// ((f32(acc) * sa) * sb + bias, each step in f32 round-to-nearest, no FMA) and the store's
// rounding (nearest even; i8 saturating, NaN -> 0). Tolerance: i32 and i8 bit-exact; f16,
// bf16, f32 within 1 ulp of the output dtype at the expected value (the formula is the
// same on both sides, so this is bit-exact in practice; 1 ulp leaves room for nothing but
// a differently rounded conversion, never for a wrong product).
//
// Fp8GemmPlan: A and B decoded exactly (e4m3 / e5m2 are exact in double), products and sums
// in double, the scales (per tensor, or per 1x128 / 128x128 block, each block's partial sum
// scaled by its two scales) and bias in double. Per-element bound:
//   |err| <= g * S + u_out |ref| + tiny_out,   g = (K+3) u / (1 - (K+3) u) + 4 * 2^-24,
//   u = 2^-14: the Hopper fp8 tensor cores keep about 14 bits of the running sum between
//   cuBLASLt's promotions to f32 (DeepSeek-V3 report, section 3.3.2), taken as the unit
//   roundoff of the whole sum; 4 * 2^-24: the f32 scale / bias steps;
//   S = sum_k |sa sb a_ik b_kj| (+ |bias_j|), u_out / tiny_out: unit roundoff and smallest
//   subnormal of D's dtype (bf16 2^-8 / 2^-133, f16 2^-11 / 2^-24, f32 2^-24 / 2^-149,
//   e4m3 2^-4 / 2^-9). e4m3 D is scale_d * value, saturated to +-448 (as cuBLASLt stores).
// amax: max |value| before scale_d, within max(g * S) + 2^-24 amax.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/gemm_quant.hpp"
#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Expected D (row-major M x N, the values as stored) and each element's allowed error.
struct QuantGemmOracle {
  std::int64_t m = 0, n = 0;
  std::vector<double> d, bound;
  double amax = 0, amax_bound = 0;
};

// a, b: host tensors of the descriptor's layouts; the scale vectors hold 1 / M / N values
// as the modes say (ignored when kNone), bias N values (ignored unless desc.bias).
Expected<QuantGemmOracle> int_gemm(const IntGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                   const std::vector<float>& scale_a, const std::vector<float>& scale_b,
                                   const std::vector<float>& bias);
// scale_a / scale_b: fp8_scale_count_a / _b values in the layouts of gemm_quant.hpp; bias:
// N values of desc.bias_dtype() (null unless desc.bias); scale_d used for e4m3 D.
Expected<QuantGemmOracle> fp8_gemm(const Fp8GemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                   const std::vector<float>& scale_a, const std::vector<float>& scale_b, float scale_d,
                                   const HostTensor* bias);

// Host copy of D (the descriptor's d layout) against the oracle: every element within its
// bound, NaN never passes, plus the zero-trust rule of compare.hpp.
Comparison compare_quant_gemm(const HostTensor& d, const MatrixLayout& layout, const QuantGemmOracle& o);

// The error of one value of an output dtype at `v` (1 ulp for the scaled int outputs).
double ulp_of(DType t, double v);

}  // namespace baracuda::reference
