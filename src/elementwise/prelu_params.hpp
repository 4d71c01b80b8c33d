// The host/kernel seam of PReluBackwardPlan (plain C++, no CUDA types). The forward is a
// map (map_params.hpp) with the weight as a broadcast view.
//
// x is viewed as [outer, channels, inner] in logical order (channels = 1 for a single
// weight: outer = 1, inner = numel); the weight gradient of channel c sums the terms of
// its outer * inner elements in `chunks` fixed chunks of `chunk_len` (pass 1, one block per
// (channel, chunk), a fixed-order tree inside the block) and then adds the chunks in order
// (pass 2). The rows_vec16 SKU ([rows, C] with C unit-stride) takes ColumnReduceParams
// instead (launch_column_reduce.hpp).
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "elementwise/launch_column_reduce.hpp"
#include "elementwise/map_params.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::elementwise {

struct PReluBwdParams {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* partial = nullptr;  // workspace: chunks * channels accumulators (compute type)
  bool compute_grad_x = true;
  bool compute_grad_weight = true;
  std::int64_t outer = 0, channels = 1, inner = 0;
  std::int64_t chunks = 0, chunk_len = 0;
  std::int64_t weight_stride = 0, grad_weight_stride = 0;  // element strides of the 1-D weight / grad
  int rank = 0;                   // x's logical shape
  std::int64_t shape[8] = {};
  std::int64_t strides[3][8] = {};  // grad_y, x, grad_x
};

template <DType D> Status launch_prelu_fwd(const MapParams& p, cudaStream_t s);
template <DType D> Status launch_prelu_bwd(const PReluBwdParams& p, cudaStream_t s);
// The rows_vec16 SKU: the column reduction (column_reduce.cuh) with a = x, b = weight, which = 1.
template <DType D> Status launch_prelu_bwd_rows(const ColumnReduceParams& p, cudaStream_t s);
#define BARACUDA_PRELU_SPECS(D)                                                    \
  template <> Status launch_prelu_fwd<DType::D>(const MapParams&, cudaStream_t);   \
  template <> Status launch_prelu_bwd<DType::D>(const PReluBwdParams&, cudaStream_t); \
  template <> Status launch_prelu_bwd_rows<DType::D>(const ColumnReduceParams&, cudaStream_t);
BARACUDA_PRELU_SPECS(kF64)
BARACUDA_PRELU_SPECS(kF32)
BARACUDA_PRELU_SPECS(kF16)
BARACUDA_PRELU_SPECS(kBF16)
#undef BARACUDA_PRELU_SPECS

}  // namespace baracuda::elementwise
