// Per-warp pieces shared by the tensor-core decode kernels (decode_mma.cuh: mma_splitkv,
// decode_bulk.cuh: bulk_splitkv): the online-softmax step of one 16-row x 16-key score tile
// held in mma.m16n8k16 accumulators (mask, softcap, ALiBi, base-2 exponent, rescale of the
// running output), and the final merge of the warps that took different keys of the same rows
// (through shared memory) with the store of o / lse or of the split partials.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/decode_params.hpp"
#include "attention/kernels/decode_common.cuh"
#include "attention/kernels/mma_fragments.cuh"
#include "common/mufu.cuh"

namespace baracuda::attention::kernels {

// The mask / bias inputs of one lane's two fragment rows (g4 and g4 + 8 of its m16 tile) and
// the CTA-wide constants of the score transform.
struct DecodeRowState {
  std::int64_t qpos[2];
  float slope[2];
  bool row_ok[2];
};
struct DecodeScoreConsts {
  float scale, scale_log2, softcap;
  const float* alibi;
  bool causal, plain;
  std::int64_t window_left, k_end, all_lo, all_hi;  // all_lo .. all_hi: keys every row sees
};

// Starts a lane's two fragment rows: r = r0 and r0 + 8 of the CTA's rows (group row row0 + r:
// token (row0 + r) / group, query head h * group + (row0 + r) % group; rows >= rows_here are
// padding), with an empty running softmax and output.
template <int D>
__device__ __forceinline__ DecodeRowState decode_begin_rows(const DecodeParams& p, std::int64_t b, std::int64_t h,
                                                            std::int64_t seqlen, std::int64_t row0, int r0, int rows_here,
                                                            float (&m_run)[2], float (&l_run)[2], float (&o_acc)[D / 8][4]) {
  DecodeRowState rs;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int r = r0 + 8 * hh;
    const std::int64_t gr = row0 + r;
    rs.row_ok[hh] = r < rows_here;
    const std::int64_t t = rs.row_ok[hh] ? gr / p.group : 0;
    const std::int64_t hq = h * p.group + (rs.row_ok[hh] ? gr % p.group : 0);
    rs.qpos[hh] = seqlen - p.sq + t;
    rs.slope[hh] = p.alibi ? p.alibi[b * p.alibi_stride[0] + hq * p.alibi_stride[1]] : 0.0f;
    m_run[hh] = -INFINITY;
    l_run[hh] = 0.0f;
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o_acc[n][e] = 0.0f;
  return rs;
}

// The score constants of a CTA over keys < k_end of a sequence of `seqlen` keys. Keys every
// query row sees (the causal bound of the first token, the window bound of the last) need no
// per-element mask.
__device__ __forceinline__ DecodeScoreConsts decode_score_consts(const DecodeParams& p, std::int64_t seqlen,
                                                                 std::int64_t k_end) {
  DecodeScoreConsts c;
  c.scale = static_cast<float>(p.scale);
  c.scale_log2 = c.scale * 1.4426950408889634f;
  c.softcap = static_cast<float>(p.softcap);
  c.alibi = p.alibi;
  c.causal = p.causal;
  c.plain = c.softcap == 0.0f && p.alibi == nullptr;
  c.window_left = p.window_left;
  c.k_end = k_end;
  c.all_hi = p.causal ? seqlen - p.sq : k_end - 1;
  c.all_lo = p.window_left >= 0 ? seqlen - 1 - p.window_left : 0;
  return c;
}

// Scores s (two n8 tiles: keys j0 .. j0 + 15) -> probabilities in s, updating the running
// reference max m_run, sum l_run (per-lane partial sums; the quad reduces them at the end) and
// o_acc. q4 = lane % 4.
// Conditional rescale: the reference max of the warp's rows moves (and o_acc, l_run are scaled
// by 2^(old - new)) only when some row of the warp sees a score more than kDecodeRescaleSlack
// (log2 units) above its reference, or the reference is still -inf. Otherwise the reference
// stays and p = 2^(x - ref) may reach 2^kDecodeRescaleSlack: o and l keep the same reference,
// so o / l and lse = ref + log2(l) are the same quantities (p's bf16 / f16 rounding is
// relative, l and o stay far below f32's range). On random scores the reference settles
// after the first chunks and the 4 x D / 8 multiplications of the rescale are skipped.
// Exponentials are ex2.approx.ftz (one MUFU instruction; 16-bit outputs).
inline constexpr float kDecodeRescaleSlack = 8.0f;
template <int D>
__device__ __forceinline__ void decode_softmax_step(float (&s)[2][4], float (&m_run)[2], float (&l_run)[2],
                                                    float (&o_acc)[D / 8][4], std::int64_t j0, int q4,
                                                    const DecodeRowState& rs, const DecodeScoreConsts& c) {
  using ::baracuda::kernels::mufu::ex2_ftz;
  constexpr float kLog2e = 1.4426950408889634f;
  const bool full = c.plain && j0 + 15 < c.k_end && j0 + 15 <= c.all_hi && j0 >= c.all_lo;
  float x[2][4], mx[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    mx[hh] = -INFINITY;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int nt = e >> 1;
      const float raw = s[nt][2 * hh + (e & 1)];
      if (full) {
        x[hh][e] = raw * c.scale_log2;
      } else {
        const std::int64_t j = j0 + nt * 8 + q4 * 2 + (e & 1);
        float v;
        if (c.plain) {
          v = raw * c.scale_log2;
        } else {
          v = raw * c.scale;
          if (c.softcap > 0.0f) v = c.softcap * tanhf(v / c.softcap);
          if (c.alibi) v -= rs.slope[hh] * static_cast<float>(rs.qpos[hh] > j ? rs.qpos[hh] - j : j - rs.qpos[hh]);
          v *= kLog2e;
        }
        const bool visible = rs.row_ok[hh] && j < c.k_end && (!c.causal || j <= rs.qpos[hh]) &&
                             (c.window_left < 0 || j >= rs.qpos[hh] - c.window_left);
        x[hh][e] = visible ? v : -INFINITY;
      }
      mx[hh] = fmaxf(mx[hh], x[hh][e]);
    }
    mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 1));
    mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 2));
  }
  // -inf > -inf is false: a row that has seen only hidden keys does not ask for a rescale.
  const bool grow = mx[0] > m_run[0] + kDecodeRescaleSlack || mx[1] > m_run[1] + kDecodeRescaleSlack;
  if (__any_sync(0xffffffffu, grow)) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float m_new = fmaxf(m_run[hh], mx[hh]);
      const float alpha = m_new == -INFINITY ? 1.0f : ex2_ftz(m_run[hh] - m_new);  // 0 when m_run was -inf
      m_run[hh] = m_new;
      l_run[hh] *= alpha;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o_acc[n][2 * hh] *= alpha;
        o_acc[n][2 * hh + 1] *= alpha;
      }
    }
  }
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float sum = 0.0f;
    const bool none = m_run[hh] == -INFINITY;  // nothing visible yet: every p is 0
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float pe = none ? 0.0f : ex2_ftz(x[hh][e] - m_run[hh]);
      sum += pe;
      s[e >> 1][2 * hh + (e & 1)] = pe;
    }
    l_run[hh] += sum;
  }
}

// O += P V for one 16-key chunk: P's A fragment is the two S tiles (probabilities, rounded to
// T); V's B fragments through ldmatrix.trans, `v_lane` being this lane's address for the first
// 16 columns: row (lane & 7) + ((lane >> 3) & 1) * 8 of the chunk, column (lane >> 4) * 8.
template <class T, int D>
__device__ __forceinline__ void decode_pv_step(float (&o_acc)[D / 8][4], const float (&s)[2][4], const T* v_lane) {
  const std::uint32_t pa[4] = {pack2f<T>(s[0][0], s[0][1]), pack2f<T>(s[0][2], s[0][3]), pack2f<T>(s[1][0], s[1][1]),
                               pack2f<T>(s[1][2], s[1][3])};
#pragma unroll
  for (int n16 = 0; n16 < D / 16; ++n16) {
    std::uint32_t bf[4];
    ldsm_x4_t(bf, v_lane + n16 * 16);
    mma16816<T>(o_acc[2 * n16], pa, bf[0], bf[1]);
    mma16816<T>(o_acc[2 * n16 + 1], pa, bf[2], bf[3]);
  }
}

// Merge and store. Every warp first writes its (m, l, o) to shared memory `smem` (free by then:
// the caller has waited for every copy and passed a barrier): warp w's 16 rows at
// os[w][16][D + 4], ms[w][16], ls[w][16]. Then the CTA walks `n_rows` merged rows r (m16
// tile r / 16 of `tiles` tiles, kgs warps per tile: warp k2 * tiles + r / 16 holds part k2);
// loc(r, t, hq) gives the output token and query head of row r (false: padding row, skipped).
// One split: o and lse; several: the normalized partial o and log2-sum-exp in the workspace.
template <class T, int D, class Loc>
__device__ __forceinline__ void decode_merge_store(const DecodeParams& p, unsigned char* smem, float (&m_run)[2],
                                                   float (&l_run)[2], const float (&o_acc)[D / 8][4], int n_rows,
                                                   int tiles, int kgs, std::int64_t b, int split, Loc loc) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int g4 = lane >> 2, q4 = lane & 3;
  const int nthreads = static_cast<int>(blockDim.x);
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    l_run[hh] += __shfl_xor_sync(0xffffffffu, l_run[hh], 1);
    l_run[hh] += __shfl_xor_sync(0xffffffffu, l_run[hh], 2);
  }
  const int nwarps = nthreads / 32;
  constexpr int kOld = D + 4;
  float* os = reinterpret_cast<float*>(smem);  // [warp][16][kOld]
  float* ms = os + nwarps * 16 * kOld;         // [warp][16]
  float* ls = ms + nwarps * 16;
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
  for (int i = tid; i < n_rows * D; i += nthreads) {
    const int r = i / D, col = i % D, rmt = r / 16, rr = r % 16;
    std::int64_t t = 0, hq = 0;
    if (!loc(r, t, hq)) continue;
    float m = -INFINITY;
    for (int k2 = 0; k2 < kgs; ++k2) m = fmaxf(m, ms[(k2 * tiles + rmt) * 16 + rr]);
    float l = 0.0f, acc = 0.0f;
    if (m != -INFINITY) {
      for (int k2 = 0; k2 < kgs; ++k2) {
        const int w = k2 * tiles + rmt;
        const float f = exp2f(ms[w * 16 + rr] - m);
        l += ls[w * 16 + rr] * f;
        acc += os[(w * 16 + rr) * kOld + col] * f;
      }
    }
    const bool empty = !(l > 0.0f);
    const float out = empty ? 0.0f : acc / l;
    const float lse2 = empty ? -INFINITY : m + log2f(l);
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

}  // namespace baracuda::attention::kernels
