// Instance body: PReLU forward (map, every path) and backward (chunked_reduce_i64: two
// passes; rows_vec16: the column reduction of column_reduce.cuh) for one dtype.
#include <string>

#include "elementwise/kernels/column_reduce.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/prelu.cuh"
#include "elementwise/prelu_params.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
}

template <>
Status launch_prelu_fwd<DType::BARACUDA_INSTANCE_DTYPE>(const MapParams& p, cudaStream_t s) {
  return kernels::launch_map<T, T>(kernels::PReluFwdOp{}, p, s);
}

template <>
Status launch_prelu_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const PReluBwdParams& p, cudaStream_t s) {
  if (p.chunks > 0 && p.channels > 0) {
    const dim3 grid(static_cast<unsigned>(p.channels), static_cast<unsigned>(p.chunks));
    kernels::prelu_bwd_pass1<T><<<grid, kernels::kPReluBlock, 0, s>>>(p);
    BARACUDA_TRY(kernels::map_launch_status("prelu_bwd_pass1"));
  }
  if (p.compute_grad_weight && p.channels > 0) {
    const auto blocks = static_cast<unsigned>((p.channels + kernels::kPReluBlock - 1) / kernels::kPReluBlock);
    kernels::prelu_bwd_pass2<T><<<blocks, kernels::kPReluBlock, 0, s>>>(p);
    return kernels::map_launch_status("prelu_bwd_pass2");
  }
  return Status::ok();
}

template <>
Status launch_prelu_bwd_rows<DType::BARACUDA_INSTANCE_DTYPE>(const ColumnReduceParams& p, cudaStream_t s) {
  return kernels::launch_column_reduce<T>(p, kernels::PReluGradXFn{}, kernels::PReluGradWFn{}, s);
}
}  // namespace baracuda::elementwise
