// The host/kernel seam of the e4m3 SDPA forward (sdpa_fp8.cpp -> sdpa_fp8_kernels.cu): the
// parameters of its two elementwise kernels, as plain C++ (no CUDA types).
//
//   dequant: q, k, v (e4m3, any strides) -> contiguous bf16 buffers in the workspace,
//            bf16(stored * *descale), one launch for the three tensors (grid.y = tensor).
//   quant:   the inner plan's contiguous bf16 o -> the caller's e4m3 o (any strides),
//            satfinite e4m3(o * *scale_o), and optionally amax_o = max |o| (unscaled).
//
// Each strided tensor is described by its dims collapsed (collapse_dims: size-1 dims dropped,
// dims merged where the strides allow), so the kernels index it with common/indexing.cuh's
// StridedIndex32 (fast divmod; when numel and every offset fit in 31 bits) or StridedIndex64.
// The contiguous side of each kernel is indexed by the logical (row-major) element number.
#pragma once

#include <cstdint>

#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::attention {

inline constexpr int kFp8MaxDims = 4;  // q / k / v / o are rank 3 (varlen) or 4 (dense)

// One strided operand, collapsed (shape / strides in elements, row-major: dim rank-1 innermost).
struct Fp8Strided {
  std::int64_t numel = 0;
  int rank = 0;
  std::int64_t shape[kFp8MaxDims] = {};
  std::int64_t strides[kFp8MaxDims] = {};
  bool index32 = false;  // numel and every element offset below 2^31
};

struct Fp8DequantOperand {
  Fp8Strided layout;                       // of the e4m3 source
  const std::uint8_t* src = nullptr;       // e4m3 bits
  std::uint16_t* dst = nullptr;            // contiguous bf16 bits, layout.numel elements
  const float* descale = nullptr;          // device scalar: real = stored * descale
};

struct Fp8DequantParams {
  Fp8DequantOperand op[3];  // q, k, v
};

struct Fp8QuantParams {
  Fp8Strided layout;                  // of the e4m3 destination
  const std::uint16_t* src = nullptr;  // contiguous bf16 bits, layout.numel elements
  std::uint8_t* dst = nullptr;        // e4m3 bits
  const float* scale = nullptr;       // device scalar: stored = satfinite(o * scale)
  float* amax = nullptr;              // optional: max |o| (unscaled), zeroed by the launcher first
};

// Enqueue on `stream`; neither allocates nor synchronizes (graph-capturable). A tensor with no
// elements launches nothing; quant still zeroes amax when it is given.
Status launch_fp8_dequant(const Fp8DequantParams& p, cudaStream_t stream);
Status launch_fp8_quant(const Fp8QuantParams& p, cudaStream_t stream);

}  // namespace baracuda::attention
