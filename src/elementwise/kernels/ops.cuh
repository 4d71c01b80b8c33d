// Elementwise functors: one struct per op, evaluated in the compute type C (float or
// double). Formulas follow PyTorch's CUDA kernels (see docs/semantics.md), with no fast
// math: erf/tanh/exp are the full-precision library functions.
#pragma once

#include <cuda_runtime.h>

#include "baracuda/ops/elementwise.hpp"
#include "elementwise/kernels/unary_math.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

// ------------------------------------------------------------------------ unary
// Per-kind functors (contiguous kernels) and run-time-kind functors (rows / strided
// kernels); the math is in unary_math.cuh. Scalars travel as doubles and convert to the
// compute type once per thread.
template <UnaryKind K>
struct UnaryFwdOp {
  static constexpr int kIn = 1, kOut = 1;
  static constexpr int kInFlight = unary_is_light(K) ? 16 : 32;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_fwd<K>(x[0], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

template <UnaryKind K>
struct UnaryGradOp {  // in: grad_out, x   out: grad_in
  static constexpr int kIn = 2, kOut = 1;
  static constexpr int kInFlight = unary_is_light(K) ? 16 : 64;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = unary_grad<K>(in[0], in[1], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

struct UnaryDynOp {
  static constexpr int kIn = 1, kOut = 1;
  UnaryKind kind;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_fwd_dyn(kind, x[0], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

struct UnaryDynGradOp {
  static constexpr int kIn = 2, kOut = 1;
  UnaryKind kind;
  double a = 0, b = 0, c = 0;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = unary_grad_dyn(kind, in[0], in[1], UnaryScalars<C>{C(a), C(b), C(c)});
  }
};

template <UnaryKind K>
struct UnaryIntOp {  // integer kinds, computed in the integer type
  static constexpr int kIn = 1, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_int<K>(x[0]);
  }
};

template <UnaryKind K>
struct UnaryPredicateOp {  // isnan, isinf, isfinite, logical_not -> 0 / 1, stored as bool
  static constexpr int kIn = 1, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* x, C* y) const {
    y[0] = unary_predicate<K>(x[0]);
  }
};

// The fast 16-bit forms of transcendental kinds: elementwise/kernels/unary_fast16.cuh.

// Binary functors: elementwise/kernels/binary_ops.cuh.

}  // namespace baracuda::kernels
