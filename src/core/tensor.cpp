#include "baracuda/core/tensor.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>

#include "core/hash.hpp"

namespace baracuda {

namespace {
std::string dims_str(const Dims& d, int rank) {
  std::string s;
  for (int i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(d[i]);
  }
  return s;
}
}  // namespace

TensorLayout TensorLayout::contiguous(DType dtype, std::span<const std::int64_t> shape, int alignment) {
  TensorLayout t;
  t.dtype = dtype;
  t.rank = static_cast<int>(std::min<std::size_t>(shape.size(), kMaxRank + 1));
  t.alignment = alignment;
  if (shape.size() > kMaxRank) {
    t.rank = static_cast<int>(shape.size());  // validate_layout reports it
    return t;
  }
  std::int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = stride;
    stride *= std::max<std::int64_t>(shape[i], 1);
  }
  return t;
}

TensorLayout TensorLayout::strided(DType dtype, std::span<const std::int64_t> shape,
                                   std::span<const std::int64_t> strides, int alignment) {
  TensorLayout t;
  t.dtype = dtype;
  t.alignment = alignment;
  t.rank = static_cast<int>(shape.size());
  if (shape.size() > kMaxRank || strides.size() != shape.size()) {
    t.rank = shape.size() > kMaxRank ? static_cast<int>(shape.size()) : -1;  // validate_layout reports it
    return t;
  }
  for (int i = 0; i < t.rank; ++i) {
    t.shape[i] = shape[i];
    t.strides[i] = strides[i];
  }
  return t;
}

std::int64_t TensorLayout::numel() const noexcept {
  std::int64_t n = 1;
  for (int i = 0; i < rank && i < kMaxRank; ++i) n *= shape[i];
  return n;
}

bool TensorLayout::is_contiguous() const noexcept {
  if (numel() == 0) return true;  // no element to place
  std::int64_t expect = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

bool TensorLayout::has_broadcast() const noexcept {
  for (int i = 0; i < rank; ++i)
    if (shape[i] > 1 && strides[i] == 0) return true;
  return false;
}

bool TensorLayout::has_negative_stride() const noexcept {
  for (int i = 0; i < rank; ++i)
    if (shape[i] > 1 && strides[i] < 0) return true;
  return false;
}

TensorLayout::Span TensorLayout::element_span() const noexcept {
  if (numel() == 0) return {0, 0};
  std::int64_t lo = 0, hi = 0;
  for (int i = 0; i < rank; ++i) {
    std::int64_t ext = (shape[i] - 1) * strides[i];
    if (ext < 0) lo += ext; else hi += ext;
  }
  return {lo, hi + 1};
}

TensorLayout::Span TensorLayout::byte_span() const noexcept {
  Span e = element_span();
  if (e.end_offset == e.min_offset) return {0, 0};
  int bits = dtype_bits(dtype);
  auto to_byte_floor = [&](std::int64_t el) {
    std::int64_t b = el * bits;
    return b >= 0 ? b / 8 : -((-b + 7) / 8);
  };
  auto to_byte_ceil = [&](std::int64_t el) {
    std::int64_t b = el * bits;
    return b >= 0 ? (b + 7) / 8 : -((-b) / 8);
  };
  return {to_byte_floor(e.min_offset), to_byte_ceil(e.end_offset)};
}

std::string TensorLayout::to_string() const {
  if (rank < 0 || rank > kMaxRank) return std::string(dtype_name(dtype)) + "[rank " + std::to_string(rank) + "]";
  std::string s = std::string(dtype_name(dtype)) + "[" + dims_str(shape, rank) + "]";
  if (!is_contiguous()) s += "{" + dims_str(strides, rank) + "}";
  if (alignment != 16) s += "@" + std::to_string(alignment);
  return s;
}

std::size_t TensorLayout::hash() const noexcept {
  std::size_t h = std::hash<int>()(static_cast<int>(dtype));
  h = detail::hash_combine(h, static_cast<std::size_t>(rank));
  h = detail::hash_combine(h, static_cast<std::size_t>(alignment));
  for (int i = 0; i < rank && i < kMaxRank; ++i) {
    h = detail::hash_combine(h, static_cast<std::size_t>(shape[i]));
    h = detail::hash_combine(h, static_cast<std::size_t>(strides[i]));
  }
  return h;
}

bool operator==(const TensorLayout& a, const TensorLayout& b) noexcept {
  if (a.dtype != b.dtype || a.rank != b.rank || a.alignment != b.alignment) return false;
  for (int i = 0; i < a.rank && i < kMaxRank; ++i)
    if (a.shape[i] != b.shape[i] || a.strides[i] != b.strides[i]) return false;
  return true;
}

Status validate_layout(const TensorLayout& t, const char* field) {
  if (t.rank < 0)
    return Status(Code::kInvalidArgument, std::string(field) + ": strides and shape have different lengths");
  if (t.rank > kMaxRank)
    return Status(Code::kInvalidArgument,
                  std::string(field) + ".rank = " + std::to_string(t.rank) + " exceeds the maximum of 8");
  for (int i = 0; i < t.rank; ++i) {
    if (t.shape[i] < 0)
      return Status(Code::kInvalidArgument, std::string(field) + ".shape[" + std::to_string(i) +
                                                "] = " + std::to_string(t.shape[i]) + " is negative");
  }
  if (t.alignment <= 0 || !std::has_single_bit(static_cast<unsigned>(t.alignment)))
    return Status(Code::kInvalidArgument, std::string(field) + ".alignment = " + std::to_string(t.alignment) +
                                              " is not a power of two");
  // Element counts and offsets must fit in int64.
  __int128 n = 1, span = 0;
  for (int i = 0; i < t.rank; ++i) {
    n *= t.shape[i];
    if (t.shape[i] > 0) span += static_cast<__int128>(t.shape[i] - 1) * (t.strides[i] < 0 ? -t.strides[i] : t.strides[i]);
  }
  if (n > (static_cast<__int128>(1) << 62) || span > (static_cast<__int128>(1) << 62))
    return Status(Code::kInvalidArgument, std::string(field) + " = " + t.to_string() + " is too large for 64-bit indexing");
  return Status::ok();
}

Expected<TensorLayout> broadcast_to(const TensorLayout& t, int rank, const Dims& shape, const char* field) {
  if (t.rank > rank)
    return Status(Code::kInvalidArgument, std::string(field) + " = " + t.to_string() + " has more dims than the target rank " +
                                              std::to_string(rank));
  TensorLayout r = t;
  r.rank = rank;
  int off = rank - t.rank;
  for (int i = 0; i < rank; ++i) {
    if (i < off) {
      r.shape[i] = shape[i];
      r.strides[i] = 0;
      continue;
    }
    std::int64_t s = t.shape[i - off];
    if (s == shape[i]) {
      r.shape[i] = s;
      r.strides[i] = t.strides[i - off];
    } else if (s == 1) {
      r.shape[i] = shape[i];
      r.strides[i] = 0;
    } else {
      return Status(Code::kInvalidArgument, std::string(field) + ".shape[" + std::to_string(i - off) + "] = " +
                                                std::to_string(s) + " cannot broadcast to " + std::to_string(shape[i]));
    }
  }
  return r;
}

Expected<TensorLayout> broadcast_shape(const TensorLayout& a, const TensorLayout& b, const char* a_field,
                                       const char* b_field) {
  int rank = std::max(a.rank, b.rank);
  TensorLayout out;
  out.dtype = a.dtype;
  out.rank = rank;
  for (int i = 0; i < rank; ++i) {
    int ia = i - (rank - a.rank), ib = i - (rank - b.rank);
    std::int64_t sa = ia >= 0 ? a.shape[ia] : 1, sb = ib >= 0 ? b.shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return Status(Code::kInvalidArgument, std::string(a_field) + ".shape[" + std::to_string(ia) + "] = " +
                                                std::to_string(sa) + " and " + b_field + ".shape[" + std::to_string(ib) +
                                                "] = " + std::to_string(sb) + " do not broadcast");
    out.shape[i] = sa == 1 ? sb : sa;
  }
  std::int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    out.strides[i] = stride;
    stride *= std::max<std::int64_t>(out.shape[i], 1);
  }
  return out;
}

TensorLayout MatrixLayout::as_tensor() const noexcept {
  TensorLayout t;
  t.dtype = dtype;
  t.rank = 2;
  t.alignment = alignment;
  t.shape = {rows, cols};
  if (order == MatrixOrder::kRowMajor) t.strides = {ld, 1};
  else t.strides = {1, ld};
  return t;
}

Status validate_matrix(const MatrixLayout& m, const char* field) {
  if (m.rows < 0 || m.cols < 0)
    return Status(Code::kInvalidArgument, std::string(field) + " has a negative extent (rows = " +
                                              std::to_string(m.rows) + ", cols = " + std::to_string(m.cols) + ")");
  std::int64_t min_ld = std::max<std::int64_t>(1, m.order == MatrixOrder::kRowMajor ? m.cols : m.rows);
  if (m.ld < min_ld)
    return Status(Code::kInvalidArgument, std::string(field) + ".ld = " + std::to_string(m.ld) + " is below the minimum " +
                                              std::to_string(min_ld));
  return validate_layout(m.as_tensor(), field);
}

CollapsedDims collapse_dims(std::span<const TensorLayout* const> operands) {
  CollapsedDims c;
  c.num_operands = static_cast<int>(std::min<std::size_t>(operands.size(), c.strides.size()));
  const TensorLayout& ref = *operands[0];
  // Drop size-1 dims, keeping order.
  int r = 0;
  for (int i = 0; i < ref.rank; ++i) {
    if (ref.shape[i] == 1) continue;
    c.shape[r] = ref.shape[i];
    for (int k = 0; k < c.num_operands; ++k) c.strides[k][r] = operands[k]->strides[i];
    ++r;
  }
  // Merge dim i into dim i+1 (the inner one) when every operand is contiguous across them.
  int out = 0;
  for (int i = 0; i < r; ++i) {
    if (out > 0) {
      bool mergeable = true;
      for (int k = 0; k < c.num_operands; ++k)
        if (c.strides[k][out - 1] != c.strides[k][i] * c.shape[i]) mergeable = false;
      if (mergeable) {
        c.shape[out - 1] *= c.shape[i];
        for (int k = 0; k < c.num_operands; ++k) c.strides[k][out - 1] = c.strides[k][i];
        continue;
      }
    }
    c.shape[out] = c.shape[i];
    for (int k = 0; k < c.num_operands; ++k) c.strides[k][out] = c.strides[k][i];
    ++out;
  }
  c.rank = out;
  if (ref.numel() == 0) {  // keep the zero visible
    c.rank = 1;
    c.shape[0] = 0;
  }
  return c;
}

bool byte_ranges_overlap(const void* a_ptr, const TensorLayout& a, const void* b_ptr, const TensorLayout& b) noexcept {
  if (!a_ptr || !b_ptr) return false;
  auto sa = a.byte_span(), sb = b.byte_span();
  if (sa.end_offset == sa.min_offset || sb.end_offset == sb.min_offset) return false;
  auto pa = reinterpret_cast<std::intptr_t>(a_ptr), pb = reinterpret_cast<std::intptr_t>(b_ptr);
  std::intptr_t a0 = pa + sa.min_offset, a1 = pa + sa.end_offset;
  std::intptr_t b0 = pb + sb.min_offset, b1 = pb + sb.end_offset;
  return a0 < b1 && b0 < a1;
}

int pointer_alignment(const void* p) noexcept {
  auto v = reinterpret_cast<std::uintptr_t>(p);
  if (v == 0) return 256;
  int a = 1;
  while (a < 256 && (v % (2 * a)) == 0) a *= 2;
  return a;
}

}  // namespace baracuda
