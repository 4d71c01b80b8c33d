#include "baracuda/reference/host_tensor.hpp"

#include <cmath>
#include <algorithm>
#include <iterator>
#include <limits>

namespace baracuda::reference {

namespace {
template <class T>
T read(const void* base, std::int64_t off) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + off * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <class T>
void write(void* base, std::int64_t off, T v) {
  std::memcpy(static_cast<char*>(base) + off * static_cast<std::int64_t>(sizeof(T)), &v, sizeof(T));
}
// Saturating, truncating double -> integer as C++ static_cast would do for in-range values.
template <class I>
I to_int(double v) {
  if (std::isnan(v)) return I(0);
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}
}  // namespace

double load_as_double(DType t, const void* base, std::int64_t off) {
  switch (t) {
    case DType::kF64: return read<double>(base, off);
    case DType::kF32: return read<float>(base, off);
    case DType::kF16: return f16_bits_to_f32(read<std::uint16_t>(base, off));
    case DType::kBF16: return bf16_bits_to_f32(read<std::uint16_t>(base, off));
    case DType::kE4M3: return e4m3_bits_to_f32(read<std::uint8_t>(base, off));
    case DType::kE5M2: return e5m2_bits_to_f32(read<std::uint8_t>(base, off));
    case DType::kI64: return static_cast<double>(read<std::int64_t>(base, off));
    case DType::kI32: return read<std::int32_t>(base, off);
    case DType::kI16: return read<std::int16_t>(base, off);
    case DType::kI8: return read<std::int8_t>(base, off);
    case DType::kU8: return read<std::uint8_t>(base, off);
    case DType::kU32: return read<std::uint32_t>(base, off);
    case DType::kBool: return read<std::uint8_t>(base, off) != 0 ? 1.0 : 0.0;
    default: return std::nan("");
  }
}

std::int64_t load_as_int64(DType t, const void* base, std::int64_t off) {
  switch (t) {
    case DType::kI64: return read<std::int64_t>(base, off);
    case DType::kI32: return read<std::int32_t>(base, off);
    case DType::kI16: return read<std::int16_t>(base, off);
    case DType::kI8: return read<std::int8_t>(base, off);
    case DType::kU8: return read<std::uint8_t>(base, off);
    case DType::kU32: return read<std::uint32_t>(base, off);
    case DType::kBool: return read<std::uint8_t>(base, off) != 0;
    default: return to_int<std::int64_t>(load_as_double(t, base, off));
  }
}

void store_from_double(DType t, void* base, std::int64_t off, double v, Fp8Overflow mode) {
  // Narrow float formats round from float, as the kernels (and PyTorch) do: f64 -> f32 first.
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::kF64: write<double>(base, off, v); break;
    case DType::kF32: write<float>(base, off, f); break;
    case DType::kF16: write<std::uint16_t>(base, off, f32_to_f16_bits(f)); break;
    case DType::kBF16: write<std::uint16_t>(base, off, f32_to_bf16_bits(f)); break;
    case DType::kE4M3: write<std::uint8_t>(base, off, f32_to_e4m3_bits(f, mode)); break;
    case DType::kE5M2: write<std::uint8_t>(base, off, f32_to_e5m2_bits(f, mode)); break;
    case DType::kI64: write<std::int64_t>(base, off, to_int<std::int64_t>(v)); break;
    case DType::kI32: write<std::int32_t>(base, off, to_int<std::int32_t>(v)); break;
    case DType::kI16: write<std::int16_t>(base, off, to_int<std::int16_t>(v)); break;
    case DType::kI8: write<std::int8_t>(base, off, to_int<std::int8_t>(v)); break;
    case DType::kU8: write<std::uint8_t>(base, off, to_int<std::uint8_t>(v)); break;
    case DType::kU32: write<std::uint32_t>(base, off, to_int<std::uint32_t>(v)); break;
    case DType::kBool: write<std::uint8_t>(base, off, v != 0.0 ? 1 : 0); break;
    default: break;
  }
}

std::int64_t offset_of(const TensorLayout& t, std::int64_t linear) {
  std::int64_t off = 0;
  for (int d = t.rank - 1; d >= 0; --d) {
    std::int64_t i = linear % t.shape[d];
    linear /= t.shape[d];
    off += i * t.strides[d];
  }
  return off;
}

HostTensor::HostTensor(const TensorLayout& layout) : layout_(layout) {
  auto span = layout.byte_span();
  std::size_t bytes = static_cast<std::size_t>(span.end_offset - span.min_offset);
  bytes_.assign(bytes == 0 ? 1 : bytes, std::byte{0});
  origin_ = static_cast<std::size_t>(-span.min_offset);
}

std::vector<double> HostTensor::logical() const {
  std::vector<double> v(static_cast<std::size_t>(layout_.numel()));
  for (std::int64_t i = 0; i < layout_.numel(); ++i) v[static_cast<std::size_t>(i)] = get(i);
  return v;
}

void fill_random(HostTensor& t, std::mt19937_64& rng, double lo, double hi, bool edges) {
  std::uniform_real_distribution<double> u(lo, hi);
  const std::int64_t n = t.layout().numel();
  // A broadcast view shares storage: the last write wins, the same for host and device.
  for (std::int64_t i = 0; i < n; ++i) t.set(i, u(rng));
  if (!edges || n == 0) return;
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::nan(""), 1e-40, -1e-40, 6e-8, -6e-8, 1e-30,
                            65504.0, -65504.0, 3e38, -3e38, 1e-7, 88.0, -88.0, 100.0, -100.0, 1e5};
  std::uniform_int_distribution<std::int64_t> pos(0, n - 1);
  const std::int64_t count = std::min<std::int64_t>(n, 64);
  const auto num_special = static_cast<std::int64_t>(std::size(special));
  for (std::int64_t k = 0; k < count; ++k) t.set(k < num_special ? k : pos(rng), special[k % num_special]);
}

}  // namespace baracuda::reference
