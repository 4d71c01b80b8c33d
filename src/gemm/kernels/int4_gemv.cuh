// Int4GemmPlan's decode kernel (SKU w4a16_gemv): Y[M, N] = X[M, K] * dequant(W)^T for
// M <= 16, at the speed of streaming the packed weight.
//
// What: y[m, n] = RN(sum_k x[m, k] * w(n, k) + bias[n]) with w(n, k) = RN((q - z) s) in the
// activation dtype (int4_dequant.cuh), products and sums in f32 (tensor cores).
// Parallel scheme: the product is computed as Y^T = W X^T with mma.sync m16n8k16 (bf16 /
// f16 in, f32 accumulate): the mma's 16 "rows" are 16 weight rows n, its 8 "columns" are 8
// activation rows m (NT = 1 tile for M <= 8, 2 for M <= 16). A block of 8 warps owns 256
// weight rows (each warp 32: two m16 tiles) and one K slice (blockIdx.y) of `kslice`
// elements; it first stages X[:, slice] in shared memory, then each warp walks the slice in
// chunks of 128 k. Lane (g = lane / 4, t = lane % 4) loads one 16-byte vector (32 packed
// weights, k = chunk + 32t .. + 31, one group) of rows g and g + 8 of each tile: the warp
// reads 64 contiguous bytes of 8 rows per load. The next chunk's vectors are loaded before
// the current one is computed (register double buffering).
// The K order inside the mma is permuted (any permutation applied to both operands leaves
// the dot product unchanged): the dequant trick yields pairs (e_j, e_{j+4}) of each 8-element
// word, so mma step (word i, half h) takes A = pairs (2h, 2h+1) of word i of rows g, g + 8,
// and B = X at the same k: X is stored in shared memory pre-permuted per 8 elements as
// (x0 x4)(x1 x5)(x2 x6)(x3 x7), and the 16-byte vectors of a 128-k chunk in the order
// (i, t) -> slot 4i + t so that the quarter-warp's 16-byte reads hit distinct banks (the row
// stride is padded by 64 bytes for the same reason). Rows m >= M feed zeros to the mma.
// After the slice, accumulator (tile r, token tile nt) element c of lane (g, t) is
// y[m = 8nt + 2t + (c & 1), n = row0 + 16r + g + 8 (c >> 1)]: with one split it is rounded
// (+ bias) into y; with several, stored as f32 to partial[split, m, n] and
// int4_splitk_reduce_kernel adds the splits in order (deterministic) + bias and rounds.
// Preconditions (select checks them): M <= 16, K % 32 == 0, group_size a multiple of 32,
// w rows 16-byte aligned, kslice % 128 == 0, smem_bytes = M (kslice + 32) 2.
// Numerics: the tensor cores multiply bf16 / f16 exactly and accumulate in f32 (not
// necessarily round-to-nearest); tolerance in baracuda/reference/gemm_int4.hpp.
// Speed: bench lines gemm.w4a16.* M in {1, 16}, N = 28672, K = 8192.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gemm/int4_params.hpp"
#include "gemm/kernels/int4_dequant.cuh"

namespace baracuda::gemm::kernels {

template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                  std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One lane's share of a chunk: the packed vectors of rows (g, g + 8) of both tiles and their
// group constants.
template <class T>
struct Int4Frag {
  uint4 q[2][2];  // [tile][row g / g + 8]
  Int4GroupConst<T> c[2][2];
};

// Weight row (r, h) of a lane whose first row is row0 (tile r, row g / g + 8); rows past N
// read row N - 1, their results are dropped.
__device__ __forceinline__ std::int64_t int4_lane_row(const Int4Weights& wt, std::int64_t row0, int r, int h) {
  const std::int64_t row = row0 + 16 * r + 8 * h;
  return row < wt.n ? row : wt.n - 1;
}

// The block's K slice [k0, k1) (X row stride rs in shared memory) and the lane's coordinates.
struct Int4DecodeCoords {
  int g, t;
  std::int64_t rs, k0, k1, row0;
};
__device__ __forceinline__ Int4DecodeCoords int4_decode_coords(const Int4GemvParams& p) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  Int4DecodeCoords c;
  c.g = lane >> 2;
  c.t = lane & 3;
  c.rs = p.cfg.kslice + 32;
  c.k0 = static_cast<std::int64_t>(blockIdx.y) * p.cfg.kslice;
  c.k1 = c.k0 + p.cfg.kslice < p.wt.k ? c.k0 + p.cfg.kslice : p.wt.k;
  c.row0 = static_cast<std::int64_t>(blockIdx.x) * kInt4GemvRowsPerBlock + warp * kInt4GemvRowsPerWarp + c.g;
  return c;
}

template <class T>
__device__ __forceinline__ void int4_load_frag(Int4Frag<T>& f, const Int4Weights& wt, std::int64_t row0, std::int64_t kk,
                                               bool valid) {
  const auto* wbytes = static_cast<const unsigned char*>(wt.w);
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t row = int4_lane_row(wt, row0, r, h);
      if (valid) {
        f.q[r][h] = __ldcs(reinterpret_cast<const uint4*>(wbytes + row * wt.ld_bytes + kk / 2));
        f.c[r][h] = int4_group_const<T>(wt, row, kk);
      } else {  // past the slice: X is zero there; zero scales keep the product exactly 0
        f.q[r][h] = make_uint4(0, 0, 0, 0);
        f.c[r][h].zb = Int4Act<T>::splat(0.0f);
        f.c[r][h].s = Int4Act<T>::splat(0.0f);
      }
    }
}

// Stages X[0..M, k0 .. k0 + kslice) (zero past k1) into shared memory in the mma's order.
// kBatch 16-byte units per thread are loaded before any is stored (kBatch loads in flight).
// Unit u = (row m, vector j) of the slice; a thread's units are blockDim.x apart, so (m, j) is
// stepped by one precomputed (dm, dj) instead of divided per unit, in 32-bit arithmetic (the
// slice lives in shared memory: M * kslice / 8 < 2^31). With 64-bit divisions per unit the
// staging of M = 16's 64 KB slice took ~450 instructions a batch of 4 (sm_90a SASS, session 34).
template <class T, int kBatch = 1>
__device__ __forceinline__ void int4_stage_x(const Int4GemvParams& p, T* xs, std::int64_t k0, std::int64_t k1) {
  const int per_row = static_cast<int>(p.cfg.kslice / 8), rs = static_cast<int>(p.cfg.kslice) + 32;
  const int total = static_cast<int>(p.m) * per_row, klen = static_cast<int>(k1 - k0);
  const int step = static_cast<int>(blockDim.x), dm = step / per_row, dj = step - dm * per_row;
  const T* x = static_cast<const T*>(p.x) + k0;
  int m = static_cast<int>(threadIdx.x) / per_row, j = static_cast<int>(threadIdx.x) - m * per_row;
  for (int u0 = static_cast<int>(threadIdx.x); u0 < total; u0 += kBatch * step) {
    uint4 v[kBatch];
    int row[kBatch], vec[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      row[b] = m;
      vec[b] = j;
      v[b] = make_uint4(0, 0, 0, 0);
      if (u0 + b * step < total && 8 * j < klen) {
        const T* src = x + m * p.ldx + 8 * j;
        if (p.x_vec16) {
          v[b] = *reinterpret_cast<const uint4*>(src);
        } else {
          std::uint32_t e[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) e[i] = reinterpret_cast<const unsigned short*>(src)[i];
          v[b] = make_uint4(e[0] | (e[1] << 16), e[2] | (e[3] << 16), e[4] | (e[5] << 16), e[6] | (e[7] << 16));
        }
      }
      m += dm;
      j += dj;
      if (j >= per_row) {
        j -= per_row;
        ++m;
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (u0 + b * step >= total) break;
      // (x0 x1)(x2 x3)(x4 x5)(x6 x7) -> (x0 x4)(x1 x5)(x2 x6)(x3 x7)
      const uint4 perm = make_uint4(__byte_perm(v[b].x, v[b].z, 0x5410), __byte_perm(v[b].x, v[b].z, 0x7632),
                                    __byte_perm(v[b].y, v[b].w, 0x5410), __byte_perm(v[b].y, v[b].w, 0x7632));
      const unsigned jj = static_cast<unsigned>(vec[b]) % 16;  // jj = 4t + i -> slot 4i + t of its chunk
      const unsigned slot = (static_cast<unsigned>(vec[b]) / 16) * 16 + 4 * (jj % 4) + jj / 4;
      *reinterpret_cast<uint4*>(xs + row[b] * rs + slot * 8) = perm;
    }
  }
}

// The X operand of word i of chunk c (X slots as int4_stage_x) for lane (g, t): one 16-byte
// vector per 8-token tile, zeros for tokens >= m. Its (x, y) halves feed k16 step 0, (z, w) step 1.
template <class T, int NT>
__device__ __forceinline__ void int4_x_frag(uint4 (&b)[NT], const T* xs, std::int64_t rs, int c, int i, int g, int t,
                                            std::int64_t m) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int tok = nt * 8 + g;
    b[nt] = tok < m ? *reinterpret_cast<const uint4*>(xs + tok * rs + (c * 16 + 4 * i + t) * 8) : make_uint4(0, 0, 0, 0);
  }
}

// The mma A fragment of k16 step h of a word: rows g (prepared word wa, constants ca) and
// g + 8 (wb, cb), pairs 2h and 2h + 1 (the permuted K order above).
template <class T>
__device__ __forceinline__ void int4_a_frag(std::uint32_t (&a)[4], std::uint32_t wa, std::uint32_t wb, int h,
                                            const Int4GroupConst<T>& ca, const Int4GroupConst<T>& cb) {
  a[0] = int4_pair<T>(wa, 2 * h, ca);
  a[1] = int4_pair<T>(wb, 2 * h, cb);
  a[2] = int4_pair<T>(wa, 2 * h + 1, ca);
  a[3] = int4_pair<T>(wb, 2 * h + 1, cb);
}

// acc += one chunk held in f (chunk c of the slice; X slots as int4_stage_x), lane (g, t).
template <class T, int NT>
__device__ __forceinline__ void int4_gemv_chunk(float (&acc)[2][NT][4], const Int4Frag<T>& f, const T* xs, std::int64_t rs,
                                                int c, int g, int t, std::int64_t m, bool is_signed) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint4 b[NT];
    int4_x_frag<T, NT>(b, xs, rs, c, i, g, t, m);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::uint32_t* qa = reinterpret_cast<const std::uint32_t*>(&f.q[r][0]);
      const std::uint32_t* qb = reinterpret_cast<const std::uint32_t*>(&f.q[r][1]);
      const std::uint32_t wa = int4_prepare_word(qa[i], is_signed), wb = int4_prepare_word(qb[i], is_signed);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::uint32_t a[4];
        int4_a_frag<T>(a, wa, wb, h, f.c[r][0], f.c[r][1]);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const std::uint32_t b0 = h == 0 ? b[nt].x : b[nt].z, b1 = h == 0 ? b[nt].y : b[nt].w;
          mma_16816<T>(acc[r][nt], a, b0, b1);
        }
      }
    }
  }
}

// Epilogue of the decode kernels: element e of acc[r][nt] of lane (g, t) is
// (m = 8 nt + 2t + (e & 1), n = row0 + 16 r + 8 (e >> 1)) (row0 includes g): rounded (+ bias)
// into y with one split, else stored as f32 to partial[blockIdx.y, m, n].
template <class T, int NT>
__device__ __forceinline__ void int4_gemv_store(const Int4GemvParams& p, const float (&acc)[2][NT][4], std::int64_t row0,
                                                int t) {
  const Int4Weights& wt = p.wt;
  const bool direct = p.cfg.splits == 1;
  T* y = static_cast<T*>(p.y);
  const T* bias = static_cast<const T*>(p.bias);
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const std::int64_t n = row0 + 16 * r + 8 * (e >> 1);
        const std::int64_t m = 8 * nt + 2 * t + (e & 1);
        if (n >= wt.n || m >= p.m) continue;
        float v = acc[r][nt][e];
        if (direct) {
          if (bias) v = __fadd_rn(v, Int4Act<T>::to_float(bias[n]));
          y[m * p.ldy + n] = Int4Act<T>::from_float(v);
        } else {
          p.partial[(static_cast<std::int64_t>(blockIdx.y) * p.m + m) * wt.n + n] = v;
        }
      }
}

template <class T, int NT>
__global__ void __launch_bounds__(kInt4GemvWarps * 32) int4_gemv_kernel(const Int4GemvParams p) {
  extern __shared__ uint4 smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  const Int4Weights& wt = p.wt;
  const auto [g, t, rs, k0, k1, row0] = int4_decode_coords(p);
  int4_stage_x<T>(p, xs, k0, k1);
  __syncthreads();

  float acc[2][NT][4] = {};
  const int chunks = static_cast<int>((k1 - k0 + 127) / 128);
  Int4Frag<T> cur, nxt;
  int4_load_frag<T>(cur, wt, row0, k0 + 32 * t, k0 + 32 * t < k1);
  for (int c = 0; c < chunks; ++c) {
    const std::int64_t kn = k0 + 128 * (c + 1) + 32 * t;
    if (c + 1 < chunks) int4_load_frag<T>(nxt, wt, row0, kn, kn < k1);
    int4_gemv_chunk<T, NT>(acc, cur, xs, rs, c, g, t, p.m, wt.is_signed);
    cur = nxt;
  }

  int4_gemv_store<T, NT>(p, acc, row0, t);
}

// y[m, n] = RN(sum over splits s = 0, 1, ... of partial[s, m, n] (+ bias[n])), in that order.
template <class T>
__global__ void int4_splitk_reduce_kernel(const Int4GemvParams p) {
  const std::int64_t total = p.m * p.wt.n;
  T* y = static_cast<T*>(p.y);
  const T* bias = static_cast<const T*>(p.bias);
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t m = idx / p.wt.n, n = idx - m * p.wt.n;
    float v = 0.0f;
    for (int s = 0; s < p.cfg.splits; ++s) v = __fadd_rn(v, p.partial[s * total + idx]);
    if (bias) v = __fadd_rn(v, Int4Act<T>::to_float(bias[n]));
    y[m * p.ldy + n] = Int4Act<T>::from_float(v);
  }
}

}  // namespace baracuda::gemm::kernels
