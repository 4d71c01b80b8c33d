// Shared parts of the cuDNN SDPA backend (cudnn_sdpa_fwd.cpp, cudnn_sdpa_bwd.cpp): the probe
// rules both directions apply, the layout of our part of the workspace, the per-device lock
// around the shared cuDNN handle, and the parameters of the helper kernels
// (kernels/cudnn_sdpa_aux.cuh). No cuDNN frontend type appears here; the graph code is in
// cudnn_sdpa_graph.hpp, included by the two direction files only.
//
// Workspace: [ our aux region | cuDNN graph workspace ], the aux region holding the sequence
// lengths [B] (varlen, or a dense padding mask), the ragged offsets [B + 1] per packed operand,
// the dropout {seed, offset} pair and the packed LSE cuDNN reads / writes. The graph's own
// workspace is known only once the graph is built, so the probe reports an upper bound (aux +
// the frontend's documented buffers + a margin for the engine; what the candidate listing and
// max_workspace_bytes screen first see) and prepare() refuses a graph that wants more; select()
// then takes the exact size, aux + the built graph's (cudnn_sdpa_prepared_workspace,
// sdpa_candidates.hpp), so workspace_size() is exact on a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "attention/sdpa_problem.hpp"
#include "baracuda/core/runtime.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::attention::cudnn_sdpa {

inline constexpr int kMaxRagged = 9;

// ---------------------------------------------------------------- helper kernel parameters
struct PrepParams {
  const std::int32_t* cu_q = nullptr;  // null: dense (lengths are the constants below)
  const std::int32_t* cu_k = nullptr;
  std::int64_t batch = 0;
  std::int32_t dense_sq = 0, dense_skv = 0;
  std::int32_t* seq_q = nullptr;  // [B]; null: not wanted
  std::int32_t* seq_kv = nullptr;
  int num_ragged = 0;
  std::int32_t* ragged[kMaxRagged] = {};  // [B + 1] each
  std::int64_t ragged_mult[kMaxRagged] = {};
  bool ragged_from_k[kMaxRagged] = {};
  std::int64_t* seed_out = nullptr;        // {seed, offset}; null: no dropout
  const std::uint64_t* seed_in = nullptr;  // device {seed, offset}; overrides the host pair
  std::uint64_t seed = 0, offset = 0;
};

// dst[z, a, c] = src[z, a, c] over [n2, n0, n1] (element strides per side); with `limit`,
// only c < *limit (varlen: the tokens some sequence holds). sanitize: -inf -> 0.
struct StatsCopyParams {
  const float* src = nullptr;
  float* dst = nullptr;
  std::int64_t n0 = 0, n1 = 0, n2 = 1;
  std::int64_t src_s0 = 0, src_s1 = 0, src_s2 = 0;
  std::int64_t dst_s0 = 0, dst_s1 = 0, dst_s2 = 0;
  const std::int32_t* limit = nullptr;
  bool sanitize_neg_inf = false;
};

// A query row whose window holds no key: o row = 0, lse = -inf (the contract's rule).
struct EmptyRowsParams {
  SdpaProblem p;  // sizes, window, o / lse strides
  std::uint16_t* o = nullptr;
  float* lse = nullptr;
  const std::int32_t* cu_q = nullptr;  // varlen
  const std::int32_t* cu_k = nullptr;
};

// Varlen backward: zero grad_q of sequences without keys, grad_k / grad_v of sequences
// without queries.
struct ZeroGradsParams {
  const std::int32_t* cu_q = nullptr;
  const std::int32_t* cu_k = nullptr;
  std::uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr;
  std::int64_t hq = 0, hkv = 0, dk_dim = 0, dv_dim = 0;
  Strides4 sdq, sdk, sdv;
};

Status launch_prep(const PrepParams& p, cudaStream_t stream);
Status launch_stats_copy(const StatsCopyParams& p, cudaStream_t stream);
Status launch_empty_rows(const EmptyRowsParams& p, cudaStream_t stream);
Status launch_zero_grads(const ZeroGradsParams& p, std::int64_t batch, cudaStream_t stream);

// ---------------------------------------------------------------- probe rules
// The operands cuDNN reads or writes as [B, H, S, D] (names for the messages).
struct NamedLayout {
  const TensorLayout* t;
  const char* name;
};

// Everything both directions refuse, as "<field> = <value>: <why>", or "".
std::string common_rejection(const SdpaProblem& p, std::initializer_list<NamedLayout> io, const TensorLayout& bias,
                             const TensorLayout& mask, const TensorLayout& alibi, const DeviceCaps& caps);
// Whether some dense query row sees no key (static: first and last rows).
bool dense_has_empty_rows(const SdpaProblem& p);
// The window as cuDNN's diagonal band: left bound (keys j > i + off - left kept) and right
// bound (j <= i + off + right); -1: none. Bounds wider than the problem are dropped.
struct Band {
  std::int64_t left = -1, right = -1;
  bool bottom_right = false;
};
Band band_of(const SdpaProblem& p);

// ---------------------------------------------------------------- workspace
inline constexpr std::size_t kAuxAlign = 256;
inline std::size_t align_up(std::size_t x, std::size_t a = kAuxAlign) { return (x + a - 1) / a * a; }
inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

struct AuxLayout {
  std::size_t seq_q = kNone, seq_kv = kNone;
  int num_ragged = 0;
  std::size_t ragged[kMaxRagged] = {};
  std::size_t seed = kNone;
  std::size_t stats = kNone;  // packed LSE (f32)
  std::size_t bytes = 0;      // the cuDNN workspace starts here
};

// need_seq: lengths tensors; num_ragged: ragged offset arrays; stats_elems: packed LSE floats.
AuxLayout make_aux_layout(std::int64_t batch, bool need_seq, int num_ragged, bool dropout, std::int64_t stats_elems);

// Allowance for the engine's own workspace on top of the frontend's documented buffers.
inline constexpr std::size_t kEngineWorkspaceMargin = std::size_t{16} << 20;

// Enqueues the prep kernel when `aux` holds anything: lengths (from cu_seqlens, or the dense
// sizes), ragged offset r = cu[b] * ragged[r].first (keys' cu_seqlens when .second) and the
// dropout pair.
struct RaggedOperand {
  std::int64_t token_stride = 0;
  bool from_k = false;
};
Status prepare_aux(const SdpaProblem& p, const AuxLayout& aux, void* ws, const std::int32_t* cu_q,
                   const std::int32_t* cu_k, std::initializer_list<RaggedOperand> ragged, std::uint64_t seed,
                   std::uint64_t offset, const std::uint64_t* seed_offset, cudaStream_t stream);
// launch()'s own checks: a device-less plan, missing cu_seqlens.
Status check_launch(const SdpaProblem& p, bool has_graph, int device, const std::int32_t* cu_q, const std::int32_t* cu_k);

KernelSku make_sku(const SdpaProblem& p, Direction dir, const char* impl, bool deterministic);

}  // namespace baracuda::attention::cudnn_sdpa
