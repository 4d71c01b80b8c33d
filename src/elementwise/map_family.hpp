// Shared host code of the map-shaped elementwise plans (unary, unary backward, binary,
// cast, and the map half of binary backward): operand checks, collapsing, the choice among
// the three map paths, and the candidate table built from a family Spec.
//
// A Spec provides:
//   static constexpr const char* kFamily; static constexpr Direction kDirection;
//   static MapOperands operands(const Desc&);          // layouts broadcast to the out shape
//   static KernelSku sku(const Desc&);                 // family/direction/dtypes filled in
//   static MapPointers pointers(const Args&);          // same order as operands()
//   static Status launch(const Desc&, const MapParams&, cudaStream_t);
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>

#include "baracuda/core/tensor.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/map_params.hpp"

namespace baracuda::elementwise {

struct MapOperand {
  TensorLayout layout;  // broadcast to the iteration shape
  const char* field;    // "x", "grad_out", ...
  int declared_alignment;
};

struct MapOperands {
  int num_out = 0;
  int num_in = 0;
  std::array<MapOperand, kMaxMapOut> out{};
  std::array<MapOperand, kMaxMapIn> in{};
};

struct MapPointers {
  std::array<void*, kMaxMapOut> out{};
  std::array<const void*, kMaxMapIn> in{};
};

// Collapsed parameters (pointers left null) for the given operands.
MapParams make_map_params(const MapOperands& ops, MapPath path, int fp8_mode);
// Why a path cannot run these operands ("" = it can).
std::string map_path_rejection(const MapOperands& ops, MapPath path);
const char* map_path_impl(MapPath path);  // "vec16_contig", "vec16_rows", "strided_i32", "strided_i64"

// Null pointers, alignment, and aliasing (an output may alias an input only with the
// identical layout; outputs never overlap each other). `ops` describes the layouts.
Status check_map_pointers(const MapOperands& ops, const MapPointers& ptrs);
// A pointer as text ("0x7f...") for error messages.
std::string hex_ptr(const void* p);

// Output layouts must not map two elements to one address.
bool layout_is_non_overlapping(const TensorLayout& t) noexcept;
Status check_output_layout(const TensorLayout& t, const char* field);

template <class Spec, class Desc, class Args, MapPath P>
struct MapCandidate {
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps&) {
    typename Candidate<Desc, Args>::Probe pr;
    pr.sku = Spec::sku(d);
    pr.sku.impl = map_path_impl(P);
    pr.rejection = map_path_rejection(Spec::operands(d), P);
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    return std::shared_ptr<const void>(std::make_shared<MapParams>(make_map_params(Spec::operands(d), P, Spec::fp8_mode(d))));
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace, cudaStream_t s) {
    MapParams p = *static_cast<const MapParams*>(state);
    MapPointers ptr;
    if constexpr (requires { Spec::pointers(d, a); }) ptr = Spec::pointers(d, a);  // views inside an operand
    else ptr = Spec::pointers(a);
    for (int k = 0; k < p.num_out; ++k) p.out[k] = ptr.out[k];
    for (int k = 0; k < p.num_in; ++k) p.in[k] = ptr.in[k];
    return Spec::launch(d, p, s);
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

// The standard ordered list: vectorised contiguous, vectorised rows (a bias add [M, N] + [N]
// picks it), strided 32-bit, then strided 64-bit.
template <class Spec, class Desc, class Args>
inline constexpr std::array<Candidate<Desc, Args>, 4> kMapCandidates = {
    MapCandidate<Spec, Desc, Args, MapPath::kVecContig>::make(),
    MapCandidate<Spec, Desc, Args, MapPath::kVecRows>::make(),
    MapCandidate<Spec, Desc, Args, MapPath::kStrided32>::make(),
    MapCandidate<Spec, Desc, Args, MapPath::kStrided64>::make(),
};

// What a plan that is one map adds to its FamilyTraits (which inherit this and give kFamily
// and validate): the standard candidates, and the pointer checks of the operands as the
// caller passes them (Spec::whole_operands / whole_pointers where the map sees views inside
// them, e.g. the two halves of a packed gated x; else Spec::operands / pointers).
template <class Spec, class Desc, class Args>
struct MapFamilyTraits {
  static std::span<const Candidate<Desc, Args>> candidates() { return kMapCandidates<Spec, Desc, Args>; }
  static Status check_args(const Desc& d, const Args& a) {
    if constexpr (requires { Spec::whole_operands(d); })
      return check_map_pointers(Spec::whole_operands(d), Spec::whole_pointers(d, a));
    else
      return check_map_pointers(Spec::operands(d), Spec::pointers(a));
  }
};

}  // namespace baracuda::elementwise
