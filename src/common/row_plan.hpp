// Host plumbing shared by the row families (SoftmaxPlan, LayerNormPlan / RMSNormPlan): the
// candidate adapter over a family's ordered implementation table, and the launch shape of
// the in-register row layouts (a warp, a block or a cluster of blocks per row).
//
// A family F provides
//   using Params = ...;                        // the host/kernel seam
//   kImpls                                     // the ordered table of {impl, vec, name}
//   view(const Desc&) -> View                  // the family's view of a descriptor
//   setup(impl, vec, const View&, caps) -> RowSetup<Params>
//   sku(const View&, const Info&) -> KernelSku
//   launch(Params, const View&, const Desc&, const Args&, Workspace, cudaStream_t) -> Status
// and kRowCandidates<F, Desc, Args> is its candidate list, in table order.
#pragma once

#include <algorithm>
#include <array>
#include <iterator>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "baracuda/core/tensor.hpp"
#include "core/plan_impl.hpp"
#include "core/workspace_align.hpp"

namespace baracuda::rows {

constexpr std::int64_t kMaxGrid = 0x7fffffff;
inline int round_up32(std::int64_t n) { return static_cast<int>(std::max<std::int64_t>(32, (n + 31) / 32 * 32)); }
using ::baracuda::align_workspace;

template <class Params>
struct RowSetup {
  std::string rejection;
  Params params;
  std::size_t workspace = 0;
};

template <class F, class Desc, class Args, int I>
struct RowCandidate {
  using Params = typename F::Params;
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    typename Candidate<Desc, Args>::Probe pr;
    const auto view = F::view(d);
    pr.sku = F::sku(view, F::kImpls[I]);
    RowSetup<Params> st = F::setup(F::kImpls[I].impl, F::kImpls[I].vec, view, caps);
    pr.rejection = std::move(st.rejection);
    pr.workspace_bytes = st.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    return std::shared_ptr<const void>(
        std::make_shared<Params>(F::setup(F::kImpls[I].impl, F::kImpls[I].vec, F::view(d), caps).params));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    return F::launch(*static_cast<const Params*>(state), F::view(d), d, a, ws, s);
  }
};
template <class F, class Desc, class Args, int... I>
constexpr std::array<Candidate<Desc, Args>, sizeof...(I)> make_row_candidates(std::integer_sequence<int, I...>) {
  return {Candidate<Desc, Args>{&RowCandidate<F, Desc, Args, I>::probe, &RowCandidate<F, Desc, Args, I>::prepare,
                                &RowCandidate<F, Desc, Args, I>::launch}...};
}
template <class F, class Desc, class Args>
inline constexpr auto kRowCandidates =
    make_row_candidates<F, Desc, Args>(std::make_integer_sequence<int, static_cast<int>(std::size(F::kImpls))>{});

// The rows of an along-an-axis op: operands of one shape seen as `rows` rows of `len`
// elements along axis `ax` (normalised); the kept dims (every dim but the axis) collapsed
// across the operands, each operand's axis stride (1 where the axis has length <= 1) and
// `inner`, the product of the dims after the axis (logical row r is (r / inner, r % inner)).
struct AxisGeometry {
  std::int64_t rows = 0, len = 1, inner = 1;
  int kept_rank = 0;  // 0: a single row
  std::int64_t kept_shape[8] = {};
  std::int64_t kept_stride[6][8] = {};
  std::int64_t axis_stride[6] = {};
};
inline AxisGeometry axis_geometry(std::span<const TensorLayout* const> ops, int ax) {
  AxisGeometry g;
  const TensorLayout& ref = *ops[0];
  g.len = ref.rank == 0 ? 1 : ref.shape[ax];
  for (int d = ax + 1; d < ref.rank; ++d) g.inner *= ref.shape[d];
  TensorLayout kept[6];
  const TensorLayout* ptrs[6];
  const int n = static_cast<int>(std::min<std::size_t>(ops.size(), 6));
  for (int k = 0; k < n; ++k) {
    const TensorLayout& l = *ops[static_cast<std::size_t>(k)];
    kept[k] = l;
    kept[k].rank = 0;
    for (int i = 0; i < l.rank; ++i) {
      if (i == ax) continue;
      kept[k].shape[kept[k].rank] = l.shape[i];
      kept[k].strides[kept[k].rank] = l.strides[i];
      ++kept[k].rank;
    }
    g.axis_stride[k] = (ref.rank == 0 || g.len == 1) ? 1 : l.strides[ax];
    ptrs[k] = &kept[k];
  }
  g.rows = kept[0].numel();
  const CollapsedDims c = collapse_dims(std::span<const TensorLayout* const>(ptrs, static_cast<std::size_t>(n)));
  g.kept_rank = g.rows <= 1 ? 0 : c.rank;
  for (int d = 0; d < g.kept_rank; ++d) {
    g.kept_shape[d] = c.shape[d];
    for (int k = 0; k < n; ++k) g.kept_stride[k][d] = c.strides[k][d];
  }
  return g;
}

// The in-register row layouts and their launch shape.
enum class RowLayout { kWarp, kBlock, kCluster };
struct RowShape {
  std::string rejection;  // empty: k / threads / cluster hold the shape
  int k = 1, threads = 32, cluster = 1;
};
// `len` elements in vectors of `v`; built(k): the (layout, k) bucket has a kernel;
// max_threads(k): its largest block (its launch bounds). `what` names the length in the
// rejection ("row length", "normalized size").
//  warp:    the smallest k with len <= 32 k v; blocks of 256 threads (8 rows).
//  block:   with k_pref > 0, bytes in flight first: the largest k <= k_pref whose block of
//           ceil(len / k v) threads is within [128, max_threads(k)] (several 16-byte loads
//           per thread, 4+ warps per row); else the smallest k that fits in 512 threads, then
//           in max_threads(k).
//  cluster: the smallest k (then up to max_threads(k)) that fits in `max_cluster` blocks.
template <class Built, class MaxThreads>
RowShape row_shape(RowLayout layout, std::int64_t len, int v, Built built, MaxThreads max_threads, const char* what,
                   int k_pref = 0, int max_cluster = 8) {
  constexpr int ks[] = {1, 2, 4, 8, 16};
  RowShape r;
  auto blocks_of = [&](int k) { return (len + static_cast<std::int64_t>(k) * v - 1) / (static_cast<std::int64_t>(k) * v); };
  switch (layout) {
    case RowLayout::kWarp:
      for (int k : ks)
        if (built(k) && len <= 32LL * k * v) {
          r.k = k;
          r.threads = 256;
          return r;
        }
      break;
    case RowLayout::kBlock:
      for (auto it = std::rbegin(ks); it != std::rend(ks); ++it)
        if (*it <= k_pref && built(*it) && blocks_of(*it) >= 128 && blocks_of(*it) <= max_threads(*it)) {
          r.k = *it;
          r.threads = round_up32(blocks_of(*it));
          return r;
        }
      for (int limit : {512, 1024})
        for (int k : ks)
          if (built(k) && len <= static_cast<std::int64_t>(std::min(limit, max_threads(k))) * k * v) {
            r.k = k;
            r.threads = round_up32(blocks_of(k));
            return r;
          }
      break;
    case RowLayout::kCluster:
      for (int k : ks)
        for (int limit : {512, 1024})
          if (built(k)) {
            const std::int64_t slice = static_cast<std::int64_t>(std::min(limit, max_threads(k))) * k * v;
            const std::int64_t n = std::max<std::int64_t>(2, (len + slice - 1) / slice);
            if (n > max_cluster) continue;
            r.k = k;
            r.cluster = static_cast<int>(n);
            const std::int64_t per = (len + n - 1) / n;
            r.threads = round_up32((per + static_cast<std::int64_t>(k) * v - 1) / (static_cast<std::int64_t>(k) * v));
            return r;
          }
      break;
  }
  std::int64_t cap = 0;
  for (int k : ks)
    if (built(k))
      cap = std::max<std::int64_t>(cap, static_cast<std::int64_t>(layout == RowLayout::kWarp ? 32 : max_threads(k)) * k *
                                            v * (layout == RowLayout::kCluster ? max_cluster : 1));
  r.rejection = std::string(what) + " " + std::to_string(len) + " > " + std::to_string(cap) +
                (layout == RowLayout::kWarp    ? " (one warp)"
                 : layout == RowLayout::kBlock ? " (one block)"
                                               : " (a cluster of " + std::to_string(max_cluster) + " blocks)");
  return r;
}

}  // namespace baracuda::rows
