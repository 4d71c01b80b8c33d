// The flash SDPA backend's candidate tables (our kernels, kernels/flash_*.cuh; launchers in
// flash_fwd_d<D>.cu / flash_bwd_d<D>.cu, one TU per head dim and direction).
//
// Forward:  "flash_wgmma_ws"    sm_90a warp-specialized TMA + wgmma forward (FA3 scheme), d64 / d128,
//                               plain scores, dense TMA-addressable layouts; first where it accepts.
//           "flash_mma"         FlashAttention-2 forward, mma.sync, sm_80+.
//           "flash_wgmma"       sm_90a wgmma forward, d64 / d128, plain scores (EXPERIMENTAL:
//                               ordered last, so it runs only when forced).
// Backward: "flash_mma_atomic"  dK / dV per KV block, dQ by f32 atomics into the workspace
//                               (not deterministic), then converted;
//           "flash_mma_det"     the same dK / dV kernel, dQ by a separate per-query-block kernel
//                               (deterministic; recomputes P).
// All take f16 / bf16 with Dk == Dv in {64, 96, 128, 192, 256}, the head dim contiguous and every
// row 16-byte aligned; causal / window / GQA / softcap / ALiBi / additive bias / dropout /
// varlen. They refuse bool masks, grad_bias, f32 / f64 / fp8 and other head dims (the general
// SKUs take those).
#include <algorithm>
#include <memory>
#include <string>

#include "attention/flash_params.hpp"
#include "attention/flash_ws.hpp"
#include "attention/sdpa_candidates.hpp"
#include "attention/sdpa_problem.hpp"
#include "core/workspace_align.hpp"

namespace baracuda::attention {

std::size_t flash_bwd_workspace_bytes(std::int64_t heads_q, std::int64_t rows, int head_dim, bool deterministic) {
  std::size_t bytes = align_workspace(static_cast<std::size_t>(heads_q * rows) * sizeof(float));
  if (!deterministic) bytes += align_workspace(static_cast<std::size_t>(heads_q * rows * head_dim) * sizeof(float));
  return bytes;
}

namespace {

constexpr std::int64_t kMaxGrid = 65535;
constexpr std::int64_t kMaxSeq = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kWindowClamp = std::int64_t{1} << 30;

std::string s64(std::int64_t v) { return std::to_string(v); }

bool flash_head_dim(std::int64_t d) { return d == 64 || d == 96 || d == 128 || d == 192 || d == 256; }

// A q / k / v / o-like operand: the head dim contiguous, every other stride (of a dim with more
// than one element) a multiple of 8 elements and non-negative, the pointer 16-byte aligned.
std::string operand_rejection(const TensorLayout& t, const char* name) {
  if (t.rank == 0) return "";
  const int last = t.rank - 1;
  if (t.shape[last] > 1 && t.strides[last] != 1)
    return std::string(name) + ".strides[" + s64(last) + "] = " + s64(t.strides[last]) +
           ": the flash SKUs need a contiguous head dim";
  for (int i = 0; i < last; ++i) {
    if (t.shape[i] <= 1) continue;
    if (t.strides[i] < 0)
      return std::string(name) + ".strides[" + s64(i) + "] = " + s64(t.strides[i]) + ": the flash SKUs take no negative strides";
    if (t.strides[i] % 8 != 0)
      return std::string(name) + ".strides[" + s64(i) + "] = " + s64(t.strides[i]) +
             " elements: the flash SKUs need 16-byte aligned rows (strides a multiple of 8)";
  }
  if (t.alignment < 16) return std::string(name) + ".alignment = " + s64(t.alignment) + " bytes: the flash SKUs need 16";
  return "";
}

struct Shared {  // the fields forward and backward probes read
  const TensorLayout *q, *k, *v, *o, *lse, *bias, *mask, *alibi;
  const SdpaOptions* opt;
};

// Reasons shared by the forward and backward probes ("" = accepts).
std::string common_rejection(const Shared& d, const SdpaProblem& p, const DeviceCaps& caps) {
  const DType t = d.q->dtype;
  if (t != DType::kF16 && t != DType::kBF16)
    return std::string("q.dtype = ") + std::string(dtype_name(t)) + ": the flash SKUs take f16 and bf16 (the general SKUs take the rest)";
  for (auto [x, name] : {std::pair{d.k, "k"}, {d.v, "v"}, {d.o, "o"}})
    if (x->dtype != t) return std::string(name) + ".dtype = " + std::string(dtype_name(x->dtype)) + " differs from q.dtype";
  if (p.dk != p.dv) return "Dk = " + s64(p.dk) + " != Dv = " + s64(p.dv) + ": the flash SKUs need equal head dims";
  if (!flash_head_dim(p.dk)) return "head dim = " + s64(p.dk) + ": the flash SKUs take 64, 96, 128, 192, 256";
  if (d.mask->rank > 0) return "mask given: the flash SKUs take no bool mask (use an additive bias or the general SKU)";
  if (d.lse->rank > 0 && d.lse->dtype != DType::kF32)
    return std::string("lse.dtype = ") + std::string(dtype_name(d.lse->dtype)) + ": expected f32";
  if (p.hkv <= 0 || p.hq % p.hkv != 0) return "Hq = " + s64(p.hq) + " is not a multiple of Hkv = " + s64(p.hkv);
  if (p.hq > kMaxGrid) return "Hq = " + s64(p.hq) + " > 65535 (grid y)";
  if (p.batch > kMaxGrid) return "batch = " + s64(p.batch) + " > 65535 (grid z)";
  if (p.sq > kMaxSeq || p.skv > kMaxSeq) return "sequence length > 2^31 - 1";
  if (d.bias->rank > 0) {
    if (d.bias->dtype != DType::kF32 && d.bias->dtype != t)
      return std::string("bias.dtype = ") + std::string(dtype_name(d.bias->dtype)) + ": the flash SKUs take f32 or q's dtype";
    if (d.opt->varlen) return "bias with varlen: the flash SKUs take a bias on dense batches only";
  }
  if (d.alibi->rank > 0 && d.alibi->dtype != DType::kF32)
    return std::string("alibi_slopes.dtype = ") + std::string(dtype_name(d.alibi->dtype)) + ": expected f32";
  if (!(d.opt->dropout_p >= 0 && d.opt->dropout_p < 1)) return "dropout_p outside [0, 1)";
  for (auto [x, name] : {std::pair{d.q, "q"}, {d.k, "k"}, {d.v, "v"}, {d.o, "o"}}) {
    std::string r = operand_rejection(*x, name);
    if (!r.empty()) return r;
  }
  if (caps.sm < 80) return "needs sm80+ (mma.sync bf16 / cp.async)";
  return "";
}

// The kernels' shared memory against the device's opt-in limit (sm_89 has 99 KB).
std::string smem_rejection(int d, bool backward, bool deterministic, const DeviceCaps& caps) {
  int need = FlashTiles::fwd_smem(d);
  if (backward) need = deterministic ? std::max(FlashTiles::bwd_smem(d), FlashTiles::dq_smem(d)) : FlashTiles::bwd_smem(d);
  if (caps.smem_per_block_optin > 0 && static_cast<std::size_t>(need) > caps.smem_per_block_optin)
    return "head dim " + s64(d) + " needs " + s64(need) + " bytes of shared memory per block, " + caps.arch_name() +
           " allows " + s64(static_cast<std::int64_t>(caps.smem_per_block_optin));
  return "";
}

int clamp_window(std::int64_t w) { return w < 0 ? -1 : static_cast<int>(std::min(w, kWindowClamp)); }

void fill_mask_params(FlashMaskParams& m, const SdpaProblem& p) {
  m.batch = static_cast<int>(p.batch);
  m.heads_q = static_cast<int>(p.hq);
  m.group = static_cast<int>(p.group);
  m.seqlen_q = static_cast<int>(p.sq);
  m.seqlen_k = static_cast<int>(p.skv);
  m.window_left = clamp_window(p.window_left);
  m.window_right = clamp_window(p.window_right);
  m.bottom_right = p.bottom_right ? 1 : 0;
  m.scale = static_cast<float>(p.scale);
  m.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);
  m.softcap = static_cast<float>(p.softcap);
  m.alibi_b = p.alibi_b;
  m.alibi_h = p.alibi_h;
  m.bias_f32 = p.bias.present && p.bias_dtype == DType::kF32 ? 1 : 0;
  m.bias_b = p.bias.stride[0];
  m.bias_h = p.bias.stride[1];
  m.bias_i = p.bias.stride[2];
  m.bias_j = p.bias.stride[3];
  m.dropout_p = static_cast<float>(p.dropout_p);
  m.drop_threshold = p.dropout_threshold;
  m.drop_scale = static_cast<float>(p.dropout_scale);
  m.extras = (p.softcap > 0 || p.has_alibi || p.bias.present || p.dropout_p > 0) ? 1 : 0;
}

void fill_fwd_params(FlashFwdParams& f, const SdpaProblem& p) {
  fill_mask_params(f, p);
  f.q_b = p.q.b, f.q_h = p.q.h, f.q_s = p.q.s;
  f.k_b = p.k.b, f.k_h = p.k.h, f.k_s = p.k.s;
  f.v_b = p.v.b, f.v_h = p.v.h, f.v_s = p.v.s;
  f.o_b = p.o.b, f.o_h = p.o.h, f.o_s = p.o.s;
  f.lse_b = p.lse.b, f.lse_h = p.lse.h, f.lse_s = p.lse.s;
  f.bf16 = p.dtype == DType::kBF16 ? 1 : 0;
}

template <class Args>
void fill_mask_pointers(FlashMaskParams& m, const Args& a, bool varlen) {
  m.cu_q = varlen ? a.cu_seqlens_q : nullptr;
  m.cu_k = varlen ? a.cu_seqlens_k : nullptr;
  m.alibi = a.alibi_slopes;
  m.bias = a.bias;
  m.seed = a.seed;
  m.offset = a.offset;
  m.seed_offset = a.philox_seed_offset;
}

KernelSku flash_sku(DType t, Direction dir, const char* impl, bool deterministic) {
  KernelSku s;
  s.family = "sdpa";
  s.direction = dir;
  s.impl = impl;
  s.in = t == DType::kBF16 ? DType::kBF16 : DType::kF16;
  s.compute = DType::kF32;
  s.out = s.in;
  s.min_sm = 80;
  s.backend = Backend::kHand;
  s.precision.accumulator = DType::kF32;
  s.precision.deterministic = deterministic;
  s.graph_capturable = true;
  return s;
}

template <class P, class F>
Status dispatch_head_dim(int d, const P& params, cudaStream_t stream, F&& launch) {
  switch (d) {
    case 64: return launch(std::integral_constant<int, 64>{}, params, stream);
    case 96: return launch(std::integral_constant<int, 96>{}, params, stream);
    case 128: return launch(std::integral_constant<int, 128>{}, params, stream);
    case 192: return launch(std::integral_constant<int, 192>{}, params, stream);
    case 256: return launch(std::integral_constant<int, 256>{}, params, stream);
    default: return Status(Code::kInternal, "flash sdpa: head dim " + std::to_string(d) + " has no kernel");
  }
}

// ---------------------------------------------------------------- forward
struct FwdState {
  FlashFwdParams params;  // everything but the pointers
  int head_dim = 0;
  bool varlen = false;
  int sm_count = 0;  // flash_wgmma_ws: one persistent CTA per SM
};

SdpaCandidate::Probe fwd_probe(const SdpaDescriptor& d, const DeviceCaps& caps) {
  SdpaCandidate::Probe pr;
  pr.sku = flash_sku(d.q.dtype, Direction::kForward, "flash_mma", true);
  const SdpaProblem p = make_sdpa_problem(d);
  pr.rejection = common_rejection({&d.q, &d.k, &d.v, &d.o, &d.lse, &d.bias, &d.mask, &d.alibi_slopes, &d.options}, p, caps);
  if (pr.rejection.empty()) pr.rejection = smem_rejection(static_cast<int>(p.dk), false, false, caps);
  return pr;
}

Expected<std::shared_ptr<const void>> fwd_prepare(const SdpaDescriptor& d, const DeviceCaps& caps) {
  auto st = std::make_shared<FwdState>();
  const SdpaProblem p = make_sdpa_problem(d);
  fill_fwd_params(st->params, p);
  st->head_dim = static_cast<int>(p.dk);
  st->varlen = p.varlen;
  st->sm_count = caps.sm_count;
  return std::shared_ptr<const void>(std::move(st));
}

Status fwd_launch(const void* state, const SdpaDescriptor&, const SdpaArgs& a, Workspace, cudaStream_t stream) {
  const auto& st = *static_cast<const FwdState*>(state);
  FlashFwdParams f = st.params;
  fill_mask_pointers(f, a, st.varlen);
  f.q = a.q, f.k = a.k, f.v = a.v, f.o = a.o, f.lse = a.lse;
  return dispatch_head_dim(st.head_dim, f, stream,
                           [](auto dim, const FlashFwdParams& p, cudaStream_t s) { return launch_flash_fwd<dim.value>(p, s); });
}

// The sm_90a wgmma forward (EXPERIMENTAL until the H200 tests pass: ordered after flash_mma,
// so only a forced SKU runs it): d64 / d128, no softcap / bias / ALiBi / dropout.
SdpaCandidate::Probe wgmma_probe(const SdpaDescriptor& d, const DeviceCaps& caps) {
  SdpaCandidate::Probe pr;
  pr.sku = flash_sku(d.q.dtype, Direction::kForward, "flash_wgmma", true);
  pr.sku.min_sm = 90;
  pr.sku.arch_specific = true;
  const SdpaProblem p = make_sdpa_problem(d);
  pr.rejection = common_rejection({&d.q, &d.k, &d.v, &d.o, &d.lse, &d.bias, &d.mask, &d.alibi_slopes, &d.options}, p, caps);
  if (pr.rejection.empty() && p.dk != 64 && p.dk != 128)
    pr.rejection = "head dim = " + s64(p.dk) + ": the wgmma kernel takes 64 and 128 (flash_mma takes the rest)";
  if (pr.rejection.empty() && (p.softcap > 0 || p.has_alibi || p.bias.present || p.dropout_p > 0))
    pr.rejection = "softcap / bias / alibi / dropout: the wgmma kernel has the plain score path only (flash_mma takes them)";
  return pr;
}

// The launch parameters of a forward run: the prepared state plus the run's pointers.
FlashFwdParams fwd_params_of(const void* state, const SdpaArgs& a) {
  const auto& st = *static_cast<const FwdState*>(state);
  FlashFwdParams f = st.params;
  fill_mask_pointers(f, a, st.varlen);
  f.q = a.q, f.k = a.k, f.v = a.v, f.o = a.o, f.lse = a.lse;
  return f;
}

Status wgmma_launch(const void* state, const SdpaDescriptor&, const SdpaArgs& a, Workspace, cudaStream_t stream) {
  const int d = static_cast<const FwdState*>(state)->head_dim;
  const FlashFwdParams f = fwd_params_of(state, a);
  return d == 64 ? launch_flash_fwd_sm90<64>(f, stream) : launch_flash_fwd_sm90<128>(f, stream);
}

// The warp-specialized sm_90a forward (TMA producer warpgroup + 2 wgmma consumer warpgroups,
// persistent CTAs, kernels/flash_fwd_sm90_ws.cuh; first in the flash table): what flash_wgmma
// takes, minus varlen, with operands TMA can address (dense [B, H, S, D], no zero strides on dims
// longer than 1). Workspace: the kernel's tile counter (one int).
SdpaCandidate::Probe wgmma_ws_probe(const SdpaDescriptor& d, const DeviceCaps& caps) {
  SdpaCandidate::Probe pr = wgmma_probe(d, caps);
  pr.sku.impl = "flash_wgmma_ws";
  if (!pr.rejection.empty()) return pr;
  const SdpaProblem p = make_sdpa_problem(d);
  if (p.varlen) {
    pr.rejection = "varlen: the TMA kernel takes dense batches only (flash_wgmma / flash_mma take varlen)";
    return pr;
  }
  const std::int64_t hkv = p.hkv;
  const struct {
    const Strides4* st;
    std::int64_t s, h;
    const char* name;
  } ops[] = {{&p.q, p.sq, p.hq, "q"}, {&p.k, p.skv, hkv, "k"}, {&p.v, p.skv, hkv, "v"}};
  constexpr std::int64_t kMaxStrideBytes = std::int64_t{1} << 40;
  for (const auto& o : ops) {
    const std::int64_t sizes[3] = {p.batch, o.h, o.s}, strides[3] = {o.st->b, o.st->h, o.st->s};
    const char* dims[3] = {"batch", "head", "sequence"};
    for (int i = 0; i < 3; ++i) {
      if (sizes[i] <= 1) continue;
      if (strides[i] <= 0 || strides[i] * 2 >= kMaxStrideBytes) {
        pr.rejection = std::string(o.name) + " " + dims[i] + " stride = " + s64(strides[i]) +
                       " elements: TMA needs a positive stride below 2^40 bytes (flash_wgmma takes it)";
        return pr;
      }
    }
  }
  // The kernel counts its work tiles (query blocks of 128 x heads x batch) in int.
  const std::int64_t work_tiles = p.batch * p.hq * ((p.sq + 127) / 128);
  if (work_tiles >= (std::int64_t{1} << 31)) {
    pr.rejection = "batch x heads x query blocks of 128 = " + s64(work_tiles) +
                   ": the persistent kernel counts its work tiles in 32 bits (flash_wgmma takes it)";
    return pr;
  }
  pr.workspace_bytes = align_workspace(sizeof(int));
  return pr;
}

Status wgmma_ws_launch(const void* state, const SdpaDescriptor&, const SdpaArgs& a, Workspace ws, cudaStream_t stream) {
  const auto& st = *static_cast<const FwdState*>(state);
  const FlashFwdParams f = fwd_params_of(state, a);
  int* counter = static_cast<int*>(ws.data);
  return st.head_dim == 64 ? launch_flash_fwd_sm90_ws<64>(f, counter, st.sm_count, stream)
                           : launch_flash_fwd_sm90_ws<128>(f, counter, st.sm_count, stream);
}

// Order by measurement (H200 session 7 run 3, bf16 B8 H16 S4096 d128): flash_wgmma_ws 547 / 568
// TFLOP/s causal / non-causal and 322 at d64 (B16 S2048) against flash_mma's 186 / 100 / 174, so
// ws comes first where it accepts; flash_wgmma (the experimental single-group kernel) stays last.
constexpr SdpaCandidate kForward[] = {{&wgmma_ws_probe, &fwd_prepare, &wgmma_ws_launch},
                                      {&fwd_probe, &fwd_prepare, &fwd_launch},
                                      {&wgmma_probe, &fwd_prepare, &wgmma_launch}};

// ---------------------------------------------------------------- backward
struct BwdState {
  FlashBwdParams params;  // everything but the pointers
  int head_dim = 0;
  bool varlen = false;
  std::size_t delta_bytes = 0;  // offset of dq_accum in the workspace
};

std::int64_t bwd_rows(const SdpaProblem& p) { return p.varlen ? p.total_q : p.batch * p.sq; }

template <bool kDeterministic>
SdpaBackwardCandidate::Probe bwd_probe(const SdpaBackwardDescriptor& d, const DeviceCaps& caps) {
  SdpaBackwardCandidate::Probe pr;
  pr.sku = flash_sku(d.q.dtype, Direction::kBackward, kDeterministic ? "flash_mma_det" : "flash_mma_atomic", kDeterministic);
  const SdpaProblem p = make_sdpa_problem(d);
  pr.rejection = common_rejection({&d.q, &d.k, &d.v, &d.o, &d.lse, &d.bias, &d.mask, &d.alibi_slopes, &d.options}, p, caps);
  if (pr.rejection.empty()) pr.rejection = smem_rejection(static_cast<int>(p.dk), true, kDeterministic, caps);
  if (pr.rejection.empty() && d.lse.rank == 0) pr.rejection = "lse not given: the backward needs the forward's lse";
  if (pr.rejection.empty() && d.grad_bias.rank > 0)
    pr.rejection = "grad_bias wanted: the flash SKUs do not return the bias gradient (the general SKU does)";
  for (auto [x, name] : {std::pair{&d.grad_o, "grad_o"}, {&d.grad_q, "grad_q"}, {&d.grad_k, "grad_k"}, {&d.grad_v, "grad_v"}}) {
    if (!pr.rejection.empty()) break;
    if (x->dtype != d.q.dtype)
      pr.rejection = std::string(name) + ".dtype = " + std::string(dtype_name(x->dtype)) + " differs from q.dtype";
    else
      pr.rejection = operand_rejection(*x, name);
  }
  if (pr.rejection.empty()) pr.workspace_bytes = flash_bwd_workspace_bytes(p.hq, bwd_rows(p), static_cast<int>(p.dk), kDeterministic);
  return pr;
}

template <bool kDeterministic>
Expected<std::shared_ptr<const void>> bwd_prepare(const SdpaBackwardDescriptor& d, const DeviceCaps&) {
  auto st = std::make_shared<BwdState>();
  const SdpaProblem p = make_sdpa_problem(d);
  FlashBwdParams& f = st->params;
  fill_fwd_params(f, p);
  f.do_b = p.grad_o.b, f.do_h = p.grad_o.h, f.do_s = p.grad_o.s;
  f.dq_b = p.grad_q.b, f.dq_h = p.grad_q.h, f.dq_s = p.grad_q.s;
  f.dk_b = p.grad_k.b, f.dk_h = p.grad_k.h, f.dk_s = p.grad_k.s;
  f.dv_b = p.grad_v.b, f.dv_h = p.grad_v.h, f.dv_s = p.grad_v.s;
  f.rows = bwd_rows(p);
  f.deterministic = kDeterministic ? 1 : 0;
  st->head_dim = static_cast<int>(p.dk);
  st->varlen = p.varlen;
  st->delta_bytes = flash_bwd_workspace_bytes(p.hq, f.rows, static_cast<int>(p.dk), true);
  return std::shared_ptr<const void>(std::move(st));
}

Status bwd_launch(const void* state, const SdpaBackwardDescriptor&, const SdpaBackwardArgs& a, Workspace ws,
                  cudaStream_t stream) {
  const auto& st = *static_cast<const BwdState*>(state);
  FlashBwdParams f = st.params;
  fill_mask_pointers(f, a, st.varlen);
  f.q = a.q, f.k = a.k, f.v = a.v, f.o = const_cast<void*>(a.o), f.lse = const_cast<float*>(a.lse);
  f.dout = a.grad_o, f.dq = a.grad_q, f.dk = a.grad_k, f.dv = a.grad_v;
  f.delta = static_cast<float*>(ws.data);
  f.dq_accum = f.deterministic ? nullptr : reinterpret_cast<float*>(static_cast<char*>(ws.data) + st.delta_bytes);
  return dispatch_head_dim(st.head_dim, f, stream,
                           [](auto dim, const FlashBwdParams& p, cudaStream_t s) { return launch_flash_bwd<dim.value>(p, s); });
}

constexpr SdpaBackwardCandidate kBackward[] = {
    {&bwd_probe<false>, &bwd_prepare<false>, &bwd_launch},
    {&bwd_probe<true>, &bwd_prepare<true>, &bwd_launch},
};

}  // namespace

std::span<const SdpaCandidate> flash_sdpa_forward_candidates() { return kForward; }
std::span<const SdpaBackwardCandidate> flash_sdpa_backward_candidates() { return kBackward; }

}  // namespace baracuda::attention
