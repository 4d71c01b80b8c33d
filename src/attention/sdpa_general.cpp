// The general SDPA backend (kernels/sdpa_general.cuh): one forward SKU and one backward SKU,
// "sdpa.fwd.general[<dtype>,<compute>]" / "sdpa.bwd.general[...]", for f64, f32, f16 and bf16,
// any head dims that fit the shared-memory tiles (rows per block shrink from 32 to 1 before
// it refuses), any strides and every option. Deterministic (no atomics). The backward's
// workspace holds delta = rowsum(dO * O) per query row (compute type), and for f64 the exact
// f64 lse per row (recomputed, since the forward's lse is f32).
#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "attention/sdpa_candidates.hpp"
#include "attention/sdpa_general_params.hpp"
#include "core/workspace_align.hpp"

namespace baracuda::attention {
namespace {

bool general_dtype(DType t) { return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }
std::size_t compute_bytes(DType t) { return t == DType::kF64 ? 8 : 4; }

KernelSku general_sku(DType t, Direction dir) {
  KernelSku s;
  s.family = "sdpa";
  s.direction = dir;
  s.impl = "general";
  s.in = s.out = t;
  s.compute = s.precision.accumulator = t == DType::kF64 ? DType::kF64 : DType::kF32;
  s.precision.deterministic = true;
  s.min_sm = 80;
  return s;
}

// The largest R in {32, 16, ..., 1} (no larger than the sequence needs) whose shared tiles
// (R * per_row + the 32 x 33 chunk) fit in `limit` bytes; 0 when none does.
int pick_rows(std::int64_t per_row_elems, std::size_t csize, std::size_t limit, std::int64_t seq, std::size_t* bytes) {
  int cap = 1;
  while (cap < 32 && cap < seq) cap *= 2;
  for (int r = cap; r >= 1; r /= 2) {
    const std::size_t b = (static_cast<std::size_t>(r * per_row_elems) + kTile * kTilePitch) * csize;
    if (b <= limit) {
      *bytes = b;
      return r;
    }
  }
  return 0;
}

std::size_t smem_limit(const DeviceCaps& caps) { return caps.smem_per_block_optin > 0 ? caps.smem_per_block_optin : 48 * 1024; }

// Grid of ceil(seq / rows) * heads * batch blocks must fit gridDim.x.
std::string grid_rejection(std::int64_t seq, int rows, std::int64_t heads, std::int64_t batch, const char* what) {
  const std::int64_t blocks = (seq + rows - 1) / rows * heads * batch;
  if (blocks > std::numeric_limits<std::int32_t>::max())
    return std::string(what) + " needs " + std::to_string(blocks) + " blocks > 2^31 - 1";
  return "";
}

std::string dtype_rejection(DType t) {
  if (general_dtype(t)) return "";
  return "q.dtype = " + std::string(dtype_name(t)) + " (general kernels take f64, f32, f16, bf16)";
}

struct Setup {
  std::string rejection;
  GeneralConfig cfg;
};

std::string size_rejection(const SdpaProblem& p, const char* what) {
  return std::string(what) + ": d_k = " + std::to_string(p.dk) + ", d_v = " + std::to_string(p.dv) +
         " do not fit the shared-memory tiles even with one row per block";
}

Setup forward_setup(const SdpaDescriptor& d, const DeviceCaps& caps) {
  Setup s;
  s.rejection = dtype_rejection(d.q.dtype);
  if (!s.rejection.empty()) return s;
  const SdpaProblem p = make_sdpa_problem(d);
  s.cfg.fwd_rows = pick_rows(p.dk + p.dv, compute_bytes(p.dtype), smem_limit(caps), p.sq, &s.cfg.fwd_smem);
  if (s.cfg.fwd_rows == 0) s.rejection = size_rejection(p, "forward");
  else s.rejection = grid_rejection(p.sq, s.cfg.fwd_rows, p.hq, p.batch, "forward");
  return s;
}

Setup backward_setup(const SdpaBackwardDescriptor& d, const DeviceCaps& caps) {
  Setup s;
  s.rejection = dtype_rejection(d.q.dtype);
  if (!s.rejection.empty()) return s;
  const SdpaProblem p = make_sdpa_problem(d);
  const std::size_t cb = compute_bytes(p.dtype), limit = smem_limit(caps);
  GeneralConfig& c = s.cfg;
  c.dq_rows = pick_rows(2 * p.dk + p.dv, cb, limit, p.sq, &c.dq_smem);
  c.dkdv_rows = pick_rows(2 * p.dk + 2 * p.dv, cb, limit, p.skv, &c.dkdv_smem);
  if (p.dtype == DType::kF64) c.stats_rows = pick_rows(p.dk, cb, limit, p.sq, &c.stats_smem);
  if (c.dq_rows == 0 || c.dkdv_rows == 0 || (p.dtype == DType::kF64 && c.stats_rows == 0)) {
    s.rejection = size_rejection(p, "backward");
    return s;
  }
  s.rejection = grid_rejection(p.sq, c.dq_rows, p.hq, p.batch, "backward dq");
  if (s.rejection.empty()) s.rejection = grid_rejection(p.skv, c.dkdv_rows, p.hkv, p.batch, "backward dk/dv");
  c.q_rows = p.varlen ? p.hq * p.total_q : p.batch * p.hq * p.sq;
  const std::size_t delta_bytes = align_workspace(static_cast<std::size_t>(c.q_rows) * cb);
  c.ws_lse_offset = delta_bytes;
  c.workspace = delta_bytes + (p.dtype == DType::kF64 ? align_workspace(static_cast<std::size_t>(c.q_rows) * 8) : 0);
  if (p.grad_bias.present) {
    const std::int64_t full[4] = {p.batch, p.hq, p.sq, p.skv};
    bool direct = true;
    std::int64_t n = 1;
    for (int k = 0; k < 4; ++k) {
      direct = direct && p.grad_bias.size[k] == full[k];
      n *= p.grad_bias.size[k];
    }
    if (!direct) c.grad_bias_elems = n;
  }
  return s;
}

template <class Launch>
Status with_dtype(DType t, Launch&& launch) {
  switch (t) {
    case DType::kF64: return launch(std::integral_constant<DType, DType::kF64>{});
    case DType::kF32: return launch(std::integral_constant<DType, DType::kF32>{});
    case DType::kF16: return launch(std::integral_constant<DType, DType::kF16>{});
    case DType::kBF16: return launch(std::integral_constant<DType, DType::kBF16>{});
    default: return Status(Code::kNotBuilt, "sdpa general: no kernels for dtype " + std::string(dtype_name(t)));
  }
}

template <class Desc, class Args, Direction kDir>
struct GeneralCandidate {
  static Setup setup(const Desc& d, const DeviceCaps& caps) {
    if constexpr (kDir == Direction::kForward) return forward_setup(d, caps);
    else return backward_setup(d, caps);
  }
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    typename Candidate<Desc, Args>::Probe pr;
    pr.sku = general_sku(d.q.dtype, kDir);
    Setup s = setup(d, caps);
    pr.rejection = s.rejection;
    pr.workspace_bytes = s.cfg.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(std::make_shared<GeneralConfig>(setup(d, caps).cfg));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t stream);
};

void fill_common(GeneralParams& g, const auto& a) {
  g.q = a.q;
  g.k = a.k;
  g.v = a.v;
  g.bias = a.bias;
  g.mask = a.mask;
  g.alibi = a.alibi_slopes;
  g.cu_q = a.cu_seqlens_q;
  g.cu_k = a.cu_seqlens_k;
  g.seed = a.seed;
  g.offset = a.offset;
  g.seed_ptr = a.philox_seed_offset;
}

template <>
Status GeneralCandidate<SdpaDescriptor, SdpaArgs, Direction::kForward>::launch(const void* state, const SdpaDescriptor& d,
                                                                               const SdpaArgs& a, Workspace,
                                                                               cudaStream_t stream) {
  const auto& cfg = *static_cast<const GeneralConfig*>(state);
  GeneralParams g;
  g.p = make_sdpa_problem(d);
  fill_common(g, a);
  g.o = a.o;
  g.lse = d.lse.rank > 0 ? a.lse : nullptr;
  return with_dtype(d.q.dtype, [&](auto t) { return launch_sdpa_general_fwd<decltype(t)::value>(g, cfg, stream); });
}

template <>
Status GeneralCandidate<SdpaBackwardDescriptor, SdpaBackwardArgs, Direction::kBackward>::launch(
    const void* state, const SdpaBackwardDescriptor& d, const SdpaBackwardArgs& a, Workspace ws, cudaStream_t stream) {
  const auto& cfg = *static_cast<const GeneralConfig*>(state);
  GeneralParams g;
  g.p = make_sdpa_problem(d);
  fill_common(g, a);
  g.o_in = a.o;
  g.grad_o = a.grad_o;
  g.lse_in = a.lse;
  g.grad_q = a.grad_q;
  g.grad_k = a.grad_k;
  g.grad_v = a.grad_v;
  g.grad_bias = d.grad_bias.rank > 0 ? a.grad_bias : nullptr;
  g.grad_bias_direct = g.p.grad_bias.present && cfg.grad_bias_elems == 0;
  g.ws_delta = ws.data;
  if (d.q.dtype == DType::kF64) g.ws_lse = static_cast<char*>(ws.data) + cfg.ws_lse_offset;
  return with_dtype(d.q.dtype, [&](auto t) { return launch_sdpa_general_bwd<decltype(t)::value>(g, cfg, stream); });
}

using FwdCandidate = GeneralCandidate<SdpaDescriptor, SdpaArgs, Direction::kForward>;
using BwdCandidate = GeneralCandidate<SdpaBackwardDescriptor, SdpaBackwardArgs, Direction::kBackward>;
const SdpaCandidate kForward[] = {{&FwdCandidate::probe, &FwdCandidate::prepare, &FwdCandidate::launch}};
const SdpaBackwardCandidate kBackward[] = {{&BwdCandidate::probe, &BwdCandidate::prepare, &BwdCandidate::launch}};

}  // namespace

std::span<const SdpaCandidate> general_sdpa_forward_candidates() { return kForward; }
std::span<const SdpaBackwardCandidate> general_sdpa_backward_candidates() { return kBackward; }

}  // namespace baracuda::attention
