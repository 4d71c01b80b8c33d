// Instance body: sum, mean and prod kernels (every impl) for one dtype (f64, f32, f16, bf16,
// i64, i32; integers: sum and prod into i64).
#include <type_traits>

#include "reduce/kernels/reduce.cuh"

namespace baracuda::reduce {
template <>
Status launch_reduce_sum<DType::BARACUDA_INSTANCE_DTYPE>(const ReduceParams& p, cudaStream_t s) {
  using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
  namespace k = kernels::reduce;
  switch (p.op) {
    case RedOp::kSum: return k::launch_op<T, k::SumOp<T, false>>(p, s);
    case RedOp::kProd: return k::launch_op<T, k::ProdOp<T>>(p, s);
    case RedOp::kMean:
      if constexpr (!std::is_integral_v<T>) return k::launch_op<T, k::SumOp<T, true>>(p, s);
      [[fallthrough]];
    default: return Status(Code::kInternal, "reduce: op not in the sum instance");
  }
}
}  // namespace baracuda::reduce
