// The host/kernel seam of AlibiPlan / AlibiBackwardPlan (plain C++, no CUDA types).
//
// Scores are [B, H, Sq, Skv] through four strides per tensor; a row is one (b, h, i). The
// forward (and the backward's copy of grad_y into grad_s) walks rows with one warp each,
// lanes over j in units of `vec` elements (16-byte vectors in the vec16 SKU). The slope
// gradient is two passes: pass 1, one block per (group, chunk) - a group is one slope (h, or
// (b, h) for [B, H] slopes), a chunk `rows_per_chunk` of its rows - writes the chunk's f64 sum
// of grad_y * |i + off - j| to partial[group * chunks + chunk] (and copies grad_y to grad_s);
// pass 2 adds each group's chunks in order and stores -sum as f32.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::alibi {

inline constexpr int kAlibiThreads = 256;

struct AlibiParams {
  const void* in = nullptr;      // s / grad_y; null: the bias alone
  void* out = nullptr;           // y / grad_s; null: not written (backward in place or not wanted)
  const float* slopes = nullptr;
  float* grad_slopes = nullptr;  // backward: null when not wanted
  double* partial = nullptr;     // workspace of pass 1
  bool add_bias = true;          // forward; the backward copies
  std::int64_t batch = 0, heads = 0, sq = 0, skv = 0;
  std::int64_t offset = 0;       // distance |i + offset - j|
  std::int64_t in_stride[4] = {}, out_stride[4] = {};
  std::int64_t slope_stride[2] = {};  // batch (0 for [H]), head; of slopes or grad_slopes
  bool per_batch = false;        // [B, H] slopes
  std::int64_t groups = 0, chunks = 0, rows_per_chunk = 0;
  bool vec16 = false;            // the 16-byte-vector kernels (else the strided ones)
  int vec = 1;
  std::int64_t grid = 0;         // blocks of the row kernel
};

template <DType D> Status launch_alibi(const AlibiParams& p, cudaStream_t s);
#define BARACUDA_ALIBI_SPECS(D) template <> Status launch_alibi<DType::D>(const AlibiParams&, cudaStream_t);
BARACUDA_ALIBI_SPECS(kF64)
BARACUDA_ALIBI_SPECS(kF32)
BARACUDA_ALIBI_SPECS(kF16)
BARACUDA_ALIBI_SPECS(kBF16)
#undef BARACUDA_ALIBI_SPECS

}  // namespace baracuda::alibi
