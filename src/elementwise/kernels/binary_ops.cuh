// Binary functors for the map kernels (map.cuh) and the broadcast reduction
// (broadcast_reduce.cuh): per-kind ones for the contiguous kernels, run-time-kind ones for
// the rows / strided kernels. The math is in binary_math.cuh; operands arrive in the
// compute type C (float, double, or the integer type itself).
#pragma once

#include <cuda_runtime.h>

#include "elementwise/kernels/binary_math.cuh"
#include "elementwise/map_params.hpp"

namespace baracuda::kernels {

// Cheap kinds: one 16-byte vector of each input in flight saturates HBM.
constexpr bool binary_is_light(BinaryKind k) {
  switch (k) {
    case BinaryKind::kAdd: case BinaryKind::kSub: case BinaryKind::kMul: case BinaryKind::kDiv:
    case BinaryKind::kCopysign: case BinaryKind::kFmin: case BinaryKind::kFmax: case BinaryKind::kMaximum:
    case BinaryKind::kMinimum:
    case BinaryKind::kHypot:  // 32 bytes in flight spill registers (f16 / bf16)
      return true;
    default: return false;
  }
}

// ------------------------------------------------------------------------ forward
// T: the storage type (nextafter steps in it).
template <BinaryKind K, class T>
struct BinaryFwdOp {
  static constexpr int kIn = 2, kOut = 1;
  static constexpr int kInFlight = binary_is_light(K) ? 16 : 32;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_fwd<K, T>(in[0], in[1]);
  }
};

template <class T>
struct BinaryDynOp {
  static constexpr int kIn = 2, kOut = 1;
  BinaryKind kind;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_fwd_dyn<T>(kind, in[0], in[1]);
  }
};

template <BinaryKind K>
struct BinaryIntOp {  // integer and bool kinds, computed in the integer type
  static constexpr int kIn = 2, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_int<K>(in[0], in[1]);
  }
};

struct BinaryIntDynOp {
  static constexpr int kIn = 2, kOut = 1;
  BinaryKind kind;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_int_dyn(kind, in[0], in[1]);
  }
};

// Comparisons and logical kinds: 0 / 1 in the compute type, stored as bool.
struct BinaryBoolOp {
  static constexpr int kIn = 2, kOut = 1;
  BoolOpCode op;
  IscloseScalars s;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_bool(op, in[0], in[1], s) ? C(1) : C(0);
  }
};

// One comparison fixed at compile time (the contiguous path of floating inputs: a run-time
// op switch inside the 16-lane loop cost ~6% of eq's bandwidth against torch on the H200).
template <BoolOpCode Op>
struct BinaryBoolFixedOp {
  static constexpr int kIn = 2, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = binary_bool(Op, in[0], in[1], IscloseScalars{}) ? C(1) : C(0);
  }
};

// ------------------------------------------------------------------------ backward
// One gradient as a functor of (g, a, b): per kind, or with the kind chosen at run time.
template <BinaryKind K, int W>
struct BinaryGradFn {
  static constexpr bool kReads = elementwise::binary_grad_reads_inputs(K);
  template <class C>
  __device__ __forceinline__ C operator()(C g, C a, C b) const {
    return binary_grad<K, W>(g, a, b);
  }
};

template <int W>
struct BinaryDynGradFn {  // kinds that read a and b
  static constexpr bool kReads = true;
  BinaryKind kind;
  template <class C>
  __device__ __forceinline__ C operator()(C g, C a, C b) const {
    return binary_grad_dyn<W>(kind, g, a, b);
  }
};

// Map form: in grad_out (then a, b when the kind reads them); out grad_a and / or grad_b
// (Which: 0 = a, 1 = b, 2 = both).
template <class GradA, class GradB, int Which>
struct BinaryGradMapOp {
  static constexpr bool kReads = GradA::kReads || GradB::kReads;
  static constexpr int kIn = kReads ? 3 : 1;
  static constexpr int kOut = Which == 2 ? 2 : 1;
  static constexpr int kInFlight = kReads ? 16 : 32;
  GradA ga;
  GradB gb;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    const C g = in[0];
    const C a = kReads ? in[kReads ? 1 : 0] : C(0);
    const C b = kReads ? in[kReads ? 2 : 0] : C(0);
    if constexpr (Which == 0) out[0] = ga(g, a, b);
    else if constexpr (Which == 1) out[0] = gb(g, a, b);
    else {
      out[0] = ga(g, a, b);
      out[1] = gb(g, a, b);
    }
  }
};

// Calls launch(grad_a_fn, grad_b_fn) with the kind's gradient functors: per-kind ones for
// add, sub, mul, div and the zero-gradient kinds, the run-time-kind ones for the others.
template <class Launch>
Status with_grad_fns(BinaryKind kind, Launch&& launch) {
  switch (kind) {
    case BinaryKind::kAdd: return launch(BinaryGradFn<BinaryKind::kAdd, 0>{}, BinaryGradFn<BinaryKind::kAdd, 1>{});
    case BinaryKind::kSub: return launch(BinaryGradFn<BinaryKind::kSub, 0>{}, BinaryGradFn<BinaryKind::kSub, 1>{});
    case BinaryKind::kMul: return launch(BinaryGradFn<BinaryKind::kMul, 0>{}, BinaryGradFn<BinaryKind::kMul, 1>{});
    case BinaryKind::kDiv: return launch(BinaryGradFn<BinaryKind::kDiv, 0>{}, BinaryGradFn<BinaryKind::kDiv, 1>{});
    case BinaryKind::kDivFloor:
    case BinaryKind::kDivTrunc:  // zero gradients
      return launch(BinaryGradFn<BinaryKind::kDivFloor, 0>{}, BinaryGradFn<BinaryKind::kDivFloor, 1>{});
    default: return launch(BinaryDynGradFn<0>{kind}, BinaryDynGradFn<1>{kind});
  }
}

template <BinaryKind K, int Which>
using BinaryGradOp = BinaryGradMapOp<BinaryGradFn<K, 0>, BinaryGradFn<K, 1>, Which>;
template <int Which>
using BinaryDynGradOp = BinaryGradMapOp<BinaryDynGradFn<0>, BinaryDynGradFn<1>, Which>;

// ------------------------------------------------------------------------ with parameters
// lerp with a scalar weight and a + alpha * b (sub: alpha negated, which is exact).
struct LerpScalarOp {
  static constexpr int kIn = 2, kOut = 1;
  double w;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = lerp_value(in[0], in[1], C(w));
  }
};
struct LerpTensorOp {
  static constexpr int kIn = 3, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = lerp_value(in[0], in[1], in[2]);
  }
};
struct AddAlphaOp {
  static constexpr int kIn = 2, kOut = 1;
  double alpha;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = in[0] + C(alpha) * in[1];
  }
};

// grad_a = g * ca, grad_b = g * cb (scalar lerp: 1 - w and w; alpha: 1 and +-alpha).
template <int Which>
struct ScaledGradOp {
  static constexpr int kIn = 1, kOut = Which == 2 ? 2 : 1;
  double ca, cb;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    if constexpr (Which == 0) out[0] = in[0] * C(ca);
    else if constexpr (Which == 1) out[0] = in[0] * C(cb);
    else {
      out[0] = in[0] * C(ca);
      out[1] = in[0] * C(cb);
    }
  }
};
// Tensor lerp, in (g, w): grad_a = g * (1 - w), grad_b = g * w.
template <int Which>
struct LerpTensorGradOp {
  static constexpr int kIn = 2, kOut = Which == 2 ? 2 : 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    const C g = in[0], w = in[1];
    if constexpr (Which == 0) out[0] = g * (C(1) - w);
    else if constexpr (Which == 1) out[0] = g * w;
    else {
      out[0] = g * (C(1) - w);
      out[1] = g * w;
    }
  }
};
// Tensor lerp, in (g, a, b): grad_weight = g * (b - a).
struct LerpWeightGradOp {
  static constexpr int kIn = 3, kOut = 1;
  template <class C>
  __device__ __forceinline__ void operator()(const C* in, C* out) const {
    out[0] = in[0] * (in[2] - in[1]);
  }
};

}  // namespace baracuda::kernels
