// Forward reduction kernels: y[g] = op over the n reduced elements of group g.
//
// Parallel schemes (reduce_params.hpp describes the collapsed problem):
//   row (warp or block)  reduced elements unit-stride: one warp (short rows, 8 rows per
//                        256-thread block) or one block per row; each thread keeps 4 loads
//                        of V elements in flight (16-byte vectors when V > 1), folds them
//                        into its accumulator in a fixed order, then a fixed warp/block tree;
//                        ops with `add_chunk` (var / std, argmax / argmin, amax / amin /
//                        max / min, logsumexp but f64) take the U x V loaded elements at
//                        once (one merge a chunk, not one an element).
//   split row            few, long rows: `slices` blocks per row write partial accumulators
//                        to the workspace; finish_kernel merges them in slice order.
//   column               reduced dim strided, a kept dim unit-stride (inner): a 2-D block of
//                        bx threads along inner (V elements each) x by threads along the
//                        reduced dim, coalesced along inner; the by partials merge in a fixed
//                        shared-memory tree; `slices` > 1 splits the reduced dim (partials).
//   generic              any reduced dims: block per (group, slice), elements unravelled.
// Deterministic: no atomics; every merge order is fixed by the launch shape, which depends
// only on the problem and the device's SM count.
// PDL (sm_90, p.pdl): each pass-1 block triggers on entry, so finish_kernel's blocks are
// scheduled once the last pass-1 block is resident (they take no slot pass 1 still needs)
// and wait in pdl_wait() for pass 1 to complete; the finish launch gap is hidden.
// Preconditions (checked by the host): V > 1 only with n (row) or inner (column) a multiple
// of V, 16-byte aligned pointers and strides that keep vectors aligned; blockDim.x = threads.
// Bench lines: `reduce` suite (sum_rows bf16 16384x8192, sum_cols, sum_all f32 2^28).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/pdl.cuh"
#include "common/row_io.cuh"
#include "common/vec_io.cuh"
#include "reduce/kernels/reduce_ops.cuh"

namespace baracuda::kernels::reduce {

using baracuda::reduce::ReduceImpl;

__device__ __forceinline__ std::int64_t out_offset(const ReduceParams& p, std::int64_t g) {
  if (p.inner > 1) {
    const std::int64_t o = g / p.inner;
    return row_offset(p, 1, o) + (g - o * p.inner) * p.inner_stride_y;
  }
  return row_offset(p, 1, g);
}

__device__ __forceinline__ std::int64_t red_offset(const ReduceParams& p, std::int64_t e) {
  if (p.red_rank <= 1) return p.red_rank == 0 ? 0 : e * p.red_stride[0];
  std::int64_t off = 0;
  for (int d = p.red_rank - 1; d >= 0; --d) {
    const std::int64_t q = e / p.red_shape[d];
    off += (e - q * p.red_shape[d]) * p.red_stride[d];
    e = q;
  }
  return off;
}

template <class T, int V>
__device__ __forceinline__ Vec<T, V> load_v(const T* p) {
  if constexpr (V > 1) return load_vec<T, V>(p);
  else {
    Vec<T, 1> r;
    r.v[0] = *p;
    return r;
  }
}

// Writes the group's result, or its slice's partial accumulator.
template <class Op>
__device__ __forceinline__ void emit(const ReduceParams& p, const Op& op, std::int64_t g, std::int64_t slice,
                                     const typename Op::Acc& acc) {
  if (p.slices > 1) static_cast<typename Op::Acc*>(p.partial)[g * p.slices + slice] = acc;
  else op.store(p.y, out_offset(p, g), acc, p.n);
}

// Whether Op takes the row kernel's loaded elements by add_chunk (its kChunked flag).
template <class Op>
constexpr bool chunked() {
  if constexpr (requires { Op::kChunked; }) return Op::kChunked;
  else return false;
}

template <class T, class Op, int V, bool kWarp>
__global__ void __launch_bounds__(256) row_kernel(const ReduceParams p) {
  using Acc = typename Op::Acc;
  pdl_trigger();
  const Op op(p);
  int nt, t;
  std::int64_t row, slice;
  if constexpr (kWarp) {
    nt = 32;
    t = static_cast<int>(threadIdx.x & 31);
    row = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    slice = 0;
  } else {
    nt = static_cast<int>(blockDim.x);
    t = static_cast<int>(threadIdx.x);
    row = static_cast<std::int64_t>(blockIdx.x) / p.slices;
    slice = static_cast<std::int64_t>(blockIdx.x) - row * p.slices;
  }
  const bool active = row < p.groups;
  Acc acc = op.identity();
  if (active) {
    const T* x = static_cast<const T*>(p.x) + row_offset(p, 0, row);
    const std::int64_t beg = slice * p.slice_len;
    const std::int64_t end = beg + p.slice_len < p.n ? beg + p.slice_len : p.n;
    constexpr int U = 4;
    const std::int64_t step = static_cast<std::int64_t>(nt) * V;
    std::int64_t e = beg + static_cast<std::int64_t>(t) * V;
    for (; e + (U - 1) * step < end; e += U * step) {
      Vec<T, V> buf[U];
#pragma unroll
      for (int u = 0; u < U; ++u) buf[u] = load_v<T, V>(x + e + u * step);
      if constexpr (chunked<Op>()) {
        op.template add_chunk<U, V>(acc, buf, e, step);  // the U x V elements at once (reduce_ops.cuh)
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int i = 0; i < V; ++i) op.add(acc, buf[u].v[i], e + u * step + i);
      }
    }
    for (; e < end; e += step) {
      const Vec<T, V> b = load_v<T, V>(x + e);
#pragma unroll
      for (int i = 0; i < V; ++i) op.add(acc, b.v[i], e + i);
    }
  }
  auto merge = [&op](Acc a, Acc b) { return op.merge(a, b); };
  if constexpr (kWarp) {
    acc = warp_allreduce(acc, merge);
    if (t == 0 && active) emit(p, op, row, 0, acc);
  } else {
    __shared__ Acc smem[33];
    acc = block_allreduce(acc, merge, op.identity(), smem);
    if (t == 0) emit(p, op, row, slice, acc);
  }
}

template <class T, class Op>
__global__ void __launch_bounds__(256) generic_kernel(const ReduceParams p) {
  using Acc = typename Op::Acc;
  pdl_trigger();
  const Op op(p);
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) / p.slices;
  const std::int64_t slice = static_cast<std::int64_t>(blockIdx.x) - row * p.slices;
  const T* x = static_cast<const T*>(p.x) + row_offset(p, 0, row);
  const std::int64_t beg = slice * p.slice_len;
  const std::int64_t end = beg + p.slice_len < p.n ? beg + p.slice_len : p.n;
  Acc acc = op.identity();
  for (std::int64_t e = beg + threadIdx.x; e < end; e += blockDim.x) op.add(acc, x[red_offset(p, e)], e);
  __shared__ Acc smem[33];
  acc = block_allreduce(acc, [&op](Acc a, Acc b) { return op.merge(a, b); }, op.identity(), smem);
  if (threadIdx.x == 0) emit(p, op, row, slice, acc);
}

template <class T, class Op, int V>
__global__ void __launch_bounds__(256) column_kernel(const ReduceParams p) {
  using Acc = typename Op::Acc;
  pdl_trigger();
  const Op op(p);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % p.bx, ty = tid / p.bx;
  std::int64_t b = blockIdx.x;
  const std::int64_t slice = b % p.slices;
  b /= p.slices;
  const std::int64_t per_block = static_cast<std::int64_t>(p.bx) * V;
  const std::int64_t ib_count = (p.inner + per_block - 1) / per_block;
  const std::int64_t ib = b % ib_count, o = b / ib_count;
  const std::int64_t i0 = ib * per_block + static_cast<std::int64_t>(tx) * V;
  const bool active = i0 < p.inner;
  Acc acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = op.identity();
  if (active) {
    const T* x = static_cast<const T*>(p.x) + row_offset(p, 0, o) + i0;
    const std::int64_t beg = slice * p.slice_len;
    const std::int64_t end = beg + p.slice_len < p.n ? beg + p.slice_len : p.n;
    const std::int64_t sr = p.red_rank == 0 ? 0 : p.red_stride[0];
    const std::int64_t by = p.by;
    std::int64_t r = beg + ty;
    constexpr int U = 4;
    for (; r + (U - 1) * by < end; r += U * by) {
      Vec<T, V> buf[U];
#pragma unroll
      for (int u = 0; u < U; ++u) buf[u] = load_v<T, V>(x + (r + u * by) * sr);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int v = 0; v < V; ++v) op.add(acc[v], buf[u].v[v], r + u * by);
    }
    for (; r < end; r += by) {
      const Vec<T, V> bv = load_v<T, V>(x + r * sr);
#pragma unroll
      for (int v = 0; v < V; ++v) op.add(acc[v], bv.v[v], r);
    }
  }
  __shared__ Acc smem[256];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    smem[tid] = acc[v];
    __syncthreads();
    for (int s = p.by >> 1; s > 0; s >>= 1) {
      if (ty < s) smem[tid] = op.merge(smem[tid], smem[tid + s * p.bx]);
      __syncthreads();
    }
    if (ty == 0 && active && i0 + v < p.inner) emit(p, op, o * p.inner + i0 + v, slice, smem[tid]);
    __syncthreads();
  }
}

// One warp per group merges its slices' partials in slice order (lane-strided, then the
// fixed warp tree) and stores the result.
template <class T, class Op>
__global__ void __launch_bounds__(256) finish_kernel(const ReduceParams p) {
  using Acc = typename Op::Acc;
  const Op op(p);
  pdl_wait();  // pass 1 has completed and its partials are visible
  const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (g >= p.groups) return;  // whole warps leave together
  const int lane = static_cast<int>(threadIdx.x & 31);
  const Acc* part = static_cast<const Acc*>(p.partial) + g * p.slices;
  Acc acc = op.identity();
  for (std::int64_t s = lane; s < p.slices; s += 32) acc = op.merge(acc, part[s]);
  acc = warp_allreduce(acc, [&op](Acc a, Acc b) { return op.merge(a, b); });
  if (lane == 0) op.store(p.y, out_offset(p, g), acc, p.n);
}

inline Status launch_status(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string("reduce ") + what + " launch: " + cudaGetErrorString(e));
}

// Launches the params' impl for (T, Op), then the finishing pass when slices > 1.
template <class T, class Op>
Status launch_op(const ReduceParams& p, cudaStream_t s) {
  if (p.groups == 0) return Status::ok();
  constexpr int VV = 16 / sizeof(T) > 0 ? static_cast<int>(16 / sizeof(T)) : 1;
  const bool vec = p.vec > 1;
  const unsigned threads = static_cast<unsigned>(p.threads);
  switch (p.impl) {
    case ReduceImpl::kWarpRow: {
      const auto grid = static_cast<unsigned>((p.groups + 7) / 8);
      if (vec) row_kernel<T, Op, VV, true><<<grid, 256, 0, s>>>(p);
      else row_kernel<T, Op, 1, true><<<grid, 256, 0, s>>>(p);
      break;
    }
    case ReduceImpl::kBlockRow:
    case ReduceImpl::kSplitRow: {
      const auto grid = static_cast<unsigned>(p.groups * p.slices);
      if (vec) row_kernel<T, Op, VV, false><<<grid, threads, 0, s>>>(p);
      else row_kernel<T, Op, 1, false><<<grid, threads, 0, s>>>(p);
      break;
    }
    case ReduceImpl::kColumn: {
      const std::int64_t per_block = static_cast<std::int64_t>(p.bx) * (vec ? VV : 1);
      const std::int64_t outer = p.groups / p.inner;
      const auto grid = static_cast<unsigned>(outer * ((p.inner + per_block - 1) / per_block) * p.slices);
      if (vec) column_kernel<T, Op, VV><<<grid, 256, 0, s>>>(p);
      else column_kernel<T, Op, 1><<<grid, 256, 0, s>>>(p);
      break;
    }
    case ReduceImpl::kColumnStream: return Status(Code::kInternal, "reduce: column_stream runs the elementwise column reduction");
    case ReduceImpl::kGeneric: {
      const auto grid = static_cast<unsigned>(p.groups * p.slices);
      generic_kernel<T, Op><<<grid, threads, 0, s>>>(p);
      break;
    }
  }
  BARACUDA_TRY(launch_status("pass 1"));
  if (p.slices > 1) {
    (void)launch_dependent(p.pdl, finish_kernel<T, Op>, dim3(static_cast<unsigned>((p.groups + 7) / 8)), dim3(256), s, p);
    BARACUDA_TRY(launch_status("finish"));  // the launch's error, if any, is the last error (and is cleared)
  }
  return Status::ok();
}

}  // namespace baracuda::kernels::reduce
