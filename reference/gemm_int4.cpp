// The Int4GemmPlan oracle and the checkpoint unpacking (see baracuda/reference/gemm_int4.hpp).
#include "baracuda/reference/gemm_int4.hpp"

#include <cmath>

#include "gemm_common.hpp"

namespace baracuda::reference {

using namespace gemm_detail;

namespace {

// Element (n, k) of w: row-major (row n at element n ld), or tiled (gemm_int4.hpp): 1 KiB
// units of 16 rows x 128 k, unit (n / 16, k / 128) the (n / 16) (K / 128) + k / 128-th; in a
// unit, 64 16-byte vectors of 32 elements, vector 32 (r / 8) + 4 (r % 8) + (k % 128) / 32
// for row r = n % 16; in a vector, element e = k % 32 in nibble e % 2 of byte e / 2.
int nibble_at(const HostTensor& w, const Int4GemmDescriptor& d, std::int64_t n, std::int64_t k) {
  const auto* bytes = static_cast<const unsigned char*>(w.data());
  const MatrixLayout& l = d.w;
  std::int64_t byte = 0;
  int shift = 0;
  if (d.w_layout == Int4WeightLayout::kTiled16x128) {
    const std::int64_t unit = (n / 16) * (d.k() / 128) + k / 128, r = n % 16;
    const std::int64_t vec = 32 * (r / 8) + 4 * (r % 8) + (k % 128) / 32, e = k % 32;
    byte = unit * 1024 + vec * 16 + e / 2;
    shift = 4 * static_cast<int>(e % 2);
  } else {
    const std::int64_t e = n * l.ld + k;
    byte = e / 2;
    shift = 4 * static_cast<int>(e % 2);
  }
  const int v = (bytes[byte] >> shift) & 0xF;
  return l.dtype == DType::kS4 && v >= 8 ? v - 16 : v;
}

double tiny_weight(DType act) { return act == DType::kF16 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -134); }

}  // namespace

std::vector<double> int4_dequant(const Int4GemmDescriptor& d, const HostTensor& w, const HostTensor& scales,
                                 const HostTensor* zeros) {
  const std::int64_t N = d.n(), K = d.k(), G = d.groups();
  std::vector<double> out(static_cast<std::size_t>(N * K));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      const std::int64_t gi = n * G + k / d.group_size;
      const double z = d.zeros ? zeros->get(gi) : 0.0;
      out[n * K + k] = (nibble_at(w, d, n, k) - z) * scales.get(gi);
    }
  return out;
}

Expected<QuantGemmOracle> int4_gemm(const Int4GemmDescriptor& d, const HostTensor& x, const HostTensor& w,
                                    const HostTensor& scales, const HostTensor* zeros, const HostTensor* bias) {
  if (d.zeros && zeros == nullptr) return Status(Code::kInvalidArgument, "reference::int4_gemm: zeros is null");
  if (d.bias && bias == nullptr) return Status(Code::kInvalidArgument, "reference::int4_gemm: bias is null");
  const std::int64_t M = d.m(), N = d.n(), K = d.k();
  const DType t = d.x.dtype;
  const std::vector<double> wd = int4_dequant(d, w, scales, zeros);
  const double uw = unit_roundoff(t), g = gamma(2 * (K + 16), std::ldexp(1.0, -24));
  const double uo = unit_roundoff(t), tiny = smallest_subnormal(t), tw = tiny_weight(t);
  QuantGemmOracle o;
  o.m = M;
  o.n = N;
  o.d.resize(M * N);
  o.bound.resize(M * N);
  for_rows(M, N * K, [&](std::int64_t i) {
    std::vector<double> xr(static_cast<std::size_t>(K));
    double xabs = 0;
    for (std::int64_t k = 0; k < K; ++k) {
      xr[k] = load_as_double(t, x.data(), element(d.x, i, k));
      xabs += std::fabs(xr[k]);
    }
    for (std::int64_t j = 0; j < N; ++j) {
      double v = 0, s = 0;
      const double* wr = wd.data() + j * K;
      for (std::int64_t k = 0; k < K; ++k) {
        v += xr[k] * wr[k];
        s += std::fabs(xr[k] * wr[k]);
      }
      if (d.bias) {
        const double b = bias->get(j);
        v += b;
        s += std::fabs(b);
      }
      o.d[i * N + j] = v;
      o.bound[i * N + j] = 1.01 * ((uw + g) * s + uo * std::fabs(v) + tw * xabs) + tiny;
    }
  });
  return o;
}

Int4Checkpoint int4_unpack_checkpoint(const Int4RepackSource& src) {
  static constexpr int kReverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // AWQ: column 8c + j is nibble kReverse[j]
  const std::int64_t K = src.k, N = src.n, G = K / src.group_size;
  const bool gptq = src.format == Int4CheckpointFormat::kGptq;
  const auto u32 = [](std::int32_t v) { return static_cast<std::uint32_t>(v); };
  Int4Checkpoint c;
  c.q.resize(static_cast<std::size_t>(N * K));
  c.zero.resize(static_cast<std::size_t>(N * G));
  c.scale_bits.resize(static_cast<std::size_t>(N * G));
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t n = 0; n < N; ++n) {
      const std::uint32_t word = gptq ? u32(src.qweight[(k / 8) * N + n]) : u32(src.qweight[k * (N / 8) + n / 8]);
      const int shift = gptq ? 4 * static_cast<int>(k % 8) : 4 * kReverse[n % 8];
      c.q[n * K + k] = static_cast<int>((word >> shift) & 0xF);
    }
  for (std::int64_t gi = 0; gi < G; ++gi)
    for (std::int64_t n = 0; n < N; ++n) {
      const std::uint32_t word = u32(src.qzeros[gi * (N / 8) + n / 8]);
      const int shift = 4 * (gptq ? static_cast<int>(n % 8) : kReverse[n % 8]);
      c.zero[n * G + gi] = static_cast<int>((word >> shift) & 0xF) + (gptq && src.gptq_zero_plus_one ? 1 : 0);
      c.scale_bits[n * G + gi] = src.scales[gi * N + n];
    }
  return c;
}

}  // namespace baracuda::reference
