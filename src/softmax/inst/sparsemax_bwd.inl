// Instance body: the sparsemax backward kernels (register rows of 1 and 4
// vectors a thread, one warp or one block per row, and the block loop) for one dtype.
#include "softmax/kernels/sparsemax.cuh"

namespace baracuda::softmax::sparse {
template <>
Status launch_sparsemax_bwd<DType::BARACUDA_INSTANCE_DTYPE>(const RowOpParams& p, cudaStream_t s) {
  return kernels::rowop::launch_rowop<kernels::sparse::Backward, kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>(p, s);
}
}  // namespace baracuda::softmax::sparse
