// Device side of the persistent bulk-copy row kernels (launch shape: common/tma_rows.hpp):
// which rows and which slice of them a block owns, the row offsets, the ring of stages that
// thread 0 refills with cp.async.bulk, and the launch (dynamic shared memory, clusters).
// Used by normalization/kernels/norm_tma.cuh, norm_tma_lean.cuh and
// softmax/kernels/softmax_tma.cuh. sm_90 (bulk copies); the params struct P of a family
// has rows, cluster, threads, grid and the collapsed kept dims (kept_rank / kept_shape /
// kept_stride[op]).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "baracuda/core/status.hpp"
#include "common/bulk_copy.cuh"
#include "common/cluster_push.cuh"
#include "common/tma_rows.hpp"

namespace baracuda::kernels {

// The part of the rows a block owns: with cluster > 1 the `cluster` blocks of a thread-block
// cluster split each row into equal slices (rank r: elements [r n / cluster, (r + 1) n / cluster))
// and merge their statistics through distributed shared memory; clusters (or blocks) take
// rows first, first + step, ...
struct TmaSlice {
  std::int64_t first, step, my_rows, off;
  int n;           // elements of the slice
  unsigned bytes;  // its bytes
  int rank;        // in the cluster
  bool lead;       // rank 0: writes the row's statistics
};
__device__ __forceinline__ TmaSlice tma_slice(std::int64_t rows, std::int64_t n, int cluster, int esize) {
  TmaSlice s;
  const int c = cluster;
  s.rank = static_cast<int>(blockIdx.x % static_cast<unsigned>(c));
  s.first = blockIdx.x / c;
  s.step = gridDim.x / c;
  s.my_rows = s.first < rows ? (rows - s.first + s.step - 1) / s.step : 0;
  s.n = static_cast<int>(n / c);
  s.off = static_cast<std::int64_t>(s.rank) * s.n;
  s.bytes = static_cast<unsigned>(s.n * esize);
  s.lead = s.rank == 0;
  return s;
}

// row_offset (common/row_io.cuh) in 32-bit index arithmetic: the plans keep rows below
// 2^31, and the 64-bit divisions are a called routine whose registers spill.
template <class P>
__device__ __forceinline__ std::int64_t tma_row_offset(const P& p, int op, std::int64_t row64) {
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

// `stages` slots of kSources slices each in dynamic shared memory, slot s completing on
// full[s]. Every thread waits on the current slot; thread 0 fills a slot once every thread
// has taken the previous row of it into registers (after a block barrier), so the loads of
// the next rows overlap the work on this one. The stage and its phase are counters.
template <int kSources>
struct BulkRowRing {
  unsigned char* mem;
  std::uint64_t* full;
  int stages;
  unsigned bytes;  // a slice
  int s = 0;
  unsigned phase = 0;

  __device__ __forceinline__ void init() const {  // thread 0; the caller's barrier follows
    for (int i = 0; i < stages; ++i) mbarrier_init(&full[i], 1);
    mbarrier_init_fence();
  }
  __device__ __forceinline__ const unsigned char* current(int src) const {
    return mem + (static_cast<std::size_t>(s) * kSources + src) * bytes;
  }
  __device__ __forceinline__ void wait() const { mbarrier_wait_parity(&full[s], phase); }
  // Thread 0: slot `slot` from src[0..kSources).
  __device__ __forceinline__ void fill(int slot, const void* const (&src)[kSources]) const {
    mbarrier_arrive_expect_tx(&full[slot], kSources * bytes);
#pragma unroll
    for (int k = 0; k < kSources; ++k)
      bulk_copy_to_shared(mem + (static_cast<std::size_t>(slot) * kSources + k) * bytes, src[k], bytes, &full[slot]);
  }
  // Thread 0, after a block barrier that follows every thread's reads of the current slot.
  __device__ __forceinline__ void refill_current(const void* const (&src)[kSources]) const {
    fence_proxy_async_shared();
    fill(s, src);
  }
  __device__ __forceinline__ void advance() {
    if (++s == stages) {
      s = 0;
      phase ^= 1u;
    }
  }
  // Thread 0: rows 0 .. stages - 1 of the block's `rows` into the slots; sources(i, src)
  // names row i's kSources slices.
  template <class F>
  __device__ __forceinline__ void start(std::int64_t rows, const F& sources) const {
    for (int i = 0; i < stages && i < rows; ++i) {
      const void* src[kSources];
      sources(static_cast<std::int64_t>(i), src);
      fill(i, src);
    }
  }
  // Thread 0 (see refill_current): row i + stages into the current slot, if there is one.
  template <class F>
  __device__ __forceinline__ void refill_after(std::int64_t i, std::int64_t rows, const F& sources) const {
    if (i + stages >= rows) return;
    const void* src[kSources];
    sources(i + stages, src);
    refill_current(src);
  }
};

// The static shared memory of a bulk-copy row kernel: the ring's barriers, the alternating
// block-reduction buffers (common/block_reduce.cuh's block_allreduce_flat) and the cluster
// push state.
struct TmaRowShared {
  std::uint64_t full[rows::kTmaMaxStages];
  float red[2][rows::kTmaMaxThreads / 32];
  ClusterPushState push;
};
// Every thread: the ring's barriers set up, then a block barrier, or with a cluster the
// push barriers and a cluster barrier (common/cluster_push.cuh); then thread 0 fills the
// first stages.
template <int kSources, class F>
__device__ __forceinline__ void tma_row_begin(TmaRowShared& sh, const BulkRowRing<kSources>& ring, int cluster,
                                              std::int64_t rows, const F& sources) {
  if (threadIdx.x == 0) ring.init();
  if (cluster > 1) cluster_push_init(sh.push);
  else __syncthreads();
  if (threadIdx.x == 0) ring.start(rows, sources);
}

// Launches a persistent row kernel: dynamic shared memory opted into, clusters of p.cluster
// blocks (more than 8 opted into as non-portable), and with clusters the grid trimmed to the
// clusters that can be resident at once (blocks are persistent, a second wave would only
// wait). `launched_grid`, when given, receives the grid launched.
template <class Kernel, class P>
Status launch_tma_row(Kernel kernel, const P& p, std::size_t smem, cudaStream_t s, const char* what,
                      std::int64_t* launched_grid = nullptr) {
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
  if (launched_grid != nullptr) *launched_grid = cfg.gridDim.x;
  return Status::ok();
}

}  // namespace baracuda::kernels
