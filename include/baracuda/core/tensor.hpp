// Tensor and matrix layouts: shape + strides + dtype, without the data pointer.
//
// Descriptors hold layouts (what the plan is built for); Args hold the data pointers.
// Shapes and strides are int64 and counted in elements; stride 0 broadcasts a dimension;
// negative strides are allowed. `alignment` is the byte alignment the caller promises
// for the data pointer (checked by run(); vectorised kernels are chosen from it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

inline constexpr int kMaxRank = 8;
using Dims = std::array<std::int64_t, kMaxRank>;

struct TensorLayout {
  DType dtype = DType::kF32;
  int rank = 0;
  Dims shape{};
  Dims strides{};
  int alignment = 16;  // bytes; a power of two

  // Row-major dense layout of the given shape.
  static TensorLayout contiguous(DType dtype, std::span<const std::int64_t> shape, int alignment = 16);
  static TensorLayout contiguous(DType dtype, std::initializer_list<std::int64_t> shape, int alignment = 16) {
    return contiguous(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()), alignment);
  }
  static TensorLayout strided(DType dtype, std::span<const std::int64_t> shape,
                              std::span<const std::int64_t> strides, int alignment = 16);
  static TensorLayout strided(DType dtype, std::initializer_list<std::int64_t> shape,
                              std::initializer_list<std::int64_t> strides, int alignment = 16) {
    return strided(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()),
                   std::span<const std::int64_t>(strides.begin(), strides.size()), alignment);
  }

  std::int64_t numel() const noexcept;
  bool is_contiguous() const noexcept;    // row-major dense (size-1 dims may have any stride)
  bool has_broadcast() const noexcept;    // some dim of size > 1 has stride 0
  bool has_negative_stride() const noexcept;
  std::span<const std::int64_t> shape_span() const noexcept { return {shape.data(), static_cast<size_t>(rank)}; }
  std::span<const std::int64_t> stride_span() const noexcept { return {strides.data(), static_cast<size_t>(rank)}; }

  // Lowest and one-past-highest element offsets the layout touches, relative to the data
  // pointer (min_offset <= 0 with negative strides). Empty tensors give {0, 0}.
  struct Span {
    std::int64_t min_offset = 0;
    std::int64_t end_offset = 0;
  };
  Span element_span() const noexcept;
  // Same in bytes (packed dtypes rounded to whole bytes).
  Span byte_span() const noexcept;

  std::string to_string() const;  // "bf16[4096,8192]{8192,1}"
  std::size_t hash() const noexcept;
  friend bool operator==(const TensorLayout& a, const TensorLayout& b) noexcept;
};

// Checks rank <= 8, shapes >= 0, alignment a power of two. `field` names the operand
// in the message ("x", "grad_out", ...).
Status validate_layout(const TensorLayout& t, const char* field);

// NumPy / PyTorch broadcasting of two shapes (aligned on the right).
Expected<TensorLayout> broadcast_shape(const TensorLayout& a, const TensorLayout& b, const char* a_field,
                                       const char* b_field);
// `t` viewed with the shape `rank/shape` (right-aligned, broadcast dims get stride 0).
// Fails when a dim of t is neither 1 nor equal to the target.
Expected<TensorLayout> broadcast_to(const TensorLayout& t, int rank, const Dims& shape, const char* field);

// A matrix: rows x cols with a leading dimension, row- or column-major.
enum class MatrixOrder : std::uint8_t { kRowMajor, kColMajor };
struct MatrixLayout {
  DType dtype = DType::kF32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;  // elements between rows (row-major) or columns (col-major)
  MatrixOrder order = MatrixOrder::kRowMajor;
  int alignment = 16;
  std::int64_t numel() const noexcept { return rows * cols; }
  TensorLayout as_tensor() const noexcept;
  friend bool operator==(const MatrixLayout&, const MatrixLayout&) noexcept = default;
};
Status validate_matrix(const MatrixLayout& m, const char* field);

// Several operands of one (broadcast) shape with their dims merged where every operand
// allows it and size-1 dims dropped: the form the strided kernels iterate over.
// Operand 0's layout defines the iteration shape; all must share it.
struct CollapsedDims {
  int rank = 0;
  Dims shape{};
  std::array<Dims, 6> strides{};  // per operand (at most 6)
  int num_operands = 0;
};
CollapsedDims collapse_dims(std::span<const TensorLayout* const> operands);

// A pointer with data and layout: convenience for callers (tests, tools, frameworks).
struct TensorView {
  void* data = nullptr;
  TensorLayout layout;
};

// True when [a_ptr + a.span) and [b_ptr + b.span) share bytes.
bool byte_ranges_overlap(const void* a_ptr, const TensorLayout& a, const void* b_ptr, const TensorLayout& b) noexcept;
// The largest power of two (<= 256) that divides the address.
int pointer_alignment(const void* p) noexcept;

}  // namespace baracuda
