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
// Unary: y = f(x). docs/semantics.md has one row per kind (formula, gradient, NaN, signed
// zero, domain). Floating kinds run on f64, f32, f16 and bf16 (f16/bf16 computed in f32);
// the integer kinds on i64, i32, i16, i8 and u8 (and bool where it makes sense); the
// predicates write bool.
enum class UnaryKind : std::uint8_t {
  // arithmetic
  kNeg, kAbs, kSign, kReciprocal, kSquare, kCube, kSqrt, kRsqrt, kCbrt,
  // exponentials and logarithms
  kExp, kExp2, kExpm1, kLog, kLog2, kLog10, kLog1p,
  // trigonometric and hyperbolic
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh,
  // rounding
  kFloor, kCeil, kRound /* half to even */, kTrunc, kFrac,
  // special functions
  kErf, kErfc, kErfinv, kLgamma, kDigamma,
  // activations (parametric ones take PyTorch's defaults in UnaryPlan)
  kRelu, kRelu6, kGeluErf, kGeluTanh, kSilu, kMish, kSigmoid, kLogit, kSoftplus, kSoftsign, kTanhshrink,
  kHardswish, kHardsigmoid, kHardtanh, kSelu, kCelu, kElu, kLeakyRelu, kHardshrink, kSoftshrink, kStep,
  // predicates and logic
  kLogicalNot, kBitwiseNot, kIsnan, kIsinf, kIsfinite, kNanToNum,
  // integer only
  kPopcount, kClz,
  // parametric only (UnaryParamPlan): x <= threshold ? value : x, and x ** exponent
  kThreshold, kPow,
};
inline constexpr int kNumUnaryKinds = static_cast<int>(UnaryKind::kPow) + 1;

// What a kind accepts and produces.
struct UnaryKindInfo {
  const char* name;     // "gelu_erf", "log1p", ... (parse_unary_kind also takes "gelu")
  bool floating;        // f64, f32, f16, bf16 in (and out, unless to_bool)
  bool integer;         // i64, i32, i16, i8, u8 in and out (logical_not: out bool)
  bool boolean;         // bool in (bitwise_not, logical_not)
  bool to_bool;         // y is bool (isnan, isinf, isfinite, logical_not)
  bool differentiable;  // UnaryBackwardPlan accepts it (piecewise-constant kinds give 0)
  bool parametric;      // UnaryParamPlan accepts it (see UnaryParams)
  bool plain;           // UnaryPlan accepts it (false for threshold and pow)
};
const UnaryKindInfo& unary_kind_info(UnaryKind k) noexcept;  // unknown kind: name "unknown", nothing set
const char* unary_kind_name(UnaryKind k) noexcept;
std::optional<UnaryKind> parse_unary_kind(std::string_view name) noexcept;

// Scalars of the parametric kinds (UnaryParamPlan). Meaning per kind:
//   threshold   a = threshold, b = value            y = x <= a ? b : x
//   leaky_relu  a = negative_slope (0.01)
//   elu         a = alpha (1)        celu  a = alpha (1, must be != 0)
//   hardtanh    a = min_val (-1), b = max_val (1)
//   softplus    a = beta (1, != 0), b = threshold (20)
//   pow         a = exponent
//   hardshrink  a = lambda (0.5)     softshrink  a = lambda (0.5, >= 0)
//   nan_to_num  a = nan (0), b = posinf, c = neginf (defaults: the dtype's largest and
//               lowest finite values)
//   logit       a = eps (< 0: none, the default; else x is clamped to [eps, 1 - eps])
// UnaryPlan uses default_unary_params(kind, dtype) (PyTorch's defaults).
struct UnaryParams {
  double a = 0, b = 0, c = 0;
  friend bool operator==(const UnaryParams&, const UnaryParams&) = default;
};
UnaryParams default_unary_params(UnaryKind k, DType t) noexcept;

struct UnaryDescriptor {
  UnaryKind kind = UnaryKind::kRelu;
  TensorLayout x;  // may broadcast into y's shape
  TensorLayout y;  // x's dtype, or bool for the predicates; no stride-0 dims of size > 1
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const UnaryDescriptor&, const UnaryDescriptor&) = default;
};
struct UnaryArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using UnaryPlan = Plan<UnaryDescriptor, UnaryArgs>;

// grad_in = grad_out * f'(x) (PyTorch's backward formula); the three share one shape and
// dtype (floating). A broadcast forward input is reduced by the caller (sum_to_size).
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

// Parametric unary: the kinds with UnaryKindInfo::parametric, scalars in `params`.
struct UnaryParamDescriptor {
  UnaryKind kind = UnaryKind::kLeakyRelu;
  UnaryParams params;
  TensorLayout x;
  TensorLayout y;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const UnaryParamDescriptor&, const UnaryParamDescriptor&) = default;
};
using UnaryParamPlan = Plan<UnaryParamDescriptor, UnaryArgs>;

struct UnaryParamBackwardDescriptor {
  UnaryKind kind = UnaryKind::kLeakyRelu;
  UnaryParams params;
  TensorLayout grad_out;
  TensorLayout x;
  TensorLayout grad_in;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const UnaryParamBackwardDescriptor&, const UnaryParamBackwardDescriptor&) = default;
};
using UnaryParamBackwardPlan = Plan<UnaryParamBackwardDescriptor, UnaryBackwardArgs>;

// ---------------------------------------------------------------------------------------
// Binary: out = a (op) b with broadcasting. docs/semantics.md has one row per kind (NaN,
// signed zero, integer overflow, division by zero). Floating kinds run on f64, f32, f16 and
// bf16 (f16/bf16 computed in f32); the integer kinds on i64, i32, i16, i8 and u8 in their
// own type (wrapping); the bitwise and logical kinds on bool too; logical kinds write bool.
enum class BinaryKind : std::uint8_t {
  kAdd, kSub, kMul,
  kDiv,                 // true division (floating only)
  kDivFloor, kDivTrunc, // torch.div rounding_mode 'floor' / 'trunc'
  kPow, kAtan2, kHypot, kCopysign, kNextafter,
  kFmin, kFmax,         // NaN ignored (the other operand wins)
  kMaximum, kMinimum,   // NaN propagates
  kFmod,                // C fmod: the result has a's sign
  kRemainder,           // Python's %: the result has b's sign
  kLdexp,               // a * 2^b
  kXlogy,               // a * log(b), 0 where a == 0 (NaN b gives NaN)
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kShiftLeft, kShiftRight,
  kLogicalAnd, kLogicalOr, kLogicalXor,  // any dtype -> bool
};
inline constexpr int kNumBinaryKinds = static_cast<int>(BinaryKind::kLogicalXor) + 1;

// What a kind accepts and produces (as UnaryKindInfo).
struct BinaryKindInfo {
  const char* name;     // "add", "div_floor", "logical_xor", ...
  bool floating;        // f64, f32, f16, bf16 in (and out, unless to_bool)
  bool integer;         // i64, i32, i16, i8, u8 in and out (logical kinds: out bool)
  bool boolean;         // bool in and out (bitwise and logical kinds)
  bool to_bool;         // out is bool whatever the inputs (logical kinds)
  bool differentiable;  // BinaryBackwardPlan accepts it (floating dtypes; div_floor/div_trunc give 0)
};
const BinaryKindInfo& binary_kind_info(BinaryKind k) noexcept;  // unknown kind: name "unknown", nothing set
const char* binary_kind_name(BinaryKind k) noexcept;
std::optional<BinaryKind> parse_binary_kind(std::string_view name) noexcept;

struct BinaryDescriptor {
  BinaryKind kind = BinaryKind::kAdd;
  TensorLayout a;    // a and b share one dtype (mixed dtypes are refused: docs/semantics.md)
  TensorLayout b;
  TensorLayout out;  // shape = broadcast(a.shape, b.shape); a's dtype (bool for the logical kinds)
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
  TensorLayout a;         // forward inputs (read by every kind but add, sub, div_floor, div_trunc)
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
  const void* a = nullptr;  // may be null for add, sub, div_floor and div_trunc
  const void* b = nullptr;
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
extern template class Plan<UnaryParamDescriptor, UnaryArgs>;
extern template class Plan<UnaryParamBackwardDescriptor, UnaryBackwardArgs>;
extern template class Plan<BinaryDescriptor, BinaryArgs>;
extern template class Plan<BinaryBackwardDescriptor, BinaryBackwardArgs>;
extern template class Plan<CastDescriptor, CastArgs>;

}  // namespace baracuda

#include "baracuda/ops/elementwise_binary.hpp"  // BinaryCmpPlan, BinaryParamPlan
#include "baracuda/ops/pack.hpp"  // PackPlan / UnpackPlan (s4, u4, bit)
#include "baracuda/ops/gated.hpp"  // GatedActivationPlan / backward (glu, reglu, swiglu, geglu)
#include "baracuda/ops/prelu.hpp"  // PReluPlan / PReluBackwardPlan
#include "baracuda/ops/elementwise_ternary.hpp"  // ternary, where, affine, fill
