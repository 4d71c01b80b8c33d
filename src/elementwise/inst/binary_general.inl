// Instance body: the rows and strided binary kernels (forward and backward) of one
// floating dtype (BARACUDA_INSTANCE_DTYPE), built once with the kind chosen at run time.
// The gradients that read only grad_out (add, sub, div_floor, div_trunc) keep per-kind
// functors (they take one input).
#include <string>

#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;

template <class Op0, class Op1, class Op2>
Status by_which(int which, const MapParams& p, cudaStream_t s) {
  if (which == 0) return kernels::launch_map_general<T, T>(Op0{}, p, s);
  if (which == 1) return kernels::launch_map_general<T, T>(Op1{}, p, s);
  return kernels::launch_map_general<T, T>(Op2{}, p, s);
}
template <BinaryKind K>
Status no_read_grad(int which, const MapParams& p, cudaStream_t s) {
  using kernels::BinaryGradOp;
  return by_which<BinaryGradOp<K, 0>, BinaryGradOp<K, 1>, BinaryGradOp<K, 2>>(which, p, s);
}
}  // namespace

template <>
Status launch_binary_fwd_general<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, const MapParams& p, cudaStream_t s) {
  // A bias-shaped add / sub / mul / div ([M, N] op [N]) takes the rows path; its run-time
  // kind switch costs half the bandwidth there (H200), so these four get their own kernels.
  if (p.path == MapPath::kVecRows) {
    switch (kind) {
      case BinaryKind::kAdd: return kernels::launch_map_rows<T, T>(kernels::BinaryFwdOp<BinaryKind::kAdd, T>{}, p, s);
      case BinaryKind::kSub: return kernels::launch_map_rows<T, T>(kernels::BinaryFwdOp<BinaryKind::kSub, T>{}, p, s);
      case BinaryKind::kMul: return kernels::launch_map_rows<T, T>(kernels::BinaryFwdOp<BinaryKind::kMul, T>{}, p, s);
      case BinaryKind::kDiv: return kernels::launch_map_rows<T, T>(kernels::BinaryFwdOp<BinaryKind::kDiv, T>{}, p, s);
      default: break;
    }
  }
  return kernels::launch_map_general<T, T>(kernels::BinaryDynOp<T>{kind}, p, s);
}

template <>
Status launch_binary_bwd_general<DType::BARACUDA_INSTANCE_DTYPE>(BinaryKind kind, int which, const MapParams& p,
                                                                cudaStream_t s) {
  switch (kind) {
    case BinaryKind::kAdd: return no_read_grad<BinaryKind::kAdd>(which, p, s);
    case BinaryKind::kSub: return no_read_grad<BinaryKind::kSub>(which, p, s);
    case BinaryKind::kDivFloor:
    case BinaryKind::kDivTrunc: return no_read_grad<BinaryKind::kDivFloor>(which, p, s);  // both are zero
    default: break;
  }
  using kernels::BinaryDynGradOp;
  using Op0 = BinaryDynGradOp<0>;
  using Op1 = BinaryDynGradOp<1>;
  using Op2 = BinaryDynGradOp<2>;
  const kernels::BinaryDynGradFn<0> ga{kind};
  const kernels::BinaryDynGradFn<1> gb{kind};
  if (which == 0) return kernels::launch_map_general<T, T>(Op0{ga, gb}, p, s);
  if (which == 1) return kernels::launch_map_general<T, T>(Op1{ga, gb}, p, s);
  return kernels::launch_map_general<T, T>(Op2{ga, gb}, p, s);
}
}  // namespace baracuda::elementwise
