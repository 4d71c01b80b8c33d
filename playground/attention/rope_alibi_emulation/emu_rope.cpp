#include "attention/rope.cpp"
#include <cstdio>
#include <random>
#include <optional>
#include "baracuda/reference/rope.hpp"
#include "baracuda/reference/compare.hpp"

using namespace baracuda;
using reference::HostTensor;

namespace {
std::mt19937_64 g_rng(5);
std::pair<const TensorLayout*, const TensorLayout*> operands_of_desc(const RopeDescriptor& d) { return {&d.y, &d.y2}; }
std::pair<const TensorLayout*, const TensorLayout*> operands_of_desc(const RopeBackwardDescriptor& d) { return {&d.grad_x, &d.grad_x2}; }

template <class Desc, class Args, class MakeArgs, class Ref>
int run_all(const Desc& d, HostTensor& x, HostTensor* x2, HostTensor* ids, HostTensor* cs, HostTensor* sn, bool in_place,
            MakeArgs make_args, Ref ref, const char* name) {
  const DeviceCaps caps = DeviceCaps::for_arch(90).value();
  auto cands = FamilyTraits<Desc>::candidates();
  Status v = FamilyTraits<Desc>::validate(d);
  if (!v) { std::printf("%s: INVALID %s\n", name, v.to_string().c_str()); return 1; }
  reference::RopeInputs ri{.x = &x, .x2 = x2, .position_ids = ids, .cos = cs, .sin = sn};
  auto want = ref(d, ri).value();
  int fails = 0;
  const HostTensor x0 = x;
  std::optional<HostTensor> x20;
  if (x2) x20 = *x2;
  for (const auto& c : cands) {
    auto pr = c.probe(d, caps);
    if (!pr.rejection.empty()) continue;
    x = x0;
    if (x2) *x2 = *x20;
    auto ol = operands_of_desc(d);
    HostTensor y(*ol.first), y2(ol.second->rank ? *ol.second : *ol.first);
    HostTensor& yo = in_place ? x : y;
    HostTensor* y2o = x2 ? (in_place ? x2 : &y2) : nullptr;
    auto st = c.prepare(d, caps).value();
    Args a = make_args(x.data(), yo.data(), x2 ? x2->data() : nullptr, y2o ? y2o->data() : nullptr, ids ? ids->data() : nullptr,
                       cs ? cs->data() : nullptr, sn ? sn->data() : nullptr);
    Status ck = FamilyTraits<Desc>::check_args(d, a);
    if (!ck) { std::printf("%s %s: check_args %s\n", name, pr.sku.name().c_str(), ck.to_string().c_str()); ++fails; continue; }
    Status s = c.launch(st.get(), d, a, {}, nullptr);
    if (!s) { std::printf("%s: launch %s\n", name, s.to_string().c_str()); ++fails; continue; }
    auto r = reference::compare(yo, want.y, false);
    bool ok = r.ok;
    if (ok && x2) { auto r2 = reference::compare(*y2o, want.y2, false); ok = r2.ok; if (!ok) r = r2; }
    std::printf("%-28s %-36s %s %s\n", name, pr.sku.name().c_str(), ok ? "ok" : "FAIL", ok ? "" : r.detail.c_str());
    fails += !ok;
  }
  return fails;
}
}  // namespace

int run_rope_emu() {
  int fails = 0;
  struct Case { const char* name; TensorLayout x, x2; RopeOptions o; int ids; int cache; bool in_place; };
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
    RopeOptions o1; o1.seq_axis = 1;
    RopeOptions o2; o2.seq_axis = 2; o2.style = RopeStyle::kInterleaved;
    RopeOptions o3; o3.seq_axis = 0; o3.rotary_dim = 32;
    RopeOptions o4; o4.seq_axis = 1; o4.style = RopeStyle::kInterleaved; o4.rotary_dim = 6;
    RopeOptions o5; o5.seq_axis = 1; o5.rotary_dim = 6;
    RopeOptions oy; oy.scaling = RopeScaling::kYarn; oy.factor = 4; oy.original_max_position = 4096; oy.position_offset = 7000;
    RopeOptions ol; ol.scaling = RopeScaling::kLlama3; ol.factor = 8; ol.theta = 500000; ol.original_max_position = 8192; ol.position_offset = 120000;
    const auto q_of_qkv = TensorLayout::strided(t, {2, 5, 4, 64}, {5 * 12 * 64, 12 * 64, 64, 1});
    const auto hds = TensorLayout::strided(t, {2, 7, 3, 16}, {7 * 3 * 16, 1, 7 * 16, 7});
    std::vector<Case> cases = {
        {"bshd_cache", c({2, 9, 4, 64}), {}, o1, 0, 1, false},
        {"bshd_cache_ids", c({2, 9, 4, 64}), {}, o1, 2, 2, false},
        {"bhsd_inter_ids", c({2, 4, 9, 64}), {}, o2, 2, 0, false},
        {"tokens_partial", c({13, 5, 80}), {}, o3, 1, 0, false},
        {"odd_head_dim", c({2, 5, 3, 9}), {}, o4, 0, 0, false},
        {"odd_half", c({2, 5, 3, 10}), {}, o5, 0, 0, false},
        {"qk", c({2, 7, 8, 128}), c({2, 7, 2, 128}), o1, 2, 1, false},
        {"qk_in_place_partial", c({2, 7, 5, 64}), c({2, 7, 1, 64}), o1, 0, 0, true},
        {"q_of_qkv", q_of_qkv, {}, o1, 0, 1, false},
        {"head_dim_strided", hds, {}, o4, 0, 0, false},
        {"yarn", c({1, 8, 2, 64}), {}, oy, 0, 0, false},
        {"llama3", c({1, 8, 2, 128}), {}, ol, 0, 0, false},
        {"in_place", c({2, 9, 4, 64}), {}, o1, 2, 1, true},
        {"oob", c({2, 9, 2, 32}), {}, o1, 3, 1, false},
    };
    for (auto& cs : cases) {
      if (std::string(cs.name) == "qk_in_place_partial") { cs.o = o1; cs.o.rotary_dim = 16; }
      const std::int64_t S = cs.x.shape[cs.o.seq_axis], B = cs.o.seq_axis == 0 ? 1 : cs.x.shape[0];
      const std::int64_t R = cs.o.rotary_dim ? cs.o.rotary_dim : cs.x.shape[cs.x.rank - 1];
      HostTensor x(cs.x);
      reference::fill_random(x, g_rng, -4, 4, true);
      std::optional<HostTensor> x2, ids, cc, sn;
      if (cs.x2.rank) { x2.emplace(cs.x2); reference::fill_random(*x2, g_rng, -4, 4, true); }
      TensorLayout il, cl;
      if (cs.ids) {
        il = cs.ids == 1 ? TensorLayout::contiguous(DType::kI32, {S}) : TensorLayout::contiguous(DType::kI64, {B, S});
        ids.emplace(il);
        for (std::int64_t i = 0; i < il.numel(); ++i) ids->set(i, static_cast<double>((i * 37 + 5) % (cs.cache ? 40 : 20000)) - (cs.ids == 3 && i % 4 == 0 ? 41 : 0));
      }
      if (cs.cache) {
        cl = TensorLayout::contiguous(cs.cache == 2 ? t : DType::kF32, {40, R / 2});
        cc.emplace(cl); sn.emplace(cl);
        reference::fill_random(*cc, g_rng, -1, 1, false);
        reference::fill_random(*sn, g_rng, -1, 1, false);
      }
      const TensorLayout y = cs.in_place ? cs.x : TensorLayout::contiguous(t, cs.x.shape_span());
      const TensorLayout y2 = cs.x2.rank ? (cs.in_place ? cs.x2 : TensorLayout::contiguous(t, cs.x2.shape_span())) : TensorLayout{};
      RopeDescriptor d{.x = cs.x, .y = y, .x2 = cs.x2, .y2 = y2, .position_ids = il, .cos = cl, .sin = cl, .options = cs.o};
      std::string nm = std::string(cs.name) + "/" + std::string(dtype_name(t));
      fails += run_all<RopeDescriptor, RopeArgs>(d, x, x2 ? &*x2 : nullptr, ids ? &*ids : nullptr, cc ? &*cc : nullptr, sn ? &*sn : nullptr, cs.in_place,
          [](const void* a, void* b, const void* c2, void* d2, const void* e, const void* f, const void* g) { return RopeArgs{a, b, c2, d2, e, f, g}; },
          [](const RopeDescriptor& dd, const reference::RopeInputs& ri) { return reference::rope(dd, ri); }, nm.c_str());
      RopeBackwardDescriptor bd{.grad_y = cs.x, .grad_x = y, .grad_y2 = cs.x2, .grad_x2 = y2, .position_ids = il, .cos = cl, .sin = cl, .options = cs.o};
      nm += "/bwd";
      fails += run_all<RopeBackwardDescriptor, RopeBackwardArgs>(bd, x, x2 ? &*x2 : nullptr, ids ? &*ids : nullptr, cc ? &*cc : nullptr, sn ? &*sn : nullptr, cs.in_place,
          [](const void* a, void* b, const void* c2, void* d2, const void* e, const void* f, const void* g) { return RopeBackwardArgs{a, b, c2, d2, e, f, g}; },
          [](const RopeBackwardDescriptor& dd, const reference::RopeInputs& ri) { return reference::rope_backward(dd, ri); }, nm.c_str());
    }
  }
  return fails;
}
