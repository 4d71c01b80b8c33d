// SdpaDecodePlan's tensor-core kernel (SKU paged_decode.fwd.mma_splitkv) and the split combine.
//
// What: for each sequence b, KV head h and split s, the attention of the query rows of h's
// group (row r = t * group + g: token t of Sq, query head h * group + g) over the keys
// [s * split_len, (s + 1) * split_len) n [0, seqlen_b): o = softmax(scores) V, with the mask,
// softcap and ALiBi of baracuda/ops/decode.hpp.
// Parallel scheme: one CTA of 4 warps per (b, h, block of 64 rows, split). K and V tiles of 64
// keys stream through a kStages-deep cp.async pipeline (16-byte copies, L2-only) into shared
// memory; each 16-key chunk of a tile lies in one page (page_size % 16 == 0, tiles start on a
// 16-key boundary), so a chunk costs one block-table read. Keys past seqlen are zero-filled.
// The warps split the rows into m16 tiles (1, 2 or 4) and the keys of each tile among the
// rest: warp (kg, mt) takes m-tile mt and chunks kg, kg + kgs, ... of every tile, computes
// S = Q K^T with mma.sync m16n8k16 (f16 / bf16 in, f32 accumulate), updates its rows' online
// softmax (base 2, f32), rounds P to the input dtype and accumulates O += P V with the same
// mma (the S accumulators are the A fragments of P). At the end the warps of one m-tile merge
// (m, l, O) through shared memory; with one split the CTA writes o (and lse), otherwise the
// normalized partial o and its log2-sum-exp go to the workspace and decode_combine_kernel adds
// the splits in order (deterministic; no atomics).
// Shared memory rows are padded by 8 elements, so the 32-bit fragment reads of Q and K and the
// 16-bit reads of V hit 32 distinct banks.
// Preconditions (probe checks them): f16 / bf16, D in {64, 128, 256}, page_size % 16 == 0,
// cache rows 16-byte aligned (strides multiples of 8 elements), split_len % 64 == 0.
// Numerics: products exact, f32 accumulation, softmax statistics in f32 (exp2 of
// log2(e)-scaled scores), P rounded to the input dtype before PV (as flash attention).
// Speed: bench suite attention, paged_decode bf16 64x4096x32x8x128 (page 16 and 256).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "attention/decode_params.hpp"
#include "attention/kernels/decode_common.cuh"

namespace baracuda::attention::kernels {

template <class T>
__device__ __forceinline__ void decode_mma16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;  // 0: the 16 bytes are zero-filled, nothing is read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Two elements (lower index in the low half) as one 32-bit fragment register.
template <class T>
__device__ __forceinline__ std::uint32_t pack2(T lo, T hi) {
  std::uint16_t a, b;
  __builtin_memcpy(&a, &lo, 2);
  __builtin_memcpy(&b, &hi, 2);
  return static_cast<std::uint32_t>(a) | (static_cast<std::uint32_t>(b) << 16);
}
template <class T>
__device__ __forceinline__ std::uint32_t pack2f(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return pack2(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
  else return pack2(__float2half_rn(lo), __float2half_rn(hi));
}
__device__ __forceinline__ std::uint32_t lds32(const void* p) { return *static_cast<const std::uint32_t*>(p); }

template <class T, int D, int kStages>
__global__ void __launch_bounds__(kDecodeThreads) decode_mma_kernel(const DecodeParams p) {
  constexpr int kLd = D + kDecodeSmemPad;           // shared row stride (elements)
  constexpr int kTile = kDecodeBlockN * kLd;        // one K or V stage (elements)
  constexpr int kVecPerRow = D / 8;                 // 16-byte vectors per row
  constexpr int kRowsPerIter = kDecodeThreads / kVecPerRow;  // rows one pass of the CTA copies
  constexpr int kIters = kDecodeBlockN / kRowsPerIter;
  static_assert(16 % kRowsPerIter == 0 || kRowsPerIter % 16 == 0, "copy passes map onto 16-key chunks");
  constexpr float kLog2e = 1.4426950408889634f;
  static_assert((4 * 16 * (D + 4) + 2 * 64) * 4 <= 2 * kStages * kTile * 2, "the merge buffers fit in the stages");

  extern __shared__ __align__(16) unsigned char decode_smem[];
  T* ks = reinterpret_cast<T*>(decode_smem);
  T* vs = ks + kStages * kTile;
  T* qs = vs + kStages * kTile;

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int g4 = lane >> 2, q4 = lane & 3;  // fragment row / column-pair of this lane
  const int split = static_cast<int>(blockIdx.y);
  std::int64_t bx = blockIdx.x;
  const std::int64_t rb = bx % p.row_blocks;
  bx /= p.row_blocks;
  const std::int64_t h = bx % p.hkv, b = bx / p.hkv;
  const std::int64_t row0 = rb * kDecodeRowsPerCta;
  const int rows_here = static_cast<int>(p.rows - row0 < kDecodeRowsPerCta ? p.rows - row0 : kDecodeRowsPerCta);
  const int mtiles = (rows_here + 15) / 16;
  const int warps_m = mtiles == 1 ? 1 : (mtiles == 2 ? 2 : 4);
  const int kgs = 4 / warps_m;
  const int mt = warp % warps_m, kg = warp / warps_m;
  const int q_rows = warps_m * 16;

  const std::int64_t seqlen = clamp_seqlen(p.seqlens[b * p.seqlens_stride], p.capacity);
  std::int64_t k_begin = static_cast<std::int64_t>(split) * p.split_len;
  std::int64_t k_end = k_begin + p.split_len < seqlen ? k_begin + p.split_len : seqlen;
  if (p.window_left >= 0) {
    const std::int64_t lo = seqlen - p.sq - p.window_left;  // lowest key token 0 sees
    if (lo > k_begin) k_begin = lo & ~std::int64_t{15};    // lo > 0 here: rounds down to a chunk
  }
  const int n_tiles = k_end > k_begin ? static_cast<int>((k_end - k_begin + kDecodeBlockN - 1) / kDecodeBlockN) : 0;

  // Issues the copies of tile `it` into stage it % kStages.
  const T* kg_base = static_cast<const T*>(p.k);
  const T* vg_base = static_cast<const T*>(p.v);
  const bool paged = p.block_table != nullptr;
  auto issue = [&](int it) {
    const std::int64_t base = k_begin + static_cast<std::int64_t>(it) * kDecodeBlockN;
    T* kst = ks + (it % kStages) * kTile;
    T* vst = vs + (it % kStages) * kTile;
    const T* kchunk[4];
    const T* vchunk[4];
    int nvalid[4];
    // Block-table slot and row of the tile's first key (keys < capacity < 2^31: one 32-bit
    // division per tile); the chunks after it step 16 rows, wrapping into the next slots.
    const std::uint32_t ps = static_cast<std::uint32_t>(p.page_size);
    std::uint32_t slot0 = 0, row0 = static_cast<std::uint32_t>(base);
    if (paged) {
      slot0 = row0 / ps;
      row0 -= slot0 * ps;
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const std::int64_t key = base + 16 * c;
      const std::int64_t left = k_end - key;
      nvalid[c] = left <= 0 ? 0 : (left >= 16 ? 16 : static_cast<int>(left));
      std::uint32_t row = row0 + 16 * c, slot = slot0;
      while (paged && row >= ps) {
        row -= ps;
        ++slot;
      }
      std::int64_t page = b;
      if (paged) {
        page = -1;
        if (nvalid[c] && slot < p.max_pages) {
          const std::int64_t e = p.block_table[b * p.bt_stride[0] + static_cast<std::int64_t>(slot) * p.bt_stride[1]];
          page = e >= 0 && e < p.num_pages ? e : -1;
        }
      }
      if (page < 0) nvalid[c] = 0;
      const std::int64_t pg = page < 0 ? 0 : page;
      kchunk[c] = kg_base + pg * p.k_stride[0] + row * p.k_stride[1] + h * p.k_stride[2];
      vchunk[c] = vg_base + pg * p.v_stride[0] + row * p.v_stride[1] + h * p.v_stride[2];
    }
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int r = tid / kVecPerRow + i * kRowsPerIter;  // row of the tile
      const int col = (tid % kVecPerRow) * 8;
      const int c = (i * kRowsPerIter) / 16;  // compile-time: the chunk of row r
      const int rr = r - 16 * c;
      const bool valid = rr < nvalid[c];
      cp_async16(kst + r * kLd + col, valid ? kchunk[c] + rr * p.k_stride[1] + col : kg_base, valid);
      cp_async16(vst + r * kLd + col, valid ? vchunk[c] + rr * p.v_stride[1] + col : vg_base, valid);
    }
  };

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_tiles) issue(s);
    cp_async_commit();
  }

  // The query tile (after the first copies are in flight): rows past `rows_here` are zeros.
  const T* qg = static_cast<const T*>(p.q);
  for (int i = tid; i < q_rows * D; i += kDecodeThreads) {
    const int r = i / D, c = i % D;
    T v = from_float<T>(0.0f);
    if (r < rows_here) {
      const std::int64_t gr = row0 + r, t = gr / p.group, hq = h * p.group + gr % p.group;
      v = qg[b * p.q_stride[0] + t * p.q_stride[1] + hq * p.q_stride[2] + c];
    }
    qs[r * kLd + c] = v;
  }

  // Per-lane row state: rows g4 and g4 + 8 of m-tile mt.
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  float o_acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o_acc[n][e] = 0.0f;
  std::int64_t qpos[2];
  float slope[2];
  bool row_ok[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const std::int64_t r = mt * 16 + g4 + 8 * hh;
    const std::int64_t gr = row0 + r;
    row_ok[hh] = r < rows_here;
    const std::int64_t t = row_ok[hh] ? gr / p.group : 0;
    const std::int64_t hq = h * p.group + (row_ok[hh] ? gr % p.group : 0);
    qpos[hh] = seqlen - p.sq + t;
    slope[hh] = p.alibi ? p.alibi[b * p.alibi_stride[0] + hq * p.alibi_stride[1]] : 0.0f;
  }
  const float scale = static_cast<float>(p.scale), softcap = static_cast<float>(p.softcap);
  const float scale_log2 = scale * kLog2e;
  const bool plain = softcap == 0.0f && p.alibi == nullptr;

  for (int it = 0; it < n_tiles; ++it) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (it + kStages - 1 < n_tiles) issue(it + kStages - 1);
    cp_async_commit();

    const T* kst = ks + (it % kStages) * kTile;
    const T* vst = vs + (it % kStages) * kTile;
    const std::int64_t tile_base = k_begin + static_cast<std::int64_t>(it) * kDecodeBlockN;
    for (int c = kg; c < 4; c += kgs) {
      const std::int64_t j0 = tile_base + 16 * c;
      if (j0 >= k_end) break;
      // S = Q K^T for 16 rows x 16 keys (two n8 tiles).
      float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const T* qa = qs + (mt * 16 + g4) * kLd + kk * 16 + q4 * 2;
        std::uint32_t a[4] = {lds32(qa), lds32(qa + 8 * kLd), lds32(qa + 8), lds32(qa + 8 * kLd + 8)};
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const T* kb = kst + (c * 16 + nt * 8 + g4) * kLd + kk * 16 + q4 * 2;
          decode_mma16816<T>(s[nt], a, lds32(kb), lds32(kb + 8));
        }
      }
      // Scores -> probabilities (online softmax, base 2).
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float x[4];
        float mx = -INFINITY;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int nt = e >> 1;
          const std::int64_t j = j0 + nt * 8 + q4 * 2 + (e & 1);
          const float raw = s[nt][2 * hh + (e & 1)];
          float v;
          if (plain) {
            v = raw * scale_log2;
          } else {
            v = raw * scale;
            if (softcap > 0.0f) v = softcap * tanhf(v / softcap);
            if (p.alibi) v -= slope[hh] * static_cast<float>(qpos[hh] > j ? qpos[hh] - j : j - qpos[hh]);
            v *= kLog2e;
          }
          const bool visible = row_ok[hh] && j < k_end && (!p.causal || j <= qpos[hh]) &&
                               (p.window_left < 0 || j >= qpos[hh] - p.window_left);
          x[e] = visible ? v : -INFINITY;
          mx = fmaxf(mx, x[e]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[hh], mx);
        float alpha = 1.0f, sum = 0.0f;
        if (m_new == -INFINITY) {
#pragma unroll
          for (int e = 0; e < 4; ++e) x[e] = 0.0f;
        } else {
          alpha = exp2f(m_run[hh] - m_new);  // 0 when m_run was -inf
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            x[e] = exp2f(x[e] - m_new);
            sum += x[e];
          }
        }
        m_run[hh] = m_new;
        l_run[hh] = l_run[hh] * alpha + sum;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o_acc[n][2 * hh] *= alpha;
          o_acc[n][2 * hh + 1] *= alpha;
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) s[e >> 1][2 * hh + (e & 1)] = x[e];
      }
      // O += P V: P's A fragment is the two S tiles; V's B fragment read as 16-bit pairs.
      const std::uint32_t pa[4] = {pack2f<T>(s[0][0], s[0][1]), pack2f<T>(s[0][2], s[0][3]),
                                   pack2f<T>(s[1][0], s[1][1]), pack2f<T>(s[1][2], s[1][3])};
      const T* vb = vst + (c * 16 + q4 * 2) * kLd + g4;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        const T* v0 = vb + n * 8;
        const std::uint32_t b0 = pack2(v0[0], v0[kLd]);
        const std::uint32_t b1 = pack2(v0[8 * kLd], v0[9 * kLd]);
        decode_mma16816<T>(o_acc[n], pa, b0, b1);
      }
    }
  }

  // Merge the warps of each m-tile through shared memory (the stages are free now).
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    l_run[hh] += __shfl_xor_sync(0xffffffffu, l_run[hh], 1);
    l_run[hh] += __shfl_xor_sync(0xffffffffu, l_run[hh], 2);
  }
  cp_async_wait<0>();
  __syncthreads();
  constexpr int kOld = D + 4;
  float* os = reinterpret_cast<float*>(decode_smem);  // [warp][16][kOld]
  float* ms = os + 4 * 16 * kOld;                      // [warp][16]
  float* ls = ms + 4 * 16;
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) os[(warp * 16 + g4 + 8 * (e >> 1)) * kOld + n * 8 + q4 * 2 + (e & 1)] = o_acc[n][e];
  if (q4 == 0) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      ms[warp * 16 + g4 + 8 * hh] = m_run[hh];
      ls[warp * 16 + g4 + 8 * hh] = l_run[hh];
    }
  }
  __syncthreads();
  T* og = static_cast<T*>(p.o);
  for (int i = tid; i < rows_here * D; i += kDecodeThreads) {
    const int r = i / D, col = i % D, rmt = r / 16, rr = r % 16;
    float m = -INFINITY;
    for (int k2 = 0; k2 < kgs; ++k2) m = fmaxf(m, ms[(k2 * warps_m + rmt) * 16 + rr]);
    float l = 0.0f, acc = 0.0f;
    if (m != -INFINITY) {
      for (int k2 = 0; k2 < kgs; ++k2) {
        const int w = k2 * warps_m + rmt;
        const float f = exp2f(ms[w * 16 + rr] - m);
        l += ls[w * 16 + rr] * f;
        acc += os[(w * 16 + rr) * kOld + col] * f;
      }
    }
    const bool empty = !(l > 0.0f);
    const float out = empty ? 0.0f : acc / l;
    const float lse2 = empty ? -INFINITY : m + log2f(l);
    const std::int64_t gr = row0 + r, t = gr / p.group, hq = h * p.group + gr % p.group;
    if (p.splits == 1) {
      og[b * p.o_stride[0] + t * p.o_stride[1] + hq * p.o_stride[2] + col] = from_float<T>(out);
      if (col == 0 && p.lse)
        p.lse[b * p.lse_stride[0] + hq * p.lse_stride[1] + t * p.lse_stride[2]] = lse2 * 0.6931471805599453f;
    } else {
      const std::int64_t prow = ((static_cast<std::int64_t>(split) * p.batch + b) * p.sq + t) * p.hq + hq;
      p.ws_o[prow * p.d + col] = out;
      if (col == 0) p.ws_lse[prow] = lse2;
    }
  }
}

// Adds the splits of one output row in split order: o = sum_s 2^(lse_s - lse) o_s, with
// lse = log2(sum_s 2^lse_s); a row no split saw gives o = 0, lse = -inf.
template <class T>
__global__ void decode_combine_kernel(const DecodeParams p) {
  const std::int64_t row = blockIdx.x;  // (b, t, hq)
  const std::int64_t hq = row % p.hq, t = (row / p.hq) % p.sq, b = row / (p.hq * p.sq);
  const std::int64_t plane = p.batch * p.sq * p.hq;
  float m = -INFINITY;
  for (int s = 0; s < p.splits; ++s) m = fmaxf(m, p.ws_lse[s * plane + row]);
  float l = 0.0f;
  if (m != -INFINITY)
    for (int s = 0; s < p.splits; ++s) l += exp2f(p.ws_lse[s * plane + row] - m);
  T* og = static_cast<T*>(p.o);
  for (std::int64_t col = threadIdx.x; col < p.d; col += blockDim.x) {
    float acc = 0.0f;
    if (m != -INFINITY)
      for (int s = 0; s < p.splits; ++s) {
        const float lw = p.ws_lse[s * plane + row];
        if (lw != -INFINITY) acc += exp2f(lw - m) * p.ws_o[(s * plane + row) * p.d + col];
      }
    og[b * p.o_stride[0] + t * p.o_stride[1] + hq * p.o_stride[2] + col] = from_float<T>(m == -INFINITY ? 0.0f : acc / l);
  }
  if (threadIdx.x == 0 && p.lse)
    p.lse[b * p.lse_stride[0] + hq * p.lse_stride[1] + t * p.lse_stride[2]] =
        m == -INFINITY ? -INFINITY : (m + log2f(l)) * 0.6931471805599453f;
}

}  // namespace baracuda::attention::kernels
