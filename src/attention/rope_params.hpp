// The host/kernel seam of RopePlan / RopeBackwardPlan (plain C++, no CUDA types).
//
// A tensor is seen as [batch, seq, heads, D] through four strides (0 for an absent axis);
// tensor 0 is x (grad_y), tensor 1 x2 (grad_y2); out[k] is the matching output. The grid walks
// the B * S positions; each block handles whole positions, every head of both tensors.
// A row (one head vector) splits into `units`: rotation units first (neox: V elements of each
// half, V pairs; interleaved: V elements, V / 2 pairs), then pass-through units of V elements
// (only when out != in; in place they are skipped). kVec16 kernels load V = 16 / sizeof(T)
// elements as one vector (unit-stride head dim); the strided kernels use V = 1 (neox) or 2
// (interleaved) with element loads at any stride.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::rope {

inline constexpr int kMaxRotaryPairs = 256;  // rotary_dim <= 512 (inv_freq travels in the params)
inline constexpr int kRopeMaxThreads = 256;  // block_x * block_y (the kernel's launch bound)

struct RopeTensor {
  std::int64_t heads = 0;
  std::int64_t in_stride[4] = {};   // batch, seq, head, dim (elements)
  std::int64_t out_stride[4] = {};
};

struct RopeParams {
  const void* in[2] = {};
  void* out[2] = {};
  const void* position_ids = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  RopeTensor t[2];
  int num_tensors = 1;
  std::int64_t batch = 1, seq = 0, head_dim = 0, rotary_dim = 0;
  bool interleaved = false;
  bool inverse = false;           // backward: rotate by -t
  bool pos_i64 = false;
  std::int64_t pos_stride[2] = {};  // batch, seq (batch 0 for [S] ids)
  std::int64_t position_offset = 0;
  bool cache_f32 = true;          // cos / sin dtype: f32, else x's dtype
  std::int64_t max_pos = 0;
  std::int64_t cache_stride[2][2] = {};  // [cos, sin][row, col]
  double attention_factor = 1.0;
  // Launch shape (set at select)
  bool vec16 = false;             // the 16-byte-vector kernel (else the strided one)
  int vec = 1;                    // V: elements per unit load
  std::int64_t rot_units = 0, pass_units = 0;
  int block_x = 0, block_y = 0;   // threads per position: units x heads
  std::int64_t grid = 0;
  // inv_freq (in-kernel tables): rotary_dim / 2 values in double; f32 kernels round each to
  // f32 (round to nearest, as the host would). 2 KiB: the params stay below the 4 KiB limit.
  double inv_freq[kMaxRotaryPairs] = {};
};

template <DType D> Status launch_rope(const RopeParams& p, cudaStream_t s);
#define BARACUDA_ROPE_SPECS(D) template <> Status launch_rope<DType::D>(const RopeParams&, cudaStream_t);
BARACUDA_ROPE_SPECS(kF64)
BARACUDA_ROPE_SPECS(kF32)
BARACUDA_ROPE_SPECS(kF16)
BARACUDA_ROPE_SPECS(kBF16)
#undef BARACUDA_ROPE_SPECS

}  // namespace baracuda::rope
