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
#include "common/vec_io.cuh"
#include "normalization/kernels/norm.cuh"
#include "normalization/norm_params.hpp"

namespace baracuda::kernels {

// The part of the rows a block owns: with cluster > 1 the `cluster` blocks of a thread-block
// cluster split each row into equal slices (rank r: elements [r n / cluster, (r + 1) n / cluster))
// and merge their statistics through distributed shared memory; clusters (or blocks) take
// rows first, first + step, ...
struct TmaSlice {
  std::int64_t first, step, my_rows, off;
  int n;           // elements of the slice
  unsigned bytes;  // its bytes
  bool lead;       // rank 0: writes the row's statistics
};
__device__ __forceinline__ TmaSlice tma_slice(const norm::NormParams& p, int esize) {
  TmaSlice s;
  const int c = p.cluster;
  const int rank = static_cast<int>(blockIdx.x % static_cast<unsigned>(c));
  s.first = blockIdx.x / c;
  s.step = gridDim.x / c;
  s.my_rows = s.first < p.rows ? (p.rows - s.first + s.step - 1) / s.step : 0;
  s.n = static_cast<int>(p.n / c);
  s.off = static_cast<std::int64_t>(rank) * s.n;
  s.bytes = static_cast<unsigned>(s.n * esize);
  s.lead = rank == 0;
  return s;
}

// row_offset (common/row_io.cuh) in 32-bit index arithmetic: tma_setup keeps rows below
// 2^31, and the 64-bit divisions are a called routine whose registers spill at the k = 2
// bucket's cap of 64.
__device__ __forceinline__ std::int64_t tma_row_offset(const norm::NormParams& p, int op, std::int64_t row64) {
  if (p.kept_rank <= 1) return p.kept_rank == 0 ? 0 : row64 * p.kept_stride[op][0];
  unsigned row = static_cast<unsigned>(row64);
  std::int64_t off = 0;
  for (int d = p.kept_rank - 1; d >= 0; --d) {
    const unsigned extent = static_cast<unsigned>(p.kept_shape[d]);
    const unsigned q = row / extent;
    off += static_cast<std::int64_t>(row - q * extent) * p.kept_stride[op][d];
    row = q;
  }
  return off;
}

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

// Launch bounds: capped at 128 registers (norm::kTmaRegCap; the host plans
// norm::tma_blocks_per_sm blocks an SM from that).
template <class T, int K>
__global__ void __launch_bounds__(norm::kTmaMaxThreads, norm::kTmaMinBlocks) norm_fwd_tma(norm::NormParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = Compute<T>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(128) unsigned char stage_mem[];
  __shared__ std::uint64_t full[norm::kTmaMaxStages];
  __shared__ C red[2][norm::kTmaMaxThreads / 32];
  __shared__ C slots[2];
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int stages = p.stages;
  const int sources = p.add_residual ? 2 : 1;
  const TmaSlice sl = tma_slice(p, static_cast<int>(sizeof(T)));
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
        for (int e = 0; e < V; ++e) h[j].v[e] = from_compute<T>(to_compute(h[j].v[e]) + to_compute(r.v[e]));
      }
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C v = to_compute(h[j].v[e]);
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
          const C d = to_compute(h[j].v[e]) - mean;
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
      if (hout != nullptr) store_vec<T, V>(hout + e0, h[j]);
      Vec<T, V> o, w, b;
      if (p.has_weight) w = sw[j * nt + t];
      if (p.has_bias) b = sb[j * nt + t];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        C v = (to_compute(h[j].v[e]) - mean) * rstd;
        if (p.has_weight) v *= to_compute(w.v[e]);
        if (p.has_bias) v += to_compute(b.v[e]);
        o.v[e] = from_compute<T>(v);
      }
      store_vec<T, V>(y + e0, o);
    }
    if (p.save_stats && t == 0 && sl.lead) {
      if (p.layer) static_cast<C*>(p.fwd.mean)[row] = mean;
      static_cast<C*>(p.fwd.rstd)[row] = rstd;
    }
  }
  if (p.cluster > 1) cluster_sync_all();  // the other blocks may still read this block's slots
#endif
}

// Launches a tma_row kernel: dynamic shared memory opted into, clusters of p.cluster blocks
// (more than 8 opted into as non-portable), and with clusters the grid trimmed to the
// clusters that can be resident at once (blocks are persistent, a second wave would only
// wait).
template <class Kernel>
Status launch_tma_row(Kernel kernel, const norm::NormParams& p, std::size_t smem, cudaStream_t s, const char* what) {
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e == cudaSuccess && p.cluster > 8) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(p.grid));
  cfg.blockDim = dim3(static_cast<unsigned>(p.threads));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(p.cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = p.cluster > 1 ? 1 : 0;
  if (e == cudaSuccess && p.cluster > 1) {
    int clusters = 0;
    e = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
    if (e == cudaSuccess && clusters > 0)
      cfg.gridDim.x = static_cast<unsigned>(std::min<std::int64_t>(p.grid, static_cast<std::int64_t>(clusters) * p.cluster));
  }
  if (e == cudaSuccess) e = cudaLaunchKernelEx(&cfg, kernel, p);
  if (e != cudaSuccess) return Status(Code::kCudaError, std::string(what) + ": " + cudaGetErrorString(e));
  return Status::ok();
}

template <class T>
Status launch_norm_fwd_tma(const norm::NormParams& p, cudaStream_t s) {
  const std::int64_t slice_bytes = p.n / p.cluster * static_cast<std::int64_t>(sizeof(T));
  const std::size_t smem = norm::tma_smem_bytes(slice_bytes, p.stages, p.has_weight || p.has_bias, p.add_residual);
  return launch_tma_row(norm_fwd_tma<T, norm::kTmaVecsPerThread>, p, smem, s, "norm tma_row");
}

}  // namespace baracuda::kernels
