// CPU oracle of gumbel-softmax and its backward (see gumbel_softmax.hpp).
#include "baracuda/reference/gumbel_softmax.hpp"

#include <cmath>
#include <limits>

#include "baracuda/reference/softmax.hpp"

namespace baracuda::reference {

std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key) {
  // multipliers and Weyl key increments of Philox4x32 (Salmon et al. 2011, table 2)
  const std::uint64_t mul[2] = {0xD2511F53u, 0xCD9E8D57u};
  const std::uint32_t weyl[2] = {0x9E3779B9u, 0xBB67AE85u};
  auto& c = counter;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += weyl[0];
      key[1] += weyl[1];
    }
    const std::uint64_t p0 = mul[0] * c[0], p1 = mul[1] * c[2];
    const auto hi = [](std::uint64_t p) { return static_cast<std::uint32_t>(p >> 32); };
    const auto lo = [](std::uint64_t p) { return static_cast<std::uint32_t>(p); };
    c = {hi(p1) ^ c[1] ^ key[0], lo(p1), hi(p0) ^ c[3] ^ key[1], lo(p0)};
  }
  return c;
}

double gumbel_uniform(DType t, std::uint64_t seed, std::uint64_t offset, std::int64_t i) {
  const std::uint64_t n = static_cast<std::uint64_t>(i) / 4;
  const auto w = philox4x32_10({static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n >> 32),
                                static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset >> 32)},
                               {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)})[static_cast<std::size_t>(i % 4)];
  if (t == DType::kF64) return (static_cast<double>(w) + 0.5) * 0x1p-32;
  return (static_cast<double>(w >> 9) + 0.5) * 0x1p-23;
}

namespace {

template <class C>
C nan_max(C a, C b) {
  return (b > a || b != b) ? b : a;
}

// Softmax of one row in long double (exact) and C (naive), with PyTorch's non-finite rules;
// returns the first argmax, or -1 when the row is NaN.
template <class F>
std::int64_t soft_row(const std::vector<F>& z, std::vector<F>& y) {
  const auto n = z.size();
  F m = -std::numeric_limits<F>::infinity();
  std::int64_t arg = -1;
  for (std::size_t k = 0; k < n; ++k) {
    if (z[k] > m || (arg < 0 && z[k] == m)) arg = static_cast<std::int64_t>(k);
    m = nan_max(m, z[k]);
  }
  F s = 0;
  for (F v : z) s += std::exp(v - m);
  y.resize(n);
  for (std::size_t k = 0; k < n; ++k) y[k] = std::exp(z[k] - m) / s;
  if (!(s == s) || !(m == m)) arg = -1;
  return arg;
}

template <class C>
void gumbel_rows(const GumbelSoftmaxDescriptor& d, const HostTensor& x, const HostTensor* noise, std::uint64_t seed,
                 std::uint64_t offset, GumbelSoftmaxResult& r) {
  using L = long double;
  const AxisRows a = axis_rows(d.x, d.axis);
  const DType t = d.x.dtype;
  const auto len = static_cast<std::size_t>(a.len);
  std::vector<L> ze(len), ye;
  std::vector<C> zn(len), yn;
  std::vector<double> xs(len), gs(len);
  const double depth = std::log2(static_cast<double>(len) + 1) + 4;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    for (std::size_t k = 0; k < len; ++k) {
      const std::int64_t i = a.index(row, static_cast<std::int64_t>(k));
      xs[k] = x.get(i);
      L ge;
      C gn;
      if (noise) {
        ge = noise->get(i);
        gn = static_cast<C>(ge);
      } else {
        const double u = gumbel_uniform(t, seed, offset, i);
        ge = -std::log(-std::log(static_cast<L>(u)));
        gn = -std::log(-std::log(static_cast<C>(u)));
      }
      gs[k] = static_cast<double>(ge);
      ze[k] = (static_cast<L>(xs[k]) + ge) / static_cast<L>(d.tau);
      zn[k] = (static_cast<C>(xs[k]) + gn) / static_cast<C>(d.tau);
    }
    const std::int64_t arg_e = soft_row(ze, ye), arg_n = soft_row(zn, yn);
    L m = -std::numeric_limits<L>::infinity();
    for (L v : ze) m = nan_max(m, v);
    for (std::size_t k = 0; k < len; ++k) {
      const auto i = static_cast<std::size_t>(a.index(row, static_cast<std::int64_t>(k)));
      r.z[i] = static_cast<double>(ze[k]);
      r.g[i] = gs[k];
      r.y_soft.exact[i] = static_cast<double>(ye[k]);
      r.y_soft.naive[i] = round_to(t, static_cast<double>(yn[k]));
      const double sc = std::fabs(static_cast<double>(ye[k])) *
                        (std::fabs(static_cast<double>(ze[k] - m)) + std::fabs(static_cast<double>(m)) +
                         (std::fabs(xs[k]) + std::fabs(gs[k])) / d.tau + depth);
      r.y_soft.scale[i] = std::isfinite(sc) ? sc : 0.0;
      if (d.hard) {
        r.y.exact[i] = arg_e < 0 ? nan : static_cast<std::size_t>(arg_e) == k ? 1.0 : 0.0;
        r.y.naive[i] = arg_n < 0 ? nan : static_cast<std::size_t>(arg_n) == k ? 1.0 : 0.0;
      }
    }
  }
  if (!d.hard) r.y = r.y_soft;
}

}  // namespace

Expected<GumbelSoftmaxResult> gumbel_softmax(const GumbelSoftmaxDescriptor& d, const HostTensor& x, const HostTensor* noise,
                                             std::uint64_t seed, std::uint64_t offset) {
  if (d.noise_source == GumbelNoise::kTensor && !noise)
    return Status(Code::kInvalidArgument, "gumbel_softmax reference: noise_source = kTensor needs the noise tensor");
  if (d.noise_source == GumbelNoise::kPhilox) noise = nullptr;
  GumbelSoftmaxResult r;
  const std::int64_t n = d.x.numel();
  r.y = zero_result(n);
  r.y_soft = zero_result(n);
  r.z.assign(static_cast<std::size_t>(n), 0.0);
  r.g.assign(static_cast<std::size_t>(n), 0.0);
  if (d.x.dtype == DType::kF64) gumbel_rows<double>(d, x, noise, seed, offset, r);
  else gumbel_rows<float>(d, x, noise, seed, offset, r);
  return r;
}

Expected<Result> gumbel_softmax_backward(const GumbelSoftmaxBackwardDescriptor& d, const HostTensor& grad_y,
                                         const HostTensor& y_soft) {
  auto r = softmax_backward(SoftmaxBackwardDescriptor{d.grad_y, d.y_soft, d.grad_x, d.axis, SoftmaxKind::kSoftmax}, grad_y,
                            y_soft);
  if (!r) return r;
  for (std::size_t i = 0; i < r->exact.size(); ++i) {
    r->exact[i] /= d.tau;
    r->naive[i] = round_to(d.grad_x.dtype, r->naive[i] / d.tau);
    r->scale[i] /= d.tau;
  }
  return r;
}

}  // namespace baracuda::reference
