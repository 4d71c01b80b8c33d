// Candidate tables of families whose candidates differ only by an index into an impl table
// and share one params struct (the launch state). A family supplies a Table:
//
//   struct Table {
//     using Params = ...;                                     // the host/kernel seam
//     static constexpr int kCount = ...;                      // number of candidates
//     (Setup: any struct with std::string rejection, Params params, std::size_t workspace)
//     static Setup setup(int i, const Desc&, const DeviceCaps&);    // probe + prepare
//     static KernelSku sku(int i, const Desc&);
//     static Status launch(Params p, const Desc&, const Args&, Workspace, cudaStream_t);
//   };
//
// and gets table_candidates<Table, Desc, Args>(): candidate i probes with setup(i) (its
// rejection, SKU and workspace), prepares the params once, and launches a copy of them.
#pragma once

#include <array>
#include <memory>
#include <utility>

#include "core/plan_impl.hpp"

namespace baracuda {

template <class Table, class Desc, class Args, int I>
struct TableCandidate {
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    typename Candidate<Desc, Args>::Probe pr;
    pr.sku = Table::sku(I, d);
    auto s = Table::setup(I, d, caps);
    pr.rejection = std::move(s.rejection);
    pr.workspace_bytes = s.workspace;
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps& caps) {
    using P = typename Table::Params;
    return std::shared_ptr<const void>(std::make_shared<P>(Table::setup(I, d, caps).params));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace ws, cudaStream_t s) {
    return Table::launch(*static_cast<const typename Table::Params*>(state), d, a, ws, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

namespace detail {
template <class Table, class Desc, class Args, int... I>
constexpr std::array<Candidate<Desc, Args>, sizeof...(I)> table_candidates(std::integer_sequence<int, I...>) {
  return {TableCandidate<Table, Desc, Args, I>::make()...};
}
}  // namespace detail

template <class Table, class Desc, class Args>
inline constexpr auto kTableCandidates =
    detail::table_candidates<Table, Desc, Args>(std::make_integer_sequence<int, Table::kCount>{});

}  // namespace baracuda
