// baracuda::reference for Int4GemmPlan (rules in baracuda/ops/gemm_int4.hpp), and an
// independent unpacking of GPTQ / AWQ checkpoints for the repack helper's tests.
//
// Oracle: the exact dequantized weight w(n, k) = (q - z) * s in double (no rounding to the
// activation dtype), products and sums in double, + bias[n]. Per-element bound:
//   |err| <= 1.01 ((u_w + g) (S + |bias_n|) + u_out |ref| + tiny_w sum_k |x_mk|) + tiny_out
//   S = sum_k |x_mk w(n, k)|;
//   u_w = unit roundoff of the activation dtype (bf16 2^-8, f16 2^-11): the SKUs that round
//     each dequantized weight once to that dtype, RN((q - z) s), as a dequantize-then-matmul
//     does (stream-K and one-pass never round it: their error is inside this bound);
//     tiny_w (f16 2^-25, bf16 2^-134) covers a weight that rounds into the subnormals;
//   g = gamma(2 (K + 16), 2^-24): f32 accumulation of K products (x and the rounded weight
//     are both 16-bit, so each product is exact in f32), up to 16 more f32 additions (split-K
//     partial sums, bias), and a factor 2 because the tensor cores' f32 accumulation is not
//     guaranteed round-to-nearest (truncation at most doubles the unit roundoff);
//   u_out / tiny_out: unit roundoff and smallest subnormal of y's dtype (the final rounding).
// 1.01 absorbs the second-order terms (products of two roundoffs).
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/gemm_int4.hpp"
#include "baracuda/reference/gemm_quant.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// The exact dequantized weight, N x K row-major: (q(n, k) - z) * s in double. w: host tensor
// of desc.w's layout (packed nibbles, row-major or tiled as desc.w_layout says); scales / zeros: [N, G] of x.dtype (zeros when
// desc.zeros, else ignored and may be null).
std::vector<double> int4_dequant(const Int4GemmDescriptor& d, const HostTensor& w, const HostTensor& scales,
                                 const HostTensor* zeros);

// Expected y (M x N row-major) and each element's bound (above). bias: [N] when desc.bias.
Expected<QuantGemmOracle> int4_gemm(const Int4GemmDescriptor& d, const HostTensor& x, const HostTensor& w,
                                    const HostTensor& scales, const HostTensor* zeros, const HostTensor* bias);

// A checkpoint unpacked the way its reference code reads it (GPTQ: shifts along K; AWQ: the
// reverse order {0, 4, 1, 5, 2, 6, 3, 7} along N), independent of int4_repack:
// q[n * K + k] in 0..15, zero[n * G + g] (GPTQ: + 1 when src.gptq_zero_plus_one),
// scale_bits[n * G + g] (the checkpoint's [G, N] scales transposed).
struct Int4Checkpoint {
  std::vector<int> q, zero;
  std::vector<std::uint16_t> scale_bits;
};
Int4Checkpoint int4_unpack_checkpoint(const Int4RepackSource& src);

}  // namespace baracuda::reference
