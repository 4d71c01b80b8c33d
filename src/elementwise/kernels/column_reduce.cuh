// column_reduce: binary backward when one operand is a row broadcast over leading dims
// (the bias gradient, the bcast_reduce_rows_vec16 SKU):
//   grad_x[c] = sum over rows r of  d(op)/d(x)(g, a, b)[r, c]
// and, in the same pass, the other operand's gradient [rows, cols] when it is requested.
//
// Preconditions (checked at select / run): the operands collapse to [rows, cols] with
// unit-stride rows, cols a multiple of the 16-byte vector width V = 16 / sizeof(T), row
// strides multiples of V, every pointer 16-byte aligned (launch_column_reduce.hpp).
//
// The gradients are functors of (g, a, b) with a static kReads (binary_ops.cuh
// BinaryGradFn; PReLU's in prelu.cuh). write_reduced = false (PReLU's grad_x alone): pass 1
// writes only the other gradient and pass 2 does not run.
//
// Scheme (deterministic, no atomics):
//  * Pass 1: a 256-thread block is block_cols column vectors x lanes = 256 / block_cols row
//    lanes; grid = (ceil(cols / V / block_cols), chunks), block (x, y) covers rows
//    [y * chunk_len, (y + 1) * chunk_len). A thread walks its rows ty, ty + lanes, ...,
//    issuing kUnroll rows of 16-byte loads (grad_out, and the other operand when the kind
//    reads inputs; the reduced operand's row is loaded once) before the first use, writes
//    the other gradient of those elements right after reading them (so an in-place
//    gradient aliasing grad_out or an input sees each element read before it is written,
//    by the same thread), and adds the reduced term into V column sums in the compute type
//    (f32; f64 for f64). The lanes' sums are then added in lane order through shared memory
//    and the block stores partial[y][its columns] to the workspace.
//  * Pass 2: 32 columns x 8 chunk lanes a block; lane l adds chunks l, l + 8, ... in order,
//    the 8 lane sums are added in order and rounded once to T. On sm_90 it is launched as a
//    programmatic dependent of pass 1 (common/pdl.cuh): its launch overlaps pass 1's last
//    blocks (H200 session 8, bias_add_bwd bf16 [16384, 8192]: 0.1437 -> 0.1421 ms).
// The host picks chunks so that pass 1 is about three waves of resident blocks of at most 16
// column vectors (choose_column_chunks: kColumnBlocksPerSm blocks of 256 threads per SM,
// guaranteed by __launch_bounds__; half as many for the run-time-kind functors), each
// streaming chunk_len rows with 64 bytes of loads in flight per thread (4 rows of grad_out;
// 2 rows of grad_out and of the other input when the kind reads inputs): 64 KiB per SM.
// bf16 [16384, 8192] + [8192] on 132 SMs: 64 column blocks x 24 chunks of 683 rows, 768 KiB
// of f32 partial sums.
#pragma once

#include <cuda_runtime.h>

#include "common/device_types.cuh"
#include "common/pdl.cuh"
#include "common/vec_io.cuh"
#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch_column_reduce.hpp"

namespace baracuda::kernels {

using elementwise::kColumnBlock;
inline constexpr int kColumnPass2Cols = 32;  // pass 2: columns per block (x 8 chunk lanes)

// One thread's rows r0 + ty, r0 + ty + lanes, ... < r1 of its V columns: adds the reduced
// gradient's terms into acc and, with kWriteOther, stores the other gradient. kWhich: the
// reduced operand (0 = a, 1 = b); `x` is its input (the same in every row).
template <class T, int kWhich, bool kWriteOther, class GradA, class GradB, int V>
__device__ __forceinline__ void column_rows(const elementwise::ColumnReduceParams& p, int64_t col, int64_t r,
                                            int64_t r1, int lanes, GradA grad_a, GradB grad_b, Compute<T> (&acc)[V]) {
  using C = Compute<T>;
  constexpr bool kReads = GradA::kReads || GradB::kReads;
  constexpr int kUnroll = kReads ? 2 : 4;  // 64 bytes of loads in flight per thread
  const T* g = static_cast<const T*>(p.grad_out) + col;
  const T* other_in = kReads ? static_cast<const T*>(kWhich == 0 ? p.b : p.a) + col : nullptr;
  T* other_grad = kWriteOther ? static_cast<T*>(p.grad_other) + col : nullptr;
  Vec<T, V> x{};
  if constexpr (kReads) x = load_vec<T, V>(static_cast<const T*>(kWhich == 0 ? p.a : p.b) + col);
  for (; r < r1; r += static_cast<int64_t>(lanes) * kUnroll) {
    Vec<T, V> gv[kUnroll], ov[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t row = r + u * lanes;
      if (row >= r1) continue;
      gv[u] = load_vec<T, V, true>(g + row * p.row_stride[0]);
      if constexpr (kReads) ov[u] = load_vec<T, V, true>(other_in + row * p.row_stride[1]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t row = r + u * lanes;
      if (row >= r1) continue;
      Vec<T, V> out;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C gc = to_compute(gv[u].v[e]);
        const C xc = kReads ? C(to_compute(x.v[e])) : C(0);
        const C oc = kReads ? C(to_compute(ov[u].v[e])) : C(0);
        if constexpr (kWhich == 0) {  // a = x is reduced, b is the other operand
          acc[e] += grad_a(gc, xc, oc);
          if constexpr (kWriteOther) out.v[e] = from_compute<T>(grad_b(gc, xc, oc));
        } else {
          acc[e] += grad_b(gc, oc, xc);
          if constexpr (kWriteOther) out.v[e] = from_compute<T>(grad_a(gc, oc, xc));
        }
      }
      if constexpr (kWriteOther) store_vec<T, V, true>(other_grad + row * p.row_stride[2], out);
    }
  }
}

// Resident blocks per SM that pass 1 is compiled for: kColumnBlocksPerSm (64 registers a
// thread) for the per-kind functors; half as many for the run-time-kind ones, whose switch
// over every kind's math would spill at 64 registers.
template <class Grad>
constexpr int column_min_blocks() {
  if constexpr (requires(Grad g) { g.kind; }) return elementwise::kColumnBlocksPerSm / 2;
  else return elementwise::kColumnBlocksPerSm;
}

template <class T, class GradA, class GradB>
__global__ void __launch_bounds__(kColumnBlock, column_min_blocks<GradA>())
    column_reduce_pass1(elementwise::ColumnReduceParams p, GradA grad_a, GradB grad_b) {
  using C = Compute<T>;
  constexpr int V = 16 / sizeof(T);
  __shared__ C lane_sums[kColumnBlock * V];

  const int lanes = kColumnBlock / p.block_cols;
  const int tx = threadIdx.x % p.block_cols, ty = threadIdx.x / p.block_cols;
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * p.block_cols + tx) * V;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * p.chunk_len + ty;
  const int64_t r1 = (blockIdx.y + 1) * p.chunk_len < p.rows ? (blockIdx.y + 1) * p.chunk_len : p.rows;
  C acc[V] = {};
  if (col < p.cols) {
    if (p.which == 0) {
      if (p.write_other) column_rows<T, 0, true>(p, col, r0, r1, lanes, grad_a, grad_b, acc);
      else column_rows<T, 0, false>(p, col, r0, r1, lanes, grad_a, grad_b, acc);
    } else {
      if (p.write_other) column_rows<T, 1, true>(p, col, r0, r1, lanes, grad_a, grad_b, acc);
      else column_rows<T, 1, false>(p, col, r0, r1, lanes, grad_a, grad_b, acc);
    }
  }
  pdl_trigger();                  // pass 2 may be scheduled once every block is here
  if (!p.write_reduced) return;  // the same for the whole block

  // Add the row lanes in lane order: lane_sums[ty][tx * V + e].
  const int width = p.block_cols * V;  // columns of this block
#pragma unroll
  for (int e = 0; e < V; ++e) lane_sums[ty * width + tx * V + e] = acc[e];
  __syncthreads();
  C* partial = static_cast<C*>(p.partial) + static_cast<int64_t>(blockIdx.y) * p.cols;
  for (int i = threadIdx.x; i < width; i += kColumnBlock) {
    const int64_t c = static_cast<int64_t>(blockIdx.x) * width + i;
    if (c >= p.cols) break;
    C s = C(0);
    for (int l = 0; l < lanes; ++l) s += lane_sums[l * width + i];
    partial[c] = s;
  }
}

template <class T>
__global__ void __launch_bounds__(kColumnBlock) column_reduce_pass2(elementwise::ColumnReduceParams p) {
  using C = Compute<T>;
  constexpr int kLanes = kColumnBlock / kColumnPass2Cols;
  __shared__ C lane_sums[kColumnBlock];
  const int tx = threadIdx.x % kColumnPass2Cols, ty = threadIdx.x / kColumnPass2Cols;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnPass2Cols + tx;
  const C* partial = static_cast<const C*>(p.partial);
  pdl_wait();  // pass 1 has completed and its partial sums are visible
  C acc = C(0);
  if (col < p.cols)
    for (int64_t c = ty; c < p.chunks; c += kLanes) acc += partial[c * p.cols + col];
  lane_sums[threadIdx.x] = acc;
  __syncthreads();
  if (ty != 0 || col >= p.cols) return;
  C s = C(0);
#pragma unroll
  for (int l = 0; l < kLanes; ++l) s += lane_sums[l * kColumnPass2Cols + tx];
  static_cast<T*>(p.grad_reduced)[col] = from_compute<T>(s);
}

template <class T, class GradA, class GradB>
Status launch_column_reduce(const elementwise::ColumnReduceParams& p, GradA grad_a, GradB grad_b, cudaStream_t stream) {
  if (p.rows == 0 || p.cols == 0) return Status(Code::kInternal, "launch_column_reduce: empty problem");
  constexpr int V = 16 / sizeof(T);
  const int64_t col_blocks = (p.cols / V + p.block_cols - 1) / p.block_cols;
  const dim3 grid1(static_cast<unsigned>(col_blocks), static_cast<unsigned>(p.chunks));
  column_reduce_pass1<T><<<grid1, kColumnBlock, 0, stream>>>(p, grad_a, grad_b);
  BARACUDA_TRY(map_launch_status("column_reduce_pass1"));
  if (!p.write_reduced) return Status::ok();
  const int64_t blocks2 = (p.cols + kColumnPass2Cols - 1) / kColumnPass2Cols;
  const cudaError_t e = launch_dependent(p.pdl, column_reduce_pass2<T>, dim3(static_cast<unsigned>(blocks2)),
                                         dim3(kColumnBlock), stream, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not left for the next launch to report
    return Status(Code::kCudaError, std::string("column_reduce_pass2 launch failed: ") + cudaGetErrorString(e),
                  StatusSource::kCuda, static_cast<int>(e));
  }
  return map_launch_status("column_reduce_pass2");
}

}  // namespace baracuda::kernels
