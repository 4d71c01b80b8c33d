// PackPlan / UnpackPlan: s4 <-> i8, u4 <-> u8, bit <-> bool (include/baracuda/ops/pack.hpp
// has the packed layout and the saturation rule). Two SKUs each, in this order:
//  * vec16_contig: both operands dense row-major (no row padding, no broadcast) and
//    declared 16-byte aligned (run() checks the pointers against the declaration): flat
//    16-byte vectors, memory-bound.
//  * bytes_i64: any accepted layout; a thread per packed byte for pack, per element for
//    unpack, 64-bit indexing.
// kernels/pack.cuh has both kernels and the shared per-element rules.
#include <algorithm>
#include <cstdio>
#include <string>

#include "baracuda/ops/pack.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "elementwise/map_family.hpp"
#include "elementwise/pack_params.hpp"

namespace baracuda {

std::size_t PackDescriptor::hash() const noexcept { return detail::hash_combine(x.hash(), y.hash()); }
std::string PackDescriptor::to_string() const { return "pack(x=" + x.to_string() + ", y=" + y.to_string() + ")"; }
std::size_t UnpackDescriptor::hash() const noexcept { return detail::hash_combine(x.hash() + 1, y.hash()); }
std::string UnpackDescriptor::to_string() const { return "unpack(x=" + x.to_string() + ", y=" + y.to_string() + ")"; }

namespace elementwise {
namespace {

// The unpacked dtype that goes with a packed one (kF32 = none).
DType unpacked_partner(DType packed) {
  switch (packed) {
    case DType::kS4: return DType::kI8;
    case DType::kU4: return DType::kU8;
    case DType::kBit: return DType::kBool;
    default: return DType::kF32;
  }
}

Status check_pair(const TensorLayout& packed, const char* packed_field, const TensorLayout& plain, const char* plain_field) {
  if (!dtype_is_packed(packed.dtype))
    return Status(Code::kInvalidArgument, std::string(packed_field) + ".dtype = " + std::string(dtype_name(packed.dtype)) +
                                              " is not a packed dtype (s4, u4, bit)");
  if (plain.dtype != unpacked_partner(packed.dtype))
    return Status(Code::kInvalidArgument, std::string(plain_field) + ".dtype = " + std::string(dtype_name(plain.dtype)) +
                                              " does not go with " + packed_field + ".dtype = " +
                                              std::string(dtype_name(packed.dtype)) + " (s4 <-> i8, u4 <-> u8, bit <-> bool)");
  return Status::ok();
}

// Row stride R of a packed layout (see pack.hpp), or an error naming the field.
Expected<std::int64_t> packed_row_stride(const TensorLayout& t, const char* field) {
  if (t.rank == 0) return std::int64_t{1};
  const int last = t.rank - 1;
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, std::string(field) + " = " + t.to_string() + " is not a packed row-major layout: " + why);
  };
  if (t.shape[last] > 1 && t.strides[last] != 1)
    return bad("strides[" + std::to_string(last) + "] = " + std::to_string(t.strides[last]) + " (needs 1)");
  std::int64_t r = t.shape[last];
  if (t.rank >= 2) {
    r = t.strides[last - 1];
    if (t.shape[last - 1] == 1 && r < t.shape[last]) r = t.shape[last];  // a single row: its stride is never used
    if (r < t.shape[last])
      return bad("row stride strides[" + std::to_string(last - 1) + "] = " + std::to_string(r) + " < shape[" +
                 std::to_string(last) + "] = " + std::to_string(t.shape[last]));
    std::int64_t expect = r * t.shape[last - 1];
    for (int d = last - 2; d >= 0; --d) {
      if (t.shape[d] > 1 && t.strides[d] != expect)
        return bad("strides[" + std::to_string(d) + "] = " + std::to_string(t.strides[d]) + " (needs " + std::to_string(expect) + ")");
      expect *= t.shape[d];
    }
  }
  return r;
}

PackParams make_params(const TensorLayout& packed, const TensorLayout& plain_view) {
  PackParams p;
  const int last = packed.rank - 1;
  p.n = packed.rank == 0 ? 1 : packed.shape[last];
  p.numel = packed.numel();
  p.rows = p.n == 0 ? 0 : p.numel / p.n;
  p.row_stride = packed_row_stride(packed, "packed").value();
  p.span = p.numel == 0 ? 0 : (p.rows - 1) * p.row_stride + p.n;
  p.bytes = (p.span * dtype_bits(packed.dtype) + 7) / 8;
  p.rank = plain_view.rank;
  for (int d = 0; d < plain_view.rank; ++d) {
    p.shape[d] = plain_view.shape[d];
    p.strides[d] = plain_view.strides[d];
  }
  if (p.rank == 0) {  // scalar: one element at offset 0
    p.rank = 1;
    p.shape[0] = 1;
  }
  return p;
}

std::string hex_ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

Status check_pointer(const void* p, const char* field, const TensorLayout& t, bool empty) {
  if (empty) return Status::ok();
  if (p == nullptr) return Status(Code::kInvalidArgument, std::string("args.") + field + " is null");
  if (reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(t.alignment) != 0)
    return Status(Code::kMisaligned, std::string("args.") + field + " = " + hex_ptr(p) + " is not aligned to " + field +
                                         ".alignment = " + std::to_string(t.alignment) + " bytes");
  return Status::ok();
}

// Different dtypes: any overlap of x and y is unsafe.
Status check_pack_args(const TensorLayout& x, const void* xp, const TensorLayout& y, const void* yp) {
  const bool empty = y.numel() == 0;
  BARACUDA_TRY(check_pointer(yp, "y", y, empty));
  BARACUDA_TRY(check_pointer(xp, "x", x, empty));
  if (!empty && byte_ranges_overlap(yp, y, xp, x))
    return Status(Code::kInvalidArgument, "args.y overlaps args.x (unsafe aliasing: pack and unpack change the element "
                                          "size, so they cannot run in place)");
  return Status::ok();
}

enum class PackPath { kVecContig, kBytes };

const char* pack_path_impl(PackPath path) { return path == PackPath::kVecContig ? "vec16_contig" : "bytes_i64"; }

// Why vec16_contig cannot run these operands ("" = it can). `plain` is the unpacked operand
// as iterated (pack: x broadcast to y's shape).
std::string vec_contig_rejection(const TensorLayout& packed, const char* packed_field, const TensorLayout& plain,
                                 const char* plain_field) {
  if (!packed.is_contiguous()) {
    const int last = packed.rank - 1;
    const std::int64_t r = packed_row_stride(packed, packed_field).value();
    if (r != packed.shape[last])
      return std::string(packed_field) + " has padded rows (row stride " + std::to_string(r) + " > shape[" +
             std::to_string(last) + "] = " + std::to_string(packed.shape[last]) + ")";
    return std::string(packed_field) + " = " + packed.to_string() + " is not dense row-major";
  }
  if (!plain.is_contiguous())
    return std::string(plain_field) + " = " + plain.to_string() + " is not dense row-major" +
           (plain.has_broadcast() ? " (broadcast)" : "");
  for (const auto& [t, field] : {std::pair{&packed, packed_field}, std::pair{&plain, plain_field}})
    if (t->alignment < 16) return std::string(field) + ".alignment = " + std::to_string(t->alignment) + " < 16 bytes";
  return "";
}

KernelSku pack_sku(const char* family, DType in, DType out, PackPath path) {
  KernelSku s;
  s.family = family;
  s.impl = pack_path_impl(path);
  s.in = in;
  s.out = out;
  s.compute = s.precision.accumulator = dtype_is_packed(in) ? out : in;
  return s;
}

template <class Desc, class Args, bool kPack, PackPath P>
struct PackCandidate {
  static TensorLayout plain_view(const Desc& d) {
    if constexpr (kPack) return broadcast_to(d.x, d.y.rank, d.y.shape, "x").value();
    else return d.y;
  }
  static typename Candidate<Desc, Args>::Probe probe(const Desc& d, const DeviceCaps&) {
    typename Candidate<Desc, Args>::Probe pr;
    pr.sku = pack_sku(kPack ? "pack" : "unpack", d.x.dtype, d.y.dtype, P);
    if constexpr (P == PackPath::kVecContig) {
      TensorLayout plain = plain_view(d);
      plain.alignment = kPack ? d.x.alignment : d.y.alignment;
      pr.rejection = kPack ? vec_contig_rejection(d.y, "y", plain, "x") : vec_contig_rejection(d.x, "x", plain, "y");
    }
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc& d, const DeviceCaps&) {
    PackParams p = make_params(kPack ? d.y : d.x, plain_view(d));
    return std::shared_ptr<const void>(std::make_shared<PackParams>(p));
  }
  template <DType Packed>
  static Status launch_for(const PackParams& p, cudaStream_t s) {
    if constexpr (P == PackPath::kVecContig) return kPack ? launch_pack_contig<Packed>(p, s) : launch_unpack_contig<Packed>(p, s);
    else return kPack ? launch_pack<Packed>(p, s) : launch_unpack<Packed>(p, s);
  }
  static Status launch(const void* state, const Desc& d, const Args& a, Workspace, cudaStream_t s) {
    PackParams p = *static_cast<const PackParams*>(state);
    p.in = a.x;
    p.out = a.y;
    switch (kPack ? d.y.dtype : d.x.dtype) {
      case DType::kS4: return launch_for<DType::kS4>(p, s);
      case DType::kU4: return launch_for<DType::kU4>(p, s);
      case DType::kBit: return launch_for<DType::kBit>(p, s);
      default: return Status(Code::kInternal, "pack: unexpected packed dtype");
    }
  }
  static constexpr Candidate<Desc, Args> make() { return {&probe, &prepare, &launch}; }
};

inline constexpr std::array<Candidate<PackDescriptor, PackArgs>, 2> kPackCandidates = {
    PackCandidate<PackDescriptor, PackArgs, true, PackPath::kVecContig>::make(),
    PackCandidate<PackDescriptor, PackArgs, true, PackPath::kBytes>::make()};
inline constexpr std::array<Candidate<UnpackDescriptor, UnpackArgs>, 2> kUnpackCandidates = {
    PackCandidate<UnpackDescriptor, UnpackArgs, false, PackPath::kVecContig>::make(),
    PackCandidate<UnpackDescriptor, UnpackArgs, false, PackPath::kBytes>::make()};

}  // namespace
}  // namespace elementwise

template <>
struct FamilyTraits<PackDescriptor> {
  static constexpr const char* kFamily = "pack";
  static Status validate(const PackDescriptor& d) {
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    BARACUDA_TRY(elementwise::check_pair(d.y, "y", d.x, "x"));
    auto b = broadcast_to(d.x, d.y.rank, d.y.shape, "x");
    if (!b) return b.error();
    auto r = elementwise::packed_row_stride(d.y, "y");
    return r ? Status::ok() : r.error();
  }
  static std::span<const Candidate<PackDescriptor, PackArgs>> candidates() { return elementwise::kPackCandidates; }
  static Status check_args(const PackDescriptor& d, const PackArgs& a) {
    return elementwise::check_pack_args(d.x, a.x, d.y, a.y);
  }
};

template <>
struct FamilyTraits<UnpackDescriptor> {
  static constexpr const char* kFamily = "unpack";
  static Status validate(const UnpackDescriptor& d) {
    BARACUDA_TRY(validate_layout(d.x, "x"));
    BARACUDA_TRY(validate_layout(d.y, "y"));
    BARACUDA_TRY(elementwise::check_pair(d.x, "x", d.y, "y"));
    if (d.x.rank != d.y.rank || !std::equal(d.x.shape.begin(), d.x.shape.begin() + d.x.rank, d.y.shape.begin()))
      return Status(Code::kInvalidArgument, "y = " + d.y.to_string() + " does not have x's shape (x = " + d.x.to_string() + ")");
    auto r = elementwise::packed_row_stride(d.x, "x");
    if (!r) return r.error();
    return elementwise::check_output_layout(d.y, "y");
  }
  static std::span<const Candidate<UnpackDescriptor, UnpackArgs>> candidates() { return elementwise::kUnpackCandidates; }
  static Status check_args(const UnpackDescriptor& d, const UnpackArgs& a) {
    return elementwise::check_pack_args(d.x, a.x, d.y, a.y);
  }
};

template class Plan<PackDescriptor, PackArgs>;
template class Plan<UnpackDescriptor, UnpackArgs>;

}  // namespace baracuda
