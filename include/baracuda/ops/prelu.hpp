// PReLU: y = x > 0 ? x : w[c] * x with one weight per channel (c = index along dim 1 of x,
// torch.nn.functional.prelu's channel dim) or a single weight for every element.
//
// weight is [C] with C = x.shape[1], or has one element ([1] or rank 0; required when x has
// fewer than 2 dims). NaN x gives NaN (w * NaN); -0.0 takes the w * x branch (w * -0.0).
// Backward (PyTorch's): grad_x = x > 0 ? g : w[c] * g, and
// grad_weight[c] = sum over every other dim of (x > 0 ? 0 : x * g), reduced deterministically
// in the compute type (f32 for f32/f16/bf16, f64 for f64): fixed chunks through the
// workspace, then the chunks added in order (no atomics: same inputs, same bits).
// Dtypes f64, f32, f16, bf16; x, weight and y share one.
#pragma once

#include <cstddef>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct PReluDescriptor {
  TensorLayout x;       // any strides
  TensorLayout weight;  // [C] or one element
  TensorLayout y;       // x's shape
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const PReluDescriptor&, const PReluDescriptor&) = default;
};
struct PReluArgs {
  const void* x = nullptr;
  const void* weight = nullptr;
  void* y = nullptr;
};
using PReluPlan = Plan<PReluDescriptor, PReluArgs>;

struct PReluBackwardDescriptor {
  TensorLayout grad_y;       // x's shape
  TensorLayout x;
  TensorLayout weight;
  TensorLayout grad_x;       // x's shape
  TensorLayout grad_weight;  // weight's shape
  bool compute_grad_x = true;
  bool compute_grad_weight = true;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const PReluBackwardDescriptor&, const PReluBackwardDescriptor&) = default;
};
struct PReluBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  void* grad_x = nullptr;       // ignored when !compute_grad_x
  void* grad_weight = nullptr;  // ignored when !compute_grad_weight
};
using PReluBackwardPlan = Plan<PReluBackwardDescriptor, PReluBackwardArgs>;

extern template class Plan<PReluDescriptor, PReluArgs>;
extern template class Plan<PReluBackwardDescriptor, PReluBackwardArgs>;

}  // namespace baracuda
