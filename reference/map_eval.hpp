// Internal to baracuda::reference: evaluating a map op element by element (exact, naive
// and scale per output element), reading broadcast operands in the output's order, summing
// the gradient of a broadcast operand, and wrapping integers to a dtype's width.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {

// Evaluates f(element index, is_naive) -> value over an output of `out` layout shape, and
// scale(i) -> the error scale of element i.
// Elements are independent, so large outputs are split over a few threads (the GPU tests'
// oracle time dominates their run on the device machine).
template <class F, class S>
inline Result map_result(const TensorLayout& out, F&& f, S&& scale) {
  Result r;
  const auto n = static_cast<std::size_t>(out.numel());
  r.exact.resize(n);
  r.naive.resize(n);
  r.scale.resize(n);
  auto range = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      r.exact[i] = f(static_cast<std::int64_t>(i), std::false_type{});
      r.naive[i] = round_to(out.dtype, f(static_cast<std::int64_t>(i), std::true_type{}));
      r.scale[i] = scale(static_cast<std::int64_t>(i));
    }
  };
  const std::size_t threads = n < (std::size_t{1} << 20) ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency() / 4, 1, 4);
  if (threads == 1) {
    range(0, n);
    return r;
  }
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(range, t * chunk, std::min(n, (t + 1) * chunk));
  for (auto& th : pool) th.join();
  return r;
}

// Value of `t` (viewed broadcast into `out`'s shape) at out's logical index i.
struct BroadcastReader {
  const HostTensor& t;
  TensorLayout view;
  BroadcastReader(const HostTensor& tensor, const TensorLayout& out)
      : t(tensor), view(broadcast_to(tensor.layout(), out.rank, out.shape, "operand").value()) {}
  double operator()(std::int64_t i) const { return load_as_double(view.dtype, t.data(), offset_of(view, i)); }
  std::int64_t int_at(std::int64_t i) const { return load_as_int64(view.dtype, t.data(), offset_of(view, i)); }
};

// v reduced to t's width: two's complement wrap, sign-extended for the signed dtypes.
inline std::int64_t wrap_to(DType t, std::uint64_t v) {
  const int bits = dtype_bits(t);
  if (bits >= 64) return static_cast<std::int64_t>(v);
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  v &= mask;
  if (dtype_info(t).is_signed && ((v >> (bits - 1)) & 1)) v |= ~mask;
  return static_cast<std::int64_t>(v);
}

template <class Naive>
using NaiveType = std::conditional_t<Naive::value, float, double>;

// The gradient of an operand that was broadcast to `out`: term(i, is_naive) of every output
// element i summed into the operand's element it was read from, in the output's logical
// order. Exact summed in long double, scale (|term|, non-finite terms left out) in double;
// naive: a sequential double sum for an f64 gradient (so its rounding error enters the
// tolerance), else float terms summed in float (the kernels' f32 accumulation).
template <class Term>
inline Result sum_to_operand(const TensorLayout& out, const TensorLayout& operand, DType grad_dtype, Term&& term) {
  const TensorLayout view =
      broadcast_to(TensorLayout::contiguous(operand.dtype, operand.shape_span()), out.rank, out.shape, "operand").value();
  const auto n = static_cast<std::size_t>(operand.numel());
  const bool f64 = grad_dtype == DType::kF64;
  Result r;
  r.scale.assign(n, 0.0);
  std::vector<long double> exact(n, 0.0L);
  std::vector<double> naive_d(f64 ? n : 0, 0.0);
  std::vector<float> naive_f(f64 ? 0 : n, 0.f);
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const auto xi = static_cast<std::size_t>(offset_of(view, i));
    const double e = term(i, std::false_type{});
    exact[xi] += e;
    r.scale[xi] += std::isfinite(e) ? std::fabs(e) : 0.0;
    if (f64) naive_d[xi] += e;
    else naive_f[xi] += static_cast<float>(term(i, std::true_type{}));
  }
  r.exact.assign(exact.begin(), exact.end());
  r.naive.resize(n);
  for (std::size_t i = 0; i < n; ++i) r.naive[i] = round_to(grad_dtype, f64 ? naive_d[i] : naive_f[i]);
  return r;
}

}  // namespace baracuda::reference
