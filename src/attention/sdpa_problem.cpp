// make_sdpa_problem: the descriptor (already validated by sdpa.cpp) in the normalized form of
// sdpa_problem.hpp.
#include "attention/sdpa_problem.hpp"

#include <cmath>

#include "baracuda/ops/attention.hpp"

namespace baracuda::attention {
namespace {

Strides4 strides_of(const TensorLayout& t, bool varlen) {
  Strides4 s;
  if (t.rank == 0) return s;
  if (varlen) {  // [T, H, D]
    s.s = t.strides[0];
    s.h = t.strides[1];
    s.d = t.strides[2];
  } else {  // [B, H, S, D]
    s.b = t.strides[0];
    s.h = t.strides[1];
    s.s = t.strides[2];
    s.d = t.strides[3];
  }
  return s;
}

Strides4 lse_strides(const TensorLayout& t, bool varlen) {
  Strides4 s;
  if (t.rank == 0) return s;
  if (varlen) {  // [Hq, Tq]
    s.h = t.strides[0];
    s.s = t.strides[1];
  } else {  // [B, Hq, Sq]
    s.b = t.strides[0];
    s.h = t.strides[1];
    s.s = t.strides[2];
  }
  return s;
}

// Right-aligned to [B, Hq, Sq, Skv]; size-1 dims broadcast (stride 0).
Broadcast4 broadcast_of(const TensorLayout& t) {
  Broadcast4 r;
  if (t.rank == 0) return r;
  r.present = true;
  for (int k = 0; k < t.rank && k < 4; ++k) {
    const int dim = 4 - t.rank + k;
    r.size[dim] = t.shape[k];
    r.stride[dim] = t.shape[k] == 1 ? 0 : t.strides[k];
  }
  return r;
}

struct Common {
  const TensorLayout *q, *k, *v, *o, *lse, *bias, *mask, *alibi;
  const SdpaOptions* opt;
};

void fill_common(SdpaProblem& p, const Common& c) {
  const SdpaOptions& o = *c.opt;
  p.varlen = o.varlen;
  p.dtype = c.q->dtype;
  p.bias_dtype = c.bias->rank > 0 ? c.bias->dtype : c.q->dtype;
  if (o.varlen) {
    p.batch = o.batch;
    p.hq = c.q->shape[1];
    p.hkv = c.k->shape[1];
    p.sq = o.max_seqlen_q;
    p.skv = o.max_seqlen_k;
    p.dk = c.q->shape[2];
    p.dv = c.v->shape[2];
    p.total_q = c.q->shape[0];
    p.total_k = c.k->shape[0];
  } else {
    p.batch = c.q->shape[0];
    p.hq = c.q->shape[1];
    p.hkv = c.k->shape[1];
    p.sq = c.q->shape[2];
    p.skv = c.k->shape[2];
    p.dk = c.q->shape[3];
    p.dv = c.v->shape[3];
  }
  p.group = p.hkv > 0 ? p.hq / p.hkv : 1;
  p.q = strides_of(*c.q, o.varlen);
  p.k = strides_of(*c.k, o.varlen);
  p.v = strides_of(*c.v, o.varlen);
  p.o = strides_of(*c.o, o.varlen);
  p.has_lse = c.lse->rank > 0;
  p.lse = lse_strides(*c.lse, o.varlen);
  p.bias = broadcast_of(*c.bias);
  p.mask = broadcast_of(*c.mask);
  p.has_alibi = c.alibi->rank > 0;
  if (c.alibi->rank == 1) {
    p.alibi_h = c.alibi->strides[0];
  } else if (c.alibi->rank == 2) {
    p.alibi_b = c.alibi->shape[0] == 1 ? 0 : c.alibi->strides[0];
    p.alibi_h = c.alibi->strides[1];
  }
  p.scale = o.scale != 0 ? o.scale : (p.dk > 0 ? 1.0 / std::sqrt(static_cast<double>(p.dk)) : 1.0);
  p.softcap = o.softcap;
  p.causal = o.causal;
  p.bottom_right = o.align == CausalAlign::kBottomRight;
  p.window_left = o.window_left < 0 ? -1 : o.window_left;
  p.window_right = o.causal ? 0 : (o.window_right < 0 ? -1 : o.window_right);
  p.has_window = p.window_left >= 0 || p.window_right >= 0;
  p.dropout_p = o.dropout_p;
  p.dropout_threshold = dropout_threshold(o.dropout_p);
  p.dropout_scale = o.dropout_p > 0 ? 1.0 / (1.0 - o.dropout_p) : 1.0;
}

}  // namespace

std::uint32_t dropout_threshold(double p) {
  if (!(p > 0)) return 0;
  const double t = std::floor(p * 4294967296.0);
  return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(t);
}

SdpaProblem make_sdpa_problem(const SdpaDescriptor& d) {
  SdpaProblem p;
  fill_common(p, {&d.q, &d.k, &d.v, &d.o, &d.lse, &d.bias, &d.mask, &d.alibi_slopes, &d.options});
  return p;
}

SdpaProblem make_sdpa_problem(const SdpaBackwardDescriptor& d) {
  SdpaProblem p;
  fill_common(p, {&d.q, &d.k, &d.v, &d.o, &d.lse, &d.bias, &d.mask, &d.alibi_slopes, &d.options});
  p.backward = true;
  p.grad_o = strides_of(d.grad_o, d.options.varlen);
  p.grad_q = strides_of(d.grad_q, d.options.varlen);
  p.grad_k = strides_of(d.grad_k, d.options.varlen);
  p.grad_v = strides_of(d.grad_v, d.options.varlen);
  p.grad_bias = broadcast_of(d.grad_bias);
  return p;
}

}  // namespace baracuda::attention
