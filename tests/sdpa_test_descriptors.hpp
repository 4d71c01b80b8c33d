// SDPA descriptors shared by the attention tests (tests/unit/test_sdpa.cpp,
// tests/unit/test_cudnn_sdpa.cpp, tests/gpu/test_cudnn_sdpa_gpu.cpp, tests/emu/sdpa_general_emu.cpp):
// contiguous [B, H, S, D] operands, a dense (GQA when Hkv < Hq) forward descriptor with an f32
// lse, and the caps of an architecture without a device. Header-only and included by relative
// path, so the emulation test (built by hand, see its header) needs no include flag for it.
#pragma once

#include <cstdint>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/attention.hpp"

namespace baracuda::test {

inline TensorLayout t4(DType t, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return TensorLayout::contiguous(t, {a, b, c, d});
}

// q [B, Hq, Sq, Dk], k [B, Hkv, Skv, Dk], v [B, Hkv, Skv, Dv], o [B, Hq, Sq, Dv], lse f32 [B, Hq, Sq].
inline SdpaDescriptor mha(DType t, std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t Sq,
                          std::int64_t Skv, std::int64_t Dk, std::int64_t Dv) {
  SdpaDescriptor d;
  d.q = t4(t, B, Hq, Sq, Dk);
  d.k = t4(t, B, Hkv, Skv, Dk);
  d.v = t4(t, B, Hkv, Skv, Dv);
  d.o = t4(t, B, Hq, Sq, Dv);
  d.lse = TensorLayout::contiguous(DType::kF32, {B, Hq, Sq});
  return d;
}

// The caps of sm_<sm> from the architecture alone (select_for_caps, Plan::candidates).
inline DeviceCaps caps_for(int sm = 90) { return DeviceCaps::for_arch(sm).value(); }

}  // namespace baracuda::test
