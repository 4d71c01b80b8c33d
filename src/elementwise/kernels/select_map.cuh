// select_map: maps that only move bits - where (out = cond ? a : b), its gradients
// (where(cond, g, 0) and where(cond, 0, g)) and fill. They work on raw storage words W
// (uint8/16/32/64 for 1-, 2-, 4- and 8-byte dtypes), so one instance per element size
// serves every dtype bit-exactly (NaN payloads, -0, fp8, integers and bool alike); the
// floating zero of the gradients is the all-zero word.
//
// Operands in MapParams order: outputs, then (when Op::kMask) the bool mask, then Op::kIn
// word inputs. Two kernels:
//  * select_contig_kernel: every operand dense and 16-byte aligned; a thread maps
//    kSelectUnroll vectors of VEC = 16 / sizeof(W) elements (16-byte loads and stores of
//    words, VEC-byte loads of the mask).
//  * where_grads_contig_kernel: both gradients of where in one contiguous pass.
//  * select_strided_kernel: any strides / broadcast after collapse_dims, 32- or 64-bit
//    index math (StridedIndex32 / StridedIndex64 of indexing.cuh).
// Deterministic, no atomics.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/indexing.cuh"
#include "common/vec_io.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

inline constexpr int kSelectUnroll = 2;

template <int N>
struct alignas(N) MaskVec {
  std::uint8_t v[N];
};

// Op: static constexpr int kMask (0 or 1), kIn (0..2), kOut (1);
//     __device__ W operator()(bool mask, const W* in) const.
template <class W, class Op>
__global__ void __launch_bounds__(kContigBlock) select_contig_kernel(MapContigParams p, Op op) {
  constexpr int VEC = 16 / sizeof(W);
  constexpr int NI = Op::kIn, NM = Op::kMask;
  constexpr int kPerBlock = kContigBlock * VEC * kSelectUnroll;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kPerBlock;
  W* out = static_cast<W*>(p.out[0]);
  const std::uint8_t* mask = NM ? static_cast<const std::uint8_t*>(p.in[0]) : nullptr;
  const W* in[NI > 0 ? NI : 1] = {};
#pragma unroll
  for (int k = 0; k < NI; ++k) in[k] = static_cast<const W*>(p.in[NM + k]);
  if (base + kPerBlock <= p.numel) {
    Vec<W, VEC> x[kSelectUnroll][NI > 0 ? NI : 1];
    MaskVec<VEC> m[kSelectUnroll] = {};
#pragma unroll
    for (int u = 0; u < kSelectUnroll; ++u) {
      const int64_t i = base + (static_cast<int64_t>(u) * kContigBlock + threadIdx.x) * VEC;
      if constexpr (NM) m[u] = *reinterpret_cast<const MaskVec<VEC>*>(mask + i);
#pragma unroll
      for (int k = 0; k < NI; ++k) x[u][k] = load_vec<W, VEC>(in[k] + i);
    }
#pragma unroll
    for (int u = 0; u < kSelectUnroll; ++u) {
      const int64_t i = base + (static_cast<int64_t>(u) * kContigBlock + threadIdx.x) * VEC;
      Vec<W, VEC> y;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        W xs[NI > 0 ? NI : 1];
#pragma unroll
        for (int k = 0; k < NI; ++k) xs[k] = x[u][k].v[j];
        y.v[j] = op(NM ? m[u].v[j] != 0 : false, xs);
      }
      store_vec<W, VEC>(out + i, y);
    }
  } else {
    for (int u = 0; u < kSelectUnroll; ++u)
      for (int j = 0; j < VEC; ++j) {
        const int64_t i = base + (static_cast<int64_t>(u) * kContigBlock + threadIdx.x) * VEC + j;
        if (i >= p.numel) continue;
        W xs[NI > 0 ? NI : 1];
        for (int k = 0; k < NI; ++k) xs[k] = in[k][i];
        out[i] = op(NM ? mask[i] != 0 : false, xs);
      }
  }
}

template <class W, class Op, class Index, class IndexT, class OffT>
__global__ void __launch_bounds__(kMapBlock) select_strided_kernel(elementwise::MapParams p, Index idx, Op op) {
  constexpr int NI = Op::kIn, NM = Op::kMask, NOPS = 1 + NM + NI;
  const IndexT base = static_cast<IndexT>(blockIdx.x) * (kMapBlock * kStridedUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kStridedUnroll; ++u) {
    const IndexT i = base + static_cast<IndexT>(u) * kMapBlock;
    if (static_cast<int64_t>(i) >= p.numel) return;
    OffT off[NOPS];
    idx.offsets(i, off);
    W xs[NI > 0 ? NI : 1];
#pragma unroll
    for (int k = 0; k < NI; ++k) xs[k] = static_cast<const W*>(p.in[NM + k])[off[1 + NM + k]];
    const bool m = NM ? static_cast<const std::uint8_t*>(p.in[0])[off[1]] != 0 : false;
    static_cast<W*>(p.out[0])[off[0]] = op(m, xs);
  }
}

// Both gradients of where in one contiguous pass (operands: grad_a, grad_b, mask, g):
// grad_a = cond ? g : 0 and grad_b = cond ? 0 : g, each of mask and g read once.
template <class W>
__global__ void __launch_bounds__(kContigBlock) where_grads_contig_kernel(MapContigParams p) {
  constexpr int VEC = 16 / sizeof(W);
  constexpr int kPerBlock = kContigBlock * VEC * kSelectUnroll;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kPerBlock;
  W* ga = static_cast<W*>(p.out[0]);
  W* gb = static_cast<W*>(p.out[1]);
  const auto* mask = static_cast<const std::uint8_t*>(p.in[0]);
  const W* g = static_cast<const W*>(p.in[1]);
  if (base + kPerBlock <= p.numel) {
    Vec<W, VEC> x[kSelectUnroll];
    MaskVec<VEC> m[kSelectUnroll];
#pragma unroll
    for (int u = 0; u < kSelectUnroll; ++u) {
      const int64_t i = base + (static_cast<int64_t>(u) * kContigBlock + threadIdx.x) * VEC;
      m[u] = *reinterpret_cast<const MaskVec<VEC>*>(mask + i);
      x[u] = load_vec<W, VEC>(g + i);
    }
#pragma unroll
    for (int u = 0; u < kSelectUnroll; ++u) {
      const int64_t i = base + (static_cast<int64_t>(u) * kContigBlock + threadIdx.x) * VEC;
      Vec<W, VEC> a, b;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const bool c = m[u].v[j] != 0;
        a.v[j] = c ? x[u].v[j] : W(0);
        b.v[j] = c ? W(0) : x[u].v[j];
      }
      store_vec<W, VEC>(ga + i, a);
      store_vec<W, VEC>(gb + i, b);
    }
  } else {
    for (int u = 0; u < kSelectUnroll; ++u)
      for (int j = 0; j < VEC; ++j) {
        const int64_t i = base + (static_cast<int64_t>(u) * kContigBlock + threadIdx.x) * VEC + j;
        if (i >= p.numel) continue;
        const bool c = mask[i] != 0;
        ga[i] = c ? g[i] : W(0);
        gb[i] = c ? W(0) : g[i];
      }
  }
}

template <class W>
Status launch_where_grads_contig(const elementwise::MapParams& p, cudaStream_t stream) {
  if (p.numel == 0) return Status::ok();
  if (p.path != elementwise::MapPath::kVecContig || p.num_out != 2)
    return Status(Code::kInternal, "launch_where_grads_contig: needs the contiguous path and two outputs");
  constexpr int64_t kPerBlock = kContigBlock * (16 / sizeof(W)) * kSelectUnroll;
  where_grads_contig_kernel<W><<<static_cast<unsigned>((p.numel + kPerBlock - 1) / kPerBlock), kContigBlock, 0, stream>>>(contig_params(p));
  return map_launch_status("where_grads_contig_kernel");
}

template <class W, class Op>
Status launch_select(const Op& op, const elementwise::MapParams& p, cudaStream_t stream) {
  if (p.numel == 0) return Status::ok();
  constexpr int NOPS = 1 + Op::kMask + Op::kIn;
  const int64_t strided_blocks = (p.numel + kMapBlock * kStridedUnroll - 1) / (kMapBlock * kStridedUnroll);
  switch (p.path) {
    case elementwise::MapPath::kVecContig: {
      constexpr int64_t kPerBlock = kContigBlock * (16 / sizeof(W)) * kSelectUnroll;
      select_contig_kernel<W, Op>
          <<<static_cast<unsigned>((p.numel + kPerBlock - 1) / kPerBlock), kContigBlock, 0, stream>>>(contig_params(p), op);
      break;
    }
    case elementwise::MapPath::kStrided32: {
      const auto idx = strided_index32<NOPS>(p);
      select_strided_kernel<W, Op, StridedIndex32<NOPS>, uint32_t, int32_t>
          <<<static_cast<unsigned>(strided_blocks), kMapBlock, 0, stream>>>(p, idx, op);
      break;
    }
    case elementwise::MapPath::kStrided64: {
      const auto idx = strided_index64<NOPS>(p);
      select_strided_kernel<W, Op, StridedIndex64<NOPS>, int64_t, int64_t>
          <<<static_cast<unsigned>(strided_blocks), kMapBlock, 0, stream>>>(p, idx, op);
      break;
    }
    default: return Status(Code::kInternal, "launch_select: the rows path is not built for select maps");
  }
  return map_launch_status("select kernel");
}

// ------------------------------------------------------------------------ functors
template <class W>
struct WhereOp {  // mask cond, in a, b
  static constexpr int kMask = 1, kIn = 2;
  __device__ __forceinline__ W operator()(bool c, const W* in) const { return c ? in[0] : in[1]; }
};

template <class W>
struct WhereGradOp {  // mask cond, in g: grad_a (which 0) or grad_b (which 1)
  static constexpr int kMask = 1, kIn = 1;
  int which = 0;
  __device__ __forceinline__ W operator()(bool c, const W* in) const { return c == (which == 0) ? in[0] : W(0); }
};

template <class W>
struct FillOp {
  static constexpr int kMask = 0, kIn = 0;
  W bits = 0;
  __device__ __forceinline__ W operator()(bool, const W*) const { return bits; }
};

}  // namespace baracuda::kernels
