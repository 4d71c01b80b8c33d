#include "families.hpp"

#include <cstring>
#include <type_traits>

#include "baracuda/reference/binary.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/domains.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/gated.hpp"
#include "baracuda/reference/gemm.hpp"
#include "baracuda/reference/attention.hpp"
#include "baracuda/reference/batch_norm.hpp"
#include "baracuda/reference/gumbel_softmax.hpp"
#include "baracuda/reference/gemm_int4.hpp"
#include "baracuda/reference/gemm_bin.hpp"
#include "baracuda/reference/decode.hpp"
#include "baracuda/reference/normalization.hpp"
#include "baracuda/reference/pack.hpp"
#include "baracuda/reference/prelu.hpp"
#include "baracuda/reference/alibi.hpp"
#include "baracuda/reference/rope.hpp"
#include "baracuda/reference/scan.hpp"
#include "baracuda/reference/softmax.hpp"
#include "baracuda/reference/sparsemax.hpp"
#include "baracuda/reference/ternary.hpp"

namespace baracuda::tools {

namespace {

using reference::HostTensor;

// Representative layouts a plan is chosen for in `info`.
struct NamedLayout {
  const char* name;
  TensorLayout in;
  TensorLayout out;
};
std::vector<NamedLayout> info_layouts(DType in, DType out) {
  return {{"contig[4096,8192]", TensorLayout::contiguous(in, {4096, 8192}), TensorLayout::contiguous(out, {4096, 8192})},
          {"transposed[4096,8192]", TensorLayout::strided(in, {4096, 8192}, {1, 4096}), TensorLayout::contiguous(out, {4096, 8192})},
          {"row_bcast[4096,8192]", TensorLayout::contiguous(in, {8192}), TensorLayout::contiguous(out, {4096, 8192})},
          {"contig[2^31+1]", TensorLayout::contiguous(in, {(std::int64_t{1} << 31) + 1}),
           TensorLayout::contiguous(out, {(std::int64_t{1} << 31) + 1})}};
}

// Small problems `check` runs: dense, transposed input, broadcast input.
std::vector<NamedLayout> check_layouts(DType in, DType out) {
  return {{"contig", TensorLayout::contiguous(in, {37, 1031}), TensorLayout::contiguous(out, {37, 1031})},
          {"transposed", TensorLayout::strided(in, {37, 1031}, {1, 37}), TensorLayout::contiguous(out, {37, 1031})},
          {"row_bcast", TensorLayout::contiguous(in, {1031}), TensorLayout::contiguous(out, {37, 1031})}};
}

template <class PlanT>
InfoRow info_row(const char* family, const DeviceCaps& caps, const typename PlanT::Descriptor& d, DType dt,
                 const char* layout, const PlanPreference& pref = {}) {
  auto p = PlanT::select_for_caps(caps, d, pref);
  InfoRow r{family, std::string(dtype_name(dt)), layout, p ? p->sku().name() : "ERROR " + p.error().to_string()};
  if (p) r.workspace = p->workspace_size();
  return r;
}

// A device copy of a host tensor's storage (element 0 at data()).
struct DeviceCopy {
  DeviceBuffer buf;
  std::size_t origin = 0;
  DeviceCopy(const HostTensor& h, const Stream& s) : buf(DeviceBuffer::allocate(h.storage_bytes()).value()), origin(h.origin_bytes()) {
    (void)copy_to_device(buf.data(), h.storage(), h.storage_bytes(), s);
  }
  void* data() const { return static_cast<char*>(buf.data()) + origin; }
  void poison(const Stream& s) const { (void)memset_device(buf.data(), 0xFF, buf.bytes(), s); }  // NaN in every float
  Status download(HostTensor& h, const Stream& s) const {
    BARACUDA_TRY(s.synchronize());
    return copy_to_host(h.storage(), buf.data(), h.storage_bytes(), s);
  }
};

// Runs `desc` under every accepting SKU: launch(plan, ws) then verify() -> comparison.
// `base`: the preference each SKU is forced under (e.g. TF32 allowed, so its SKU runs too).
template <class PlanT>
void run_every_sku(const Stream& s, const typename PlanT::Descriptor& d, std::vector<CheckRow>& rows,
                   const std::function<Status(const PlanT&, Workspace)>& launch,
                   const std::function<reference::Comparison()>& verify, const PlanPreference& base = {}) {
  auto reports = PlanT::candidates(*s.caps().value(), d, base);
  if (!reports) {
    rows.push_back({"-", d.to_string(), false, reports.error().to_string()});
    return;
  }
  for (const auto& r : reports.value()) {
    if (!r.rejection.empty()) continue;
    PlanPreference pref = base;
    pref.force_sku = r.sku.name();
    CheckRow row{r.sku.name(), d.to_string(), false, ""};
    auto plan = PlanT::select(s, d, pref);
    if (!plan) {
      row.detail = plan.error().to_string();
      rows.push_back(row);
      continue;
    }
    DeviceBuffer ws;
    if (plan->workspace_size()) ws = DeviceBuffer::allocate(plan->workspace_size()).value();
    Status st = launch(plan.value(), Workspace{ws.data(), ws.bytes()});
    if (!st) {
      row.detail = st.to_string();
    } else {
      auto c = verify();
      row.pass = c.ok;
      row.detail = c.detail;
    }
    rows.push_back(row);
  }
}

// Kinds of UnaryPlan with floating results (the predicates and integer kinds are checked
// by the GPU tests), and a space-separated list of every kind for `info`.
std::vector<UnaryKind> float_unary_kinds() {
  std::vector<UnaryKind> ks;
  for (int k = 0; k < kNumUnaryKinds; ++k) {
    const auto& i = unary_kind_info(static_cast<UnaryKind>(k));
    if (i.floating && i.plain && !i.to_bool) ks.push_back(static_cast<UnaryKind>(k));
  }
  return ks;
}
std::string unary_kind_list(bool parametric) {
  std::string s;
  for (int k = 0; k < kNumUnaryKinds; ++k) {
    const auto& i = unary_kind_info(static_cast<UnaryKind>(k));
    if (parametric ? i.parametric : i.plain) s += (s.empty() ? "" : " ") + std::string(i.name);
  }
  return s;
}
// Binary kinds that accept dtype t, and every kind's name for `info`.
std::vector<BinaryKind> binary_kinds_for(DType t) {
  std::vector<BinaryKind> ks;
  for (int k = 0; k < kNumBinaryKinds; ++k) {
    const auto& i = binary_kind_info(static_cast<BinaryKind>(k));
    const bool takes = dtype_is_floating(t) ? i.floating : (t == DType::kBool ? i.boolean : i.integer);
    if (takes) ks.push_back(static_cast<BinaryKind>(k));
  }
  return ks;
}
std::string binary_kind_list() {
  std::string s;
  for (int k = 0; k < kNumBinaryKinds; ++k) s += (s.empty() ? "" : " ") + std::string(binary_kind_name(static_cast<BinaryKind>(k)));
  return s;
}
std::string binary_cmp_kind_list() {
  std::string s;
  for (int k = 0; k < kNumBinaryCmpKinds; ++k)
    s += (s.empty() ? "" : " ") + std::string(binary_cmp_kind_name(static_cast<BinaryCmpKind>(k)));
  return s;
}
std::string binary_param_kind_list() {
  std::string s;
  for (int k = 0; k < kNumBinaryParamKinds; ++k)
    s += (s.empty() ? "" : " ") + std::string(binary_param_kind_name(static_cast<BinaryParamKind>(k)));
  return s;
}
const std::vector<DType> kMathTypes = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};
const std::vector<DType> kRealTypes = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64,
                                       DType::kI32, DType::kI16, DType::kI8,  DType::kU8,  DType::kBool};
// Every non-packed dtype: cast (each pair), where and fill (bit moves).
const std::vector<DType> kCastTypes = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2,
                                       DType::kI64, DType::kI32, DType::kI16, DType::kI8,   DType::kU8,   DType::kBool};

std::vector<CheckRow> check_unary(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (auto kind : float_unary_kinds())
    for (const auto& l : check_layouts(t, t)) {
      UnaryDescriptor d{kind, l.in, l.out};
      HostTensor hx(l.in), hy(l.out);
      auto [lo, hi] = reference::unary_input_range(kind);
      reference::fill_random(hx, rng, lo, hi, true);
      auto want = reference::unary(d, hx).value();
      DeviceCopy dx(hx, s), dy(hy, s);
      run_every_sku<UnaryPlan>(
          s, d, rows, [&](const UnaryPlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .y = dy.data()}); },
          [&] {
            (void)dy.download(hy, s);
            return reference::compare(hy, want, false);
          });
      // backward on the dense layout only
      if (unary_kind_info(kind).differentiable && l.in.is_contiguous() && l.in.numel() == l.out.numel()) {
        UnaryBackwardDescriptor bd{kind, l.out, l.in, l.out};
        HostTensor hg(l.out);
        reference::fill_random(hg, rng, -2, 2, false);
        auto bwant = reference::unary_backward(bd, hg, hx).value();
        DeviceCopy dg(hg, s);
        run_every_sku<UnaryBackwardPlan>(
            s, bd, rows,
            [&](const UnaryBackwardPlan& p, Workspace ws) {
              return p.run(s, ws, {.grad_out = dg.data(), .x = dx.data(), .grad_in = dy.data()});
            },
            [&] {
              (void)dy.download(hy, s);
              return reference::compare(hy, bwant, false);
            });
      }
    }
  return rows;
}

// Every parametric kind with non-default scalars, forward and backward, on the check layouts.
std::vector<CheckRow> check_unary_param(const Stream& s, DType t, std::mt19937_64& rng) {
  const std::pair<UnaryKind, UnaryParams> cases[] = {
      {UnaryKind::kThreshold, {0.5, -2, 0}}, {UnaryKind::kLeakyRelu, {0.2, 0, 0}}, {UnaryKind::kElu, {1.5, 0, 0}},
      {UnaryKind::kCelu, {0.7, 0, 0}},       {UnaryKind::kHardtanh, {-2, 3, 0}},  {UnaryKind::kSoftplus, {2, 5, 0}},
      {UnaryKind::kPow, {3, 0, 0}},          {UnaryKind::kPow, {1.7, 0, 0}},      {UnaryKind::kHardshrink, {1, 0, 0}},
      {UnaryKind::kSoftshrink, {0.3, 0, 0}}, {UnaryKind::kNanToNum, {1, 100, -100}}, {UnaryKind::kLogit, {0.05, 0, 0}}};
  std::vector<CheckRow> rows;
  for (const auto& [kind, prm] : cases)
    for (const auto& l : check_layouts(t, t)) {
      UnaryParamDescriptor d{kind, prm, l.in, l.out};
      HostTensor hx(l.in), hy(l.out);
      auto [lo, hi] = reference::unary_input_range(kind);
      reference::fill_random(hx, rng, lo, hi, true);
      auto want = reference::unary(d, hx).value();
      DeviceCopy dx(hx, s), dy(hy, s);
      run_every_sku<UnaryParamPlan>(
          s, d, rows, [&](const UnaryParamPlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .y = dy.data()}); },
          [&] {
            (void)dy.download(hy, s);
            return reference::compare(hy, want, false);
          });
      if (l.in.is_contiguous() && l.in.numel() == l.out.numel()) {
        UnaryParamBackwardDescriptor bd{kind, prm, l.out, l.in, l.out};
        HostTensor hg(l.out);
        reference::fill_random(hg, rng, -2, 2, false);
        auto bwant = reference::unary_backward(bd, hg, hx).value();
        DeviceCopy dg(hg, s);
        run_every_sku<UnaryParamBackwardPlan>(
            s, bd, rows,
            [&](const UnaryParamBackwardPlan& p, Workspace ws) {
              return p.run(s, ws, {.grad_out = dg.data(), .x = dx.data(), .grad_in = dy.data()});
            },
            [&] {
              (void)dy.download(hy, s);
              return reference::compare(hy, bwant, false);
            });
      }
    }
  return rows;
}

// Random inputs for a binary kind on dtype t: the kind's ranges with edges (floating), a
// small range with zeros and negative values (integers, bool).
void fill_binary_inputs(BinaryKind kind, DType t, HostTensor& ha, HostTensor& hb, std::mt19937_64& rng, bool backward) {
  if (!dtype_is_floating(t)) {
    const bool u = t == DType::kU8 || t == DType::kBool;
    const double hi = t == DType::kBool ? 1 : 9;
    reference::fill_random(ha, rng, u ? 0 : -hi, hi, false);
    reference::fill_random(hb, rng, u ? 0 : -hi, hi, false);
    return;
  }
  const auto r = reference::binary_input_ranges(kind, backward);
  reference::fill_random(ha, rng, r.a_lo, r.a_hi, !backward);
  reference::fill_random(hb, rng, r.b_lo, r.b_hi, !backward);
}

// Every kind that takes dtype t, forward (and backward for the differentiable kinds) on
// the check layouts; integer, bool and bool-valued results compared exactly.
std::vector<CheckRow> check_binary(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (auto kind : binary_kinds_for(t))
    for (const auto& l : check_layouts(t, t)) {
      const BinaryKindInfo& info = binary_kind_info(kind);
      const bool exact = !dtype_is_floating(t) || info.to_bool || kind == BinaryKind::kNextafter;
      // a is the full-shape operand, b takes the case's layout (dense / transposed / broadcast)
      TensorLayout a = l.out;
      TensorLayout out = info.to_bool ? TensorLayout::contiguous(DType::kBool, l.out.shape_span()) : l.out;
      BinaryDescriptor d{kind, a, l.in, out};
      HostTensor ha(a), hb(l.in), ho(out);
      fill_binary_inputs(kind, t, ha, hb, rng, false);
      auto want = reference::binary(d, ha, hb).value();
      DeviceCopy da(ha, s), db(hb, s), dout(ho, s);
      run_every_sku<BinaryPlan>(
          s, d, rows,
          [&](const BinaryPlan& p, Workspace ws) { return p.run(s, ws, {.a = da.data(), .b = db.data(), .out = dout.data()}); },
          [&] {
            (void)dout.download(ho, s);
            return reference::compare(ho, want, exact);
          });
      if (!info.differentiable || !dtype_is_floating(t)) continue;
      auto gb_layout = TensorLayout::contiguous(t, l.in.shape_span());
      BinaryBackwardDescriptor bd{kind, l.out, a, l.in, a, gb_layout};
      HostTensor hg(l.out), hga(a), hgb(gb_layout), hba(a), hbb(l.in);
      reference::fill_random(hg, rng, -2, 2, false);
      fill_binary_inputs(kind, t, hba, hbb, rng, true);
      auto bwant = reference::binary_backward(bd, hg, hba, hbb).value();
      DeviceCopy dg(hg, s), dba(hba, s), dbb(hbb, s), dga(hga, s), dgb(hgb, s);
      run_every_sku<BinaryBackwardPlan>(
          s, bd, rows,
          [&](const BinaryBackwardPlan& p, Workspace ws) {
            return p.run(s, ws, {.grad_out = dg.data(), .a = dba.data(), .b = dbb.data(), .grad_a = dga.data(), .grad_b = dgb.data()});
          },
          [&] {
            (void)dga.download(hga, s);
            (void)dgb.download(hgb, s);
            auto ca = reference::compare(hga, bwant.grad_a, false);
            return ca.ok ? reference::compare(hgb, bwant.grad_b, false) : ca;
          });
    }
  return rows;
}

// Every comparison (isclose with torch's defaults and with loose tolerances) on dtype t.
std::vector<CheckRow> check_binary_cmp(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  std::vector<BinaryCmpDescriptor> kinds(kNumBinaryCmpKinds + 1);
  for (int k = 0; k < kNumBinaryCmpKinds; ++k) kinds[static_cast<std::size_t>(k)].kind = static_cast<BinaryCmpKind>(k);
  kinds.back().kind = BinaryCmpKind::kIsclose;  // loose tolerances, NaN close to NaN
  kinds.back().rtol = 0.25;
  kinds.back().atol = 0.5;
  kinds.back().equal_nan = true;
  for (const auto& proto : kinds)
    for (const auto& l : check_layouts(t, DType::kBool)) {
      BinaryCmpDescriptor d = proto;
      d.a = TensorLayout::contiguous(t, l.out.shape_span());
      d.b = l.in;
      d.out = l.out;
      HostTensor ha(d.a), hb(d.b), ho(d.out);
      const bool f = dtype_is_floating(t);
      reference::fill_random(ha, rng, f ? -2 : 0, 2, f);
      reference::fill_random(hb, rng, f ? -2 : 0, 2, f);
      auto want = reference::binary_cmp(d, ha, hb).value();
      DeviceCopy da(ha, s), db(hb, s), dout(ho, s);
      run_every_sku<BinaryCmpPlan>(
          s, d, rows,
          [&](const BinaryCmpPlan& p, Workspace ws) { return p.run(s, ws, {.a = da.data(), .b = db.data(), .out = dout.data()}); },
          [&] {
            (void)dout.download(ho, s);
            return reference::compare(ho, want, true);
          });
    }
  return rows;
}

// lerp (scalar and tensor weight) and add / sub with alpha, forward and backward.
std::vector<CheckRow> check_binary_param(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const std::pair<BinaryParamKind, double> cases[] = {{BinaryParamKind::kLerp, 0.3},
                                                      {BinaryParamKind::kLerp, 0.8},
                                                      {BinaryParamKind::kLerpTensor, 0},
                                                      {BinaryParamKind::kAddAlpha, 2.5},
                                                      {BinaryParamKind::kSubAlpha, -0.75}};
  for (const auto& [kind, scalar] : cases)
    for (const auto& l : check_layouts(t, t)) {
      const bool tw = kind == BinaryParamKind::kLerpTensor;
      TensorLayout a = l.out;
      BinaryParamDescriptor d{kind, scalar, a, l.in, tw ? l.in : TensorLayout{}, l.out};
      HostTensor ha(a), hb(l.in), hw(l.in), ho(l.out);
      reference::fill_random(ha, rng, -4, 4, true);
      reference::fill_random(hb, rng, -4, 4, true);
      reference::fill_random(hw, rng, -0.5, 1.5, false);
      auto want = reference::binary_param(d, ha, hb, hw).value();
      DeviceCopy da(ha, s), db(hb, s), dw(hw, s), dout(ho, s);
      run_every_sku<BinaryParamPlan>(
          s, d, rows,
          [&](const BinaryParamPlan& p, Workspace ws) {
            return p.run(s, ws, {.a = da.data(), .b = db.data(), .weight = tw ? dw.data() : nullptr, .out = dout.data()});
          },
          [&] {
            (void)dout.download(ho, s);
            return reference::compare(ho, want, false);
          });
      BinaryParamBackwardDescriptor bd{kind, scalar, l.out, a, l.in, tw ? l.in : TensorLayout{}, l.out, l.out, l.out};
      HostTensor hg(l.out), hga(l.out), hgb(l.out), hgw(l.out);
      reference::fill_random(hg, rng, -2, 2, false);
      auto bwant = reference::binary_param_backward(bd, hg, ha, hb, hw).value();
      DeviceCopy dg(hg, s), dga(hga, s), dgb(hgb, s), dgw(hgw, s);
      run_every_sku<BinaryParamBackwardPlan>(
          s, bd, rows,
          [&](const BinaryParamBackwardPlan& p, Workspace ws) {
            return p.run(s, ws, {.grad_out = dg.data(), .a = da.data(), .b = db.data(), .weight = tw ? dw.data() : nullptr,
                                 .grad_a = dga.data(), .grad_b = dgb.data(), .grad_weight = tw ? dgw.data() : nullptr});
          },
          [&] {
            (void)dga.download(hga, s);
            (void)dgb.download(hgb, s);
            auto c = reference::compare(hga, bwant.grad_a, false);
            if (c.ok) c = reference::compare(hgb, bwant.grad_b, false);
            if (c.ok && tw) {
              (void)dgw.download(hgw, s);
              c = reference::compare(hgw, bwant.grad_weight, false);
            }
            return c;
          });
    }
  return rows;
}

std::vector<CheckRow> check_cast(const Stream& s, DType from, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (DType to : kCastTypes)
    for (auto mode : {Fp8Overflow::kPyTorch, Fp8Overflow::kSaturate})
      for (const auto& l : check_layouts(from, to)) {
        if (mode == Fp8Overflow::kSaturate && to != DType::kE4M3 && to != DType::kE5M2) continue;
        CastDescriptor d{l.in, l.out, mode};
        HostTensor hx(l.in), hy(l.out);
        reference::fill_random(hx, rng, -70000, 70000, true);
        auto want = reference::cast(d, hx).value();
        DeviceCopy dx(hx, s), dy(hy, s);
        run_every_sku<CastPlan>(
            s, d, rows, [&](const CastPlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .y = dy.data()}); },
            [&] {
              (void)dy.download(hy, s);
              return reference::compare(hy, want, true);
            });
      }
  return rows;
}

// ---- pack / unpack (dtype = the packed one)
DType plain_of(DType packed) { return packed == DType::kS4 ? DType::kI8 : packed == DType::kU4 ? DType::kU8 : DType::kBool; }

reference::Comparison same_bytes(const HostTensor& got, const HostTensor& want) {
  reference::Comparison c;
  c.checked = static_cast<std::int64_t>(got.storage_bytes());
  for (std::size_t i = 0; i < got.storage_bytes(); ++i)
    if (got.storage()[i] != want.storage()[i] && c.mismatches++ == 0) c.detail = "first differing byte " + std::to_string(i);
  c.ok = c.mismatches == 0;
  return c;
}

std::vector<CheckRow> check_pack(const Stream& s, DType packed, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const DType plain = plain_of(packed);
  const std::vector<std::pair<TensorLayout, TensorLayout>> layouts = {
      {TensorLayout::contiguous(plain, {37, 1031}), TensorLayout::contiguous(packed, {37, 1031})},
      {TensorLayout::strided(plain, {37, 1031}, {1, 37}), TensorLayout::strided(packed, {37, 1031}, {1032, 1})}};
  for (const auto& [pl, pk] : layouts) {
    PackDescriptor d{pl, pk};
    HostTensor hx(pl), hy(pk);
    for (std::size_t i = 0; i < hx.storage_bytes(); ++i)
      hx.storage()[i] = std::byte{static_cast<unsigned char>(plain == DType::kBool ? rng() & 1 : rng())};
    auto want = reference::pack(d, hx).value();
    DeviceCopy dx(hx, s), dy(hy, s);
    run_every_sku<PackPlan>(
        s, d, rows, [&](const PackPlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .y = dy.data()}); },
        [&] {
          (void)dy.download(hy, s);
          return same_bytes(hy, want);
        });
    UnpackDescriptor u{pk, pl};
    HostTensor hp(pk), hz(pl);
    for (std::size_t i = 0; i < hp.storage_bytes(); ++i) hp.storage()[i] = std::byte{static_cast<unsigned char>(rng())};
    auto uwant = reference::unpack(u, hp).value();
    DeviceCopy dp(hp, s), dz(hz, s);
    run_every_sku<UnpackPlan>(
        s, u, rows, [&](const UnpackPlan& p, Workspace ws) { return p.run(s, ws, {.x = dp.data(), .y = dz.data()}); },
        [&] {
          (void)dz.download(hz, s);
          reference::Result r;
          r.exact = uwant.logical();
          return reference::compare(hz, r, true);
        });
  }
  return rows;
}

// ---- gated activations
constexpr GatedKind kGatedKinds[] = {GatedKind::kGlu, GatedKind::kReglu, GatedKind::kSwiglu, GatedKind::kGegluErf,
                                     GatedKind::kGegluTanh};

std::vector<CheckRow> check_gated(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const auto x = TensorLayout::contiguous(t, {37, 2 * 1031});
  const auto y = TensorLayout::contiguous(t, {37, 1031});
  for (GatedKind k : kGatedKinds)
    for (GateHalf half : {GateHalf::kSecond, GateHalf::kFirst}) {
      GatedActivationDescriptor d{k, GatedInput::kPacked, half, x, {}, {}, y};
      HostTensor hx(x), hy(y), hg(y), hgx(x);
      reference::fill_random(hx, rng, -4, 4, true);
      reference::fill_random(hg, rng, -4, 4, true);
      auto want = reference::gated_activation(d, &hx, nullptr, nullptr).value();
      DeviceCopy dx(hx, s), dy(hy, s), dg(hg, s), dgx(hgx, s);
      run_every_sku<GatedActivationPlan>(
          s, d, rows, [&](const GatedActivationPlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .y = dy.data()}); },
          [&] {
            (void)dy.download(hy, s);
            return reference::compare(hy, want, false);
          });
      GatedActivationBackwardDescriptor bd{k, GatedInput::kPacked, half, y, x, {}, {}, x, {}, {}};
      auto bwant = reference::gated_activation_backward(bd, hg, &hx, nullptr, nullptr).value();
      run_every_sku<GatedActivationBackwardPlan>(
          s, bd, rows,
          [&](const GatedActivationBackwardPlan& p, Workspace ws) {
            return p.run(s, ws, {.grad_y = dg.data(), .x = dx.data(), .grad_x = dgx.data()});
          },
          [&] {
            (void)dgx.download(hgx, s);
            return reference::compare(hgx, bwant.grad_x, false);
          });
    }
  return rows;
}

// ---- prelu
std::vector<CheckRow> check_prelu(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const auto nchw = TensorLayout::contiguous(t, {4, 37, 129});
  const auto nc = TensorLayout::contiguous(t, {301, 256});  // rows_vec16 takes its backward
  const std::pair<TensorLayout, TensorLayout> problems[] = {
      {nchw, TensorLayout::contiguous(t, {37})},
      {nchw, TensorLayout::contiguous(t, {1})},
      {nc, TensorLayout::contiguous(t, {256})}};
  for (const auto& [x, w] : problems) {
    PReluDescriptor d{x, w, x};
    HostTensor hx(x), hw(w), hy(x), hg(x), hgx(x), hgw(w);
    reference::fill_random(hx, rng, -4, 4, true);
    reference::fill_random(hw, rng, -1, 1, false);
    reference::fill_random(hg, rng, -4, 4, true);
    auto want = reference::prelu(d, hx, hw).value();
    DeviceCopy dx(hx, s), dw(hw, s), dy(hy, s), dg(hg, s), dgx(hgx, s), dgw(hgw, s);
    run_every_sku<PReluPlan>(
        s, d, rows, [&](const PReluPlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .weight = dw.data(), .y = dy.data()}); },
        [&] {
          (void)dy.download(hy, s);
          return reference::compare(hy, want, false);
        });
    PReluBackwardDescriptor bd{x, x, w, x, w};
    auto bwant = reference::prelu_backward(bd, hg, hx, hw).value();
    run_every_sku<PReluBackwardPlan>(
        s, bd, rows,
        [&](const PReluBackwardPlan& p, Workspace ws) {
          return p.run(s, ws, {.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .grad_x = dgx.data(), .grad_weight = dgw.data()});
        },
        [&] {
          (void)dgx.download(hgx, s);
          (void)dgw.download(hgw, s);
          auto c = reference::compare(hgx, bwant.grad_x, false);
          return c.ok ? reference::compare(hgw, bwant.grad_weight, false) : c;
        });
  }
  return rows;
}

// ---- sdpa: dense GQA causal (bottom-right) with dropout, bias + ALiBi + softcap, varlen
// with an empty sequence; forward (o, lse) and backward (dq, dk, dv) under every SKU.
std::vector<CheckRow> check_sdpa(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  struct Problem {
    SdpaDescriptor d;
    std::vector<std::int32_t> cu_q, cu_k;
  };
  std::vector<Problem> problems(3);
  for (auto& pb : problems) {
    pb.d.q = pb.d.o = TensorLayout::contiguous(t, {2, 4, 37, 64});
    pb.d.k = pb.d.v = TensorLayout::contiguous(t, {2, 2, 50, 64});
    pb.d.lse = TensorLayout::contiguous(DType::kF32, {2, 4, 37});
  }
  problems[0].d.options.causal = true;
  problems[0].d.options.align = CausalAlign::kBottomRight;
  problems[0].d.options.dropout_p = 0.1;
  problems[1].d.bias = TensorLayout::contiguous(DType::kF32, {37, 50});
  problems[1].d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {4});
  problems[1].d.options.softcap = 4.0;
  SdpaDescriptor& vd = problems[2].d;
  vd.q = vd.o = TensorLayout::contiguous(t, {40, 4, 64});
  vd.k = vd.v = TensorLayout::contiguous(t, {45, 2, 64});
  vd.lse = TensorLayout::contiguous(DType::kF32, {4, 40});
  vd.options.varlen = true;
  vd.options.causal = true;
  vd.options.batch = 3;
  vd.options.max_seqlen_q = 25;
  vd.options.max_seqlen_k = 30;
  problems[2].cu_q = {0, 15, 15, 40};
  problems[2].cu_k = {0, 10, 15, 45};
  for (const auto& pb : problems) {
    const SdpaDescriptor& d = pb.d;
    const std::int64_t B = d.options.varlen ? d.options.batch : d.q.shape[0];
    const std::int64_t Sq = d.options.varlen ? d.options.max_seqlen_q : d.q.shape[2];
    const std::int64_t Skv = d.options.varlen ? d.options.max_seqlen_k : d.k.shape[2];
    HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o), hl(d.lse), hgo(d.o), hgq(d.q), hgk(d.k), hgv(d.v);
    HostTensor hb(d.bias.rank ? d.bias : TensorLayout::contiguous(DType::kF32, {1}));
    HostTensor ha(d.alibi_slopes.rank ? d.alibi_slopes : TensorLayout::contiguous(DType::kF32, {1}));
    reference::fill_random(hq, rng, -3, 3, false);
    reference::fill_random(hk, rng, -1, 1, false);
    reference::fill_random(hv, rng, -1, 1, false);
    reference::fill_random(hgo, rng, -1, 1, false);
    reference::fill_random(hb, rng, -2, 2, false);
    reference::fill_random(ha, rng, 0.01, 0.2, false);
    const auto keep = reference::sdpa_dropout_keep(B, d.q.shape[1], Sq, Skv, d.options.dropout_p, 7, 3);
    reference::SdpaHostInputs in;
    in.q = &hq;
    in.k = &hk;
    in.v = &hv;
    if (d.bias.rank) in.bias = &hb;
    if (d.alibi_slopes.rank) in.alibi = &ha;
    in.cu_seqlens_q = pb.cu_q;
    in.cu_seqlens_k = pb.cu_k;
    in.keep = &keep;
    auto want = reference::sdpa(d, in);
    if (!want) {
      rows.push_back({"-", d.to_string(), false, want.error().to_string()});
      continue;
    }
    HostTensor hcq(TensorLayout::contiguous(DType::kI32, {B + 1}, 4)), hck(hcq.layout());
    for (std::int64_t i = 0; i < (d.options.varlen ? B + 1 : 0); ++i) {
      hcq.set(i, pb.cu_q[static_cast<std::size_t>(i)]);
      hck.set(i, pb.cu_k[static_cast<std::size_t>(i)]);
    }
    DeviceCopy dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dl(hl, s), db(hb, s), da(ha, s), dcq(hcq, s), dck(hck, s);
    SdpaArgs a;
    a.q = dq.data();
    a.k = dk.data();
    a.v = dv.data();
    a.o = dout.data();
    a.lse = static_cast<float*>(dl.data());
    if (d.bias.rank) a.bias = db.data();
    if (d.alibi_slopes.rank) a.alibi_slopes = static_cast<const float*>(da.data());
    if (d.options.varlen) {
      a.cu_seqlens_q = static_cast<const std::int32_t*>(dcq.data());
      a.cu_seqlens_k = static_cast<const std::int32_t*>(dck.data());
    }
    a.seed = 7;
    a.offset = 3;
    const bool dropout = d.options.dropout_p > 0;
    // cuDNN's dropout is its own generator: its rows check nothing but the run (GPU tests: statistics).
    auto exact_ok = [&](const std::string& sku) { return !dropout || sku.find("cudnn") == std::string::npos; };
    std::string sku_now;
    run_every_sku<SdpaPlan>(
        s, d, rows,
        [&](const SdpaPlan& p, Workspace ws) {
          sku_now = p.sku().name();
          dout.poison(s);
          return p.run(s, ws, a);
        },
        [&] {
          (void)dout.download(ho, s);
          (void)dl.download(hl, s);
          if (!exact_ok(sku_now)) return reference::Comparison{true, 0, 0, "dropout by cuDNN's generator: not compared"};
          auto c = reference::compare(ho, want->o, false);
          return c.ok ? reference::compare(hl, want->lse, false) : c;
        });
    const SdpaBackwardDescriptor g = reference::sdpa_backward_of(d);
    HostTensor hro(d.o), hrl(d.lse);
    for (std::int64_t i = 0; i < d.o.numel(); ++i) hro.set(i, want->o.exact[static_cast<std::size_t>(i)]);
    for (std::int64_t i = 0; i < d.lse.numel(); ++i) hrl.set(i, want->lse.exact[static_cast<std::size_t>(i)]);
    auto gwant = reference::sdpa_backward(g, in, hro, hgo);
    if (!gwant) {
      rows.push_back({"-", g.to_string(), false, gwant.error().to_string()});
      continue;
    }
    DeviceCopy dro(hro, s), drl(hrl, s), dgo(hgo, s), dgq(hgq, s), dgk(hgk, s), dgv(hgv, s);
    SdpaBackwardArgs ba{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dro.data(), .grad_o = dgo.data(),
                        .lse = static_cast<const float*>(drl.data()), .grad_q = dgq.data(), .grad_k = dgk.data(),
                        .grad_v = dgv.data()};
    ba.bias = a.bias;
    ba.alibi_slopes = a.alibi_slopes;
    ba.cu_seqlens_q = a.cu_seqlens_q;
    ba.cu_seqlens_k = a.cu_seqlens_k;
    ba.seed = 7;
    ba.offset = 3;
    run_every_sku<SdpaBackwardPlan>(
        s, g, rows,
        [&](const SdpaBackwardPlan& p, Workspace ws) {
          sku_now = p.sku().name();
          dgq.poison(s);
          dgk.poison(s);
          dgv.poison(s);
          return p.run(s, ws, ba);
        },
        [&] {
          (void)dgq.download(hgq, s);
          (void)dgk.download(hgk, s);
          (void)dgv.download(hgv, s);
          if (!exact_ok(sku_now)) return reference::Comparison{true, 0, 0, "dropout by cuDNN's generator: not compared"};
          auto c = reference::compare(hgq, gwant->grad_q, false);
          if (c.ok) c = reference::compare(hgk, gwant->grad_k, false);
          return c.ok ? reference::compare(hgv, gwant->grad_v, false) : c;
        });
  }
  return rows;
}

// ---- ternary group: clamp / fma / addcmul / addcdiv (+ backward), where (+ backward), affine, fill
constexpr TernaryKind kTernaryKinds[] = {TernaryKind::kClamp, TernaryKind::kFma, TernaryKind::kAddcmul, TernaryKind::kAddcdiv};

std::vector<CheckRow> check_ternary(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (auto kind : kTernaryKinds)
    for (const auto& l : check_layouts(t, t)) {
      // a full-shape, b the case's layout (dense / transposed / broadcast), c full-shape
      const TensorLayout a = l.out, c = l.out;
      TernaryDescriptor d{kind, 0.5, a, l.in, c, l.out};
      HostTensor ha(a), hb(l.in), hc(c), ho(l.out);
      reference::fill_random(ha, rng, -4, 4, true);
      reference::fill_random(hb, rng, -3, 1, true);
      reference::fill_random(hc, rng, 0.5, 4, false);
      auto want = reference::ternary(d, ha, hb, hc).value();
      DeviceCopy da(ha, s), db(hb, s), dc(hc, s), dout(ho, s);
      run_every_sku<TernaryPlan>(
          s, d, rows,
          [&](const TernaryPlan& p, Workspace ws) {
            return p.run(s, ws, {.a = da.data(), .b = db.data(), .c = dc.data(), .out = dout.data()});
          },
          [&] {
            (void)dout.download(ho, s);
            return reference::compare(ho, want, false);
          });
      const auto gb_layout = TensorLayout::contiguous(t, l.in.shape_span());
      TernaryBackwardDescriptor bd{kind, 0.5, l.out, a, l.in, c, a, gb_layout, c};
      HostTensor hg(l.out), hga(a), hgb(gb_layout), hgc(c);
      reference::fill_random(hg, rng, -2, 2, false);
      auto bwant = reference::ternary_backward(bd, hg, ha, hb, hc).value();
      DeviceCopy dg(hg, s), dga(hga, s), dgb(hgb, s), dgc(hgc, s);
      run_every_sku<TernaryBackwardPlan>(
          s, bd, rows,
          [&](const TernaryBackwardPlan& p, Workspace ws) {
            return p.run(s, ws, {.grad_out = dg.data(), .a = da.data(), .b = db.data(), .c = dc.data(), .grad_a = dga.data(),
                                 .grad_b = dgb.data(), .grad_c = dgc.data()});
          },
          [&] {
            (void)dga.download(hga, s);
            (void)dgb.download(hgb, s);
            (void)dgc.download(hgc, s);
            auto ca = reference::compare(hga, bwant.grad[0], false);
            if (!ca.ok) return ca;
            auto cb = reference::compare(hgb, bwant.grad[1], false);
            return cb.ok ? reference::compare(hgc, bwant.grad[2], false) : cb;
          });
    }
  return rows;
}

void fill_bools(HostTensor& h, std::mt19937_64& rng) {
  for (std::int64_t i = 0; i < h.layout().numel(); ++i) h.set(i, static_cast<double>(rng() & 1));
}

std::vector<CheckRow> check_where(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (const auto& l : check_layouts(DType::kBool, t)) {
    // cond takes the case's layout; a and b full-shape
    WhereDescriptor d{l.in, l.out, l.out, l.out};
    HostTensor hc(l.in), ha(l.out), hb(l.out), ho(l.out);
    fill_bools(hc, rng);
    reference::fill_random(ha, rng, 0, 100, t != DType::kBool && dtype_is_floating(t));
    reference::fill_random(hb, rng, 0, 100, false);
    auto want = reference::where(d, hc, ha, hb).value();
    DeviceCopy dc(hc, s), da(ha, s), db(hb, s), dout(ho, s);
    run_every_sku<WherePlan>(
        s, d, rows,
        [&](const WherePlan& p, Workspace ws) { return p.run(s, ws, {.cond = dc.data(), .a = da.data(), .b = db.data(), .out = dout.data()}); },
        [&] {
          (void)dout.download(ho, s);
          return reference::compare(ho, want, true);
        });
    if (!dtype_is_floating(t) || dtype_size(t) == 1) continue;
    // backward: grad_a of a row-broadcast a, grad_b full-shape
    const auto row = TensorLayout::contiguous(t, {l.out.shape[1]});
    WhereBackwardDescriptor bd{l.in, l.out, row, l.out};
    HostTensor hg(l.out), hga(row), hgb(l.out);
    reference::fill_random(hg, rng, -2, 2, false);
    auto bwant = reference::where_backward(bd, hc, hg).value();
    DeviceCopy dg(hg, s), dga(hga, s), dgb(hgb, s);
    run_every_sku<WhereBackwardPlan>(
        s, bd, rows,
        [&](const WhereBackwardPlan& p, Workspace ws) {
          return p.run(s, ws, {.cond = dc.data(), .grad_out = dg.data(), .grad_a = dga.data(), .grad_b = dgb.data()});
        },
        [&] {
          (void)dga.download(hga, s);
          (void)dgb.download(hgb, s);
          auto ca = reference::compare(hga, bwant.grad_a, false);
          return ca.ok ? reference::compare(hgb, bwant.grad_b, false) : ca;
        });
  }
  return rows;
}

std::vector<CheckRow> check_affine(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const bool integer = dtype_is_integer(t);
  for (const auto& l : check_layouts(t, t)) {
    AffineDescriptor d{integer ? 3.0 : 1.5, integer ? -7.0 : -0.25, l.in, l.out};
    HostTensor hx(l.in), hy(l.out);
    reference::fill_random(hx, rng, integer ? 0 : -4, integer ? 100 : 4, !integer);
    auto want = reference::affine(d, hx).value();
    DeviceCopy dx(hx, s), dy(hy, s);
    run_every_sku<AffinePlan>(
        s, d, rows, [&](const AffinePlan& p, Workspace ws) { return p.run(s, ws, {.x = dx.data(), .y = dy.data()}); },
        [&] {
          (void)dy.download(hy, s);
          return reference::compare(hy, want, integer);
        });
  }
  return rows;
}

std::vector<CheckRow> check_fill(const Stream& s, DType t, std::mt19937_64&) {
  std::vector<CheckRow> rows;
  for (const auto& l : check_layouts(t, t)) {
    FillDescriptor d{l.in.is_contiguous() ? l.out : TensorLayout::strided(t, {37, 1031}, {1, 37}), t == DType::kU8 ? 200.0 : 3.0};
    HostTensor hy(d.y);
    auto want = reference::fill(d).value();
    DeviceCopy dy(hy, s);
    run_every_sku<FillPlan>(
        s, d, rows, [&](const FillPlan& p, Workspace ws) { return p.run(s, ws, {.y = dy.data()}); },
        [&] {
          (void)dy.download(hy, s);
          return reference::compare(hy, want, true);
        });
  }
  return rows;
}


// ---- gemm: GemmPlan / BatchedGemmPlan / GemmBackwardPlan against reference::batched_gemm and
// reference::gemm_backward, each output within the bound of reference/gemm.hpp (docs/gemm.md).
// TF32 is allowed so that its SKU is forced too (its bound widens); outputs poisoned per SKU.
constexpr MatrixOrder kRow = MatrixOrder::kRowMajor, kCol = MatrixOrder::kColMajor;
constexpr MatrixOrder kGemmOrders[4][2] = {{kRow, kRow}, {kRow, kCol}, {kCol, kRow}, {kCol, kCol}};  // A, B (D row-major)

MatrixLayout gemm_matrix(DType t, std::int64_t rows, std::int64_t cols, MatrixOrder o, std::int64_t pad = 0) {
  return MatrixLayout{t, rows, cols, (o == kRow ? cols : rows) + pad, o, 16};
}
GemmDescriptor gemm_problem(DType t, std::int64_t m, std::int64_t n, std::int64_t k, MatrixOrder oa, MatrixOrder ob,
                            std::int64_t pad = 0) {
  GemmDescriptor g;
  g.a = gemm_matrix(t, m, k, oa, pad);
  g.b = gemm_matrix(t, k, n, ob, pad);
  g.d = gemm_matrix(t, m, n, kRow, pad);
  return g;
}
// g with epilogue e and the operands it needs (aux ld: cuBLASLt's unit, 128 bits or 8 elements).
GemmDescriptor with_epilogue(GemmDescriptor g, GemmEpilogue e) {
  const DType t = g.d.dtype;
  g.epilogue = e;
  if (e.bias) g.bias = TensorLayout::contiguous(t, {g.n()});
  if (e.bias_grad != GemmBiasGrad::kNone) g.bias_grad = TensorLayout::contiguous(t, {e.bias_grad == GemmBiasGrad::kA ? g.m() : g.n()});
  if (e.aux) {
    const bool relu = e.activation == GemmActivation::kRelu;
    const std::int64_t unit = relu ? 128 : 8, inner = g.d.order == kRow ? g.n() : g.m();
    g.aux = MatrixLayout{relu ? DType::kBit : t, g.m(), g.n(), (inner + unit - 1) / unit * unit, g.d.order, 16};
  }
  return g;
}

// One (batched) GEMM problem under every accepting SKU of PlanT (GemmPlan takes bd.gemm).
template <class PlanT>
void check_gemm_case(const Stream& s, const BatchedGemmDescriptor& bd, double alpha, double beta, std::mt19937_64& rng,
                     std::vector<CheckRow>& rows) {
  const GemmDescriptor& g = bd.gemm;
  const GemmEpilogue& e = g.epilogue;
  const bool bgrad = e.bias_grad != GemmBiasGrad::kNone;
  const std::int64_t P = bd.batch;
  const auto unused = TensorLayout::contiguous(g.d.dtype, {1});
  HostTensor ha(reference::batched_layout(g.a, P, bd.stride_a)), hb(reference::batched_layout(g.b, P, bd.stride_b));
  HostTensor hc(reference::batched_layout(g.with_c ? g.c : g.d, P, g.with_c ? bd.stride_c : bd.stride_d));
  HostTensor hd(reference::batched_layout(g.d, P, bd.stride_d));
  HostTensor hbias(reference::batched_layout(e.bias ? g.bias : unused, P, bd.stride_bias));
  HostTensor hbg(reference::batched_layout(bgrad ? g.bias_grad : unused, P, bd.stride_bias));
  HostTensor haux(reference::batched_layout(e.aux ? g.aux : MatrixLayout{g.d.dtype, 1, 1, 1, kRow, 16}, P, bd.stride_aux));
  for (HostTensor* h : {&ha, &hb, &hc, &hbias}) reference::fill_random(*h, rng, -1, 1, false);
  // the activation backward reads aux: random mask bits, or pre-activations in [-3, 3]
  if (e.activation_grad && e.activation == GemmActivation::kRelu) {
    for (std::size_t i = 0; i < haux.storage_bytes(); ++i) haux.storage()[i] = static_cast<std::byte>(rng() & 0xFF);
  } else if (e.activation_grad) {
    reference::fill_random(haux, rng, -3, 3, false);
  }
  DeviceCopy da(ha, s), db(hb, s), dc(hc, s), dd(hd, s), dbias(hbias, s), dbg(hbg, s), daux(haux, s);
  const GemmArgs args{.a = da.data(), .b = db.data(), .c = g.with_c ? dc.data() : nullptr, .d = dd.data(),
                      .bias = e.bias ? dbias.data() : nullptr, .bias_grad = bgrad ? dbg.data() : nullptr,
                      .aux = e.aux ? daux.data() : nullptr, .alpha = alpha, .beta = beta};
  bool tf32 = false;
  auto launch = [&](const PlanT& p, Workspace ws) {
    tf32 = p.sku().precision.uses_tf32;
    dd.poison(s);
    dbg.poison(s);
    if (!e.activation_grad) daux.poison(s);  // an input of the backward
    return p.run(s, ws, args);
  };
  auto verify = [&] {
    auto o = reference::batched_gemm(bd, ha, hb, g.with_c ? &hc : nullptr, e.bias ? &hbias : nullptr, alpha, beta, tf32,
                                     e.activation_grad ? &haux : nullptr);
    if (!o) return reference::Comparison{.ok = false, .detail = "reference: " + o.error().to_string()};
    (void)dd.download(hd, s);
    auto c = reference::compare_gemm_d(hd, *o);
    if (c.ok && e.aux && !e.activation_grad) {
      (void)daux.download(haux, s);
      c = e.activation == GemmActivation::kRelu ? reference::compare_gemm_relu_mask(haux, *o, g.aux.ld, bd.stride_aux, g.aux.order == kRow)
                                                : reference::compare_gemm_aux_pre(haux, *o);
      if (!c.ok) c.detail = "aux: " + c.detail;
    }
    if (c.ok && bgrad) {
      (void)dbg.download(hbg, s);
      c = reference::compare_gemm_bias_grad(hbg, *o);
      if (!c.ok) c.detail = "bias_grad: " + c.detail;
    }
    return c;
  };
  PlanPreference tf32_too;
  tf32_too.math.allow_tf32 = true;
  if constexpr (std::is_same_v<PlanT, GemmPlan>) run_every_sku<GemmPlan>(s, g, rows, launch, verify, tf32_too);
  else run_every_sku<BatchedGemmPlan>(s, bd, rows, launch, verify, tf32_too);
}

void check_gemm_backward(const Stream& s, const GemmBackwardDescriptor& d, double alpha, std::mt19937_64& rng,
                         std::vector<CheckRow>& rows) {
  auto one = [](const TensorLayout& l) { return reference::batched_layout(l, 1, 0); };
  const DType t = d.grad_d.dtype;
  HostTensor ha(one(d.a.as_tensor())), hb(one(d.b.as_tensor())), hg(one(d.grad_d.as_tensor()));
  HostTensor hga(one(d.grad_a.as_tensor())), hgb(one(d.grad_b.as_tensor()));
  HostTensor hgbias(one(d.compute_grad_bias ? d.grad_bias : TensorLayout::contiguous(t, {1})));
  for (HostTensor* h : {&ha, &hb, &hg}) reference::fill_random(*h, rng, -1, 1, false);
  DeviceCopy da(ha, s), db(hb, s), dg(hg, s), dga(hga, s), dgb(hgb, s), dgbias(hgbias, s);
  run_every_sku<GemmBackwardPlan>(
      s, d, rows,
      [&](const GemmBackwardPlan& p, Workspace ws) {
        for (const DeviceCopy* out : {&dga, &dgb, &dgbias}) out->poison(s);
        return p.run(s, ws, {.a = da.data(), .b = db.data(), .grad_d = dg.data(), .grad_a = dga.data(), .grad_b = dgb.data(),
                             .grad_bias = d.compute_grad_bias ? dgbias.data() : nullptr, .alpha = alpha});
      },
      [&] {
        auto o = reference::gemm_backward(d, ha, hb, hg, alpha);
        if (!o) return reference::Comparison{.ok = false, .detail = "reference: " + o.error().to_string()};
        (void)dga.download(hga, s);
        (void)dgb.download(hgb, s);
        auto c = reference::compare_gemm_d(hga, o->grad_a);
        if (c.ok) c = reference::compare_gemm_d(hgb, o->grad_b);
        if (c.ok && d.compute_grad_bias) {
          (void)dgbias.download(hgbias, s);
          c = reference::compare_gemm_bias_grad(hgbias, o->grad_b);
        }
        return c;
      });
}

// 37x53x71 in each order of A and B: plain, with C (alpha, beta) and padded lds, the bias
// epilogues (not f64: cuBLASLt has none), the B bias gradient (B row-major, where cuBLASLt's
// fused BGRADB finds an algorithm, so the fused and the reduction SKUs both run); 3 batches
// with B broadcast; the backward with and without grad_bias; the activation backward
// (activation_grad, every activation, with and without bgrad_d).
std::vector<CheckRow> check_gemm(const Stream& s, DType t, std::mt19937_64& rng) {
  using A = GemmActivation;
  std::vector<CheckRow> rows;
  auto batch1 = [](const GemmDescriptor& g) { return BatchedGemmDescriptor{.gemm = g}; };
  for (const auto& o : kGemmOrders) {
    const GemmDescriptor plain = gemm_problem(t, 37, 53, 71, o[0], o[1]);
    check_gemm_case<GemmPlan>(s, batch1(plain), 1.0, 0.0, rng, rows);
    GemmDescriptor wc = gemm_problem(t, 37, 53, 71, o[0], o[1], 3);
    wc.with_c = true;
    wc.c = gemm_matrix(t, 37, 53, kRow, 4);
    check_gemm_case<GemmPlan>(s, batch1(wc), 0.75, -0.5, rng, rows);
    if (t != DType::kF64) {
      check_gemm_case<GemmPlan>(s, batch1(with_epilogue(plain, {A::kNone, true, false, GemmBiasGrad::kNone})), 1.0, 0.0, rng, rows);
      check_gemm_case<GemmPlan>(s, batch1(with_epilogue(plain, {A::kGeluTanh, true, true, GemmBiasGrad::kNone})), 1.0, 0.0, rng, rows);
      check_gemm_case<GemmPlan>(s, batch1(with_epilogue(wc, {A::kRelu, true, true, GemmBiasGrad::kNone})), 0.75, -0.5, rng, rows);
    }
    if (o[1] == kRow) check_gemm_case<GemmPlan>(s, batch1(with_epilogue(plain, {A::kNone, false, false, GemmBiasGrad::kB})), 1.0, 0.0, rng, rows);
    // the activation backward (DRELU / DGELU (+ BGRAD) and cublaslt_dact), every activation
    if (t != DType::kF64)
      for (A act : {A::kRelu, A::kGeluTanh, A::kGeluErf, A::kSilu})
        for (bool bgrad : {false, true})
          check_gemm_case<GemmPlan>(s, batch1(with_epilogue(plain, GemmEpilogue::activation_backward(act, bgrad))),
                                    bgrad ? 1.0 : 1.5, 0.0, rng, rows);

    BatchedGemmDescriptor b = batch1(wc);
    const auto span = [](const MatrixLayout& m) { return m.as_tensor().element_span().end_offset; };
    b.batch = 3;
    b.stride_a = span(b.gemm.a) + 5;
    b.stride_b = 0;  // broadcast
    b.stride_c = span(b.gemm.c) + 1;
    b.stride_d = span(b.gemm.d) + 2;
    check_gemm_case<BatchedGemmPlan>(s, b, 0.75, -0.5, rng, rows);

    for (bool bias : {false, true}) {
      GemmBackwardDescriptor d;
      d.a = gemm_matrix(t, 37, 71, o[0]);
      d.b = gemm_matrix(t, 71, 53, o[1], 3);
      d.grad_d = gemm_matrix(t, 37, 53, kRow, 5);
      d.grad_a = gemm_matrix(t, 37, 71, kRow);
      d.grad_b = gemm_matrix(t, 71, 53, o[1]);
      d.compute_grad_bias = bias;
      if (bias) d.grad_bias = TensorLayout::contiguous(t, {53});
      check_gemm_backward(s, d, bias ? 1.0 : 1.5, rng, rows);  // run() takes alpha = 1 with grad_bias
    }
  }
  return rows;
}

// ---- int4_gemm: Int4GemmPlan (W4A16) against reference::int4_gemm (exact dequantization,
// f64 sums; the bound of reference/gemm_int4.hpp), every accepting SKU.
Int4GemmDescriptor int4_problem(DType t, std::int64_t m, std::int64_t n, std::int64_t k, DType w, std::int64_t group, bool bias) {
  Int4GemmDescriptor d;
  d.x = MatrixLayout{t, m, k, k, kRow, 16};
  d.w = MatrixLayout{w, n, k, k, kRow, 16};
  d.y = MatrixLayout{t, m, n, n, kRow, 16};
  d.group_size = group;
  d.zeros = w == DType::kU4;
  d.bias = bias;
  return d;
}

std::vector<CheckRow> check_int4_gemm(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const Int4GemmDescriptor cases[] = {int4_problem(t, 1, 333, 512, DType::kS4, 128, true),
                                      int4_problem(t, 7, 1001, 384, DType::kU4, 64, false),
                                      int4_problem(t, 16, 257, 1024, DType::kU4, 32, true),
                                      int4_problem(t, 37, 200, 256, DType::kS4, 256, true)};
  for (const auto& d : cases) {
    HostTensor hx(d.x.as_tensor()), hw(d.w.as_tensor()), hy(d.y.as_tensor());
    HostTensor hs(TensorLayout::contiguous(t, {d.n(), d.groups()})), hz(TensorLayout::contiguous(t, {d.n(), d.groups()}));
    HostTensor hb(TensorLayout::contiguous(t, {d.n()}));
    reference::fill_random(hx, rng, -1, 1, false);
    reference::fill_random(hb, rng, -1, 1, false);
    reference::fill_random(hs, rng, 0.002, 0.02, false);
    for (std::int64_t i = 0; i < hz.layout().numel(); ++i) hz.set(i, static_cast<double>(rng() % 17));
    auto* wb = reinterpret_cast<unsigned char*>(hw.storage());
    for (std::size_t i = 0; i < hw.storage_bytes(); ++i) wb[i] = static_cast<unsigned char>(rng());
    auto want = reference::int4_gemm(d, hx, hw, hs, &hz, &hb).value();
    DeviceCopy dx(hx, s), dw(hw, s), ds(hs, s), dz(hz, s), db(hb, s), dy(hy, s);
    run_every_sku<Int4GemmPlan>(
        s, d, rows,
        [&](const Int4GemmPlan& p, Workspace ws) {
          dy.poison(s);
          return p.run(s, ws, {.x = dx.data(), .w = dw.data(), .scales = ds.data(), .zeros = dz.data(), .bias = db.data(), .y = dy.data()});
        },
        [&] {
          (void)dy.download(hy, s);
          return reference::compare_quant_gemm(hy, d.y, want);
        });
  }
  return rows;
}

// ---- bin_gemm: BinGemmPlan against reference::bin_gemm (exact), every accepting SKU; random
// bits everywhere (also past K and in the ld padding: the kernels must mask them).
BinGemmDescriptor bin_problem(std::int64_t m, std::int64_t n, std::int64_t k, BinGemmOp op, bool acc, std::int64_t pad = 0) {
  const std::int64_t w = (k + 31) / 32;
  BinGemmDescriptor d;
  d.a = MatrixLayout{DType::kU32, m, w, w + pad, kRow, 4};
  d.b = MatrixLayout{DType::kU32, n, w, w + pad, kRow, 4};
  d.d = MatrixLayout{DType::kI32, m, n, n + pad, kRow, 4};
  d.k = k;
  d.op = op;
  d.accumulate = acc;
  return d;
}

std::vector<CheckRow> check_bin_gemm(const Stream& s, DType, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const BinGemmDescriptor cases[] = {bin_problem(256, 256, 1024, BinGemmOp::kXnorDot, false),
                                     bin_problem(131, 257, 1000, BinGemmOp::kXnorCount, true, 3),
                                     bin_problem(7, 333, 33, BinGemmOp::kAndCount, true),
                                     bin_problem(129, 5, 1, BinGemmOp::kXnorDot, false, 1)};
  for (const auto& d : cases) {
    HostTensor ha(d.a.as_tensor()), hb(d.b.as_tensor()), hc(d.d.as_tensor()), hd(d.d.as_tensor());
    for (HostTensor* t : {&ha, &hb, &hc}) {
      auto* p = reinterpret_cast<unsigned char*>(t->storage());
      for (std::size_t i = 0; i < t->storage_bytes(); ++i) p[i] = static_cast<unsigned char>(rng());
    }
    auto want = reference::bin_gemm(d, ha, hb, &hc).value();
    DeviceCopy da(ha, s), db(hb, s), dc(hc, s), dd(hd, s);
    run_every_sku<BinGemmPlan>(
        s, d, rows,
        [&](const BinGemmPlan& p, Workspace ws) {
          dd.poison(s);
          return p.run(s, ws, {.a = da.data(), .b = db.data(), .c = d.accumulate ? dc.data() : nullptr, .d = dd.data()});
        },
        [&] {
          (void)dd.download(hd, s);
          return reference::compare_bin_gemm(hd, d.d, want);
        });
  }
  return rows;
}

// ---- scans (cumsum, cummax, logcumsumexp forward; cumsum backward) against reference::scan
// with compare's tolerance (the error scales of reference/scan.hpp); cummax bit-exact.
std::vector<CheckRow> check_scan(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const std::pair<TensorLayout, int> cases[] = {{TensorLayout::contiguous(t, {37, 1031}), -1},
                                                {TensorLayout::contiguous(t, {3, 300000}), -1},  // look-back
                                                {TensorLayout::contiguous(t, {37, 1031}), 0}};   // column
  for (auto kind : {ScanKind::kCumsum, ScanKind::kCummax, ScanKind::kLogcumsumexp})
    for (const auto& [x, axis] : cases) {
      const bool idx = kind == ScanKind::kCummax;
      const TensorLayout il = TensorLayout::contiguous(DType::kI64, x.shape_span());
      ScanDescriptor d{x, x, idx ? il : TensorLayout{}, axis, kind};
      HostTensor hx(x), hy(x);
      reference::fill_random(hx, rng, -1, 1, false);
      auto want = reference::scan(d, hx).value();
      DeviceCopy dx(hx, s), dy(hy, s), di(HostTensor(il), s);
      run_every_sku<ScanPlan>(
          s, d, rows,
          [&](const ScanPlan& p, Workspace ws) {
            dy.poison(s);
            return p.run(s, ws, {.x = dx.data(), .y = dy.data(), .indices = idx ? di.data() : nullptr});
          },
          [&] {
            (void)dy.download(hy, s);
            return reference::compare(hy, want.values, idx);
          });
      if (kind != ScanKind::kCumsum) continue;
      ScanBackwardDescriptor bd{x, x, x, il, x, axis, kind};
      auto bwant = reference::scan_backward(bd, hx, nullptr, nullptr, nullptr).value();
      run_every_sku<ScanBackwardPlan>(
          s, bd, rows,
          [&](const ScanBackwardPlan& p, Workspace ws) {
            dy.poison(s);
            return p.run(s, ws, {.grad_y = dx.data(), .grad_x = dy.data()});
          },
          [&] {
            (void)dy.download(hy, s);
            return reference::compare(hy, bwant, false);
          });
    }
  return rows;
}

// Runs forward descriptor d under every SKU on `hx` (make(x, y) -> args), y poisoned,
// compared with `want`.
template <class PlanT, class MakeArgs>
void check_row_forward(const Stream& s, const typename PlanT::Descriptor& d, std::vector<CheckRow>& rows,
                       const HostTensor& hx, HostTensor& hy, const reference::Result& want, MakeArgs make) {
  DeviceCopy dx(hx, s), dy(hy, s);
  run_every_sku<PlanT>(
      s, d, rows,
      [&](const PlanT& p, Workspace ws) {
        dy.poison(s);
        return p.run(s, ws, make(dx.data(), dy.data()));
      },
      [&] {
        (void)dy.download(hy, s);
        return reference::compare(hy, want, false);
      });
}

// Runs backward descriptor bd under every SKU on grad_y `hg` and the saved forward output
// `hy` (make(grad_y, y, grad_x) -> args), grad_x poisoned, compared with `want`.
template <class PlanT, class MakeArgs>
void check_row_backward(const Stream& s, const typename PlanT::Descriptor& bd, std::vector<CheckRow>& rows,
                        const HostTensor& hg, const HostTensor& hy, HostTensor& hgx, const reference::Result& want,
                        MakeArgs make) {
  DeviceCopy dg(hg, s), dy(hy, s), dgx(hgx, s);
  run_every_sku<PlanT>(
      s, bd, rows,
      [&](const PlanT& p, Workspace ws) {
        dgx.poison(s);
        return p.run(s, ws, make(dg.data(), dy.data(), dgx.data()));
      },
      [&] {
        (void)dgx.download(hgx, s);
        return reference::compare(hgx, want, false);
      });
}

// ---- softmax / log_softmax, forward and backward, against reference::softmax(_backward)
// with compare's tolerance (the error scale of reference/softmax.hpp).
std::vector<CheckRow> check_softmax(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  struct Case {
    TensorLayout x;
    int axis;
  };
  const Case cases[] = {{TensorLayout::contiguous(t, {37, 1031}), -1},
                        {TensorLayout::strided(t, {37, 1024}, {1032, 1}), -1},  // padded rows: the vec16 SKUs
                        {TensorLayout::strided(t, {37, 1031}, {1, 37}), -1},    // strided along the axis
                        {TensorLayout::contiguous(t, {37, 1031}), 0}};          // not the last axis
  for (auto kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax})
    for (const auto& c : cases) {
      const TensorLayout y = TensorLayout::contiguous(t, c.x.shape_span());
      SoftmaxDescriptor d{c.x, y, c.axis, kind};
      HostTensor hx(c.x), hy(y);
      reference::fill_random(hx, rng, -20, 10, false);
      auto want = reference::softmax(d, hx).value();
      check_row_forward<SoftmaxPlan>(s, d, rows, hx, hy, want,
                                     [](const void* xx, void* yy) { return SoftmaxArgs{.x = xx, .y = yy}; });
      // backward: y the forward of random values rounded to the dtype, grad_y in the case's layout
      SoftmaxBackwardDescriptor bd{c.x, y, y, c.axis, kind};
      HostTensor hfy(y), hg(c.x), hgx(y);
      reference::fill_random(hfy, rng, -20, 10, false);
      const auto fy = reference::softmax(SoftmaxDescriptor{y, y, c.axis, kind}, hfy).value();
      for (std::int64_t i = 0; i < y.numel(); ++i) hfy.set(i, fy.exact[static_cast<std::size_t>(i)]);
      reference::fill_random(hg, rng, -2, 2, false);
      auto bwant = reference::softmax_backward(bd, hg, hfy).value();
      check_row_backward<SoftmaxBackwardPlan>(s, bd, rows, hg, hfy, hgx, bwant, [](const void* g, const void* yy, void* gx) {
        return SoftmaxBackwardArgs{.grad_y = g, .y = yy, .grad_x = gx};
      });
    }
  return rows;
}

// ---- gumbel_softmax (soft, Philox noise reproduced by the host twin; hard checked for a
// one-hot at the max of z) and sparsemax, forward and backward, against their references
// with compare's tolerance; contiguous, padded rows, strided axis, first axis.
std::vector<TensorLayout> row_op_check_layouts(DType t) {
  return {TensorLayout::contiguous(t, {37, 1031}), TensorLayout::strided(t, {37, 1024}, {1032, 1}),
          TensorLayout::strided(t, {37, 1031}, {1, 37}), TensorLayout::contiguous(t, {37, 1031})};
}
int row_op_check_axis(std::size_t i) { return i == 3 ? 0 : -1; }

std::vector<CheckRow> check_gumbel_softmax(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const auto layouts = row_op_check_layouts(t);
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const TensorLayout& x = layouts[i];
    const TensorLayout y = TensorLayout::contiguous(t, x.shape_span());
    const int axis = row_op_check_axis(i);
    for (bool hard : {false, true}) {
      GumbelSoftmaxDescriptor d{.x = x, .y = y, .y_soft = y, .axis = axis, .tau = 0.7, .hard = hard, .save_soft = hard};
      HostTensor hx(x), hy(y), hys(y);
      reference::fill_random(hx, rng, -4, 4, false);
      const std::uint64_t seed = rng(), offset = rng() >> 16;
      auto want = reference::gumbel_softmax(d, hx, nullptr, seed, offset).value();
      DeviceCopy dx(hx, s), dy(hy, s), dys(hys, s);
      run_every_sku<GumbelSoftmaxPlan>(
          s, d, rows,
          [&](const GumbelSoftmaxPlan& p, Workspace ws) {
            dy.poison(s);
            dys.poison(s);
            return p.run(s, ws, {.x = dx.data(), .y = dy.data(), .y_soft = dys.data(), .seed = seed, .offset = offset});
          },
          [&] {
            (void)dy.download(hy, s);
            (void)dys.download(hys, s);
            auto c = reference::compare(hard ? hys : hy, want.y_soft, false);
            if (hard) {  // one 1 per row, at the max of z
              const reference::AxisRows a = reference::axis_rows(x, axis);
              for (std::int64_t r = 0; r < a.rows && c.ok; ++r) {
                double ones = 0, zmax = -1e300, zpick = 0;
                for (std::int64_t k = 0; k < a.len; ++k) {
                  const std::int64_t j = a.index(r, k);
                  ones += hy.get(j);
                  zmax = std::max(zmax, want.z[static_cast<std::size_t>(j)]);
                  if (hy.get(j) == 1.0) zpick = want.z[static_cast<std::size_t>(j)];
                }
                if (ones != 1.0 || zpick < zmax - 2e-5 * (1 + std::fabs(zmax))) {
                  c.ok = false;
                  c.detail = "hard row " + std::to_string(r) + " is not the one-hot of max z";
                }
              }
            }
            return c;
          });
    }
    GumbelSoftmaxBackwardDescriptor bd{x, y, y, axis, 0.7};
    HostTensor hfy(y), hg(x), hgx(y);
    reference::fill_random(hfy, rng, -4, 4, false);
    const auto fy = reference::gumbel_softmax(GumbelSoftmaxDescriptor{.x = y, .y = y, .axis = axis, .tau = 0.7}, hfy,
                                              nullptr, rng(), 0).value();
    for (std::int64_t j = 0; j < y.numel(); ++j) hfy.set(j, fy.y.exact[static_cast<std::size_t>(j)]);
    reference::fill_random(hg, rng, -2, 2, false);
    auto bwant = reference::gumbel_softmax_backward(bd, hg, hfy).value();
    check_row_backward<GumbelSoftmaxBackwardPlan>(s, bd, rows, hg, hfy, hgx, bwant, [](const void* g, const void* yy, void* gx) {
      return GumbelSoftmaxBackwardArgs{.grad_y = g, .y_soft = yy, .grad_x = gx};
    });
  }
  return rows;
}

std::vector<CheckRow> check_sparsemax(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const auto layouts = row_op_check_layouts(t);
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const TensorLayout& x = layouts[i];
    const TensorLayout y = TensorLayout::contiguous(t, x.shape_span());
    const int axis = row_op_check_axis(i);
    SparsemaxDescriptor d{x, y, axis};
    HostTensor hx(x), hy(y);
    reference::fill_random(hx, rng, -2, 2, false);
    auto want = reference::sparsemax(d, hx).value();
    check_row_forward<SparsemaxPlan>(s, d, rows, hx, hy, want,
                                     [](const void* xx, void* yy) { return SparsemaxArgs{.x = xx, .y = yy}; });
    SparsemaxBackwardDescriptor bd{x, y, y, axis};
    HostTensor hfy(y), hg(x), hgx(y);
    reference::fill_random(hfy, rng, -1, 1, false);
    const auto fy = reference::sparsemax(SparsemaxDescriptor{y, y, axis}, hfy).value();
    for (std::int64_t j = 0; j < y.numel(); ++j) hfy.set(j, fy.exact[static_cast<std::size_t>(j)]);
    reference::fill_random(hg, rng, -2, 2, false);
    auto bwant = reference::sparsemax_backward(bd, hg, hfy).value();
    check_row_backward<SparsemaxBackwardPlan>(s, bd, rows, hg, hfy, hgx, bwant, [](const void* g, const void* yy, void* gx) {
      return SparsemaxBackwardArgs{.grad_y = g, .y = yy, .grad_x = gx};
    });
  }
  return rows;
}

// ---- LayerNorm / RMSNorm forward (affine, and with the fused residual add) and backward
// against reference::norm_forward / norm_backward with compare's tolerance (the error
// scales of reference/normalization.hpp). Statistics are f32 (f64 for f64).
std::vector<TensorLayout> norm_check_layouts(DType t) {
  return {TensorLayout::contiguous(t, {37, 1031}),
          TensorLayout::strided(t, {37, 1024}, {1032, 1})};  // padded rows (strided kept dim): the vec16 SKUs
}
TensorLayout norm_stats_layout(DType t, std::int64_t rows) {
  return TensorLayout::contiguous(t == DType::kF64 ? DType::kF64 : DType::kF32, {rows});
}

template <class PlanT>
void check_norm_forward(const Stream& s, typename PlanT::Descriptor d, const TensorLayout& x, bool residual,
                        std::mt19937_64& rng, std::vector<CheckRow>& rows) {
  const DType t = x.dtype;
  const bool layer = d.kind == NormKind::kLayerNorm;
  d.x = x;
  d.y = d.residual = d.residual_out = TensorLayout::contiguous(t, x.shape_span());
  d.weight = d.bias = TensorLayout::contiguous(t, {x.shape[x.rank - 1]});
  d.add_residual = residual;
  HostTensor hx(x), hr(d.residual), hw(d.weight), hb(d.bias), hy(d.y), hro(d.residual_out);
  reference::fill_random(hx, rng, -3, 3, false);
  reference::fill_random(hr, rng, -1, 1, false);
  reference::fill_random(hw, rng, 0.5, 1.5, false);
  reference::fill_random(hb, rng, -1, 1, false);
  auto want = reference::norm_forward(d, hx, residual ? &hr : nullptr, &hw, d.has_bias ? &hb : nullptr).value();
  const TensorLayout sl = norm_stats_layout(t, static_cast<std::int64_t>(want.rstd.exact.size()));
  HostTensor hmean(sl), hrstd(sl);
  DeviceCopy dx(hx, s), dr(hr, s), dw(hw, s), db(hb, s), dy(hy, s), dro(hro, s), dmean(hmean, s), drstd(hrstd, s);
  run_every_sku<PlanT>(
      s, d, rows,
      [&](const PlanT& p, Workspace ws) {
        for (const DeviceCopy* out : {&dy, &dro, &dmean, &drstd}) out->poison(s);
        return p.run(s, ws, {.x = dx.data(), .residual = dr.data(), .weight = dw.data(), .bias = db.data(), .y = dy.data(),
                             .residual_out = dro.data(), .mean = dmean.data(), .rstd = drstd.data()});
      },
      [&] {
        (void)dy.download(hy, s);
        auto c = reference::compare(hy, want.y, false);
        if (c.ok && residual) {
          (void)dro.download(hro, s);
          c = reference::compare(hro, want.residual_out, false);
        }
        if (c.ok) {
          (void)drstd.download(hrstd, s);
          c = reference::compare(hrstd, want.rstd, false);
        }
        if (c.ok && layer) {
          (void)dmean.download(hmean, s);
          c = reference::compare(hmean, want.mean, false);
        }
        return c;
      });
}

template <class PlanT>
void check_norm_backward(const Stream& s, typename PlanT::Descriptor d, const TensorLayout& gy, std::mt19937_64& rng,
                         std::vector<CheckRow>& rows) {
  const DType t = gy.dtype;
  d.grad_y = gy;
  d.x = d.grad_x = TensorLayout::contiguous(t, gy.shape_span());
  d.weight = d.grad_weight = d.grad_bias = TensorLayout::contiguous(t, {gy.shape[gy.rank - 1]});
  HostTensor hg(gy), hx(d.x), hw(d.weight), hgx(d.grad_x), hgw(d.weight), hgb(d.weight);
  reference::fill_random(hg, rng, -1, 1, false);
  reference::fill_random(hx, rng, -3, 3, false);
  reference::fill_random(hw, rng, 0.5, 1.5, false);
  // the saved statistics: the forward's, rounded to the statistics dtype as the forward stores them
  NormDescriptor fd;
  fd.kind = d.kind;
  fd.x = fd.y = d.x;
  fd.has_weight = fd.has_bias = false;
  const auto f = reference::norm_forward(fd, hx, nullptr, nullptr, nullptr).value();
  const TensorLayout sl = norm_stats_layout(t, static_cast<std::int64_t>(f.rstd.exact.size()));
  HostTensor hmean(sl), hrstd(sl);
  std::vector<double> mean(f.rstd.exact.size()), rstd(mean.size());
  for (std::size_t r = 0; r < mean.size(); ++r) {
    hmean.set(static_cast<std::int64_t>(r), d.kind == NormKind::kLayerNorm ? f.mean.exact[r] : 0.0);
    hrstd.set(static_cast<std::int64_t>(r), f.rstd.exact[r]);
    mean[r] = hmean.get(static_cast<std::int64_t>(r));
    rstd[r] = hrstd.get(static_cast<std::int64_t>(r));
  }
  auto want = reference::norm_backward(d, hg, hx, &hw, mean, rstd).value();
  DeviceCopy dg(hg, s), dx(hx, s), dw(hw, s), dmean(hmean, s), drstd(hrstd, s), dgx(hgx, s), dgw(hgw, s), dgb(hgb, s);
  run_every_sku<PlanT>(
      s, d, rows,
      [&](const PlanT& p, Workspace ws) {
        for (const DeviceCopy* out : {&dgx, &dgw, &dgb}) out->poison(s);
        return p.run(s, ws, {.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .mean = dmean.data(), .rstd = drstd.data(),
                             .grad_x = dgx.data(), .grad_weight = dgw.data(), .grad_bias = dgb.data()});
      },
      [&] {
        (void)dgx.download(hgx, s);
        auto c = reference::compare(hgx, want.grad_x, false);
        if (c.ok) {
          (void)dgw.download(hgw, s);
          c = reference::compare(hgw, want.grad_weight, false);
        }
        if (c.ok && d.has_bias) {
          (void)dgb.download(hgb, s);
          c = reference::compare(hgb, want.grad_bias, false);
        }
        return c;
      });
}

std::vector<CheckRow> check_normalization(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (const auto& x : norm_check_layouts(t)) {
    for (bool residual : {false, true}) {
      check_norm_forward<LayerNormPlan>(s, LayerNormDescriptor{}, x, residual, rng, rows);
      check_norm_forward<RMSNormPlan>(s, RMSNormDescriptor{}, x, residual, rng, rows);
    }
    check_norm_backward<LayerNormBackwardPlan>(s, LayerNormBackwardDescriptor{}, x, rng, rows);
    check_norm_backward<RMSNormBackwardPlan>(s, RMSNormBackwardDescriptor{}, x, rng, rows);
  }
  return rows;
}

// ---- BatchNorm (training: y, saved mean / invstd; backward) and GroupNorm / InstanceNorm
// (forward, GroupNorm backward) on an NCHW tensor (planes_vec16) and an odd spatial size
// (planes_strided), against reference::*_norm_* with compare's tolerance.
reference::Comparison compare_outputs(const Stream& s, std::initializer_list<std::pair<DeviceCopy*, HostTensor*>> outs,
                                     std::initializer_list<const reference::Result*> wants) {
  reference::Comparison c;
  auto w = wants.begin();
  for (const auto& [dev, host] : outs) {
    (void)dev->download(*host, s);
    c = reference::compare(*host, **w++, false);
    if (!c.ok) break;
  }
  return c;
}
std::vector<CheckRow> check_channel_norm(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const DType st = t == DType::kF64 ? DType::kF64 : DType::kF32;
  for (const auto& x : {TensorLayout::contiguous(t, {4, 32, 16, 16}), TensorLayout::contiguous(t, {3, 12, 7, 7})}) {
    const std::int64_t N = x.shape[0], C = x.shape[1];
    const auto cl = TensorLayout::contiguous(t, {C});
    HostTensor hx(x), hg(x), hw(cl), hb(cl), hy(x), hgx(x), hgw(cl), hgb(cl);
    reference::fill_random(hx, rng, -3, 3, false);
    reference::fill_random(hg, rng, -1, 1, false);
    reference::fill_random(hw, rng, 0.5, 1.5, false);
    reference::fill_random(hb, rng, -1, 1, false);
    DeviceCopy dx(hx, s), dg(hg, s), dw(hw, s), db(hb, s), dy(hy, s), dgx(hgx, s), dgw(hgw, s), dgb(hgb, s);
    auto saved = [&](const reference::Result& r, std::int64_t n) {
      HostTensor h(TensorLayout::contiguous(st, {n}));
      std::vector<double> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        h.set(i, r.exact[static_cast<std::size_t>(i)]);
        v[static_cast<std::size_t>(i)] = h.get(i);
      }
      return std::make_pair(std::move(h), std::move(v));
    };
    {  // BatchNorm training (no running stats) and its backward
      BatchNormDescriptor d;
      d.x = d.y = x;
      d.weight = d.bias = cl;
      d.has_running_stats = false;
      const auto want = reference::batch_norm_forward(d, hx, &hw, &hb, nullptr, nullptr).value();
      HostTensor hm(TensorLayout::contiguous(st, {C})), hr(hm.layout());
      DeviceCopy dm(hm, s), dr(hr, s);
      run_every_sku<BatchNormPlan>(
          s, d, rows,
          [&](const BatchNormPlan& p, Workspace ws) {
            for (const DeviceCopy* o : {&dy, &dm, &dr}) o->poison(s);
            return p.run(s, ws, {.x = dx.data(), .weight = dw.data(), .bias = db.data(), .y = dy.data(),
                                 .save_mean = dm.data(), .save_invstd = dr.data()});
          },
          [&] { return compare_outputs(s, {{&dy, &hy}, {&dm, &hm}, {&dr, &hr}}, {&want.y, &want.mean, &want.rstd}); });
      BatchNormBackwardDescriptor bd;
      bd.grad_y = bd.x = bd.grad_x = x;
      bd.weight = bd.grad_weight = bd.grad_bias = cl;
      auto [sm, mean] = saved(want.mean, C);
      auto [sr, rstd] = saved(want.rstd, C);
      const auto bwant = reference::batch_norm_backward(bd, hg, hx, &hw, mean, rstd, nullptr, nullptr).value();
      DeviceCopy dsm(sm, s), dsr(sr, s);
      run_every_sku<BatchNormBackwardPlan>(
          s, bd, rows,
          [&](const BatchNormBackwardPlan& p, Workspace ws) {
            for (const DeviceCopy* o : {&dgx, &dgw, &dgb}) o->poison(s);
            return p.run(s, ws, {.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .save_mean = dsm.data(),
                                 .save_invstd = dsr.data(), .grad_x = dgx.data(), .grad_weight = dgw.data(),
                                 .grad_bias = dgb.data()});
          },
          [&] {
            return compare_outputs(s, {{&dgx, &hgx}, {&dgw, &hgw}, {&dgb, &hgb}},
                                        {&bwant.grad_x, &bwant.grad_weight, &bwant.grad_bias});
          });
    }
    {  // GroupNorm (4 groups) and its backward
      GroupNormDescriptor d;
      d.x = d.y = x;
      d.num_groups = 4;
      d.weight = d.bias = cl;
      const auto want = reference::group_norm_forward(d, hx, &hw, &hb).value();
      HostTensor hm(TensorLayout::contiguous(st, {N * 4})), hr(hm.layout());
      DeviceCopy dm(hm, s), dr(hr, s);
      run_every_sku<GroupNormPlan>(
          s, d, rows,
          [&](const GroupNormPlan& p, Workspace ws) {
            for (const DeviceCopy* o : {&dy, &dm, &dr}) o->poison(s);
            return p.run(s, ws, {.x = dx.data(), .weight = dw.data(), .bias = db.data(), .y = dy.data(), .mean = dm.data(),
                                 .rstd = dr.data()});
          },
          [&] { return compare_outputs(s, {{&dy, &hy}, {&dm, &hm}, {&dr, &hr}}, {&want.y, &want.mean, &want.rstd}); });
      GroupNormBackwardDescriptor bd;
      bd.grad_y = bd.x = bd.grad_x = x;
      bd.num_groups = 4;
      bd.weight = bd.grad_weight = bd.grad_bias = cl;
      auto [sm, mean] = saved(want.mean, N * 4);
      auto [sr, rstd] = saved(want.rstd, N * 4);
      const auto bwant = reference::group_norm_backward(bd, hg, hx, &hw, mean, rstd).value();
      DeviceCopy dsm(sm, s), dsr(sr, s);
      run_every_sku<GroupNormBackwardPlan>(
          s, bd, rows,
          [&](const GroupNormBackwardPlan& p, Workspace ws) {
            for (const DeviceCopy* o : {&dgx, &dgw, &dgb}) o->poison(s);
            return p.run(s, ws, {.grad_y = dg.data(), .x = dx.data(), .weight = dw.data(), .mean = dsm.data(),
                                 .rstd = dsr.data(), .grad_x = dgx.data(), .grad_weight = dgw.data(), .grad_bias = dgb.data()});
          },
          [&] {
            return compare_outputs(s, {{&dgx, &hgx}, {&dgw, &hgw}, {&dgb, &hgb}},
                                        {&bwant.grad_x, &bwant.grad_weight, &bwant.grad_bias});
          });
    }
    {  // InstanceNorm (input stats)
      InstanceNormDescriptor d;
      d.x = d.y = x;
      d.weight = d.bias = cl;
      const auto want = reference::instance_norm_forward(d, hx, &hw, &hb, nullptr, nullptr).value();
      HostTensor hm(TensorLayout::contiguous(st, {N * C})), hr(hm.layout());
      DeviceCopy dm(hm, s), dr(hr, s);
      run_every_sku<InstanceNormPlan>(
          s, d, rows,
          [&](const InstanceNormPlan& p, Workspace ws) {
            for (const DeviceCopy* o : {&dy, &dm, &dr}) o->poison(s);
            return p.run(s, ws, {.x = dx.data(), .weight = dw.data(), .bias = db.data(), .y = dy.data(), .mean = dm.data(),
                                 .rstd = dr.data()});
          },
          [&] { return compare_outputs(s, {{&dy, &hy}, {&dm, &hm}, {&dr, &hr}}, {&want.y, &want.mean, &want.rstd}); });
    }
  }
  return rows;
}

// ---- paged_decode / kv_cache_append (issue 6): SdpaDecodePlan against reference::sdpa_decode
// (flash-attn's rule, decode.hpp), every accepting SKU; shuffled pages, NaN in every cache row
// no sequence uses. KvCacheAppendPlan bit-exact over the caches' whole storage.
std::vector<CheckRow> check_decode(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  struct Problem {
    reference::DecodeShape shape;
    std::vector<std::int32_t> lens;
  };
  const Problem cases[] = {{reference::decode_shape(t, 3, 2, 8, 2, 128, 16, 20, true), {0, 17, 300}},
                           {reference::decode_shape(t, 2, 1, 32, 8, 64, 32, 8, false), {1, 256}},
                           {reference::decode_shape(t, 1, 4, 16, 2, 128, 256, 16, true), {3000}}};  // splits the KV length
  for (const auto& c : cases) {
    const auto d = reference::decode_descriptor(c.shape);
    HostTensor q(d.q), k(d.k_cache), v(d.v_cache), bt(d.block_table), lens(d.seqlens_k), o(d.o), lse(d.lse);
    reference::fill_random(q, rng, -3, 3, false);
    reference::fill_random(k, rng, -1, 1, false);
    reference::fill_random(v, rng, -1, 1, false);
    if (d.paged()) reference::fill_block_table(bt, d.k_cache.shape[0], rng);
    for (std::size_t b = 0; b < c.lens.size(); ++b) lens.set(static_cast<std::int64_t>(b), c.lens[b]);
    reference::poison_unused_rows(k, d.paged() ? &bt : nullptr, c.lens);
    reference::poison_unused_rows(v, d.paged() ? &bt : nullptr, c.lens);
    auto want = reference::sdpa_decode(d, q, k, v, d.paged() ? &bt : nullptr, lens, nullptr).value();
    DeviceCopy dq(q, s), dk(k, s), dv(v, s), dbt(bt, s), dl(lens, s), dout(o, s), dlse(lse, s);
    run_every_sku<SdpaDecodePlan>(
        s, d, rows,
        [&](const SdpaDecodePlan& p, Workspace ws) {
          dout.poison(s);
          dlse.poison(s);
          return p.run(s, ws,
                       {.q = dq.data(), .k_cache = dk.data(), .v_cache = dv.data(),
                        .block_table = d.paged() ? static_cast<const std::int32_t*>(dbt.data()) : nullptr,
                        .seqlens_k = static_cast<const std::int32_t*>(dl.data()), .o = dout.data(),
                        .lse = static_cast<float*>(dlse.data())});
        },
        [&] {
          (void)dout.download(o, s);
          (void)dlse.download(lse, s);
          return reference::compare_decode(o, &lse, want);
        });
  }
  return rows;
}

std::vector<CheckRow> check_kv_cache(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  struct Problem {
    reference::DecodeShape shape;
    std::vector<std::int32_t> starts;
  };
  const Problem cases[] = {{reference::decode_shape(t, 4, 1, 1, 8, 128, 16, 4, true), {0, 15, 63, 64}},
                           {reference::decode_shape(t, 2, 5, 1, 2, 3, 8, 4, false), {0, 29}}};
  auto random_bytes = [&](HostTensor& h) {
    auto* p = reinterpret_cast<unsigned char*>(h.storage());
    for (std::size_t i = 0; i < h.storage_bytes(); ++i) p[i] = static_cast<unsigned char>(rng());
  };
  for (const auto& c : cases) {
    const auto d = reference::append_descriptor(c.shape);
    HostTensor kn(d.k_new), vn(d.v_new), kc(d.k_cache), vc(d.v_cache), bt(d.block_table), starts(d.cache_seqlens);
    for (HostTensor* h : {&kn, &vn, &kc, &vc}) random_bytes(*h);
    if (d.paged()) reference::fill_block_table(bt, d.k_cache.shape[0], rng);
    for (std::size_t b = 0; b < c.starts.size(); ++b) starts.set(static_cast<std::int64_t>(b), c.starts[b]);
    HostTensor want_k = kc, want_v = vc, got_k = kc, got_v = vc;
    (void)reference::kv_cache_append(d, kn, vn, want_k, want_v, d.paged() ? &bt : nullptr, starts);
    DeviceCopy dkn(kn, s), dvn(vn, s), dkc(kc, s), dvc(vc, s), dbt(bt, s), dst(starts, s);
    run_every_sku<KvCacheAppendPlan>(
        s, d, rows,
        [&](const KvCacheAppendPlan& p, Workspace ws) {
          (void)copy_to_device(dkc.buf.data(), kc.storage(), kc.storage_bytes(), s);
          (void)copy_to_device(dvc.buf.data(), vc.storage(), vc.storage_bytes(), s);
          return p.run(s, ws,
                       {.k_new = dkn.data(), .v_new = dvn.data(), .k_cache = dkc.data(), .v_cache = dvc.data(),
                        .block_table = d.paged() ? static_cast<const std::int32_t*>(dbt.data()) : nullptr,
                        .cache_seqlens = static_cast<const std::int32_t*>(dst.data())});
        },
        [&] {
          (void)dkc.download(got_k, s);
          (void)dvc.download(got_v, s);
          reference::Comparison cmp;
          cmp.checked = static_cast<std::int64_t>(got_k.storage_bytes() + got_v.storage_bytes());
          cmp.ok = std::memcmp(got_k.storage(), want_k.storage(), got_k.storage_bytes()) == 0 &&
                   std::memcmp(got_v.storage(), want_v.storage(), got_v.storage_bytes()) == 0;
          if (!cmp.ok) cmp.detail = "cache bytes differ from the reference append";
          return cmp;
        });
  }
  return rows;
}

}  // namespace

// ---- rope / alibi (issue 6, attention positional ops)
std::vector<CheckRow> check_rope(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const auto x = TensorLayout::contiguous(t, {2, 37, 4, 64});
  const auto k = TensorLayout::contiguous(t, {2, 37, 2, 64});
  const auto cache = TensorLayout::contiguous(DType::kF32, {64, 32});
  const auto ids = TensorLayout::contiguous(DType::kI64, {2, 37});
  HostTensor hx(x), hk(k), hy(x), hy2(k), hc(cache), hsn(cache), hids(ids);
  reference::fill_random(hx, rng, -4, 4, false);
  reference::fill_random(hk, rng, -4, 4, false);
  reference::fill_random(hc, rng, -1, 1, false);
  reference::fill_random(hsn, rng, -1, 1, false);
  for (std::int64_t i = 0; i < ids.numel(); ++i) hids.set(i, static_cast<double>((i * 17) % 64));
  DeviceCopy dx(hx, s), dk(hk, s), dy(hy, s), dy2(hy2, s), dc(hc, s), dsn(hsn, s), dids(hids, s);
  RopeDescriptor cached{.x = x, .y = x, .x2 = k, .y2 = k, .position_ids = ids, .cos = cache, .sin = cache};
  RopeDescriptor tables{.x = x, .y = x};
  tables.options.style = RopeStyle::kInterleaved;
  tables.options.scaling = RopeScaling::kYarn;
  tables.options.factor = 4;
  tables.options.original_max_position = 4096;
  tables.options.position_offset = 3000;
  for (const RopeDescriptor& d : {cached, tables}) {
    const bool c = d.cos.rank != 0;
    auto want = reference::rope(d, {.x = &hx, .x2 = c ? &hk : nullptr, .position_ids = c ? &hids : nullptr,
                                    .cos = c ? &hc : nullptr, .sin = c ? &hsn : nullptr}).value();
    run_every_sku<RopePlan>(
        s, d, rows,
        [&](const RopePlan& p, Workspace ws) {
          return p.run(s, ws, {.x = dx.data(), .y = dy.data(), .x2 = dk.data(), .y2 = dy2.data(), .position_ids = dids.data(),
                               .cos = dc.data(), .sin = dsn.data()});
        },
        [&] {
          (void)dy.download(hy, s);
          auto r = reference::compare(hy, want.y, false);
          if (r.ok && c) {
            (void)dy2.download(hy2, s);
            r = reference::compare(hy2, want.y2, false);
          }
          return r;
        });
    RopeBackwardDescriptor bd{.grad_y = d.x, .grad_x = d.y, .grad_y2 = d.x2, .grad_x2 = d.y2, .position_ids = d.position_ids,
                              .cos = d.cos, .sin = d.sin, .options = d.options};
    auto bwant = reference::rope_backward(bd, {.x = &hx, .x2 = c ? &hk : nullptr, .position_ids = c ? &hids : nullptr,
                                               .cos = c ? &hc : nullptr, .sin = c ? &hsn : nullptr}).value();
    run_every_sku<RopeBackwardPlan>(
        s, bd, rows,
        [&](const RopeBackwardPlan& p, Workspace ws) {
          return p.run(s, ws, {.grad_y = dx.data(), .grad_x = dy.data(), .grad_y2 = dk.data(), .grad_x2 = dy2.data(),
                               .position_ids = dids.data(), .cos = dc.data(), .sin = dsn.data()});
        },
        [&] {
          (void)dy.download(hy, s);
          return reference::compare(hy, bwant.y, false);
        });
  }
  return rows;
}

std::vector<CheckRow> check_alibi(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  const auto sc = TensorLayout::contiguous(t, {2, 4, 37, 64});
  const auto sl = TensorLayout::contiguous(DType::kF32, {4});
  HostTensor hs(sc), hy(sc), hsl(sl), hg(sc), hgs(sc), hgsl(sl);
  reference::fill_random(hs, rng, -4, 4, false);
  reference::fill_random(hg, rng, -4, 4, false);
  const auto slopes = alibi_slopes(4);
  for (std::int64_t h = 0; h < 4; ++h) hsl.set(h, slopes[static_cast<std::size_t>(h)]);
  DeviceCopy ds(hs, s), dy(hy, s), dsl(hsl, s), dg(hg, s), dgs(hgs, s), dgsl(hgsl, s);
  for (CausalAlign a : {CausalAlign::kBottomRight, CausalAlign::kTopLeft}) {
    AlibiDescriptor d{.s = sc, .y = sc, .slopes = sl, .align = a};
    auto want = reference::alibi(d, &hs, hsl).value();
    run_every_sku<AlibiPlan>(
        s, d, rows,
        [&](const AlibiPlan& p, Workspace ws) {
          return p.run(s, ws, {.s = ds.data(), .y = dy.data(), .slopes = static_cast<const float*>(dsl.data())});
        },
        [&] {
          (void)dy.download(hy, s);
          return reference::compare(hy, want, false);
        });
    AlibiBackwardDescriptor bd{.grad_y = sc, .grad_s = sc, .grad_slopes = sl, .align = a};
    auto bwant = reference::alibi_backward(bd, hg).value();
    run_every_sku<AlibiBackwardPlan>(
        s, bd, rows,
        [&](const AlibiBackwardPlan& p, Workspace ws) {
          return p.run(s, ws, {.grad_y = dg.data(), .grad_s = dgs.data(), .grad_slopes = static_cast<float*>(dgsl.data())});
        },
        [&] {
          (void)dgs.download(hgs, s);
          (void)dgsl.download(hgsl, s);
          auto r = reference::compare(hgs, bwant.grad_s, true);
          return r.ok ? reference::compare(hgsl, bwant.grad_slopes, false) : r;
        });
  }
  return rows;
}

const std::vector<FamilyEntry>& families() {
  static const std::vector<FamilyEntry> table = {
      {"unary", kMathTypes, unary_kind_list(false),
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t)) {
           rows.push_back(info_row<UnaryPlan>("unary", c, UnaryDescriptor{UnaryKind::kGeluErf, l.in, l.out}, t, l.name));
           if (l.in.numel() == l.out.numel())
             rows.push_back(info_row<UnaryBackwardPlan>("unary_backward", c,
                                                        UnaryBackwardDescriptor{UnaryKind::kGeluErf, l.out, l.in, l.out}, t, l.name));
         }
         return rows;
       },
       check_unary},
      {"unary_param", kMathTypes, unary_kind_list(true),
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t)) {
           rows.push_back(info_row<UnaryParamPlan>("unary_param", c, UnaryParamDescriptor{UnaryKind::kLeakyRelu, {0.1, 0, 0}, l.in, l.out},
                                                   t, l.name));
           if (l.in.numel() == l.out.numel())
             rows.push_back(info_row<UnaryParamBackwardPlan>(
                 "unary_param_bwd", c, UnaryParamBackwardDescriptor{UnaryKind::kLeakyRelu, {0.1, 0, 0}, l.out, l.in, l.out}, t,
                 l.name));
         }
         return rows;
       },
       check_unary_param},
      {"binary", kRealTypes, binary_kind_list(),
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         const BinaryKind kind = dtype_is_floating(t) ? BinaryKind::kAdd : BinaryKind::kBitwiseXor;
         for (const auto& l : info_layouts(t, t)) {
           rows.push_back(info_row<BinaryPlan>("binary", c, BinaryDescriptor{kind, l.out, l.in, l.out}, t, l.name));
           if (!dtype_is_floating(t)) continue;
           auto gb = TensorLayout::contiguous(t, l.in.shape_span());
           rows.push_back(info_row<BinaryBackwardPlan>(
               "binary_backward", c, BinaryBackwardDescriptor{BinaryKind::kMul, l.out, l.out, l.in, l.out, gb}, t, l.name));
         }
         return rows;
       },
       check_binary},
      {"binary_cmp", kRealTypes, binary_cmp_kind_list(),
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, DType::kBool))
           rows.push_back(info_row<BinaryCmpPlan>(
               "binary_cmp", c,
               BinaryCmpDescriptor{BinaryCmpKind::kEq, 0, 0, false, TensorLayout::contiguous(t, l.out.shape_span()), l.in, l.out},
               t, l.name));
         return rows;
       },
       check_binary_cmp},
      {"binary_param", kMathTypes, binary_param_kind_list(),
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t)) {
           rows.push_back(info_row<BinaryParamPlan>(
               "binary_param", c, BinaryParamDescriptor{BinaryParamKind::kLerpTensor, 0, l.out, l.in, l.in, l.out}, t, l.name));
           rows.push_back(info_row<BinaryParamBackwardPlan>(
               "binary_param_bwd", c,
               BinaryParamBackwardDescriptor{BinaryParamKind::kLerpTensor, 0, l.out, l.out, l.in, l.in, l.out, l.out, l.out}, t,
               l.name));
         }
         return rows;
       },
       check_binary_param},
      {"cast", kCastTypes, "every pair of f64 f32 f16 bf16 e4m3 e5m2 i64 i32 i16 i8 u8 bool (fp8_overflow pytorch|saturate)",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (DType to : kCastTypes) {
           auto l = info_layouts(t, to).front();
           std::string name = std::string("to ") + std::string(dtype_name(to)) + " " + l.name;
           auto r = info_row<CastPlan>("cast", c, CastDescriptor{l.in, l.out}, t, "");
           r.layout = name;
           rows.push_back(r);
         }
         return rows;
       },
       check_cast},
      {"pack", {DType::kS4, DType::kU4, DType::kBit}, "pack unpack (s4<->i8 u4<->u8 bit<->bool)",
       [](const DeviceCaps& c, DType t) {
         const auto pl = TensorLayout::contiguous(plain_of(t), {4096, 8192});
         const auto pk = TensorLayout::contiguous(t, {4096, 8192});
         return std::vector<InfoRow>{info_row<PackPlan>("pack", c, PackDescriptor{pl, pk}, t, "contig[4096,8192]"),
                                     info_row<UnpackPlan>("unpack", c, UnpackDescriptor{pk, pl}, t, "contig[4096,8192]")};
       },
       check_pack},
      {"gated", kMathTypes, "glu reglu swiglu geglu_erf geglu_tanh (packed gate=first|second, split)",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {4096, 2 * 4096});
         const auto y = TensorLayout::contiguous(t, {4096, 4096});
         std::vector<InfoRow> rows;
         rows.push_back(info_row<GatedActivationPlan>(
             "gated", c, GatedActivationDescriptor{GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kFirst, x, {}, {}, y}, t,
             "packed[4096,2x4096]"));
         rows.push_back(info_row<GatedActivationPlan>(
             "gated", c, GatedActivationDescriptor{GatedKind::kSwiglu, GatedInput::kSplit, GateHalf::kSecond, {}, y, y, y}, t,
             "split[4096,4096]"));
         rows.push_back(info_row<GatedActivationBackwardPlan>(
             "gated_backward", c,
             GatedActivationBackwardDescriptor{GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kFirst, y, x, {}, {}, x, {}, {}},
             t, "packed[4096,2x4096]"));
         return rows;
       },
       check_gated},
      {"prelu", kMathTypes, "prelu (weight per channel of dim 1, or single)",
       [](const DeviceCaps& c, DType t) {
         const auto nchw = TensorLayout::contiguous(t, {32, 256, 64, 64});
         const auto nc = TensorLayout::contiguous(t, {4096, 8192});
         const auto w = TensorLayout::contiguous(t, {256});
         const auto wn = TensorLayout::contiguous(t, {8192});
         return std::vector<InfoRow>{
             info_row<PReluPlan>("prelu", c, PReluDescriptor{nchw, w, nchw}, t, "nchw[32,256,64,64]"),
             info_row<PReluPlan>("prelu", c, PReluDescriptor{nc, wn, nc}, t, "nc[4096,8192]"),
             info_row<PReluBackwardPlan>("prelu_backward", c, PReluBackwardDescriptor{nchw, nchw, w, nchw, w}, t,
                                         "nchw[32,256,64,64]"),
             info_row<PReluBackwardPlan>("prelu_backward", c, PReluBackwardDescriptor{nc, nc, wn, nc, wn}, t,
                                         "nc[4096,8192]")};
       },
       check_prelu},
      {"sdpa", kMathTypes, "scaled dot-product attention (causal, window, mask, bias, alibi, softcap, dropout, GQA, varlen)",
       [](const DeviceCaps& c, DType t) {
         SdpaDescriptor d;
         d.q = d.o = TensorLayout::contiguous(t, {8, 16, 4096, 128});
         d.k = d.v = d.q;
         d.lse = TensorLayout::contiguous(DType::kF32, {8, 16, 4096});
         d.options.causal = true;
         SdpaBackwardDescriptor g;
         g.q = g.k = g.v = g.o = g.grad_o = g.grad_q = g.grad_k = g.grad_v = d.q;
         g.lse = d.lse;
         g.options = d.options;
         return std::vector<InfoRow>{info_row<SdpaPlan>("sdpa", c, d, t, "[8,16,4096,128] causal"),
                                     info_row<SdpaBackwardPlan>("sdpa_backward", c, g, t, "[8,16,4096,128] causal")};
       },
       check_sdpa},
      {"ternary", kMathTypes, "clamp fma addcmul addcdiv",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t)) {
           rows.push_back(info_row<TernaryPlan>("ternary", c, TernaryDescriptor{TernaryKind::kAddcmul, 0.5, l.out, l.in, l.out, l.out}, t,
                                                l.name));
           auto gb = TensorLayout::contiguous(t, l.in.shape_span());
           rows.push_back(info_row<TernaryBackwardPlan>(
               "ternary_backward", c,
               TernaryBackwardDescriptor{TernaryKind::kClamp, 1, l.out, l.out, l.in, l.out, l.out, gb, l.out}, t, l.name));
         }
         return rows;
       },
       check_ternary},
      {"where", kCastTypes, "",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(DType::kBool, t)) {
           rows.push_back(info_row<WherePlan>("where", c, WhereDescriptor{l.in, l.out, l.out, l.out}, t, l.name));
           if (dtype_is_floating(t) && dtype_size(t) > 1)
             rows.push_back(info_row<WhereBackwardPlan>(
                 "where_backward", c,
                 WhereBackwardDescriptor{l.in, l.out, TensorLayout::contiguous(t, {l.out.shape[l.out.rank - 1]}), l.out}, t, l.name));
         }
         return rows;
       },
       check_where},
      {"affine", {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8}, "",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t))
           rows.push_back(info_row<AffinePlan>("affine", c, AffineDescriptor{2, 1, l.in, l.out}, t, l.name));
         return rows;
       },
       check_affine},
      {"fill", kCastTypes, "",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t))
           if (l.in.numel() == l.out.numel()) rows.push_back(info_row<FillPlan>("fill", c, FillDescriptor{l.in, 1}, t, l.name));
         return rows;
       },
       check_fill},
      {"gemm", kMathTypes,
       "GemmPlan BatchedGemmPlan GemmBackwardPlan; epilogues bias relu gelu_tanh gelu_erf silu (+aux), bgrad_a bgrad_b, "
       "activation backward drelu dgelu_tanh dgelu_erf dsilu (+bgrad_d) (f64: bias gradients only); f32 in TF32 only with "
       "math.allow_tf32",
       [](const DeviceCaps& c, DType t) {
         using A = GemmActivation;
         std::vector<InfoRow> rows;
         const GemmDescriptor square = gemm_problem(t, 4096, 4096, 4096, kRow, kRow);
         rows.push_back(info_row<GemmPlan>("gemm", c, square, t, "RRR 4096x4096x4096"));
         rows.push_back(info_row<GemmPlan>("gemm", c, gemm_problem(t, 16, 4096, 4096, kRow, kCol), t, "RCR 16x4096x4096 decode"));
         if (t == DType::kF32) {
           PlanPreference tf32;
           tf32.math.allow_tf32 = true;
           rows.push_back(info_row<GemmPlan>("gemm", c, square, t, "RRR 4096^3 allow_tf32", tf32));
         }
         if (t != DType::kF64)
           rows.push_back(info_row<GemmPlan>("gemm", c,
                                             with_epilogue(gemm_problem(t, 4096, 4096, 4096, kRow, kCol),
                                                           {A::kGeluTanh, true, false, GemmBiasGrad::kNone}),
                                             t, "RCR 4096^3 bias+gelu_tanh"));
         rows.push_back(info_row<GemmPlan>(
             "gemm", c, with_epilogue(gemm_problem(t, 4096, 4096, 4096, kCol, kRow), {A::kNone, false, false, GemmBiasGrad::kB}), t,
             "CRR 4096^3 bgrad_b"));
         if (t != DType::kF64) {
           const GemmDescriptor mlp = gemm_problem(t, 4096, 4096, 4096, kRow, kRow);  // dY W, W [N2, H] row-major
           rows.push_back(info_row<GemmPlan>("gemm", c, with_epilogue(mlp, GemmEpilogue::activation_backward(A::kGeluTanh, true)),
                                             t, "RRR 4096^3 dgelu_tanh+bgrad_d"));
           rows.push_back(info_row<GemmPlan>("gemm", c, with_epilogue(mlp, GemmEpilogue::activation_backward(A::kRelu, true)),
                                             t, "RRR 4096^3 drelu+bgrad_d"));
           rows.push_back(info_row<GemmPlan>("gemm", c, with_epilogue(mlp, GemmEpilogue::activation_backward(A::kSilu, false)),
                                             t, "RRR 4096^3 dsilu (composite)"));
         }
         BatchedGemmDescriptor b{.gemm = gemm_problem(t, 2048, 2048, 128, kRow, kCol), .batch = 32};
         b.stride_a = b.stride_b = 2048 * 128;
         b.stride_d = 2048 * 2048;
         rows.push_back(info_row<BatchedGemmPlan>("gemm_batched", c, b, t, "32x RCR 2048x2048x128"));
         GemmBackwardDescriptor bd;
         bd.a = square.a;
         bd.b = square.b;
         bd.grad_d = bd.grad_a = bd.grad_b = square.d;
         bd.compute_grad_bias = true;
         bd.grad_bias = TensorLayout::contiguous(t, {4096});
         rows.push_back(info_row<GemmBackwardPlan>("gemm_backward", c, bd, t, "RRR 4096^3 +grad_bias"));
         return rows;
       },
       check_gemm},
      {"int4_gemm", {DType::kBF16, DType::kF16},
       "Int4GemmPlan (W4A16): s4, or u4 with zero points; group 32 / 64 / 128 / K; bias; GPTQ / AWQ repack (int4_repack)",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (std::int64_t m : {1, 16, 2048})
           for (DType w : {DType::kS4, DType::kU4})
             rows.push_back(info_row<Int4GemmPlan>("int4_gemm", c, int4_problem(t, m, 28672, 8192, w, 128, false), t,
                                                   (std::string(dtype_name(w)) + " M=" + std::to_string(m) + " N=28672 K=8192 g128").c_str()));
         return rows;
       },
       check_int4_gemm},
      {"bin_gemm", {DType::kU32},
       "BinGemmPlan (1-bit K-major words -> i32): xnor_dot xnor_count and_count; accumulate (D = result + C, in place allowed)",
       [](const DeviceCaps& c, DType) {
         std::vector<InfoRow> rows;
         for (std::int64_t m : {1, 4096, 8192})
           for (BinGemmOp op : {BinGemmOp::kXnorDot, BinGemmOp::kAndCount})
             rows.push_back(info_row<BinGemmPlan>("bin_gemm", c, bin_problem(m, 8192, 8192, op, false), DType::kU32,
                                                  (std::string(bin_gemm_op_name(op)) + " M=" + std::to_string(m) + " N=8192 K=8192").c_str()));
         return rows;
       },
       check_bin_gemm},
      {"softmax", kMathTypes, "softmax log_softmax (any axis, any strides)",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {4096, 8192});
         const auto lx = TensorLayout::contiguous(t, {4, 262144});
         const auto sm = SoftmaxKind::kSoftmax;
         return std::vector<InfoRow>{
             info_row<SoftmaxPlan>("softmax", c, SoftmaxDescriptor{x, x, -1, sm}, t, "contig[4096,8192]"),
             info_row<SoftmaxPlan>("log_softmax", c, SoftmaxDescriptor{x, x, -1, SoftmaxKind::kLogSoftmax}, t, "contig[4096,8192]"),
             info_row<SoftmaxPlan>("softmax", c, SoftmaxDescriptor{x, x, 0, sm}, t, "axis0[4096,8192]"),
             info_row<SoftmaxPlan>("softmax", c, SoftmaxDescriptor{lx, lx, -1, sm}, t, "contig[4,262144]"),
             info_row<SoftmaxBackwardPlan>("softmax_backward", c, SoftmaxBackwardDescriptor{x, x, x, -1, sm}, t, "contig[4096,8192]"),
             info_row<SoftmaxBackwardPlan>("softmax_backward", c, SoftmaxBackwardDescriptor{lx, lx, lx, -1, sm}, t,
                                           "contig[4,262144]")};
       },
       check_softmax},
      {"gumbel_softmax", kMathTypes, "gumbel_softmax soft / hard (Philox noise or a noise tensor; any axis, any strides)",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {16384, 8192});
         const auto lx = TensorLayout::contiguous(t, {4096, 131072});
         return std::vector<InfoRow>{
             info_row<GumbelSoftmaxPlan>("gumbel_softmax", c, GumbelSoftmaxDescriptor{.x = x, .y = x}, t, "contig[16384,8192]"),
             info_row<GumbelSoftmaxPlan>("gumbel_softmax", c, GumbelSoftmaxDescriptor{.x = lx, .y = lx, .hard = true}, t,
                                         "hard contig[4096,131072]"),
             info_row<GumbelSoftmaxPlan>("gumbel_softmax", c, GumbelSoftmaxDescriptor{.x = x, .y = x, .axis = 0}, t,
                                         "axis0[16384,8192]"),
             info_row<GumbelSoftmaxBackwardPlan>("gumbel_softmax_backward", c, GumbelSoftmaxBackwardDescriptor{x, x, x}, t,
                                                 "contig[16384,8192]")};
       },
       check_gumbel_softmax},
      {"sparsemax", kMathTypes, "sparsemax (any axis, any strides, any length)",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {16384, 8192});
         const auto lx = TensorLayout::contiguous(t, {4096, 131072});
         return std::vector<InfoRow>{
             info_row<SparsemaxPlan>("sparsemax", c, SparsemaxDescriptor{x, x}, t, "contig[16384,8192]"),
             info_row<SparsemaxPlan>("sparsemax", c, SparsemaxDescriptor{lx, lx}, t, "contig[4096,131072]"),
             info_row<SparsemaxPlan>("sparsemax", c, SparsemaxDescriptor{x, x, 0}, t, "axis0[16384,8192]"),
             info_row<SparsemaxBackwardPlan>("sparsemax_backward", c, SparsemaxBackwardDescriptor{x, x, x}, t,
                                             "contig[16384,8192]")};
       },
       check_sparsemax},
      {"scan", kMathTypes, "cumsum cumprod cummax cummin logcumsumexp (any axis, reverse; i32 / i64 cumsum, cumprod)",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {16384, 8192});
         const auto lx = TensorLayout::contiguous(t, {1, std::int64_t{1} << 28});
         const auto il = TensorLayout::contiguous(DType::kI64, {16384, 8192});
         const auto k = ScanKind::kCumsum;
         return std::vector<InfoRow>{
             info_row<ScanPlan>("cumsum", c, ScanDescriptor{x, x, {}, -1, k}, t, "contig[16384,8192]"),
             info_row<ScanPlan>("cumsum", c, ScanDescriptor{lx, lx, {}, -1, k}, t, "contig[1,2^28]"),
             info_row<ScanPlan>("cumsum", c, ScanDescriptor{x, x, {}, 0, k}, t, "axis0[16384,8192]"),
             info_row<ScanPlan>("cummax", c, ScanDescriptor{x, x, il, -1, ScanKind::kCummax}, t, "contig[16384,8192]"),
             info_row<ScanBackwardPlan>("cumprod_backward", c, ScanBackwardDescriptor{x, x, x, il, x, -1, ScanKind::kCumprod},
                                        t, "contig[16384,8192]")};
       },
       check_scan},
      {"normalization", kMathTypes, "layer_norm rms_norm (weight, bias, fused residual add, saved mean / rstd) and backward",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {4096, 8192});
         const auto w = TensorLayout::contiguous(t, {8192});
         LayerNormDescriptor ln;
         RMSNormDescriptor rms;
         for (NormDescriptor* d : {static_cast<NormDescriptor*>(&ln), static_cast<NormDescriptor*>(&rms)}) {
           d->x = d->y = d->residual = d->residual_out = x;
           d->weight = d->bias = w;
         }
         RMSNormDescriptor rms_res = rms;
         rms_res.add_residual = true;
         LayerNormBackwardDescriptor lnb;
         RMSNormBackwardDescriptor rmsb;
         for (NormBackwardDescriptor* d : {static_cast<NormBackwardDescriptor*>(&lnb), static_cast<NormBackwardDescriptor*>(&rmsb)}) {
           d->grad_y = d->x = d->grad_x = x;
           d->weight = d->grad_weight = d->grad_bias = w;
         }
         return std::vector<InfoRow>{info_row<LayerNormPlan>("layer_norm", c, ln, t, "contig[4096,8192]"),
                                     info_row<RMSNormPlan>("rms_norm", c, rms, t, "contig[4096,8192]"),
                                     info_row<RMSNormPlan>("rms_norm", c, rms_res, t, "contig[4096,8192]+residual"),
                                     info_row<LayerNormBackwardPlan>("layer_norm_bwd", c, lnb, t, "contig[4096,8192]"),
                                     info_row<RMSNormBackwardPlan>("rms_norm_bwd", c, rmsb, t, "contig[4096,8192]")};
       },
       check_normalization},
      {"channel_norm", kMathTypes, "batch_norm (training / eval, running stats) group_norm instance_norm and backward",
       [](const DeviceCaps& c, DType t) {
         const auto x = TensorLayout::contiguous(t, {32, 256, 56, 56});
         const auto g = TensorLayout::contiguous(t, {8, 512, 64, 64});
         const auto cb = TensorLayout::contiguous(t, {256});
         const auto cg = TensorLayout::contiguous(t, {512});
         BatchNormDescriptor bn;
         bn.x = bn.y = x;
         bn.weight = bn.bias = bn.running_mean = bn.running_var = cb;
         BatchNormDescriptor bn_eval = bn;
         bn_eval.training = false;
         BatchNormBackwardDescriptor bnb;
         bnb.grad_y = bnb.x = bnb.grad_x = x;
         bnb.weight = bnb.grad_weight = bnb.grad_bias = cb;
         GroupNormDescriptor gn;
         gn.x = gn.y = g;
         gn.num_groups = 32;
         gn.weight = gn.bias = cg;
         GroupNormBackwardDescriptor gnb;
         gnb.grad_y = gnb.x = gnb.grad_x = g;
         gnb.num_groups = 32;
         gnb.weight = gnb.grad_weight = gnb.grad_bias = cg;
         InstanceNormDescriptor in;
         in.x = in.y = g;
         in.weight = in.bias = cg;
         return std::vector<InfoRow>{info_row<BatchNormPlan>("batch_norm", c, bn, t, "nchw[32,256,56,56]"),
                                     info_row<BatchNormPlan>("batch_norm", c, bn_eval, t, "nchw[32,256,56,56] eval"),
                                     info_row<BatchNormBackwardPlan>("batch_norm_bwd", c, bnb, t, "nchw[32,256,56,56]"),
                                     info_row<GroupNormPlan>("group_norm", c, gn, t, "nchw[8,512,64,64] g32"),
                                     info_row<GroupNormBackwardPlan>("group_norm_bwd", c, gnb, t, "nchw[8,512,64,64] g32"),
                                     info_row<InstanceNormPlan>("instance_norm", c, in, t, "nchw[8,512,64,64]")};
       },
       check_channel_norm},
      {"rope", kMathTypes, "rope (neox / interleaved, partial rotary, position ids, cos/sin caches or linear / ntk / yarn / llama3 tables, q+k) and backward",
       [](const DeviceCaps& c, DType t) {
         const auto q = TensorLayout::contiguous(t, {8, 4096, 32, 128});
         const auto k = TensorLayout::contiguous(t, {8, 4096, 8, 128});
         const auto cache = TensorLayout::contiguous(DType::kF32, {4096, 64});
         const auto hf = TensorLayout::contiguous(t, {8, 32, 4096, 128});
         RopeDescriptor hfd{.x = hf, .y = hf};
         hfd.options.seq_axis = 2;
         return std::vector<InfoRow>{
             info_row<RopePlan>("rope", c, RopeDescriptor{.x = q, .y = q, .cos = cache, .sin = cache}, t, "bshd[8,4096,32,128] cache"),
             info_row<RopePlan>("rope", c, RopeDescriptor{.x = q, .y = q, .x2 = k, .y2 = k, .cos = cache, .sin = cache}, t,
                                "q+k bshd[8,4096,32|8,128] cache"),
             info_row<RopePlan>("rope", c, hfd, t, "bhsd[8,32,4096,128] tables"),
             info_row<RopeBackwardPlan>("rope_backward", c, RopeBackwardDescriptor{.grad_y = q, .grad_x = q, .cos = cache, .sin = cache},
                                        t, "bshd[8,4096,32,128] cache")};
       },
       check_rope},
      {"alibi", kMathTypes, "alibi bias add / bias alone (bottom-right or top-left, [H] or [B,H] slopes) and backward (grad slopes)",
       [](const DeviceCaps& c, DType t) {
         const auto sc = TensorLayout::contiguous(t, {8, 16, 2048, 2048});
         const auto sl = TensorLayout::contiguous(DType::kF32, {16});
         return std::vector<InfoRow>{
             info_row<AlibiPlan>("alibi", c, AlibiDescriptor{.s = sc, .y = sc, .slopes = sl}, t, "[8,16,2048,2048] in place"),
             info_row<AlibiBackwardPlan>("alibi_backward", c, AlibiBackwardDescriptor{.grad_y = sc, .grad_s = sc, .grad_slopes = sl},
                                         t, "[8,16,2048,2048] grad_slopes")};
       },
       check_alibi},
      {"paged_decode", kMathTypes,
       "SdpaDecodePlan: Sq 1..16 new tokens over a paged [pages, page_size, Hkv, D] or contiguous KV cache; GQA / MQA, "
       "causal bottom-right, sliding window, softcap, ALiBi, lse; split-KV",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (std::int64_t page : {16, 256})
           rows.push_back(info_row<SdpaDecodePlan>("paged_decode", c,
                                                   reference::decode_descriptor(reference::decode_shape(t, 64, 1, 32, 8, 128, page, 4096 / page, true)),
                                                   t, (std::string("B64 KV4096 32/8 heads d128 page ") + std::to_string(page)).c_str()));
         rows.push_back(info_row<SdpaDecodePlan>("paged_decode", c,
                                                 reference::decode_descriptor(reference::decode_shape(t, 1, 4, 32, 8, 128, 256, 128, true)), t,
                                                 "B1 KV32768 Sq4 32/8 heads d128 page 256"));
         return rows;
       },
       check_decode},
      {"kv_cache_append", {DType::kBF16, DType::kF16, DType::kF32, DType::kI8},
       "KvCacheAppendPlan: new k / v [B, S_new, Hkv, D] copied into a paged or contiguous cache at cache_seqlens",
       [](const DeviceCaps& c, DType t) {
         return std::vector<InfoRow>{info_row<KvCacheAppendPlan>(
             "kv_cache_append", c, reference::append_descriptor(reference::decode_shape(t, 64, 1, 1, 8, 128, 16, 256, true)), t,
             "B64 S_new1 Hkv8 d128 page 16")};
       },
       check_kv_cache},
  };
  return table;
}

}  // namespace baracuda::tools
