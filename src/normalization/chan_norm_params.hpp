// The host/kernel seam of BatchNormPlan / GroupNormPlan / InstanceNormPlan and their
// backward (plain C++; kernels in kernels/chan_norm.cuh, host code in chan_norm.cpp).
//
// Every plan views x as [N, C, S] (S = the product of the spatial dims, which keep their
// own shape and strides per operand: `sp_rank` dims, innermost last). Operands: 0 = x,
// 1 = y (forward) or grad_y (backward), 2 = grad_x (backward).
//
// Pass 1 reduces `segs` segments, each `planes` planes of S values: segment k splits as
// (hi, lo) = (k / seg_lo, k % seg_lo) and starts at hi * seg_hi_stride + lo * seg_lo_stride;
// plane p of it adds p * plane_stride. BatchNorm: a segment per channel (planes = N);
// GroupNorm forward: per (n, group) (planes = C / G); GroupNorm backward: per (n, c) plane.
// A segment's planes * S values split into `chunks` chunks of `chunk_len`; one warp reduces
// a (segment, chunk) item and writes its partial to the workspace (forward: Welford count,
// mean, M2; backward: sum(grad_y), sum(grad_y * (x - mean))). Finalize kernels (one thread
// per channel / group, f64, chunks in order) form the statistics and per-(n, c) coefficients
// {m, a, b, k}; the apply pass writes y = (x - m) * a + b or
// grad_x = a * grad_y + k * (x - m) + b with coefficient index n * coef_n_stride + c.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::chnorm {

// What the launch sequence computes.
enum class ChanOp : std::uint8_t {
  kBatchTrain,  // fwd: stats per channel, running update; bwd: saved mean / invstd per channel
  kEval,        // running stats per channel (BatchNorm eval, InstanceNorm !use_input_stats)
  kGroup,       // GroupNorm / InstanceNorm with input stats: stats per (n, group)
};

inline constexpr int kMaxSpatial = 6;
inline constexpr int kOps = 3;
inline constexpr int kWarpsPerBlock = 8;

struct ChanNormParams {
  ChanOp op = ChanOp::kBatchTrain;
  bool bwd = false;
  int vec = 1;  // 1: strided kernels; else elements per 16-byte vector (unit spatial stride)
  // the [N, C, S] view
  std::int64_t N = 0, C = 0, S = 1, G = 1, Cg = 1;
  int sp_rank = 0;
  std::int64_t sp_shape[kMaxSpatial] = {};
  std::int64_t sN[kOps] = {}, sC[kOps] = {};
  std::int64_t sp_stride[kOps][kMaxSpatial] = {};
  // pass 1
  std::int64_t segs = 0, seg_lo = 1, planes = 1, chunks = 1, chunk_len = 1;
  std::int64_t seg_hi_stride[kOps] = {}, seg_lo_stride[kOps] = {}, plane_stride[kOps] = {};
  std::int64_t mean_div = 1;  // backward: the mean of segment k is at k / mean_div
  // apply
  std::int64_t coef_n_stride = 0;  // 0: per channel; C: per (n, c)
  std::int64_t apply_blocks = 1;
  // flags
  bool has_weight = false, has_bias = false, save_stats = false, update_running = false;
  bool grad_weight_on = false, grad_bias_on = false;
  // per-channel arrays: element stride and whether they hold the compute type (else x's)
  std::int64_t w_stride = 1, b_stride = 1, rm_stride = 1, rv_stride = 1, gw_stride = 1, gb_stride = 1;
  bool w_c = false, b_c = false, rm_c = false, rv_c = false, gw_c = false, gb_c = false;
  double eps = 1e-5, momentum = 0.1;
  // pointers (set at run)
  const void* x = nullptr;
  const void* dy = nullptr;
  void* out = nullptr;  // y or grad_x
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* running_mean = nullptr;
  void* running_var = nullptr;
  void* stat_mean = nullptr;  // forward: saved mean out; backward: read (const)
  void* stat_rstd = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
  // workspace: partials, coefficients, per-segment extras (byte offsets)
  void* ws = nullptr;
  std::size_t partial_off = 0, coef_off = 0, extra_off = 0;
};

// Launchers per dtype (instance files inst/chan_norm_fwd.inl / chan_norm_bwd.inl).
template <DType D> Status launch_chan_norm_fwd(const ChanNormParams& p, cudaStream_t s);
template <DType D> Status launch_chan_norm_bwd(const ChanNormParams& p, cudaStream_t s);
#define BARACUDA_CHAN_NORM_SPEC(D)                                                     \
  template <> Status launch_chan_norm_fwd<DType::D>(const ChanNormParams&, cudaStream_t); \
  template <> Status launch_chan_norm_bwd<DType::D>(const ChanNormParams&, cudaStream_t);
BARACUDA_CHAN_NORM_SPEC(kF64)
BARACUDA_CHAN_NORM_SPEC(kF32)
BARACUDA_CHAN_NORM_SPEC(kF16)
BARACUDA_CHAN_NORM_SPEC(kBF16)
#undef BARACUDA_CHAN_NORM_SPEC

}  // namespace baracuda::chnorm
