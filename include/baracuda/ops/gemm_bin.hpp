// BinGemmPlan: 1-bit (binary) GEMM with int32 results, the inner product of binarized
// networks (XNOR-Net / BNN layers) and of bit-set similarity (and-popcount).
//
// Bit layout ("K-major", both operands): A is M x K bits, B is N x K bits. Row m of A (row n
// of B) is K bits packed into 32-bit words, least significant bit first: bit k of the row is
// bit (k % 32) of word k / 32, and the row starts at word m * a.ld (n * b.ld). So each
// operand is described by a MatrixLayout of words: dtype u32 (or i32: the same 32 bits),
// rows = M (N), cols = W = ceil(K / 32), row-major, ld >= W in words. Bits K..32W-1 of a
// row's last word are ignored (masked by the kernels, never assumed zero), and so are the
// words W..ld-1. `k` carries K itself (1 <= K <= 2^31 - 1).
//
// Ops (s = the masked popcount over the K bits of a row pair):
//   kXnorDot    d = K - 2 popcount((a ^ b) & mask)   the +-1 dot product (bit 1 = +1,
//                                                      bit 0 = -1): sum_k a_k b_k in {-1,+1}
//   kXnorCount  d = popcount(~(a ^ b) & mask)         the number of equal bits = K - popcount(xor)
//   kAndCount   d = popcount(a & b & mask)            the {0,1} dot product
// All three are exact in int32 (|d| <= K <= 2^31 - 1).
//
// Output: D is M x N int32, row-major, ld >= N. With accumulate = true, D = result + C,
// where C is int32 with D's layout (same shape and ld) and the sum wraps modulo 2^32 (two's
// complement, as PyTorch's int32 addition); C may be D itself (in place: each element of C
// is read once, by the thread that then writes that element of D), any other overlap of D
// with A, B or C is refused at run. Without accumulate, C is not read (may be null).
//
// Alignment (checked at select from the layouts, at run against the pointers): a, b 4 bytes
// (whole words); d (and c) 4 bytes.
//
// SKUs (candidate order; both sm_80+, workspace 0, deterministic, graph-capturable):
//   bin_gemm.fwd.mma_b1[u32,i32,i32]    tensor-core mma.sync m16n8k256 b1 (.xor.popc /
//       .and.popc), 128 x 128 block tile, 8 warps of 64 x 32 (kernels/bin_gemm.cuh).
//   bin_gemm.fwd.popc_tile[u32,i32,i32] CUDA cores: 128 x 128 block tile, each thread 8 x 8
//       outputs, __popc over words combined three at a time with a bitwise full adder.
// (the SKU's `in` dtype is a.dtype: with i32 words the names read [i32,i32].) N is
// limited to 65535 * 128 (block columns).
// run() allocates nothing and never synchronizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class BinGemmOp : std::uint8_t { kXnorDot, kXnorCount, kAndCount };
const char* bin_gemm_op_name(BinGemmOp op) noexcept;

struct BinGemmDescriptor {
  MatrixLayout a;  // M x ceil(K/32) words, u32 / i32, row-major, ld >= ceil(K/32)
  MatrixLayout b;  // N x ceil(K/32) words, a.dtype, row-major, ld >= ceil(K/32)
  MatrixLayout d;  // M x N, i32, row-major (C, when accumulating, has this layout too)
  std::int64_t k = 0;  // bits per row, 1 .. 2^31 - 1
  BinGemmOp op = BinGemmOp::kXnorDot;
  bool accumulate = false;  // D = result + C

  std::int64_t m() const noexcept { return d.rows; }
  std::int64_t n() const noexcept { return d.cols; }
  std::int64_t words() const noexcept { return (k + 31) / 32; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const BinGemmDescriptor&, const BinGemmDescriptor&) = default;
};

struct BinGemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // int32, d's layout; when accumulate (may equal d)
  void* d = nullptr;
};
using BinGemmPlan = Plan<BinGemmDescriptor, BinGemmArgs>;

extern template class Plan<BinGemmDescriptor, BinGemmArgs>;

}  // namespace baracuda
