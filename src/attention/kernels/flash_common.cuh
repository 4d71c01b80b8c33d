// Building blocks of the flash SDPA kernels (flash_fwd.cuh, flash_bwd.cuh), sm_80+.
//
// What: on top of the warp-level tensor-core pieces of mma_fragments.cuh (cp.async 16-byte
// copies with zero fill, ldmatrix x4 / x4.trans, mma.sync.m16n8k16 with f16 or bf16 inputs and
// f32 accumulators, fragment loads; shared with the decode kernel), the shared memory tile
// layout, tile loads and warp products, and the score path shared by forward and backward:
// scale (log2e prescaled), softcap, bias, ALiBi, the visibility mask, and the dropout keep test.
//
// Tiles: a [rows][D] tile of 16-bit elements lives in shared memory with a row stride of D + 8
// elements (16 bytes of padding): for every D here (64, 96, 128, 192, 256) the stride is 4 or
// 20 words mod 32, so the 8 row addresses of one ldmatrix 8x8 matrix hit 8 distinct 4-bank
// groups (no conflicts) and each row stays 16-byte aligned for cp.async. Rows past the valid
// count are zero-filled (cp.async src-size 0), so out-of-range keys and values read as 0.
//
// Fragments of mma.m16n8k16 (g = lane / 4, t = lane % 4): A a0 = (row g, k 2t..2t+1),
// a1 = (row g + 8, k 2t..), a2 = (row g, k 2t + 8..), a3 = (row g + 8, k 2t + 8..); B b0 =
// (k 2t..2t+1, col g), b1 = (k 2t + 8.., col g); C c0, c1 = (row g, cols 2t, 2t + 1), c2, c3 =
// (row g + 8, cols 2t, 2t + 1). An accumulator pair of n8 tiles (k 16) repacks into an A
// fragment without data movement (P = softmax(S) feeds P V straight from registers).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "attention/flash_params.hpp"
#include "attention/kernels/dropout.cuh"
#include "attention/kernels/mma_fragments.cuh"

namespace baracuda::attention::kernels {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();
constexpr float kPosInf = __builtin_huge_valf();

template <int D>
struct SmemTile {
  static constexpr int kStride = D + 8;  // elements
};

// ---------------------------------------------------------------- async copies
// Copies rows [0, kRows) x D of a tile (row r at gbase + r * row_stride) into smem, 16 bytes
// per cp.async, 16-byte chunk ch of row r to dst(r, ch); rows >= valid_rows are zero-filled.
// All kThreads threads of the CTA take part.
template <int kRows, int D, int kThreads, class T, class Dst>
__device__ __forceinline__ void load_rows_async(const T* gbase, std::int64_t row_stride, int valid_rows, int tid,
                                                Dst&& dst) {
  constexpr int kChunks = D / 8;
  constexpr int kTotal = kRows * kChunks;
#pragma unroll
  for (int it = 0; it < (kTotal + kThreads - 1) / kThreads; ++it) {
    const int c = tid + it * kThreads;
    if (kTotal % kThreads == 0 || c < kTotal) {
      const int r = c / kChunks;
      const int ch = c - r * kChunks;
      const bool ok = r < valid_rows;
      cp_async16(dst(r, ch), ok ? gbase + r * row_stride + ch * 8 : gbase, ok);
    }
  }
}
// The padded [rows][D + 8] layout of the mma.sync kernels.
template <int kRows, int D, int kThreads, class T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* gbase, std::int64_t row_stride, int valid_rows,
                                                int tid) {
  load_rows_async<kRows, D, kThreads>(gbase, row_stride, valid_rows, tid,
                                      [&](int r, int ch) { return smem + r * SmemTile<D>::kStride + ch * 8; });
}

// ---------------------------------------------------------------- fragments
template <class T>
__device__ __forceinline__ float2 unpack2(std::uint32_t u) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = *reinterpret_cast<__nv_bfloat162*>(&u);
    return __bfloat1622float2(v);
  } else {
    __half2 v = *reinterpret_cast<__half2*>(&u);
    return __half22float2(v);
  }
}
template <class T>
__device__ __forceinline__ float to_float(T x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else return __half2float(x);
}

// The A fragment (16 rows x k 16) at (row0, k0) of a tile stored transposed, [k][rows] with
// row stride kStride (dS^T feeding dQ = dS K).
template <int kStride, class T>
__device__ __forceinline__ void load_a_t(std::uint32_t (&a)[4], const T* tile, int row0, int k0, int lane) {
  ldsm_x4_t(a, tile + (k0 + (lane & 7) + (lane >> 4) * 8) * kStride + row0 + ((lane >> 3) & 1) * 8);
}
// acc[n8] += a (16 x k16) * B (k16 x 8 * kTiles): load_b(bf, n0) gives the B fragments of the
// two n8 blocks n0, n0 + 8 (frag_b_nk or frag_b_kn).
template <class T, int kTiles, class LoadB>
__device__ __forceinline__ void mma_row_times(float (&acc)[kTiles][4], const std::uint32_t (&a)[4], LoadB&& load_b) {
#pragma unroll
  for (int n16 = 0; n16 < kTiles / 2; ++n16) {
    std::uint32_t bf[4];
    load_b(bf, n16 * 16);
    mma16816<T>(acc[2 * n16], a, bf[0], bf[1]);
    mma16816<T>(acc[2 * n16 + 1], a, bf[2], bf[3]);
  }
}
// The A fragment of k16 block k16 from a C-layout accumulator row (P or dS in registers).
template <class T, int kTiles>
__device__ __forceinline__ void acc_to_a(std::uint32_t (&a)[4], const float (&acc)[kTiles][4], int k16) {
  a[0] = pack2f<T>(acc[2 * k16][0], acc[2 * k16][1]);
  a[1] = pack2f<T>(acc[2 * k16][2], acc[2 * k16][3]);
  a[2] = pack2f<T>(acc[2 * k16 + 1][0], acc[2 * k16 + 1][1]);
  a[3] = pack2f<T>(acc[2 * k16 + 1][2], acc[2 * k16 + 1][3]);
}
template <int kTiles>
__device__ __forceinline__ void zero_acc(float (&acc)[kTiles][4]) {
#pragma unroll
  for (int i = 0; i < kTiles; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
}

// acc = A_w B^T over the head dim: A rows [row0, row0 + 16) of sA ([rows][D]), B the
// 8 * kTiles rows of sB ([n][D]) -- S = Q K^T, dP = dO V^T and their transposes.
template <class T, int D, int kTiles>
__device__ __forceinline__ void warp_a_bt(float (&acc)[kTiles][4], const T* sA, int row0, const T* sB, int lane) {
  zero_acc(acc);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    std::uint32_t a[4];
    frag_a<SmemTile<D>::kStride>(a, sA, row0, kk * 16, lane);
    mma_row_times<T>(acc, a, [&](std::uint32_t(&bf)[4], int c0) { frag_b_nk<SmemTile<D>::kStride>(bf, sB, c0, kk * 16, lane); });
  }
}
// out += P B: P the warp's 16 x (8 * kK8) register accumulator (P, P^T, dS or dS^T), B the
// tile sB ([k][D]) -- O += P V, dV += P^T dO, dK += dS^T Q, dQ += dS K.
template <class T, int D, int kK8, int kTiles>
__device__ __forceinline__ void warp_p_b(float (&out)[kTiles][4], const float (&pr)[kK8][4], const T* sB, int lane) {
#pragma unroll
  for (int k16 = 0; k16 < kK8 / 2; ++k16) {
    std::uint32_t a[4];
    acc_to_a<T>(a, pr, k16);
    mma_row_times<T>(out, a, [&](std::uint32_t(&bf)[4], int c0) { frag_b_kn<SmemTile<D>::kStride>(bf, sB, k16 * 16, c0, lane); });
  }
}

// One step of a key loop over K / V tiles nb = n_begin .. n_end - 1 (double buffered at
// sK / sV + stage * kN rows, stage = (nb - n_begin) & 1): prefetch tile nb + 1 into the other
// stage, wait for tile nb, barrier; cK / cV point at tile nb.
template <int kN, int D, int kThreads, class T>
__device__ __forceinline__ void kv_loop_step(T* sK, T* sV, const T* kg, const T* vg, std::int64_t k_s, std::int64_t v_s,
                                             int nb, int n_begin, int n_end, int sk, int tid, const T*& cK,
                                             const T*& cV) {
  const int stage = (nb - n_begin) & 1;
  if (nb + 1 < n_end) {
    const std::int64_t j_next = static_cast<std::int64_t>(nb + 1) * kN;
    load_tile_async<kN, D, kThreads>(sK + (stage ^ 1) * kN * SmemTile<D>::kStride, kg + j_next * k_s, k_s,
                                     sk - (nb + 1) * kN, tid);
    load_tile_async<kN, D, kThreads>(sV + (stage ^ 1) * kN * SmemTile<D>::kStride, vg + j_next * v_s, v_s,
                                     sk - (nb + 1) * kN, tid);
    cp_async_commit();
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
  cK = sK + stage * kN * SmemTile<D>::kStride;
  cV = sV + stage * kN * SmemTile<D>::kStride;
}

// ---------------------------------------------------------------- sequences and masks
struct SeqInfo {
  int sq = 0, sk = 0;          // this sequence's lengths
  int start_q = 0, start_k = 0;  // token offsets (varlen), else 0
  int off = 0;                 // diagonal offset of the mask alignment
};

__device__ __forceinline__ SeqInfo seq_info(const FlashMaskParams& p, int b) {
  SeqInfo s;
  if (p.cu_q != nullptr) {
    s.start_q = p.cu_q[b];
    s.sq = p.cu_q[b + 1] - s.start_q;
    s.start_k = p.cu_k[b];
    s.sk = p.cu_k[b + 1] - s.start_k;
  } else {
    s.sq = p.seqlen_q;
    s.sk = p.seqlen_k;
  }
  s.off = p.bottom_right ? s.sk - s.sq : 0;
  return s;
}

// Key j is visible from query i (both within the sequence, j < sk checked separately).
__device__ __forceinline__ bool visible(const FlashMaskParams& p, const SeqInfo& s, int i, int j) {
  const int d = j - i - s.off;  // i + off - wl <= j <= i + off + wr
  return (p.window_left < 0 || d >= -p.window_left) && (p.window_right < 0 || d <= p.window_right) && j >= 0 &&
         j < s.sk;
}

// Key range [lo, hi] (inclusive, clamped to the sequence) seen by any of the queries [i0, i1].
__device__ __forceinline__ void key_range(const FlashMaskParams& p, const SeqInfo& s, int i0, int i1, int& lo,
                                          int& hi) {
  lo = p.window_left < 0 ? 0 : max(0, i0 + s.off - p.window_left);
  hi = p.window_right < 0 ? s.sk - 1 : min(s.sk - 1, i1 + s.off + p.window_right);
}
// Query range [lo, hi] (clamped) that sees any of the keys [j0, j1].
__device__ __forceinline__ void query_range(const FlashMaskParams& p, const SeqInfo& s, int j0, int j1, int& lo,
                                            int& hi) {
  lo = p.window_right < 0 ? 0 : max(0, j0 - s.off - p.window_right);
  hi = p.window_left < 0 ? s.sq - 1 : min(s.sq - 1, j1 - s.off + p.window_left);
}
// Whether a [i0, i0 + rows) x [j0, j0 + cols) tile has any element that the mask hides or
// that lies past the key end (query rows past sq need no mask: their results are dropped or
// multiplied by zero).
__device__ __forceinline__ bool tile_needs_mask(const FlashMaskParams& p, const SeqInfo& s, int i0, int rows, int j0,
                                                int cols) {
  if (j0 + cols > s.sk) return true;
  const int i1 = i0 + rows - 1, j1 = j0 + cols - 1;
  if (p.window_right >= 0 && j1 - i0 - s.off > p.window_right) return true;
  if (p.window_left >= 0 && j0 - i1 - s.off < -p.window_left) return true;
  return false;
}

// The query block of a forward-like CTA (blockIdx = (query block, reversed; query head; batch)):
// its sequence, rows, operand pointers (q, k, v at the block's first row / key 0) and the key
// tiles [n_begin, n_end) of kN that any of its rows sees.
template <class T>
struct QueryBlock {
  SeqInfo si;
  int b = 0, h = 0, hk = 0, m0 = 0, valid_q = 0, n_begin = 0, n_end = 0;
  const T *q = nullptr, *k = nullptr, *v = nullptr;
  T* o = nullptr;  // forward output at the block's first row
};
// Query block mb of head h, batch b (kernels with their own block order); false when the block
// lies past its sequence (nothing to do). query_block: this CTA's block in the order above.
template <int kM, int kN, class T>
__device__ __forceinline__ bool query_block_at(const FlashFwdParams& p, QueryBlock<T>& qb, int mb, int h, int b) {
  qb.b = b;
  qb.h = h;
  qb.si = seq_info(p, qb.b);
  qb.m0 = mb * kM;
  if (qb.m0 >= qb.si.sq) return false;
  qb.hk = qb.h / p.group;
  qb.valid_q = min(kM, qb.si.sq - qb.m0);
  qb.q = static_cast<const T*>(p.q) + qb.b * p.q_b + qb.h * p.q_h + static_cast<std::int64_t>(qb.si.start_q + qb.m0) * p.q_s;
  qb.k = static_cast<const T*>(p.k) + qb.b * p.k_b + qb.hk * p.k_h + static_cast<std::int64_t>(qb.si.start_k) * p.k_s;
  qb.v = static_cast<const T*>(p.v) + qb.b * p.v_b + qb.hk * p.v_h + static_cast<std::int64_t>(qb.si.start_k) * p.v_s;
  qb.o = static_cast<T*>(p.o) + qb.b * p.o_b + qb.h * p.o_h + static_cast<std::int64_t>(qb.si.start_q + qb.m0) * p.o_s;
  int lo, hi;
  key_range(p, qb.si, qb.m0, qb.m0 + qb.valid_q - 1, lo, hi);
  qb.n_begin = lo / kN;
  qb.n_end = hi < lo ? qb.n_begin : hi / kN + 1;
  return true;
}
template <int kM, int kN, class T>
__device__ __forceinline__ bool query_block(const FlashFwdParams& p, QueryBlock<T>& qb) {
  return query_block_at<kM, kN>(p, qb, static_cast<int>(gridDim.x - 1 - blockIdx.x),  // heaviest (causal) blocks first
                                static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z));
}

// ---------------------------------------------------------------- scores (slow path)
// The contract's dropout key of this run (kernels/dropout.cuh), from the device pair when given.
using DropKey = ::baracuda::kernels::attention::DropoutKey;
__device__ __forceinline__ DropKey flash_dropout_key(const FlashMaskParams& p) {
  std::uint64_t seed = 0, offset = 0;
  ::baracuda::kernels::attention::dropout_seed_offset(p.seed_offset, p.seed, p.offset, &seed, &offset);
  return ::baracuda::kernels::attention::dropout_key(seed, offset, p.drop_threshold);
}
// Keep decisions of keys j and j + 1 (j even) of row (b, h, i): one Philox call.
__device__ __forceinline__ void dropout_keep_pair(const DropKey& k, std::int64_t bh, int i, int j, bool& k0, bool& k1) {
  const uint4 w = ::baracuda::kernels::attention::dropout_words(k, bh, i, j);
  k0 = ::baracuda::kernels::attention::dropout_word(w, j) >= k.threshold;
  k1 = ::baracuda::kernels::attention::dropout_word(w, j + 1) >= k.threshold;
}
__device__ __forceinline__ bool dropout_keep1(const DropKey& k, std::int64_t bh, int i, int j) {
  return ::baracuda::kernels::attention::dropout_keep(k, bh, i, j);
}

// The natural-unit score of the slow path for query i, key j of (b, h): softcap, bias, ALiBi
// applied to scale * qk; *dcap = d(score) / d(scale * qk) (1 - tanh^2 with softcap, else 1).
// The bias is read only inside the sequence (padded rows and keys are masked or dropped anyway).
template <class T>
__device__ __forceinline__ float extra_score(const FlashMaskParams& p, const SeqInfo& s, float qk, int b, int h, int i,
                                             int j, float slope, float* dcap) {
  float x = qk * p.scale;
  float dc = 1.f;
  if (p.softcap > 0.f) {
    const float th = tanhf(x / p.softcap);
    x = p.softcap * th;
    dc = 1.f - th * th;
  }
  if (p.bias != nullptr && i < s.sq && j < s.sk) {
    const std::int64_t o = b * p.bias_b + h * p.bias_h + i * p.bias_i + j * p.bias_j;
    x += p.bias_f32 ? static_cast<const float*>(p.bias)[o] : to_float(static_cast<const T*>(p.bias)[o]);
  }
  if (p.alibi != nullptr) x -= slope * fabsf(static_cast<float>(i + s.off - j));
  *dcap = dc;
  return x;
}

}  // namespace baracuda::attention::kernels
