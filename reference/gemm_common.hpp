// Helpers of the GEMM oracles written once (reference/gemm.cpp, reference/gemm_quant.cpp):
// the dtypes' unit roundoff and smallest subnormal, the classic dot-product bound gamma_n,
// element offsets of a MatrixLayout, and the row-parallel loop (the GPU tests check 2048^3).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "baracuda/core/tensor.hpp"

namespace baracuda::reference::gemm_detail {

// u of a dtype (0 for integer types).
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::kF64: return std::ldexp(1.0, -53);
    case DType::kF32: return std::ldexp(1.0, -24);
    case DType::kF16: return std::ldexp(1.0, -11);
    case DType::kBF16: return std::ldexp(1.0, -8);
    case DType::kE4M3: return std::ldexp(1.0, -4);
    default: return 0;
  }
}
inline double smallest_subnormal(DType t) {
  switch (t) {
    case DType::kF64: return 4.9e-324;
    case DType::kF32: return std::ldexp(1.0, -149);
    case DType::kF16: return std::ldexp(1.0, -24);
    case DType::kBF16: return std::ldexp(1.0, -133);
    case DType::kE4M3: return std::ldexp(1.0, -9);
    default: return 0;
  }
}
// gamma_n = n u / (1 - n u): the classic bound on a length-n sum of products in precision u.
inline double gamma(std::int64_t n, double u) {
  const double nu = static_cast<double>(n) * u;
  return nu / (1 - nu);
}

// Offset of element (i, j) of m (its buffer's order and ld).
inline std::int64_t element(const MatrixLayout& m, std::int64_t i, std::int64_t j) {
  return m.order == MatrixOrder::kRowMajor ? i * m.ld + j : j * m.ld + i;
}

// Runs f(begin, end) over [0, n) on up to 16 threads (one thread for small work).
template <class F>
void parallel_rows(std::int64_t n, std::int64_t work_per_row, F&& f) {
  const std::int64_t work = n * work_per_row;
  const std::int64_t threads =
      work < (std::int64_t{1} << 22) ? 1 : std::clamp<std::int64_t>(std::thread::hardware_concurrency(), 1, 16);
  if (threads == 1) {
    f(std::int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  const std::int64_t chunk = (n + threads - 1) / threads;
  for (std::int64_t t = 0; t < threads; ++t) pool.emplace_back(f, std::min(n, t * chunk), std::min(n, (t + 1) * chunk));
  for (auto& th : pool) th.join();
}
// f(i) for each row i, as above.
template <class F>
void for_rows(std::int64_t n, std::int64_t work_per_row, F&& f) {
  parallel_rows(n, work_per_row, [&f](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) f(i);
  });
}

}  // namespace baracuda::reference::gemm_detail
