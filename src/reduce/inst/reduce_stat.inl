// Instance body: norm (finite p), logsumexp, var and std kernels (every impl) for one
// floating dtype.
#include "reduce/kernels/reduce.cuh"

namespace baracuda::reduce {
template <>
Status launch_reduce_stat<DType::BARACUDA_INSTANCE_DTYPE>(const ReduceParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  namespace k = kernels::reduce;
  switch (p.op) {
    case RedOp::kNorm: return k::launch_op<T, k::NormOp<T>>(p, s);
    case RedOp::kLogSumExp: return k::launch_op<T, k::LseOp<T>>(p, s);
    case RedOp::kVar: return k::launch_op<T, k::WelfordOp<T, false>>(p, s);
    case RedOp::kStd: return k::launch_op<T, k::WelfordOp<T, true>>(p, s);
    default: return Status(Code::kInternal, "reduce: op not in the stat instance");
  }
}
}  // namespace baracuda::reduce
