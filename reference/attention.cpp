// baracuda::reference for the SDPA plans (attention.hpp): one templated row algorithm run
// in double (exact) and in the compute precision (naive). The naive twin of f16 / bf16 is
// flash-attention's attention_ref(upcast=False): f32 sums, with S, P (backward: dP, dS) and
// the outputs rounded to the 16-bit dtype; its results carry the rule (3x the naive's
// max error, Result::naive_tensor_max).
#include "baracuda/reference/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "baracuda/reference/gumbel_softmax.hpp"
#include "gemm_common.hpp"

namespace baracuda::reference {

std::vector<std::uint8_t> sdpa_dropout_keep(std::int64_t batch, std::int64_t hq, std::int64_t sq, std::int64_t skv,
                                            double p, std::uint64_t seed, std::uint64_t offset) {
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(batch * hq * sq * skv), 1);
  if (!(p > 0)) return keep;
  const double tf = std::floor(p * 4294967296.0);
  const std::uint32_t t = tf >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(tf);
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed) ^ static_cast<std::uint32_t>(offset >> 32),
                                            static_cast<std::uint32_t>(seed >> 32)};
  std::size_t n = 0;
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < hq; ++h)
      for (std::int64_t i = 0; i < sq; ++i)
        for (std::int64_t j = 0; j < skv; ++j) {
          const auto w = philox4x32_10({static_cast<std::uint32_t>(j >> 2), static_cast<std::uint32_t>(i),
                                        static_cast<std::uint32_t>(b * hq + h), static_cast<std::uint32_t>(offset)},
                                       key);
          keep[n++] = w[static_cast<std::size_t>(j & 3)] >= t ? 1 : 0;
        }
  return keep;
}

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The problem in logical terms, with the operands as dense double arrays.
struct Prob {
  bool varlen = false;
  std::int64_t B = 0, Hq = 0, Hkv = 0, G = 1, Sq = 0, Skv = 0, Dk = 0, Dv = 0;
  std::vector<std::int64_t> sq, skv, tq0, tk0;
  double scale = 1, softcap = 0, p = 0, dscale = 1;
  std::int64_t wl = -1, wr = -1;
  bool br = false;
  std::vector<double> q, k, v, bias, mask, alibi;
  TensorLayout bias_l, mask_l, alibi_l;
  const std::vector<std::uint8_t>* keep = nullptr;
  // The naive twin of f16 / bf16 problems rounds the intermediates to this storage dtype the
  // way flash-attention's attention_ref(upcast=False) does (S, P; backward dP, dS); kF64: none.
  DType store = DType::kF64;
  template <class R>
  R st(R x) const {
    return store == DType::kF64 ? x : static_cast<R>(round_to(store, static_cast<double>(x)));
  }

  std::int64_t qi(std::int64_t b, std::int64_t h, std::int64_t i) const {  // first element of q row
    return varlen ? ((tq0[b] + i) * Hq + h) * Dk : ((b * Hq + h) * Sq + i) * Dk;
  }
  std::int64_t ki(std::int64_t b, std::int64_t h, std::int64_t j, std::int64_t D) const {  // k / v row (kv head h)
    return varlen ? ((tk0[b] + j) * Hkv + h) * D : ((b * Hkv + h) * Skv + j) * D;
  }
  std::int64_t oi(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t D) const {  // o / grad_o / grad_q row
    return varlen ? ((tq0[b] + i) * Hq + h) * D : ((b * Hq + h) * Sq + i) * D;
  }
  std::int64_t lse_i(std::int64_t b, std::int64_t h, std::int64_t i) const {
    return varlen ? h * total_q + tq0[b] + i : (b * Hq + h) * Sq + i;
  }
  std::int64_t total_q = 0, total_k = 0;
};

// Logical index of (b, h, i, j) in a tensor broadcast (right-aligned) to [B, Hq, Sq, Skv].
std::int64_t bcast_index(const TensorLayout& t, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
  const std::int64_t idx[4] = {b, h, i, j};
  std::int64_t lin = 0;
  for (int k = 0; k < t.rank; ++k) {
    const int dim = 4 - t.rank + k;
    lin = lin * t.shape[k] + (t.shape[k] == 1 ? 0 : idx[dim]);
  }
  return lin;
}

Expected<Prob> make_prob(const TensorLayout& ql, const TensorLayout& kl, const TensorLayout& vl, const TensorLayout& bl,
                         const TensorLayout& ml, const TensorLayout& al, const SdpaOptions& o, const SdpaHostInputs& in) {
  Prob p;
  p.varlen = o.varlen;
  if (o.varlen) {
    p.B = o.batch;
    p.Hq = ql.shape[1];
    p.Hkv = kl.shape[1];
    p.Dk = ql.shape[2];
    p.Dv = vl.shape[2];
    p.Sq = o.max_seqlen_q;
    p.Skv = o.max_seqlen_k;
    p.total_q = ql.shape[0];
    p.total_k = kl.shape[0];
    if (static_cast<std::int64_t>(in.cu_seqlens_q.size()) != p.B + 1 ||
        static_cast<std::int64_t>(in.cu_seqlens_k.size()) != p.B + 1)
      return Status(Code::kInvalidArgument, "reference sdpa: cu_seqlens need batch + 1 entries");
    for (std::int64_t b = 0; b < p.B; ++b) {
      p.tq0.push_back(in.cu_seqlens_q[b]);
      p.tk0.push_back(in.cu_seqlens_k[b]);
      p.sq.push_back(in.cu_seqlens_q[b + 1] - in.cu_seqlens_q[b]);
      p.skv.push_back(in.cu_seqlens_k[b + 1] - in.cu_seqlens_k[b]);
      if (p.sq.back() < 0 || p.sq.back() > p.Sq || p.skv.back() < 0 || p.skv.back() > p.Skv ||
          in.cu_seqlens_q[b + 1] > p.total_q || in.cu_seqlens_k[b + 1] > p.total_k)
        return Status(Code::kInvalidArgument, "reference sdpa: cu_seqlens of sequence " + std::to_string(b) +
                                                  " exceed max_seqlen or the token count");
    }
  } else {
    p.B = ql.shape[0];
    p.Hq = ql.shape[1];
    p.Hkv = kl.shape[1];
    p.Sq = ql.shape[2];
    p.Skv = kl.shape[2];
    p.Dk = ql.shape[3];
    p.Dv = vl.shape[3];
    p.sq.assign(static_cast<std::size_t>(p.B), p.Sq);
    p.skv.assign(static_cast<std::size_t>(p.B), p.Skv);
    p.tq0.assign(static_cast<std::size_t>(p.B), 0);
    p.tk0.assign(static_cast<std::size_t>(p.B), 0);
  }
  p.G = p.Hkv > 0 ? p.Hq / p.Hkv : 1;
  p.scale = o.scale != 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(p.Dk));
  p.softcap = o.softcap;
  p.p = o.dropout_p;
  p.dscale = o.dropout_p > 0 ? 1.0 / (1.0 - o.dropout_p) : 1.0;
  p.wl = o.window_left < 0 ? -1 : o.window_left;
  p.wr = o.causal ? 0 : (o.window_right < 0 ? -1 : o.window_right);
  p.br = o.align == CausalAlign::kBottomRight;
  p.q = in.q->logical();
  p.k = in.k->logical();
  p.v = in.v->logical();
  p.bias_l = bl;
  p.mask_l = ml;
  p.alibi_l = al;
  if (bl.rank > 0) p.bias = in.bias->logical();
  if (ml.rank > 0) p.mask = in.mask->logical();
  if (al.rank > 0) p.alibi = in.alibi->logical();
  p.keep = in.keep;
  if (p.p > 0 && (p.keep == nullptr || static_cast<std::int64_t>(p.keep->size()) != p.B * p.Hq * p.Sq * p.Skv))
    return Status(Code::kInvalidArgument, "reference sdpa: dropout_p > 0 needs a keep mask of B * Hq * Sq * Skv entries");
  return p;
}

// One query row's probabilities in precision R: p[j] (undropped, 0 where hidden), the
// dropout multiplier, d(capped)/d(scaled) and the row's lse; A (exact pass only): the
// magnitude of the logits' terms + 1.
template <class R>
struct Row {
  std::vector<R> prob, mult, dcap;
  R lse = R(0);
  double A = 1;
};

template <class R>
void row_probs(const Prob& P, std::int64_t b, std::int64_t h, std::int64_t i, Row<R>& row) {
  const std::int64_t skv = P.skv[b], sq = P.sq[b], off = P.br ? skv - sq : 0, kvh = h / P.G;
  row.prob.assign(static_cast<std::size_t>(skv), R(0));
  row.mult.assign(static_cast<std::size_t>(skv), R(1));
  row.dcap.assign(static_cast<std::size_t>(skv), R(1));
  row.A = 1;
  std::vector<R> x(static_cast<std::size_t>(skv), static_cast<R>(kNegInf));
  const double* qrow = &P.q[static_cast<std::size_t>(P.qi(b, h, i))];
  const R slope = P.alibi_l.rank == 0 ? R(0)
                  : static_cast<R>(P.alibi[static_cast<std::size_t>(P.alibi_l.rank == 2 && P.alibi_l.shape[0] != 1
                                                                         ? b * P.Hq + h
                                                                         : h)]);
  R m = static_cast<R>(kNegInf);
  for (std::int64_t j = 0; j < skv; ++j) {
    const auto js = static_cast<std::size_t>(j);
    if (P.wl >= 0 && j < i + off - P.wl) continue;
    if (P.wr >= 0 && j > i + off + P.wr) continue;
    if (P.mask_l.rank > 0 && P.mask[static_cast<std::size_t>(bcast_index(P.mask_l, b, h, i, j))] == 0) continue;
    const double* krow = &P.k[static_cast<std::size_t>(P.ki(b, kvh, j, P.Dk))];
    R dot = R(0);
    double mag = 0;
    for (std::int64_t d = 0; d < P.Dk; ++d) {
      dot += static_cast<R>(qrow[d]) * static_cast<R>(krow[d]);
      mag += std::fabs(qrow[d] * krow[d]);
    }
    R xv = P.st(dot * static_cast<R>(P.scale));  // S = q k^T scale (rounded in the naive 16-bit twin)
    mag *= std::fabs(P.scale);
    if (P.softcap > 0) {
      const R t = std::tanh(xv / static_cast<R>(P.softcap));
      xv = P.st(static_cast<R>(P.softcap) * t);
      row.dcap[js] = R(1) - t * t;
    }
    if (P.bias_l.rank > 0) {
      const double bv = P.bias[static_cast<std::size_t>(bcast_index(P.bias_l, b, h, i, j))];
      xv += static_cast<R>(bv);
      if (std::isfinite(bv)) mag += std::fabs(bv);
    }
    if (P.alibi_l.rank > 0) {
      const R dist = static_cast<R>(std::llabs(i + off - j));
      xv -= slope * dist;
      mag += std::fabs(static_cast<double>(slope) * static_cast<double>(dist));
    }
    x[js] = xv;
    m = std::max(m, xv);
    row.A = std::max(row.A, mag + 1);
  }
  // the rounding depth of the row's sums (as the softmax reference's scale)
  row.A += std::log2(static_cast<double>(std::max<std::int64_t>(skv, 2))) + 4;
  if (m == static_cast<R>(kNegInf)) {
    row.lse = static_cast<R>(kNegInf);
    return;
  }
  R sum = R(0);
  for (std::int64_t j = 0; j < skv; ++j) sum += x[static_cast<std::size_t>(j)] == static_cast<R>(kNegInf) ? R(0) : std::exp(x[static_cast<std::size_t>(j)] - m);
  row.lse = m + std::log(sum);
  for (std::int64_t j = 0; j < skv; ++j) {
    const auto js = static_cast<std::size_t>(j);
    row.prob[js] = x[js] == static_cast<R>(kNegInf) ? R(0) : P.st(std::exp(x[js] - m) / sum);
    if (P.p > 0)
      row.mult[js] = (*P.keep)[static_cast<std::size_t>(((b * P.Hq + h) * P.Sq + i) * P.Skv + j)] ? static_cast<R>(P.dscale)
                                                                                                 : R(0);
  }
}

// Forward in precision R into o / lse (logical order); the exact pass also fills the scales.
template <class R>
void forward_pass(const Prob& P, std::vector<double>& o, std::vector<double>& lse, std::vector<double>* o_scale,
                  std::vector<double>* lse_scale) {
  const std::int64_t rows = P.B * P.Hq * P.Sq;
  gemm_detail::parallel_rows(rows, P.Skv * (P.Dk + P.Dv), [&](std::int64_t r0, std::int64_t r1) {
    Row<R> row;
    std::vector<R> acc(static_cast<std::size_t>(P.Dv));
    std::vector<double> mag(static_cast<std::size_t>(P.Dv));
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = r % P.Sq, h = r / P.Sq % P.Hq, b = r / P.Sq / P.Hq;
      if (i >= P.sq[b]) continue;
      row_probs(P, b, h, i, row);
      const std::int64_t kvh = h / P.G;
      const auto li = static_cast<std::size_t>(P.lse_i(b, h, i));
      lse[li] = static_cast<double>(row.lse);
      if (lse_scale) (*lse_scale)[li] = row.A;
      std::fill(acc.begin(), acc.end(), R(0));
      std::fill(mag.begin(), mag.end(), 0.0);
      for (std::int64_t j = 0; j < P.skv[b]; ++j) {  // o_d = sum_j p~_j v_jd, j ascending for every d
        const auto js = static_cast<std::size_t>(j);
        if (row.prob[js] == R(0)) continue;
        const R pm = row.prob[js] * row.mult[js];
        const double* vrow = &P.v[static_cast<std::size_t>(P.ki(b, kvh, j, P.Dv))];
        for (std::int64_t d = 0; d < P.Dv; ++d) {
          acc[static_cast<std::size_t>(d)] += pm * static_cast<R>(vrow[d]);
          if (o_scale) mag[static_cast<std::size_t>(d)] += std::fabs(static_cast<double>(pm) * vrow[d]);
        }
      }
      for (std::int64_t d = 0; d < P.Dv; ++d) {
        const auto oi = static_cast<std::size_t>(P.oi(b, h, i, P.Dv) + d);
        o[oi] = static_cast<double>(acc[static_cast<std::size_t>(d)]);
        if (o_scale) (*o_scale)[oi] = mag[static_cast<std::size_t>(d)] * row.A;
      }
    }
  });
}

// The storage dtype the naive twin rounds its intermediates to (16-bit inputs only).
DType naive_store(DType t) { return t == DType::kF16 || t == DType::kBF16 ? t : DType::kF64; }

// The rule (flash-attention's): max error <= 3 x the naive twin's max error + atol.
void set_sdpa_rule(Result& r) {
  r.naive_factor = 3;
  r.naive_tensor_max = true;
}

}  // namespace

Expected<SdpaReference> sdpa(const SdpaDescriptor& d, const SdpaHostInputs& in) {
  auto pr = make_prob(d.q, d.k, d.v, d.bias, d.mask, d.alibi_slopes, d.options, in);
  if (!pr) return pr.error();
  Prob& P = *pr;
  const std::int64_t n_o = d.o.numel(), n_l = P.varlen ? P.Hq * P.total_q : P.B * P.Hq * P.Sq;
  SdpaReference r;
  r.o = zero_result(n_o);
  r.lse = zero_result(n_l);
  forward_pass<double>(P, r.o.exact, r.lse.exact, &r.o.scale, &r.lse.scale);
  if (d.q.dtype == DType::kF64) {
    r.o.naive = r.o.exact;
    r.lse.naive = r.lse.exact;
  } else {
    P.store = naive_store(d.q.dtype);
    forward_pass<float>(P, r.o.naive, r.lse.naive, nullptr, nullptr);
  }
  set_sdpa_rule(r.o);
  set_sdpa_rule(r.lse);
  for (auto& x : r.o.naive) x = round_to(d.o.dtype, x);
  for (auto& x : r.lse.naive) x = round_to(DType::kF32, x);
  return r;
}

void sdpa_fp8_set_scale_o(SdpaFp8Reference& r, double scale_o) {
  r.scale_o = scale_o;
  r.o_stored.resize(r.o.exact.size());
  for (std::size_t i = 0; i < r.o.exact.size(); ++i) {
    r.o_stored[i] = round_to(DType::kE4M3, r.o.exact[i] * scale_o, Fp8Overflow::kSaturate);
    r.o.naive[i] = round_to(DType::kE4M3, r.o_twin[i] * scale_o, Fp8Overflow::kSaturate) / scale_o;
  }
}

Expected<SdpaFp8Reference> sdpa_fp8(const SdpaDescriptor& d, const SdpaHostInputs& in, const SdpaFp8HostScales& s) {
  for (auto [t, name] : {std::pair{&d.q, "q"}, {&d.k, "k"}, {&d.v, "v"}, {&d.o, "o"}})
    if (t->dtype != DType::kE4M3)
      return Status(Code::kInvalidArgument, std::string("reference sdpa_fp8: ") + name + ".dtype = " +
                                                std::string(dtype_name(t->dtype)) + ", expected e4m3");
  if (d.bias.rank > 0 && d.bias.dtype != DType::kF32)
    return Status(Code::kInvalidArgument, "reference sdpa_fp8: bias.dtype = " + std::string(dtype_name(d.bias.dtype)) +
                                              ", expected f32");
  if (!in.q || !in.k || !in.v) return Status(Code::kInvalidArgument, "reference sdpa_fp8: q, k, v are required");
  // The real operands (stored * descale) in f64, and the SKU's bf16 copies of them.
  const auto real = [](const HostTensor& x, double descale, DType t) {
    HostTensor y(TensorLayout::contiguous(t, x.layout().shape_span()));
    for (std::int64_t i = 0; i < x.layout().numel(); ++i) y.set(i, x.get(i) * descale);
    return y;
  };
  const HostTensor q64 = real(*in.q, s.descale_q, DType::kF64), k64 = real(*in.k, s.descale_k, DType::kF64),
                   v64 = real(*in.v, s.descale_v, DType::kF64);
  const HostTensor q16 = real(*in.q, s.descale_q, DType::kBF16), k16 = real(*in.k, s.descale_k, DType::kBF16),
                   v16 = real(*in.v, s.descale_v, DType::kBF16);
  SdpaHostInputs in64 = in, in16 = in;
  in64.q = &q64, in64.k = &k64, in64.v = &v64;
  in16.q = &q16, in16.k = &k16, in16.v = &v16;
  auto p64 = make_prob(q64.layout(), k64.layout(), v64.layout(), d.bias, d.mask, d.alibi_slopes, d.options, in64);
  if (!p64) return p64.error();
  auto p16 = make_prob(q16.layout(), k16.layout(), v16.layout(), d.bias, d.mask, d.alibi_slopes, d.options, in16);
  if (!p16) return p16.error();
  p16->store = DType::kBF16;
  const std::int64_t n_o = d.o.numel(), n_l = p64->varlen ? p64->Hq * p64->total_q : p64->B * p64->Hq * p64->Sq;
  SdpaFp8Reference r;
  r.o = zero_result(n_o);
  r.lse = zero_result(n_l);
  forward_pass<double>(*p64, r.o.exact, r.lse.exact, &r.o.scale, &r.lse.scale);
  std::vector<double> twin_o(static_cast<std::size_t>(n_o), 0.0);
  forward_pass<float>(*p16, twin_o, r.lse.naive, nullptr, nullptr);
  set_sdpa_rule(r.o);
  set_sdpa_rule(r.lse);
  for (auto& x : r.lse.naive) x = round_to(DType::kF32, x);
  double twin_err = 0;
  r.o_twin.resize(r.o.exact.size());
  for (std::size_t i = 0; i < r.o.exact.size(); ++i) {
    const double o = r.o.exact[i];
    r.o_twin[i] = round_to(DType::kBF16, twin_o[i]);
    r.amax_o = std::max(r.amax_o, std::fabs(o));
    twin_err = std::max(twin_err, std::fabs(r.o_twin[i] - o));
  }
  sdpa_fp8_set_scale_o(r, s.scale_o);
  r.amax_bound = 3 * twin_err + std::ldexp(r.amax_o, -7);  // + one bf16 ulp (compare.hpp's rtol)
  return r;
}

namespace {

struct GradOut {
  std::vector<double> dq, dk, dv, dbias;
  std::vector<double> sdq, sdk, sdv, sdbias;  // scales (exact pass)
};

// Backward in precision R, in two parallel phases with fixed summation orders:
//  1. per query row (b, h, i): p, delta, dP, dS; dq_i = sum_j dS~_ij k_j (j ascending); the
//     row's dS~ (= dS dcap scale), p~ (dropped p) and, for grad_bias, dS are kept per (row, j);
//  2. per block of 64 keys (b, kv head): dk_j = sum_h sum_i dS~_ij q_i, dv_j = sum_h sum_i p~_ij dO_i
//     (the group's heads, then i, ascending); grad_bias per element over its broadcast
//     preimage in (b, h, i, j) order.
template <class R>
void backward_pass(const Prob& P, const std::vector<double>& o, const std::vector<double>& go, const TensorLayout& gbl,
                   bool exact, GradOut& g) {
  const std::int64_t rows = P.B * P.Hq * P.Sq, n = rows * P.Skv;
  std::vector<R> dsd(static_cast<std::size_t>(n), R(0)), pd(static_cast<std::size_t>(n), R(0));
  std::vector<float> dsd_s(exact ? static_cast<std::size_t>(n) : 0), pd_s(exact ? static_cast<std::size_t>(n) : 0);
  std::vector<R> dsl(gbl.rank > 0 ? static_cast<std::size_t>(n) : 0);
  std::vector<float> dsl_s(gbl.rank > 0 && exact ? static_cast<std::size_t>(n) : 0);
  auto at = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
    return static_cast<std::size_t>(((b * P.Hq + h) * P.Sq + i) * P.Skv + j);
  };
  gemm_detail::parallel_rows(rows, P.Skv * (P.Dk + P.Dv), [&](std::int64_t r0, std::int64_t r1) {
    Row<R> row;
    std::vector<R> dq(static_cast<std::size_t>(P.Dk));
    std::vector<double> sdq(static_cast<std::size_t>(P.Dk));
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = r % P.Sq, h = r / P.Sq % P.Hq, b = r / P.Sq / P.Hq, kvh = h / P.G;
      if (i >= P.sq[b]) continue;
      row_probs(P, b, h, i, row);
      const auto orow = static_cast<std::size_t>(P.oi(b, h, i, P.Dv));
      R delta = R(0);
      double dmag = 0;
      for (std::int64_t d = 0; d < P.Dv; ++d) {
        delta += static_cast<R>(go[orow + d]) * static_cast<R>(o[orow + d]);
        dmag += std::fabs(go[orow + d] * o[orow + d]);
      }
      std::fill(dq.begin(), dq.end(), R(0));
      std::fill(sdq.begin(), sdq.end(), 0.0);
      for (std::int64_t j = 0; j < P.skv[b]; ++j) {
        const auto js = static_cast<std::size_t>(j);
        const R pj = row.prob[js];
        if (pj == R(0)) continue;
        const auto vrow = static_cast<std::size_t>(P.ki(b, kvh, j, P.Dv));
        const auto krow = static_cast<std::size_t>(P.ki(b, kvh, j, P.Dk));
        R dp = R(0);
        double pmag = 0;
        for (std::int64_t d = 0; d < P.Dv; ++d) {
          dp += static_cast<R>(go[orow + d]) * static_cast<R>(P.v[vrow + d]);
          pmag += std::fabs(go[orow + d] * P.v[vrow + d]);
        }
        dp = P.st(dp);  // dP = dO V^T, dS = P (dP - D): rounded in the naive 16-bit twin
        const R mult = row.mult[js];
        const R ds = P.st(pj * (dp * mult - delta));
        const R ddot = ds * row.dcap[js] * static_cast<R>(P.scale);
        // |dS| and its rounding scale: p (|dP| mult + |delta|) times the logits' magnitude
        const double dsm = static_cast<double>(pj) * (pmag * static_cast<double>(mult) + dmag) * row.A;
        const std::size_t e = at(b, h, i, j);
        dsd[e] = ddot;
        pd[e] = pj * mult;
        if (exact) {
          dsd_s[e] = static_cast<float>(dsm * std::fabs(P.scale));
          pd_s[e] = static_cast<float>(static_cast<double>(pj * mult) * row.A);
        }
        if (!dsl.empty()) dsl[e] = ds;
        if (!dsl_s.empty()) dsl_s[e] = static_cast<float>(dsm);
        for (std::int64_t d = 0; d < P.Dk; ++d) {
          dq[static_cast<std::size_t>(d)] += ddot * static_cast<R>(P.k[krow + d]);
          if (exact) sdq[static_cast<std::size_t>(d)] += dsm * std::fabs(P.scale) * std::fabs(P.k[krow + d]);
        }
      }
      for (std::int64_t d = 0; d < P.Dk; ++d) {
        const auto qi = static_cast<std::size_t>(P.oi(b, h, i, P.Dk) + d);
        g.dq[qi] = static_cast<double>(dq[static_cast<std::size_t>(d)]);
        if (exact) g.sdq[qi] = sdq[static_cast<std::size_t>(d)];
      }
    }
  });
  // blocks of kKeys keys, so the (row, j) arrays are read along j
  constexpr std::int64_t kKeys = 64;
  const std::int64_t nkb = (P.Skv + kKeys - 1) / kKeys, tasks = P.B * P.Hkv * nkb;
  gemm_detail::parallel_rows(tasks, kKeys * P.G * P.Sq * (P.Dk + P.Dv), [&](std::int64_t t0, std::int64_t t1) {
    std::vector<R> dk(static_cast<std::size_t>(kKeys * P.Dk)), dv(static_cast<std::size_t>(kKeys * P.Dv));
    std::vector<double> sdk(dk.size()), sdv(dv.size());
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t kb = t % nkb, kvh = t / nkb % P.Hkv, b = t / nkb / P.Hkv;
      const std::int64_t j0 = kb * kKeys, j1 = std::min(P.skv[b], j0 + kKeys);
      if (j0 >= j1) continue;
      std::fill(dk.begin(), dk.end(), R(0));
      std::fill(dv.begin(), dv.end(), R(0));
      std::fill(sdk.begin(), sdk.end(), 0.0);
      std::fill(sdv.begin(), sdv.end(), 0.0);
      for (std::int64_t h = kvh * P.G; h < (kvh + 1) * P.G; ++h)
        for (std::int64_t i = 0; i < P.sq[b]; ++i) {
          const double* qrow = &P.q[static_cast<std::size_t>(P.qi(b, h, i))];
          const auto orow = static_cast<std::size_t>(P.oi(b, h, i, P.Dv));
          for (std::int64_t j = j0; j < j1; ++j) {
            const std::size_t e = at(b, h, i, j);
            if (pd[e] == R(0) && dsd[e] == R(0)) continue;
            const auto jk = static_cast<std::size_t>(j - j0);
            for (std::int64_t d = 0; d < P.Dk; ++d) {
              dk[jk * P.Dk + d] += dsd[e] * static_cast<R>(qrow[d]);
              if (exact) sdk[jk * P.Dk + d] += dsd_s[e] * std::fabs(qrow[d]);
            }
            for (std::int64_t d = 0; d < P.Dv; ++d) {
              dv[jk * P.Dv + d] += pd[e] * static_cast<R>(go[orow + d]);
              if (exact) sdv[jk * P.Dv + d] += pd_s[e] * std::fabs(go[orow + d]);
            }
          }
        }
      for (std::int64_t j = j0; j < j1; ++j) {
        const auto jk = static_cast<std::size_t>(j - j0);
        for (std::int64_t d = 0; d < P.Dk; ++d) {
          const auto ki = static_cast<std::size_t>(P.ki(b, kvh, j, P.Dk) + d);
          g.dk[ki] = static_cast<double>(dk[jk * P.Dk + d]);
          if (exact) g.sdk[ki] = sdk[jk * P.Dk + d];
        }
        for (std::int64_t d = 0; d < P.Dv; ++d) {
          const auto vi = static_cast<std::size_t>(P.ki(b, kvh, j, P.Dv) + d);
          g.dv[vi] = static_cast<double>(dv[jk * P.Dv + d]);
          if (exact) g.sdv[vi] = sdv[jk * P.Dv + d];
        }
      }
    }
  });
  if (gbl.rank == 0) return;
  // grad_bias (dense only): element e sums dS over the (b, h, i, j) that read it, in order.
  const std::int64_t full[4] = {P.B, P.Hq, P.Sq, P.Skv};
  std::int64_t size[4] = {1, 1, 1, 1};
  for (int k = 0; k < gbl.rank; ++k) size[4 - gbl.rank + k] = gbl.shape[k];
  gemm_detail::for_rows(gbl.numel(), n / std::max<std::int64_t>(gbl.numel(), 1), [&](std::int64_t e) {
    std::int64_t idx[4], rem = e, lo[4], hi[4];
    for (int d = 3; d >= 0; --d) {
      idx[d] = rem % size[d];
      rem /= size[d];
    }
    for (int d = 0; d < 4; ++d) {
      const bool reduced = size[d] == 1 && full[d] != 1;
      lo[d] = reduced ? 0 : idx[d];
      hi[d] = reduced ? full[d] : idx[d] + 1;
    }
    R acc = R(0);
    double sc = 0;
    for (std::int64_t b = lo[0]; b < hi[0]; ++b)
      for (std::int64_t h = lo[1]; h < hi[1]; ++h)
        for (std::int64_t i = lo[2]; i < hi[2]; ++i)
          for (std::int64_t j = lo[3]; j < hi[3]; ++j) {
            acc += dsl[at(b, h, i, j)];
            if (exact) sc += dsl_s[at(b, h, i, j)];
          }
    g.dbias[static_cast<std::size_t>(e)] = static_cast<double>(acc);
    if (exact) g.sdbias[static_cast<std::size_t>(e)] = sc;
  });
}

}  // namespace

SdpaBackwardDescriptor sdpa_backward_of(const SdpaDescriptor& d, bool grad_bias) {
  SdpaBackwardDescriptor g;
  g.q = g.grad_q = d.q;
  g.k = g.grad_k = d.k;
  g.v = g.grad_v = d.v;
  g.o = g.grad_o = d.o;
  g.lse = d.lse;
  g.bias = d.bias;
  g.mask = d.mask;
  g.alibi_slopes = d.alibi_slopes;
  if (grad_bias) g.grad_bias = d.bias;
  g.options = d.options;
  return g;
}

Expected<SdpaGradReference> sdpa_backward(const SdpaBackwardDescriptor& d, const SdpaHostInputs& in, const HostTensor& o,
                                          const HostTensor& grad_o) {
  auto pr = make_prob(d.q, d.k, d.v, d.bias, d.mask, d.alibi_slopes, d.options, in);
  if (!pr) return pr.error();
  Prob& P = *pr;
  const std::vector<double> ov = o.logical(), gov = grad_o.logical();
  auto run = [&](bool exact) {
    GradOut g;
    g.dq.assign(static_cast<std::size_t>(d.q.numel()), 0.0);
    g.dk.assign(static_cast<std::size_t>(d.k.numel()), 0.0);
    g.dv.assign(static_cast<std::size_t>(d.v.numel()), 0.0);
    g.dbias.assign(static_cast<std::size_t>(d.grad_bias.rank > 0 ? d.grad_bias.numel() : 0), 0.0);
    if (exact) {
      g.sdq = g.dq;
      g.sdk = g.dk;
      g.sdv = g.dv;
      g.sdbias = g.dbias;
    }
    P.store = exact ? DType::kF64 : naive_store(d.q.dtype);
    if (exact || d.q.dtype == DType::kF64) backward_pass<double>(P, ov, gov, d.grad_bias, exact, g);
    else backward_pass<float>(P, ov, gov, d.grad_bias, exact, g);
    return g;
  };
  GradOut ex = run(true), nv = run(false);
  auto result = [](std::vector<double>& e, std::vector<double>& n, std::vector<double>& s, DType t) {
    Result r;
    r.exact = std::move(e);
    r.naive = std::move(n);
    for (auto& x : r.naive) x = round_to(t, x);
    r.scale = std::move(s);
    set_sdpa_rule(r);
    return r;
  };
  SdpaGradReference r;
  r.grad_q = result(ex.dq, nv.dq, ex.sdq, d.grad_q.dtype);
  r.grad_k = result(ex.dk, nv.dk, ex.sdk, d.grad_k.dtype);
  r.grad_v = result(ex.dv, nv.dv, ex.sdv, d.grad_v.dtype);
  if (d.grad_bias.rank > 0) r.grad_bias = result(ex.dbias, nv.dbias, ex.sdbias, d.grad_bias.dtype);
  return r;
}

}  // namespace baracuda::reference
