// Instance body: gated activation forward and backward kernels (every kind, every map
// path) for one dtype (BARACUDA_INSTANCE_DTYPE).
#include <string>

#include "elementwise/kernels/gated.cuh"
#include "elementwise/kernels/map.cuh"
#include "elementwise/launch_gated.hpp"

namespace baracuda::elementwise {
namespace {
using T = kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>;
Status unknown_kind(GatedKind k) {
  return Status(Code::kInvalidArgument, "gated: kind = " + std::to_string(static_cast<int>(k)) + " is not a GatedKind");
}
}  // namespace

template <>
Status launch_gated_fwd<DType::BARACUDA_INSTANCE_DTYPE>(GatedKind kind, const MapParams& p, cudaStream_t s) {
  switch (kind) {
    case GatedKind::kGlu: return kernels::launch_map<T, T>(kernels::GatedFwdOp<GatedKind::kGlu>{}, p, s);
    case GatedKind::kReglu: return kernels::launch_map<T, T>(kernels::GatedFwdOp<GatedKind::kReglu>{}, p, s);
    case GatedKind::kSwiglu: return kernels::launch_map<T, T>(kernels::GatedFwdOp<GatedKind::kSwiglu>{}, p, s);
    case GatedKind::kGegluErf: return kernels::launch_map<T, T>(kernels::GatedFwdOp<GatedKind::kGegluErf>{}, p, s);
    case GatedKind::kGegluTanh: return kernels::launch_map<T, T>(kernels::GatedFwdOp<GatedKind::kGegluTanh>{}, p, s);
  }
  return unknown_kind(kind);
}

template <>
Status launch_gated_bwd<DType::BARACUDA_INSTANCE_DTYPE>(GatedKind kind, const MapParams& p, cudaStream_t s) {
  switch (kind) {
    case GatedKind::kGlu: return kernels::launch_map<T, T>(kernels::GatedBwdOp<GatedKind::kGlu>{}, p, s);
    case GatedKind::kReglu: return kernels::launch_map<T, T>(kernels::GatedBwdOp<GatedKind::kReglu>{}, p, s);
    case GatedKind::kSwiglu: return kernels::launch_map<T, T>(kernels::GatedBwdOp<GatedKind::kSwiglu>{}, p, s);
    case GatedKind::kGegluErf: return kernels::launch_map<T, T>(kernels::GatedBwdOp<GatedKind::kGegluErf>{}, p, s);
    case GatedKind::kGegluTanh: return kernels::launch_map<T, T>(kernels::GatedBwdOp<GatedKind::kGegluTanh>{}, p, s);
  }
  return unknown_kind(kind);
}
}  // namespace baracuda::elementwise
