// DType: the runtime element type carried by descriptors and tensor views.
//
// Frameworks hold dtypes as runtime values, so plans take them as values too. Packed
// sub-byte types (s4, u4: two per byte; bit: eight per byte) have a size in bits; their
// byte footprint is ceil(numel * bits / 8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace baracuda {

enum class DType : std::uint8_t {
  kF64,
  kF32,
  kF16,
  kBF16,
  kE4M3,   // fp8 e4m3 (OCP "fn": no inf)
  kE5M2,   // fp8 e5m2
  kI64,
  kI32,
  kI16,
  kI8,
  kU8,
  kU32,
  kBool,
  kS4,     // packed signed 4-bit, two per byte, low nibble first
  kU4,     // packed unsigned 4-bit, two per byte, low nibble first
  kBit,    // packed 1-bit, eight per byte, least significant bit first
  kC64,    // complex<float>
  kC128,   // complex<double>
};

inline constexpr int kNumDTypes = 18;

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // "f32", "bf16", "e4m3", ...
  int bits;               // storage bits per element (4 for s4/u4, 1 for bit)
  bool is_floating;       // real floating point (f64..e5m2)
  bool is_integer;        // i*, u*, s4, u4 (not bool, not bit)
  bool is_signed;         // signed integer or floating
  bool is_complex;
};

const DTypeInfo& dtype_info(DType t) noexcept;
inline std::string_view dtype_name(DType t) noexcept { return dtype_info(t).name; }
inline int dtype_bits(DType t) noexcept { return dtype_info(t).bits; }
// Bytes per element for byte-addressable dtypes; 0 for packed sub-byte dtypes.
inline std::size_t dtype_size(DType t) noexcept {
  int b = dtype_bits(t);
  return b >= 8 ? static_cast<std::size_t>(b / 8) : 0;
}
inline bool dtype_is_packed(DType t) noexcept { return dtype_bits(t) < 8; }
inline bool dtype_is_floating(DType t) noexcept { return dtype_info(t).is_floating; }
inline bool dtype_is_integer(DType t) noexcept { return dtype_info(t).is_integer; }
inline bool dtype_is_complex(DType t) noexcept { return dtype_info(t).is_complex; }
// Bytes needed to store numel elements (rounds packed types up to whole bytes).
std::size_t dtype_storage_bytes(DType t, std::int64_t numel) noexcept;
// Parse "f32", "bf16", "e4m3", "fp8_e4m3", ... (case-sensitive, lowercase).
std::optional<DType> parse_dtype(std::string_view name) noexcept;

}  // namespace baracuda
