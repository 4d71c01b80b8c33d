// The general SDPA kernels' launch parameters and launchers (kernels/sdpa_general.cuh; one
// instance TU per dtype: sdpa_general_<dtype>.cu). Host code (sdpa_general.cpp) fills them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "attention/sdpa_problem.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::attention {

inline constexpr int kGeneralThreads = 256;
inline constexpr int kGeneralWarps = 8;
inline constexpr int kTile = 32;           // inner tile (keys in fwd / dQ, queries in dK / dV)
inline constexpr int kTilePitch = 33;      // padded row of the shared chunk tile
inline constexpr int kMaxRowsPerWarp = 4;  // rows per block R <= 32

struct GeneralParams {
  SdpaProblem p;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;             // forward output
  float* lse = nullptr;          // forward output (may be null)
  const void* o_in = nullptr;    // backward inputs
  const void* grad_o = nullptr;
  const float* lse_in = nullptr;
  void* grad_q = nullptr;
  void* grad_k = nullptr;
  void* grad_v = nullptr;
  void* grad_bias = nullptr;
  const void* bias = nullptr;
  const std::uint8_t* mask = nullptr;
  const float* alibi = nullptr;
  const std::int32_t* cu_q = nullptr;
  const std::int32_t* cu_k = nullptr;
  std::uint64_t seed = 0, offset = 0;
  const std::uint64_t* seed_ptr = nullptr;
  void* ws_delta = nullptr;  // compute type, one per query row (backward)
  void* ws_lse = nullptr;    // f64 backward: the exact lse per query row
  int rows = 32;             // R: query rows (fwd, dQ) or keys (dK / dV) per block
  bool grad_bias_direct = false;
};

// Rows per block and shared bytes of each kernel, and the backward's workspace.
struct GeneralConfig {
  int fwd_rows = 0, stats_rows = 0, dq_rows = 0, dkdv_rows = 0;
  std::size_t fwd_smem = 0, stats_smem = 0, dq_smem = 0, dkdv_smem = 0;
  std::int64_t q_rows = 0;                // rows of the per-query workspaces (dense B*Hq*Sq, varlen Hq*Tq)
  std::size_t ws_lse_offset = 0;          // bytes into the workspace (f64 only)
  std::size_t workspace = 0;
  std::int64_t grad_bias_elems = 0;       // > 0: the broadcast grad_bias reduction runs
};

// Per dtype (instantiated for f64, f32, f16, bf16 in sdpa_general_<dtype>.cu).
template <DType D>
Status launch_sdpa_general_fwd(const GeneralParams& g, const GeneralConfig& cfg, cudaStream_t s);
template <DType D>
Status launch_sdpa_general_bwd(const GeneralParams& g, const GeneralConfig& cfg, cudaStream_t s);

}  // namespace baracuda::attention
