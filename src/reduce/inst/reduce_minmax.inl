// Instance body: amax / amin (also norm +-inf) and argmax / argmin kernels (every impl) for
// one dtype (f64, f32, f16, bf16; i64, i32: argmax / argmin only).
#include <type_traits>

#include "reduce/kernels/reduce.cuh"

namespace baracuda::reduce {
template <>
Status launch_reduce_minmax<DType::BARACUDA_INSTANCE_DTYPE>(const ReduceParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  namespace k = kernels::reduce;
  switch (p.op) {
    case RedOp::kArgmax: return k::launch_op<T, k::ArgOp<T, true>>(p, s);
    case RedOp::kArgmin: return k::launch_op<T, k::ArgOp<T, false>>(p, s);
    default: break;
  }
  if constexpr (!std::is_integral_v<T>) {
    switch (p.op) {
      case RedOp::kMax:
      case RedOp::kNormInf: return k::launch_op<T, k::MaxOp<T, true>>(p, s);
      case RedOp::kMin:
      case RedOp::kNormNegInf: return k::launch_op<T, k::MaxOp<T, false>>(p, s);
      default: break;
    }
  }
  return Status(Code::kInternal, "reduce: op not in the minmax instance");
}
}  // namespace baracuda::reduce
