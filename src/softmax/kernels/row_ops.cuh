// The row scaffolding of the gumbel-softmax and sparsemax kernels (host side:
// src/softmax/row_ops.cpp; seam: row_op_params.hpp; the ops: gumbel_softmax.cuh,
// sparsemax.cuh).
//
// What: an op is a handful of passes over one row: fold the row into a statistic, merge it
// across the row's threads, then write the outputs from the merged statistics. The op is
// written once against two row holders and two merge scopes:
//  * RegRow: the row in registers, thread t of nt holding K 16-byte vectors (row_io.cuh's
//    layout: vector j at element (j * nt + t) * V), loaded once and converted to the compute
//    type; `map` applies the op's input transform once (gumbel: z = (x + g) / tau).
//  * LoopRow: the row in memory, thread t walking elements t, t + nt, ... with the axis
//    strides (any stride, any length); the transform is applied at every read, each pass
//    re-reads the row (L2 for rows that fit). A transform that maps 4 elements at once
//    (gumbel's Philox blocks) walks unit-stride rows by quads of consecutive elements.
//  * Scope<warp>: warp_allreduce (one warp per row); Scope<block>: block_allreduce. Both
//    fixed trees: every thread of the row gets the same bits, so the ops' data-dependent
//    loops (sparsemax's Newton steps) stay uniform and the result is deterministic.
// Parallel scheme: kWarp: 8 rows per 256-thread block; kBlock / kLoop: one block per row.
// Preconditions (row_ops.cpp checks them): register rows need unit axis stride, len % V == 0
// and 16-byte aligned rows; the loop kernel runs any layout. Numerics: f32 for 16/32-bit
// types, f64 for f64, rounded once at the store. Bench: `baracuda-bench --suite softmax`.
#pragma once

#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/device_types.cuh"
#include "common/row_io.cuh"
#include "common/vec_io.cuh"
#include "softmax/row_op_params.hpp"

namespace baracuda::kernels::rowop {

using softmax::RowOpImpl;
using softmax::RowOpParams;

enum class Mode : int { kWarp, kBlock, kLoop };

template <bool kWarp>
struct Scope {
  unsigned char* smem;  // 33 values of at most 32 bytes
  template <class R, class M>
  __device__ __forceinline__ R all(R v, M merge, R identity) const {
    static_assert(sizeof(R) <= 32, "scope buffer holds 32-byte values");
    if constexpr (kWarp) return warp_allreduce(v, merge);
    else return block_allreduce(v, merge, identity, reinterpret_cast<R*>(smem));
  }
  // Before a reduction of a wider type than the last one (whose result slot it would overlap).
  __device__ __forceinline__ void sync() const {
    if constexpr (kWarp) __syncwarp();
    else __syncthreads();
  }
};

// The identity transform of an input element (a: in0, b: in1, k: element along the row).
struct NoTransform {
  template <class C>
  __device__ __forceinline__ C operator()(C a, C, std::int64_t) const {
    return a;
  }
};
// Base of the ops that read their inputs as they are.
struct Untransformed {
  template <class T>
  static __device__ __forceinline__ NoTransform transform(const RowOpParams&, std::int64_t) {
    return {};
  }
};

template <class T, int V, int K, bool kTwo>
struct RegRow {
  using C = Compute<T>;
  static constexpr bool kInRegisters = true;
  C a[K][V];
  C b[kTwo ? K : 1][V];
  std::int64_t len;
  int t, nt;
  __device__ __forceinline__ std::int64_t elem(int j, int i) const { return slice_elem(0, j, t, nt, V) + i; }
  __device__ __forceinline__ void load(const T* p0, const T* p1) {
    Vec<T, V> buf[K];
    load_slice(buf, p0, 0, len, t, nt, from_compute<T>(C(0)));
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) a[j][i] = to_compute(buf[j].v[i]);
    if constexpr (kTwo) {
      if (p1) load_slice(buf, p1, 0, len, t, nt, from_compute<T>(C(0)));
#pragma unroll
      for (int j = 0; j < K; ++j)
#pragma unroll
        for (int i = 0; i < V; ++i) b[j][i] = p1 ? to_compute(buf[j].v[i]) : C(0);
    }
  }
  __device__ __forceinline__ C bv(int j, int i) const {
    if constexpr (kTwo) return b[j][i];
    else return C(0);
  }
  // A transform with map_vec<V>(a, b, k0) takes a whole vector at once (gumbel: one Philox
  // block for 4 elements); vectors are all in or all out of the row (len % V == 0).
  template <class Xf>
  __device__ __forceinline__ void map(const Xf& xf) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if constexpr (V > 1 && requires(C (&x)[V], const C (&g)[V]) { xf.template map_vec<V>(x, g, std::int64_t{0}); }) {
        const std::int64_t e0 = elem(j, 0);
        if (e0 < len) {
          C g[V];
#pragma unroll
          for (int i = 0; i < V; ++i) g[i] = bv(j, i);
          xf.template map_vec<V>(a[j], g, e0);
        }
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const std::int64_t e = elem(j, i);
          if (e < len) a[j][i] = xf(a[j][i], bv(j, i), e);
        }
      }
    }
  }
  // acc = f(acc, a, b, k) over the thread's elements
  template <class R, class F>
  __device__ __forceinline__ R fold(R acc, const F& f) const {
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const std::int64_t e = elem(j, i);
        if (e < len) acc = f(acc, a[j][i], bv(j, i), e);
      }
    return acc;
  }
  // out[k] = f(a, b, k) (unit stride: `stride` is 1)
  template <class F>
  __device__ __forceinline__ void write(T* out, std::int64_t, const F& f) const {
    Vec<T, V> buf[K];
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const std::int64_t e = elem(j, i);
        buf[j].v[i] = from_compute<T>(e < len ? f(a[j][i], bv(j, i), e) : C(0));
      }
    store_slice(buf, out, 0, len, t, nt);
  }
};

template <class T, class Xf>
struct LoopRow {
  using C = Compute<T>;
  static constexpr bool kInRegisters = false;
  const T* p0;
  const T* p1;  // may be null (b = 0)
  std::int64_t s0, s1, len;
  int t, nt;
  Xf xf;
  __device__ __forceinline__ void values(std::int64_t k, C& a, C& b) const {
    b = p1 ? to_compute(p1[k * s1]) : C(0);
    a = xf(to_compute(p0[k * s0]), b, k);
  }
  // A transform with map_vec<4> (gumbel: one Philox block for 4 elements) on unit-stride rows
  // of a multiple of 4 elements: thread t walks quads t, t + nt, ... (elements 4q .. 4q + 3).
  static constexpr bool kQuadXf = requires(const Xf& x, C (&v)[4], const C (&g)[4]) { x.template map_vec<4>(v, g, std::int64_t{0}); };
  __device__ __forceinline__ bool by_quads() const { return kQuadXf && s0 == 1 && (p1 == nullptr || s1 == 1) && len % 4 == 0; }
  __device__ __forceinline__ void quad(std::int64_t q, C (&a)[4], C (&b)[4]) const {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      b[e] = p1 ? to_compute(p1[4 * q + e]) : C(0);
      a[e] = to_compute(p0[4 * q + e]);
    }
    if constexpr (kQuadXf) xf.template map_vec<4>(a, b, 4 * q);
  }
  template <class R, class F>
  __device__ __forceinline__ R fold(R acc, const F& f) const {
    if (by_quads()) {
      for (std::int64_t q = t; q < len / 4; q += nt) {
        C a[4], b[4];
        quad(q, a, b);
#pragma unroll
        for (int e = 0; e < 4; ++e) acc = f(acc, a[e], b[e], 4 * q + e);
      }
      return acc;
    }
    for (std::int64_t k = t; k < len; k += nt) {
      C a, b;
      values(k, a, b);
      acc = f(acc, a, b, k);
    }
    return acc;
  }
  template <class F>
  __device__ __forceinline__ void write(T* out, std::int64_t stride, const F& f) const {
    if (by_quads()) {
      for (std::int64_t q = t; q < len / 4; q += nt) {
        C a[4], b[4];
        quad(q, a, b);
#pragma unroll
        for (int e = 0; e < 4; ++e) out[(4 * q + e) * stride] = from_compute<T>(f(a[e], b[e], 4 * q + e));
      }
      return;
    }
    for (std::int64_t k = t; k < len; k += nt) {
      C a, b;
      values(k, a, b);
      out[k * stride] = from_compute<T>(f(a, b, k));
    }
  }
};

// One kernel per (op, dtype, mode, bucket). Op provides
//   static constexpr bool kTwo;                              // reads in1
//   template <class T> static Xf transform(const RowOpParams&, std::int64_t row);  // T: the dtype
//   template <class T, class Row, class S> static void run(const RowOpParams&, const Row&, S,
//       T* out, std::int64_t out_stride, T* out2, std::int64_t out2_stride);
template <class Op, class T, int V, int K, Mode M>
__global__ void __launch_bounds__(M == Mode::kLoop ? softmax::kRowOpLoopThreads
                                                   : softmax::rowop_max_threads(static_cast<int>(sizeof(Compute<T>)), V, K,
                                                                                Op::kTwo ? 2 : 1))
rowop_kernel(RowOpParams p) {
  using C = Compute<T>;
  __shared__ __align__(16) unsigned char smem[33 * 32];
  std::int64_t row;
  int t, nt;
  if constexpr (M == Mode::kWarp) {
    row = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    t = static_cast<int>(threadIdx.x & 31);
    nt = 32;
    if (row >= p.rows) return;
  } else {
    row = blockIdx.x;
    t = static_cast<int>(threadIdx.x);
    nt = static_cast<int>(blockDim.x);
  }
  const T* p0 = static_cast<const T*>(p.in0) + row_offset(p, 1, row);
  const T* p1 = p.in1 ? static_cast<const T*>(p.in1) + row_offset(p, 2, row) : nullptr;
  T* out = static_cast<T*>(p.out) + row_offset(p, 0, row);
  T* out2 = p.out2 ? static_cast<T*>(p.out2) + row_offset(p, 3, row) : nullptr;
  const Scope<M == Mode::kWarp> scope{smem};
  const auto xf = Op::template transform<T>(p, row);
  if constexpr (M == Mode::kLoop) {
    const LoopRow<T, decltype(xf)> r{p0, p1, p.axis_stride[1], p.axis_stride[2], p.len, t, nt, xf};
    Op::run(p, r, scope, out, p.axis_stride[0], out2, p.axis_stride[3]);
  } else {
    RegRow<T, V, K, Op::kTwo> r;
    r.len = p.len;
    r.t = t;
    r.nt = nt;
    r.load(p0, p1);
    r.map(xf);
    Op::run(p, r, scope, out, std::int64_t{1}, out2, std::int64_t{1});
  }
}

template <class Op, class T, int V, int K, Mode M>
Status launch_mode(const RowOpParams& p, cudaStream_t s) {
  const std::int64_t blocks = M == Mode::kWarp ? (p.rows + p.threads / 32 - 1) / (p.threads / 32) : p.rows;
  rowop_kernel<Op, T, V, K, M><<<static_cast<unsigned>(blocks), p.threads, 0, s>>>(p);
  return row_launch_status(Op::kName);
}

// The modes and buckets of one op and dtype (row_op_params.hpp lists the built buckets).
template <class Op, class T>
Status launch_rowop(const RowOpParams& p, cudaStream_t s) {
  if (p.rows == 0 || p.len == 0) return Status::ok();
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  switch (p.impl) {
    case RowOpImpl::kBlockLoop: return launch_mode<Op, T, 1, 1, Mode::kLoop>(p, s);
    case RowOpImpl::kWarpRow:
      if (p.k == 1) return launch_mode<Op, T, kV, 1, Mode::kWarp>(p, s);
      if (p.k == 4) return launch_mode<Op, T, kV, 4, Mode::kWarp>(p, s);
      break;
    case RowOpImpl::kBlockRow:
      if (p.k == 1) return launch_mode<Op, T, kV, 1, Mode::kBlock>(p, s);
      if (p.k == 4) return launch_mode<Op, T, kV, 4, Mode::kBlock>(p, s);
      break;
  }
  return Status(Code::kInternal, std::string(Op::kName) + ": no kernel for k = " + std::to_string(p.k));
}

}  // namespace baracuda::kernels::rowop
