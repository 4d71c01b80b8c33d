// Int4GemmPlan: weight-only 4-bit GEMM (W4A16), Y = X * dequant(W)^T (+ bias), the linear
// layer of GPTQ / AWQ checkpoints.
//
// Shapes and dtypes.
//   x       M x K, f16 or bf16, row-major, any ld >= K                (the activations)
//   w       N x K, s4 or u4, row-major packed (below), ld a multiple of 32 elements
//   scales  [N, K / group_size] dense row-major, x.dtype: scales[n * G + g], G = K / group_size
//   zeros   [N, G] dense row-major, x.dtype (u4 only, required there; s4 takes none)
//   bias    [N], x.dtype (optional)
//   y       M x N, x.dtype, row-major, any ld >= N
// group_size is 32, 64, 128 or K; K is a positive multiple of 32 and of group_size.
//
// Packing of w (the sub-byte convention of baracuda::DType, "low nibble first"): row n
// starts at byte n * ld / 2 of the buffer; element (n, k) is nibble k % 2 of byte
// n * ld / 2 + k / 2: byte j of a row holds element 2j in its low nibble (bits 0..3) and
// element 2j + 1 in its high nibble (bits 4..7). s4 nibbles are two's complement (-8..7),
// u4 nibbles 0..15. Elements K..ld-1 of a row are padding (never read by the math).
//
// Tiled weights (w_layout = Int4WeightLayout::kTiled16x128, made from the row-major packing
// by int4_tile_weights below): the same 16-byte vectors (32 elements of one row, nibble order
// as above) regrouped so that each unit of 16 rows x 128 k is 1 KiB of contiguous bytes, the
// order in which the decode kernel streams them. Needs N % 16 == 0, K % 128 == 0 and
// w.ld == K (no padding); the buffer has the row-major size, N K / 2 bytes. The vector of rows
// n, elements k .. k + 31 (k % 32 == 0) sits at byte
//   ((n / 16) (K / 128) + k / 128) 1024 + ((n % 16) / 8) 512 + (n % 8) 64 + ((k % 128) / 32) 16
// (int4_tiled_offset). Units of one 16-row tile follow each other along K. Taken by
// w4a16_streamk (H100 session 22, 28672x8192: M = 1 / 8 / 16 2% / 3% / 5% faster than
// row-major) and dequant_cublaslt; the other decode SKUs read row-major weights only.
//
// Dequantization (g = k / group_size):
//   s4:  w(n, k) = q(n, k) * scales[n, g]
//   u4:  w(n, k) = (q(n, k) - zeros[n, g]) * scales[n, g]
// Zero points are stored as values of x.dtype so that GPTQ's "stored + 1" convention (zero
// points 1..16) and AWQ's (0..15) are both exact; they must be integers in [0, 16] (every
// GPTQ / AWQ checkpoint satisfies this; other values are outside the contract: the kernels
// form q - z with the 1024 + q (f16) / 128 + q (bf16) bit trick, exact for such integers).
// The gemv, stream and bulk SKUs (and dequant_cublaslt) round each dequantized weight once to
// x.dtype, RN((q - z) * s), exactly as a dequantize-then-matmul in PyTorch does; the stream-K
// and one-pass SKUs never round it (exact x (q - z) products, the group scale applied to each
// 128-k chunk's f32 sum), which is closer to the exact result. Products and all sums are f32;
// y is RN(sum + bias[n]) in x.dtype. One tolerance, against the exact (f64) reference,
// covers both (baracuda/reference/gemm_int4.hpp).
//
// Alignment needs (checked at select from the layouts' promised `alignment`, and at run
// against the pointers): w 16 bytes (the kernels read 16-byte vectors of packed weights;
// hence also ld % 32 == 0); x and y one element (2 bytes; the decode SKU uses 16-byte loads
// of x when x is 16-byte aligned and x.ld % 8 == 0); scales, zeros and bias one element.
// y may alias nothing (refused at run).
//
// SKUs (candidate order):
//   int4_gemm.fwd.w4a16_streamk[s4|u4,f32,f16|bf16]   M <= 16, group_size 128 or K, weights large
//       enough for every warp of the device to stream >= 8 units (16 rows x 128 k; tiled
//       weights: >= 1): the stream-K decode kernel (src/gemm/kernels/int4_streamk.cuh), row-major
//       or tiled weights. The units of each K slice are split evenly over all warps of the
//       device, each warp streaming its contiguous range through a shared-memory ring; the
//       dequantized weight is never rounded (exact x (q - z) products, f32 sums per 128-k chunk
//       scaled in f32), and a second kernel adds the warps' partial sums in a fixed order
//       (deterministic) + bias and rounds once.
//   int4_gemm.fwd.w4a16_stream[s4|u4,f32,f16|bf16]    M <= 16: the streaming decode kernel
//       (src/gemm/kernels/int4_stream.cuh): w4a16_gemv's fragments and numerics (identical
//       results), with 3 (M <= 8) or 2 chunks of packed weights in flight per warp, the weight kind
//       compiled in, and the launch shape (split-K, deterministic reduction) sized to whole
//       waves of resident blocks.
//   int4_gemm.fwd.w4a16_gemv[s4|u4,f32,f16|bf16]      M <= 16: the first decode kernel
//       (src/gemm/kernels/int4_gemv.cuh): streams the packed weights with 16-byte loads,
//       dequantizes in registers, tensor-core mma.sync with f32 accumulation, split-K over
//       blocks with a deterministic f32 reduction in the workspace when N alone cannot fill
//       the device.
//   int4_gemm.fwd.w4a16_bulk[s4|u4,f32,f16|bf16]      sm_90+, M <= 16 (after stream and gemv: measured slower on the H200): the bulk-copy decode
//       kernel (src/gemm/kernels/int4_bulk.cuh): the packed weights stream through a
//       shared-memory ring filled by cp.async.bulk (the TMA's 1-D copy), w4a16_gemv's
//       fragments and numerics (sums in another fixed order), split-K with the same
//       deterministic reduction when X's K slice must shrink.
//   int4_gemm.fwd.dequant_cublaslt[...]              any M: dequantizes W into an N x K
//       x.dtype buffer in the workspace, then GemmPlan (cuBLASLt, f32 accumulation, bias
//       epilogue) computes Y = X Wd^T.
// workspace_size() covers the split-K partial sums (decode) or the dequantized weight plus
// cuBLASLt's workspace (dequant_cublaslt). run() allocates nothing and never synchronizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// How w's packed bytes are ordered (see "Tiled weights" above).
enum class Int4WeightLayout : std::uint8_t { kRowMajor, kTiled16x128 };
const char* int4_weight_layout_name(Int4WeightLayout l) noexcept;

struct Int4GemmDescriptor {
  MatrixLayout x;  // M x K, f16 / bf16, row-major
  MatrixLayout w;  // N x K, s4 / u4, row-major packed, ld % 32 == 0, alignment 16
  MatrixLayout y;  // M x N, x.dtype, row-major
  std::int64_t group_size = 128;  // 32, 64, 128 or K
  bool zeros = false;             // u4: true (required); s4: false
  bool bias = false;              // bias[N] in x.dtype
  Int4WeightLayout w_layout = Int4WeightLayout::kRowMajor;  // kTiled16x128: N % 16 == 0, K % 128 == 0, w.ld == K

  std::int64_t m() const noexcept { return y.rows; }
  std::int64_t n() const noexcept { return y.cols; }
  std::int64_t k() const noexcept { return x.cols; }
  std::int64_t groups() const noexcept { return group_size > 0 ? x.cols / group_size : 0; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const Int4GemmDescriptor&, const Int4GemmDescriptor&) = default;
};

struct Int4GemmArgs {
  const void* x = nullptr;
  const void* w = nullptr;       // packed nibbles (see above)
  const void* scales = nullptr;  // [N, G], x.dtype
  const void* zeros = nullptr;   // [N, G], x.dtype, when desc.zeros
  const void* bias = nullptr;    // [N], x.dtype, when desc.bias
  void* y = nullptr;
};
using Int4GemmPlan = Plan<Int4GemmDescriptor, Int4GemmArgs>;

// ---------------------------------------------------------------- host-side repacking
// Converts a GPTQ or AWQ checkpoint's tensors (host memory) into Int4GemmPlan's layout:
// u4 weights (N x K, ld = K, packed as above), scales [N, G] and zero points [N, G] in the
// scales' dtype (desc.zeros = true, w.dtype = u4, group_size as given).
//
// GPTQ (AutoGPTQ / GPTQModel "gptq" format, desc_act = false, 4 bits):
//   qweight int32 [K / 8, N]: word (r, n) holds q(n, k = 8r + i) in bits 4i..4i+3, i = 0..7;
//   qzeros  int32 [G, N / 8]: word (g, c) holds the zero of column n = 8c + i in bits 4i;
//   scales  [G, N] (f16 / bf16 bit patterns).
//   GPTQ v1 checkpoints store zero - 1: with gptq_zero_plus_one (the default) the zero point
//   is stored + 1 (1..16; a stored 15 gives 16, as AutoGPTQ's dequantization computes);
//   GPTQ v2 ("gptq_v2" / checkpoint_format v2) stores the zero itself: pass false.
//   Act-order checkpoints (g_idx not equal to k / group_size) are not supported.
// AWQ (AutoAWQ GEMM format, 4 bits):
//   qweight int32 [K, N / 8]: word (k, c) holds q(n, k) for n = 8c + kAwqOrder[i] in bits
//   4i..4i+3, kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7} (AWQ's interleaved nibble order);
//   qzeros  int32 [G, N / 8] with the same interleave along N (zero points 0..15, no offset);
//   scales  [G, N].
// Shapes: K and N multiples of 8, K a multiple of 32 and of group_size (32, 64, 128 or K).
enum class Int4CheckpointFormat : std::uint8_t { kGptq, kAwq };
const char* int4_checkpoint_format_name(Int4CheckpointFormat f) noexcept;

struct Int4RepackSource {
  Int4CheckpointFormat format = Int4CheckpointFormat::kGptq;
  std::int64_t k = 0, n = 0, group_size = 128;
  DType scale_dtype = DType::kF16;             // f16 or bf16: the checkpoint's scales
  const std::int32_t* qweight = nullptr;       // GPTQ [K/8, N]; AWQ [K, N/8]
  const std::int32_t* qzeros = nullptr;        // [G, N/8]
  const std::uint16_t* scales = nullptr;       // [G, N], bit patterns of scale_dtype
  bool gptq_zero_plus_one = true;              // GPTQ v1: zero = stored + 1
};

struct Int4RepackTarget {
  std::uint8_t* w = nullptr;        // N * K / 2 bytes (u4, ld = K)
  std::uint16_t* scales = nullptr;  // N * G values of scale_dtype
  std::uint16_t* zeros = nullptr;   // N * G values of scale_dtype (integers 0..16)
};

// Byte / element counts the target buffers must hold.
std::size_t int4_packed_bytes(std::int64_t n, std::int64_t k) noexcept;
std::size_t int4_group_count(std::int64_t n, std::int64_t k, std::int64_t group_size) noexcept;

// Repacks on the host; refuses (kInvalidArgument, naming the field and value) bad shapes,
// group sizes, dtypes and null pointers, and writes nothing then.
Status int4_repack(const Int4RepackSource& src, const Int4RepackTarget& dst);

// Byte offset of the 16-byte vector of row n, elements k .. k + 31 (k % 32 == 0) in the tiled
// layout of an N x K weight (N % 16 == 0, K % 128 == 0).
constexpr std::int64_t int4_tiled_offset(std::int64_t n, std::int64_t k, std::int64_t K) noexcept {
  return ((n / 16) * (K / 128) + k / 128) * 1024 + ((n % 16) / 8) * 512 + (n % 8) * 64 + ((k % 128) / 32) * 16;
}

// Host-side: the row-major packed weight `row_major` (N x K, ld_elems elements a row, a
// multiple of 32) into the tiled layout `tiled` (N K / 2 bytes; Int4WeightLayout::kTiled16x128).
// Refuses (kInvalidArgument, naming the field and value) N % 16 != 0, K % 128 != 0, ld_elems
// < K or not a multiple of 32, null or overlapping buffers, and writes nothing then.
Status int4_tile_weights(const std::uint8_t* row_major, std::int64_t n, std::int64_t k, std::int64_t ld_elems,
                         std::uint8_t* tiled);

// The Int4GemmDescriptor of a repacked checkpoint for M activation rows (dense x and y).
Int4GemmDescriptor int4_repacked_descriptor(const Int4RepackSource& src, std::int64_t m);

extern template class Plan<Int4GemmDescriptor, Int4GemmArgs>;

}  // namespace baracuda
