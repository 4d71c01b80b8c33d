// Pack / unpack of the sub-byte dtypes: s4 <-> i8, u4 <-> u8 (two per byte, low nibble
// first) and bit <-> bool (eight per byte, least significant bit first).
//
// Packed layouts. Shapes and strides count elements, as for every dtype; element e of a
// packed tensor sits at bit e * bits of the buffer (s4 / u4: bits 4e..4e+3, so element 0 is
// the low nibble of byte 0; bit: bit e % 8 of byte e / 8). A packed operand must be row-major
// over its last dim: stride 1 in the last dim, row stride R >= the last dim N in the one
// before, and the leading dims dense over rows of R elements. R = N packs the rows back to
// back (an odd N for s4 puts a row boundary inside a byte: the next row starts in the high
// nibble); R rounded up to a whole byte (a multiple of 2 for s4 / u4, of 8 for bit) starts
// every row on a byte boundary. Elements N..R-1 of a row are padding.
//
// Pack writes whole bytes: padding elements (and the unused high bits of the last byte) are
// written as 0, and nothing outside the packed layout's byte span is touched. Values that
// do not fit saturate: i8 -> s4 clamps to [-8, 7] (100 -> 7, -100 -> -8), u8 -> u4 to
// [0, 15] (200 -> 15); bool is 0 / 1. Unpack sign-extends s4 (0xF -> -1) and writes bool
// 0 / 1. The unpacked operand takes any strides (broadcast for pack's x; non-overlapping
// for unpack's y). docs/semantics.md, "Pack / unpack".
#pragma once

#include <cstddef>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct PackDescriptor {
  TensorLayout x;  // i8 (-> s4), u8 (-> u4) or bool (-> bit); may broadcast into y's shape
  TensorLayout y;  // s4, u4 or bit, packed layout (see above)
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const PackDescriptor&, const PackDescriptor&) = default;
};
struct PackArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using PackPlan = Plan<PackDescriptor, PackArgs>;

struct UnpackDescriptor {
  TensorLayout x;  // s4, u4 or bit, packed layout (see above)
  TensorLayout y;  // i8 (from s4), u8 (from u4) or bool (from bit); x's shape, any strides
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const UnpackDescriptor&, const UnpackDescriptor&) = default;
};
struct UnpackArgs {
  const void* x = nullptr;
  void* y = nullptr;
};
using UnpackPlan = Plan<UnpackDescriptor, UnpackArgs>;

extern template class Plan<PackDescriptor, PackArgs>;
extern template class Plan<UnpackDescriptor, UnpackArgs>;

}  // namespace baracuda
