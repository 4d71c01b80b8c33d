// The launch shape of the persistent bulk-copy row kernels (normalization tma_row /
// tma_lean, softmax tma_row): plain C++, shared by host and device code.
//
// A row of n elements (or, past kTmaMaxThreads * kTmaVecsPerThread vectors, its equal slice
// on each block of a cluster of 2..16) sits in one block of persistent threads, each holding
// kTmaVecsPerThread 16-byte vectors of it in registers (launch bounds: kTmaRegCap registers);
// each block keeps `stages` rows in flight in dynamic shared memory (`sources` slices a
// stage: x, and the residual or the second input), after `fixed` slices it keeps for the
// whole kernel (tma_row's weight and bias). The kernels: common/tma_rows.cuh.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace baracuda::rows {

inline constexpr int kTmaMaxThreads = 512;
inline constexpr int kTmaVecsPerThread = 4;
inline constexpr int kTmaMaxStages = 8;
inline constexpr int kTmaRegCap = 128;
inline constexpr int kTmaMinBlocks = 65536 / (kTmaMaxThreads * kTmaRegCap);
// The block size the lean kernels prefer: two blocks an SM at the register cap, so one
// block's reductions overlap the other's loads and stores.
inline constexpr int kTmaPreferThreads = 256;
// The LayerNorm backward's bucket for 16-bit rows that fit one block: 2 vectors a thread
// under a 64-register cap (blocks of up to 512 threads, two an SM: 32 warps instead of 16 at
// 8192 bf16 columns); other rows keep kTmaVecsPerThread (normalization.cpp's tma_setup).
inline constexpr int kTmaBwdVecsPerThread = 2;
inline constexpr int kTmaBwdRegCap = 64;
// Register cap and launch-bound blocks of a bucket of k vectors a thread.
constexpr int tma_reg_cap(int k) { return k == kTmaBwdVecsPerThread ? kTmaBwdRegCap : kTmaRegCap; }
constexpr int tma_min_blocks(int k) { return 65536 / (kTmaMaxThreads * tma_reg_cap(k)); }

// Blocks of `threads` an SM can hold at the register cap (64 Ki registers).
constexpr int tma_blocks_per_sm(int threads, int reg_cap = kTmaRegCap) {
  const int by_regs = 65536 / (threads * reg_cap);
  return by_regs < 1 ? 1 : by_regs > 4 ? 4 : by_regs;
}

// Dynamic shared memory of a block: `fixed` slices kept for the whole kernel, then `stages`
// stages of `sources` slices.
constexpr std::int64_t tma_row_smem_bytes(std::int64_t slice_bytes, int stages, int sources, int fixed) {
  return (fixed + static_cast<std::int64_t>(stages) * sources) * slice_bytes;
}

// Why a bulk-copy row kernel cannot take these rows ("" when it can): `arch` names the
// device for the sm_90 requirement.
inline std::string tma_row_refusal(int sm, const std::string& arch, int esize, std::int64_t rows, std::int64_t row_bytes) {
  if (sm < 90) return "bulk copies need sm90+, device is " + arch;
  if (esize > 4) return "f64 rows stay in the in-register kernels";
  if (rows == 0) return "no rows";
  if (rows > 0x7fffffff) return "rows = " + std::to_string(rows) + " >= 2^31 (32-bit row indexing)";
  if (row_bytes < 4096)
    return "rows of " + std::to_string(row_bytes) + " bytes < 4096 (the in-register kernels keep enough in flight)";
  return "";
}

struct TmaRowShape {
  int cluster = 1, threads = 0, stages = 0;
  std::int64_t grid = 0;  // persistent blocks (a multiple of cluster)
};

// The smallest cluster whose slice fits `prefer_threads` threads, else kTmaMaxThreads, that
// leaves two or more stages, at the most blocks an SM; "" or why none (`what`: the name of
// the length in the text). nvec: vectors a row;
// slice bytes = n / cluster * esize; optin: the per-block dynamic shared memory limit (0:
// unknown, 227 KiB); k, reg_cap: the kernel's vectors a thread and register cap.
inline std::string tma_row_shape(TmaRowShape& out, std::int64_t n, std::int64_t nvec, int esize, int sources, int fixed,
                                 std::int64_t rows, int sms, std::int64_t optin, int prefer_threads,
                                 const char* what, int k = kTmaVecsPerThread, int reg_cap = kTmaRegCap) {
  if (optin <= 0) optin = 227 * 1024;
  for (int limit : {prefer_threads, kTmaMaxThreads}) {
    for (int cluster : {1, 2, 4, 8, 16}) {
      const std::int64_t per_thread = (nvec / cluster + k - 1) / k;
      if (nvec % cluster != 0 || per_thread > limit) continue;
      const std::int64_t slice_bytes = n / cluster * esize;
      const int threads = static_cast<int>(std::max<std::int64_t>(64, (per_thread + 31) / 32 * 32));
      for (int bps = tma_blocks_per_sm(threads, reg_cap); bps >= 1; --bps) {
        // 228 KiB of shared memory an SM, 1 KiB of it reserved per block, ~1 KiB static
        const std::int64_t per_block = std::min<std::int64_t>(228 * 1024 / bps - 2048, optin - 1024);
        int stages = 0;
        while (stages < kTmaMaxStages && tma_row_smem_bytes(slice_bytes, stages + 1, sources, fixed) <= per_block) ++stages;
        if (stages < 2) continue;
        out.cluster = cluster;
        out.threads = threads;
        out.stages = stages;
        out.grid = std::min<std::int64_t>(rows, std::max<std::int64_t>(1, static_cast<std::int64_t>(sms) * bps / cluster)) * cluster;
        return "";
      }
    }
  }
  return std::string(what) + " " + std::to_string(n) + " has no slicing over <= 16 blocks with 2 stages in shared memory";
}

}  // namespace baracuda::rows
