// The host/kernel seam of PackPlan / UnpackPlan (plain C++, no CUDA types).
//
// The packed operand is [rows, R] elements row-major (R = row stride >= n, the last dim),
// packed at `bits` per element; the unpacked operand is read / written through its own
// shape and strides (`rank` dims, broadcast already applied), logical index r * n + c.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::elementwise {

struct PackParams {
  const void* in = nullptr;
  void* out = nullptr;
  std::int64_t rows = 0;
  std::int64_t n = 0;            // last dim
  std::int64_t row_stride = 0;   // R, elements of the packed operand
  std::int64_t span = 0;         // (rows - 1) * R + n: packed elements inside the layout
  std::int64_t bytes = 0;        // ceil(span * bits / 8): packed bytes written (pack)
  std::int64_t numel = 0;        // rows * n
  int rank = 0;                  // the unpacked operand
  std::int64_t shape[8] = {};
  std::int64_t strides[8] = {};
};

// packed: kS4, kU4 or kBit (instances in inst/pack.inl, one file per packed dtype).
// launch_pack / launch_unpack: any accepted layout (SKU bytes_i64). The *_contig forms
// (SKU vec16_contig) need both operands dense row-major, no row padding, and both
// pointers 16-byte aligned (the plan checks this at select and run).
template <DType Packed> Status launch_pack(const PackParams& p, cudaStream_t s);
template <DType Packed> Status launch_unpack(const PackParams& p, cudaStream_t s);
template <DType Packed> Status launch_pack_contig(const PackParams& p, cudaStream_t s);
template <DType Packed> Status launch_unpack_contig(const PackParams& p, cudaStream_t s);
template <> Status launch_pack<DType::kS4>(const PackParams&, cudaStream_t);
template <> Status launch_pack<DType::kU4>(const PackParams&, cudaStream_t);
template <> Status launch_pack<DType::kBit>(const PackParams&, cudaStream_t);
template <> Status launch_unpack<DType::kS4>(const PackParams&, cudaStream_t);
template <> Status launch_unpack<DType::kU4>(const PackParams&, cudaStream_t);
template <> Status launch_unpack<DType::kBit>(const PackParams&, cudaStream_t);
template <> Status launch_pack_contig<DType::kS4>(const PackParams&, cudaStream_t);
template <> Status launch_pack_contig<DType::kU4>(const PackParams&, cudaStream_t);
template <> Status launch_pack_contig<DType::kBit>(const PackParams&, cudaStream_t);
template <> Status launch_unpack_contig<DType::kS4>(const PackParams&, cudaStream_t);
template <> Status launch_unpack_contig<DType::kU4>(const PackParams&, cudaStream_t);
template <> Status launch_unpack_contig<DType::kBit>(const PackParams&, cudaStream_t);

}  // namespace baracuda::elementwise
