// baracuda::reference for the SDPA plans (attention.hpp): one templated row algorithm run
// in double (exact) and in the compute precision (naive).
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
    R xv = dot * static_cast<R>(P.scale);
    mag *= std::fabs(P.scale);
    if (P.softcap > 0) {
      const R t = std::tanh(xv / static_cast<R>(P.softcap));
      xv = static_cast<R>(P.softcap) * t;
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
    row.prob[js] = x[js] == static_cast<R>(kNegInf) ? R(0) : std::exp(x[js] - m) / sum;
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
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = r % P.Sq, h = r / P.Sq % P.Hq, b = r / P.Sq / P.Hq;
      if (i >= P.sq[b]) continue;
      row_probs(P, b, h, i, row);
      const std::int64_t kvh = h / P.G;
      const auto li = static_cast<std::size_t>(P.lse_i(b, h, i));
      lse[li] = static_cast<double>(row.lse);
      if (lse_scale) (*lse_scale)[li] = row.A;
      for (std::int64_t d = 0; d < P.Dv; ++d) {
        R acc = R(0);
        double mag = 0;
        for (std::int64_t j = 0; j < P.skv[b]; ++j) {
          const auto js = static_cast<std::size_t>(j);
          if (row.prob[js] == R(0)) continue;
          const double vv = P.v[static_cast<std::size_t>(P.ki(b, kvh, j, P.Dv) + d)];
          acc += row.prob[js] * row.mult[js] * static_cast<R>(vv);
          mag += std::fabs(static_cast<double>(row.prob[js] * row.mult[js]) * vv);
        }
        const auto oi = static_cast<std::size_t>(P.oi(b, h, i, P.Dv) + d);
        o[oi] = static_cast<double>(acc);
        if (o_scale) (*o_scale)[oi] = mag * row.A;
      }
    }
  });
}

}  // namespace

Expected<SdpaReference> sdpa(const SdpaDescriptor& d, const SdpaHostInputs& in) {
  auto pr = make_prob(d.q, d.k, d.v, d.bias, d.mask, d.alibi_slopes, d.options, in);
  if (!pr) return pr.error();
  const Prob& P = *pr;
  const std::int64_t n_o = d.o.numel(), n_l = P.varlen ? P.Hq * P.total_q : P.B * P.Hq * P.Sq;
  SdpaReference r;
  r.o = zero_result(n_o);
  r.lse = zero_result(n_l);
  forward_pass<double>(P, r.o.exact, r.lse.exact, &r.o.scale, &r.lse.scale);
  if (d.q.dtype == DType::kF64) {
    r.o.naive = r.o.exact;
    r.lse.naive = r.lse.exact;
  } else {
    forward_pass<float>(P, r.o.naive, r.lse.naive, nullptr, nullptr);
  }
  for (auto& x : r.o.naive) x = round_to(d.o.dtype, x);
  for (auto& x : r.lse.naive) x = round_to(DType::kF32, x);
  return r;
}

namespace {

struct GradOut {
  std::vector<double> dq, dk, dv, dbias;
  std::vector<double> sdq, sdk, sdv, sdbias;  // scales (exact pass)
};

// Backward in precision R. Tasks are (b, kv head): each owns its dK / dV rows; grad_bias
// goes to per-task partial arrays summed in task order.
template <class R>
void backward_pass(const Prob& P, const std::vector<double>& o, const std::vector<double>& go, const TensorLayout& gbl,
                   bool exact, GradOut& g) {
  const std::int64_t tasks = P.B * P.Hkv;
  const std::size_t nbias = gbl.rank > 0 ? static_cast<std::size_t>(gbl.numel()) : 0;
  std::vector<std::vector<double>> part(static_cast<std::size_t>(tasks)), part_s(static_cast<std::size_t>(tasks));
  gemm_detail::parallel_rows(tasks, P.G * P.Sq * P.Skv * (P.Dk + P.Dv), [&](std::int64_t t0, std::int64_t t1) {
    Row<R> row;
    std::vector<R> dq(static_cast<std::size_t>(P.Dk));
    std::vector<double> sdq(static_cast<std::size_t>(P.Dk));
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t b = t / P.Hkv, kvh = t % P.Hkv, skv = P.skv[b];
      auto& pb = part[static_cast<std::size_t>(t)];
      auto& pbs = part_s[static_cast<std::size_t>(t)];
      pb.assign(nbias, 0.0);
      pbs.assign(nbias, 0.0);
      std::vector<R> dk(static_cast<std::size_t>(skv * P.Dk), R(0)), dv(static_cast<std::size_t>(skv * P.Dv), R(0));
      std::vector<double> sdk(dk.size(), 0.0), sdv(dv.size(), 0.0);
      for (std::int64_t h = kvh * P.G; h < (kvh + 1) * P.G; ++h)
        for (std::int64_t i = 0; i < P.sq[b]; ++i) {
          row_probs(P, b, h, i, row);
          const double* qrow = &P.q[static_cast<std::size_t>(P.qi(b, h, i))];
          const auto orow = static_cast<std::size_t>(P.oi(b, h, i, P.Dv));
          R delta = R(0);
          double dmag = 0;
          for (std::int64_t d = 0; d < P.Dv; ++d) {
            delta += static_cast<R>(go[orow + d]) * static_cast<R>(o[orow + d]);
            dmag += std::fabs(go[orow + d] * o[orow + d]);
          }
          std::fill(dq.begin(), dq.end(), R(0));
          std::fill(sdq.begin(), sdq.end(), 0.0);
          for (std::int64_t j = 0; j < skv; ++j) {
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
            const R mult = row.mult[js];
            const R ds = pj * (dp * mult - delta);
            const R ddot = ds * row.dcap[js] * static_cast<R>(P.scale);
            // |dS| and its rounding scale: p (|dP| mult + |delta|) times the logits' magnitude
            const double dsm = static_cast<double>(pj) * (pmag * static_cast<double>(mult) + dmag) * row.A;
            const double ddm = dsm * std::fabs(P.scale);
            for (std::int64_t d = 0; d < P.Dk; ++d) {
              const auto ds_ = static_cast<std::size_t>(d);
              dq[ds_] += ddot * static_cast<R>(P.k[krow + d]);
              dk[js * P.Dk + ds_] += ddot * static_cast<R>(qrow[d]);
              if (exact) {
                sdq[ds_] += ddm * std::fabs(P.k[krow + d]);
                sdk[js * P.Dk + ds_] += ddm * std::fabs(qrow[d]);
              }
            }
            const R pd = pj * mult;
            for (std::int64_t d = 0; d < P.Dv; ++d) {
              dv[js * P.Dv + d] += pd * static_cast<R>(go[orow + d]);
              if (exact) sdv[js * P.Dv + d] += static_cast<double>(pd) * std::fabs(go[orow + d]) * row.A;
            }
            if (nbias > 0) {
              const auto bi = static_cast<std::size_t>(bcast_index(gbl, b, h, i, j));
              pb[bi] += static_cast<double>(ds);
              pbs[bi] += dsm;
            }
          }
          for (std::int64_t d = 0; d < P.Dk; ++d) {
            const auto qi = static_cast<std::size_t>(P.oi(b, h, i, P.Dk) + d);
            g.dq[qi] = static_cast<double>(dq[static_cast<std::size_t>(d)]);
            if (exact) g.sdq[qi] = sdq[static_cast<std::size_t>(d)];
          }
        }
      for (std::int64_t j = 0; j < skv; ++j) {
        const auto js = static_cast<std::size_t>(j);
        for (std::int64_t d = 0; d < P.Dk; ++d) {
          const auto ki = static_cast<std::size_t>(P.ki(b, kvh, j, P.Dk) + d);
          g.dk[ki] = static_cast<double>(dk[js * P.Dk + d]);
          if (exact) g.sdk[ki] = sdk[js * P.Dk + d];
        }
        for (std::int64_t d = 0; d < P.Dv; ++d) {
          const auto vi = static_cast<std::size_t>(P.ki(b, kvh, j, P.Dv) + d);
          g.dv[vi] = static_cast<double>(dv[js * P.Dv + d]);
          if (exact) g.sdv[vi] = sdv[js * P.Dv + d];
        }
      }
    }
  });
  if (nbias > 0) {
    std::vector<R> acc(nbias, R(0));
    for (const auto& pb : part)
      for (std::size_t e = 0; e < nbias; ++e) acc[e] += static_cast<R>(pb[e]);
    for (std::size_t e = 0; e < nbias; ++e) g.dbias[e] = static_cast<double>(acc[e]);
    if (exact)
      for (const auto& pbs : part_s)
        for (std::size_t e = 0; e < nbias; ++e) g.sdbias[e] += pbs[e];
  }
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
  const Prob& P = *pr;
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
