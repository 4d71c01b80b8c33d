// Instance body: any / all / count_nonzero kernels (every impl) for one element width; the
// dtype names the width only (U8: 1 byte, I16: 2, I32: 4, I64: 8), elements are read as
// unsigned bit patterns and tested against ReduceParams::mask.
#include <cstdint>
#include <type_traits>

#include "reduce/kernels/reduce.cuh"

namespace baracuda::reduce {
template <>
Status launch_reduce_count<DType::BARACUDA_INSTANCE_DTYPE>(const ReduceParams& p, cudaStream_t s) {
  using T = std::make_unsigned_t<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>;
  namespace k = kernels::reduce;
  return k::launch_op<T, k::CountOp<T>>(p, s);
}
}  // namespace baracuda::reduce
