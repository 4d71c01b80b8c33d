// Gumbel-softmax along one axis, forward and backward (torch.nn.functional.gumbel_softmax).
//
//   forward:  z_i = (x_i + g_i) / tau,  y_soft = softmax(z) along the axis,
//             soft: y = y_soft;  hard: y = one_hot(argmax_i z_i) (the first maximal index)
//   backward: grad_x_i = (1 / tau) * s_i * (grad_y_i - sum_j grad_y_j * s_j),  s = y_soft
//             (soft: the softmax backward through z; hard: straight-through, PyTorch's
//             y_hard - y_soft.detach() + y_soft, whose gradient is that of the soft sample)
//
// Noise g ~ Gumbel(0, 1), from one of two sources (GumbelNoise):
//  * kPhilox: a counter-based generator, so a run is reproducible from (seed, offset) and
//    needs no state (run() is graph-capturable; a replay reuses the captured seed and
//    offset). Philox4x32-10 (Salmon et al., SC'11) with key = (seed & 0xffffffff, seed >> 32)
//    and counter = (n & 0xffffffff, n >> 32, offset & 0xffffffff, offset >> 32), n = i / 4,
//    where i is the element's logical (row-major) index in x; the element takes output word
//    i % 4, r. For f32 / f16 / bf16, u = ((r >> 9) + 0.5) * 2^-23 (an f32 in
//    [2^-24, 1 - 2^-24]); for f64, u = (r + 0.5) * 2^-32. Then g = -log(-log(u)) in the
//    compute type. The noise of an element therefore depends only on (seed, offset, i), not
//    on strides, axis or SKU. (The stream differs from torch's CUDA generator, whose
//    Philox counters are laid out by its kernels' thread grid.) Advance `offset` by
//    ceil(numel / 4) or more between calls that must draw independent noise.
//  * kTensor: the caller passes g itself (a tensor of x's shape and dtype, any strides),
//    e.g. to reproduce a torch sample or to test.
//
// Any axis (negative counts from the end), any length, any strides; y (and y_soft) must not
// overlap themselves or each other. In place (y over x) is allowed with the identical
// layout. tau > 0 and finite. Dtypes f64, f32, f16, bf16, all operands one dtype; 16/32-bit
// compute in f32 (z, the max, the sum and the noise), f64 in f64, rounded once at the store.
// The hard forward writes the exact one-hot (PyTorch's y_hard - y_soft + y_soft equals it up
// to a rounding); with save_soft it also writes y_soft, the input of the backward. A row
// whose z holds a NaN or +inf is NaN in y and y_soft (soft and hard), as torch's softmax.
// Every SKU is deterministic (no atomics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class GumbelNoise : std::uint8_t { kPhilox, kTensor };

struct GumbelSoftmaxDescriptor {
  TensorLayout x;       // logits
  TensorLayout y;       // x's shape and dtype
  TensorLayout y_soft;  // hard && save_soft: x's shape and dtype (the soft sample); else unused
  TensorLayout noise;   // noise_source == kTensor: x's shape and dtype (g); else unused
  int axis = -1;        // in [-rank, rank)
  double tau = 1.0;     // > 0, finite
  bool hard = false;
  bool save_soft = false;  // hard only: also write y_soft
  GumbelNoise noise_source = GumbelNoise::kPhilox;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GumbelSoftmaxDescriptor&, const GumbelSoftmaxDescriptor&) = default;
};
struct GumbelSoftmaxArgs {
  const void* x = nullptr;
  void* y = nullptr;
  void* y_soft = nullptr;       // hard && save_soft
  const void* noise = nullptr;  // kTensor
  std::uint64_t seed = 0;       // kPhilox
  std::uint64_t offset = 0;     // kPhilox
};
using GumbelSoftmaxPlan = Plan<GumbelSoftmaxDescriptor, GumbelSoftmaxArgs>;

struct GumbelSoftmaxBackwardDescriptor {
  TensorLayout grad_y;
  TensorLayout y_soft;  // the soft sample (soft: the forward's y; hard: its y_soft)
  TensorLayout grad_x;  // grad_y's shape
  int axis = -1;
  double tau = 1.0;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GumbelSoftmaxBackwardDescriptor&, const GumbelSoftmaxBackwardDescriptor&) = default;
};
struct GumbelSoftmaxBackwardArgs {
  const void* grad_y = nullptr;
  const void* y_soft = nullptr;
  void* grad_x = nullptr;
};
using GumbelSoftmaxBackwardPlan = Plan<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>;

extern template class Plan<GumbelSoftmaxDescriptor, GumbelSoftmaxArgs>;
extern template class Plan<GumbelSoftmaxBackwardDescriptor, GumbelSoftmaxBackwardArgs>;

}  // namespace baracuda
