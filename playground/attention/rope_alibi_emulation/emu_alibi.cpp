#include "attention/alibi.cpp"
#include <cstdio>
#include <cstring>
#include <random>
#include <optional>
#include "baracuda/reference/alibi.hpp"
#include "baracuda/reference/compare.hpp"
using namespace baracuda;
using reference::HostTensor;

int run_alibi_emu() {
  std::mt19937_64 rng(9);
  int fails = 0;
  const DeviceCaps caps = DeviceCaps::for_arch(90).value();
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
    struct Case { const char* name; TensorLayout s; bool per_batch; CausalAlign a; bool in_place; bool bias_only; };
    std::vector<Case> cases = {
        {"square", c({2, 4, 16, 16}), false, CausalAlign::kBottomRight, false, false},
        {"tail", c({2, 3, 7, 64}), true, CausalAlign::kTopLeft, false, false},
        {"sq_gt_skv", c({1, 2, 20, 8}), false, CausalAlign::kBottomRight, false, false},
        {"odd", c({2, 3, 5, 33}), false, CausalAlign::kBottomRight, false, false},
        {"transposed", TensorLayout::strided(t, {2, 4, 24, 40}, {4 * 960, 960, 1, 24}), true, CausalAlign::kBottomRight, false, false},
        {"in_place", c({2, 4, 9, 64}), false, CausalAlign::kTopLeft, true, false},
        {"bias_only", c({2, 3, 9, 24}), true, CausalAlign::kBottomRight, false, true},
        {"decode", c({3, 2, 1, 300}), false, CausalAlign::kBottomRight, false, false},
    };
    for (const auto& cs : cases) {
      const auto sl = cs.per_batch ? TensorLayout::strided(DType::kF32, {cs.s.shape[0], cs.s.shape[1]}, {cs.s.shape[1] + 3, 1}, 4)
                                   : TensorLayout::contiguous(DType::kF32, {cs.s.shape[1]});
      const TensorLayout y = cs.in_place ? cs.s : TensorLayout::contiguous(t, cs.s.shape_span());
      HostTensor hs(cs.s), hsl(sl);
      reference::fill_random(hs, rng, -4, 4, true);
      reference::fill_random(hsl, rng, 0.01, 1, false);
      const HostTensor hs0 = hs;
      AlibiDescriptor d{.s = cs.bias_only ? TensorLayout{} : cs.s, .y = y, .slopes = sl, .align = cs.a};
      auto want = reference::alibi(d, cs.bias_only ? nullptr : &hs, hsl).value();
      for (const auto& cand : FamilyTraits<AlibiDescriptor>::candidates()) {
        auto pr = cand.probe(d, caps);
        if (!pr.rejection.empty()) continue;
        hs = hs0;
        HostTensor hy(y);
        HostTensor& out = cs.in_place ? hs : hy;
        AlibiArgs a{.s = cs.bias_only ? nullptr : hs.data(), .y = out.data(), .slopes = static_cast<const float*>(hsl.data())};
        Status ck = FamilyTraits<AlibiDescriptor>::check_args(d, a);
        auto st = cand.prepare(d, caps).value();
        Status s = ck ? cand.launch(st.get(), d, a, {}, nullptr) : ck;
        auto r = reference::compare(out, want, false);
        const bool ok = s.is_ok() && r.ok;
        std::printf("alibi %-12s %-4s %-40s %s %s %s\n", cs.name, std::string(dtype_name(t)).c_str(), pr.sku.name().c_str(), ok ? "ok" : "FAIL", s.to_string().c_str(), ok ? "" : r.detail.c_str());
        fails += !ok;
      }
      if (cs.bias_only) continue;
      for (int which : {0, 1, 2}) {
        const TensorLayout gs = which == 2 ? TensorLayout{} : y;
        const TensorLayout gsl = which == 1 ? TensorLayout{} : sl;
        AlibiBackwardDescriptor bd{.grad_y = cs.s, .grad_s = gs, .grad_slopes = gsl, .align = cs.a};
        auto bw = reference::alibi_backward(bd, hs0).value();
        for (const auto& cand : FamilyTraits<AlibiBackwardDescriptor>::candidates()) {
          auto pr = cand.probe(bd, caps);
          if (!pr.rejection.empty()) continue;
          hs = hs0;
          HostTensor hgs(y), hgsl(sl);
          HostTensor& gout = cs.in_place ? hs : hgs;
          std::vector<double> ws(pr.workspace_bytes / 8 + 1);
          AlibiBackwardArgs a{.grad_y = hs.data(), .grad_s = gs.rank ? gout.data() : nullptr, .grad_slopes = gsl.rank ? static_cast<float*>(hgsl.data()) : nullptr};
          Status ck = FamilyTraits<AlibiBackwardDescriptor>::check_args(bd, a);
          auto st = cand.prepare(bd, caps).value();
          Status s = ck ? cand.launch(st.get(), bd, a, Workspace{ws.data(), pr.workspace_bytes}, nullptr) : ck;
          bool ok = s.is_ok();
          std::string det;
          if (ok && gs.rank) { auto r = reference::compare(gout, bw.grad_s, true); ok = r.ok; det = r.detail; }
          if (ok && gsl.rank) { auto r = reference::compare(hgsl, bw.grad_slopes, false); ok = r.ok; det = r.detail; }
          std::printf("alibi_bwd %-8s %-4s w%d %-40s %s %s %s\n", cs.name, std::string(dtype_name(t)).c_str(), which, pr.sku.name().c_str(), ok ? "ok" : "FAIL", s.to_string().c_str(), det.c_str());
          fails += !ok;
        }
      }
    }
  }
  return fails;
}
