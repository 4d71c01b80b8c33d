// map: y_j = op(x_0, .., x_{n-1}) elementwise, for every elementwise plan.
//
// Three kernels:
//  * map_contig_kernel: all operands dense and 16-byte aligned. Each thread moves VEC
//    elements per operand as 16-byte transactions, UNROLL times, issuing every load before
//    the first use so enough bytes are in flight to saturate HBM. A block covers
//    kBlock * VEC * UNROLL elements; only the last block takes the guarded scalar path.
//  * map_strided_kernel: any strides / broadcast (stride 0), after the host collapsed the
//    dims. Each thread maps kStridedUnroll elements, index math in 32 bits (fast divmod)
//    when everything fits, else 64 bits.
//  * map_rows_kernel: [rows, cols] operands with unit inner strides and any row strides
//    (0 for a broadcast row such as a bias): one 16-byte vector per operand per thread.
// Numerics: inputs convert to Compute (f32, or f64 for f64), the op runs there, outputs
// round to nearest even (fp8: see device_types.cuh). Deterministic, no atomics.
// Speed: baracuda-bench suite "foundation" (add/gelu/silu/cast bf16 >= 256 MiB).
#pragma once

#include <cuda_runtime.h>

#include "common/device_types.cuh"
#include "common/indexing.cuh"
#include "common/vec_io.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

inline constexpr int kMapBlock = 256;     // rows and strided kernels
inline constexpr int kContigBlock = 128;  // contiguous kernel

// Bytes of each input a thread of the contiguous kernel loads before the first use. An op
// may say (static constexpr int kInFlight); otherwise one 16-byte vector per input for maps
// of two or more inputs and two for one-input maps. Measured on H200 (map_config.cu): light
// ops (relu, exp, add) run best at 16 B, ops with more math (silu, gelu tanh) at 32 B, the
// gradients of transcendental activations at 64 B.
template <class Op>
constexpr int map_in_flight() {
  if constexpr (requires { Op::kInFlight; }) return Op::kInFlight;
  else return Op::kIn >= 2 ? 16 : 32;
}
inline constexpr int kStridedUnroll = 4;

// Compute type: the integer type itself for integer (and bool) inputs, else double when
// either side is double, else float.
template <class TIn, class TOut>
using MapCompute = std::conditional_t<std::is_integral_v<TIn>, TIn,
                                      std::conditional_t<std::is_same_v<TIn, double> || std::is_same_v<TOut, double>, double, float>>;

// kInFlight: bytes of each input a thread loads before its first use.
template <class TIn, class TOut, int kInFlight = 32, int kBlock = kMapBlock>
struct MapShape {
  static constexpr int kMin = sizeof(TIn) < sizeof(TOut) ? sizeof(TIn) : sizeof(TOut);
  static constexpr int kVec = 16 / kMin;
  static constexpr int kUnroll = (kVec * sizeof(TIn) >= kInFlight) ? 1 : kInFlight / (kVec * sizeof(TIn));
  static constexpr int kThreads = kBlock;
  static constexpr int kPerBlock = kBlock * kVec * kUnroll;
};

template <class TIn, class TOut, class Op>
__device__ __forceinline__ void map_one(const Op& op, const TIn (&x)[Op::kIn], TOut (&y)[Op::kOut], int fp8_mode) {
  if constexpr (requires { Op::kStorage; }) {  // storage-level ops (casts) convert themselves
    op.template apply<TIn, TOut>(x, y, fp8_mode);
  } else {
    using C = MapCompute<TIn, TOut>;
    C a[Op::kIn];
    C r[Op::kOut];
#pragma unroll
    for (int k = 0; k < Op::kIn; ++k) a[k] = static_cast<C>(to_compute(x[k]));
    op(a, r);
#pragma unroll
    for (int k = 0; k < Op::kOut; ++k) y[k] = from_compute<TOut>(r[k], fp8_mode);
  }
}

// Applies op lane by lane to VEC-element vectors of every input, writing VEC-element outputs.
template <class TIn, class TOut, int VEC, class Op>
__device__ __forceinline__ void map_vec(const Op& op, const Vec<TIn, VEC> (&x)[Op::kIn], Vec<TOut, VEC> (&y)[Op::kOut],
                                        int fp8_mode) {
#pragma unroll
  for (int j = 0; j < VEC; ++j) {
    TIn xs[Op::kIn];
    TOut ys[Op::kOut];
#pragma unroll
    for (int k = 0; k < Op::kIn; ++k) xs[k] = x[k].v[j];
    map_one<TIn, TOut>(op, xs, ys, fp8_mode);
#pragma unroll
    for (int k = 0; k < Op::kOut; ++k) y[k].v[j] = ys[k];
  }
}

// What the contiguous kernel reads of MapParams: ~80 bytes of kernel parameters instead of
// ~600 (MapParams carries the strides of 7 operands). Back-to-back launches of a 0.19 ms
// kernel pay for the larger parameter block in the gap between kernels.
struct MapContigParams {
  void* out[elementwise::kMaxMapOut];
  const void* in[elementwise::kMaxMapIn];
  int64_t numel;
  int fp8_mode;
};
inline MapContigParams contig_params(const elementwise::MapParams& p) {
  MapContigParams c{};
  for (int k = 0; k < elementwise::kMaxMapOut; ++k) c.out[k] = p.out[k];
  for (int k = 0; k < elementwise::kMaxMapIn; ++k) c.in[k] = p.in[k];
  c.numel = p.numel;
  c.fp8_mode = p.fp8_mode;
  return c;
}

template <class TIn, class TOut, class Op, int kInFlight = 32, bool kStreaming = false, int kBlock = kMapBlock>
__global__ void __launch_bounds__(kBlock) map_contig_kernel(MapContigParams p, Op op) {
  constexpr int NI = Op::kIn, NO = Op::kOut;
  using Shape = MapShape<TIn, TOut, kInFlight, kBlock>;
  constexpr int VEC = Shape::kVec, UNROLL = Shape::kUnroll;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * Shape::kPerBlock;
  const TIn* in[NI];
  TOut* out[NO];
#pragma unroll
  for (int k = 0; k < NI; ++k) in[k] = static_cast<const TIn*>(p.in[k]);
#pragma unroll
  for (int k = 0; k < NO; ++k) out[k] = static_cast<TOut*>(p.out[k]);

  if (base + Shape::kPerBlock <= p.numel) {
    Vec<TIn, VEC> x[UNROLL][NI];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int k = 0; k < NI; ++k)
        x[u][k] = load_vec<TIn, VEC, kStreaming>(in[k] + base + (static_cast<int64_t>(u) * kBlock + threadIdx.x) * VEC);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      Vec<TOut, VEC> y[NO];
      map_vec<TIn, TOut, VEC>(op, x[u], y, p.fp8_mode);
#pragma unroll
      for (int k = 0; k < NO; ++k)
        store_vec<TOut, VEC, kStreaming>(out[k] + base + (static_cast<int64_t>(u) * kBlock + threadIdx.x) * VEC, y[k]);
    }
  } else {
    for (int u = 0; u < UNROLL; ++u)
      for (int j = 0; j < VEC; ++j) {
        int64_t i = base + (static_cast<int64_t>(u) * kBlock + threadIdx.x) * VEC + j;
        if (i >= p.numel) continue;
        TIn xs[NI];
        TOut ys[NO];
        for (int k = 0; k < NI; ++k) xs[k] = in[k][i];
        map_one<TIn, TOut>(op, xs, ys, p.fp8_mode);
        for (int k = 0; k < NO; ++k) out[k][i] = ys[k];
      }
  }
}

// Rows: the iteration space is [rows, cols] with unit inner strides; thread t of the grid
// maps the 16-byte vector v = t (row v / (cols / VEC), column vector v % (cols / VEC)) of
// every operand. Row strides may differ per operand (0 broadcasts a row, e.g. a bias).
template <class TIn, class TOut, class Op>
__global__ void __launch_bounds__(kMapBlock) map_rows_kernel(elementwise::MapParams p, FastDivmod col_vecs, Op op) {
  constexpr int NI = Op::kIn, NO = Op::kOut;
  constexpr int VEC = MapShape<TIn, TOut>::kVec;
  const uint32_t v = blockIdx.x * kMapBlock + threadIdx.x;
  if (static_cast<int64_t>(v) * VEC >= p.numel) return;
  const uint32_t row = col_vecs.div(v);
  const int64_t col = static_cast<int64_t>(v - row * col_vecs.d) * VEC;
  Vec<TIn, VEC> x[NI];
#pragma unroll
  for (int k = 0; k < NI; ++k)
    x[k] = load_vec<TIn, VEC>(static_cast<const TIn*>(p.in[k]) + row * p.strides[NO + k][0] + col);
  Vec<TOut, VEC> y[NO];
  map_vec<TIn, TOut, VEC>(op, x, y, p.fp8_mode);
#pragma unroll
  for (int k = 0; k < NO; ++k) store_vec<TOut, VEC>(static_cast<TOut*>(p.out[k]) + row * p.strides[k][0] + col, y[k]);
}

template <class TIn, class TOut, class Op, class Index, class IndexT, class OffT>
__global__ void __launch_bounds__(kMapBlock) map_strided_kernel(elementwise::MapParams p, Index idx, Op op) {
  constexpr int NI = Op::kIn, NO = Op::kOut;
  const IndexT base = static_cast<IndexT>(blockIdx.x) * (kMapBlock * kStridedUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kStridedUnroll; ++u) {
    IndexT i = base + static_cast<IndexT>(u) * kMapBlock;
    if (static_cast<int64_t>(i) >= p.numel) return;
    OffT off[NO + NI];
    idx.offsets(i, off);
    TIn xs[NI];
    TOut ys[NO];
#pragma unroll
    for (int k = 0; k < NI; ++k) xs[k] = static_cast<const TIn*>(p.in[k])[off[NO + k]];
    map_one<TIn, TOut>(op, xs, ys, p.fp8_mode);
#pragma unroll
    for (int k = 0; k < NO; ++k) static_cast<TOut*>(p.out[k])[off[k]] = ys[k];
  }
}

inline Status map_launch_status(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string(what) + " launch failed: " + cudaGetErrorString(e), StatusSource::kCuda,
                  static_cast<int>(e));
  return Status::ok();
}

// Host side: launch `op` over p on `stream`. launch_map_contig runs the kVecContig path,
// launch_map_general the others; launch_map takes whichever p.path names. Per-kind kernels
// instantiate only the contiguous one; the other paths take a run-time-kind functor.
template <class TIn, class TOut, class Op>
Status launch_map_contig(const Op& op, const elementwise::MapParams& p, cudaStream_t stream) {
  if (p.numel == 0) return Status::ok();
  // 128-thread blocks and map_in_flight<Op>() bytes per input (playground/elementwise/
  // map_config.cu, H200, back-to-back timing: 256- and 512-thread blocks lose 1-4%).
  constexpr int kInFlight = map_in_flight<Op>();
  using Shape = MapShape<TIn, TOut, kInFlight, kContigBlock>;
  int64_t blocks = (p.numel + Shape::kPerBlock - 1) / Shape::kPerBlock;
  map_contig_kernel<TIn, TOut, Op, kInFlight, false, kContigBlock>
      <<<static_cast<unsigned>(blocks), kContigBlock, 0, stream>>>(contig_params(p), op);
  return map_launch_status("map_contig_kernel");
}

// The kVecRows path alone: ops hot on broadcast rows (a bias add) instantiate it per kind.
template <class TIn, class TOut, class Op>
Status launch_map_rows(const Op& op, const elementwise::MapParams& p, cudaStream_t stream) {
  if (p.numel == 0) return Status::ok();
  if (p.path != elementwise::MapPath::kVecRows) return Status(Code::kInternal, "launch_map_rows: the path is not vec16_rows");
  constexpr int VEC = MapShape<TIn, TOut>::kVec;
  const int64_t vectors = p.numel / VEC;
  map_rows_kernel<TIn, TOut, Op><<<static_cast<unsigned>((vectors + kMapBlock - 1) / kMapBlock), kMapBlock, 0, stream>>>(
      p, FastDivmod(static_cast<uint32_t>(p.shape[1] / VEC)), op);
  return map_launch_status("map_rows_kernel");
}

// The strided kernels' index over p's collapsed dims for its first NOPS operands (outputs,
// then inputs), in 32-bit (fast divmod) or 64-bit arithmetic.
template <int NOPS>
StridedIndex32<NOPS> strided_index32(const elementwise::MapParams& p) {
  StridedIndex32<NOPS> idx;
  idx.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    idx.size[d] = FastDivmod(static_cast<uint32_t>(p.shape[d]));
    for (int k = 0; k < NOPS; ++k) idx.stride[k][d] = static_cast<int32_t>(p.strides[k][d]);
  }
  return idx;
}
template <int NOPS>
StridedIndex64<NOPS> strided_index64(const elementwise::MapParams& p) {
  StridedIndex64<NOPS> idx;
  idx.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    idx.size[d] = p.shape[d];
    for (int k = 0; k < NOPS; ++k) idx.stride[k][d] = p.strides[k][d];
  }
  return idx;
}

template <class TIn, class TOut, class Op>
Status launch_map_general(const Op& op, const elementwise::MapParams& p, cudaStream_t stream) {
  if (p.numel == 0) return Status::ok();
  constexpr int NOPS = Op::kIn + Op::kOut;
  switch (p.path) {
    case elementwise::MapPath::kVecContig:
      return Status(Code::kInternal, "launch_map_general: the contiguous path goes through launch_map_contig");
    case elementwise::MapPath::kVecRows: return launch_map_rows<TIn, TOut>(op, p, stream);
    case elementwise::MapPath::kStrided32: {
      const auto idx = strided_index32<NOPS>(p);
      int64_t blocks = (p.numel + kMapBlock * kStridedUnroll - 1) / (kMapBlock * kStridedUnroll);
      map_strided_kernel<TIn, TOut, Op, StridedIndex32<NOPS>, uint32_t, int32_t>
          <<<static_cast<unsigned>(blocks), kMapBlock, 0, stream>>>(p, idx, op);
      break;
    }
    case elementwise::MapPath::kStrided64: {
      const auto idx = strided_index64<NOPS>(p);
      int64_t blocks = (p.numel + kMapBlock * kStridedUnroll - 1) / (kMapBlock * kStridedUnroll);
      map_strided_kernel<TIn, TOut, Op, StridedIndex64<NOPS>, int64_t, int64_t>
          <<<static_cast<unsigned>(blocks), kMapBlock, 0, stream>>>(p, idx, op);
      break;
    }
  }
  return map_launch_status("map kernel");
}

template <class TIn, class TOut, class Op>
Status launch_map(const Op& op, const elementwise::MapParams& p, cudaStream_t stream) {
  return p.path == elementwise::MapPath::kVecContig ? launch_map_contig<TIn, TOut>(op, p, stream)
                                                    : launch_map_general<TIn, TOut>(op, p, stream);
}

}  // namespace baracuda::kernels
