// Host-side tensors laid out exactly as a TensorLayout says: the oracle and the tests read
// and write elements through these helpers, so strided, broadcast and negative-stride
// views are handled in one place.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "baracuda/core/dispatch.hpp"
#include "baracuda/core/numeric.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::reference {

// Element value <-> double for every real dtype (f64, f32, f16, bf16, e4m3, e5m2, ints, bool).
double load_as_double(DType t, const void* base, std::int64_t element_offset);
// Integer and bool elements exactly (i64 beyond 2^53 too); other dtypes: the value
// truncated toward zero, saturated to the int64 range (NaN: 0).
std::int64_t load_as_int64(DType t, const void* base, std::int64_t element_offset);
// Rounds to the dtype (nearest even; fp8 with `mode`) and stores.
void store_from_double(DType t, void* base, std::int64_t element_offset, double v,
                       Fp8Overflow mode = Fp8Overflow::kPyTorch);

// Element offset of the logical (row-major) index `linear` in `t`.
std::int64_t offset_of(const TensorLayout& t, std::int64_t linear);

// A host allocation covering a layout's whole span; data() points at element 0 (which
// need not be the lowest address when strides are negative).
class HostTensor {
 public:
  explicit HostTensor(const TensorLayout& layout);
  const TensorLayout& layout() const { return layout_; }
  void* data() { return bytes_.data() + origin_; }
  const void* data() const { return bytes_.data() + origin_; }
  std::byte* storage() { return bytes_.data(); }
  const std::byte* storage() const { return bytes_.data(); }
  std::size_t storage_bytes() const { return bytes_.size(); }
  std::size_t origin_bytes() const { return origin_; }  // data() - storage()
  double get(std::int64_t linear) const { return load_as_double(layout_.dtype, data(), offset_of(layout_, linear)); }
  void set(std::int64_t linear, double v, Fp8Overflow mode = Fp8Overflow::kPyTorch) {
    store_from_double(layout_.dtype, data(), offset_of(layout_, linear), v, mode);
  }
  std::vector<double> logical() const;  // every element in row-major logical order

 private:
  TensorLayout layout_;
  std::vector<std::byte> bytes_;
  std::size_t origin_ = 0;
};

// Uniform values in [lo, hi] (rounded to the dtype); with `edges`, +-0, +-inf, NaN,
// subnormal, huge and tiny values are written at the first positions and at random ones.
void fill_random(HostTensor& t, std::mt19937_64& rng, double lo, double hi, bool edges);

}  // namespace baracuda::reference
