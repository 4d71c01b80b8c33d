// baracuda::reference for BinGemmPlan (rules in baracuda/ops/gemm_bin.hpp).
//
// Oracle: exact. For each (m, n) the K bits of row m of A and row n of B are combined word by
// word (xor or and), the last word masked to its K % 32 valid bits (padding bits and words
// past ceil(K/32) never read), popcounts summed in int64, then d = K - 2s / K - s / s and,
// with accumulate, d + C wrapped to int32. Tolerance: bit-exact (integer op).
// bin_gemm_bitwise computes the same thing bit by bit from the definition (bit k of a row is
// bit k % 32 of word k / 32), to test the oracle itself on small shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/gemm_bin.hpp"
#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Expected D, M x N row-major (dense). a, b: host tensors of desc.a / desc.b (32-bit words);
// c: a host tensor of desc.d's layout when desc.accumulate (else ignored, may be null).
Expected<std::vector<std::int32_t>> bin_gemm(const BinGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                             const HostTensor* c);
// The same from the bit-level definition (slow: M N K steps).
Expected<std::vector<std::int32_t>> bin_gemm_bitwise(const BinGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                                     const HostTensor* c);

// Host copy of D (desc.d's layout) against the oracle: every element bit-exact, plus the
// zero-trust rule of compare.hpp.
Comparison compare_bin_gemm(const HostTensor& got, const MatrixLayout& layout, const std::vector<std::int32_t>& want);

}  // namespace baracuda::reference
