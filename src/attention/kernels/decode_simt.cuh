// SdpaDecodePlan's general kernel (SKU paged_decode.fwd.simt_warp_row): any float dtype, any
// head dim up to 512, any page size and strides, on CUDA cores.
//
// What: the decode attention of one query row (b, token t, query head hq) per warp, with the
// mask, softcap and ALiBi of baracuda/ops/decode.hpp.
// Parallel scheme: lane l holds q and the output accumulators of dims l, l + 32, ...
// (kPerLane of them); the warp walks the keys the row sees (the causal / window range, in
// order), each key's dot product reduced with a fixed xor-shuffle tree, and updates an online
// softmax (natural exp) in the compute type. Reads each KV row once per query head (no GQA
// sharing): this is the correctness path, not the fast one.
// Preconditions (probe): D <= 512 (kPerLane = 2, 4, 8, 16 covers D <= 64, 128, 256, 512).
// Numerics: compute in f32 (f64 for f64); deterministic (fixed key order and reduction tree).
// Speed: not a bench target (the tensor-core SKU is).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "attention/decode_params.hpp"
#include "attention/kernels/decode_common.cuh"
#include "common/device_types.cuh"

namespace baracuda::attention::kernels {

inline constexpr int kSimtWarps = 4;  // rows per 128-thread block

template <class T, int kPerLane>
__global__ void __launch_bounds__(kSimtWarps * 32) decode_simt_kernel(const DecodeParams p) {
  using C = baracuda::kernels::Compute<T>;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kSimtWarps + (threadIdx.x >> 5);
  if (row >= p.batch * p.sq * p.hq) return;
  const std::int64_t hq = row % p.hq, t = (row / p.hq) % p.sq, b = row / (p.hq * p.sq);
  const std::int64_t h = hq / p.group;

  const T* qg = static_cast<const T*>(p.q) + b * p.q_stride[0] + t * p.q_stride[1] + hq * p.q_stride[2];
  C q[kPerLane], acc[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + 32 * i;
    q[i] = d < p.d ? baracuda::kernels::to_compute(qg[d]) : C(0);
    acc[i] = C(0);
  }
  const std::int64_t seqlen = clamp_seqlen(p.seqlens[b * p.seqlens_stride], p.capacity);
  const std::int64_t qpos = seqlen - p.sq + t;
  std::int64_t lo = 0, hi = seqlen;
  if (p.causal && qpos + 1 < hi) hi = qpos + 1;
  if (p.window_left >= 0 && qpos - p.window_left > lo) lo = qpos - p.window_left;
  const C scale = static_cast<C>(p.scale), softcap = static_cast<C>(p.softcap);
  const C slope = p.alibi ? static_cast<C>(p.alibi[b * p.alibi_stride[0] + hq * p.alibi_stride[1]]) : C(0);
  const T* kbase = static_cast<const T*>(p.k);
  const T* vbase = static_cast<const T*>(p.v);
  C m = -INFINITY, l = C(0);
  for (std::int64_t j = lo; j < hi; ++j) {
    std::int64_t r = 0;
    const std::int64_t page = page_of(p, b, j, &r);
    C dot = C(0);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const std::int64_t d = lane + 32 * i;
      if (page >= 0 && d < p.d)
        dot += q[i] * baracuda::kernels::to_compute(kbase[page * p.k_stride[0] + r * p.k_stride[1] + h * p.k_stride[2] + d]);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    C s = dot * scale;
    if (softcap > C(0)) s = softcap * tanh(s / softcap);
    if (p.alibi) s -= slope * static_cast<C>(qpos > j ? qpos - j : j - qpos);
    const C m_new = s > m ? s : m;
    const C alpha = exp(m - m_new);
    const C pj = exp(s - m_new);
    l = l * alpha + pj;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const std::int64_t d = lane + 32 * i;
      const C v = page >= 0 && d < p.d
                      ? baracuda::kernels::to_compute(vbase[page * p.v_stride[0] + r * p.v_stride[1] + h * p.v_stride[2] + d])
                      : C(0);
      acc[i] = acc[i] * alpha + pj * v;
    }
    m = m_new;
  }
  T* og = static_cast<T*>(p.o) + b * p.o_stride[0] + t * p.o_stride[1] + hq * p.o_stride[2];
  const bool empty = !(l > C(0));
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const std::int64_t d = lane + 32 * i;
    if (d < p.d) og[d] = from_float<T>(empty ? C(0) : acc[i] / l);
  }
  if (lane == 0 && p.lse)
    p.lse[b * p.lse_stride[0] + hq * p.lse_stride[1] + t * p.lse_stride[2]] =
        empty ? -INFINITY : static_cast<float>(m + log(l));
}

}  // namespace baracuda::attention::kernels
