#include "baracuda/core/dtype.hpp"

#include <array>
#include <string>

#include "baracuda/core/dispatch.hpp"

namespace baracuda {

namespace {
// Order matches the DType enum.
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::kF64, "f64", 64, true, false, true, false},
    {DType::kF32, "f32", 32, true, false, true, false},
    {DType::kF16, "f16", 16, true, false, true, false},
    {DType::kBF16, "bf16", 16, true, false, true, false},
    {DType::kE4M3, "e4m3", 8, true, false, true, false},
    {DType::kE5M2, "e5m2", 8, true, false, true, false},
    {DType::kI64, "i64", 64, false, true, true, false},
    {DType::kI32, "i32", 32, false, true, true, false},
    {DType::kI16, "i16", 16, false, true, true, false},
    {DType::kI8, "i8", 8, false, true, true, false},
    {DType::kU8, "u8", 8, false, true, false, false},
    {DType::kU32, "u32", 32, false, true, false, false},
    {DType::kBool, "bool", 8, false, false, false, false},
    {DType::kS4, "s4", 4, false, true, true, false},
    {DType::kU4, "u4", 4, false, true, false, false},
    {DType::kBit, "bit", 1, false, false, false, false},
    {DType::kC64, "c64", 64, false, false, true, true},
    {DType::kC128, "c128", 128, false, false, true, true},
}};
}  // namespace

const DTypeInfo& dtype_info(DType t) noexcept {
  auto i = static_cast<std::size_t>(t);
  return kInfo[i < kInfo.size() ? i : 1];
}

std::size_t dtype_storage_bytes(DType t, std::int64_t numel) noexcept {
  if (numel <= 0) return 0;
  auto bits = static_cast<std::uint64_t>(dtype_bits(t)) * static_cast<std::uint64_t>(numel);
  return static_cast<std::size_t>((bits + 7) / 8);
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (const auto& i : kInfo)
    if (i.name == name) return i.dtype;
  if (name == "fp8_e4m3" || name == "float8_e4m3fn") return DType::kE4M3;
  if (name == "fp8_e5m2" || name == "float8_e5m2") return DType::kE5M2;
  if (name == "float32") return DType::kF32;
  if (name == "float16") return DType::kF16;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float64") return DType::kF64;
  return std::nullopt;
}

namespace detail {
Status dispatch_unsupported(const char* group, DType t) {
  return Status(Code::kNotSupported,
                std::string("dtype ") + std::string(dtype_name(t)) + " is not in the " + group + " group");
}
}  // namespace detail

}  // namespace baracuda
