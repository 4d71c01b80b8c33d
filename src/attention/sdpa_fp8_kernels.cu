// The two elementwise kernels of the e4m3 SDPA forward (sdpa_fp8.cpp; params in sdpa_fp8.hpp).
//
// fp8_dequant_kernel: y[i] = bf16(e4m3 x[off(i)] * *descale) for q, k and v in one launch
//   (blockIdx.y picks the tensor); i runs over the logical elements, so the bf16 buffer is
//   contiguous whatever x's strides. e4m3 values times an f32 descale are exact in f32 and
//   rounded once to bf16 (relative 2^-9, below e4m3's own 2^-4 spacing; bf16 has f32's range,
//   so nothing overflows). NaN codes stay NaN.
// fp8_quant_kernel: y[off(i)] = satfinite e4m3(bf16 o[i] * *scale) (|.| > 448 -> +-448, as
//   cuBLASLt and cuDNN store fp8; NaN stays NaN), and with amax: the block's max of the f32 bit
//   patterns of |o| (for non-negative floats the unsigned order is the numeric order, NaN above
//   inf), then one atomicMax per block on *amax (zeroed first by the launcher): the result does
//   not depend on the order, so it is deterministic.
// Parallel scheme: 256-thread blocks, grid-stride loops over the elements (grid.x capped at
// 65535 blocks); the strided side is indexed with common/indexing.cuh (32-bit fast divmod when
// numel and every offset fit in 31 bits, else 64-bit). Conversions: common/device_types.cuh.
// Memory-bound; one byte in and two out per element (dequant), two in and one out (quant). Not
// timed yet: the attention itself dominates (bench `sdpa` suite once an fp8 row exists).
#include <cuda_runtime.h>

#include <algorithm>

#include "attention/sdpa_fp8.hpp"
#include "common/block_reduce.cuh"
#include "common/device_types.cuh"
#include "common/indexing.cuh"
#include "gemm/launch_status.hpp"

namespace baracuda::attention {
namespace {

using kernels::FastDivmod;
using kernels::StridedIndex32;
using kernels::StridedIndex64;

constexpr int kBlock = 256;
constexpr std::int64_t kMaxBlocks = 65535;

template <class Index, class Lin>
struct DequantArgs {
  Index index[3];
  Lin numel[3];
  const __nv_fp8_e4m3* src[3];
  __nv_bfloat16* dst[3];
  const float* descale[3];
};

template <class Index, class Lin>
struct QuantArgs {
  Index index;
  Lin numel;
  const __nv_bfloat16* src;
  std::uint8_t* dst;
  const float* scale;
  unsigned* amax_bits;
};

template <class Index, class Lin, class Off>
__global__ void __launch_bounds__(kBlock) fp8_dequant_kernel(const __grid_constant__ DequantArgs<Index, Lin> a) {
  const int t = static_cast<int>(blockIdx.y);
  const Lin n = a.numel[t];
  Lin i = static_cast<Lin>(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= n) return;
  const float descale = *a.descale[t];
  const Lin step = static_cast<Lin>(gridDim.x) * kBlock;
  for (; i < n; i += step) {
    Off off[1];
    a.index[t].offsets(i, off);
    a.dst[t][i] = kernels::from_compute<__nv_bfloat16>(kernels::to_compute(a.src[t][off[0]]) * descale);
  }
}

struct MaxBits {
  __device__ __forceinline__ unsigned operator()(unsigned x, unsigned y) const { return x > y ? x : y; }
};

template <class Index, class Lin, class Off>
__global__ void __launch_bounds__(kBlock) fp8_quant_kernel(const __grid_constant__ QuantArgs<Index, Lin> a) {
  __shared__ unsigned smem[33];
  const float scale = *a.scale;
  unsigned m = 0;  // bits of max |o| so far (+0.0)
  const Lin step = static_cast<Lin>(gridDim.x) * kBlock;
  for (Lin i = static_cast<Lin>(blockIdx.x) * kBlock + threadIdx.x; i < a.numel; i += step) {
    const float x = kernels::to_compute(a.src[i]);
    m = MaxBits{}(m, __float_as_uint(fabsf(x)));
    Off off[1];
    a.index.offsets(i, off);
    a.dst[off[0]] = kernels::from_compute<__nv_fp8_e4m3>(x * scale, kernels::kFp8Saturate).__x;
  }
  if (a.amax_bits == nullptr) return;  // uniform over the block
  m = kernels::block_allreduce(m, MaxBits{}, 0u, smem);
  if (threadIdx.x == 0 && m != 0) atomicMax(a.amax_bits, m);
}

// An empty operand launches nothing (its index stays rank 0: no divisor of 0 is built).
StridedIndex32<1> index32(const Fp8Strided& l) {
  StridedIndex32<1> idx;
  idx.rank = l.numel > 0 ? l.rank : 0;
  for (int d = 0; d < idx.rank; ++d) {
    idx.size[d] = FastDivmod(static_cast<std::uint32_t>(l.shape[d]));
    idx.stride[0][d] = static_cast<std::int32_t>(l.strides[d]);
  }
  return idx;
}
StridedIndex64<1> index64(const Fp8Strided& l) {
  StridedIndex64<1> idx;
  idx.rank = l.numel > 0 ? l.rank : 0;
  for (int d = 0; d < idx.rank; ++d) {
    idx.size[d] = l.shape[d];
    idx.stride[0][d] = l.strides[d];
  }
  return idx;
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kBlock - 1) / kBlock, 1, kMaxBlocks));
}

template <class Index, class Lin, class Off, class MakeIndex>
Status dequant(const Fp8DequantParams& p, MakeIndex make_index, cudaStream_t stream) {
  DequantArgs<Index, Lin> a{};
  std::int64_t most = 0;
  for (int t = 0; t < 3; ++t) {
    const Fp8DequantOperand& o = p.op[t];
    a.index[t] = make_index(o.layout);
    a.numel[t] = static_cast<Lin>(o.layout.numel);
    a.src[t] = reinterpret_cast<const __nv_fp8_e4m3*>(o.src);
    a.dst[t] = reinterpret_cast<__nv_bfloat16*>(o.dst);
    a.descale[t] = o.descale;
    most = std::max(most, o.layout.numel);
  }
  if (most == 0) return Status::ok();
  fp8_dequant_kernel<Index, Lin, Off><<<dim3(blocks_for(most), 3), kBlock, 0, stream>>>(a);
  return gemm::kernel_launch_status("fp8_dequant");
}

template <class Index, class Lin, class Off, class MakeIndex>
Status quant(const Fp8QuantParams& p, MakeIndex make_index, cudaStream_t stream) {
  QuantArgs<Index, Lin> a{};
  a.index = make_index(p.layout);
  a.numel = static_cast<Lin>(p.layout.numel);
  a.src = reinterpret_cast<const __nv_bfloat16*>(p.src);
  a.dst = p.dst;
  a.scale = p.scale;
  a.amax_bits = reinterpret_cast<unsigned*>(p.amax);
  fp8_quant_kernel<Index, Lin, Off><<<blocks_for(p.layout.numel), kBlock, 0, stream>>>(a);
  return gemm::kernel_launch_status("fp8_quant");
}

}  // namespace

Status launch_fp8_dequant(const Fp8DequantParams& p, cudaStream_t stream) {
  const bool narrow = p.op[0].layout.index32 && p.op[1].layout.index32 && p.op[2].layout.index32;
  return narrow ? dequant<StridedIndex32<1>, std::uint32_t, std::int32_t>(p, index32, stream)
                : dequant<StridedIndex64<1>, std::int64_t, std::int64_t>(p, index64, stream);
}

Status launch_fp8_quant(const Fp8QuantParams& p, cudaStream_t stream) {
  if (p.amax != nullptr) {
    const cudaError_t e = cudaMemsetAsync(p.amax, 0, sizeof(float), stream);
    if (e != cudaSuccess) return gemm::kernel_launch_status(e, "fp8_quant (cudaMemsetAsync of amax_o)");
  }
  if (p.layout.numel == 0) return Status::ok();
  return p.layout.index32 ? quant<StridedIndex32<1>, std::uint32_t, std::int32_t>(p, index32, stream)
                          : quant<StridedIndex64<1>, std::int64_t, std::int64_t>(p, index64, stream);
}

}  // namespace baracuda::attention
