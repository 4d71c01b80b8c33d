// The host/kernel seam of the reduction family: the collapsed problem (kept dims, reduced
// dims, the column mode's inner dim), the launch shape and the op's parameters.
//
// Groups (outputs) are numbered over the kept dims in row-major order. Row and generic
// modes: group g's elements start at row_offset(p, 0, g) and its output at
// row_offset(p, 1, g). Column mode (inner > 1): the innermost-in-memory kept dim (x stride
// 1) is taken out of the kept dims; g = o * inner + i, x at row_offset(p, 0, o) + i, y at
// row_offset(p, 1, o) + i * inner_stride_y. Reduced element e (0 <= e < n, row-major over
// the reduced dims in x's dim order) sits at the offset red_offset(e) from the group's start.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace baracuda::reduce {

// The kernels' op (several public kinds map to one: max = amax, trace = sum, ...).
enum class RedOp : std::uint8_t {
  kSum, kMean, kProd, kMax, kMin, kNorm, kNormInf, kNormNegInf, kLogSumExp, kVar, kStd,
  kArgmax, kArgmin, kAny, kAll, kCount
};

// kColumnStream: sum over the leading dims of [rows, cols] (a unit-stride run of cols kept
// elements) by the elementwise family's column reduction (elementwise/launch_column_reduce.hpp,
// the bias gradient's kernel): slices = its row chunks, slice_len = rows per chunk, bx = its
// block_cols.
enum class ReduceImpl : std::uint8_t { kWarpRow, kBlockRow, kSplitRow, kColumn, kColumnStream, kGeneric };

struct ReduceParams {
  RedOp op = RedOp::kSum;
  ReduceImpl impl = ReduceImpl::kGeneric;
  const void* x = nullptr;
  void* y = nullptr;
  void* partial = nullptr;  // workspace: groups * slices accumulators (slices > 1)
  std::int64_t groups = 0;
  std::int64_t n = 0;  // reduced elements per group
  int kept_rank = 0;
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[2][8] = {};  // [0] x, [1] y
  int red_rank = 0;
  std::int64_t red_shape[8] = {};
  std::int64_t red_stride[8] = {};  // x
  std::int64_t inner = 1;           // column mode: the inner kept dim (x stride 1)
  std::int64_t inner_stride_y = 0;
  int vec = 1;                      // elements per load
  int threads = 256;
  int bx = 32, by = 8;              // column mode block shape (bx * by = threads)
  std::int64_t slices = 1;          // slices per group (> 1: partials, then a finishing pass)
  std::int64_t slice_len = 0;       // elements per slice (a multiple of vec)
  bool pdl = false;                 // the second pass (finish_kernel, column_stream's pass 2) a programmatic dependent (sm_90)
  int norm_code = 2;                // kNorm: 0 (p = 0), 1, 2, 3 (general p)
  double p = 2.0;
  double correction = 1.0;
  std::uint64_t mask = ~0ull;       // kAny / kAll / kCount: bits that make an element nonzero
};

struct ReduceBwdParams {
  RedOp op = RedOp::kSum;
  const void* grad_y = nullptr;
  const void* x = nullptr;
  const void* y = nullptr;
  void* grad_x = nullptr;
  std::int64_t groups = 0;
  std::int64_t n = 0;
  int kept_rank = 0;
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[4][8] = {};  // [0] x, [1] grad_x, [2] y, [3] grad_y
  int red_rank = 0;
  std::int64_t red_shape[8] = {};
  std::int64_t red_stride[2][8] = {};  // [0] x, [1] grad_x
  int norm_code = 2;
  double p = 2.0;
  double correction = 1.0;
  // var / std over every dim (axes "all", torch's dim=None, or a rank-0 x): torch's
  // var_backward then answers n - correction <= 0 with grad * (x == mean ? NaN : inf).
  bool no_dim = false;
  // max / min (not amax / amin), torch's rules: 0 = amax's (even split among x == y; a NaN y
  // gives NaN), 1 = max() over every dim (evenly_distribute_backward: even split among x == y,
  // or among the NaNs when y is NaN), 2 = max(dim) (all of g to the first index of y: x == y,
  // or the first NaN when y is NaN).
  int max_rule = 0;
};

// One launcher per op group and dtype (instance files inst/*.inl).
template <DType D> Status launch_reduce_sum(const ReduceParams& p, cudaStream_t s);     // sum, mean, prod
template <DType D> Status launch_reduce_minmax(const ReduceParams& p, cudaStream_t s);  // max, min, norm +-inf, arg
template <DType D> Status launch_reduce_stat(const ReduceParams& p, cudaStream_t s);    // norm, logsumexp, var, std
template <DType D> Status launch_reduce_count(const ReduceParams& p, cudaStream_t s);   // any, all, count (by width)
template <DType D> Status launch_reduce_bwd(const ReduceBwdParams& p, cudaStream_t s);

}  // namespace baracuda::reduce
