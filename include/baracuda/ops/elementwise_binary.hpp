// Elementwise family, the two-input plans beside BinaryPlan: comparisons (-> bool) and the
// binary ops with a scalar or a third tensor (lerp, add / sub with alpha).
//
// Layouts follow BinaryPlan: a, b (and lerp's weight) broadcast to out's shape (NumPy
// rules), any strides, out may alias an input with the identical layout. docs/semantics.md
// has the rows ("Binary comparisons", "Binary with parameters").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/elementwise.hpp"

namespace baracuda {

// ---------------------------------------------------------------------------------------
// Comparisons: out = a (cmp) b as bool. Every real dtype (f64, f32, f16, bf16, i64, i32,
// i16, i8, u8, bool); a and b share one dtype (mixed dtypes are refused; cast first).
// NaN compares unequal to everything (ne gives true); isclose follows torch.isclose.
enum class BinaryCmpKind : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIsclose };
inline constexpr int kNumBinaryCmpKinds = static_cast<int>(BinaryCmpKind::kIsclose) + 1;
const char* binary_cmp_kind_name(BinaryCmpKind k) noexcept;
std::optional<BinaryCmpKind> parse_binary_cmp_kind(std::string_view name) noexcept;

struct BinaryCmpDescriptor {
  BinaryCmpKind kind = BinaryCmpKind::kEq;
  // isclose only: |a - b| <= atol + rtol * |b| (torch.isclose, computed in f32, or f64 for
  // f64 and the integer dtypes); equal_nan makes NaN close to NaN. rtol, atol >= 0.
  double rtol = 1e-5;
  double atol = 1e-8;
  bool equal_nan = false;
  TensorLayout a;
  TensorLayout b;
  TensorLayout out;  // bool, shape = broadcast(a.shape, b.shape)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BinaryCmpDescriptor&, const BinaryCmpDescriptor&) = default;
};
using BinaryCmpPlan = Plan<BinaryCmpDescriptor, BinaryArgs>;

// ---------------------------------------------------------------------------------------
// Binary with parameters, floating dtypes (f64, f32, f16, bf16; 16-bit computed in f32):
//   lerp         out = lerp(a, b, scalar)         (torch.lerp with a scalar weight)
//   lerp_tensor  out = lerp(a, b, weight)         (torch.lerp with a weight tensor)
//   add_alpha    out = a + scalar * b             (torch.add(a, b, alpha=scalar))
//   sub_alpha    out = a - scalar * b             (torch.sub(a, b, alpha=scalar))
// lerp(a, b, w) = |w| < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w), as torch.
enum class BinaryParamKind : std::uint8_t { kLerp, kLerpTensor, kAddAlpha, kSubAlpha };
inline constexpr int kNumBinaryParamKinds = static_cast<int>(BinaryParamKind::kSubAlpha) + 1;
const char* binary_param_kind_name(BinaryParamKind k) noexcept;
std::optional<BinaryParamKind> parse_binary_param_kind(std::string_view name) noexcept;

struct BinaryParamDescriptor {
  BinaryParamKind kind = BinaryParamKind::kLerp;
  double scalar = 0.5;   // lerp's weight or alpha (finite); unused by lerp_tensor
  TensorLayout a;        // lerp: start; add/sub: the first operand
  TensorLayout b;        // lerp: end
  TensorLayout weight;   // lerp_tensor only (a's dtype); ignored otherwise
  TensorLayout out;      // a's dtype, shape = broadcast of the inputs
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BinaryParamDescriptor&, const BinaryParamDescriptor&) = default;
};
struct BinaryParamArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* weight = nullptr;  // lerp_tensor only
  void* out = nullptr;
};
using BinaryParamPlan = Plan<BinaryParamDescriptor, BinaryParamArgs>;

// PyTorch's backward: lerp  grad_a = g * (1 - w), grad_b = g * w, grad_weight = g * (b - a);
// add_alpha  grad_a = g, grad_b = g * alpha; sub_alpha  grad_b = -g * alpha.
// Every gradient has grad_out's shape (a broadcast input is reduced by the caller with
// sum_to_size, as for UnaryBackwardPlan); a, b and weight may broadcast into it.
struct BinaryParamBackwardDescriptor {
  BinaryParamKind kind = BinaryParamKind::kLerp;
  double scalar = 0.5;
  TensorLayout grad_out;
  TensorLayout a;            // read by lerp_tensor's grad_weight only
  TensorLayout b;            // read by lerp_tensor's grad_weight only
  TensorLayout weight;       // lerp_tensor: read by grad_a and grad_b
  TensorLayout grad_a;       // grad_out's shape and dtype
  TensorLayout grad_b;
  TensorLayout grad_weight;  // lerp_tensor only
  bool compute_grad_a = true;
  bool compute_grad_b = true;
  bool compute_grad_weight = true;  // ignored unless lerp_tensor
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BinaryParamBackwardDescriptor&, const BinaryParamBackwardDescriptor&) = default;
};
struct BinaryParamBackwardArgs {
  const void* grad_out = nullptr;
  const void* a = nullptr;       // lerp_tensor with compute_grad_weight only
  const void* b = nullptr;       // lerp_tensor with compute_grad_weight only
  const void* weight = nullptr;  // lerp_tensor with grad_a or grad_b only
  void* grad_a = nullptr;
  void* grad_b = nullptr;
  void* grad_weight = nullptr;
};
using BinaryParamBackwardPlan = Plan<BinaryParamBackwardDescriptor, BinaryParamBackwardArgs>;

extern template class Plan<BinaryCmpDescriptor, BinaryArgs>;
extern template class Plan<BinaryParamDescriptor, BinaryParamArgs>;
extern template class Plan<BinaryParamBackwardDescriptor, BinaryParamBackwardArgs>;

}  // namespace baracuda
