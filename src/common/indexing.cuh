// Linear index -> per-operand element offsets for strided / broadcast layouts.
//
// The host collapses dims first (collapse_dims), so rank is small. Two index widths:
// uint32 with a multiply-high divider (fast; used when numel and every offset fit in 31
// bits) and int64 with plain division (any size). Dim order is row-major: dim rank-1 is
// innermost.
#pragma once

#include <cstdint>

namespace baracuda::kernels {

inline constexpr int kMaxDims = 8;

// Unsigned division by a runtime constant d (1 <= d < 2^31) for n < 2^31:
// q = (umulhi(n, m) + n) >> s  (Granlund & Montgomery, "Division by invariant integers").
struct FastDivmod {
  uint32_t d = 1, m = 0, s = 0;
  FastDivmod() = default;
  __host__ explicit FastDivmod(uint32_t divisor) : d(divisor) {
    while ((1ull << s) < d) ++s;
    m = static_cast<uint32_t>(((1ull << 32) * ((1ull << s) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

template <int NOPS>
struct StridedIndex32 {
  int rank = 0;
  FastDivmod size[kMaxDims];
  int32_t stride[NOPS][kMaxDims];
  __device__ __forceinline__ void offsets(uint32_t linear, int32_t (&off)[NOPS]) const {
#pragma unroll
    for (int k = 0; k < NOPS; ++k) off[k] = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < rank) {
        uint32_t q = size[d].div(linear);
        uint32_t r = linear - q * size[d].d;
        linear = q;
#pragma unroll
        for (int k = 0; k < NOPS; ++k) off[k] += static_cast<int32_t>(r) * stride[k][d];
      }
    }
  }
};

template <int NOPS>
struct StridedIndex64 {
  int rank = 0;
  int64_t size[kMaxDims];
  int64_t stride[NOPS][kMaxDims];
  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&off)[NOPS]) const {
#pragma unroll
    for (int k = 0; k < NOPS; ++k) off[k] = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < rank) {
        int64_t q = linear / size[d];
        int64_t r = linear - q * size[d];
        linear = q;
#pragma unroll
        for (int k = 0; k < NOPS; ++k) off[k] += r * stride[k][d];
      }
    }
  }
};

}  // namespace baracuda::kernels
