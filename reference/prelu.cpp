// CPU oracle of PReLU (see prelu.hpp).
#include "baracuda/reference/prelu.hpp"

#include <cmath>
#include <vector>

namespace baracuda::reference {

template <class C> C prelu_value(C x, C w) { return x > C(0) ? x : w * x; }
template <class C> C prelu_grad_x(C g, C x, C w) { return x > C(0) ? g : w * g; }
template <class C> C prelu_grad_w_term(C g, C x) { return x > C(0) ? C(0) : x * g; }
template float prelu_value<float>(float, float);
template double prelu_value<double>(double, double);
template float prelu_grad_x<float>(float, float, float);
template double prelu_grad_x<double>(double, double, double);
template float prelu_grad_w_term<float>(float, float);
template double prelu_grad_w_term<double>(double, double);

namespace {
// Channel of x's logical element i (0 for a single weight).
struct ChannelOf {
  std::int64_t channels = 1, inner = 1;
  std::int64_t operator()(std::int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};
ChannelOf channel_of(const TensorLayout& x, const TensorLayout& w) {
  ChannelOf c;
  if (w.numel() != 1 && x.rank >= 2) {
    c.channels = x.shape[1];
    for (int d = 2; d < x.rank; ++d) c.inner *= x.shape[d];
  }
  return c;
}
}  // namespace

Expected<Result> prelu(const PReluDescriptor& d, const HostTensor& x, const HostTensor& weight) {
  const ChannelOf ch = channel_of(d.x, d.weight);
  const bool f64 = d.y.dtype == DType::kF64;
  const auto n = static_cast<std::size_t>(d.x.numel());
  Result r;
  r.exact.resize(n);
  r.naive.resize(n);
  r.scale.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double xv = x.get(static_cast<std::int64_t>(i)), wv = weight.get(ch(static_cast<std::int64_t>(i)));
    r.exact[i] = prelu_value<double>(xv, wv);
    r.naive[i] = round_to(d.y.dtype, f64 ? r.exact[i] : prelu_value<float>(static_cast<float>(xv), static_cast<float>(wv)));
  }
  return r;
}

Expected<PReluGrads> prelu_backward(const PReluBackwardDescriptor& d, const HostTensor& g, const HostTensor& x,
                                    const HostTensor& weight) {
  const ChannelOf ch = channel_of(d.x, d.weight);
  const bool f64 = d.x.dtype == DType::kF64;
  const DType t = d.x.dtype;
  const auto n = static_cast<std::size_t>(d.x.numel());
  const auto nw = static_cast<std::size_t>(d.weight.numel());
  PReluGrads out;
  // exact in long double, so that an f64 gradient's naive (a sequential double sum) carries
  // its own rounding error into the tolerance as for the other dtypes
  std::vector<long double> exact_w(nw, 0.0L);
  std::vector<double> scale_w(nw, 0.0), naive_d(nw, 0.0);
  std::vector<float> naive_f(nw, 0.0f);
  if (d.compute_grad_x) {
    out.grad_x.exact.resize(n);
    out.grad_x.naive.resize(n);
    out.grad_x.scale.assign(n, 0.0);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<std::size_t>(ch(static_cast<std::int64_t>(i)));
    const double gv = g.get(static_cast<std::int64_t>(i)), xv = x.get(static_cast<std::int64_t>(i));
    const double wv = weight.get(static_cast<std::int64_t>(c));
    if (d.compute_grad_x) {
      out.grad_x.exact[i] = prelu_grad_x<double>(gv, xv, wv);
      out.grad_x.naive[i] = round_to(t, f64 ? out.grad_x.exact[i]
                                            : prelu_grad_x<float>(static_cast<float>(gv), static_cast<float>(xv),
                                                                  static_cast<float>(wv)));
    }
    const double term = prelu_grad_w_term<double>(gv, xv);
    exact_w[c] += term;
    scale_w[c] += std::fabs(term);
    if (f64) naive_d[c] += term;
    else naive_f[c] += prelu_grad_w_term<float>(static_cast<float>(gv), static_cast<float>(xv));
  }
  if (d.compute_grad_weight) {
    Result& r = out.grad_weight;
    r.exact.assign(exact_w.begin(), exact_w.end());
    r.scale.resize(nw);
    r.naive.resize(nw);
    for (std::size_t c = 0; c < nw; ++c) {
      r.scale[c] = std::isfinite(scale_w[c]) ? scale_w[c] : 0.0;
      r.naive[c] = round_to(t, f64 ? naive_d[c] : naive_f[c]);
    }
  }
  return out;
}

}  // namespace baracuda::reference
