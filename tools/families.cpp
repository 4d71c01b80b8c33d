#include "families.hpp"

#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/domains.hpp"
#include "baracuda/reference/elementwise.hpp"
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
                 const char* layout) {
  auto p = PlanT::select_for_caps(caps, d);
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
  Status download(HostTensor& h, const Stream& s) const {
    BARACUDA_TRY(s.synchronize());
    return copy_to_host(h.storage(), buf.data(), h.storage_bytes(), s);
  }
};

// Runs `desc` under every accepting SKU: launch(plan, ws) then verify() -> comparison.
template <class PlanT>
void run_every_sku(const Stream& s, const typename PlanT::Descriptor& d, std::vector<CheckRow>& rows,
                   const std::function<Status(const PlanT&, Workspace)>& launch,
                   const std::function<reference::Comparison()>& verify) {
  auto reports = PlanT::candidates(*s.caps().value(), d);
  if (!reports) {
    rows.push_back({"-", d.to_string(), false, reports.error().to_string()});
    return;
  }
  for (const auto& r : reports.value()) {
    if (!r.rejection.empty()) continue;
    PlanPreference pref;
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
constexpr BinaryKind kBinaryKinds[] = {BinaryKind::kAdd, BinaryKind::kSub, BinaryKind::kMul, BinaryKind::kDiv};
const std::vector<DType> kMathTypes = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};
const std::vector<DType> kCastTypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2};

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

std::vector<CheckRow> check_binary(const Stream& s, DType t, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (auto kind : kBinaryKinds)
    for (const auto& l : check_layouts(t, t)) {
      // a is the full-shape operand, b takes the case's layout (dense / transposed / broadcast)
      TensorLayout a = l.out;
      BinaryDescriptor d{kind, a, l.in, l.out};
      HostTensor ha(a), hb(l.in), ho(l.out);
      reference::fill_random(ha, rng, -4, 4, true);
      reference::fill_random(hb, rng, 0.5, 4, false);
      auto want = reference::binary(d, ha, hb).value();
      DeviceCopy da(ha, s), db(hb, s), dout(ho, s);
      run_every_sku<BinaryPlan>(
          s, d, rows,
          [&](const BinaryPlan& p, Workspace ws) { return p.run(s, ws, {.a = da.data(), .b = db.data(), .out = dout.data()}); },
          [&] {
            (void)dout.download(ho, s);
            return reference::compare(ho, want, false);
          });
      auto gb_layout = TensorLayout::contiguous(t, l.in.shape_span());
      BinaryBackwardDescriptor bd{kind, l.out, a, l.in, a, gb_layout};
      HostTensor hg(l.out), hga(a), hgb(gb_layout);
      reference::fill_random(hg, rng, -2, 2, false);
      auto bwant = reference::binary_backward(bd, hg, ha, hb).value();
      DeviceCopy dg(hg, s), dga(hga, s), dgb(hgb, s);
      run_every_sku<BinaryBackwardPlan>(
          s, bd, rows,
          [&](const BinaryBackwardPlan& p, Workspace ws) {
            return p.run(s, ws, {.grad_out = dg.data(), .a = da.data(), .b = db.data(), .grad_a = dga.data(), .grad_b = dgb.data()});
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

std::vector<CheckRow> check_cast(const Stream& s, DType from, std::mt19937_64& rng) {
  std::vector<CheckRow> rows;
  for (DType to : kCastTypes)
    for (auto mode : {Fp8Overflow::kPyTorch, Fp8Overflow::kSaturate})
      for (const auto& l : check_layouts(from, to)) {
        CastDescriptor d{l.in, l.out, mode};
        HostTensor hx(l.in), hy(l.out);
        reference::fill_random(hx, rng, -600, 600, true);
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


// ---- ternary group: clamp / fma / addcmul / addcdiv (+ backward), where (+ backward), affine, fill
constexpr TernaryKind kTernaryKinds[] = {TernaryKind::kClamp, TernaryKind::kFma, TernaryKind::kAddcmul, TernaryKind::kAddcdiv};
const std::vector<DType> kBitTypes = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2,
                                      DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8, DType::kBool};

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

}  // namespace

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
      {"binary", kMathTypes, "add sub mul div",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t)) {
           rows.push_back(info_row<BinaryPlan>("binary", c, BinaryDescriptor{BinaryKind::kAdd, l.out, l.in, l.out}, t, l.name));
           auto gb = TensorLayout::contiguous(t, l.in.shape_span());
           rows.push_back(info_row<BinaryBackwardPlan>(
               "binary_backward", c, BinaryBackwardDescriptor{BinaryKind::kMul, l.out, l.out, l.in, l.out, gb}, t, l.name));
         }
         return rows;
       },
       check_binary},
      {"cast", kCastTypes, "",
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
      {"where", kBitTypes, "",
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
      {"fill", kBitTypes, "",
       [](const DeviceCaps& c, DType t) {
         std::vector<InfoRow> rows;
         for (const auto& l : info_layouts(t, t))
           if (l.in.numel() == l.out.numel()) rows.push_back(info_row<FillPlan>("fill", c, FillDescriptor{l.in, 1}, t, l.name));
         return rows;
       },
       check_fill},
  };
  return table;
}

}  // namespace baracuda::tools
