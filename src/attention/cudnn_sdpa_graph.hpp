// cuDNN frontend glue of the SDPA backend, included by cudnn_sdpa_fwd.cpp and cudnn_sdpa_bwd.cpp
// only (the frontend never reaches a public header): tensor uids, the [B, H, S, D] tensor
// attributes of an operand (dense strides or ragged), building a graph once in prepare()
// (heuristics A then FALLBACK, under the device's handle lock, with the device current) and
// executing it on a stream in launch().
//
// cuDNN version notes. Headers 9.19, runtime 9.14 on the device: the graphs use only the
// COMPOSITE SDPA implementation (forced; the UNIFIED node needs 9.13.1 and for our masks 9.21+),
// diagonal-band masks (left / right bound, top-left / bottom-right alignment: 9.6+ for
// unrestricted shapes), padding mask with seq_len tensors and int32 ragged offsets (THD, sm90+),
// Philox dropout with device int64 seed / offset, fp32 Stats (natural log) and the deterministic
// backward through the dP workspace (the 9.25 ordered-dQ variant is not used).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

// The frontend calls cuDNN and the CUDA runtime directly (we link both), but its experimental
// NVRTC engines (sm100 norms, never used by SDPA) would make libbaracuda depend on libnvrtc:
// their shim alone is compiled in the frontend's dlopen mode, so NVRTC is looked up only if
// such an engine ever runs.
#include <cudnn.h>
#include <dlfcn.h>

#include <cstring>
#include <vector>

#include <cudnn_frontend_shim.h>
#define HMODULE void*
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#include <cudnn_frontend/experimental/nvrtc_shim.h>
#undef NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#undef HMODULE

#include <cudnn_frontend.h>

#include "attention/cudnn_sdpa_common.hpp"
#include "attention/sdpa_candidates.hpp"
#include "baracuda/core/runtime.hpp"

namespace baracuda::attention::cudnn_sdpa {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

enum Uid : std::int64_t {
  kQ = 1, kK, kV, kO, kStats, kBias, kSeqQ, kSeqKv, kSeed, kOffset,
  kDO, kDQ, kDK, kDV,
  kRaggedBase = 32,  // + ragged index
};

inline fe::DataType_t fe_type(DType t) {
  switch (t) {
    case DType::kF16: return fe::DataType_t::HALF;
    case DType::kBF16: return fe::DataType_t::BFLOAT16;
    default: return fe::DataType_t::FLOAT;
  }
}

inline Status fe_status(fe::error_t e, const char* what) {
  if (e.is_good()) return Status::ok();
  return Status(Code::kLibraryError, std::string(what) + ": " + e.get_message(), StatusSource::kCudnn,
                static_cast<int>(e.get_code()));
}

// Strides of a [B, H, S, D] tensor with size-1 dims given the natural stride (the frontend
// checks every stride for 16-byte alignment, whatever the dim's size).
inline std::vector<std::int64_t> norm_strides(const std::vector<std::int64_t>& dim, std::vector<std::int64_t> st) {
  for (int k = 2; k >= 0; --k)
    if (dim[k] == 1) st[k] = dim[k + 1] * st[k + 1];
  if (dim[3] == 1) st[3] = 1;
  return st;
}

// An operand's tensor. Dense: dims [B, H, S, D] with its strides. Varlen: dims [B, H, Smax, D],
// token stride as the S stride and `ragged` giving each sequence's start (in elements).
inline TensorPtr operand(fe::graph::Graph& g, const char* name, Uid uid, DType dt, std::int64_t b, std::int64_t h,
                         std::int64_t s, std::int64_t d, const Strides4& st, const TensorPtr& ragged) {
  std::vector<std::int64_t> dim{b, h, s, d};
  std::vector<std::int64_t> stride{ragged ? s * st.s : st.b, st.h, st.s, 1};
  auto t = g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim(dim)
                        .set_stride(norm_strides(dim, stride))
                        .set_data_type(fe_type(dt)));
  if (ragged) t->set_ragged_offset(ragged);
  return t;
}

inline TensorPtr index_tensor(fe::graph::Graph& g, const char* name, std::int64_t uid, std::int64_t n,
                              fe::DataType_t dt = fe::DataType_t::INT32) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({n, 1, 1, 1})
                      .set_stride({1, 1, 1, 1})
                      .set_data_type(dt));
}

inline std::shared_ptr<fe::graph::Graph> new_graph(DType io) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe_type(io))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

// The attributes both directions share (SDPA_attributes / SDPA_backward_attributes have the
// same setters): scale, bias, padding mask with the sequence-length tensors, the window as a
// diagonal band, Philox dropout with device seed / offset.
template <class Attrs>
void set_shared_attributes(fe::graph::Graph& g, Attrs& a, const SdpaProblem& p, bool padding) {
  a.set_attn_scale(static_cast<float>(p.scale));
  if (p.bias.present) {
    std::vector<std::int64_t> dim{p.bias.size[0] == 1 ? 1 : p.batch, p.bias.size[1] == 1 ? 1 : p.hq, p.sq, p.skv};
    std::vector<std::int64_t> stride{p.bias.stride[0], p.bias.stride[1], p.bias.stride[2], 1};
    a.set_bias(g.tensor(fe::graph::Tensor_attributes()
                            .set_name("bias")
                            .set_uid(kBias)
                            .set_dim(dim)
                            .set_stride(norm_strides(dim, stride))
                            .set_data_type(fe_type(p.dtype))));
  }
  if (padding)
    a.set_padding_mask(true)
        .set_seq_len_q(index_tensor(g, "seq_len_q", kSeqQ, p.batch))
        .set_seq_len_kv(index_tensor(g, "seq_len_kv", kSeqKv, p.batch));
  const Band band = band_of(p);
  if (band.left >= 0 || band.right >= 0) {
    a.set_diagonal_alignment(band.bottom_right ? fe::DiagonalAlignment_t::BOTTOM_RIGHT : fe::DiagonalAlignment_t::TOP_LEFT);
    if (band.right >= 0) a.set_diagonal_band_right_bound(static_cast<int>(band.right));
    // cuDNN keeps j > i + off - left; we keep j >= i + off - window_left.
    if (band.left >= 0) a.set_diagonal_band_left_bound(static_cast<int>(band.left + 1));
  }
  if (p.dropout_p > 0)
    a.set_dropout(static_cast<float>(p.dropout_p), index_tensor(g, "seed", kSeed, 1, fe::DataType_t::INT64),
                  index_tensor(g, "offset", kOffset, 1, fe::DataType_t::INT64));
}

// The ragged offset tensors of a varlen graph (none for dense).
inline void make_ragged(fe::graph::Graph& g, const SdpaProblem& p, const AuxLayout& aux, TensorPtr (&out)[kMaxRagged]) {
  if (!p.varlen) return;
  for (int r = 0; r < aux.num_ragged; ++r)
    out[r] = index_tensor(g, ("ragged_" + std::to_string(r)).c_str(), kRaggedBase + r, p.batch + 1);
}

// A new graph with its ragged offset tensors (varlen; slots 0, 1, 2 are q, k, v in both
// directions) and the q, k, v inputs.
struct GraphInputs {
  std::shared_ptr<fe::graph::Graph> g;
  TensorPtr ragged[kMaxRagged];
  TensorPtr q, k, v;
};
inline GraphInputs graph_inputs(const SdpaProblem& p, const AuxLayout& aux) {
  GraphInputs in;
  in.g = new_graph(p.dtype);
  make_ragged(*in.g, p, aux, in.ragged);
  in.q = operand(*in.g, "q", kQ, p.dtype, p.batch, p.hq, p.sq, p.dk, p.q, in.ragged[0]);
  in.k = operand(*in.g, "k", kK, p.dtype, p.batch, p.hkv, p.skv, p.dk, p.k, in.ragged[1]);
  in.v = operand(*in.g, "v", kV, p.dtype, p.batch, p.hkv, p.skv, p.dv, p.v, in.ragged[2]);
  return in;
}

// What launch needs besides the graph.
struct GraphState {
  std::shared_ptr<fe::graph::Graph> graph;
  int device = -1;  // -1: prepared from caps alone (cannot run)
  AuxLayout aux;
  std::size_t graph_workspace = 0;
};

// Validates, builds and finalizes `g` on caps.ordinal (heuristics A, then FALLBACK), and
// returns the graph's workspace. Any failure is a Status (never an exception).
inline Expected<std::size_t> build_graph(fe::graph::Graph& g, const DeviceCaps& caps) {
  try {
    g.set_sm_version(caps.sm);
    BARACUDA_TRY(fe_status(g.validate(), "cuDNN graph validate"));
    auto handle = LibraryHandles::cudnn(caps.ordinal);
    if (!handle) return handle.error();
    std::lock_guard<std::mutex> lock(LibraryHandles::cudnn_mutex(caps.ordinal));
    int prev = 0;
    BARACUDA_TRY(cuda_status(cudaGetDevice(&prev), "cudaGetDevice"));
    BARACUDA_TRY(cuda_status(cudaSetDevice(caps.ordinal), "cudaSetDevice"));
    Status st = fe_status(g.build_operation_graph(handle.value()), "cuDNN build_operation_graph");
    if (st) st = fe_status(g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "cuDNN create_execution_plans");
    if (st) st = fe_status(g.check_support(handle.value()), "cuDNN check_support");
    if (st) st = fe_status(g.build_plans(handle.value()), "cuDNN build_plans");
    std::int64_t ws = 0;
    if (st) st = fe_status(g.get_workspace_size(ws), "cuDNN get_workspace_size");
    cudaSetDevice(prev);
    if (!st) return st;
    return static_cast<std::size_t>(ws);
  } catch (const std::exception& e) {
    return Status(Code::kLibraryError, std::string("cuDNN graph build threw: ") + e.what(), StatusSource::kCudnn, 0);
  }
}

// Sets the stream on the device's shared handle and executes, both under the handle lock.
inline Status execute_graph(const GraphState& s, std::unordered_map<std::int64_t, void*>& pack, void* workspace,
                            cudaStream_t stream) {
  auto handle = LibraryHandles::cudnn(s.device);
  if (!handle) return handle.error();
  std::lock_guard<std::mutex> lock(LibraryHandles::cudnn_mutex(s.device));
  const cudnnStatus_t cs = cudnnSetStream(handle.value(), stream);
  if (cs != CUDNN_STATUS_SUCCESS)
    return Status(Code::kLibraryError, std::string("cudnnSetStream failed: ") + cudnnGetErrorString(cs),
                  StatusSource::kCudnn, static_cast<int>(cs));
  try {
    return fe_status(s.graph->execute(handle.value(), pack, workspace), "cuDNN SDPA execute");
  } catch (const std::exception& e) {
    return Status(Code::kLibraryError, std::string("cuDNN SDPA execute threw: ") + e.what(), StatusSource::kCudnn, 0);
  }
}

// The variant-pack entries of our aux tensors and the bias.
inline void pack_shared(std::unordered_map<std::int64_t, void*>& pack, const SdpaProblem& p, const AuxLayout& aux,
                        Workspace ws, const void* bias, bool padding) {
  char* base = static_cast<char*>(ws.data);
  if (p.bias.present) pack[kBias] = const_cast<void*>(bias);
  if (padding) {
    pack[kSeqQ] = base + aux.seq_q;
    pack[kSeqKv] = base + aux.seq_kv;
  }
  for (int r = 0; r < aux.num_ragged; ++r) pack[kRaggedBase + r] = base + aux.ragged[r];
  if (p.dropout_p > 0) {
    pack[kSeed] = base + aux.seed;
    pack[kOffset] = base + aux.seed + sizeof(std::int64_t);
  }
}

// Runs a prepare() body so that any exception (frontend, allocation) becomes a Status: a
// failed preparation is a rejection of the SKU, never a crash.
template <class Fn>
Expected<std::shared_ptr<const void>> guarded_prepare(Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status(Code::kLibraryError, std::string("cuDNN SDPA preparation threw: ") + e.what(), StatusSource::kCudnn, 0);
  } catch (...) {
    return Status(Code::kLibraryError, "cuDNN SDPA preparation threw", StatusSource::kCudnn, 0);
  }
}

inline char* ws_at(Workspace ws, std::size_t off) { return static_cast<char*>(ws.data) + off; }

}  // namespace baracuda::attention::cudnn_sdpa
