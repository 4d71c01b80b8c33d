#include "elementwise/map_family.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace baracuda::elementwise {

std::string hex_ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

namespace {

template <class F>
void for_each_operand(const MapOperands& ops, F&& f) {
  for (int k = 0; k < ops.num_out; ++k) f(ops.out[k]);
  for (int k = 0; k < ops.num_in; ++k) f(ops.in[k]);
}
}  // namespace

const char* map_path_impl(MapPath path) {
  switch (path) {
    case MapPath::kVecContig: return "vec16_contig";
    case MapPath::kVecRows: return "vec16_rows";
    case MapPath::kStrided32: return "strided_i32";
    case MapPath::kStrided64: return "strided_i64";
  }
  return "?";
}

MapParams make_map_params(const MapOperands& ops, MapPath path, int fp8_mode) {
  MapParams p;
  p.path = path;
  p.num_out = ops.num_out;
  p.num_in = ops.num_in;
  p.fp8_mode = fp8_mode;
  p.numel = ops.out[0].layout.numel();
  std::vector<const TensorLayout*> layouts;
  for_each_operand(ops, [&](const MapOperand& o) { layouts.push_back(&o.layout); });
  CollapsedDims c = collapse_dims(layouts);
  p.rank = c.rank;
  for (int d = 0; d < c.rank; ++d) {
    p.shape[d] = c.shape[d];
    for (int k = 0; k < c.num_operands; ++k) p.strides[k][d] = c.strides[k][d];
  }
  return p;
}

std::string map_path_rejection(const MapOperands& ops, MapPath path) {
  std::string why;
  if (path == MapPath::kVecContig) {
    for_each_operand(ops, [&](const MapOperand& o) {
      if (!why.empty()) return;
      if (!o.layout.is_contiguous())
        why = std::string(o.field) + " is not dense in the iteration shape (" + o.layout.to_string() + ")";
      else if (o.declared_alignment < 16)
        why = std::string(o.field) + ".alignment = " + std::to_string(o.declared_alignment) + " < 16 bytes";
    });
    return why;
  }
  if (path == MapPath::kVecRows) {
    // The iteration space collapsed together must be [rows, cols] with unit inner strides,
    // cols and every row stride multiples of the vector width, every pointer 16-byte aligned.
    const MapParams p = make_map_params(ops, path, 0);
    int min_size = 16;
    for_each_operand(ops, [&](const MapOperand& o) {
      min_size = std::min<int>(min_size, static_cast<int>(std::max<std::size_t>(dtype_size(o.layout.dtype), 1)));
      if (why.empty() && o.declared_alignment < 16)
        why = std::string(o.field) + ".alignment = " + std::to_string(o.declared_alignment) + " < 16 bytes";
    });
    if (!why.empty()) return why;
    const std::int64_t vec = 16 / min_size;
    if (p.rank != 2) return "the operands do not collapse to [rows, cols] (rank " + std::to_string(p.rank) + ")";
    if (p.shape[1] % vec != 0)
      return "cols = " + std::to_string(p.shape[1]) + " is not a multiple of the " + std::to_string(vec) + "-element vector";
    if (p.numel / vec >= (std::int64_t{1} << 31)) return "numel = " + std::to_string(p.numel) + " needs 64-bit indexing";
    const int nops = p.num_out + p.num_in;
    for (int k = 0; k < nops; ++k) {
      const char* field = k < p.num_out ? ops.out[k].field : ops.in[k - p.num_out].field;
      if (p.strides[k][1] != 1) return std::string(field) + " has inner stride " + std::to_string(p.strides[k][1]) + " (needs 1)";
      if (p.strides[k][0] % vec != 0 || p.strides[k][0] < 0)
        return std::string(field) + " row stride " + std::to_string(p.strides[k][0]) + " is not a non-negative multiple of " +
               std::to_string(vec);
    }
    return why;
  }
  if (path == MapPath::kStrided32) {
    constexpr std::int64_t kLimit = std::int64_t{1} << 31;
    if (ops.out[0].layout.numel() >= kLimit)
      return "numel = " + std::to_string(ops.out[0].layout.numel()) + " needs 64-bit indexing";
    for_each_operand(ops, [&](const MapOperand& o) {
      if (!why.empty()) return;
      auto s = o.layout.element_span();
      if (s.end_offset > kLimit || -s.min_offset >= kLimit)
        why = std::string(o.field) + " spans offsets beyond 2^31 elements";
    });
    return why;
  }
  return why;
}

bool layout_is_non_overlapping(const TensorLayout& t) noexcept {
  if (t.numel() <= 1) return true;
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // |stride|, size
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] > 1) dims.emplace_back(t.strides[i] < 0 ? -t.strides[i] : t.strides[i], t.shape[i]);
  std::sort(dims.begin(), dims.end());
  std::int64_t reach = 0;  // largest offset reachable by the inner dims
  for (auto [stride, size] : dims) {
    if (stride <= reach) return false;
    reach += stride * (size - 1);
  }
  return true;
}

Status check_output_layout(const TensorLayout& t, const char* field) {
  if (!layout_is_non_overlapping(t))
    return Status(Code::kInvalidArgument, std::string(field) + " = " + t.to_string() +
                                              " maps several elements to one address (an output needs distinct addresses)");
  return Status::ok();
}

Status check_map_pointers(const MapOperands& ops, const MapPointers& ptrs) {
  const bool empty = ops.out[0].layout.numel() == 0;
  auto check_one = [&](const void* p, const MapOperand& o) -> Status {
    if (empty) return Status::ok();
    if (p == nullptr) return Status(Code::kInvalidArgument, std::string("args.") + o.field + " is null");
    if (reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(o.declared_alignment) != 0)
      return Status(Code::kMisaligned, std::string("args.") + o.field + " = " + hex_ptr(p) + " is not aligned to " +
                                           o.field + ".alignment = " + std::to_string(o.declared_alignment) + " bytes");
    return Status::ok();
  };
  for (int k = 0; k < ops.num_out; ++k) BARACUDA_TRY(check_one(ptrs.out[k], ops.out[k]));
  for (int k = 0; k < ops.num_in; ++k) BARACUDA_TRY(check_one(ptrs.in[k], ops.in[k]));
  if (empty) return Status::ok();
  for (int o = 0; o < ops.num_out; ++o) {
    const auto& out = ops.out[o];
    for (int o2 = o + 1; o2 < ops.num_out; ++o2)
      if (byte_ranges_overlap(ptrs.out[o], out.layout, ptrs.out[o2], ops.out[o2].layout))
        return Status(Code::kInvalidArgument, std::string("args.") + out.field + " and args." + ops.out[o2].field +
                                                  " overlap (outputs must be distinct)");
    for (int i = 0; i < ops.num_in; ++i) {
      const auto& in = ops.in[i];
      if (!byte_ranges_overlap(ptrs.out[o], out.layout, ptrs.in[i], in.layout)) continue;
      bool same = ptrs.out[o] == ptrs.in[i] && out.layout.dtype == in.layout.dtype &&
                  out.layout.rank == in.layout.rank &&
                  std::equal(out.layout.shape.begin(), out.layout.shape.begin() + out.layout.rank, in.layout.shape.begin()) &&
                  std::equal(out.layout.strides.begin(), out.layout.strides.begin() + out.layout.rank,
                             in.layout.strides.begin());
      if (!same)
        return Status(Code::kInvalidArgument, std::string("args.") + out.field + " overlaps args." + in.field +
                                                  " without the identical layout (unsafe aliasing; in-place needs the "
                                                  "same pointer, dtype and strides)");
    }
  }
  return Status::ok();
}

}  // namespace baracuda::elementwise
