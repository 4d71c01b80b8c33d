// CPU oracle of PackPlan / UnpackPlan (see pack.hpp).
#include "baracuda/reference/pack.hpp"

#include <algorithm>
#include <string>

namespace baracuda::reference {

unsigned pack_saturate(DType packed, std::int64_t v) {
  switch (packed) {
    case DType::kS4: return static_cast<unsigned>(std::clamp<std::int64_t>(v, -8, 7)) & 0xFu;
    case DType::kU4: return static_cast<unsigned>(std::clamp<std::int64_t>(v, 0, 15));
    case DType::kBit: return v != 0 ? 1u : 0u;
    default: return 0;
  }
}

std::int64_t unpack_code(DType packed, unsigned code) {
  if (packed == DType::kS4) return code >= 8 ? static_cast<std::int64_t>(code) - 16 : code;
  return code;
}

namespace {
DType partner(DType packed) {
  return packed == DType::kS4 ? DType::kI8 : packed == DType::kU4 ? DType::kU8 : packed == DType::kBit ? DType::kBool : DType::kF32;
}
Status check(DType packed, DType plain) {
  if (!dtype_is_packed(packed) || partner(packed) != plain)
    return Status(Code::kInvalidArgument, "reference: pack / unpack does not take " + std::string(dtype_name(plain)) +
                                              " <-> " + std::string(dtype_name(packed)));
  return Status::ok();
}
// Bit offset of packed element offset e (may be negative for negative strides: not allowed
// by the plans, but kept well defined here).
unsigned char* byte_of(HostTensor& t, std::int64_t e, int bits) { return static_cast<unsigned char*>(t.data()) + (e * bits) / 8; }
const unsigned char* byte_of(const HostTensor& t, std::int64_t e, int bits) {
  return static_cast<const unsigned char*>(t.data()) + (e * bits) / 8;
}
}  // namespace

Expected<HostTensor> pack(const PackDescriptor& d, const HostTensor& x) {
  BARACUDA_TRY(check(d.y.dtype, d.x.dtype));
  auto view = broadcast_to(x.layout(), d.y.rank, d.y.shape, "x");
  if (!view) return view.error();
  HostTensor y(d.y);  // zero-filled: padding stays 0
  const int bits = dtype_bits(d.y.dtype);
  for (std::int64_t i = 0; i < d.y.numel(); ++i) {
    const unsigned code = pack_saturate(d.y.dtype, load_as_int64(d.x.dtype, x.data(), offset_of(view.value(), i)));
    const std::int64_t e = offset_of(d.y, i);
    *byte_of(y, e, bits) |= static_cast<unsigned char>(code << ((e * bits) % 8));
  }
  return y;
}

Expected<HostTensor> unpack(const UnpackDescriptor& d, const HostTensor& x) {
  BARACUDA_TRY(check(d.x.dtype, d.y.dtype));
  HostTensor y(d.y);
  const int bits = dtype_bits(d.x.dtype);
  for (std::int64_t i = 0; i < d.y.numel(); ++i) {
    const std::int64_t e = offset_of(d.x, i);
    const unsigned code = (*byte_of(x, e, bits) >> ((e * bits) % 8)) & ((1u << bits) - 1);
    y.set(i, static_cast<double>(unpack_code(d.x.dtype, code)));
  }
  return y;
}

}  // namespace baracuda::reference
