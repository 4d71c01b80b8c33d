// GroupedGemmPlan (include/baracuda/ops/gemm_grouped.hpp): one GemmPlan per distinct
// (M_g, pointer alignments) prepared at select, looped over the groups in run().
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "baracuda/ops/gemm_grouped.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "gemm/lt_gemm.hpp"
#include "gemm/one_candidate.hpp"

namespace baracuda {

std::int64_t GroupedGemmDescriptor::total_m() const noexcept {
  std::int64_t s = 0;
  for (std::int64_t m : group_m) s += m;
  return s;
}

std::size_t GroupedGemmDescriptor::hash() const noexcept {
  std::size_t h = detail::hash_combine(static_cast<std::size_t>(dtype), static_cast<std::size_t>(n));
  h = detail::hash_combine(h, static_cast<std::size_t>(k));
  h = detail::hash_combine(h, static_cast<std::size_t>(b_order) | (static_cast<std::size_t>(alignment) << 2));
  for (std::int64_t m : group_m) h = detail::hash_combine(h, static_cast<std::size_t>(m));
  return h;
}

std::string GroupedGemmDescriptor::to_string() const {
  std::string s = "grouped_gemm(" + std::string(dtype_name(dtype)) + ", n=" + std::to_string(n) + ", k=" + std::to_string(k) +
                  ", b=" + (b_order == MatrixOrder::kRowMajor ? "R" : "C") + ", align=" + std::to_string(alignment) + ", m=[";
  for (std::size_t g = 0; g < group_m.size(); ++g) {
    if (g == 8 && group_m.size() > 10) {
      s += "... (" + std::to_string(group_m.size()) + " groups)";
      break;
    }
    s += (g ? "," : "") + std::to_string(group_m[g]);
  }
  return s + "])";
}

GemmDescriptor grouped_gemm_group(const GroupedGemmDescriptor& d, std::int64_t g, int alignment) {
  const std::int64_t m = d.group_m[static_cast<std::size_t>(g)];
  GemmDescriptor gd;
  gd.a = MatrixLayout{d.dtype, m, d.k, d.k, MatrixOrder::kRowMajor, alignment};
  gd.b = MatrixLayout{d.dtype, d.k, d.n, d.b_order == MatrixOrder::kRowMajor ? d.n : d.k, d.b_order, alignment};
  gd.d = MatrixLayout{d.dtype, m, d.n, d.n, MatrixOrder::kRowMajor, alignment};
  return gd;
}

namespace gemm {
namespace {

Status invalid(const std::string& msg) { return Status(Code::kInvalidArgument, msg); }

Status validate_grouped(const GroupedGemmDescriptor& d) {
  if (d.dtype != DType::kF64 && d.dtype != DType::kF32 && d.dtype != DType::kF16 && d.dtype != DType::kBF16)
    return invalid("dtype = " + std::string(dtype_name(d.dtype)) + ": grouped gemm takes f64, f32, f16 or bf16");
  if (d.n < 0) return invalid("n = " + std::to_string(d.n) + " is negative");
  if (d.k <= 0) return invalid("k = " + std::to_string(d.k) + " (cuBLASLt needs k >= 1)");
  if (d.group_m.empty()) return invalid("group_m is empty (no groups)");
  for (std::size_t g = 0; g < d.group_m.size(); ++g)
    if (d.group_m[g] < 0) return invalid("group_m[" + std::to_string(g) + "] = " + std::to_string(d.group_m[g]) + " is negative");
  const int size = static_cast<int>(dtype_size(d.dtype));
  if (d.alignment < size || (d.alignment & (d.alignment - 1)) != 0)
    return invalid("alignment = " + std::to_string(d.alignment) + " bytes is not a power of two of at least one " +
                   std::string(dtype_name(d.dtype)) + " element (" + std::to_string(size) + " bytes)");
  BARACUDA_TRY(validate_gemm(grouped_gemm_group(d, 0, d.alignment)).add_context("group 0"));
  // The packed A and D of all groups and B's G weights within 64-bit indexing (the groups'
  // offsets are computed from them).
  __int128 rows = 0;
  for (std::int64_t m : d.group_m) rows += m;
  if (rows > (static_cast<__int128>(1) << 62))
    return invalid("group_m sums to more than 2^62 rows: a and d are too large for 64-bit indexing");
  BARACUDA_TRY(validate_layout(TensorLayout::contiguous(d.dtype, {d.total_m(), d.k}, d.alignment), "a (all groups)"));
  BARACUDA_TRY(validate_layout(TensorLayout::contiguous(d.dtype, {d.groups(), d.k, d.n}, d.alignment), "b (all groups)"));
  return validate_layout(TensorLayout::contiguous(d.dtype, {d.total_m(), d.n}, d.alignment), "d (all groups)");
}

// The alignment group g's pointer keeps: the promise, lowered by its element offset.
int offset_alignment(int promised, std::int64_t elements, DType t) {
  const std::int64_t bytes = elements * static_cast<std::int64_t>(dtype_size(t));
  int a = promised;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

struct GroupLaunch {
  std::int64_t a_off = 0, b_off = 0, d_off = 0;  // elements
  int plan = -1;                                 // index into plans; -1: empty group
};

struct GroupedState {
  std::vector<GemmImpl> plans;
  std::vector<GroupLaunch> groups;
  std::size_t elem = 0;
};

struct GroupedCandidate {
  using Desc = GroupedGemmDescriptor;
  static Candidate<Desc, GroupedGemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, GroupedGemmArgs>::Probe pr;
    pr.sku = lt_sku(d.dtype, false);
    pr.sku.family = "grouped_gemm";
    pr.sku.impl = "cublaslt_loop";
    pr.rejection = lt_rejection(grouped_gemm_group(d, 0, d.alignment));
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    auto st = std::make_shared<GroupedState>();
    st->elem = dtype_size(d.dtype);
    PlanPreference sub = pref;
    sub.force_sku.clear();  // the preference named the grouped SKU; each GEMM takes the strict cuBLASLt one
    sub.skip_skus = {"gemm.fwd.cublaslt_tf32*"};
    std::map<std::tuple<std::int64_t, int, int, int>, int> index;
    std::size_t ws = 0;
    std::int64_t row = 0;
    for (std::int64_t g = 0; g < d.groups(); ++g) {
      const std::int64_t m = d.group_m[static_cast<std::size_t>(g)];
      GroupLaunch l;
      l.a_off = row * d.k;
      l.b_off = g * d.k * d.n;
      l.d_off = row * d.n;
      row += m;
      if (m > 0 && d.n > 0) {
        const int aa = offset_alignment(d.alignment, l.a_off, d.dtype), ab = offset_alignment(d.alignment, l.b_off, d.dtype),
                  ad = offset_alignment(d.alignment, l.d_off, d.dtype);
        auto key = std::make_tuple(m, aa, ab, ad);
        auto it = index.find(key);
        if (it == index.end()) {
          GemmDescriptor gd = grouped_gemm_group(d, g, d.alignment);
          gd.a.alignment = aa;
          gd.b.alignment = ab;
          gd.d.alignment = ad;
          auto p = select_gemm_impl(caps, gd, sub);
          if (!p) return Status(p.error()).add_context("group " + std::to_string(g));
          ws = std::max(ws, p.value()->workspace_bytes);
          it = index.emplace(key, static_cast<int>(st->plans.size())).first;
          st->plans.push_back(p.value());
        }
        l.plan = it->second;
      }
      st->groups.push_back(l);
    }
    return PreparedCandidate{st, ws};
  }
  // The groups in order on one stream, sharing the workspace.
  static Status launch(const void* state, const Desc&, const GroupedGemmArgs& a, Workspace ws, cudaStream_t s) {
    const auto& st = *static_cast<const GroupedState*>(state);
    for (const GroupLaunch& l : st.groups) {
      if (l.plan < 0) continue;
      const auto& p = *st.plans[static_cast<std::size_t>(l.plan)];
      GemmArgs ga{.a = static_cast<const char*>(a.a) + l.a_off * st.elem,
                  .b = static_cast<const char*>(a.b) + l.b_off * st.elem,
                  .d = static_cast<char*>(a.d) + l.d_off * st.elem,
                  .alpha = a.alpha};
      BARACUDA_TRY(p.candidate->launch(p.state.get(), p.desc, ga, ws, s));
    }
    return Status::ok();
  }
};

}  // namespace

Status check_grouped_gemm_args(const GroupedGemmDescriptor& d, const GroupedGemmArgs& a) {
  const std::int64_t m = d.total_m();
  if (m == 0 || d.n == 0) return Status::ok();  // nothing is read or written
  const TensorLayout la = TensorLayout::contiguous(d.dtype, {m, d.k}, d.alignment);
  const TensorLayout lb = TensorLayout::contiguous(d.dtype, {d.groups(), d.k, d.n}, d.alignment);
  const TensorLayout ld = TensorLayout::contiguous(d.dtype, {m, d.n}, d.alignment);
  const std::pair<const char*, const void*> ptrs[] = {{"d", a.d}, {"a", a.a}, {"b", a.b}};
  for (const auto& [field, p] : ptrs) {
    if (p == nullptr) return invalid(std::string("args.") + field + " is null");
    if (pointer_alignment(p) < d.alignment)
      return Status(Code::kMisaligned, std::string("args.") + field + " is not aligned to alignment = " +
                                           std::to_string(d.alignment) + " bytes");
  }
  if (byte_ranges_overlap(a.d, ld, a.a, la)) return invalid("args.d overlaps args.a");
  if (byte_ranges_overlap(a.d, ld, a.b, lb)) return invalid("args.d overlaps args.b");
  return Status::ok();
}

}  // namespace gemm

template <>
struct FamilyTraits<GroupedGemmDescriptor>
    : gemm::OneCandidateTraits<GroupedGemmDescriptor, GroupedGemmArgs, gemm::GroupedCandidate> {
  static constexpr const char* kFamily = "grouped_gemm";
  static Status validate(const GroupedGemmDescriptor& d) { return gemm::validate_grouped(d); }
  static Status check_args(const GroupedGemmDescriptor& d, const GroupedGemmArgs& a) {
    return gemm::check_grouped_gemm_args(d, a);
  }
};

template class Plan<GroupedGemmDescriptor, GroupedGemmArgs>;

}  // namespace baracuda
