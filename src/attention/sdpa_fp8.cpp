// The e4m3 SDPA forward, SKU "sdpa.fwd.fp8_dequant[e4m3,f32].sm80+": a composite candidate
// (as GemmBackwardPlan's pair) that runs the attention through an inner bf16 plan.
//
//   1. dequantize q, k, v (e4m3, any strides) into contiguous bf16 buffers of the workspace:
//      bf16(stored * *args.fp8.descale_{q,k,v}) (sdpa_fp8_kernels.cu);
//   2. run the inner plan on them with the caller's lse, bias (f32), mask, ALiBi slopes,
//      cu_seqlens and dropout seed, into a contiguous bf16 o buffer. Its descriptor is the
//      caller's with q, k, v, o replaced by contiguous bf16 tensors of the same shapes; it is
//      SdpaPlan's choice in SdpaPlan's table and FlashSdpaPlan's (the fused SKUs) in
//      FlashSdpaPlan's, so the Flash plan never materializes Sq x Skv either;
//   3. quantize o into the caller's e4m3 o: satfinite e4m3(o * *args.fp8.scale_o); when
//      args.fp8.amax_o is given, amax_o = max |o| of the unscaled (bf16) o.
// The probabilities stay in f32 / bf16 inside the inner plan: descale_s / scale_s are not read
// and amax_s is not produced (sdpa.cpp's run-time checks refuse a non-null amax_s and null
// descale_q / descale_k / descale_v / scale_o before anything is launched).
//
// Workspace: [q | k | v | o bf16 buffers, each rounded up to 256 bytes | the inner plan's]. The
// probe reports the buffers (the inner plan is chosen only in prepare); select() then takes the
// exact sum from the prepared state (fp8_sdpa_prepare_with_preference).
// Probe: q e4m3 (validation makes k, v, o e4m3 too), a bias only in f32; every other option is
// passed through to the inner plan's candidates, whose refusals become this one's. Preference:
// the inner select gets the caller's (skip_skus, backends, math, the workspace cap less the
// buffers) with force_sku cleared (it named this SKU) and deterministic / graph-capturable
// required, so that this SKU's claims hold whichever inner SKU runs.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "attention/sdpa_candidates.hpp"
#include "attention/sdpa_fp8.hpp"
#include "core/workspace_align.hpp"

namespace baracuda::attention {
namespace {

constexpr const char* kImpl = "fp8_dequant";

KernelSku fp8_sku() {
  KernelSku s;
  s.family = "sdpa";
  s.direction = Direction::kForward;
  s.impl = kImpl;
  s.in = s.out = DType::kE4M3;
  s.compute = s.precision.accumulator = DType::kF32;
  s.min_sm = 80;
  s.backend = Backend::kHand;
  s.precision.deterministic = true;  // the inner select requires it; amax is order-independent
  s.graph_capturable = true;         // likewise
  return s;
}

TensorLayout bf16_like(const TensorLayout& t) {
  return TensorLayout::contiguous(DType::kBF16, t.shape_span(), static_cast<int>(kWorkspaceAlignment));
}

SdpaDescriptor inner_descriptor(const SdpaDescriptor& d) {
  SdpaDescriptor in = d;
  in.q = bf16_like(d.q);
  in.k = bf16_like(d.k);
  in.v = bf16_like(d.v);
  in.o = bf16_like(d.o);
  return in;
}

// Byte offsets of the workspace regions.
struct Regions {
  std::size_t q = 0, k = 0, v = 0, o = 0;
  std::size_t inner = 0;  // = the bf16 buffers' bytes
};
Regions regions_of(const SdpaDescriptor& d) {
  const auto bytes = [](const TensorLayout& t) { return align_workspace(static_cast<std::size_t>(t.numel()) * 2); };
  Regions r;
  r.k = r.q + bytes(d.q);
  r.v = r.k + bytes(d.k);
  r.o = r.v + bytes(d.v);
  r.inner = r.o + bytes(d.o);
  return r;
}

Fp8Strided strided_of(const TensorLayout& t) {
  const TensorLayout* ops[1] = {&t};
  const CollapsedDims c = collapse_dims(std::span<const TensorLayout* const>(ops, 1));
  Fp8Strided s;
  s.numel = t.numel();
  s.rank = s.numel > 0 ? c.rank : 0;
  std::int64_t reach = 0;  // largest |partial offset| the index sums (all dims' extents)
  for (int i = 0; i < s.rank; ++i) {
    s.shape[i] = c.shape[i];
    s.strides[i] = c.strides[0][i];
    reach += (c.shape[i] - 1) * (c.strides[0][i] < 0 ? -c.strides[0][i] : c.strides[0][i]);
  }
  constexpr std::int64_t kLimit = std::int64_t{1} << 31;
  s.index32 = s.numel < kLimit && reach < kLimit;
  return s;
}

// "" when some inner candidate accepts the dequantized problem (on `caps`, without a
// preference), else each one's reason.
std::string inner_rejection(const SdpaDescriptor& in, const DeviceCaps& caps, bool fused) {
  auto reports = fused ? FlashSdpaPlan::candidates(caps, FlashSdpaDescriptor{in}) : SdpaPlan::candidates(caps, in);
  if (!reports) return "the bf16 inner descriptor is refused: " + reports.error().message();
  std::string why;
  for (const CandidateReport& r : *reports) {
    if (r.sku.impl == kImpl) continue;
    if (r.rejection.empty()) return "";
    why += "; " + r.sku.name() + ": " + r.rejection;
  }
  return std::string("no bf16 ") + (fused ? "fused SKU" : "SKU") + " takes the dequantized problem" +
         (why.empty() ? std::string() : " (" + why.substr(2) + ")");
}

template <bool kFused>
SdpaCandidate::Probe probe(const SdpaDescriptor& d, const DeviceCaps& caps) {
  SdpaCandidate::Probe pr;
  pr.sku = fp8_sku();
  if (d.q.dtype != DType::kE4M3) {
    pr.rejection = "q.dtype = " + std::string(dtype_name(d.q.dtype)) + ": the fp8 SKU takes e4m3 q, k, v, o";
    return pr;
  }
  if (d.bias.rank > 0 && d.bias.dtype != DType::kF32) {
    pr.rejection = "bias.dtype = " + std::string(dtype_name(d.bias.dtype)) +
                   ": the fp8 SKU takes an f32 bias (an e4m3 bias would need a descale of its own)";
    return pr;
  }
  pr.rejection = inner_rejection(inner_descriptor(d), caps, kFused);
  if (pr.rejection.empty()) pr.workspace_bytes = regions_of(d).inner;
  return pr;
}

struct State {
  SdpaInnerPlan inner;
  Regions at;
  Fp8DequantParams dequant;  // layouts; pointers filled per run
  Fp8QuantParams quant;
};

Expected<PreparedCandidate> prepare_pref(const SdpaDescriptor& d, const DeviceCaps& caps, const PlanPreference& pref,
                                         bool fused) {
  auto st = std::make_shared<State>();
  st->at = regions_of(d);
  if (st->at.inner > pref.max_workspace_bytes)
    return Status(Code::kNotSupported, "the bf16 buffers need " + std::to_string(st->at.inner) +
                                           " bytes of workspace > max_workspace_bytes = " +
                                           std::to_string(pref.max_workspace_bytes));
  PlanPreference sub = pref;
  sub.force_sku.clear();  // the preference named this SKU; the inner plan takes its own best
  sub.deterministic = true;
  sub.require_graph_capturable = true;
  sub.max_workspace_bytes = pref.max_workspace_bytes - st->at.inner;
  auto inner = select_sdpa_inner(caps, inner_descriptor(d), sub, fused);
  if (!inner) return Status(inner.error()).add_context("the bf16 inner plan");
  st->inner = std::move(inner.value());
  st->dequant.op[0].layout = strided_of(d.q);
  st->dequant.op[1].layout = strided_of(d.k);
  st->dequant.op[2].layout = strided_of(d.v);
  st->quant.layout = strided_of(d.o);
  const std::size_t ws = st->at.inner + st->inner.workspace_bytes;
  return PreparedCandidate{std::shared_ptr<const void>(std::move(st)), ws};
}

template <bool kFused>
Expected<std::shared_ptr<const void>> prepare(const SdpaDescriptor& d, const DeviceCaps& caps) {
  auto p = prepare_pref(d, caps, PlanPreference{}, kFused);
  if (!p) return p.error();
  return std::move(p.value().state);
}

Status launch(const void* state, const SdpaDescriptor&, const SdpaArgs& a, Workspace ws, cudaStream_t stream) {
  const auto& st = *static_cast<const State*>(state);
  if (st.inner.launch == nullptr) return Status(Code::kInternal, "sdpa fp8: the inner plan is missing");
  char* base = static_cast<char*>(ws.data);
  auto* q16 = reinterpret_cast<std::uint16_t*>(base + st.at.q);
  auto* k16 = reinterpret_cast<std::uint16_t*>(base + st.at.k);
  auto* v16 = reinterpret_cast<std::uint16_t*>(base + st.at.v);
  auto* o16 = reinterpret_cast<std::uint16_t*>(base + st.at.o);
  Fp8DequantParams dq = st.dequant;
  const void* src[3] = {a.q, a.k, a.v};
  std::uint16_t* dst[3] = {q16, k16, v16};
  const float* descale[3] = {a.fp8.descale_q, a.fp8.descale_k, a.fp8.descale_v};
  for (int t = 0; t < 3; ++t) {
    dq.op[t].src = static_cast<const std::uint8_t*>(src[t]);
    dq.op[t].dst = dst[t];
    dq.op[t].descale = descale[t];
  }
  BARACUDA_TRY(launch_fp8_dequant(dq, stream));
  SdpaArgs in = a;
  in.q = q16;
  in.k = k16;
  in.v = v16;
  in.o = o16;
  in.fp8 = {};
  Status inner = st.inner.launch(st.inner.impl.get(), in, Workspace{base + st.at.inner, ws.bytes - st.at.inner}, stream);
  if (!inner) return inner.add_context("sdpa fp8: the bf16 inner plan " + st.inner.sku.name());
  Fp8QuantParams qp = st.quant;
  qp.src = o16;
  qp.dst = static_cast<std::uint8_t*>(a.o);
  qp.scale = a.fp8.scale_o;
  qp.amax = a.fp8.amax_o;
  return launch_fp8_quant(qp, stream);
}

constexpr SdpaCandidate kPlain[] = {{&probe<false>, &prepare<false>, &launch}};
constexpr SdpaCandidate kFusedTable[] = {{&probe<true>, &prepare<true>, &launch}};

}  // namespace

std::span<const SdpaCandidate> fp8_sdpa_forward_candidates() { return kPlain; }
std::span<const SdpaCandidate> fp8_flash_sdpa_forward_candidates() { return kFusedTable; }

std::optional<Expected<PreparedCandidate>> fp8_sdpa_prepare_with_preference(const SdpaCandidate& c,
                                                                            const SdpaDescriptor& d,
                                                                            const DeviceCaps& caps,
                                                                            const PlanPreference& pref) {
  if (c.prepare == &prepare<false>) return prepare_pref(d, caps, pref, false);
  if (c.prepare == &prepare<true>) return prepare_pref(d, caps, pref, true);
  return std::nullopt;
}

}  // namespace baracuda::attention
