// The cuDNN SDPA backend's shared rules (cudnn_sdpa_common.hpp): what both directions refuse,
// the diagonal band, the aux workspace layout, the handle lock and the SKU.
#include "attention/cudnn_sdpa_common.hpp"

#include <cudnn.h>

#include <limits>

namespace baracuda::attention::cudnn_sdpa {
namespace {

std::string num(std::int64_t v) { return std::to_string(v); }

// The [B, H, S, D] strides cuDNN sees (in the layout's own dim order); dims of size 1 may
// carry any stride, so they are not checked.
std::string layout_rejection(const NamedLayout& n, bool varlen, DType want) {
  const TensorLayout& t = *n.t;
  const std::string f = n.name;
  if (t.dtype != want)
    return f + ".dtype = " + std::string(dtype_name(t.dtype)) + ": the cuDNN SKU needs every operand in q's dtype (" +
           std::string(dtype_name(want)) + ")";
  const int rank = varlen ? 3 : 4;
  if (t.rank != rank) return f + ".rank = " + num(t.rank) + ", expected " + num(rank);
  if (t.shape[rank - 1] > 1 && t.strides[rank - 1] != 1)
    return f + ".strides[" + num(rank - 1) + "] = " + num(t.strides[rank - 1]) +
           ": cuDNN needs the head dim contiguous (stride 1)";
  for (int k = 0; k < rank - 1; ++k)
    if (t.shape[k] > 1 && (t.strides[k] % 8 != 0 || t.strides[k] <= 0))
      return f + ".strides[" + num(k) + "] = " + num(t.strides[k]) +
             ": cuDNN needs positive strides that keep 16-byte rows (a multiple of 8 elements)";
  if (t.alignment < 16)
    return f + ".alignment = " + num(t.alignment) + ": cuDNN needs 16-byte aligned data";
  return {};
}

}  // namespace

std::string common_rejection(const SdpaProblem& p, std::initializer_list<NamedLayout> io, const TensorLayout& bias,
                             const TensorLayout& mask, const TensorLayout& alibi, const DeviceCaps& caps) {
  if (p.dtype == DType::kE4M3 || p.dtype == DType::kE5M2)
    return std::string("q.dtype = ") + std::string(dtype_name(p.dtype)) + ": the cuDNN fp8 SDPA is not wired in (f16, bf16 only)";
  if (p.dtype != DType::kF16 && p.dtype != DType::kBF16)
    return std::string("q.dtype = ") + std::string(dtype_name(p.dtype)) + ": cuDNN fused attention takes f16 and bf16";
  if (p.dk % 8 != 0 || p.dk > 256) return "q head dim = " + num(p.dk) + ": cuDNN takes head dims <= 256, multiples of 8";
  if (p.dv % 8 != 0 || p.dv > 256) return "v head dim = " + num(p.dv) + ": cuDNN takes head dims <= 256, multiples of 8";
  for (const NamedLayout& n : io) {
    std::string r = layout_rejection(n, p.varlen, p.dtype);
    if (!r.empty()) return r;
  }
  if (p.batch <= 0 || p.hq <= 0 || p.hkv <= 0 || p.sq <= 0 || p.skv <= 0 || p.dk <= 0 || p.dv <= 0)
    return "empty problem (batch=" + num(p.batch) + ", hq=" + num(p.hq) + ", hkv=" + num(p.hkv) + ", sq=" + num(p.sq) +
           ", skv=" + num(p.skv) + ", dk=" + num(p.dk) + ", dv=" + num(p.dv) + "): cuDNN graphs need nonzero sizes";
  if (p.varlen && (p.total_q <= 0 || p.total_k <= 0))
    return "q.shape[0] = " + num(p.total_q) + ", k.shape[0] = " + num(p.total_k) +
           ": the cuDNN SKU needs tokens on both sides";
  if (p.hq % p.hkv != 0) return "q.shape heads = " + num(p.hq) + " is not a multiple of k heads = " + num(p.hkv);
  if (mask.rank > 0) return "mask given: cuDNN's SDPA takes no bool mask (an additive bias of -inf is the equivalent)";
  if (alibi.rank > 0) return "alibi_slopes given: cuDNN's alibi uses its own fixed slopes";
  if (p.softcap != 0) return "options.softcap = " + std::to_string(p.softcap) + ": not expressible in cuDNN's SDPA node";
  if (p.dropout_p < 0 || p.dropout_p >= 1)
    return "options.dropout_p = " + std::to_string(p.dropout_p) + ": cuDNN takes 0 <= p < 1";
  if (bias.rank > 0) {
    if (p.varlen) return "bias given with varlen: cuDNN's ragged layout takes no bias";
    if (bias.dtype != p.dtype)
      return std::string("bias.dtype = ") + std::string(dtype_name(bias.dtype)) + ": cuDNN adds a bias of q's dtype (" +
             std::string(dtype_name(p.dtype)) + ")";
    if (p.bias.size[2] != p.sq || p.bias.size[3] != p.skv)
      return "bias.shape = " + bias.to_string() + ": cuDNN broadcasts the bias over batch and heads only (needs [.., " +
             num(p.sq) + ", " + num(p.skv) + "])";
    if (p.skv > 1 && p.bias.stride[3] != 1)
      return "bias.strides (key dim) = " + num(p.bias.stride[3]) + ": cuDNN needs the key dim contiguous";
    if (p.sq > 1 && p.bias.stride[2] % 8 != 0)
      return "bias.strides (query dim) = " + num(p.bias.stride[2]) + ": cuDNN needs 16-byte rows (a multiple of 8)";
    if (bias.alignment < 16) return "bias.alignment = " + num(bias.alignment) + ": cuDNN needs 16-byte aligned data";
  }
  if (p.varlen) {
    if (caps.sm < 90) return "options.varlen on " + caps.arch_name() + ": cuDNN's ragged layout needs sm90+";
    // Ragged offsets are int32 element offsets.
    const std::int64_t lim = std::numeric_limits<std::int32_t>::max();
    for (const NamedLayout& n : io) {
      const std::int64_t span = n.t->shape[0] * n.t->strides[0];
      if (span > lim)
        return std::string(n.name) + " spans " + num(span) + " elements: cuDNN's int32 ragged offsets cannot address it";
    }
  }
  const Band band = band_of(p);
  if (band.bottom_right && (band.left >= 0 || band.right >= 0) && (bias.rank > 0 || p.dropout_p > 0))
    return std::string("options.align = bottom_right with ") + (bias.rank > 0 ? "bias" : "dropout") +
           ": cuDNN's bottom-right band runs without bias and dropout only";
  // A known cuDNN 9.14.0 bug (the frontend refuses it at build time; refused here so that select
  // moves on without building): a left bound without a right one and more than 1024 keys.
  if (cudnnGetVersion() == 91400 && band.left >= 0 && band.right < 0 && p.skv > 1024)
    return "options.window_left = " + num(p.window_left) + " without a right bound and skv = " + num(p.skv) +
           " > 1024: cuDNN 9.14.0 computes it wrongly (fixed in 9.14.1)";
  if (!p.varlen && p.sq > p.skv) {
    if (band.left >= 0)
      return "sq = " + num(p.sq) + " > skv = " + num(p.skv) + " with options.window_left: cuDNN's sliding window needs sq <= skv";
    if (band.bottom_right && band.right >= 0)
      return "sq = " + num(p.sq) + " > skv = " + num(p.skv) + " with bottom-right alignment: cuDNN needs sq <= skv";
  }
  return {};
}

Band band_of(const SdpaProblem& p) {
  Band b;
  if (!p.has_window) return b;
  const std::int64_t wide = p.sq + p.skv;  // a bound this wide never hides a key
  b.bottom_right = p.bottom_right;
  if (p.window_left >= 0 && p.window_left < wide) b.left = p.window_left;
  if (p.window_right >= 0 && p.window_right < wide) b.right = p.window_right;
  return b;
}

bool dense_has_empty_rows(const SdpaProblem& p) {
  if (!p.has_window) return false;
  for (std::int64_t i : {std::int64_t{0}, p.sq - 1}) {
    std::int64_t lo = 0, hi = 0;
    p.key_range(i, p.sq, p.skv, &lo, &hi);
    if (lo > hi) return true;
  }
  return false;
}

AuxLayout make_aux_layout(std::int64_t batch, bool need_seq, int num_ragged, bool dropout, std::int64_t stats_elems) {
  AuxLayout a;
  std::size_t at = 0;
  const auto take = [&](std::size_t bytes) {
    const std::size_t off = at;
    at = align_up(at + bytes);
    return off;
  };
  const std::size_t b = static_cast<std::size_t>(batch);
  if (need_seq) {
    a.seq_q = take(b * sizeof(std::int32_t));
    a.seq_kv = take(b * sizeof(std::int32_t));
  }
  a.num_ragged = num_ragged;
  for (int r = 0; r < num_ragged; ++r) a.ragged[r] = take((b + 1) * sizeof(std::int32_t));
  if (dropout) a.seed = take(2 * sizeof(std::int64_t));
  if (stats_elems > 0) a.stats = take(static_cast<std::size_t>(stats_elems) * sizeof(float));
  a.bytes = at;
  return a;
}

Status prepare_aux(const SdpaProblem& p, const AuxLayout& aux, void* ws, const std::int32_t* cu_q,
                   const std::int32_t* cu_k, std::initializer_list<RaggedOperand> ragged, std::uint64_t seed,
                   std::uint64_t offset, const std::uint64_t* seed_offset, cudaStream_t stream) {
  if (aux.seq_q == kNone && aux.num_ragged == 0 && aux.seed == kNone) return Status::ok();
  char* base = static_cast<char*>(ws);
  PrepParams pp;
  pp.batch = p.batch;
  pp.cu_q = p.varlen ? cu_q : nullptr;
  pp.cu_k = p.varlen ? cu_k : nullptr;
  pp.dense_sq = static_cast<std::int32_t>(p.sq);
  pp.dense_skv = static_cast<std::int32_t>(p.skv);
  if (aux.seq_q != kNone) {
    pp.seq_q = reinterpret_cast<std::int32_t*>(base + aux.seq_q);
    pp.seq_kv = reinterpret_cast<std::int32_t*>(base + aux.seq_kv);
  }
  pp.num_ragged = aux.num_ragged;
  const RaggedOperand* op = ragged.begin();
  for (int r = 0; r < aux.num_ragged && op != ragged.end(); ++r, ++op) {
    pp.ragged[r] = reinterpret_cast<std::int32_t*>(base + aux.ragged[r]);
    pp.ragged_mult[r] = op->token_stride;
    pp.ragged_from_k[r] = op->from_k;
  }
  if (aux.seed != kNone) {
    pp.seed_out = reinterpret_cast<std::int64_t*>(base + aux.seed);
    pp.seed_in = seed_offset;
    pp.seed = seed;
    pp.offset = offset;
  }
  return launch_prep(pp, stream);
}

Status check_launch(const SdpaProblem& p, bool has_graph, int device, const std::int32_t* cu_q, const std::int32_t* cu_k) {
  if (device < 0 || !has_graph)
    return Status(Code::kInvalidArgument, "run: this cuDNN SDPA plan was selected without a device and cannot run");
  if (p.varlen && (!cu_q || !cu_k))
    return Status(Code::kInvalidArgument, "cu_seqlens_q / cu_seqlens_k = null with options.varlen");
  return Status::ok();
}

KernelSku make_sku(const SdpaProblem& p, Direction dir, const char* impl, bool deterministic) {
  KernelSku s;
  s.family = "sdpa";
  s.direction = dir;
  s.impl = impl;
  const DType t = (p.dtype == DType::kF16 || p.dtype == DType::kBF16) ? p.dtype : DType::kBF16;
  s.in = t;
  s.compute = DType::kF32;
  s.out = t;
  s.min_sm = 80;
  s.arch_specific = false;
  s.backend = Backend::kCudnn;
  s.precision.accumulator = DType::kF32;
  s.precision.deterministic = deterministic;
  s.graph_capturable = true;
  return s;
}

}  // namespace baracuda::attention::cudnn_sdpa
