// Int4GemmPlan's streaming decode kernel (SKU w4a16_stream): Y[M, N] = X[M, K] * dequant(W)^T
// for M <= 16, built to keep the packed-weight stream at memory speed.
//
// What: exactly the result of w4a16_gemv (int4_gemv.cuh): y[m, n] = RN(sum_k x[m, k] w(n, k)
// (+ bias[n])), w(n, k) = RN((q - z) s) in the activation dtype, products and sums in f32.
// Parallel scheme: the fragment layout, the permuted K order, the staged X slice in shared
// memory and the epilogue are those of int4_gemv.cuh (8 warps x 32 weight rows per block, one
// K slice per blockIdx.y, mma.sync m16n8k16 with weight rows as the mma's M). What differs:
//  * S chunks of 128 k per warp are in flight at once (a ring of register stages, statically
//    indexed in a fully unrolled loop; S = 3 for M <= 8, 2 for M <= 16): chunk c is computed,
//    then its registers are refilled with chunk c + S; each lane keeps 4 S 16-byte loads in
//    flight (32 rows x 64 bytes x S per warp); a stage holds the raw loads only (no
//    instruction waits on a load still in flight), expanded when its chunk is used;
//  * the first S chunks are requested before X is staged (the weight loads do not wait
//    for the __syncthreads);
//  * the weight kind is a template parameter (s4: the constant zero 8 folds away, no zero
//    loads), row pointers are computed once, the group index is a shift (host: group_shift);
//  * the launch shape (Int4GemvConfig, int4_gemm.cpp stream_config) sizes the grid to whole
//    waves of resident blocks (2 per SM: __launch_bounds__(256, 2)) with split-K where N alone
//    gives too few blocks; splits > 1 reduce deterministically (int4_splitk_reduce_kernel).
// Preconditions (select checks them): as int4_gemv.cuh, plus group_shift such that
// k >> group_shift == k / group_size for 0 <= k < K.
// Speed: bench gemm suite rows w4a16 M in {1, 16} on 28672x8192 and 4096x4096 with this SKU
// forced (--sku '*w4a16_stream*').
#pragma once

#include "gemm/kernels/int4_gemv.cuh"

namespace baracuda::gemm::kernels {

// Stages of the register ring: 3 for M <= 8 (NT = 1); 2 for M <= 16 (NT = 2: the second
// token tile's accumulators and X fragments leave no room for a third without spilling at
// the 128 registers two resident blocks per SM allow).
template <int NT>
inline constexpr int kInt4StreamStages = NT == 1 ? 3 : 2;

// Per-lane bases of the four weight rows this lane reads (rows past N clamp to N - 1) and of
// their scale rows; a row's zero points sit at the same offset from wt.zeros as its scales
// from wt.scales (both [N, G]). Two forms, because ptxas's register allocation at the 128
// registers of two blocks per SM is sensitive to it (each instance takes the one with which
// no instance spills): NT = 2 keeps 32-bit offsets (the index row * ld / 16 of the row's first
// 16-byte vector and row * G of its first scale: select keeps both below 2^31; the bases are
// kernel parameters), NT = 1 keeps pointers.
template <bool kOffsets>
struct Int4StreamRows;
template <>
struct Int4StreamRows<true> {
  std::uint32_t w[2][2], s[2][2];
  __device__ __forceinline__ void set(const Int4Weights& wt, int r, int h, std::int64_t row) {
    w[r][h] = static_cast<std::uint32_t>(row * (wt.ld_bytes / 16));
    s[r][h] = static_cast<std::uint32_t>(row * wt.groups);
  }
  __device__ __forceinline__ const uint4* vec(const Int4Weights& wt, int r, int h, std::int64_t kk) const {
    return static_cast<const uint4*>(wt.w) + (w[r][h] + static_cast<std::uint32_t>(kk >> 5));
  }
  __device__ __forceinline__ const unsigned short* scale(const Int4Weights& wt, int r, int h, std::int64_t gi) const {
    return static_cast<const unsigned short*>(wt.scales) + (s[r][h] + static_cast<std::uint32_t>(gi));
  }
  __device__ __forceinline__ const unsigned short* zero(const Int4Weights& wt, int r, int h, std::int64_t gi) const {
    return static_cast<const unsigned short*>(wt.zeros) + (s[r][h] + static_cast<std::uint32_t>(gi));
  }
};
template <>
struct Int4StreamRows<false> {
  const uint4* w[2][2];
  const unsigned short* s[2][2];
  __device__ __forceinline__ void set(const Int4Weights& wt, int r, int h, std::int64_t row) {
    w[r][h] = reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(wt.w) + row * wt.ld_bytes);
    s[r][h] = static_cast<const unsigned short*>(wt.scales) + row * wt.groups;
  }
  __device__ __forceinline__ const uint4* vec(const Int4Weights&, int r, int h, std::int64_t kk) const {
    return w[r][h] + (kk >> 5);
  }
  __device__ __forceinline__ const unsigned short* scale(const Int4Weights&, int r, int h, std::int64_t gi) const {
    return s[r][h] + gi;
  }
  __device__ __forceinline__ const unsigned short* zero(const Int4Weights& wt, int r, int h, std::int64_t gi) const {
    return static_cast<const unsigned short*>(wt.zeros) + (s[r][h] - static_cast<const unsigned short*>(wt.scales)) + gi;
  }
};

// One stage of the ring: the raw loads of a chunk (packed vectors, scale and zero bits).
// Nothing is computed from them until the chunk is used, so no instruction waits on a load
// that is still in flight (int4_stream_expand turns them into the dequantization constants).
struct Int4StreamStage {
  uint4 q[2][2];
  unsigned short s[2][2], z[2][2];
};

template <class T, bool kSigned, bool kOffsets>
__device__ __forceinline__ void int4_stream_load(Int4StreamStage& f, const Int4StreamRows<kOffsets>& rows, const Int4Weights& wt,
                                                 std::int64_t kk, bool valid, int group_shift) {
  const std::int64_t gi = kk >> group_shift;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (valid) {
        f.q[r][h] = __ldcs(rows.vec(wt, r, h, kk));
        f.s[r][h] = __ldg(rows.scale(wt, r, h, gi));
        if (!kSigned) f.z[r][h] = __ldg(rows.zero(wt, r, h, gi));
      } else {  // past the slice: X is zero there; zero scales keep the product exactly 0
        f.q[r][h] = make_uint4(0, 0, 0, 0);
        f.s[r][h] = 0;  // +0.0
        f.z[r][h] = 0;
      }
    }
}

// The stage as int4_gemv_chunk takes it: scales splatted to pairs, (B + z) pairs (z = 8: s4).
template <class T, bool kSigned>
__device__ __forceinline__ Int4Frag<T> int4_stream_expand(const Int4StreamStage& f) {
  Int4Frag<T> e;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      e.q[r][h] = f.q[r][h];
      e.c[r][h] = int4_group_const_bits<T, kSigned>(f.s[r][h], f.z[r][h]);
    }
  return e;
}

template <class T, int NT, bool kSigned>
__global__ void __launch_bounds__(kInt4GemvWarps * 32, 2) int4_stream_kernel(const Int4GemvParams p) {
  constexpr int S = kInt4StreamStages<NT>;
  extern __shared__ uint4 smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  const Int4Weights& wt = p.wt;
  const auto [g, t, rs, k0, k1, row0] = int4_decode_coords(p);
  const int gshift = p.cfg.group_shift;

  Int4StreamRows<NT == 2> rows;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) rows.set(wt, r, h, int4_lane_row(wt, row0, r, h));

  const int chunks = static_cast<int>((k1 - k0 + 127) / 128);
  Int4StreamStage f[S];
#pragma unroll
  for (int s = 0; s < S; ++s) {
    const std::int64_t kk = k0 + 128 * s + 32 * t;
    int4_stream_load<T, kSigned>(f[s], rows, wt, kk, s < chunks && kk < k1, gshift);
  }
  int4_stage_x<T>(p, xs, k0, k1);
  __syncthreads();

  float acc[2][NT][4] = {};
  for (int c0 = 0; c0 < chunks; c0 += S) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int c = c0 + s;
      if (c < chunks) {  // warp-uniform
        int4_gemv_chunk<T, NT>(acc, int4_stream_expand<T, kSigned>(f[s]), xs, rs, c, g, t, p.m, kSigned);
        if (c + S < chunks) {
          const std::int64_t kk = k0 + 128 * (c + S) + 32 * t;
          int4_stream_load<T, kSigned>(f[s], rows, wt, kk, kk < k1, gshift);
        }
      }
    }
  }
  int4_gemv_store<T, NT>(p, acc, row0, t);
}

}  // namespace baracuda::gemm::kernels
