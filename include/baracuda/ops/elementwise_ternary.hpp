// Elementwise family, three-operand and scalar plans: TernaryPlan (clamp with tensor bounds,
// fma, addcmul, addcdiv) and its backward, WherePlan and its backward, AffinePlan and
// FillPlan. Included by baracuda/ops/elementwise.hpp.
//
// Layouts follow the rest of the family: inputs broadcast to the output's shape (NumPy
// rules), any strides, in place when an output aliases an input with the identical layout.
// Backward gradients of broadcast inputs are summed over the broadcast dims in a fixed
// order (deterministic). docs/semantics.md has one row per kind and plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// ---------------------------------------------------------------------------------------
// Ternary: out = f(a, b, c), the three broadcast together into out's shape.
//   clamp    a = x, b = min, c = max   out = min(max(x, min), max); NaN in any operand gives
//                                      NaN (torch.clamp); min > max gives max. Scalar bounds:
//                                      UnaryParamPlan's hardtanh(min, max) is the same map.
//   fma      out = a * b + c rounded once in the compute type (fma / fmaf)
//   addcmul  a = input, b = tensor1, c = tensor2: out = input + value * tensor1 * tensor2
//   addcdiv  out = input + value * (tensor1 / tensor2)
// addcmul / addcdiv round as PyTorch: (value * t1) * t2 (or t1 / t2, then value * q) and the
// add, each rounded in the compute type - never contracted into an fma.
// Dtypes: f64, f32, f16, bf16 (f16/bf16 computed in f32); clamp also on i64, i32, i16, i8, u8.
enum class TernaryKind : std::uint8_t { kClamp, kFma, kAddcmul, kAddcdiv };
inline constexpr int kNumTernaryKinds = 4;
const char* ternary_kind_name(TernaryKind k) noexcept;  // "clamp", "fma", "addcmul", "addcdiv"
std::optional<TernaryKind> parse_ternary_kind(std::string_view name) noexcept;

struct TernaryDescriptor {
  TernaryKind kind = TernaryKind::kClamp;
  double value = 1;  // addcmul / addcdiv scalar (finite); ignored by clamp and fma
  TensorLayout a;    // all of one dtype
  TensorLayout b;
  TensorLayout c;
  TensorLayout out;  // shape = broadcast(a, b, c)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const TernaryDescriptor&, const TernaryDescriptor&) = default;
};
struct TernaryArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* out = nullptr;
};
using TernaryPlan = Plan<TernaryDescriptor, TernaryArgs>;

// grad_a / grad_b / grad_c (floating dtypes only), PyTorch's formulas:
//   clamp    grad_x = g where min <= x <= max; grad_min = g where x < min and min < max;
//            grad_max = g where x > max or max < min; 0 elsewhere
//   fma      g * b, g * a, g
//   addcmul  g, g * tensor2 * value, g * tensor1 * value
//   addcdiv  g, g * (value / tensor2), -g * value * tensor1 / (tensor2 * tensor2)
// A gradient whose operand was broadcast is computed per element in the compute type into
// the workspace and summed over the broadcast dims in a fixed order (two passes), then
// rounded once to the gradient's dtype. Operands a kind does not read (fma: c; addcmul and
// addcdiv: a) may be null.
struct TernaryBackwardDescriptor {
  TernaryKind kind = TernaryKind::kClamp;
  double value = 1;
  TensorLayout grad_out;  // the forward output's shape
  TensorLayout a;         // forward inputs
  TensorLayout b;
  TensorLayout c;
  TensorLayout grad_a;  // a's shape (any strides)
  TensorLayout grad_b;
  TensorLayout grad_c;
  bool compute_grad_a = true;
  bool compute_grad_b = true;
  bool compute_grad_c = true;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const TernaryBackwardDescriptor&, const TernaryBackwardDescriptor&) = default;
};
struct TernaryBackwardArgs {
  const void* grad_out = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* grad_a = nullptr;  // ignored when !compute_grad_a
  void* grad_b = nullptr;
  void* grad_c = nullptr;
};
using TernaryBackwardPlan = Plan<TernaryBackwardDescriptor, TernaryBackwardArgs>;

// ---------------------------------------------------------------------------------------
// Where: out = cond ? a : b (cond bool; a, b and out one dtype, any real dtype including
// fp8, integers and bool). Bit-exact selection (NaN payloads and -0 kept).
struct WhereDescriptor {
  TensorLayout cond;  // bool
  TensorLayout a;
  TensorLayout b;
  TensorLayout out;   // shape = broadcast(cond, a, b)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const WhereDescriptor&, const WhereDescriptor&) = default;
};
struct WhereArgs {
  const void* cond = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
};
using WherePlan = Plan<WhereDescriptor, WhereArgs>;

// grad_a = where(cond, g, 0), grad_b = where(cond, 0, g), each summed over the dims where a
// (b) was broadcast, deterministically (floating dtypes).
struct WhereBackwardDescriptor {
  TensorLayout cond;      // bool, broadcastable to grad_out
  TensorLayout grad_out;
  TensorLayout grad_a;    // a's shape
  TensorLayout grad_b;    // b's shape
  bool compute_grad_a = true;
  bool compute_grad_b = true;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const WhereBackwardDescriptor&, const WhereBackwardDescriptor&) = default;
};
struct WhereBackwardArgs {
  const void* cond = nullptr;
  const void* grad_out = nullptr;
  void* grad_a = nullptr;
  void* grad_b = nullptr;
};
using WhereBackwardPlan = Plan<WhereBackwardDescriptor, WhereBackwardArgs>;

// ---------------------------------------------------------------------------------------
// Affine: y = alpha * x + beta (x may broadcast; y may alias x for in place).
// Floating dtypes (f64, f32, f16, bf16): fma(alpha, x, beta) in the compute type, one
// rounding there. Integer dtypes (i64, i32, i16, i8, u8): alpha and beta must be integers
// (|v| <= 2^53); two's complement arithmetic wrapping at the dtype's width.
struct AffineDescriptor {
  double alpha = 1;
  double beta = 0;
  TensorLayout x;
  TensorLayout y;  // x's dtype
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const AffineDescriptor&, const AffineDescriptor&) = default;
};
struct AffineArgs {
  const void* x = nullptr;
  void* y = nullptr;  // may equal x (same layout) for in place
};
using AffinePlan = Plan<AffineDescriptor, AffineArgs>;

// ---------------------------------------------------------------------------------------
// Fill: every element of y (any strides without overlap) = value converted to y's dtype:
// floating dtypes as torch (f16/bf16/fp8 through f32, round to nearest even; fp8 overflow as
// Fp8Overflow::kPyTorch); integers: value must be an integer in the dtype's range (exact up
// to 2^53); bool: value != 0.
struct FillDescriptor {
  TensorLayout y;
  double value = 0;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const FillDescriptor&, const FillDescriptor&) = default;
};
struct FillArgs {
  void* y = nullptr;
};
using FillPlan = Plan<FillDescriptor, FillArgs>;

extern template class Plan<TernaryDescriptor, TernaryArgs>;
extern template class Plan<TernaryBackwardDescriptor, TernaryBackwardArgs>;
extern template class Plan<WhereDescriptor, WhereArgs>;
extern template class Plan<WhereBackwardDescriptor, WhereBackwardArgs>;
extern template class Plan<AffineDescriptor, AffineArgs>;
extern template class Plan<FillDescriptor, FillArgs>;

}  // namespace baracuda
