// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11): the counter-based generator of every
// random op (gumbel_softmax noise, attention dropout). 10 rounds, the key bumped by the Weyl
// constants between rounds. The host twin is reference::philox4x32_10 (checked against the
// Random123 known answers in the unit tests).
#pragma once

#include <cstdint>

namespace baracuda::kernels {

__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
  constexpr unsigned kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const unsigned hi0 = __umulhi(kM0, c.x), lo0 = kM0 * c.x;
    const unsigned hi1 = __umulhi(kM1, c.z), lo1 = kM1 * c.z;
    c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k.x += kW0;
    k.y += kW1;
  }
  return c;
}

}  // namespace baracuda::kernels
