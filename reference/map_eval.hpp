// Internal to baracuda::reference: evaluating a map op element by element (exact, naive
// and scale per output element), reading broadcast operands in the output's order, and
// wrapping integers to a dtype's width.
#pragma once

#include <algorithm>
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

}  // namespace baracuda::reference
