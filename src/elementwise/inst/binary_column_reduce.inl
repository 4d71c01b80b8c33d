// Instance body: the row-broadcast reduction of binary gradients (column_reduce.cuh, the
// bcast_reduce_rows_vec16 SKU) for one floating dtype (BARACUDA_INSTANCE_DTYPE): per-kind
// kernels for add, sub, mul, div and the zero-gradient kinds, one run-time-kind kernel for
// the others (with_grad_fns).
#include "elementwise/kernels/column_reduce.cuh"
#include "elementwise/launch_column_reduce.hpp"

namespace baracuda::elementwise {
template <>
Status launch_column_reduce<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const ColumnReduceParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  return kernels::with_grad_fns(kind, [&](auto grad_a, auto grad_b) {
    return kernels::launch_column_reduce<T>(p, grad_a, grad_b, s);
  });
}
}  // namespace baracuda::elementwise
