// The host/kernel seam of the elementwise family (plain C++, no CUDA types).
//
// A "map" applies one functor per element over operands of one iteration shape: outputs
// first, then inputs, every input already broadcast to the output shape and all of them
// collapsed together (collapse_dims). select() fills everything but the pointers; run()
// copies it, fills the pointers and launches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/elementwise.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::elementwise {

inline constexpr int kMaxMapIn = 4;  // ternary backward: grad_out, a, b, c

// add and sub gradients need only grad_out (div_floor and div_trunc have zero gradients);
// every other kind reads a and b too.
constexpr bool binary_grad_reads_inputs(BinaryKind k) {
  return k != BinaryKind::kAdd && k != BinaryKind::kSub && k != BinaryKind::kDivFloor && k != BinaryKind::kDivTrunc;
}
inline constexpr int kMaxMapOut = 3;  // ternary backward: grad_a, grad_b, grad_c

enum class MapPath : std::uint8_t {
  kVecContig,  // every operand dense and 16-byte aligned: 16-byte vector loads/stores
  kVecRows,    // [rows, cols] with unit inner stride (any row stride, 0 = row broadcast):
               // 16-byte vectors along each row (bias adds, padded rows)
  kStrided32,  // any strides, 32-bit index math (numel and offsets < 2^31)
  kStrided64,  // any strides, 64-bit index math
};

struct MapParams {
  MapPath path = MapPath::kStrided64;
  int num_out = 1;
  int num_in = 1;
  void* out[kMaxMapOut] = {};
  const void* in[kMaxMapIn] = {};
  std::int64_t numel = 0;
  int rank = 0;                                          // collapsed
  std::int64_t shape[8] = {};
  std::int64_t strides[kMaxMapOut + kMaxMapIn][8] = {};  // outs, then ins
  int fp8_mode = 0;                                      // Fp8Overflow of the output
};

// Bytes of one partial sum in broadcast_reduce's workspace: f64 for every floating dtype
// (kernels/broadcast_reduce.cuh ReduceAcc).
inline constexpr std::size_t kBroadcastReduceAccBytes = 8;

// Reduction of a binary op's gradient over the dims where its operand was broadcast.
// Iteration space: [reduced dims..., kept dims...] of the forward output's shape, so
// linear = r * kept + k. Pass 1 writes partial sums [chunks][kept] to the workspace; pass 2
// adds the chunks in order (deterministic) and stores into the gradient tensor.
struct BroadcastReduceParams {
  int which = 0;                  // 0: grad of a, 1: grad of b
  const void* grad_out = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* grad = nullptr;
  void* partial = nullptr;        // workspace, chunks * kept accumulators
  std::int64_t kept = 0;
  std::int64_t reduced = 0;
  std::int64_t chunks = 1;
  std::int64_t chunk_len = 0;
  int rank = 0;                   // permuted iteration dims
  int reduced_rank = 0;           // the first reduced_rank of them are the reduced dims
  bool split_index = false;       // pass 1 splits offsets into kept (once) + reduced (per step)
  std::int64_t shape[8] = {};
  std::int64_t strides[3][8] = {};   // grad_out, a, b over the permuted dims
  int kept_rank = 0;
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_strides[8] = {}; // of the gradient tensor
};

}  // namespace baracuda::elementwise
