// baracuda::reference for GumbelSoftmaxPlan / GumbelSoftmaxBackwardPlan (rules in
// baracuda/ops/gumbel_softmax.hpp): the host twin of the device Philox noise, and the
// forward / backward exact in long double, naive in the compute type (f32 for f16 / bf16 /
// f32, double for f64: the noise g, z = (x + g) / tau and the softmax), rounded to the
// output dtype. Error scale of a soft output (Result::scale): |y| (|z - m| + |m| +
// (|x| + |g|) / tau + log2(len) + 4), the magnitudes the compute-type rounding of g, z and
// exp(z - m) acts on. The hard y is the one-hot of the first argmax of the exact z (naive: of
// the naive z), scale 0; near-ties may legitimately pick another index, so GPU tests check
// the hard output against z (GumbelSoftmaxResult::z) rather than element by element. The
// backward is reference::softmax_backward of (grad_y, y_soft) divided by tau.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "baracuda/ops/gumbel_softmax.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Philox4x32-10 (Random123's philox4x32 with 10 rounds).
std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key);
// The uniform u in (0, 1) of logical element i for dtype t (exact in double).
double gumbel_uniform(DType t, std::uint64_t seed, std::uint64_t offset, std::int64_t i);

struct GumbelSoftmaxResult {
  Result y;               // the plan's y (soft: the soft sample; hard: the one-hot)
  Result y_soft;          // the soft sample
  std::vector<double> z;  // exact (x + g) / tau, logical order
  std::vector<double> g;  // the exact noise, logical order
};
// noise: the kTensor noise (null for kPhilox, which draws from seed / offset).
Expected<GumbelSoftmaxResult> gumbel_softmax(const GumbelSoftmaxDescriptor& d, const HostTensor& x, const HostTensor* noise,
                                             std::uint64_t seed, std::uint64_t offset);
Expected<Result> gumbel_softmax_backward(const GumbelSoftmaxBackwardDescriptor& d, const HostTensor& grad_y,
                                         const HostTensor& y_soft);

}  // namespace baracuda::reference
