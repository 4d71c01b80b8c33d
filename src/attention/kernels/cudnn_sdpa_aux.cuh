// Small kernels around the cuDNN SDPA graphs (cudnn_sdpa_fwd.cpp / _bwd.cpp). cuDNN reads its
// per-call scalars from device tensors, and run() may neither copy from host memory nor sync,
// so these kernels produce them inside the stream:
//   - cudnn_sdpa_prep_kernel: per-sequence lengths [B] (from cu_seqlens, or one constant for a
//     dense padding mask), ragged offsets [B + 1] (cu_seqlens[b] * the operand's token stride)
//     and the dropout {seed, offset} pair (int64, from the host values or the device pair).
//   - cudnn_sdpa_stats_copy_kernel: the LSE between the caller's layout and the packed one
//     cuDNN reads or writes ([Tq, Hq] for varlen, [B, Hq, Sq] dense); on the way into a
//     backward, -inf (a row that saw no key) becomes 0 so that cuDNN's exp(s - lse) gives 0
//     instead of NaN on such rows.
//   - cudnn_sdpa_empty_rows_kernel: the contract's rule for a query row whose window holds no
//     key (o = 0, lse = -inf), which cuDNN does not guarantee.
//   - cudnn_sdpa_zero_grads_kernel: varlen backward, zero dQ of sequences without keys and
//     dK / dV of sequences without queries.
// Operands are f16 / bf16 (the cuDNN SKUs' dtypes), written as raw 16-bit zeros.
#pragma once

#include <cstdint>

#include "attention/cudnn_sdpa_common.hpp"

namespace baracuda::kernels::attention {

inline constexpr int kCudnnAuxBlock = 256;

__global__ void cudnn_sdpa_prep_kernel(baracuda::attention::cudnn_sdpa::PrepParams p) {
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b == 0 && p.seed_out) {
    p.seed_out[0] = static_cast<std::int64_t>(p.seed_in ? p.seed_in[0] : p.seed);
    p.seed_out[1] = static_cast<std::int64_t>(p.seed_in ? p.seed_in[1] : p.offset);
  }
  if (b > p.batch) return;
  if (b < p.batch) {
    if (p.seq_q) p.seq_q[b] = p.cu_q ? p.cu_q[b + 1] - p.cu_q[b] : p.dense_sq;
    if (p.seq_kv) p.seq_kv[b] = p.cu_k ? p.cu_k[b + 1] - p.cu_k[b] : p.dense_skv;
  }
  for (int r = 0; r < p.num_ragged; ++r) {
    const std::int32_t* cu = p.ragged_from_k[r] ? p.cu_k : p.cu_q;
    p.ragged[r][b] = static_cast<std::int32_t>(static_cast<std::int64_t>(cu[b]) * p.ragged_mult[r]);
  }
}

__global__ void cudnn_sdpa_stats_copy_kernel(baracuda::attention::cudnn_sdpa::StatsCopyParams p) {
  const std::int64_t total = p.n0 * p.n1 * p.n2;
  const std::int64_t bound = p.limit ? static_cast<std::int64_t>(*p.limit) : p.n1;
  for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < total;
       x += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t c = x % p.n1;
    const std::int64_t a = (x / p.n1) % p.n0;
    const std::int64_t z = x / (p.n1 * p.n0);
    if (c >= bound) continue;
    float v = p.src[z * p.src_s2 + a * p.src_s0 + c * p.src_s1];
    if (p.sanitize_neg_inf && v == -__int_as_float(0x7f800000)) v = 0.0f;
    p.dst[z * p.dst_s2 + a * p.dst_s0 + c * p.dst_s1] = v;
  }
}

__global__ void cudnn_sdpa_empty_rows_kernel(baracuda::attention::cudnn_sdpa::EmptyRowsParams a) {
  const auto& p = a.p;
  const std::int64_t total = p.batch * p.sq * p.hq;
  for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < total;
       x += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t h = x % p.hq;
    const std::int64_t i = (x / p.hq) % p.sq;
    const std::int64_t b = x / (p.hq * p.sq);
    std::int64_t sq_b = p.sq, skv_b = p.skv, row = b * p.o.b + i * p.o.s, lrow = b * p.lse.b + i * p.lse.s;
    if (a.cu_q) {
      sq_b = a.cu_q[b + 1] - a.cu_q[b];
      skv_b = a.cu_k[b + 1] - a.cu_k[b];
      row = (a.cu_q[b] + i) * p.o.s;
      lrow = (a.cu_q[b] + i) * p.lse.s;
    }
    if (i >= sq_b) continue;
    std::int64_t lo = 0, hi = 0;
    p.key_range(i, sq_b, skv_b, &lo, &hi);
    if (lo <= hi) continue;
    std::uint16_t* orow = a.o + row + h * p.o.h;
    for (std::int64_t d = 0; d < p.dv; ++d) orow[d] = 0;
    if (a.lse) a.lse[lrow + h * p.lse.h] = -__int_as_float(0x7f800000);
  }
}

__global__ void cudnn_sdpa_zero_grads_kernel(baracuda::attention::cudnn_sdpa::ZeroGradsParams p) {
  const std::int64_t b = blockIdx.x;
  const std::int64_t q0 = p.cu_q[b], nq = p.cu_q[b + 1] - q0;
  const std::int64_t k0 = p.cu_k[b], nk = p.cu_k[b + 1] - k0;
  if (nk == 0 && nq > 0) {
    const std::int64_t n = nq * p.hq * p.dk_dim;
    for (std::int64_t x = threadIdx.x; x < n; x += blockDim.x) {
      const std::int64_t d = x % p.dk_dim, h = (x / p.dk_dim) % p.hq, t = x / (p.dk_dim * p.hq);
      p.dq[(q0 + t) * p.sdq.s + h * p.sdq.h + d] = 0;
    }
  }
  if (nq == 0 && nk > 0) {
    const std::int64_t n = nk * p.hkv * p.dk_dim;
    for (std::int64_t x = threadIdx.x; x < n; x += blockDim.x) {
      const std::int64_t d = x % p.dk_dim, h = (x / p.dk_dim) % p.hkv, t = x / (p.dk_dim * p.hkv);
      p.dk[(k0 + t) * p.sdk.s + h * p.sdk.h + d] = 0;
    }
    const std::int64_t m = nk * p.hkv * p.dv_dim;
    for (std::int64_t x = threadIdx.x; x < m; x += blockDim.x) {
      const std::int64_t d = x % p.dv_dim, h = (x / p.dv_dim) % p.hkv, t = x / (p.dv_dim * p.hkv);
      p.dv[(k0 + t) * p.sdv.s + h * p.sdv.h + d] = 0;
    }
  }
}

}  // namespace baracuda::kernels::attention
