// The cuDNN fused-attention backward SKUs: sdpa.bwd.cudnn_fused (dQ accumulated with atomics:
// not deterministic) and sdpa.bwd.cudnn_fused_deterministic (cuDNN's deterministic algorithm,
// which on Hopper materializes dP [B, Hq, Sq, Skv] (bf16, 64-padded) in the workspace, so it
// is refused above kDeterministicDpLimit and left to our flash backward).
//
// The lse is copied into our workspace in the packed layout cuDNN reads (dense [B, Hq, Sq],
// varlen [Tq, Hq] ragged), with -inf (rows that saw no key) turned into 0 so cuDNN's
// exp(s - lse) gives 0 rather than NaN there. Dense problems with skv % 128 != 0 get a padding
// mask with constant lengths from us, so the frontend's own workaround (which copies the
// lengths from host memory at execute) stays off.
#include "attention/cudnn_sdpa_graph.hpp"

namespace baracuda::attention {
namespace cudnn_sdpa {
namespace {

constexpr int kRo = 3, kRdo = 4, kRdq = 5, kRdk = 6, kRdv = 7, kRstats = 8;
constexpr std::size_t kDeterministicDpLimit = std::size_t{256} << 20;  // the frontend's old default dP limit

bool needs_padding(const SdpaProblem& p) { return p.varlen || p.skv % 128 != 0; }

AuxLayout bwd_aux(const SdpaProblem& p) {
  return make_aux_layout(p.batch, needs_padding(p), p.varlen ? 9 : 0, p.dropout_p > 0,
                         p.varlen ? p.total_q * p.hq : p.batch * p.hq * p.sq);
}

std::int64_t pad_to(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }
// The dP buffer of the deterministic algorithm (bf16; Sq padded to 64, Skv to 128 on sm90).
std::size_t dp_bytes(const SdpaProblem& p) {
  return static_cast<std::size_t>(p.batch * p.hq) * static_cast<std::size_t>(pad_to(p.sq, 64)) *
         static_cast<std::size_t>(pad_to(p.skv, 128)) * 2;
}

// The frontend's buffers (dQ accumulator or dP, softmax sum), f32 dK / dV accumulators for
// GQA (an allowance: the engine may reduce the query heads of a group there) and the margin.
std::size_t graph_workspace_bound(const SdpaProblem& p, bool deterministic) {
  const std::size_t rows = static_cast<std::size_t>(p.batch * p.hq * p.sq);
  std::size_t fe = deterministic ? dp_bytes(p) + rows * sizeof(float)
                                 : rows * static_cast<std::size_t>(p.dk) * sizeof(float) + rows * sizeof(float);
  if (p.hq != p.hkv)
    fe += static_cast<std::size_t>(p.batch * p.hkv * p.skv * (p.dk + p.dv)) * sizeof(float);
  return fe + kEngineWorkspaceMargin;
}

struct BwdState : GraphState {
  SdpaProblem p;
};

template <bool kDeterministic>
Candidate<SdpaBackwardDescriptor, SdpaBackwardArgs>::Probe probe_bwd(const SdpaBackwardDescriptor& d,
                                                                     const DeviceCaps& caps) {
  const SdpaProblem p = make_sdpa_problem(d);
  const char* impl = kDeterministic ? "cudnn_fused_deterministic" : "cudnn_fused";
  Candidate<SdpaBackwardDescriptor, SdpaBackwardArgs>::Probe r{make_sku(p, Direction::kBackward, impl, kDeterministic),
                                                               {}, 0, {}};
  r.rejection = common_rejection(p,
                                 {{&d.q, "q"}, {&d.k, "k"}, {&d.v, "v"}, {&d.o, "o"}, {&d.grad_o, "grad_o"},
                                  {&d.grad_q, "grad_q"}, {&d.grad_k, "grad_k"}, {&d.grad_v, "grad_v"}},
                                 d.bias, d.mask, d.alibi_slopes, caps);
  if (r.rejection.empty() && d.grad_bias.rank > 0)
    r.rejection = "grad_bias given: the cuDNN SKU does not compute the bias gradient";
  if (r.rejection.empty() && (d.lse.rank == 0 || d.lse.dtype != DType::kF32))
    r.rejection = "lse = " + d.lse.to_string() + ": the backward needs the forward's f32 lse";
  if (r.rejection.empty() && p.sq == 1 && p.skv == 1)
    r.rejection = "sq = skv = 1: cuDNN's SDPA backward refuses it";
  if (r.rejection.empty() && kDeterministic && dp_bytes(p) > kDeterministicDpLimit)
    r.rejection = "deterministic cuDNN backward materializes dP [" + std::to_string(p.batch) + ", " +
                  std::to_string(p.hq) + ", " + std::to_string(pad_to(p.sq, 64)) + ", " + std::to_string(pad_to(p.skv, 128)) +
                  "] = " + std::to_string(dp_bytes(p)) + " bytes > " + std::to_string(kDeterministicDpLimit);
  if (r.rejection.empty()) r.workspace_bytes = bwd_aux(p).bytes + graph_workspace_bound(p, kDeterministic);
  return r;
}

template <bool kDeterministic>
Expected<std::shared_ptr<const void>> build_bwd(const SdpaBackwardDescriptor& d, const DeviceCaps& caps) {
  auto st = std::make_shared<BwdState>();
  st->p = make_sdpa_problem(d);
  const SdpaProblem& p = st->p;
  st->aux = bwd_aux(p);
  st->device = caps.ordinal;
  if (caps.ordinal < 0) return std::shared_ptr<const void>(st);

  GraphInputs in = graph_inputs(p, st->aux);
  auto& g = in.g;
  auto& ragged = in.ragged;
  auto o = operand(*g, "o", kO, p.dtype, p.batch, p.hq, p.sq, p.dv, p.o, ragged[kRo]);
  auto dO = operand(*g, "grad_o", kDO, p.dtype, p.batch, p.hq, p.sq, p.dv, p.grad_o, ragged[kRdo]);
  auto stats = g->tensor(fe::graph::Tensor_attributes()
                             .set_name("stats")
                             .set_uid(kStats)
                             .set_dim({p.batch, p.hq, p.sq, 1})
                             .set_data_type(fe::DataType_t::FLOAT));
  if (p.varlen)
    stats->set_stride({p.sq * p.hq, 1, p.hq, 1}).set_ragged_offset(ragged[kRstats]);
  else
    stats->set_stride({p.hq * p.sq, p.sq, 1, 1});

  fe::graph::SDPA_backward_attributes a;
  a.set_name("sdpa_backward").set_deterministic_algorithm(kDeterministic);
  set_shared_attributes(*g, a, p, needs_padding(p));

  auto [dQ, dK, dV] = g->sdpa_backward(in.q, in.k, in.v, o, dO, stats, a);
  const auto out = [&](const TensorPtr& t, Uid uid, std::int64_t h, std::int64_t s, std::int64_t dd, const Strides4& sv,
                       const TensorPtr& ro) {
    std::vector<std::int64_t> dim{p.batch, h, s, dd};
    t->set_output(true)
        .set_uid(uid)
        .set_dim(dim)
        .set_stride(norm_strides(dim, {p.varlen ? s * sv.s : sv.b, sv.h, sv.s, 1}))
        .set_data_type(fe_type(p.dtype));
    if (ro) t->set_ragged_offset(ro);
  };
  out(dQ, kDQ, p.hq, p.sq, p.dk, p.grad_q, ragged[kRdq]);
  out(dK, kDK, p.hkv, p.skv, p.dk, p.grad_k, ragged[kRdk]);
  out(dV, kDV, p.hkv, p.skv, p.dv, p.grad_v, ragged[kRdv]);

  auto ws = build_graph(*g, caps);
  if (!ws) return ws.error();
  st->graph = std::move(g);
  st->graph_workspace = ws.value();
  const std::size_t bound = graph_workspace_bound(p, kDeterministic);
  if (st->graph_workspace > bound)
    return Status(Code::kNotSupported, "the cuDNN graph needs " + std::to_string(st->graph_workspace) +
                                           " workspace bytes, more than the " + std::to_string(bound) +
                                           " the probe reported");
  return std::shared_ptr<const void>(st);
}

template <bool kDeterministic>
Expected<std::shared_ptr<const void>> prepare_bwd(const SdpaBackwardDescriptor& d, const DeviceCaps& caps) {
  return guarded_prepare([&] { return build_bwd<kDeterministic>(d, caps); });
}

Status launch_bwd(const void* state, const SdpaBackwardDescriptor&, const SdpaBackwardArgs& a, Workspace ws,
                  cudaStream_t stream) {
  const auto& s = *static_cast<const BwdState*>(state);
  const SdpaProblem& p = s.p;
  BARACUDA_TRY(check_launch(p, s.graph != nullptr, s.device, a.cu_seqlens_q, a.cu_seqlens_k));
  const auto at = [&](std::size_t off) { return ws_at(ws, off); };

  BARACUDA_TRY(prepare_aux(p, s.aux, ws.data, a.cu_seqlens_q, a.cu_seqlens_k,
                            {{p.q.s, false}, {p.k.s, true}, {p.v.s, true}, {p.o.s, false}, {p.grad_o.s, false},
                            {p.grad_q.s, false}, {p.grad_k.s, true}, {p.grad_v.s, true}, {p.hq, false}},
                            a.seed, a.offset, a.philox_seed_offset, stream));

  {  // the caller's lse -> packed workspace copy, -inf -> 0
    StatsCopyParams c;
    c.src = a.lse;
    c.dst = reinterpret_cast<float*>(at(s.aux.stats));
    c.sanitize_neg_inf = true;
    if (p.varlen) {
      c.n0 = p.hq;
      c.n1 = p.total_q;
      c.src_s0 = p.lse.h;
      c.src_s1 = p.lse.s;
      c.dst_s0 = 1;
      c.dst_s1 = p.hq;
      c.limit = a.cu_seqlens_q + p.batch;
    } else {
      c.n2 = p.batch;
      c.n0 = p.hq;
      c.n1 = p.sq;
      c.src_s2 = p.lse.b;
      c.src_s0 = p.lse.h;
      c.src_s1 = p.lse.s;
      c.dst_s2 = p.hq * p.sq;
      c.dst_s0 = p.sq;
      c.dst_s1 = 1;
    }
    BARACUDA_TRY(launch_stats_copy(c, stream));
  }

  std::unordered_map<std::int64_t, void*> pack{{kQ, const_cast<void*>(a.q)},   {kK, const_cast<void*>(a.k)},
                                               {kV, const_cast<void*>(a.v)},   {kO, const_cast<void*>(a.o)},
                                               {kDO, const_cast<void*>(a.grad_o)}, {kStats, at(s.aux.stats)},
                                               {kDQ, a.grad_q},                {kDK, a.grad_k},
                                               {kDV, a.grad_v}};
  pack_shared(pack, p, s.aux, ws, a.bias, needs_padding(p));
  BARACUDA_TRY(execute_graph(s, pack, s.graph_workspace > 0 ? at(s.aux.bytes) : nullptr, stream));

  if (p.varlen) {
    ZeroGradsParams z;
    z.cu_q = a.cu_seqlens_q;
    z.cu_k = a.cu_seqlens_k;
    z.dq = static_cast<std::uint16_t*>(a.grad_q);
    z.dk = static_cast<std::uint16_t*>(a.grad_k);
    z.dv = static_cast<std::uint16_t*>(a.grad_v);
    z.hq = p.hq;
    z.hkv = p.hkv;
    z.dk_dim = p.dk;
    z.dv_dim = p.dv;
    z.sdq = p.grad_q;
    z.sdk = p.grad_k;
    z.sdv = p.grad_v;
    BARACUDA_TRY(launch_zero_grads(z, p.batch, stream));
  }
  return Status::ok();
}

}  // namespace
}  // namespace cudnn_sdpa

std::span<const SdpaBackwardCandidate> cudnn_sdpa_backward_candidates() {
  static const SdpaBackwardCandidate table[] = {
      {&cudnn_sdpa::probe_bwd<false>, &cudnn_sdpa::prepare_bwd<false>, &cudnn_sdpa::launch_bwd},
      {&cudnn_sdpa::probe_bwd<true>, &cudnn_sdpa::prepare_bwd<true>, &cudnn_sdpa::launch_bwd},
  };
  return table;
}

std::optional<std::size_t> cudnn_sdpa_prepared_workspace(const SdpaBackwardCandidate& c, const void* state) {
  if ((c.prepare != &cudnn_sdpa::prepare_bwd<false> && c.prepare != &cudnn_sdpa::prepare_bwd<true>) || state == nullptr)
    return std::nullopt;
  const auto& s = *static_cast<const cudnn_sdpa::BwdState*>(state);
  if (!s.graph) return std::nullopt;
  return s.aux.bytes + s.graph_workspace;
}

}  // namespace baracuda::attention
