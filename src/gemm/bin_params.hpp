// The host/kernel seam of BinGemmPlan (plain C++, no CUDA types): what both kernels of
// kernels/bin_gemm.cuh read, and their launchers. Rules in baracuda/ops/gemm_bin.hpp.
#pragma once

#include <cstdint>

#include "baracuda/core/status.hpp"

typedef struct CUstream_st* cudaStream_t;

namespace baracuda::gemm {

inline constexpr int kBinTile = 128;    // block tile, rows of A and rows of B (M and N)
inline constexpr int kBinThreads = 256; // threads per block (8 warps), both kernels
inline constexpr std::int64_t kBinMaxBlocksN = 65535;  // grid.y: N <= 65535 * 128

// op: 0 xnor_dot (K - 2 popc(a ^ b)), 1 xnor_count (K - popc(a ^ b)), 2 and_count (popc(a & b))
struct BinGemmParams {
  const std::uint32_t* a = nullptr;  // row m at word m * lda
  const std::uint32_t* b = nullptr;  // row n at word n * ldb
  const std::int32_t* c = nullptr;   // accumulate: ldd layout; else null
  std::int32_t* d = nullptr;
  std::int64_t m = 0, n = 0;
  std::int64_t words = 0;            // ceil(K / 32)
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  int k = 0;                         // bits, 1 .. 2^31 - 1
  std::uint32_t last_mask = 0;       // the valid bits of word words - 1
  int op = 0;
};

Status launch_bin_gemm_popc(const BinGemmParams& p, cudaStream_t stream);
Status launch_bin_gemm_mma(const BinGemmParams& p, cudaStream_t stream);

}  // namespace baracuda::gemm
