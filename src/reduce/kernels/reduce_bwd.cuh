// ReduceBackwardPlan's kernel: grad_x over every element of x from grad_y (and x, y).
//
// Parallel scheme: one 256-thread block per group (output element). Kinds that need a
// statistic of the group first reduce it over the group's elements with the fixed block
// tree (amax / amin / norm inf: the count of ties with y; var / std: the mean; prod: the
// zero count and the product of the nonzero elements), then every thread writes its
// elements' gradient. Elements are unravelled through the collapsed reduced dims (any
// strides). Deterministic (no atomics).
// Formulas (PyTorch's autograd): sum g; mean g / n; amax / amin (g / count) * (x == y); max / min
// over every dim the same with NaN ties when y is NaN, along named dims all of g to the first
// tie (torch.max(x, dim)'s index; a block min-reduction of the index);
// norm p=0: 0, p=1: g sgn(x), p=2: g (x / y), y == 0 -> 0, inf: sgn(x) (g / count)
// (|x| == y or x NaN; count the same, sgn(NaN) = 0 as in torch: a NaN group's gradient is 0),
// other p: g x |x|^(p-2) / y^(p-1) (p < 1: sgn(x) |x|^(p-1), 0 at x == 0), y == 0 -> 0;
// logsumexp g exp(x - y); var (2 / (n - c)) g (x - mean); std the same times 1 / (2 y),
// y == 0 -> 0 (over every dim with n - c <= 0, torch's dim=None rule: g (x == mean ? NaN : inf),
// std with g / (2 y) for g); prod (no zero) (g y) / x, one zero: g * prod(others) at the zero, else 0.
// Preconditions: blockDim.x = 256; 16-bit dtypes compute in f32, f64 in f64.
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>

#include "common/block_reduce.cuh"
#include "common/row_io.cuh"
#include "reduce/kernels/reduce_ops.cuh"

namespace baracuda::kernels::reduce {

using baracuda::reduce::ReduceBwdParams;
using baracuda::reduce::RedOp;

__device__ __forceinline__ std::int64_t bwd_red_offset(const ReduceBwdParams& p, int op, std::int64_t e) {
  if (p.red_rank <= 1) return p.red_rank == 0 ? 0 : e * p.red_stride[op][0];
  std::int64_t off = 0;
  for (int d = p.red_rank - 1; d >= 0; --d) {
    const std::int64_t q = e / p.red_shape[d];
    off += (e - q * p.red_shape[d]) * p.red_stride[op][d];
    e = q;
  }
  return off;
}

template <class C>
struct BwdStat {
  C a;
  C b;
};

template <class C>
__device__ __forceinline__ C sgn(C v) {
  return v > C(0) ? C(1) : (v < C(0) ? C(-1) : C(0));
}

template <class T>
__global__ void __launch_bounds__(256) reduce_bwd_kernel(const ReduceBwdParams p) {
  using C = Compute<T>;
  const std::int64_t g = blockIdx.x;
  const T* x = static_cast<const T*>(p.x);
  if (x) x += row_offset(p, 0, g);
  T* gx = static_cast<T*>(p.grad_x) + row_offset(p, 1, g);
  const C gv = to_compute(static_cast<const T*>(p.grad_y)[row_offset(p, 3, g)]);
  const C yv = p.y ? to_compute(static_cast<const T*>(p.y)[row_offset(p, 2, g)]) : C(0);
  const RedOp op = p.op;
  const bool abs_tie = op == RedOp::kNorm && p.norm_code == 4;  // norm +-inf
  const bool tie = op == RedOp::kMax || op == RedOp::kMin || abs_tie;
  const bool moments = op == RedOp::kVar || op == RedOp::kStd;
  const bool prod = op == RedOp::kProd;
  // Whether v is one of the ties the gradient goes to: norm +-inf also counts NaN elements
  // (PyTorch's mask |x| == y || isnan(x)); max / min (max_rule 1, 2) match a NaN y with NaNs.
  auto hit = [&](C v) {
    if (abs_tie) return (v < C(0) ? -v : v) == yv || v != v;
    return v == yv || (p.max_rule != 0 && yv != yv && v != v);
  };
  BwdStat<C> st{C(0), prod ? C(1) : C(0)};
  std::int64_t first = p.n;  // max_rule 2: the first tie's index
  if (tie || moments || prod) {
    for (std::int64_t e = threadIdx.x; e < p.n; e += blockDim.x) {
      const C v = to_compute(x[bwd_red_offset(p, 0, e)]);
      if (tie) {
        const bool h = hit(v);
        st.a += h ? C(1) : C(0);
        if (h && e < first) first = e;
      } else if (moments) st.a += v;
      else if (v == C(0)) st.a += C(1);
      else st.b *= v;
    }
    __shared__ BwdStat<C> smem[33];
    auto merge = [prod](BwdStat<C> l, BwdStat<C> r) { return BwdStat<C>{l.a + r.a, prod ? l.b * r.b : l.b + r.b}; };
    st = block_allreduce(st, merge, BwdStat<C>{C(0), prod ? C(1) : C(0)}, smem);
    if (p.max_rule == 2) {
      __shared__ std::int64_t smem_first[33];
      first = block_allreduce(first, [](std::int64_t l, std::int64_t r) { return l < r ? l : r; }, p.n, smem_first);
    }
  }
  const C n = static_cast<C>(p.n);
  const C mean = moments ? st.a / n : C(0);
  const C div = static_cast<C>(p.n) - static_cast<C>(p.correction);
  // torch's var_backward without dims (axes all / rank-0 x) and n - correction <= 0:
  // grad * (x == mean ? NaN : inf) instead of (2 / (n - c)) grad (x - mean)
  const bool no_dof = moments && p.no_dim && !(div > C(0));
  for (std::int64_t e = threadIdx.x; e < p.n; e += blockDim.x) {
    const C v = x ? to_compute(x[bwd_red_offset(p, 0, e)]) : C(0);
    C r;
    switch (op) {
      case RedOp::kSum: r = gv; break;
      case RedOp::kMean: r = gv / n; break;
      case RedOp::kMax:
      case RedOp::kMin: r = p.max_rule == 2 ? (e == first ? gv : C(0)) : (gv / st.a) * (hit(v) ? C(1) : C(0)); break;
      case RedOp::kLogSumExp: r = gv * c_exp(v - yv); break;
      case RedOp::kVar:
        r = no_dof ? gv * (v == mean ? C(CUDART_NAN) : C(CUDART_INF)) : (C(2) / div) * gv * (v - mean);
        break;
      case RedOp::kStd: {
        const C gvar = yv == C(0) ? C(0) : gv / (C(2) * yv);  // torch's std_backward: var's grad g / (2 y)
        r = no_dof ? gvar * (v == mean ? C(CUDART_NAN) : C(CUDART_INF)) : (C(2) / div) * gvar * (v - mean);
        break;
      }
      case RedOp::kProd:
        if (st.a == C(0)) r = (gv * yv) / v;
        else if (st.a == C(1)) r = v == C(0) ? gv * st.b : C(0);
        else r = C(0);
        break;
      case RedOp::kNorm: {
        const C m = v < C(0) ? -v : v;
        switch (p.norm_code) {
          case 0: r = C(0); break;
          case 1: r = gv * sgn(v); break;
          case 2: r = yv == C(0) ? C(0) : gv * (v / yv); break;
          case 4: r = sgn(v) * (gv / st.a) * (hit(v) ? C(1) : C(0)); break;
          default: {
            const C pp = static_cast<C>(p.p);
            if (yv == C(0)) {
              r = C(0);
            } else {
              // p < 1: |x|^(p-1) is inf at x == 0, masked to 0 as PyTorch does (not 0 * inf).
              const C scaled = pp < C(1) ? (v == C(0) ? C(0) : sgn(v) * c_pow(m, pp - C(1))) : v * c_pow(m, pp - C(2));
              r = scaled * (gv / c_pow(yv, pp - C(1)));
            }
          }
        }
        break;
      }
      default: r = C(0);
    }
    gx[bwd_red_offset(p, 1, e)] = from_compute<T>(r);
  }
}

template <class T>
Status launch_bwd(const ReduceBwdParams& p, cudaStream_t s) {
  if (p.groups == 0 || p.n == 0) return Status::ok();
  reduce_bwd_kernel<T><<<static_cast<unsigned>(p.groups), 256, 0, s>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string("reduce backward launch: ") + cudaGetErrorString(e));
}

}  // namespace baracuda::kernels::reduce
