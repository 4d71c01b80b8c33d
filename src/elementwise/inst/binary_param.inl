// Instance body: lerp (scalar and tensor weight) and add / sub with alpha, forward and
// backward maps, on one floating dtype (BARACUDA_INSTANCE_DTYPE), every path.
#include "elementwise/kernels/binary_ops.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
}

template <>
Status launch_binary_param_fwd<DType::BARACUDA_INSTANCE_DTYPE>(BinaryParamKind kind, double scalar, const MapParams& p,
                                                              cudaStream_t s) {
  switch (kind) {
    case BinaryParamKind::kLerp: return kernels::launch_map<T, T>(kernels::LerpScalarOp{scalar}, p, s);
    case BinaryParamKind::kLerpTensor: return kernels::launch_map<T, T>(kernels::LerpTensorOp{}, p, s);
    case BinaryParamKind::kAddAlpha: return kernels::launch_map<T, T>(kernels::AddAlphaOp{scalar}, p, s);
    case BinaryParamKind::kSubAlpha: return kernels::launch_map<T, T>(kernels::AddAlphaOp{-scalar}, p, s);
  }
  return Status(Code::kInternal, "launch_binary_param_fwd: unknown kind");
}

template <>
Status launch_binary_param_bwd<DType::BARACUDA_INSTANCE_DTYPE>(ParamGradMap map, int which, double ca, double cb,
                                                              const MapParams& p, cudaStream_t s) {
  using namespace kernels;
  switch (map) {
    case ParamGradMap::kScaled:
      if (which == 0) return launch_map<T, T>(ScaledGradOp<0>{ca, cb}, p, s);
      if (which == 1) return launch_map<T, T>(ScaledGradOp<1>{ca, cb}, p, s);
      return launch_map<T, T>(ScaledGradOp<2>{ca, cb}, p, s);
    case ParamGradMap::kLerpTensor:
      if (which == 0) return launch_map<T, T>(LerpTensorGradOp<0>{}, p, s);
      if (which == 1) return launch_map<T, T>(LerpTensorGradOp<1>{}, p, s);
      return launch_map<T, T>(LerpTensorGradOp<2>{}, p, s);
    case ParamGradMap::kLerpWeight: return launch_map<T, T>(LerpWeightGradOp{}, p, s);
  }
  return Status(Code::kInternal, "launch_binary_param_bwd: unknown map");
}
}  // namespace baracuda::elementwise
