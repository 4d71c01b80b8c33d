// Channel normalizations of [N, C, spatial...] tensors (torch.nn.functional.batch_norm,
// group_norm, instance_norm) and their backward.
//
// x is [N, C, *] (rank >= 2; the spatial dims may be absent: S = 1); y / grad_y / grad_x
// have x's shape and dtype, any strides (unit-stride spatial dims such as contiguous NCHW
// take 16-byte vectors; every other layout, channels-last included, runs the strided kernels). Per-channel arrays (weight, bias, running_mean,
// running_var, grad_weight, grad_bias) are 1-D [C], any stride, in x's dtype or in the
// compute type (f32 for f16 / bf16 / f32, f64 for f64: PyTorch's mixed-precision form).
// Saved statistics are in the compute type.
//
//   BatchNorm, training: per channel over N and the spatial dims (M = N * S values):
//     mean, var = sum((x - mean)^2) / M (biased), invstd = 1 / sqrt(var + eps),
//     y = (x - mean) * invstd * w + b; save_mean / save_invstd [C];
//     running_mean = (1 - momentum) * running_mean + momentum * mean,
//     running_var  = (1 - momentum) * running_var  + momentum * var * M / (M - 1)
//     (refused when M == 1, as PyTorch). Eval: mean / var are the running stats.
//   GroupNorm: per (n, group) over C / num_groups channels and the spatial dims:
//     mean, rstd = 1 / sqrt(var + eps) saved as [N, num_groups]; y as above with w[c], b[c].
//   InstanceNorm (use_input_stats): GroupNorm with num_groups = C (saved [N, C]); optional
//     running stats updated with the mean over N of the per-instance mean and unbiased
//     variance (F.instance_norm); use_input_stats = false normalizes with the running stats.
//     Refused when the spatial size is 1 (as PyTorch).
// Empty inputs, as PyTorch (checked against torch 2.15 CPU): y / grad_x are empty and written
// nowhere. A statistic over no values is saved as mean 0, invstd / rstd 1 / sqrt(eps) (its
// variance taken as 0; inf when eps = 0; torch leaves these uninitialised), and the backward
// writes grad_weight = grad_bias = 0. BatchNorm training with M = 0 leaves the running stats
// as they are; InstanceNorm with spatial size 0 leaves them too, while InstanceNorm with
// N = 0 and a running update writes NaN into both (F.instance_norm averages the update over
// no instance: 0 / 0). GroupNorm refuses spatial size 0 when N > 0 (torch: "Expected HxW to
// be greater than 0"); with N = 0 it writes nothing.
// Backward (PyTorch's formulas; xhat = (x - mean) * invstd, sums over the statistic's set):
//   grad_x = invstd * (w * grad_y - mean(w * grad_y) - xhat * mean(w * grad_y * xhat))
//   (BatchNorm / InstanceNorm eval: grad_x = grad_y * w * invstd), grad_weight[c] = sum of
//   grad_y * xhat, grad_bias[c] = sum of grad_y over N and the spatial dims.
// Every reduction is deterministic: per-warp partial statistics (Welford / sums in the compute
// type) in the workspace, then a finalize kernel merges them in a fixed order (in f64);
// no atomics. Dtypes f64, f32, f16, bf16.
#pragma once

#include <cstddef>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct BatchNormDescriptor {
  TensorLayout x;                  // [N, C, *]
  TensorLayout y;                  // x's shape and dtype
  bool training = true;            // batch statistics (else the running stats)
  bool has_weight = true;
  bool has_bias = true;
  TensorLayout weight;             // [C]
  TensorLayout bias;               // [C]
  bool has_running_stats = true;   // training: updated in place; eval: required (read)
  TensorLayout running_mean;       // [C]
  TensorLayout running_var;        // [C]
  bool save_stats = true;          // training: write save_mean / save_invstd ([C], compute type)
  double momentum = 0.1;
  double eps = 1e-5;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BatchNormDescriptor&, const BatchNormDescriptor&) = default;
};
struct BatchNormArgs {
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* running_mean = nullptr;  // read and (training) updated
  void* running_var = nullptr;
  void* y = nullptr;
  void* save_mean = nullptr;
  void* save_invstd = nullptr;
};

struct BatchNormBackwardDescriptor {
  TensorLayout grad_y;             // x's shape
  TensorLayout x;                  // [N, C, *]
  TensorLayout grad_x;             // x's shape
  bool training = true;            // saved batch mean / invstd (else the running stats + eps)
  bool has_weight = true;          // weight read (else 1)
  TensorLayout weight;             // [C]
  bool compute_grad_weight = true;
  bool compute_grad_bias = true;
  TensorLayout grad_weight;        // [C]
  TensorLayout grad_bias;          // [C]
  TensorLayout running_mean;       // [C] (eval)
  TensorLayout running_var;        // [C] (eval)
  double eps = 1e-5;               // eval: invstd = 1 / sqrt(running_var + eps)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BatchNormBackwardDescriptor&, const BatchNormBackwardDescriptor&) = default;
};
struct BatchNormBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* save_mean = nullptr;    // training
  const void* save_invstd = nullptr;  // training
  const void* running_mean = nullptr; // eval
  const void* running_var = nullptr;  // eval
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
};

struct GroupNormDescriptor {
  TensorLayout x;                  // [N, C, *]
  TensorLayout y;
  int num_groups = 1;              // divides C
  bool has_weight = true;
  bool has_bias = true;
  TensorLayout weight;             // [C]
  TensorLayout bias;               // [C]
  bool save_stats = true;          // mean / rstd [N, num_groups], compute type
  double eps = 1e-5;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GroupNormDescriptor&, const GroupNormDescriptor&) = default;
};
struct GroupNormArgs {
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
};

struct GroupNormBackwardDescriptor {
  TensorLayout grad_y;
  TensorLayout x;
  TensorLayout grad_x;
  int num_groups = 1;
  bool has_weight = true;
  TensorLayout weight;
  bool compute_grad_weight = true;
  bool compute_grad_bias = true;
  TensorLayout grad_weight;
  TensorLayout grad_bias;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GroupNormBackwardDescriptor&, const GroupNormBackwardDescriptor&) = default;
};
struct GroupNormBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* mean = nullptr;  // [N, num_groups] saved by the forward
  const void* rstd = nullptr;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
};

struct InstanceNormDescriptor {
  TensorLayout x;                  // [N, C, *]
  TensorLayout y;
  bool use_input_stats = true;     // per-instance statistics (else the running stats)
  bool has_weight = true;
  bool has_bias = true;
  TensorLayout weight;             // [C]
  TensorLayout bias;               // [C]
  bool has_running_stats = false;  // use_input_stats: updated; else required (read)
  TensorLayout running_mean;       // [C]
  TensorLayout running_var;        // [C]
  bool save_stats = true;          // use_input_stats: mean / rstd [N, C], compute type
  double momentum = 0.1;
  double eps = 1e-5;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const InstanceNormDescriptor&, const InstanceNormDescriptor&) = default;
};
struct InstanceNormArgs {
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* running_mean = nullptr;
  void* running_var = nullptr;
  void* y = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
};

struct InstanceNormBackwardDescriptor {
  TensorLayout grad_y;
  TensorLayout x;
  TensorLayout grad_x;
  bool use_input_stats = true;     // saved mean / rstd [N, C] (else running stats + eps)
  bool has_weight = true;
  TensorLayout weight;
  bool compute_grad_weight = true;
  bool compute_grad_bias = true;
  TensorLayout grad_weight;
  TensorLayout grad_bias;
  TensorLayout running_mean;       // [C] (!use_input_stats)
  TensorLayout running_var;
  double eps = 1e-5;               // !use_input_stats
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const InstanceNormBackwardDescriptor&, const InstanceNormBackwardDescriptor&) = default;
};
struct InstanceNormBackwardArgs {
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* mean = nullptr;          // use_input_stats: [N, C]
  const void* rstd = nullptr;
  const void* running_mean = nullptr;  // !use_input_stats
  const void* running_var = nullptr;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
};

using BatchNormPlan = Plan<BatchNormDescriptor, BatchNormArgs>;
using BatchNormBackwardPlan = Plan<BatchNormBackwardDescriptor, BatchNormBackwardArgs>;
using GroupNormPlan = Plan<GroupNormDescriptor, GroupNormArgs>;
using GroupNormBackwardPlan = Plan<GroupNormBackwardDescriptor, GroupNormBackwardArgs>;
using InstanceNormPlan = Plan<InstanceNormDescriptor, InstanceNormArgs>;
using InstanceNormBackwardPlan = Plan<InstanceNormBackwardDescriptor, InstanceNormBackwardArgs>;

extern template class Plan<BatchNormDescriptor, BatchNormArgs>;
extern template class Plan<BatchNormBackwardDescriptor, BatchNormBackwardArgs>;
extern template class Plan<GroupNormDescriptor, GroupNormArgs>;
extern template class Plan<GroupNormBackwardDescriptor, GroupNormBackwardArgs>;
extern template class Plan<InstanceNormDescriptor, InstanceNormArgs>;
extern template class Plan<InstanceNormBackwardDescriptor, InstanceNormBackwardArgs>;

}  // namespace baracuda
