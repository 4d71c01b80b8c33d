// LayerNorm / RMSNorm forward (optionally with the residual add) fed by bulk copies: the
// `tma_row` implementation (sm_90; host side: normalization.cpp, seam: norm_params.hpp).
//
// Why: the in-register kernels (norm.cuh) load a row, reduce it and write it with nothing
// else in flight, so at 16 KiB rows an SM holds only a few rows' loads at a time and the
// kernel is latency bound (about half the copy bandwidth). Here every block is persistent
// and keeps `stages` rows (x, and the residual when fused) in flight in shared memory: thread
// 0 refills a stage with cp.async.bulk as soon as the block has taken the previous row into
// registers, so the loads of the next rows overlap the reduction and the stores of this one.
//
// Per row: wait for the stage, every thread takes its vectors (t, t + T, ..., K = 2 or 4 of
// 16 bytes) into registers and forms its sum (LayerNorm) or sum of squares (RMSNorm); the
// block adds them in a fixed order with one barrier (block_allreduce_flat, deterministic),
// thread 0 refills the stage, LayerNorm takes the exact two-pass variance sum((h - mean)^2)
// from the registers with a second such reduction (no Welford merges: no divisions, one
// word a shuffle), and the row is written from registers. Weight and bias are the same for
// every row: the block loads them once into shared memory ahead of the stages. f32 math;
// mean = sum / n, var = sum((h - mean)^2) / n (biased), rstd = rsqrt(var + eps).
// Forward only: a backward on the same scheme (per-block f32 column accumulators in shared
// memory) measured 0.47-0.67x PyTorch on the H200 (run 12) and was removed (commit 26b412e).
// Preconditions (host): rows are one unit-stride run, 16-byte aligned, n a multiple of the
// vector, n <= threads * kVecs * vector, (stages * sources + 2 with weight or bias) * row
// bytes of dynamic shared memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/block_reduce.cuh"
#include "common/bulk_copy.cuh"
#include "common/device_types.cuh"
#include "common/row_io.cuh"
#include "common/tma_rows.cuh"
#include "common/vec_io.cuh"
#include "normalization/kernels/norm.cuh"
#include "normalization/norm_params.hpp"

namespace baracuda::kernels {

// An empty asm the compiler must assume rewrote h: its f32 conversions from the statistics
// are not kept alive across the block reduction (at 64 registers they spill); the output
// converts the packed values again, which costs a few integer ops.
template <class T, int V, int K>
__device__ __forceinline__ void forget_values(Vec<T, V> (&h)[K]) {
  static_assert(sizeof(Vec<T, V>) % 4 == 0, "whole 32-bit words");
#pragma unroll
  for (int j = 0; j < K; ++j) {
    auto* u = reinterpret_cast<std::uint32_t*>(&h[j]);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(Vec<T, V>) / 4); ++i) asm volatile("" : "+r"(u[i]));
  }
}

// Launch bounds: capped at 128 registers (rows::kTmaRegCap; the host plans
// rows::tma_blocks_per_sm blocks an SM from that).
template <class T, int K>
__global__ void __launch_bounds__(rows::kTmaMaxThreads, rows::kTmaMinBlocks) norm_fwd_tma(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = Compute<T>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ std::uint64_t full[rows::kTmaMaxStages];
  __shared__ C red[2][rows::kTmaMaxThreads / 32];
  __shared__ C slots[2];
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int stages = p.stages;
  const int sources = p.add_residual ? 2 : 1;
  const TmaSlice sl = tma_slice(p.rows, p.n, p.cluster, static_cast<int>(sizeof(T)));
  const unsigned row_bytes = sl.bytes;
  const std::int64_t first = sl.first, step = sl.step, my_rows = sl.my_rows;
  if (t == 0) {
    for (int s = 0; s < stages; ++s) mbarrier_init(&full[s], 1);
    mbarrier_init_fence();
  }
  // weight and bias (the same for every row) in shared memory ahead of the stages
  const int params = p.has_weight || p.has_bias ? 2 : 0;
  Vec<T, V>* sw = reinterpret_cast<Vec<T, V>*>(stage_mem);
  Vec<T, V>* sb = reinterpret_cast<Vec<T, V>*>(stage_mem + row_bytes);
  for (int q = t; q * V < sl.n; q += nt) {
    if (p.has_weight) sw[q] = load_elems<T, V>(static_cast<const T*>(p.fwd.weight), sl.off + static_cast<std::int64_t>(q) * V);
    if (p.has_bias) sb[q] = load_elems<T, V>(static_cast<const T*>(p.fwd.bias), sl.off + static_cast<std::int64_t>(q) * V);
  }
  unsigned char* stage_base = stage_mem + static_cast<std::size_t>(params) * row_bytes;
  __syncthreads();
  const T* x = static_cast<const T*>(p.fwd.x);
  const T* res = static_cast<const T*>(p.fwd.residual);
  auto refill = [&](std::int64_t i) {  // this block's row i into stage i % stages
    const int s = static_cast<int>(i % stages);
    const std::int64_t row = first + i * step;
    unsigned char* dst = stage_base + static_cast<std::size_t>(s) * sources * row_bytes;
    mbarrier_arrive_expect_tx(&full[s], sources * row_bytes);
    bulk_copy_to_shared(dst, x + tma_row_offset(p, 1, row) + sl.off, row_bytes, &full[s]);
    if (sources == 2) bulk_copy_to_shared(dst + row_bytes, res + tma_row_offset(p, 2, row) + sl.off, row_bytes, &full[s]);
  };
  if (t == 0)
    for (std::int64_t i = 0; i < stages && i < my_rows; ++i) refill(i);

  // The row's sum over the block (one barrier, buffers alternating) and the cluster (one
  // cluster barrier, slots alternating; the kernel ends with a cluster barrier).
  int rb = 0, cb = 0;
  auto row_sum = [&](C v) {
    v = block_allreduce_flat(v, MergeScalarSum<C>{}, red[rb]);
    rb ^= 1;
    if (p.cluster > 1) v = cluster_allreduce_alternating(v, MergeScalarSum<C>{}, slots, cb);
    return v;
  };
  const C inv_n = static_cast<C>(p.inv_n);
  for (std::int64_t i = 0; i < my_rows; ++i) {
    const int s = static_cast<int>(i % stages);
    const std::int64_t row = first + i * step;
    mbarrier_wait_parity(&full[s], static_cast<unsigned>((i / stages) & 1));
    const Vec<T, V>* sx = reinterpret_cast<const Vec<T, V>*>(stage_base + static_cast<std::size_t>(s) * sources * row_bytes);
    const Vec<T, V>* sr = reinterpret_cast<const Vec<T, V>*>(reinterpret_cast<const unsigned char*>(sx) + row_bytes);
    Vec<T, V> h[K];
    C sum = C(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int q = j * nt + t;  // the vector index in the row
      if (q * V >= sl.n) continue;
      h[j] = sx[q];
      if (sources == 2) {
        const Vec<T, V> r = sr[q];
#pragma unroll
        for (int e = 0; e < V; ++e) h[j].v[e] = from_compute<T>(vec_elem(h[j], e) + vec_elem(r, e));
      }
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C v = vec_elem(h[j], e);
        sum += p.layer ? v : v * v;
      }
    }
    forget_values(h);
    // LayerNorm: sum(h); RMSNorm: sum(h^2). Its barrier also means every thread holds its
    // part of the row in registers: the stage can be refilled.
    sum = row_sum(sum);
    if (t == 0 && i + stages < my_rows) {
      fence_proxy_async_shared();
      refill(i + stages);
    }
    C mean = C(0), rstd;
    if (p.layer) {
      // exact two-pass variance: sum((h - mean)^2) over the registers, a second reduction
      mean = sum * inv_n;
      C sq = C(0);
#pragma unroll
      for (int j = 0; j < K; ++j) {
        if ((j * nt + t) * V >= sl.n) continue;
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const C d = vec_elem(h[j], e) - mean;
          sq += d * d;
        }
      }
      forget_values(h);
      sq = row_sum(sq);
      rstd = norm_rsqrt(sq * inv_n + static_cast<C>(p.eps));
    } else {
      rstd = norm_rsqrt(sum * inv_n + static_cast<C>(p.eps));
    }
    T* y = static_cast<T*>(p.fwd.y) + tma_row_offset(p, 0, row) + sl.off;
    T* hout = p.add_residual ? static_cast<T*>(p.fwd.residual_out) + tma_row_offset(p, 3, row) + sl.off : nullptr;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::int64_t e0 = slice_elem(0, j, t, nt, V);
      if (e0 >= sl.n) continue;
      if (hout != nullptr) store_row_vec<T, V>(hout + e0, h[j]);
      Vec<T, V> o, w, b;
      if (p.has_weight) w = sw[j * nt + t];
      if (p.has_bias) b = sb[j * nt + t];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        C v = (vec_elem(h[j], e) - mean) * rstd;
        if (p.has_weight) v *= vec_elem(w, e);
        if (p.has_bias) v += vec_elem(b, e);
        o.v[e] = from_compute<T>(v);
      }
      store_row_vec<T, V>(y + e0, o);
    }
    if (p.save_stats && t == 0 && sl.lead) {
      if (p.layer) static_cast<C*>(p.fwd.mean)[row] = mean;
      static_cast<C*>(p.fwd.rstd)[row] = rstd;
    }
  }
  if (p.cluster > 1) cluster_sync_all();  // the other blocks may still read this block's slots
#endif
}

template <class T>
Status launch_norm_fwd_tma(const norm::NormParams& p, cudaStream_t s) {
  const std::int64_t slice_bytes = p.n / p.cluster * static_cast<std::int64_t>(sizeof(T));
  const auto smem = static_cast<std::size_t>(
      rows::tma_row_smem_bytes(slice_bytes, p.stages, p.add_residual ? 2 : 1, p.has_weight || p.has_bias ? 2 : 0));
  return launch_tma_row(norm_fwd_tma<T, rows::kTmaVecsPerThread>, p, smem, s, "norm tma_row");
}

}  // namespace baracuda::kernels
