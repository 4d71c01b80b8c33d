// Elementwise family: unary and binary maps (forward and backward) and dtype casts.
//
// Layouts follow PyTorch: inputs broadcast (NumPy rules, stride 0), any strides, in-place
// allowed when an output aliases an input with the identical layout. f16/bf16 compute in
// f32, f64 in f64. See docs/semantics.md for the per-kind rules (NaN, signed zero, rounding).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "baracuda/core/numeric.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// ---------------------------------------------------------------------------------------
// Unary: y = f(x)
enum class UnaryKind : std::uint8_t {
  kRelu,
  kGeluErf,   // x * 0.5 * (1 + erf(x / sqrt(2)))      (torch gelu, approximate='none')
  kGeluTanh,  // 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))  (approximate='tanh')
  kSilu,
  kExp,
};
inline constexpr int kNumUnaryKinds = 5;
const char* unary_kind_name(UnaryKind k) noexcept;  // "relu", "gelu_erf", "gelu_tanh", "silu", "exp"
std::optional<UnaryKind> parse_unary_kind(std::string_view name) noexcept;

struct UnaryDescriptor {
  UnaryKind kind = UnaryKind::kRelu;
  TensorLayout x;  // may broadcast into y's shape
  TensorLayout y;  // same dtype as x; no stride-0 dims of size > 1
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const UnaryDescriptor&, const UnaryDescriptor&) = default;
};
struct UnaryArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using UnaryPlan = Plan<UnaryDescriptor, UnaryArgs>;

// grad_in = grad_out * f'(x); the three share one shape (a broadcast forward input is
// reduced by the caller, as frameworks do with sum_to_size).
struct UnaryBackwardDescriptor {
  UnaryKind kind = UnaryKind::kRelu;
  TensorLayout grad_out;
  TensorLayout x;         // the forward input (any strides)
  TensorLayout grad_in;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const UnaryBackwardDescriptor&, const UnaryBackwardDescriptor&) = default;
};
struct UnaryBackwardArgs {
  const void* grad_out = nullptr;
  const void* x = nullptr;
  void* grad_in = nullptr;
};
using UnaryBackwardPlan = Plan<UnaryBackwardDescriptor, UnaryBackwardArgs>;

// ---------------------------------------------------------------------------------------
// Binary: out = a (op) b with broadcasting
enum class BinaryKind : std::uint8_t { kAdd, kSub, kMul, kDiv };  // div = true division
inline constexpr int kNumBinaryKinds = 4;
const char* binary_kind_name(BinaryKind k) noexcept;
std::optional<BinaryKind> parse_binary_kind(std::string_view name) noexcept;

struct BinaryDescriptor {
  BinaryKind kind = BinaryKind::kAdd;
  TensorLayout a;    // a, b and out share one dtype (mixed dtypes are refused: docs/semantics.md)
  TensorLayout b;
  TensorLayout out;  // shape = broadcast(a.shape, b.shape)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BinaryDescriptor&, const BinaryDescriptor&) = default;
};
struct BinaryArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
};
using BinaryPlan = Plan<BinaryDescriptor, BinaryArgs>;

// grad_a = sum over a's broadcast dims of d(out)/d(a) * grad_out, likewise grad_b.
// Reductions over broadcast dims are deterministic (two passes through the workspace).
struct BinaryBackwardDescriptor {
  BinaryKind kind = BinaryKind::kAdd;
  TensorLayout grad_out;  // the forward output's shape
  TensorLayout a;         // forward inputs (their values are read by mul and div only)
  TensorLayout b;
  TensorLayout grad_a;    // a's shape
  TensorLayout grad_b;    // b's shape
  bool compute_grad_a = true;
  bool compute_grad_b = true;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BinaryBackwardDescriptor&, const BinaryBackwardDescriptor&) = default;
};
struct BinaryBackwardArgs {
  const void* grad_out = nullptr;
  const void* a = nullptr;  // may be null for add and sub
  const void* b = nullptr;  // may be null for add and sub
  void* grad_a = nullptr;   // ignored when !compute_grad_a
  void* grad_b = nullptr;   // ignored when !compute_grad_b
};
using BinaryBackwardPlan = Plan<BinaryBackwardDescriptor, BinaryBackwardArgs>;

// ---------------------------------------------------------------------------------------
// Cast: y = convert(x). Rounding is to nearest even; see docs/numerics-conversions.md for
// NaN, infinity and the fp8 overflow modes.
struct CastDescriptor {
  TensorLayout x;  // may broadcast into y's shape
  TensorLayout y;
  Fp8Overflow fp8_overflow = Fp8Overflow::kPyTorch;  // used when y is e4m3 / e5m2
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const CastDescriptor&, const CastDescriptor&) = default;
};
struct CastArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using CastPlan = Plan<CastDescriptor, CastArgs>;

extern template class Plan<UnaryDescriptor, UnaryArgs>;
extern template class Plan<UnaryBackwardDescriptor, UnaryBackwardArgs>;
extern template class Plan<BinaryDescriptor, BinaryArgs>;
extern template class Plan<BinaryBackwardDescriptor, BinaryBackwardArgs>;
extern template class Plan<CastDescriptor, CastArgs>;

}  // namespace baracuda
