// baracuda::reference for SdpaPlan / SdpaBackwardPlan (rules in baracuda/ops/attention.hpp):
// attention in double ("exact") and the same formula in the kernels' compute precision
// ("naive": f32 for f16 / bf16 / f32, double for f64; two-pass softmax with sequential sums,
// rounded to the output dtype), every option. Results are in the outputs' logical order
// (o: [B, Hq, Sq, Dv] or varlen [Tq, Hq, Dv]; lse: [B, Hq, Sq] or [Hq, Tq]).
//
// Dropout is an explicit keep mask (sdpa_dropout_keep builds it with the contract's Philox
// rule), so the same oracle checks our SKUs exactly and any other generator by its mask.
// The backward recomputes o's statistics in double and takes delta = rowsum(dO * o) from the
// `o` it is given (the one the device backward reads).
//
// Error scales (Result::scale): with A_i = max_j |terms of logit_ij| (sum_d |scale q_id k_jd|
// + |bias| + |alibi|) + 1 + log2(Skv) + 4 (the sums' rounding depth), o_id: A_i * sum_j p~_ij |v_jd|; lse_i: A_i; the gradients the same
// way from |dS_ij| (+ |p_ij| (|dP_ij| + |delta_i|)) and the operands they multiply.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

struct SdpaHostInputs {
  const HostTensor* q = nullptr;
  const HostTensor* k = nullptr;
  const HostTensor* v = nullptr;
  const HostTensor* bias = nullptr;   // when the descriptor has one
  const HostTensor* mask = nullptr;
  const HostTensor* alibi = nullptr;
  std::vector<std::int32_t> cu_seqlens_q, cu_seqlens_k;  // varlen: B + 1 entries
  // dropout_p > 0: keep mask, [B, Hq, Sq, Skv] row-major (varlen: max_seqlen_q, max_seqlen_k),
  // 1 = kept (scaled by 1 / (1 - p)), 0 = dropped.
  const std::vector<std::uint8_t>* keep = nullptr;
};

// The contract's dropout rule (notes/attention-contract.md), via philox4x32_10.
std::vector<std::uint8_t> sdpa_dropout_keep(std::int64_t batch, std::int64_t hq, std::int64_t sq, std::int64_t skv,
                                            double p, std::uint64_t seed, std::uint64_t offset);

struct SdpaReference {
  Result o;
  Result lse;
};
Expected<SdpaReference> sdpa(const SdpaDescriptor& d, const SdpaHostInputs& in);

// The e4m3 forward (SdpaPlan's fp8_dequant SKU; d.q / k / v / o e4m3, a bias in f32): q, k, v
// decoded exactly and multiplied by their descales (real = stored * descale), attention in
// double. `o` and `lse` are Results in the unscaled domain: exact = that attention; naive = the
// SKU's own scheme in the compute precision: operands rounded to bf16, the bf16 twin of sdpa()
// (f32 sums, S and P rounded to bf16, o rounded to bf16), then o stored as satfinite
// e4m3(o * scale_o) and read back as stored / scale_o (lse: the bf16 twin's, in f32). A kernel's
// e4m3 o is judged as stored / scale_o against `o` (3x the naive's max error, as sdpa()).
struct SdpaFp8HostScales {
  double descale_q = 1, descale_k = 1, descale_v = 1;
  double scale_o = 1;
};
struct SdpaFp8Reference {
  Result o, lse;
  std::vector<double> o_twin;    // the bf16 twin's o before quantization (unscaled), logical order
  std::vector<double> o_stored;  // satfinite e4m3(exact o * scale_o) (+-448 at most), logical order
  double scale_o = 1;            // of o.naive and o_stored
  double amax_o = 0;             // max |exact o|
  double amax_bound = 0;         // a kernel's amax_o error bound: 3 x the bf16 twin's max |o| error + 2^-7 amax_o
};
Expected<SdpaFp8Reference> sdpa_fp8(const SdpaDescriptor& d, const SdpaHostInputs& in, const SdpaFp8HostScales& s);
// o.naive and o_stored for another scale_o (the attention itself does not depend on it: a test
// may pick scale_o from amax_o, as a delayed-scaling recipe does).
void sdpa_fp8_set_scale_o(SdpaFp8Reference& r, double scale_o);

// The backward descriptor of a forward one: grads shaped as q / k / v, grad_o as o, the same
// lse / bias / mask / slopes / options; grad_bias shaped as the bias when `grad_bias`.
SdpaBackwardDescriptor sdpa_backward_of(const SdpaDescriptor& d, bool grad_bias = false);

struct SdpaGradReference {
  Result grad_q, grad_k, grad_v;
  Result grad_bias;  // empty unless the descriptor asks for it
};
Expected<SdpaGradReference> sdpa_backward(const SdpaBackwardDescriptor& d, const SdpaHostInputs& in, const HostTensor& o,
                                          const HostTensor& grad_o);

}  // namespace baracuda::reference
