// The quantized GEMM oracle (see baracuda/reference/gemm_quant.hpp).
#include "baracuda/reference/gemm_quant.hpp"

#include "gemm_common.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace baracuda::reference {

using namespace gemm_detail;

namespace {

// The plan's f32 store: round to nearest even into t (i8 saturating, NaN -> 0).
double store_as(DType t, float v) {
  switch (t) {
    case DType::kF32: return v;
    case DType::kF16: return f16_bits_to_f32(f32_to_f16_bits(v));
    case DType::kBF16: return bf16_bits_to_f32(f32_to_bf16_bits(v));
    case DType::kI8: {
      if (std::isnan(v)) return 0;
      const double r = std::nearbyint(static_cast<double>(v));  // default rounding: nearest even
      return std::clamp(r, -128.0, 127.0);
    }
    default: return v;
  }
}

}  // namespace

double ulp_of(DType t, double v) {
  const double a = std::fabs(v);
  switch (t) {
    case DType::kF32: {
      const float f = static_cast<float>(a);
      return static_cast<double>(std::nextafter(f, INFINITY)) - f;
    }
    case DType::kF16: return std::ldexp(1.0, std::max(a == 0 ? -14 : std::ilogb(a), -14) - 10);
    case DType::kBF16: return std::ldexp(1.0, std::max(a == 0 ? -126 : std::ilogb(a), -126) - 7);
    default: return 0;
  }
}

Expected<QuantGemmOracle> int_gemm(const IntGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                   const std::vector<float>& scale_a, const std::vector<float>& scale_b,
                                   const std::vector<float>& bias) {
  const std::int64_t M = d.m(), N = d.n(), K = d.k();
  const auto need = [](const std::vector<float>& v, std::size_t n, const char* what) -> Status {
    if (v.size() < n) return Status(Code::kInvalidArgument, std::string("reference::int_gemm: ") + what + " is too short");
    return Status::ok();
  };
  if (d.scale_a != QuantScale::kNone)
    BARACUDA_TRY(need(scale_a, d.scale_a == QuantScale::kPerRow ? M : 1, "scale_a"));
  if (d.scale_b != QuantScale::kNone)
    BARACUDA_TRY(need(scale_b, d.scale_b == QuantScale::kPerColumn ? N : 1, "scale_b"));
  if (d.bias) BARACUDA_TRY(need(bias, N, "bias"));
  QuantGemmOracle o;
  o.m = M;
  o.n = N;
  o.d.resize(M * N);
  o.bound.assign(M * N, 0.0);
  const DType t = d.d.dtype;
  for_rows(M, N * K, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < N; ++j) {
      std::int64_t acc = 0;
      for (std::int64_t k = 0; k < K; ++k)
        acc += load_as_int64(DType::kI8, a.data(), element(d.a, i, k)) * load_as_int64(DType::kI8, b.data(), element(d.b, k, j));
      double& out = o.d[i * N + j];
      if (t == DType::kI32) {
        out = static_cast<double>(acc);
        continue;
      }
      // each step rounded to f32, as the kernel's __int2float_rn / __fmul_rn / __fadd_rn
      volatile float v = static_cast<float>(acc);
      if (d.scale_a != QuantScale::kNone) v = v * scale_a[d.scale_a == QuantScale::kPerRow ? i : 0];
      if (d.scale_b != QuantScale::kNone) v = v * scale_b[d.scale_b == QuantScale::kPerColumn ? j : 0];
      if (d.bias) v = v + bias[j];
      out = store_as(t, v);
      o.bound[i * N + j] = ulp_of(t, out);
    }
  });
  return o;
}

Expected<QuantGemmOracle> fp8_gemm(const Fp8GemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                   const std::vector<float>& scale_a, const std::vector<float>& scale_b, float scale_d,
                                   const HostTensor* bias) {
  const std::int64_t M = d.m(), N = d.n(), K = d.k();
  if (static_cast<std::int64_t>(scale_a.size()) < fp8_scale_count_a(d) ||
      static_cast<std::int64_t>(scale_b.size()) < fp8_scale_count_b(d))
    return Status(Code::kInvalidArgument, "reference::fp8_gemm: too few scales");
  if (d.bias && bias == nullptr) return Status(Code::kInvalidArgument, "reference::fp8_gemm: bias is null");
  const bool block = d.scale_a == QuantScale::kBlock1x128;
  const std::int64_t kblocks = (K + 127) / 128, ldk = (kblocks + 3) / 4 * 4;
  const double u = std::ldexp(1.0, -14);
  const double g = gamma(K + 3, u) + 4 * std::ldexp(1.0, -24);
  const DType t = d.d.dtype;
  const double uo = unit_roundoff(t), tiny = smallest_subnormal(t);
  QuantGemmOracle o;
  o.m = M;
  o.n = N;
  o.d.resize(M * N);
  o.bound.resize(M * N);
  std::vector<double> row_amax(M, 0.0), row_err(M, 0.0);
  for_rows(M, N * K, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < N; ++j) {
      double value = 0, s = 0;
      for (std::int64_t kb = 0; kb < kblocks; ++kb) {
        double part = 0, part_abs = 0;
        for (std::int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) {
          const double p = load_as_double(d.a.dtype, a.data(), element(d.a, i, k)) *
                           load_as_double(d.b.dtype, b.data(), element(d.b, k, j));
          part += p;
          part_abs += std::fabs(p);
        }
        const double sc = block ? static_cast<double>(scale_a[kb * M + i]) * scale_b[(j / 128) * ldk + kb]
                                : static_cast<double>(scale_a[0]) * scale_b[0];
        value += sc * part;
        s += std::fabs(sc) * part_abs;
      }
      if (d.bias) {
        const double bj = load_as_double(d.bias_dtype(), bias->data(), j);
        value += bj;
        s += std::fabs(bj);
      }
      row_amax[i] = std::max(row_amax[i], std::fabs(value));
      row_err[i] = std::max(row_err[i], g * s);
      double want = value, err = g * s;
      if (t == DType::kE4M3) {
        want = std::clamp(value * scale_d, -448.0, 448.0);
        err *= std::fabs(scale_d);
      }
      o.d[i * N + j] = want;
      o.bound[i * N + j] = err + uo * std::fabs(want) + tiny;
    }
  });
  double amax_err = 0;
  for (std::int64_t i = 0; i < M; ++i) {
    o.amax = std::max(o.amax, row_amax[i]);
    amax_err = std::max(amax_err, row_err[i]);
  }
  o.amax_bound = amax_err + std::ldexp(1.0, -24) * o.amax;
  return o;
}

Comparison compare_quant_gemm(const HostTensor& got, const MatrixLayout& layout, const QuantGemmOracle& o) {
  Comparison c;
  std::ostringstream first;
  std::int64_t got_zero = 0, want_zero = 0;
  for (std::int64_t i = 0; i < o.m; ++i)
    for (std::int64_t j = 0; j < o.n; ++j) {
      const double g = load_as_double(layout.dtype, got.data(), element(layout, i, j));
      const double w = o.d[i * o.n + j], b = o.bound[i * o.n + j];
      ++c.checked;
      got_zero += g == 0;
      want_zero += w == 0;
      // g == w first: an overflow to +-inf in the output dtype (f16 at |acc| > 65504) is
      // exact when both sides overflow the same way, though inf - inf is NaN
      if (g != w && (std::isnan(g) || !(std::fabs(g - w) <= b))) {
        if (c.mismatches++ < 5)
          first << " (" << i << "," << j << "): got " << exact_text(g) << " want " << exact_text(w) << " +- " << b << ";";
      }
    }
  finish_comparison(c, o.m * o.n, got_zero, want_zero, first.str());
  return c;
}

}  // namespace baracuda::reference
