// Launchers of GatedActivationPlan / backward: one instance file per dtype
// (inst/gated.inl), every kind on every map path.
#pragma once

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/gated.hpp"
#include "elementwise/map_params.hpp"

namespace baracuda::elementwise {

template <DType D> Status launch_gated_fwd(GatedKind kind, const MapParams& p, cudaStream_t s);
template <DType D> Status launch_gated_bwd(GatedKind kind, const MapParams& p, cudaStream_t s);
#define BARACUDA_GATED_SPECS(D)                                                            \
  template <> Status launch_gated_fwd<DType::D>(GatedKind, const MapParams&, cudaStream_t); \
  template <> Status launch_gated_bwd<DType::D>(GatedKind, const MapParams&, cudaStream_t);
BARACUDA_GATED_SPECS(kF64)
BARACUDA_GATED_SPECS(kF32)
BARACUDA_GATED_SPECS(kF16)
BARACUDA_GATED_SPECS(kBF16)
#undef BARACUDA_GATED_SPECS

}  // namespace baracuda::elementwise
