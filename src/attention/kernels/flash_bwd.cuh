// Flash SDPA backward, mma.sync (sm_80+): the FlashAttention-2 backward.
//
// What: dQ, dK, dV of o = softmax(S) V from q, k, v, o, dO and the forward's lse (natural log),
// S the forward's scores (scale, softcap, bias, ALiBi, mask; dropout replayed from the seed).
// With P = exp(S - lse), dP = dO V^T (times the dropout keep / (1 - p)), Delta = rowsum(dO * O):
//   dV = P_dropped^T dO,  dS = P * (dP - Delta) * scale * softcap',  dK = dS^T Q,  dQ = dS K.
//
// Kernels (one launch sequence per run, workspace from the plan, nothing allocated):
//  1. preprocess: Delta per query row (f32, workspace), and the f32 dQ accumulator zeroed
//     (atomic SKU); 8 lanes per row, 16-byte loads.
//  2. dkdv: a CTA per (KV block of kN = 64 rows, batch, KV head), 4 warps each owning 16 KV
//     rows; it walks every query head of the KV head's group (GQA sums in a fixed order, so dK
//     and dV are deterministic) and every query block of kM rows that sees the KV block. Q and
//     dO tiles (with lse and Delta) stream through cp.async double buffering; per step a warp
//     forms S^T = K_w Q^T and dP^T = V_w dO^T (16 x kM, f32 registers), P^T and dS^T in
//     registers, and accumulates dV += P^T dO, dK += dS^T Q in registers (ldmatrix.trans for
//     the k-major operands). Atomic SKU: dS^T goes through shared memory and the CTA adds
//     dQ = dS K (kM x D) into the f32 workspace with atomics. Head dims above 128 run the
//     kernel twice (pass 1: dV, pass 2: dK and dQ) so a warp holds only one D-wide accumulator.
//  3a. atomic SKU: convert the f32 dQ accumulator to the output dtype (strided rows).
//  3b. deterministic SKU: dq: a CTA per (query block of 64, batch, query head), 4 warps x 16
//     query rows, walking the visible KV blocks (K, V double buffered), recomputing S, P, dP,
//     dS and accumulating dQ = dS K in registers.
//
// Masks as in the forward (visited ranges from the causal / window bounds; only tiles at the
// band's edges masked element-wise). Padded query rows read lse = +inf (P = 0), Delta = 0, and
// zero Q / dO; padded keys are masked. Rows the forward saw as fully masked (lse = -inf) give
// P = 0: no gradient.
//
// Preconditions: those of the forward, plus lse given (f32), dO / dQ / dK / dV rows 16-byte
// aligned with a contiguous head dim.
#pragma once

#include "attention/kernels/flash_common.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::attention::kernels {

template <int D>
struct FlashBwdConfig {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 128;
  static constexpr int kN = FlashTiles::bwd_n(D);  // KV rows per dkdv CTA (16 per warp)
  static_assert(kN == 16 * kWarps);
  static constexpr int kM = FlashTiles::bwd_m(D);  // query rows per dkdv step (register budget)
  static constexpr bool kTwoPass = D > 128;
  static constexpr int kDsStride = kM + 8;
  static constexpr int kSmemDkdv = FlashTiles::bwd_smem(D);
  static constexpr int kMq = FlashTiles::dq_m(D);  // query rows per dq CTA (16 per warp)
  static_assert(kMq == 16 * kWarps);
  static constexpr int kNq = FlashTiles::dq_n(D);
  static constexpr int kSmemDq = FlashTiles::dq_smem(D);
};

// Row r of the [rows] query rows of head h: (batch, position) and its element offset in an
// operand with strides (b, h, s).
struct RowPos {
  int b = 0;
  std::int64_t tok = 0;  // dense: position i; varlen: token index
};
__device__ __forceinline__ RowPos row_pos(const FlashBwdParams& p, std::int64_t r) {
  RowPos rp;
  if (p.cu_q != nullptr) {
    rp.tok = r;
  } else {
    rp.b = static_cast<int>(r / p.seqlen_q);
    rp.tok = r - static_cast<std::int64_t>(rp.b) * p.seqlen_q;
  }
  return rp;
}

// 1. Delta = rowsum(dO * O), and the dQ accumulator zeroed. 8 lanes per row, 32 rows per block.
template <class T, int D>
__global__ void __launch_bounds__(256) flash_bwd_preprocess_kernel(const FlashBwdParams p) {
  const int h = blockIdx.y;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * 32 + threadIdx.x / 8;
  const int l8 = threadIdx.x & 7;
  if (r >= p.rows) return;  // whole 8-lane groups leave together
  const unsigned group_mask = 0xffu << (threadIdx.x & 24);
  const RowPos rp = row_pos(p, r);
  const T* o = static_cast<const T*>(p.o) + rp.b * p.o_b + h * p.o_h + rp.tok * p.o_s;
  const T* d = static_cast<const T*>(p.dout) + rp.b * p.do_b + h * p.do_h + rp.tok * p.do_s;
  float acc = 0.f;
#pragma unroll
  for (int c = l8; c < D / 8; c += 8) {
    const uint4 a = *reinterpret_cast<const uint4*>(o + c * 8);
    const uint4 g = *reinterpret_cast<const uint4*>(d + c * 8);
    const std::uint32_t av[4] = {a.x, a.y, a.z, a.w}, gv[4] = {g.x, g.y, g.z, g.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 x = unpack2<T>(av[k]), y = unpack2<T>(gv[k]);
      acc += x.x * y.x + x.y * y.y;
    }
  }
  acc += __shfl_xor_sync(group_mask, acc, 1);
  acc += __shfl_xor_sync(group_mask, acc, 2);
  acc += __shfl_xor_sync(group_mask, acc, 4);
  const std::int64_t row = static_cast<std::int64_t>(h) * p.rows + r;
  if (l8 == 0) p.delta[row] = acc;
  if (p.dq_accum != nullptr) {
    float4* z = reinterpret_cast<float4*>(p.dq_accum + row * D);
#pragma unroll
    for (int c = l8; c < D / 4; c += 8) z[c] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// 3a. dQ = the f32 accumulator in the output dtype. 8 lanes per row, 32 rows per block.
template <class T, int D>
__global__ void __launch_bounds__(256) flash_bwd_convert_dq_kernel(const FlashBwdParams p) {
  const int h = blockIdx.y;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * 32 + threadIdx.x / 8;
  const int l8 = threadIdx.x & 7;
  if (r >= p.rows) return;
  const RowPos rp = row_pos(p, r);
  T* dq = static_cast<T*>(p.dq) + rp.b * p.dq_b + h * p.dq_h + rp.tok * p.dq_s;
  const float4* src = reinterpret_cast<const float4*>(p.dq_accum + (static_cast<std::int64_t>(h) * p.rows + r) * D);
#pragma unroll
  for (int c = l8; c < D / 8; c += 8) {
    const float4 a = src[2 * c], b = src[2 * c + 1];
    *reinterpret_cast<uint4*>(dq + c * 8) =
        make_uint4(pack2f<T>(a.x, a.y), pack2f<T>(a.z, a.w), pack2f<T>(b.x, b.y), pack2f<T>(b.z, b.w));
  }
}

// Writes a warp's 16 x D f32 accumulator rows [row0, row0 + 16) (valid < valid_rows) to global
// rows gbase + r * stride, staged through the warp's own 16 rows of smem tile `stage`.
template <class T, int D>
__device__ __forceinline__ void store_warp_rows(const float (&acc)[D / 8][4], T* stage, T* gbase, std::int64_t stride,
                                                int row0, int valid_rows, int lane) {
  constexpr int S = SmemTile<D>::kStride;
  const int g = lane >> 2, t = lane & 3;
  T* sw = stage + row0 * S;
#pragma unroll
  for (int d8 = 0; d8 < D / 8; ++d8)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      *reinterpret_cast<std::uint32_t*>(sw + (g + 8 * r) * S + d8 * 8 + 2 * t) = pack2f<T>(acc[d8][2 * r], acc[d8][2 * r + 1]);
  __syncwarp();
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, ch = c - (c / kChunks) * kChunks;
    if (row0 + r < valid_rows)
      *reinterpret_cast<uint4*>(gbase + (row0 + r) * stride + ch * 8) = *reinterpret_cast<const uint4*>(sw + r * S + ch * 8);
  }
  __syncwarp();
}

// One element (query i, key j of head h) of the backward: returns dS (scale and softcap
// folded in) from qk and dP (dO . v_j); *p_drop = the dropped, rescaled probability (dV's).
template <class T>
__device__ __forceinline__ float bwd_element(const FlashBwdParams& p, const SeqInfo& si, const DropKey& drop, float qk,
                                             float dp, int b, int h, int i, int j, float slope, bool need_mask,
                                             float lse2, float delta, float* p_drop) {
  float x, dcap = 1.f;
  if (p.extras) x = extra_score<T>(p, si, qk, b, h, i, j, slope, &dcap) * kLog2e;
  else x = qk * p.scale_log2;
  if (need_mask && !visible(p, si, i, j)) x = kNegInf;
  const float pr = exp2f(x - lse2);
  float keep = 1.f;
  if (p.extras && p.dropout_p > 0.f)
    keep = dropout_keep1(drop, static_cast<std::int64_t>(b) * p.heads_q + h, i, j) ? p.drop_scale : 0.f;
  *p_drop = pr * keep;
  return pr * (dp * keep - delta) * p.scale * dcap;
}

// 2. dK / dV (and the atomic dQ). kPass: 0 = dV and dK, 1 = dV only, 2 = dK only.
template <class T, int D, int kPass, bool kAtomicDq>
__global__ void __launch_bounds__(128, 1) flash_bwd_dkdv_kernel(const FlashBwdParams p) {
  using Cfg = FlashBwdConfig<D>;
  constexpr int kM = Cfg::kM, kN = Cfg::kN, kThreads = Cfg::kThreads, S = SmemTile<D>::kStride;
  constexpr bool kDv = kPass != 2, kDk = kPass != 1;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + kN * S;
  T* sQ = sV + kN * S;        // [2][kM][S]
  T* sdO = sQ + 2 * kM * S;   // [2][kM][S]
  T* sdS = sdO + 2 * kM * S;  // [kN][kM + 8]
  float* sLse = reinterpret_cast<float*>(sdS + kN * Cfg::kDsStride);  // [2][kM]
  float* sDelta = sLse + 2 * kM;                                      // [2][kM]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int hk = blockIdx.y, b = blockIdx.z;
  const SeqInfo si = seq_info(p, b);
  const int n0 = blockIdx.x * kN;
  if (n0 >= si.sk) return;
  const int valid_k = min(kN, si.sk - n0);
  const std::int64_t krow = si.start_k + n0;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_b + hk * p.k_h + krow * p.k_s;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_b + hk * p.v_h + krow * p.v_s;

  int qlo, qhi;
  query_range(p, si, n0, n0 + valid_k - 1, qlo, qhi);
  const int m_begin = qlo / kM;
  const int num_m = qhi < qlo ? 0 : qhi / kM + 1 - m_begin;
  const int total = num_m * p.group;

  float acc_dv[kDv ? D / 8 : 1][4];
  float acc_dk[kDk ? D / 8 : 1][4];
  zero_acc(acc_dv);
  zero_acc(acc_dk);

  // Issue the loads of step `step` into buffer `buf` (Q / dO async, lse / Delta plain).
  auto load_step = [&](int step, int buf) {
    const int hh = hk * p.group + step / num_m;
    const int m0 = (m_begin + step % num_m) * kM;
    const int valid_q = si.sq - m0;
    const std::int64_t qrow = si.start_q + m0;
    load_tile_async<kM, D, kThreads>(sQ + buf * kM * S,
                                     static_cast<const T*>(p.q) + b * p.q_b + hh * p.q_h + qrow * p.q_s, p.q_s,
                                     valid_q, tid);
    load_tile_async<kM, D, kThreads>(sdO + buf * kM * S,
                                     static_cast<const T*>(p.dout) + b * p.do_b + hh * p.do_h + qrow * p.do_s,
                                     p.do_s, valid_q, tid);
    if (tid < kM) {
      float l = kPosInf, dl = 0.f;
      if (tid < valid_q) {
        const float v = p.lse[b * p.lse_b + hh * p.lse_h + (qrow + tid) * p.lse_s];
        l = v == kNegInf ? kPosInf : v * kLog2e;
        const std::int64_t r = p.cu_q != nullptr ? qrow + tid : static_cast<std::int64_t>(b) * p.seqlen_q + m0 + tid;
        dl = p.delta[static_cast<std::int64_t>(hh) * p.rows + r];
      }
      sLse[buf * kM + tid] = l;
      sDelta[buf * kM + tid] = dl;
    }
  };

  if (total > 0) {
    load_tile_async<kN, D, kThreads>(sK, kg, p.k_s, valid_k, tid);
    if (kDk) load_tile_async<kN, D, kThreads>(sV, vg, p.v_s, valid_k, tid);
    load_step(0, 0);
    cp_async_commit();
  }
  DropKey drop{};
  if (p.extras && p.dropout_p > 0.f) drop = flash_dropout_key(p);

  for (int step = 0; step < total; ++step) {
    const int buf = step & 1;
    if (step + 1 < total) {
      load_step(step + 1, buf ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const int hh = hk * p.group + step / num_m;
    const int m0 = (m_begin + step % num_m) * kM;
    const T* cQ = sQ + buf * kM * S;
    const T* cdO = sdO + buf * kM * S;
    const float* cLse = sLse + buf * kM;
    const float* cDelta = sDelta + buf * kM;
    const float slope = p.extras && p.alibi != nullptr ? p.alibi[b * p.alibi_b + hh * p.alibi_h] : 0.f;

    // S^T = K_w Q^T and dP^T = V_w dO^T (16 x kM per warp).
    float st[kM / 8][4];
    warp_a_bt<T, D>(st, sK, warp * 16, cQ, lane);
    float dpt[kDk ? kM / 8 : 1][4];
    if constexpr (kDk) warp_a_bt<T, D>(dpt, sV, warp * 16, cdO, lane);

    // Elementwise: st <- P^T dropped (and scaled), dpt <- dS^T (scale and softcap folded in).
    const bool need_mask = tile_needs_mask(p, si, m0, kM, n0, kN);
#pragma unroll
    for (int c8 = 0; c8 < kM / 8; ++c8) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int jl = warp * 16 + g + 8 * (e >> 1);  // key row within the block
        const int il = c8 * 8 + 2 * t + (e & 1);      // query column within the step
        const int i = m0 + il, j = n0 + jl;
        float pd;
        const float ds = bwd_element<T>(p, si, drop, st[c8][e], kDk ? dpt[kDk ? c8 : 0][e] : 0.f, b, hh, i, j, slope, need_mask,
                                        cLse[il], cDelta[il], &pd);
        st[c8][e] = pd;
        if constexpr (kDk) dpt[kDk ? c8 : 0][e] = ds;
      }
    }

    if constexpr (kDv) warp_p_b<T, D>(acc_dv, st, cdO, lane);  // dV += P^T dO
    if constexpr (kDk) {
      warp_p_b<T, D>(acc_dk, dpt, cQ, lane);  // dK += dS^T Q
      if constexpr (kAtomicDq) {  // dQ (kM x D) += dS K through shared memory and f32 atomics
#pragma unroll
        for (int c8 = 0; c8 < kM / 8; ++c8)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            *reinterpret_cast<std::uint32_t*>(sdS + (warp * 16 + g + 8 * r) * Cfg::kDsStride + c8 * 8 + 2 * t) =
                pack2f<T>(dpt[c8][2 * r], dpt[c8][2 * r + 1]);
        __syncthreads();
        constexpr int kRowGroups = kM / 16, kColGroups = 4 / kRowGroups, kDc = D / kColGroups;
        const int rg = warp % kRowGroups, cg = warp / kRowGroups;
        const std::int64_t row_base =
            p.cu_q != nullptr ? si.start_q + m0 : static_cast<std::int64_t>(b) * p.seqlen_q + m0;
        float* dqa = p.dq_accum + (static_cast<std::int64_t>(hh) * p.rows + row_base) * D;
#pragma unroll
        for (int d16 = 0; d16 < kDc / 16; ++d16) {
          float acc[2][4];
          zero_acc(acc);
#pragma unroll
          for (int k16 = 0; k16 < kN / 16; ++k16) {
            std::uint32_t a[4], bf[4];
            load_a_t<Cfg::kDsStride>(a, sdS, rg * 16, k16 * 16, lane);
            frag_b_kn<SmemTile<D>::kStride>(bf, sK, k16 * 16, cg * kDc + d16 * 16, lane);
            mma16816<T>(acc[0], a, bf[0], bf[1]);
            mma16816<T>(acc[1], a, bf[2], bf[3]);
          }
#pragma unroll
          for (int h8 = 0; h8 < 2; ++h8)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int il = rg * 16 + g + 8 * (e >> 1);
              const int dcol = cg * kDc + d16 * 16 + h8 * 8 + 2 * t + (e & 1);
              if (m0 + il < si.sq) atomicAdd(dqa + il * D + dcol, acc[h8][e]);
            }
        }
      }
    }
    __syncthreads();  // buffers of this step are refilled next step
  }

  // Epilogue: dV, dK rows of this warp, staged through its own rows of sV / sK (after the last
  // step's barrier every warp is done reading them).
  if constexpr (kDv) {
    T* dvg = static_cast<T*>(p.dv) + b * p.dv_b + hk * p.dv_h + krow * p.dv_s;
    store_warp_rows<T, D>(acc_dv, sV, dvg, p.dv_s, warp * 16, valid_k, lane);
  }
  if constexpr (kDk) {
    T* dkg = static_cast<T*>(p.dk) + b * p.dk_b + hk * p.dk_h + krow * p.dk_s;
    store_warp_rows<T, D>(acc_dk, sK, dkg, p.dk_s, warp * 16, valid_k, lane);
  }
}

// 3b. Deterministic dQ: a CTA per (query block of 64, batch, query head).
template <class T, int D>
__global__ void __launch_bounds__(128, 1) flash_bwd_dq_kernel(const FlashBwdParams p) {
  using Cfg = FlashBwdConfig<D>;
  constexpr int kM = Cfg::kMq, kN = Cfg::kNq, kThreads = Cfg::kThreads, S = SmemTile<D>::kStride;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sdO = sQ + kM * S;
  T* sK = sdO + kM * S;      // [2][kN][S]
  T* sV = sK + 2 * kN * S;   // [2][kN][S]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  QueryBlock<T> qb;
  if (!query_block<kM, kN>(p, qb)) return;
  const SeqInfo& si = qb.si;
  const int b = qb.b, h = qb.h, m0 = qb.m0, valid_q = qb.valid_q, n_begin = qb.n_begin, n_end = qb.n_end;
  const T *kg = qb.k, *vg = qb.v;
  const std::int64_t qrow = si.start_q + m0;
  T* dqg = static_cast<T*>(p.dq) + b * p.dq_b + h * p.dq_h + qrow * p.dq_s;

  float acc[D / 8][4];
  zero_acc(acc);
  if (n_end > n_begin) {
    load_tile_async<kM, D, kThreads>(sQ, qb.q, p.q_s, valid_q, tid);
    load_tile_async<kM, D, kThreads>(sdO, static_cast<const T*>(p.dout) + b * p.do_b + h * p.do_h + qrow * p.do_s,
                                     p.do_s, valid_q, tid);
    load_tile_async<kN, D, kThreads>(sK, kg + static_cast<std::int64_t>(n_begin) * kN * p.k_s, p.k_s,
                                     si.sk - n_begin * kN, tid);
    load_tile_async<kN, D, kThreads>(sV, vg + static_cast<std::int64_t>(n_begin) * kN * p.v_s, p.v_s,
                                     si.sk - n_begin * kN, tid);
    cp_async_commit();
  }
  // This thread's two rows: lse (log2, +inf when padded or fully masked) and Delta.
  float lse2[2], delta[2];
  const int row_local[2] = {warp * 16 + g, warp * 16 + g + 8};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    lse2[r] = kPosInf;
    delta[r] = 0.f;
    if (row_local[r] < valid_q) {
      const float v = p.lse[b * p.lse_b + h * p.lse_h + (qrow + row_local[r]) * p.lse_s];
      lse2[r] = v == kNegInf ? kPosInf : v * kLog2e;
      const std::int64_t rr =
          p.cu_q != nullptr ? qrow + row_local[r] : static_cast<std::int64_t>(b) * p.seqlen_q + m0 + row_local[r];
      delta[r] = p.delta[static_cast<std::int64_t>(h) * p.rows + rr];
    }
  }
  const float slope = p.extras && p.alibi != nullptr ? p.alibi[b * p.alibi_b + h * p.alibi_h] : 0.f;
  DropKey drop{};
  if (p.extras && p.dropout_p > 0.f) drop = flash_dropout_key(p);

  for (int nb = n_begin; nb < n_end; ++nb) {
    const T *cK, *cV;
    kv_loop_step<kN, D, kThreads>(sK, sV, kg, vg, p.k_s, p.v_s, nb, n_begin, n_end, si.sk, tid, cK, cV);
    float s[kN / 8][4], dp[kN / 8][4];
    warp_a_bt<T, D>(s, sQ, warp * 16, cK, lane);
    warp_a_bt<T, D>(dp, sdO, warp * 16, cV, lane);
    const int j0 = nb * kN;
    const bool need_mask = tile_needs_mask(p, si, m0, kM, j0, kN);
#pragma unroll
    for (int n8 = 0; n8 < kN / 8; ++n8) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const int i = m0 + row_local[r], j = j0 + n8 * 8 + 2 * t + (e & 1);
        float pd;
        s[n8][e] = bwd_element<T>(p, si, drop, s[n8][e], dp[n8][e], b, h, i, j, slope, need_mask, lse2[r], delta[r], &pd);
      }
    }
    warp_p_b<T, D>(acc, s, cK, lane);
    __syncthreads();
  }
  store_warp_rows<T, D>(acc, sQ, dqg, p.dq_s, warp * 16, valid_q, lane);
}

// Host launcher of one head dim (instantiated by flash_bwd_d<D>.cu).
template <class T, int D>
Status launch_flash_bwd_typed(const FlashBwdParams& p, cudaStream_t stream) {
  using Cfg = FlashBwdConfig<D>;
  if (p.batch == 0 || p.heads_q == 0) return Status::ok();
  const unsigned hkv = static_cast<unsigned>(p.heads_q / p.group);
  if (p.rows > 0) {
    const dim3 grid(static_cast<unsigned>((p.rows + 31) / 32), static_cast<unsigned>(p.heads_q));
    flash_bwd_preprocess_kernel<T, D><<<grid, 256, 0, stream>>>(p);
    BARACUDA_TRY(gemm::kernel_launch_status("sdpa flash_mma backward preprocess"));
  }
  auto run_dkdv = [&](auto kernel) -> Status {
    const dim3 grid(static_cast<unsigned>((p.seqlen_k + Cfg::kN - 1) / Cfg::kN), hkv, static_cast<unsigned>(p.batch));
    if (grid.x == 0) return Status::ok();
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemDkdv) != cudaSuccess)
      return gemm::kernel_launch_status("sdpa flash_mma backward dkdv (shared memory attribute)");
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemDkdv, stream>>>(p);
    return gemm::kernel_launch_status("sdpa flash_mma backward dkdv");
  };
  const bool atomic = !p.deterministic;
  if constexpr (Cfg::kTwoPass) {
    BARACUDA_TRY(run_dkdv(flash_bwd_dkdv_kernel<T, D, 1, false>));
    BARACUDA_TRY(atomic ? run_dkdv(flash_bwd_dkdv_kernel<T, D, 2, true>) : run_dkdv(flash_bwd_dkdv_kernel<T, D, 2, false>));
  } else {
    BARACUDA_TRY(atomic ? run_dkdv(flash_bwd_dkdv_kernel<T, D, 0, true>) : run_dkdv(flash_bwd_dkdv_kernel<T, D, 0, false>));
  }
  if (atomic) {
    if (p.rows > 0) {
      const dim3 grid(static_cast<unsigned>((p.rows + 31) / 32), static_cast<unsigned>(p.heads_q));
      flash_bwd_convert_dq_kernel<T, D><<<grid, 256, 0, stream>>>(p);
      BARACUDA_TRY(gemm::kernel_launch_status("sdpa flash_mma backward dq convert"));
    }
  } else {
    const dim3 grid(static_cast<unsigned>((p.seqlen_q + Cfg::kMq - 1) / Cfg::kMq), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    if (grid.x > 0) {
      auto kernel = flash_bwd_dq_kernel<T, D>;
      if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemDq) != cudaSuccess)
        return gemm::kernel_launch_status("sdpa flash_mma backward dq (shared memory attribute)");
      kernel<<<grid, Cfg::kThreads, Cfg::kSmemDq, stream>>>(p);
      BARACUDA_TRY(gemm::kernel_launch_status("sdpa flash_mma backward dq"));
    }
  }
  return Status::ok();
}

template <int D>
Status launch_flash_bwd_impl(const FlashBwdParams& p, cudaStream_t stream) {
  return p.bf16 ? launch_flash_bwd_typed<__nv_bfloat16, D>(p, stream) : launch_flash_bwd_typed<__half, D>(p, stream);
}

}  // namespace baracuda::attention::kernels
