// The cuDNN fused-attention forward SKU (sdpa.fwd.cudnn_fused): one frontend graph per plan,
// built in prepare(), executed in launch() (cudnn_sdpa_graph.hpp). What it takes and refuses:
// cudnn_sdpa_common.cpp (both directions) and probe_fwd below.
//
// Varlen runs THD: q/k/v/o as [B, H, max_seqlen, D] with int32 ragged offsets (cu_seqlens *
// token stride) and a padding mask from the per-sequence lengths, all written into our part of
// the workspace by a tiny kernel; cuDNN's Stats go to the workspace as [Tq, Hq] and are copied
// to the caller's [Hq, Tq] lse. Rows that see no key get o = 0, lse = -inf afterwards.
#include "attention/cudnn_sdpa_graph.hpp"

namespace baracuda::attention {
namespace cudnn_sdpa {
namespace {

constexpr int kRo = 3, kRstats = 4;  // ragged slots (0, 1, 2: q, k, v)

AuxLayout fwd_aux(const SdpaProblem& p) {
  return make_aux_layout(p.batch, p.varlen, p.varlen ? (p.has_lse ? 5 : 4) : 0, p.dropout_p > 0,
                         p.varlen && p.has_lse ? p.total_q * p.hq : 0);
}
std::size_t fwd_workspace_bound(const SdpaProblem& p) { return fwd_aux(p).bytes + kEngineWorkspaceMargin; }

struct FwdState : GraphState {
  SdpaProblem p;
  bool fixup = false;  // some row may see no key
};

Candidate<SdpaDescriptor, SdpaArgs>::Probe probe_fwd(const SdpaDescriptor& d, const DeviceCaps& caps) {
  const SdpaProblem p = make_sdpa_problem(d);
  Candidate<SdpaDescriptor, SdpaArgs>::Probe r{make_sku(p, Direction::kForward, "cudnn_fused", true), {}, 0, {}};
  r.rejection = common_rejection(p, {{&d.q, "q"}, {&d.k, "k"}, {&d.v, "v"}, {&d.o, "o"}}, d.bias, d.mask,
                                 d.alibi_slopes, caps);
  if (r.rejection.empty() && p.has_lse && d.lse.dtype != DType::kF32)
    r.rejection = std::string("lse.dtype = ") + std::string(dtype_name(d.lse.dtype)) + ": f32 expected";
  // Dense: cuDNN writes the stats straight into the caller's lse, a graph tensor of the default
  // 16-byte alignment (varlen goes through the aligned workspace and a copy).
  if (r.rejection.empty() && p.has_lse && !p.varlen && d.lse.alignment < 16)
    r.rejection = "lse.alignment = " + std::to_string(d.lse.alignment) + ": cuDNN writes the stats 16-byte aligned";
  if (r.rejection.empty()) r.workspace_bytes = fwd_workspace_bound(p);
  return r;
}

Expected<std::shared_ptr<const void>> build_fwd(const SdpaDescriptor& d, const DeviceCaps& caps) {
  auto st = std::make_shared<FwdState>();
  st->p = make_sdpa_problem(d);
  const SdpaProblem& p = st->p;
  st->aux = fwd_aux(p);
  st->device = caps.ordinal;
  st->fixup = p.varlen || dense_has_empty_rows(p);
  if (caps.ordinal < 0) return std::shared_ptr<const void>(st);

  GraphInputs in = graph_inputs(p, st->aux);
  auto& g = in.g;
  auto& ragged = in.ragged;

  fe::graph::SDPA_attributes a;
  a.set_name("sdpa").set_generate_stats(p.has_lse).set_implementation(fe::AttentionImplementation_t::COMPOSITE);
  set_shared_attributes(*g, a, p, p.varlen);

  auto [o, stats] = g->sdpa(in.q, in.k, in.v, a);
  std::vector<std::int64_t> odim{p.batch, p.hq, p.sq, p.dv};
  o->set_output(true)
      .set_uid(kO)
      .set_dim(odim)
      .set_stride(norm_strides(odim, {p.varlen ? p.sq * p.o.s : p.o.b, p.o.h, p.o.s, 1}))
      .set_data_type(fe_type(p.dtype));
  if (p.varlen) o->set_ragged_offset(ragged[kRo]);
  if (p.has_lse) {
    std::vector<std::int64_t> sdim{p.batch, p.hq, p.sq, 1};
    stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT).set_dim(sdim);
    if (p.varlen) {  // workspace [Tq, Hq]
      stats->set_stride({p.sq * p.hq, 1, p.hq, 1}).set_ragged_offset(ragged[kRstats]);
    } else {
      stats->set_stride(norm_strides(sdim, {p.lse.b, p.lse.h, p.lse.s, 1}));
    }
  }

  auto ws = build_graph(*g, caps);
  if (!ws) return ws.error();
  st->graph = std::move(g);
  st->graph_workspace = ws.value();
  const std::size_t bound = fwd_workspace_bound(p);
  if (st->aux.bytes + st->graph_workspace > bound)
    return Status(Code::kNotSupported, "the cuDNN graph needs " + std::to_string(st->graph_workspace) +
                                           " workspace bytes, more than the " + std::to_string(bound - st->aux.bytes) +
                                           " the probe reported");
  return std::shared_ptr<const void>(st);
}

Expected<std::shared_ptr<const void>> prepare_fwd(const SdpaDescriptor& d, const DeviceCaps& caps) {
  return guarded_prepare([&] { return build_fwd(d, caps); });
}

Status launch_fwd(const void* state, const SdpaDescriptor&, const SdpaArgs& a, Workspace ws, cudaStream_t stream) {
  const auto& s = *static_cast<const FwdState*>(state);
  const SdpaProblem& p = s.p;
  BARACUDA_TRY(check_launch(p, s.graph != nullptr, s.device, a.cu_seqlens_q, a.cu_seqlens_k));
  const auto at = [&](std::size_t off) { return ws_at(ws, off); };

  BARACUDA_TRY(prepare_aux(p, s.aux, ws.data, a.cu_seqlens_q, a.cu_seqlens_k,
                            {{p.q.s, false}, {p.k.s, true}, {p.v.s, true}, {p.o.s, false}, {p.hq, false}},
                            a.seed, a.offset, a.philox_seed_offset, stream));

  std::unordered_map<std::int64_t, void*> pack{
      {kQ, const_cast<void*>(a.q)}, {kK, const_cast<void*>(a.k)}, {kV, const_cast<void*>(a.v)}, {kO, a.o}};
  if (p.has_lse) pack[kStats] = p.varlen ? static_cast<void*>(at(s.aux.stats)) : static_cast<void*>(a.lse);
  pack_shared(pack, p, s.aux, ws, a.bias, p.varlen);
  BARACUDA_TRY(execute_graph(s, pack, s.graph_workspace > 0 ? at(s.aux.bytes) : nullptr, stream));

  if (p.varlen && p.has_lse) {  // workspace [Tq, Hq] -> lse [Hq, Tq]
    StatsCopyParams c;
    c.src = reinterpret_cast<const float*>(at(s.aux.stats));
    c.dst = a.lse;
    c.n0 = p.hq;
    c.n1 = p.total_q;
    c.src_s0 = 1;
    c.src_s1 = p.hq;
    c.dst_s0 = p.lse.h;
    c.dst_s1 = p.lse.s;
    c.limit = a.cu_seqlens_q + p.batch;
    BARACUDA_TRY(launch_stats_copy(c, stream));
  }
  if (s.fixup) {
    EmptyRowsParams e;
    e.p = p;
    e.o = static_cast<std::uint16_t*>(a.o);
    e.lse = p.has_lse ? a.lse : nullptr;
    e.cu_q = p.varlen ? a.cu_seqlens_q : nullptr;
    e.cu_k = p.varlen ? a.cu_seqlens_k : nullptr;
    BARACUDA_TRY(launch_empty_rows(e, stream));
  }
  return Status::ok();
}

}  // namespace
}  // namespace cudnn_sdpa

std::span<const SdpaCandidate> cudnn_sdpa_forward_candidates() {
  static const SdpaCandidate table[] = {{&cudnn_sdpa::probe_fwd, &cudnn_sdpa::prepare_fwd, &cudnn_sdpa::launch_fwd}};
  return table;
}

std::optional<std::size_t> cudnn_sdpa_prepared_workspace(const SdpaCandidate& c, const void* state) {
  if (c.prepare != &cudnn_sdpa::prepare_fwd || state == nullptr) return std::nullopt;
  const auto& s = *static_cast<const cudnn_sdpa::FwdState*>(state);
  if (!s.graph) return std::nullopt;
  return s.aux.bytes + s.graph_workspace;
}

}  // namespace baracuda::attention
