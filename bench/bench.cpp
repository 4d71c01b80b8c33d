// baracuda-bench: times elementwise, softmax and normalization plans, a device copy and a cuBLASLt bf16 GEMM.
//
// Layout of this file: the op table and suites, option parsing, workloads (one per op
// family: what to allocate, how many bytes / FLOPs, how to run one iteration), random input
// buffers rotated through > 3x L2, timing (events or graph replay), and output (a table on
// stdout, optionally one JSON line per case).
#include "bench.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/numeric.hpp"
#include "baracuda/core/runtime.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/batch_norm.hpp"
#include "baracuda/ops/normalization.hpp"
#include "baracuda/ops/reduce.hpp"
#include "baracuda/ops/scan.hpp"
#include "baracuda/ops/softmax.hpp"
#include "baracuda/ops/gumbel_softmax.hpp"
#include "baracuda/ops/sparsemax.hpp"
#include "baracuda/ops/gemm_bin.hpp"
#include "baracuda/ops/gemm_int4.hpp"
#include "baracuda/ops/gemm_quant.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/ops/alibi.hpp"
#include "baracuda/ops/rope.hpp"
#include "baracuda/ops/decode.hpp"
#include "baracuda/ops/kv_cache.hpp"

namespace baracuda::bench {
namespace {

using Shape = std::vector<std::int64_t>;

// ============================================================================ ops and suites
enum class Family { kCopy, kGemm, kBinary, kUnary, kUnaryBwd, kBinaryBwd, kCast, kCmp, kLerp, kGated, kPRelu,
                    kTernary, kWhere, kFill, kAffine, kUnaryParam, kUnaryParamBwd, kLerpBwd, kTernaryBwd, kWhereBwd,
                    kGatedBwd, kPReluBwd, kPack, kUnpack, kGemmPlan, kSoftmax, kSoftmaxBwd, kSoftmaxMore, kNorm, kNormBwd, kQuantGemm, kReduce, kScan, kScanBwd,
                    kChanNorm, kInt4Gemm, kBinGemm, kSdpa, kRope, kAlibi, kDecode, kKvAppend };

struct OpSpec {
  const char* name;
  Family family;
  int kind = 0;       // UnaryKind, BinaryKind or BinaryCmpKind, as an int (kLerp: unused, weight 0.3)
  bool bias = false;  // b = [N] broadcast over the leading dims of [.., N]
};

constexpr int U(UnaryKind k) { return static_cast<int>(k); }
constexpr int B(BinaryKind k) { return static_cast<int>(k); }

const OpSpec kOps[] = {
    {"copy", Family::kCopy},
    {"gemm_bf16", Family::kGemm},
    {"add", Family::kBinary, B(BinaryKind::kAdd)},
    {"sub", Family::kBinary, B(BinaryKind::kSub)},
    {"mul", Family::kBinary, B(BinaryKind::kMul)},
    {"div", Family::kBinary, B(BinaryKind::kDiv)},
    {"bias_add", Family::kBinary, B(BinaryKind::kAdd), true},
    {"relu", Family::kUnary, U(UnaryKind::kRelu)},
    {"gelu_erf", Family::kUnary, U(UnaryKind::kGeluErf)},
    {"gelu_tanh", Family::kUnary, U(UnaryKind::kGeluTanh)},
    {"silu", Family::kUnary, U(UnaryKind::kSilu)},
    {"exp", Family::kUnary, U(UnaryKind::kExp)},
    {"neg", Family::kUnary, U(UnaryKind::kNeg)},
    {"sqrt", Family::kUnary, U(UnaryKind::kSqrt)},
    {"log", Family::kUnary, U(UnaryKind::kLog)},
    {"sin", Family::kUnary, U(UnaryKind::kSin)},
    {"tanh", Family::kUnary, U(UnaryKind::kTanh)},
    {"sigmoid", Family::kUnary, U(UnaryKind::kSigmoid)},
    {"erf", Family::kUnary, U(UnaryKind::kErf)},
    {"mish", Family::kUnary, U(UnaryKind::kMish)},
    {"hardswish", Family::kUnary, U(UnaryKind::kHardswish)},
    {"softplus", Family::kUnary, U(UnaryKind::kSoftplus)},
    {"tanh_bwd", Family::kUnaryBwd, U(UnaryKind::kTanh)},
    {"sigmoid_bwd", Family::kUnaryBwd, U(UnaryKind::kSigmoid)},
    {"relu_bwd", Family::kUnaryBwd, U(UnaryKind::kRelu)},
    {"gelu_erf_bwd", Family::kUnaryBwd, U(UnaryKind::kGeluErf)},
    {"silu_bwd", Family::kUnaryBwd, U(UnaryKind::kSilu)},
    {"add_bwd", Family::kBinaryBwd, B(BinaryKind::kAdd)},
    {"bias_add_bwd", Family::kBinaryBwd, B(BinaryKind::kAdd), true},
    {"cast", Family::kCast},
    {"maximum", Family::kBinary, B(BinaryKind::kMaximum)},
    {"pow", Family::kBinary, B(BinaryKind::kPow)},
    {"atan2", Family::kBinary, B(BinaryKind::kAtan2)},
    {"eq", Family::kCmp, static_cast<int>(BinaryCmpKind::kEq)},
    {"lerp", Family::kLerp},
    // shape = x's [..., 2D]; y = [..., D]; gate = first half (vLLM's silu_and_mul layout)
    {"swiglu", Family::kGated, static_cast<int>(GatedKind::kSwiglu)},
    // weight [shape[1]] (one per channel of dim 1)
    {"prelu", Family::kPRelu},
    // ternary group: clamp with full-shape tensor bounds, addcmul (value 0.5), where (bool
    // cond), fill (a scalar), affine (2 x + 1)
    {"clamp", Family::kTernary, static_cast<int>(TernaryKind::kClamp)},
    {"addcmul", Family::kTernary, static_cast<int>(TernaryKind::kAddcmul)},
    {"where", Family::kWhere},
    {"fill", Family::kFill},
    {"affine", Family::kAffine},
    // one case for each remaining plan (issue 3): leaky_relu(0.2) and its backward, lerp
    // (weight 0.3) backward, addcmul backward (grad_b and grad_c; grad_a is grad_out itself),
    // where backward, swiglu backward (packed, gate first), PReLU backward (grad_x and the
    // per-channel weight gradient), pack i8 -> s4 and unpack s4 -> i8 (dtype i8, same shape)
    {"leaky_relu", Family::kUnaryParam, U(UnaryKind::kLeakyRelu)},
    {"leaky_relu_bwd", Family::kUnaryParamBwd, U(UnaryKind::kLeakyRelu)},
    {"lerp_bwd", Family::kLerpBwd},
    {"addcmul_bwd", Family::kTernaryBwd, static_cast<int>(TernaryKind::kAddcmul)},
    {"where_bwd", Family::kWhereBwd},
    {"swiglu_bwd", Family::kGatedBwd, static_cast<int>(GatedKind::kSwiglu)},
    {"prelu_bwd", Family::kPReluBwd},
    {"pack_s4", Family::kPack},
    {"unpack_s4", Family::kUnpack},
    // GemmPlan (shape MxNxK, row-major A [M,K], B [K,N], D [M,N], as torch.matmul(a, b)):
    // kind 0 plain, 1 with the fused bias + gelu_tanh epilogue, 2 the same as a plain GEMM
    // followed by a separate bias add and gelu_tanh pass (what the fusion saves)
    {"gemm", Family::kGemmPlan, 0},
    {"gemm_bias_gelu", Family::kGemmPlan, 1},
    {"gemm_then_bias_gelu", Family::kGemmPlan, 2},
    // the activation backward of an MLP, dX_pre = (dY W) .* act'(X_pre) with db = column sums
    // (A = dY [M,K], B = W [K,N], aux = X_pre [M,N]): 3 fused DGELU_BGRAD (gelu_tanh), 4 the
    // same as a plain GEMM, UnaryBackwardPlan gelu_tanh and a column-sum ReducePlan, 5 fused
    // DRELU_BGRAD (aux = bit mask), 6 dsilu + bgrad (composite SKU cublaslt_dact); 7 the
    // forward bias + gelu_tanh with its aux output (GELU_AUX_BIAS)
    {"gemm_dgelu_bgrad", Family::kGemmPlan, 3},
    {"gemm_then_dgelu_bgrad", Family::kGemmPlan, 4},
    {"gemm_drelu_bgrad", Family::kGemmPlan, 5},
    {"gemm_dsilu_bgrad", Family::kGemmPlan, 6},
    {"gemm_bias_gelu_aux", Family::kGemmPlan, 7},
    // issue 5, rows along the last dim: softmax / log_softmax forward, softmax backward (reads
    // grad_y and y); layer_norm (affine, saves mean / rstd), rms_norm (weight), add_rms_norm
    // (h = x + residual -> residual_out, y = rms_norm(h)); their backward (grad_x and the
    // parameter gradients, from the saved statistics)
    {"softmax", Family::kSoftmax, 0},
    {"log_softmax", Family::kSoftmax, 1},
    {"softmax_bwd", Family::kSoftmaxBwd, 0},
    // issue 5, the softmax family's other plans along the last dim (kind: 0 gumbel_softmax
    // soft, 1 hard, 2 its backward (reads grad_y and y_soft), 3 sparsemax, 4 its backward
    // (reads grad_y and y)); gumbel draws Philox noise (no noise tensor read)
    {"gumbel_softmax", Family::kSoftmaxMore, 0},
    {"gumbel_softmax_hard", Family::kSoftmaxMore, 1},
    {"gumbel_softmax_bwd", Family::kSoftmaxMore, 2},
    {"sparsemax", Family::kSoftmaxMore, 3},
    {"sparsemax_bwd", Family::kSoftmaxMore, 4},
    {"layer_norm", Family::kNorm, 0},
    {"rms_norm", Family::kNorm, 1},
    {"add_rms_norm", Family::kNorm, 2},
    {"layer_norm_bwd", Family::kNormBwd, 0},
    {"rms_norm_bwd", Family::kNormBwd, 1},
    // issue 5, channel norms of [N, C, spatial...]: batch_norm (training: batch stats, running
    // stats updated, saves mean / invstd), batch_norm_eval (running stats), batch_norm_bwd
    // (training), group_norm / group_norm_bwd (32 groups), instance_norm (input stats)
    {"batch_norm", Family::kChanNorm, 0},
    {"batch_norm_eval", Family::kChanNorm, 1},
    {"batch_norm_bwd", Family::kChanNorm, 2},
    {"group_norm", Family::kChanNorm, 3},
    {"group_norm_bwd", Family::kChanNorm, 4},
    {"instance_norm", Family::kChanNorm, 5},
    // IntGemmPlan / Fp8GemmPlan (shape MxNxK, --dtype IN:OUT): A [M,K] row-major, B the [N,K]
    // row-major weight (column-major K x N), D [M,N]; kind 0 int8 (torch._int_mm(a, b.t())),
    // 1 fp8 with per-tensor f32 scales (torch._scaled_mm(a, b.t(), scale_a, scale_b))
    // issue 5 reductions (ReducePlan / ArgReducePlan) of [rows, N]: sum over the last dim,
    // over dim 0, over everything (a 1-D shape), amax / argmax (i64 out) / var / logsumexp over the last dim
    {"sum_rows", Family::kReduce, 0},
    {"sum_cols", Family::kReduce, 1},
    {"sum_all", Family::kReduce, 2},
    {"amax_rows", Family::kReduce, 3},
    {"argmax_rows", Family::kReduce, 4},
    {"var_rows", Family::kReduce, 5},
    {"lse_rows", Family::kReduce, 6},
    // issue 5, scans along the last dim (ScanPlan; kind = ScanKind): cummax also writes the
    // i64 indices
    {"cumsum", Family::kScan, static_cast<int>(ScanKind::kCumsum)},
    {"cumprod", Family::kScan, static_cast<int>(ScanKind::kCumprod)},
    {"cummax", Family::kScan, static_cast<int>(ScanKind::kCummax)},
    {"logcumsumexp", Family::kScan, static_cast<int>(ScanKind::kLogcumsumexp)},
    // their backward along the last dim (ScanBackwardPlan): cumsum reads grad_y, logcumsumexp
    // grad_y, x and y
    {"cumsum_bwd", Family::kScanBwd, static_cast<int>(ScanKind::kCumsum)},
    {"logcumsumexp_bwd", Family::kScanBwd, static_cast<int>(ScanKind::kLogcumsumexp)},
    {"int_gemm", Family::kQuantGemm, 0},
    {"fp8_gemm", Family::kQuantGemm, 1},
    // Int4GemmPlan (W4A16, shape MxNxK, --dtype bf16 / f16): x [M,K], the packed [N,K] weight
    // (kind 0 s4, kind 1 u4 with zero points), group 128 scales, y [M,N]; the PyTorch twin is
    // the bf16 matmul of the same shape (what the 4-bit weight replaces)
    {"w4a16", Family::kInt4Gemm, 0},
    {"w4a16_u4", Family::kInt4Gemm, 1},
    {"w4a16_tiled", Family::kInt4Gemm, 2},
    // BinGemmPlan (--dtype u32, shape MxNxK with K in bits): A [M, K/32] and B [N, K/32] words,
    // D [M,N] i32; kind 0 xnor_dot, kind 1 and_count. The TFLOP/s column counts 2 M N K bit
    // operations (TOPS); the PyTorch twin is torch._int_mm of the same M, N, K in int8
    {"bin_gemm", Family::kBinGemm, 0},
    {"bin_gemm_and", Family::kBinGemm, 1},
    // SdpaPlan / SdpaBackwardPlan (issue 6), shape BxHxSxD: q, k, v, o [B, H, S, D] contiguous,
    // lse f32 [B, H, S]; kind 0 forward, 1 forward causal, 2 backward causal (reads q, k, v, o,
    // grad_o, lse; writes dq, dk, dv), 3 backward, 4 / 5 forward / forward causal without lse
    // (inference: what torch's SDPA runs when no input requires grad). TFLOP/s with
    // flash-attn's count: 4 B H S^2 D forward, halved for causal, backward 2.5x the forward.
    {"sdpa_fwd", Family::kSdpa, 0},
    {"sdpa_fwd_causal", Family::kSdpa, 1},
    {"sdpa_bwd_causal", Family::kSdpa, 2},
    {"sdpa_bwd", Family::kSdpa, 3},
    {"sdpa_fwd_nolse", Family::kSdpa, 4},
    {"sdpa_fwd_causal_nolse", Family::kSdpa, 5},
    // issue 6, attention positional ops. RopePlan on x [B, S, H, D] (shape BxSxHxD), neox, f32
    // cos / sin cache [S, D / 2], y out of place: kind 0 x alone, 1 q and k (k with H / 4 heads)
    // in one launch, 2 the backward of x. AlibiPlan on scores [B, H, Sq, Skv], [H] slopes,
    // bottom-right: kind 0 y = s + bias out of place, 1 the backward's slope gradient alone
    // (grad_s in place of grad_y).
    {"rope", Family::kRope, 0},
    {"rope_qk", Family::kRope, 1},
    {"rope_bwd", Family::kRope, 2},
    {"alibi", Family::kAlibi, 0},
    {"alibi_bwd", Family::kAlibi, 1},
    // SdpaDecodePlan (issue 6), shape B x L x Hq x Hkv x D x PAGE [x Sq]: q [B, Sq, Hq, D] over a
    // paged KV cache [B * L / PAGE, PAGE, Hkv, D] (shuffled pages, every sequence L keys);
    // contig_decode: B x L x Hq x Hkv x D [x Sq] over a contiguous [B, L, Hkv, D] cache. GB/s
    // counts the K and V bytes read (the decode's effective bandwidth). KvCacheAppendPlan, shape
    // B x S_new x Hkv x D x PAGE: GB/s counts k_new / v_new read and written once.
    {"paged_decode", Family::kDecode, 0},
    {"contig_decode", Family::kDecode, 1},
    {"kv_cache_append", Family::kKvAppend, 0},
};

const OpSpec* find_op(std::string_view name) {
  for (const auto& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

// Defaults when --op is given alone.
const char* default_dtype(const OpSpec& op) {
  if (op.family == Family::kQuantGemm) return op.kind == 0 ? "i8:i32" : "e4m3:bf16";
  if (op.family == Family::kBinGemm) return "u32";
  return op.family == Family::kCast ? "f32:bf16" : "bf16";
}
const char* default_shape(const OpSpec& op) {
  if (op.family == Family::kCopy) return "1073741824";  // 2 GiB of bf16
  if (op.family == Family::kGemm || op.family == Family::kGemmPlan || op.family == Family::kQuantGemm) return "8192x8192x8192";
  if (op.family == Family::kInt4Gemm) return "16x28672x8192";
  if (op.family == Family::kBinGemm) return "8192x8192x8192";
  if (op.family == Family::kDecode) return op.kind == 0 ? "64x4096x32x8x128x16" : "64x4096x32x8x128";
  if (op.family == Family::kKvAppend) return "64x1x8x128x16";
  return "16384x8192";
}
constexpr int kDefaultReps = 50;

struct Case {
  const OpSpec* op = nullptr;
  DType in = DType::kBF16;
  DType out = DType::kBF16;
  Shape shape;
  int reps = kDefaultReps;
  std::string force;  // a suite's per-case force_sku glob (the attention suite's fused-SKU rows)
};

// A suite: the two ceilings, then the elementwise ops (bf16) and the f32 -> bf16 cast at one shape.
struct SuiteSpec {
  const char* name;
  const char* description;
  const char* copy_shape;
  const char* gemm_shape;
  const char* shape;
  int reps;
};
const SuiteSpec kSuites[] = {
    {"foundation", "the foundation gates: ceilings, then bf16 16384x8192 elementwise and the f32:bf16 cast",
     "1073741824", "8192x8192x8192", "16384x8192", 50},
    {"smoke", "the foundation ops at 1024x1024 with few reps (quick checks)", "1024x1024", "1024x1024x1024",
     "1024x1024", 10},
    {"elementwise", "the foundation ops plus a spread of unary and binary kinds, bf16 16384x8192", "1073741824", "8192x8192x8192",
     "16384x8192", 50},
    {"gemm", "GemmPlan (issue 4): bf16/f16 4096^3 and 8192^3, LLM shapes (bf16), fused bias+gelu vs separate passes, the activation backward (dgelu/drelu/dsilu + bgrad, dgelu vs separate ops) and gelu aux output, int8 and fp8 8192^3, W4A16 M=1/16/2048 on 28672x8192 next to bf16 and M=1/16 on 28672x8192 and 4096x4096 with each decode SKU forced, bin_gemm (1-bit) xnor 8192^3 / 4096^3 and and-popcount 8192^3",
     "1073741824", "8192x8192x8192", "", 50},
    {"softmax", "softmax / log_softmax forward and softmax backward, gumbel_softmax (soft, hard, backward), sparsemax (and backward), bf16 16384x8192 and 4096x131072", "1073741824", "",
     "", 50},
    {"reduce", "row sum bf16 16384x8192 and 4096x131072, column sum bf16 16384x8192, full sum f32 2^28, amax / argmax / "
     "var / logsumexp bf16 16384x8192", "1073741824", "", "", 50},
    {"norm", "layer_norm / rms_norm / add_rms_norm forward and layer_norm / rms_norm backward, bf16 16384x8192 and "
     "4096x131072; batch_norm (+eval, bwd) bf16 32x256x56x56, group_norm (+bwd) bf16 8x512x64x64 (32 groups), "
     "instance_norm bf16 8x512x64x64", "1073741824", "", "", 50},
    {"scan", "cumsum f32 at 16384x8192, 4096x131072 and 1x268435456 (look-back), bf16 at 16384x8192 and 1x268435456, cummax and logcumsumexp at 16384x8192; "
     "backward: cumsum f32, logcumsumexp f32 and bf16 at 16384x8192",
     "1073741824", "", "", 50},
    {"attention", "SDPA bf16 d128 B8 H16 S4096 forward causal / non-causal and backward causal, d64 B16 H16 S2048 "
     "forward causal: the plan's default SKU, then each fused SKU forced (cudnn*, flash*, flash_wgmma_ws*) where one accepts; "
     "rope bf16 [8,4096,32,128] neox with a cos/sin cache (x alone, q+k with 8 kv heads, backward), "
     "alibi bias add / slope gradient bf16 [8,16,2048,2048]; paged decode bf16 B64 KV4096 32/8 heads d128 "
     "(page 16 and 256, contiguous; Sq 4; B1 KV32768 split-KV), kv_cache_append",
     "1073741824", "8192x8192x8192", "", 20},
};

// The "gemm" suite: square, LLM shapes M in {1, 16, 128, 2048} x (N, K) in {(4096, 4096),
// (14336, 4096), (4096, 14336)}, and the epilogue fusion pair.
const char* const kGemmSquare[] = {"4096x4096x4096", "8192x8192x8192"};
const char* const kGemmLlmNK[] = {"4096x4096", "14336x4096", "4096x14336"};
const char* const kGemmLlmM[] = {"1", "16", "128", "2048"};
const char* const kGemmFusionShapes[] = {"4096x4096x4096", "2048x14336x4096", "128x14336x4096"};
const char* const kSuiteOps[] = {"add",      "gelu_erf",     "gelu_tanh", "silu",    "relu",         "exp",
                                 "bias_add", "relu_bwd",     "gelu_erf_bwd", "silu_bwd", "add_bwd", "bias_add_bwd"};

// The "elementwise" suite adds these (issue 3: every unary plan at memory speed).
const char* const kUnarySpreadOps[] = {"neg",  "sqrt",     "log",       "sin",      "tanh",     "sigmoid",    "erf",
                                       "mish", "hardswish", "softplus", "tanh_bwd", "sigmoid_bwd"};
// ... and these binary ones (every binary plan at memory speed).
const char* const kBinarySpreadOps[] = {"maximum", "pow", "atan2", "eq", "lerp"};

// ... and these (issue 3: the ternary group).
const char* const kTernarySpreadOps[] = {"clamp", "addcmul", "where", "fill", "affine"};

// ... and one case for each plan not covered above.
const char* const kPlanSpreadOps[] = {"leaky_relu", "leaky_relu_bwd", "lerp_bwd", "addcmul_bwd", "where_bwd",
                                      "swiglu_bwd", "prelu_bwd"};

// The "softmax" and "norm" suites (issue 5): these ops at both shapes (rows x row length).
const char* const kRowShapes[] = {"16384x8192", "4096x131072"};
const char* const kSoftmaxSuiteOps[] = {"softmax", "log_softmax", "softmax_bwd", "gumbel_softmax", "gumbel_softmax_hard",
                                        "gumbel_softmax_bwd", "sparsemax", "sparsemax_bwd"};
const char* const kNormSuiteOps[] = {"layer_norm", "layer_norm_bwd", "rms_norm", "rms_norm_bwd", "add_rms_norm"};
// ... and the channel norms (op, shape), bf16.
const char* const kChanNormSuite[][2] = {
    {"batch_norm", "32x256x56x56"}, {"batch_norm_eval", "32x256x56x56"}, {"batch_norm_bwd", "32x256x56x56"},
    {"group_norm", "8x512x64x64"},  {"group_norm_bwd", "8x512x64x64"},   {"instance_norm", "8x512x64x64"}};
// The "scan" suite (issue 5: f32 cumsum >= 3.4 TB/s): (op, dtype, shape).
const char* const kScanSuite[][3] = {
    {"cumsum", "f32", "16384x8192"},  {"cumsum", "f32", "4096x131072"},  {"cumsum", "f32", "1x268435456"},
    {"cumsum", "bf16", "16384x8192"},
    {"cumsum", "bf16", "1x268435456"}, {"cummax", "f32", "16384x8192"},  {"cummax", "bf16", "16384x8192"},
    {"logcumsumexp", "bf16", "16384x8192"}, {"cumsum_bwd", "f32", "16384x8192"},
    {"logcumsumexp_bwd", "f32", "16384x8192"}, {"logcumsumexp_bwd", "bf16", "16384x8192"}};

// The decode cases of the "attention" suite (issue 6; other attention cases are added beside).
// The must-show: bf16, B 64, KV 4096, 32 query / 8 KV heads, d128, 1 token, page 16 and 256.
template <class Add>
Status add_decode_suite_cases(Add&& add) {
  for (const char* sh : {"64x4096x32x8x128x16", "64x4096x32x8x128x256"}) BARACUDA_TRY(add("paged_decode", "bf16", sh));
  BARACUDA_TRY(add("contig_decode", "bf16", "64x4096x32x8x128"));
  BARACUDA_TRY(add("paged_decode", "f16", "64x4096x32x8x128x16"));
  BARACUDA_TRY(add("paged_decode", "bf16", "64x4096x32x8x128x16x4"));  // speculative: 4 new tokens
  BARACUDA_TRY(add("paged_decode", "bf16", "1x32768x32x8x128x256"));   // one long sequence: split-KV
  BARACUDA_TRY(add("paged_decode", "bf16", "8x8192x64x8x128x16"));     // GQA 8, mid batch
  BARACUDA_TRY(add("kv_cache_append", "bf16", "64x1x8x128x16"));
  BARACUDA_TRY(add("kv_cache_append", "bf16", "64x16x8x128x16"));
  return Status::ok();
}

// ============================================================================ parsing
std::optional<Shape> parse_shape(std::string_view s) {
  Shape dims;
  while (!s.empty()) {
    std::size_t x = s.find('x');
    std::string_view tok = s.substr(0, x);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || p != tok.data() + tok.size() || v <= 0) return std::nullopt;
    dims.push_back(v);
    if (x == std::string_view::npos) break;
    s.remove_prefix(x + 1);
    if (s.empty()) return std::nullopt;
  }
  if (dims.empty() || static_cast<int>(dims.size()) > kMaxRank) return std::nullopt;
  return dims;
}

std::string shape_string(const Shape& s) {
  std::string r;
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

std::string dtype_string(const Case& c) {
  std::string r(dtype_name(c.in));
  if (c.out != c.in) r += ":" + std::string(dtype_name(c.out));
  return r;
}

// Builds and checks a case; the message names the offending field.
Expected<Case> make_case(std::string_view op_name, std::string_view dtype, std::string_view shape, int reps) {
  auto bad = [&](const std::string& what) {
    return Status(Code::kInvalidArgument, "case " + std::string(op_name) + ": " + what);
  };
  Case c;
  c.op = find_op(op_name);
  if (!c.op) return bad("unknown op (see --list)");
  c.reps = reps;
  std::size_t colon = dtype.find(':');
  auto in = parse_dtype(dtype.substr(0, colon));
  auto out = colon == std::string_view::npos ? in : parse_dtype(dtype.substr(colon + 1));
  if (!in || !out) return bad("--dtype " + std::string(dtype) + " is not a dtype or IN:OUT pair");
  c.in = *in;
  c.out = *out;
  if (dtype_is_packed(c.in) || dtype_is_packed(c.out)) return bad("packed dtypes are not benchmarked");
  if (c.op->family == Family::kQuantGemm) {
    auto qs = parse_shape(shape);
    if (!qs || qs->size() != 3) return bad(std::string(c.op->name) + " takes --shape MxNxK");
    c.shape = *qs;
    return c;
  }
  if ((c.in != c.out) != (c.op->family == Family::kCast))
    return bad("--dtype " + std::string(dtype) + ": only cast takes an IN:OUT pair (and needs one)");
  auto s = parse_shape(shape);
  if (!s) return bad("--shape " + std::string(shape) + " is not DIMxDIMx... with positive dims");
  c.shape = *s;
  if (c.op->family == Family::kGemm && (c.shape.size() != 3 || c.in != DType::kBF16))
    return bad("gemm_bf16 takes --dtype bf16 and --shape MxNxK");
  if (c.op->family == Family::kGemmPlan && c.shape.size() != 3) return bad(std::string(c.op->name) + " takes --shape MxNxK");
  if (c.op->family == Family::kInt4Gemm && (c.shape.size() != 3 || (c.in != DType::kBF16 && c.in != DType::kF16)))
    return bad(std::string(c.op->name) + " takes --dtype bf16 or f16 and --shape MxNxK");
  if (c.op->family == Family::kDecode && (c.shape.size() < (c.op->kind == 0 ? 6u : 5u) || c.shape.size() > (c.op->kind == 0 ? 7u : 6u)))
    return bad(std::string(c.op->name) + (c.op->kind == 0 ? " takes --shape BxLxHqxHkvxDxPAGE[xSQ]" : " takes --shape BxLxHqxHkvxD[xSQ]"));
  if (c.op->family == Family::kKvAppend && c.shape.size() != 5)
    return bad("kv_cache_append takes --shape BxS_NEWxHKVxDxPAGE");
  if (c.op->family == Family::kBinGemm && (c.shape.size() != 3 || c.in != DType::kU32))
    return bad(std::string(c.op->name) + " takes --dtype u32 and --shape MxNxK (K in bits)");
  return c;
}

struct Options {
  std::string suite, op, dtype, shape, json_path, sku, cases_path;
  int reps = 0;  // 0: the suite's / default count
  int warmup = 3;
  int device = 0;
  bool graph = false, list = false, help = false;
};

const char* kUsage =
    "usage: baracuda-bench [--suite NAME] [--op OP] [--dtype DT|IN:OUT] [--shape DxDx..] [--reps N]\n"
    "                      [--warmup N] [--graph] [--device N] [--sku GLOB] [--json FILE] [--list] [--help]\n"
    "                      [--cases FILE]\n"
    "  --sku GLOB: force the plans' SKU (PlanPreference::force_sku), e.g. '*vec16_rows*'\n"
    "  --cases FILE: the cases of FILE, one 'op dtype shape [sku-glob]' a line ('#' comments), in\n"
    "    one process (a SKU glob of a line replaces --sku for that case)\n"
    "  no --suite and no --op: the foundation suite; --op alone: one case (defaults per op);\n"
    "  --suite with --op/--dtype/--shape: the suite's cases that match.\n";

bool parse_int(std::string_view s, int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Accepts "--key value" and "--key=value".
Expected<Options> parse_options(int argc, char** argv) {
  Options o;
  std::map<std::string_view, bool*> flags = {{"--graph", &o.graph}, {"--list", &o.list}, {"--help", &o.help}};
  std::map<std::string_view, std::string*> strings = {
      {"--suite", &o.suite}, {"--op", &o.op}, {"--dtype", &o.dtype}, {"--shape", &o.shape}, {"--json", &o.json_path},
      {"--sku", &o.sku}, {"--cases", &o.cases_path}};
  std::map<std::string_view, int*> counts = {{"--reps", &o.reps}, {"--warmup", &o.warmup}, {"--device", &o.device}};
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    const std::size_t eq = arg.find('=');
    const bool has_inline = arg.starts_with("--") && eq != std::string_view::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "-h") arg = "--help";
    if (auto f = flags.find(arg); f != flags.end()) {
      *f->second = true;
      continue;
    }
    const bool is_string = strings.count(arg) != 0;
    if (!is_string && counts.count(arg) == 0) return Status(Code::kInvalidArgument, "unknown option " + std::string(arg));
    if (!has_inline) {
      if (i + 1 >= argc) return Status(Code::kInvalidArgument, std::string(arg) + " needs a value");
      value = argv[++i];
    }
    if (is_string) {
      *strings[arg] = std::string(value);
    } else if (!parse_int(value, counts[arg]) || *counts[arg] < (arg == "--device" ? 0 : 1)) {
      return Status(Code::kInvalidArgument, std::string(arg) + " = " + std::string(value) + " is not a valid count");
    }
  }
  o.warmup = std::max(o.warmup, 3);
  return o;
}

// The bf16 decode rows of the attention suite again with each tensor-core SKU forced
// (bulk_splitkv: sm_90+ and up to 16 query rows per KV head; rows no forced SKU accepts are
// skipped), beside the default-dispatch rows of add_decode_suite_cases.
Status add_decode_forced(std::vector<Case>& cases, int reps) {
  const char* const kCases[][2] = {{"paged_decode", "64x4096x32x8x128x16"},   {"paged_decode", "64x4096x32x8x128x256"},
                                   {"contig_decode", "64x4096x32x8x128"},     {"paged_decode", "64x4096x32x8x128x16x4"},
                                   {"paged_decode", "1x32768x32x8x128x256"},  {"paged_decode", "8x8192x64x8x128x16"}};
  for (const auto& dc : kCases)
    for (const char* force : {"*bulk_splitkv*", "*mma_splitkv*"}) {
      auto c = make_case(dc[0], "bf16", dc[1], reps);
      if (!c) return c.error();
      c->force = force;
      cases.push_back(*c);
    }
  return Status::ok();
}

// The SDPA cases of the attention suite (issue 6's shapes): each at the plan's default SKU and
// with every fused backend forced (rows whose backend accepts nothing are skipped).
Status add_sdpa_suite(std::vector<Case>& cases, int reps) {
  const char* const kCases[][2] = {{"sdpa_fwd_causal", "8x16x4096x128"},
                                   {"sdpa_fwd", "8x16x4096x128"},
                                   {"sdpa_fwd_causal_nolse", "8x16x4096x128"},
                                   {"sdpa_fwd_nolse", "8x16x4096x128"},
                                   {"sdpa_bwd_causal", "8x16x4096x128"},
                                   {"sdpa_fwd_causal", "16x16x2048x64"}};
  for (const auto& sc : kCases)
    for (const char* force : {"", "*cudnn*", "*flash*", "*flash_wgmma_ws*"}) {
      auto c = make_case(sc[0], "bf16", sc[1], reps);
      if (!c) return c.error();
      c->force = force;
      cases.push_back(*c);
    }
  return Status::ok();
}

// The rope / alibi cases of the "attention" suite (issue 6).
template <class Add>
Status add_rope_alibi_cases(Add&& add) {
  for (const char* op : {"rope", "rope_qk", "rope_bwd"}) BARACUDA_TRY(add(op, "bf16", "8x4096x32x128"));
  for (const char* op : {"alibi", "alibi_bwd"}) BARACUDA_TRY(add(op, "bf16", "8x16x2048x2048"));
  return Status::ok();
}

Expected<std::vector<Case>> suite_cases(const SuiteSpec& s) {
  std::vector<Case> cases;
  auto add = [&](const char* op, const char* dtype, const char* shape) -> Status {
    auto c = make_case(op, dtype, shape, s.reps);
    if (!c) return c.error();
    cases.push_back(*c);
    return Status::ok();
  };
  BARACUDA_TRY(add("copy", "bf16", s.copy_shape));
  if (*s.gemm_shape) BARACUDA_TRY(add("gemm_bf16", "bf16", s.gemm_shape));
  const std::string_view name(s.name);
  if (name == "reduce") {
    for (const char* sh : kRowShapes) BARACUDA_TRY(add("sum_rows", "bf16", sh));
    BARACUDA_TRY(add("sum_cols", "bf16", "16384x8192"));
    BARACUDA_TRY(add("sum_all", "f32", "268435456"));
    for (const char* op : {"amax_rows", "argmax_rows", "var_rows", "lse_rows"}) BARACUDA_TRY(add(op, "bf16", "16384x8192"));
    return cases;
  }
  if (name == "softmax" || name == "norm") {
    for (const char* sh : kRowShapes) {
      if (name == "softmax")
        for (const char* op : kSoftmaxSuiteOps) BARACUDA_TRY(add(op, "bf16", sh));
      else
        for (const char* op : kNormSuiteOps) BARACUDA_TRY(add(op, "bf16", sh));
    }
    if (name == "norm")
      for (const auto& c : kChanNormSuite) BARACUDA_TRY(add(c[0], "bf16", c[1]));
    return cases;
  }
  if (name == "attention") {
    BARACUDA_TRY(add_sdpa_suite(cases, s.reps));
    BARACUDA_TRY(add_rope_alibi_cases(add));
    BARACUDA_TRY(add_decode_suite_cases(add));
    BARACUDA_TRY(add_decode_forced(cases, s.reps));
    return cases;
  }
  if (name == "scan") {
    for (const auto& c : kScanSuite) BARACUDA_TRY(add(c[0], c[1], c[2]));
    return cases;
  }
  if (std::string_view(s.name) == "gemm") {
    for (const char* dt : {"bf16", "f16"})
      for (const char* sh : kGemmSquare) BARACUDA_TRY(add("gemm", dt, sh));
    for (const char* m : kGemmLlmM)
      for (const char* nk : kGemmLlmNK) BARACUDA_TRY(add("gemm", "bf16", (std::string(m) + "x" + nk).c_str()));
    for (const char* sh : kGemmFusionShapes) {
      BARACUDA_TRY(add("gemm_bias_gelu", "bf16", sh));
      BARACUDA_TRY(add("gemm_then_bias_gelu", "bf16", sh));
    }
    // the activation backward epilogues (fused vs separate ops) and the forward's aux output
    for (const char* sh : {"4096x4096x4096", "2048x14336x4096"}) {
      BARACUDA_TRY(add("gemm_dgelu_bgrad", "bf16", sh));
      BARACUDA_TRY(add("gemm_then_dgelu_bgrad", "bf16", sh));
      BARACUDA_TRY(add("gemm_drelu_bgrad", "bf16", sh));
      BARACUDA_TRY(add("gemm_dsilu_bgrad", "bf16", sh));
      BARACUDA_TRY(add("gemm_bias_gelu_aux", "bf16", sh));
      // the composite (cuBLASLt GEMM, our act' pass, the column-reduction bias gradient)
      // forced where the fused DGELU_BGRAD / DRELU_BGRAD epilogue is the default
      for (const char* op : {"gemm_dgelu_bgrad", "gemm_drelu_bgrad"}) {
        auto c = make_case(op, "bf16", sh, s.reps);
        if (!c) return c.error();
        c->force = "*cublaslt_dact*";
        cases.push_back(*c);
      }
    }
    BARACUDA_TRY(add("int_gemm", "i8:i32", "8192x8192x8192"));
    BARACUDA_TRY(add("fp8_gemm", "e4m3:bf16", "8192x8192x8192"));
    // W4A16 (issue 4): decode M = 1 / 4 / 8 / 16 and prefill M = 2048 on N = 28672, K = 8192 (s4,
    // and u4 with zero points at M = 16), each next to the bf16 GEMM of the same shape (the 3x goal)
    for (const char* sh : {"1x28672x8192", "4x28672x8192", "8x28672x8192", "16x28672x8192", "2048x28672x8192"}) {
      BARACUDA_TRY(add("w4a16", "bf16", sh));
      BARACUDA_TRY(add("gemm", "bf16", sh));
    }
    BARACUDA_TRY(add("w4a16_u4", "bf16", "16x28672x8192"));
    // The same decode shapes on tiled weights (Int4WeightLayout::kTiled16x128, s4)
    for (const char* sh : {"1x28672x8192", "8x28672x8192", "16x28672x8192"}) BARACUDA_TRY(add("w4a16_tiled", "bf16", sh));
    // W4A16 decode with each decode SKU forced (w4a16_streamk, w4a16_onepass, w4a16_bulk, w4a16_stream, w4a16_gemv) at
    // M = 1 / 16 on 28672x8192 and 4096x4096, the bf16 GEMM of the 4096x4096 shapes beside them
    for (const char* sh : {"1x28672x8192", "16x28672x8192", "1x4096x4096", "16x4096x4096"}) {
      for (const char* force : {"*w4a16_streamk*", "*w4a16_onepass*", "*w4a16_bulk*", "*w4a16_stream[*", "*w4a16_gemv*"}) {
        auto c = make_case("w4a16", "bf16", sh, s.reps);
        if (!c) return c.error();
        c->force = force;
        cases.push_back(*c);
      }
      if (std::string_view(sh).find("x4096x") != std::string_view::npos) BARACUDA_TRY(add("gemm", "bf16", sh));
    }
    // BinGemmPlan (issue 4): xnor 8192^3 and 4096^3 bits, and-popcount 8192^3
    for (const char* sh : {"8192x8192x8192", "4096x4096x4096"}) BARACUDA_TRY(add("bin_gemm", "u32", sh));
    BARACUDA_TRY(add("bin_gemm_and", "u32", "8192x8192x8192"));
    return cases;
  }
  for (const char* op : kSuiteOps) BARACUDA_TRY(add(op, "bf16", s.shape));
  BARACUDA_TRY(add("cast", "f32:bf16", s.shape));
  if (std::string_view(s.name) == "elementwise") {
    for (const char* op : kUnarySpreadOps) BARACUDA_TRY(add(op, "bf16", s.shape));
    for (const char* op : kBinarySpreadOps) BARACUDA_TRY(add(op, "bf16", s.shape));
    BARACUDA_TRY(add("cast", "i32:f32", s.shape));  // integer -> float casts (issue 3)
    BARACUDA_TRY(add("swiglu", "bf16", s.shape));
    BARACUDA_TRY(add("prelu", "bf16", s.shape));
    for (const char* op : kTernarySpreadOps) BARACUDA_TRY(add(op, "bf16", s.shape));
    for (const char* op : kPlanSpreadOps) BARACUDA_TRY(add(op, "bf16", s.shape));
    // pack / unpack move bytes, not bf16: twice the rows keeps the i8 operand at the
    // >= 256 MiB the issue-3 gate asks of every plan (at 128 MiB a same-size memcpy itself
    // reaches only ~93% of the 1 GiB copy ceiling).
    BARACUDA_TRY(add("pack_s4", "i8", "32768x8192"));
    BARACUDA_TRY(add("unpack_s4", "i8", "32768x8192"));
  }
  return cases;
}

const SuiteSpec* find_suite(std::string_view name) {
  for (const auto& s : kSuites)
    if (name == s.name) return &s;
  return nullptr;
}

// The cases of a --cases file: "op dtype shape [sku-glob]" lines, '#' starts a comment.
Expected<std::vector<Case>> read_case_file(const Options& o) {
  std::ifstream in(o.cases_path);
  if (!in) return Status(Code::kInvalidArgument, "--cases " + o.cases_path + " cannot be read");
  std::vector<Case> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string op, dtype, shape, sku, extra;
    if (!(words >> op)) continue;
    auto bad_line = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, o.cases_path + ":" + std::to_string(n) + ": " + why);
    };
    if (!(words >> dtype >> shape) || ((words >> sku) && (words >> extra)))
      return bad_line("'" + line + "' is not 'op dtype shape [sku-glob]'");
    if (!find_op(op)) return bad_line("op " + op + " is unknown (see --list)");
    auto c = make_case(op, dtype, shape, o.reps ? o.reps : kDefaultReps);
    if (!c) return bad_line(c.error().message());
    c->force = sku.empty() ? o.sku : sku;
    cases.push_back(*c);
  }
  if (cases.empty()) return Status(Code::kInvalidArgument, "--cases " + o.cases_path + " has no case");
  return cases;
}

// The cases the options ask for (see kUsage).
Expected<std::vector<Case>> resolve_cases(const Options& o) {
  if (!o.cases_path.empty()) {
    if (!o.suite.empty() || !o.op.empty() || !o.dtype.empty() || !o.shape.empty())
      return Status(Code::kInvalidArgument, "--cases takes no --suite, --op, --dtype or --shape");
    return read_case_file(o);
  }
  if (!o.op.empty() && o.suite.empty()) {
    const OpSpec* op = find_op(o.op);
    if (!op) return Status(Code::kInvalidArgument, "--op " + o.op + " is unknown (see --list)");
    auto c = make_case(o.op, o.dtype.empty() ? default_dtype(*op) : o.dtype,
                       o.shape.empty() ? default_shape(*op) : o.shape, o.reps ? o.reps : kDefaultReps);
    if (!c) return c.error();
    return std::vector<Case>{*c};
  }
  const SuiteSpec* suite = find_suite(o.suite.empty() ? "foundation" : o.suite);
  if (!suite) return Status(Code::kInvalidArgument, "--suite " + o.suite + " is unknown (see --list)");
  auto all = suite_cases(*suite);
  if (!all) return all.error();
  std::vector<Case> picked;
  for (Case c : *all) {
    if (!o.op.empty() && o.op != c.op->name) continue;
    if (!o.dtype.empty() && o.dtype != dtype_string(c)) continue;
    if (!o.shape.empty() && o.shape != shape_string(c.shape)) continue;
    if (o.reps) c.reps = o.reps;
    picked.push_back(c);
  }
  if (picked.empty()) return Status(Code::kInvalidArgument, "no case of suite " + std::string(suite->name) + " matches");
  return picked;
}

void print_list() {
  std::printf("ops:");
  for (const auto& op : kOps) std::printf(" %s", op.name);
  std::printf("\nsuites:\n");
  for (const auto& s : kSuites) {
    std::printf("  %s: %s\n", s.name, s.description);
    auto cases = suite_cases(s);
    if (!cases) continue;
    for (const auto& c : *cases)
      std::printf("    %-13s %-9s %s (reps %d)%s\n", c.op->name, dtype_string(c).c_str(), shape_string(c.shape).c_str(),
                  c.reps, c.force.empty() ? "" : (" force " + c.force).c_str());
  }
}

// ============================================================================ workloads
// One timed iteration's operands, inputs first then outputs, and how to run it.
using Ptrs = std::vector<void*>;
using RunFn = std::function<Status(const Stream&, const Ptrs&, Workspace)>;

struct Workload {
  std::vector<TensorLayout> inputs;   // filled with random data
  std::vector<TensorLayout> outputs;  // written by the run
  RunFn run;
  std::string sku;
  double select_us = 0;
  std::size_t workspace_bytes = 0;
  double flops = 0;  // 0: not a compute-bound op (no TFLOP/s column)
  std::string no_graph;  // why --graph falls back to events for this workload (empty: it doesn't)
  // Set-up of one buffer set after its inputs are filled with random data (e.g. valid block
  // tables and lengths); null: none.
  std::function<Status(const Stream&, const Ptrs&)> init;
  double effective_bytes = 0;  // > 0: the bytes the GB/s column counts instead of bytes()

  // Each input read once and each output written once (a broadcast bias counts N elements).
  double bytes() const {
    double b = 0;
    for (const auto& t : inputs) b += static_cast<double>(dtype_storage_bytes(t.dtype, t.numel()));
    for (const auto& t : outputs) b += static_cast<double>(dtype_storage_bytes(t.dtype, t.numel()));
    return b;
  }
  double moved_bytes() const { return effective_bytes > 0 ? effective_bytes : bytes(); }
};

double micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// The preference every plan of this run is selected with (--sku sets force_sku).
PlanPreference g_preference;

// Selects PlanT once (timed) and wraps its run(); make_args maps the operand pointers to Args.
template <class PlanT, class MakeArgs>
Expected<Workload> plan_workload(const Stream& stream, const typename PlanT::Descriptor& desc,
                                 std::vector<TensorLayout> inputs, std::vector<TensorLayout> outputs,
                                 MakeArgs make_args, const PlanPreference* pref = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  auto plan = PlanT::select(stream, desc, pref ? *pref : g_preference);
  double select_us = micros_since(t0);
  if (!plan) return Status(plan.error()).add_context("select");
  Workload w;
  w.inputs = std::move(inputs);
  w.outputs = std::move(outputs);
  w.sku = plan->sku().name();
  w.select_us = select_us;
  w.workspace_bytes = plan->workspace_size();
  if (!plan->sku().graph_capturable) w.no_graph = "the SKU is not graph-capturable";
  w.run = [p = *plan, make_args](const Stream& s, const Ptrs& ptr, Workspace ws) {
    return p.run(s, ws, make_args(ptr));
  };
  return w;
}

// The bias operand of [.., N]: a [N] vector.
TensorLayout bias_layout(DType t, const Shape& shape) { return TensorLayout::contiguous(t, {shape.back()}); }

Expected<Workload> copy_workload(const Case& c) {
  TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  Workload w;
  w.inputs = {t};
  w.outputs = {t};
  w.sku = "cudaMemcpyAsync.d2d";
  // Captured, the copy becomes a memcpy node run by the copy engines (about 2.8 TB/s on an
  // H200 against 4.27 TB/s eager): the ceiling is the eager copy.
  w.no_graph = "a graph memcpy node runs on the copy engines, slower than the eager copy";
  const std::size_t bytes = dtype_storage_bytes(t.dtype, t.numel());
  w.run = [bytes](const Stream& s, const Ptrs& p, Workspace) { return copy_device_to_device(p[1], p[0], bytes, s); };
  return w;
}

// ---------------------------------------------------------------------------- cuBLASLt GEMM
constexpr std::size_t kGemmWorkspace = 32u << 20;

Status lt_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status(Code::kLibraryError, std::string(what) + " failed: " + cublasLtGetStatusString(s),
                StatusSource::kCublas, static_cast<int>(s));
}
#define BENCH_LT_TRY(call) BARACUDA_TRY(lt_status((call), #call))

// The cuBLASLt descriptors of one GEMM, destroyed with the object.
struct LtGemm {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~LtGemm() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// Row-major C[M,N] = A[M,K] B[K,N] (bf16 in/out, f32 accumulation), issued as the
// column-major product C^T = B^T A^T (what torch.matmul does for row-major tensors).
Status setup_gemm(LtGemm& g, std::int64_t m, std::int64_t n, std::int64_t k) {
  BENCH_LT_TRY(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t no_trans = CUBLAS_OP_N;
  BENCH_LT_TRY(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &no_trans, sizeof(no_trans)));
  BENCH_LT_TRY(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)));
  BENCH_LT_TRY(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, n, k, n));  // B^T: N x K, ld N
  BENCH_LT_TRY(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, k, m, k));  // A^T: K x M, ld K
  BENCH_LT_TRY(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, n, m, n));  // C^T: N x M, ld N
  BENCH_LT_TRY(cublasLtMatmulPreferenceCreate(&g.pref));
  const std::size_t ws = kGemmWorkspace;
  BENCH_LT_TRY(cublasLtMatmulPreferenceSetAttribute(g.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  BENCH_LT_TRY(cublasLtMatmulAlgoGetHeuristic(g.handle, g.op, g.a, g.b, g.c, g.c, g.pref, 1, &result, &returned));
  if (returned == 0) return Status(Code::kNotSupported, "cublasLtMatmulAlgoGetHeuristic returned no algorithm");
  g.algo = result.algo;
  return Status::ok();
}

std::string gemm_sku(const LtGemm& g) {
  int id = -1, tile = -1;
  cublasLtMatmulAlgoConfigGetAttribute(&g.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&g.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), nullptr);
  return "cublaslt.gemm.algo" + std::to_string(id) + ".tile" + std::to_string(tile) + "[bf16,f32,bf16]";
}

Expected<Workload> gemm_workload(const Case& c, const Stream& stream) {
  const std::int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
  auto g = std::make_shared<LtGemm>();
  auto handle = LibraryHandles::cublaslt(stream.device());  // created once per device: not part of select
  if (!handle) return handle.error();
  g->handle = *handle;
  auto t0 = std::chrono::steady_clock::now();
  BARACUDA_TRY(setup_gemm(*g, m, n, k));
  Workload w;
  w.select_us = micros_since(t0);
  w.inputs = {TensorLayout::contiguous(DType::kBF16, {m, k}), TensorLayout::contiguous(DType::kBF16, {k, n})};
  w.outputs = {TensorLayout::contiguous(DType::kBF16, {m, n})};
  w.sku = gemm_sku(*g);
  w.workspace_bytes = kGemmWorkspace;
  w.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  w.run = [g](const Stream& s, const Ptrs& p, Workspace ws) {
    const float alpha = 1.0f, beta = 0.0f;
    return lt_status(cublasLtMatmul(g->handle, g->op, &alpha, p[1], g->a, p[0], g->b, &beta, p[2], g->c, p[2], g->c,
                                    &g->algo, ws.data, ws.bytes, s.handle()),
                     "cublasLtMatmul");
  };
  return w;
}

// ---------------------------------------------------------------------------- GemmPlan
// Row-major D[M,N] = A[M,K] B[K,N] (torch.matmul(a, b)); kind 1 fuses bias + gelu_tanh in the
// epilogue, kind 2 runs the plain GEMM then BinaryPlan (bias add, in place) and UnaryPlan
// (gelu_tanh, in place): the same result in three passes.
// The aux cases of the gemm suite (kinds 3..7 of gemm_plan_workload): g is the plain
// row-major problem. Inputs a, b, aux (X_pre in D's dtype, or relu's bit mask with ld
// rounded up to 128 bits; the forward's bias instead of aux for kind 7); outputs d and
// bias_grad [N] (the forward's aux for kind 7).
Expected<Workload> gemm_aux_workload(const Case& c, const Stream& s, GemmDescriptor g) {
  const DType t = g.d.dtype;
  const std::int64_t m = g.m(), n = g.n();
  const TensorLayout ta = g.a.as_tensor(), tb = g.b.as_tensor(), td = g.d.as_tensor();
  const TensorLayout vec = TensorLayout::contiguous(t, {n});
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(g.k());
  const int kind = c.op->kind;
  if (kind == 4) {  // separate ops: GEMM, gelu_tanh backward in place, column sums
    auto t0 = std::chrono::steady_clock::now();
    auto gemm = GemmPlan::select(s, g, g_preference);
    if (!gemm) return Status(gemm.error()).add_context("select gemm");
    auto dgelu = UnaryBackwardPlan::select(s, UnaryBackwardDescriptor{UnaryKind::kGeluTanh, td, td, td});
    if (!dgelu) return Status(dgelu.error()).add_context("select gelu_tanh backward");
    auto colsum = ReducePlan::select(s, ReduceDescriptor{td, vec, ReduceAxes::of({0}), false, ReduceKind::kSum});
    if (!colsum) return Status(colsum.error()).add_context("select column sum");
    Workload w;
    w.select_us = micros_since(t0);
    w.inputs = {ta, tb, td};
    w.outputs = {td, vec};
    w.sku = gemm->sku().name() + " + " + dgelu->sku().name() + " + " + colsum->sku().name();
    w.workspace_bytes = std::max(gemm->workspace_size(), colsum->workspace_size());
    w.flops = flops;
    w.run = [gp = *gemm, up = *dgelu, rp = *colsum](const Stream& st, const Ptrs& p, Workspace ws) -> Status {
      BARACUDA_TRY(gp.run(st, ws, GemmArgs{.a = p[0], .b = p[1], .d = p[3]}));
      BARACUDA_TRY(up.run(st, {}, UnaryBackwardArgs{p[3], p[2], p[3]}));
      return rp.run(st, ws, ReduceArgs{p[3], p[4]});
    };
    return w;
  }
  if (kind == 7) {  // forward: bias + gelu_tanh with the pre-activation as aux
    g.epilogue = {GemmActivation::kGeluTanh, true, true, GemmBiasGrad::kNone};
    g.bias = vec;
    g.aux = g.d;
    auto w = plan_workload<GemmPlan>(s, g, {ta, tb, vec}, {td, td}, [](const Ptrs& p) {
      return GemmArgs{.a = p[0], .b = p[1], .d = p[3], .bias = p[2], .aux = p[4]};
    });
    if (w) w->flops = flops;
    return w;
  }
  const GemmActivation act = kind == 3 ? GemmActivation::kGeluTanh : kind == 5 ? GemmActivation::kRelu : GemmActivation::kSilu;
  g.epilogue = GemmEpilogue::activation_backward(act, true);
  g.bias_grad = vec;
  TensorLayout taux = td;
  if (act == GemmActivation::kRelu) {
    g.aux = MatrixLayout{DType::kBit, m, n, (n + 127) / 128 * 128, MatrixOrder::kRowMajor, 16};
    taux = TensorLayout::contiguous(DType::kU8, {m, g.aux.ld / 8});  // the mask's bytes (random bits)
  } else {
    g.aux = g.d;
  }
  PlanPreference pref = g_preference;
  if (!c.force.empty()) pref.force_sku = c.force;
  auto w = plan_workload<GemmPlan>(s, g, {ta, tb, taux}, {td, vec}, [](const Ptrs& p) {
    return GemmArgs{.a = p[0], .b = p[1], .d = p[3], .bias_grad = p[4], .aux = p[2]};
  }, &pref);
  if (w) w->flops = flops;
  return w;
}

Expected<Workload> gemm_plan_workload(const Case& c, const Stream& s) {
  const std::int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
  const DType t = c.in;
  GemmDescriptor g;
  g.a = MatrixLayout{t, m, k, k, MatrixOrder::kRowMajor, 16};
  g.b = MatrixLayout{t, k, n, n, MatrixOrder::kRowMajor, 16};
  g.d = MatrixLayout{t, m, n, n, MatrixOrder::kRowMajor, 16};
  const TensorLayout ta = g.a.as_tensor(), tb = g.b.as_tensor(), td = g.d.as_tensor();
  const TensorLayout bias = TensorLayout::contiguous(t, {n});
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (c.op->kind == 1) {
    g.epilogue.bias = true;
    g.epilogue.activation = GemmActivation::kGeluTanh;
    g.bias = bias;
  }
  if (c.op->kind >= 3) return gemm_aux_workload(c, s, g);
  if (c.op->kind != 2) {
    auto w = c.op->kind == 0
                 ? plan_workload<GemmPlan>(s, g, {ta, tb}, {td}, [](const Ptrs& p) { return GemmArgs{.a = p[0], .b = p[1], .d = p[2]}; })
                 : plan_workload<GemmPlan>(s, g, {ta, tb, bias}, {td}, [](const Ptrs& p) {
                     return GemmArgs{.a = p[0], .b = p[1], .d = p[3], .bias = p[2]};
                   });
    if (w) w->flops = flops;
    return w;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto gemm = GemmPlan::select(s, g, g_preference);
  if (!gemm) return Status(gemm.error()).add_context("select gemm");
  auto add = BinaryPlan::select(s, BinaryDescriptor{BinaryKind::kAdd, td, bias, td});
  if (!add) return Status(add.error()).add_context("select bias add");
  auto gelu = UnaryPlan::select(s, UnaryDescriptor{UnaryKind::kGeluTanh, td, td});
  if (!gelu) return Status(gelu.error()).add_context("select gelu_tanh");
  Workload w;
  w.select_us = micros_since(t0);
  w.inputs = {ta, tb, bias};
  w.outputs = {td};
  w.sku = gemm->sku().name() + " + " + add->sku().name() + " + " + gelu->sku().name();
  w.workspace_bytes = gemm->workspace_size();
  w.flops = flops;
  w.run = [gp = *gemm, ap = *add, up = *gelu](const Stream& st, const Ptrs& p, Workspace ws) -> Status {
    BARACUDA_TRY(gp.run(st, ws, GemmArgs{.a = p[0], .b = p[1], .d = p[3]}));
    BARACUDA_TRY(ap.run(st, {}, BinaryArgs{p[3], p[2], p[3]}));
    return up.run(st, {}, UnaryArgs{p[3], p[3]});
  };
  return w;
}

// ---------------------------------------------------------------------------- softmax / norms
// Rows along the last dim of [rows..., N]. Bytes: every operand read or written once; the
// saved mean / rstd are f32 (f64 for f64) [rows] vectors; workspaces are not counted.
TensorLayout row_stats_layout(DType t, const Shape& shape) {
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return TensorLayout::contiguous(t == DType::kF64 ? DType::kF64 : DType::kF32, {rows});
}

Expected<Workload> softmax_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  const SoftmaxKind kind = c.op->kind == 1 ? SoftmaxKind::kLogSoftmax : SoftmaxKind::kSoftmax;
  if (c.op->family == Family::kSoftmax)
    return plan_workload<SoftmaxPlan>(s, SoftmaxDescriptor{t, t, -1, kind}, {t}, {t},
                                      [](const Ptrs& p) { return SoftmaxArgs{p[0], p[1]}; });
  return plan_workload<SoftmaxBackwardPlan>(s, SoftmaxBackwardDescriptor{t, t, t, -1, kind}, {t, t}, {t},
                                            [](const Ptrs& p) { return SoftmaxBackwardArgs{p[0], p[1], p[2]}; });
}

// GumbelSoftmaxPlan (tau 0.5, seed / offset fixed) and SparsemaxPlan along the last dim.
Expected<Workload> softmax_more_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  switch (c.op->kind) {
    case 0:
    case 1:
      return plan_workload<GumbelSoftmaxPlan>(s, GumbelSoftmaxDescriptor{.x = t, .y = t, .tau = 0.5, .hard = c.op->kind == 1},
                                              {t}, {t}, [](const Ptrs& p) {
                                                return GumbelSoftmaxArgs{.x = p[0], .y = p[1], .seed = 1234, .offset = 0};
                                              });
    case 2:
      return plan_workload<GumbelSoftmaxBackwardPlan>(s, GumbelSoftmaxBackwardDescriptor{t, t, t, -1, 0.5}, {t, t}, {t},
                                                      [](const Ptrs& p) { return GumbelSoftmaxBackwardArgs{p[0], p[1], p[2]}; });
    case 3:
      return plan_workload<SparsemaxPlan>(s, SparsemaxDescriptor{t, t, -1}, {t}, {t},
                                          [](const Ptrs& p) { return SparsemaxArgs{p[0], p[1]}; });
    default:
      return plan_workload<SparsemaxBackwardPlan>(s, SparsemaxBackwardDescriptor{t, t, t, -1}, {t, t}, {t},
                                                  [](const Ptrs& p) { return SparsemaxBackwardArgs{p[0], p[1], p[2]}; });
  }
}

// Reductions (op kinds of the "reduce" ops above). Bytes: x read once plus y written.
Expected<Workload> reduce_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  const int k = c.op->kind;
  const ReduceAxes axes = k == 2 ? ReduceAxes::all() : ReduceAxes::of({k == 1 ? 0 : -1});
  if (k == 4) {
    auto y = reduced_layout(t, axes, false, DType::kI64);
    if (!y) return y.error();
    return plan_workload<ArgReducePlan>(s, ArgReduceDescriptor{t, *y, axes, false, ArgReduceKind::kArgmax}, {t}, {*y},
                                        [](const Ptrs& p) { return ArgReduceArgs{p[0], p[1]}; });
  }
  auto y = reduced_layout(t, axes, false, c.in);
  if (!y) return y.error();
  const ReduceKind kind = k == 3 ? ReduceKind::kAmax : k == 5 ? ReduceKind::kVar : k == 6 ? ReduceKind::kLogSumExp : ReduceKind::kSum;
  return plan_workload<ReducePlan>(s, ReduceDescriptor{t, *y, axes, false, kind}, {t}, {*y},
                                   [](const Ptrs& p) { return ReduceArgs{p[0], p[1]}; });
}

// Scans along the last dim; cummax also writes i64 indices (counted in the bytes).
Expected<Workload> scan_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  const auto kind = static_cast<ScanKind>(c.op->kind);
  if (kind == ScanKind::kCummax || kind == ScanKind::kCummin) {
    const TensorLayout il = TensorLayout::contiguous(DType::kI64, c.shape);
    return plan_workload<ScanPlan>(s, ScanDescriptor{t, t, il, -1, kind}, {t}, {t, il},
                                   [](const Ptrs& p) { return ScanArgs{p[0], p[1], p[2]}; });
  }
  return plan_workload<ScanPlan>(s, ScanDescriptor{t, t, {}, -1, kind}, {t}, {t},
                                 [](const Ptrs& p) { return ScanArgs{p[0], p[1], nullptr}; });
}

// The backward of a scan along the last dim (the forward not reversed). Random x and y: the
// timing does not depend on y being x's logcumsumexp.
Expected<Workload> scan_bwd_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  const auto kind = static_cast<ScanKind>(c.op->kind);
  const ScanBackwardDescriptor d{t, t, t, {}, t, -1, kind, false};
  if (kind == ScanKind::kCumsum)  // reads grad_y only
    return plan_workload<ScanBackwardPlan>(s, d, {t}, {t}, [](const Ptrs& p) {
      return ScanBackwardArgs{.grad_y = p[0], .grad_x = p[1]};
    });
  return plan_workload<ScanBackwardPlan>(s, d, {t, t, t}, {t}, [](const Ptrs& p) {
    return ScanBackwardArgs{.grad_y = p[0], .x = p[1], .y = p[2], .grad_x = p[3]};
  });
}

// kind 0: layer_norm (weight, bias, saves mean / rstd); 1: rms_norm (weight); 2: add_rms_norm.
Expected<Workload> norm_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  const TensorLayout w = bias_layout(c.in, c.shape);
  const TensorLayout st = row_stats_layout(c.in, c.shape);
  const bool layer = c.op->kind == 0;
  if (c.op->family == Family::kNorm) {
    NormDescriptor d;
    d.kind = layer ? NormKind::kLayerNorm : NormKind::kRMSNorm;
    d.x = d.y = t;
    d.weight = d.bias = w;
    d.has_bias = layer;
    d.save_stats = layer;  // torch's layer_norm always computes them; rms_norm as inference runs it
    d.eps = layer ? 1e-5 : 1e-6;
    d.add_residual = c.op->kind == 2;
    d.residual = d.residual_out = t;
    if (layer) {
      LayerNormDescriptor ld;
      static_cast<NormDescriptor&>(ld) = d;
      return plan_workload<LayerNormPlan>(s, ld, {t, w, w}, {t, st, st}, [](const Ptrs& p) {
        return NormArgs{.x = p[0], .weight = p[1], .bias = p[2], .y = p[3], .mean = p[4], .rstd = p[5]};
      });
    }
    RMSNormDescriptor rd;
    static_cast<NormDescriptor&>(rd) = d;
    if (d.add_residual)
      return plan_workload<RMSNormPlan>(s, rd, {t, t, w}, {t, t}, [](const Ptrs& p) {
        return NormArgs{.x = p[0], .residual = p[1], .weight = p[2], .y = p[3], .residual_out = p[4]};
      });
    return plan_workload<RMSNormPlan>(s, rd, {t, w}, {t},
                                      [](const Ptrs& p) { return NormArgs{.x = p[0], .weight = p[1], .y = p[2]}; });
  }
  NormBackwardDescriptor d;
  d.kind = layer ? NormKind::kLayerNorm : NormKind::kRMSNorm;
  d.grad_y = d.x = d.grad_x = t;
  d.weight = d.grad_weight = d.grad_bias = w;
  d.has_bias = layer;
  if (layer) {
    LayerNormBackwardDescriptor ld;
    static_cast<NormBackwardDescriptor&>(ld) = d;
    return plan_workload<LayerNormBackwardPlan>(s, ld, {t, t, st, st, w}, {t, w, w}, [](const Ptrs& p) {
      return NormBackwardArgs{.grad_y = p[0], .x = p[1], .weight = p[4], .mean = p[2], .rstd = p[3],
                              .grad_x = p[5], .grad_weight = p[6], .grad_bias = p[7]};
    });
  }
  RMSNormBackwardDescriptor rd;
  static_cast<NormBackwardDescriptor&>(rd) = d;
  return plan_workload<RMSNormBackwardPlan>(s, rd, {t, t, st, w}, {t, w}, [](const Ptrs& p) {
    return NormBackwardArgs{.grad_y = p[0], .x = p[1], .weight = p[3], .rstd = p[2], .grad_x = p[4],
                            .grad_weight = p[5]};
  });
}

// Channel norms of [N, C, spatial...] (kinds as the ops above), weight / bias / running
// stats [C] in x's dtype, saved statistics f32 (f64 for f64). Bytes: every operand once
// (x is read twice by the training forward: stats, then normalize).
Expected<Workload> chan_norm_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  if (c.shape.size() < 2) return Status(Code::kInvalidArgument, "channel norms need a shape N x C x ...");
  const std::int64_t n = c.shape[0], ch = c.shape[1];
  const TensorLayout w = TensorLayout::contiguous(c.in, {ch});
  const DType sd = c.in == DType::kF64 ? DType::kF64 : DType::kF32;
  const int k = c.op->kind;
  if (k <= 1) {
    BatchNormDescriptor d;
    d.x = d.y = t;
    d.training = k == 0;
    d.weight = d.bias = d.running_mean = d.running_var = w;
    const TensorLayout st = TensorLayout::contiguous(sd, {ch});
    return plan_workload<BatchNormPlan>(s, d, {t, w, w}, {t, w, w, st, st}, [](const Ptrs& p) {
      return BatchNormArgs{.x = p[0], .weight = p[1], .bias = p[2], .running_mean = p[4], .running_var = p[5],
                           .y = p[3], .save_mean = p[6], .save_invstd = p[7]};
    });
  }
  if (k == 2) {
    BatchNormBackwardDescriptor d;
    d.grad_y = d.x = d.grad_x = t;
    d.weight = d.grad_weight = d.grad_bias = w;
    const TensorLayout st = TensorLayout::contiguous(sd, {ch});
    return plan_workload<BatchNormBackwardPlan>(s, d, {t, t, w, st, st}, {t, w, w}, [](const Ptrs& p) {
      return BatchNormBackwardArgs{.grad_y = p[0], .x = p[1], .weight = p[2], .save_mean = p[3], .save_invstd = p[4],
                                   .grad_x = p[5], .grad_weight = p[6], .grad_bias = p[7]};
    });
  }
  if (k == 5) {
    InstanceNormDescriptor d;
    d.x = d.y = t;
    d.weight = d.bias = w;
    const TensorLayout st = TensorLayout::contiguous(sd, {n * ch});
    return plan_workload<InstanceNormPlan>(s, d, {t, w, w}, {t, st, st}, [](const Ptrs& p) {
      return InstanceNormArgs{.x = p[0], .weight = p[1], .bias = p[2], .y = p[3], .mean = p[4], .rstd = p[5]};
    });
  }
  const int groups = 32;
  const TensorLayout st = TensorLayout::contiguous(sd, {n * groups});
  if (k == 3) {
    GroupNormDescriptor d;
    d.x = d.y = t;
    d.num_groups = groups;
    d.weight = d.bias = w;
    return plan_workload<GroupNormPlan>(s, d, {t, w, w}, {t, st, st}, [](const Ptrs& p) {
      return GroupNormArgs{.x = p[0], .weight = p[1], .bias = p[2], .y = p[3], .mean = p[4], .rstd = p[5]};
    });
  }
  GroupNormBackwardDescriptor d;
  d.grad_y = d.x = d.grad_x = t;
  d.num_groups = groups;
  d.weight = d.grad_weight = d.grad_bias = w;
  return plan_workload<GroupNormBackwardPlan>(s, d, {t, t, w, st, st}, {t, w, w}, [](const Ptrs& p) {
    return GroupNormBackwardArgs{.grad_y = p[0], .x = p[1], .weight = p[2], .mean = p[3], .rstd = p[4],
                                 .grad_x = p[5], .grad_weight = p[6], .grad_bias = p[7]};
  });
}

// ---------------------------------------------------------------------------- quantized GEMM
// IntGemmPlan (kind 0) / Fp8GemmPlan (kind 1, per-tensor scales): A [M,K] row-major, B the
// [N,K] row-major weight read as K x N column-major, D [M,N] row-major in c.out.
Expected<Workload> quant_gemm_workload(const Case& c, const Stream& s) {
  const std::int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
  const MatrixLayout a{c.in, m, k, k, MatrixOrder::kRowMajor, 16}, b{c.in, k, n, k, MatrixOrder::kColMajor, 16};
  const MatrixLayout d{c.out, m, n, n, MatrixOrder::kRowMajor, 16};
  const TensorLayout ta = a.as_tensor(), tb = TensorLayout::contiguous(c.in, {n, k}), td = d.as_tensor();
  const TensorLayout scale = TensorLayout::contiguous(DType::kF32, {1});
  Expected<Workload> w = Status(Code::kInternal, "unset");
  if (c.op->kind == 0) {
    w = plan_workload<IntGemmPlan>(s, IntGemmDescriptor{a, b, d}, {ta, tb}, {td},
                                   [](const Ptrs& p) { return IntGemmArgs{.a = p[0], .b = p[1], .d = p[2]}; });
  } else {
    w = plan_workload<Fp8GemmPlan>(s, Fp8GemmDescriptor{a, b, d}, {ta, tb, scale, scale}, {td}, [](const Ptrs& p) {
      return Fp8GemmArgs{.a = p[0], .b = p[1], .d = p[4], .scale_a = static_cast<const float*>(p[2]),
                         .scale_b = static_cast<const float*>(p[3])};
    });
  }
  if (w) w->flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return w;
}

// Int4GemmPlan: x [M,K], w [N,K] packed s4 (kind 0), u4 + zero points (kind 1) or s4 in the
// tiled layout (kind 2), group 128 scales and zeros [N, K/128] in c.in, y [M,N]. FLOPs 2MNK
// (the dequantization not counted).
Expected<Workload> int4_gemm_workload(const Case& c, const Stream& s) {
  const std::int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
  const bool u4 = c.op->kind == 1;
  Int4GemmDescriptor d;
  d.x = MatrixLayout{c.in, m, k, k, MatrixOrder::kRowMajor, 16};
  d.w = MatrixLayout{u4 ? DType::kU4 : DType::kS4, n, k, k, MatrixOrder::kRowMajor, 16};
  d.y = MatrixLayout{c.in, m, n, n, MatrixOrder::kRowMajor, 16};
  d.group_size = k % 128 == 0 ? 128 : k;
  d.zeros = u4;
  if (c.op->kind == 2) d.w_layout = Int4WeightLayout::kTiled16x128;
  const TensorLayout groups = TensorLayout::contiguous(c.in, {n, d.groups()});
  std::vector<TensorLayout> in = {d.x.as_tensor(), d.w.as_tensor(), groups};
  if (u4) in.push_back(groups);
  PlanPreference pref = g_preference;
  if (!c.force.empty()) pref.force_sku = c.force;
  auto w = plan_workload<Int4GemmPlan>(s, d, in, {d.y.as_tensor()}, [u4](const Ptrs& p) {
    return Int4GemmArgs{.x = p[0], .w = p[1], .scales = p[2], .zeros = u4 ? p[3] : nullptr, .y = p[u4 ? 4 : 3]};
  }, &pref);
  if (w) w->flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return w;
}

// BinGemmPlan: A [M, ceil(K/32)] and B [N, ceil(K/32)] u32 words (K bits per row), D [M,N]
// i32; kind 0 xnor_dot, kind 1 and_count. "FLOPs" 2MNK: one AND/XOR and one add per bit pair.
Expected<Workload> bin_gemm_workload(const Case& c, const Stream& s) {
  const std::int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2], words = (k + 31) / 32;
  BinGemmDescriptor d;
  d.a = MatrixLayout{DType::kU32, m, words, words, MatrixOrder::kRowMajor, 16};
  d.b = MatrixLayout{DType::kU32, n, words, words, MatrixOrder::kRowMajor, 16};
  d.d = MatrixLayout{DType::kI32, m, n, n, MatrixOrder::kRowMajor, 16};
  d.k = k;
  d.op = c.op->kind == 0 ? BinGemmOp::kXnorDot : BinGemmOp::kAndCount;
  auto w = plan_workload<BinGemmPlan>(s, d, {d.a.as_tensor(), d.b.as_tensor()}, {d.d.as_tensor()},
                                      [](const Ptrs& p) { return BinGemmArgs{.a = p[0], .b = p[1], .d = p[2]}; });
  if (w) w->flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return w;
}

// ---------------------------------------------------------------------------- decode (issue 6)
// A block table [B, max_pages] of a random permutation of the pages (fixed seed, as a serving
// engine's allocator leaves them) and lengths `len`, uploaded into a buffer set.
Status upload_table_and_lengths(const Stream& s, void* bt, void* lens, std::int64_t batch, std::int64_t max_pages,
                                std::int64_t len) {
  if (bt) {
    std::vector<std::int32_t> pages(static_cast<std::size_t>(batch * max_pages));
    for (std::size_t i = 0; i < pages.size(); ++i) pages[i] = static_cast<std::int32_t>(i);
    std::shuffle(pages.begin(), pages.end(), std::mt19937_64(0xdec0de));
    BARACUDA_TRY(copy_to_device(bt, pages.data(), pages.size() * 4, s));
  }
  std::vector<std::int32_t> l(static_cast<std::size_t>(batch), static_cast<std::int32_t>(len));
  BARACUDA_TRY(copy_to_device(lens, l.data(), l.size() * 4, s));
  return s.synchronize();
}

// SdpaDecodePlan: B x L x Hq x Hkv x D (x PAGE for paged) [x Sq]; o only (no lse), as the
// PyTorch twin (SDPA) returns.
Expected<Workload> decode_workload(const Case& c, const Stream& s) {
  const bool paged = c.op->kind == 0;
  const std::int64_t b = c.shape[0], len = c.shape[1], hq = c.shape[2], hkv = c.shape[3], dim = c.shape[4];
  const std::int64_t page = paged ? c.shape[5] : len;
  const std::size_t sq_at = paged ? 6 : 5;
  const std::int64_t sq = c.shape.size() > sq_at ? c.shape[sq_at] : 1;
  const std::int64_t max_pages = (len + page - 1) / page;
  SdpaDecodeDescriptor d;
  d.q = d.o = TensorLayout::contiguous(c.in, {b, sq, hq, dim});
  d.k_cache = d.v_cache = TensorLayout::contiguous(c.in, {paged ? b * max_pages : b, page, hkv, dim});
  if (paged) d.block_table = TensorLayout::contiguous(DType::kI32, {b, max_pages});
  d.seqlens_k = TensorLayout::contiguous(DType::kI32, {b});
  std::vector<TensorLayout> in = {d.q, d.k_cache, d.v_cache, d.seqlens_k};
  if (paged) in.push_back(d.block_table);
  PlanPreference pref = g_preference;
  if (!c.force.empty()) pref.force_sku = c.force;
  auto w = plan_workload<SdpaDecodePlan>(s, d, in, {d.o}, [paged](const Ptrs& p) {
    return SdpaDecodeArgs{.q = p[0], .k_cache = p[1], .v_cache = p[2],
                          .block_table = paged ? static_cast<const std::int32_t*>(p[4]) : nullptr,
                          .seqlens_k = static_cast<const std::int32_t*>(p[3]), .o = p[paged ? 5 : 4]};
  }, &pref);
  if (!w) return w;
  w->init = [=](const Stream& st, const Ptrs& p) {
    return upload_table_and_lengths(st, paged ? p[4] : nullptr, p[3], b, max_pages, len);
  };
  w->effective_bytes = 2.0 * static_cast<double>(b * len * hkv * dim) * static_cast<double>(dtype_size(c.in));
  return w;
}

// KvCacheAppendPlan: B x S_new x Hkv x D x PAGE; caches of 256 tokens (at least S_new) per
// sequence, written from position 128 (paged, shuffled pages).
Expected<Workload> kv_append_workload(const Case& c, const Stream& s) {
  const std::int64_t b = c.shape[0], sn = c.shape[1], hkv = c.shape[2], dim = c.shape[3], page = c.shape[4];
  const std::int64_t max_pages = (std::max<std::int64_t>(256, 128 + sn) + page - 1) / page;
  KvCacheAppendDescriptor d;
  d.k_new = d.v_new = TensorLayout::contiguous(c.in, {b, sn, hkv, dim});
  d.k_cache = d.v_cache = TensorLayout::contiguous(c.in, {b * max_pages, page, hkv, dim});
  d.block_table = TensorLayout::contiguous(DType::kI32, {b, max_pages});
  d.cache_seqlens = TensorLayout::contiguous(DType::kI32, {b});
  auto w = plan_workload<KvCacheAppendPlan>(
      s, d, {d.k_new, d.v_new, d.block_table, d.cache_seqlens}, {d.k_cache, d.v_cache}, [](const Ptrs& p) {
        return KvCacheAppendArgs{.k_new = p[0], .v_new = p[1], .k_cache = p[4], .v_cache = p[5],
                                 .block_table = static_cast<const std::int32_t*>(p[2]),
                                 .cache_seqlens = static_cast<const std::int32_t*>(p[3])};
      });
  if (!w) return w;
  w->init = [=](const Stream& st, const Ptrs& p) { return upload_table_and_lengths(st, p[2], p[3], b, max_pages, 128); };
  w->effective_bytes = 4.0 * static_cast<double>(b * sn * hkv * dim) * static_cast<double>(dtype_size(c.in));
  return w;
}

// ---------------------------------------------------------------------------- plan families
// SDPA (kinds of the sdpa_* ops): shape BxHxSxD, self-attention (Sq = Skv = S, Hq = Hkv = H).
Expected<Workload> sdpa_workload(const Case& c, const Stream& s) {
  if (c.shape.size() != 4) return Status(Code::kInvalidArgument, std::string(c.op->name) + " takes --shape BxHxSxD");
  const std::int64_t B = c.shape[0], H = c.shape[1], S = c.shape[2], D = c.shape[3];
  const TensorLayout t = TensorLayout::contiguous(c.in, {B, H, S, D});
  const TensorLayout lse = TensorLayout::contiguous(DType::kF32, {B, H, S});
  const int kind = c.op->kind;
  const bool causal = kind == 1 || kind == 2 || kind == 5, backward = kind == 2 || kind == 3, with_lse = kind < 4;
  PlanPreference pref = g_preference;
  if (!c.force.empty()) pref.force_sku = c.force;
  double flops = 4.0 * static_cast<double>(B * H) * static_cast<double>(S) * static_cast<double>(S) * static_cast<double>(D);
  if (causal) flops /= 2;
  SdpaDescriptor d;
  d.q = d.k = d.v = d.o = t;
  if (with_lse) d.lse = lse;  // else rank 0: no lse
  d.options.causal = causal;
  Expected<Workload> w = Status(Code::kInternal, "unset");
  if (!backward) {
    std::vector<TensorLayout> outs{t};
    if (with_lse) outs.push_back(lse);
    // e4m3 (the forward only): descale_q, descale_k, descale_v and scale_o as four more inputs
    const bool fp8 = c.in == DType::kE4M3;
    std::vector<TensorLayout> ins{t, t, t};
    if (fp8) ins.insert(ins.end(), 4, TensorLayout::contiguous(DType::kF32, {1}));
    const std::size_t o = ins.size();
    w = plan_workload<SdpaPlan>(s, d, ins, outs, [with_lse, fp8, o](const Ptrs& p) {
      SdpaArgs a;
      a.q = p[0];
      a.k = p[1];
      a.v = p[2];
      if (fp8) {
        a.fp8.descale_q = static_cast<const float*>(p[3]);
        a.fp8.descale_k = static_cast<const float*>(p[4]);
        a.fp8.descale_v = static_cast<const float*>(p[5]);
        a.fp8.scale_o = static_cast<const float*>(p[6]);
      }
      a.o = p[o];
      a.lse = with_lse ? static_cast<float*>(p[o + 1]) : nullptr;
      return a;
    }, &pref);
  } else {
    SdpaBackwardDescriptor g;
    g.q = g.k = g.v = g.o = g.grad_o = g.grad_q = g.grad_k = g.grad_v = t;
    g.lse = lse;
    g.options = d.options;
    flops *= 2.5;
    w = plan_workload<SdpaBackwardPlan>(s, g, {t, t, t, t, t, lse}, {t, t, t}, [](const Ptrs& p) {
      SdpaBackwardArgs a;
      a.q = p[0];
      a.k = p[1];
      a.v = p[2];
      a.o = p[3];
      a.grad_o = p[4];
      a.lse = static_cast<const float*>(p[5]);
      a.grad_q = p[6];
      a.grad_k = p[7];
      a.grad_v = p[8];
      return a;
    }, &pref);
  }
  if (w) w->flops = flops;
  return w;
}

// ---------------------------------------------------------------------------- rope / alibi
// RopePlan (kinds in kOps): x [B, S, H, D], f32 cache [S, D / 2]; bytes: x, k, the caches read,
// y (and k's output) written.
Expected<Workload> rope_workload(const Case& c, const Stream& s) {
  if (c.shape.size() != 4 || c.shape[3] % 2 != 0)
    return Status(Code::kInvalidArgument, std::string(c.op->name) + " takes --shape BxSxHxD (D even)");
  const TensorLayout x = TensorLayout::contiguous(c.in, c.shape);
  const TensorLayout cache = TensorLayout::contiguous(DType::kF32, {c.shape[1], c.shape[3] / 2});
  if (c.op->kind == 2) {
    RopeBackwardDescriptor d{.grad_y = x, .grad_x = x, .cos = cache, .sin = cache};
    return plan_workload<RopeBackwardPlan>(s, d, {x, cache, cache}, {x}, [](const Ptrs& p) {
      return RopeBackwardArgs{.grad_y = p[0], .grad_x = p[3], .cos = p[1], .sin = p[2]};
    });
  }
  if (c.op->kind == 1) {
    const TensorLayout k = TensorLayout::contiguous(c.in, {c.shape[0], c.shape[1], std::max<std::int64_t>(c.shape[2] / 4, 1), c.shape[3]});
    RopeDescriptor d{.x = x, .y = x, .x2 = k, .y2 = k, .cos = cache, .sin = cache};
    return plan_workload<RopePlan>(s, d, {x, k, cache, cache}, {x, k}, [](const Ptrs& p) {
      return RopeArgs{.x = p[0], .y = p[4], .x2 = p[1], .y2 = p[5], .cos = p[2], .sin = p[3]};
    });
  }
  RopeDescriptor d{.x = x, .y = x, .cos = cache, .sin = cache};
  return plan_workload<RopePlan>(s, d, {x, cache, cache}, {x}, [](const Ptrs& p) {
    return RopeArgs{.x = p[0], .y = p[3], .cos = p[1], .sin = p[2]};
  });
}

// AlibiPlan: scores [B, H, Sq, Skv] (bf16 random), f32 [H] slopes (random: timing only).
Expected<Workload> alibi_workload(const Case& c, const Stream& s) {
  if (c.shape.size() != 4) return Status(Code::kInvalidArgument, std::string(c.op->name) + " takes --shape BxHxSqxSkv");
  const TensorLayout sc = TensorLayout::contiguous(c.in, c.shape);
  const TensorLayout sl = TensorLayout::contiguous(DType::kF32, {c.shape[1]});
  if (c.op->kind == 1) {
    AlibiBackwardDescriptor d{.grad_y = sc, .grad_s = sc, .grad_slopes = sl};
    return plan_workload<AlibiBackwardPlan>(s, d, {sc}, {sl}, [](const Ptrs& p) {
      return AlibiBackwardArgs{.grad_y = p[0], .grad_s = p[0], .grad_slopes = static_cast<float*>(p[1])};
    });
  }
  AlibiDescriptor d{.s = sc, .y = sc, .slopes = sl};
  return plan_workload<AlibiPlan>(s, d, {sc, sl}, {sc}, [](const Ptrs& p) {
    return AlibiArgs{.s = p[0], .y = p[2], .slopes = static_cast<const float*>(p[1])};
  });
}

Expected<Workload> make_workload(const Case& c, const Stream& s) {
  const TensorLayout t = TensorLayout::contiguous(c.in, c.shape);
  const TensorLayout b = c.op->bias ? bias_layout(c.in, c.shape) : t;
  switch (c.op->family) {
    case Family::kCopy:
      return copy_workload(c);
    case Family::kGemm:
      return gemm_workload(c, s);
    case Family::kGemmPlan:
      return gemm_plan_workload(c, s);
    case Family::kSoftmax:
    case Family::kSoftmaxBwd:
      return softmax_workload(c, s);
    case Family::kSoftmaxMore:
      return softmax_more_workload(c, s);
    case Family::kNorm:
    case Family::kNormBwd:
      return norm_workload(c, s);
    case Family::kChanNorm:
      return chan_norm_workload(c, s);
    case Family::kQuantGemm:
      return quant_gemm_workload(c, s);
    case Family::kInt4Gemm:
      return int4_gemm_workload(c, s);
    case Family::kSdpa:
      return sdpa_workload(c, s);
    case Family::kBinGemm:
      return bin_gemm_workload(c, s);
    case Family::kDecode:
      return decode_workload(c, s);
    case Family::kKvAppend:
      return kv_append_workload(c, s);
    case Family::kReduce:
      return reduce_workload(c, s);
    case Family::kScan:
      return scan_workload(c, s);
    case Family::kScanBwd:
      return scan_bwd_workload(c, s);
    case Family::kRope:
      return rope_workload(c, s);
    case Family::kAlibi:
      return alibi_workload(c, s);
    case Family::kBinary: {
      BinaryDescriptor d{static_cast<BinaryKind>(c.op->kind), t, b, t};
      return plan_workload<BinaryPlan>(s, d, {t, b}, {t}, [](const Ptrs& p) { return BinaryArgs{p[0], p[1], p[2]}; });
    }
    case Family::kUnary: {
      UnaryDescriptor d{static_cast<UnaryKind>(c.op->kind), t, t};
      return plan_workload<UnaryPlan>(s, d, {t}, {t}, [](const Ptrs& p) { return UnaryArgs{p[0], p[1]}; });
    }
    case Family::kUnaryBwd: {
      UnaryBackwardDescriptor d{static_cast<UnaryKind>(c.op->kind), t, t, t};
      return plan_workload<UnaryBackwardPlan>(s, d, {t, t}, {t},
                                              [](const Ptrs& p) { return UnaryBackwardArgs{p[0], p[1], p[2]}; });
    }
    case Family::kBinaryBwd: {
      // add reads neither forward input: only grad_out is read; grad_a and grad_b are written.
      BinaryBackwardDescriptor d;
      d.kind = static_cast<BinaryKind>(c.op->kind);
      d.grad_out = d.a = d.grad_a = t;
      d.b = d.grad_b = b;
      return plan_workload<BinaryBackwardPlan>(s, d, {t}, {t, b}, [](const Ptrs& p) {
        return BinaryBackwardArgs{.grad_out = p[0], .grad_a = p[1], .grad_b = p[2]};
      });
    }
    case Family::kCmp: {
      const TensorLayout o = TensorLayout::contiguous(DType::kBool, c.shape);
      BinaryCmpDescriptor d{static_cast<BinaryCmpKind>(c.op->kind), 1e-5, 1e-8, false, t, b, o};
      return plan_workload<BinaryCmpPlan>(s, d, {t, b}, {o}, [](const Ptrs& p) { return BinaryArgs{p[0], p[1], p[2]}; });
    }
    case Family::kLerp: {
      BinaryParamDescriptor d{BinaryParamKind::kLerp, 0.3, t, b, {}, t};
      return plan_workload<BinaryParamPlan>(s, d, {t, b}, {t}, [](const Ptrs& p) {
        return BinaryParamArgs{.a = p[0], .b = p[1], .out = p[2]};
      });
    }
    case Family::kCast: {
      CastDescriptor d{t, TensorLayout::contiguous(c.out, c.shape)};
      return plan_workload<CastPlan>(s, d, {d.x}, {d.y}, [](const Ptrs& p) { return CastArgs{p[0], p[1]}; });
    }
    case Family::kGated: {
      if (c.shape.empty() || c.shape.back() % 2 != 0)
        return Status(Code::kInvalidArgument, "swiglu: the last dim of the shape (x = [..., 2D]) must be even");
      Shape half = c.shape;
      half.back() /= 2;
      const TensorLayout y = TensorLayout::contiguous(c.in, half);
      GatedActivationDescriptor d{static_cast<GatedKind>(c.op->kind), GatedInput::kPacked, GateHalf::kFirst, t, {}, {}, y};
      return plan_workload<GatedActivationPlan>(s, d, {t}, {y},
                                                [](const Ptrs& p) { return GatedActivationArgs{.x = p[0], .y = p[1]}; });
    }
    case Family::kPRelu: {
      if (c.shape.size() < 2) return Status(Code::kInvalidArgument, "prelu: the shape needs a channel dim (dim 1)");
      const TensorLayout w = TensorLayout::contiguous(c.in, {c.shape[1]});
      PReluDescriptor d{t, w, t};
      return plan_workload<PReluPlan>(s, d, {t, w}, {t}, [](const Ptrs& p) { return PReluArgs{p[0], p[1], p[2]}; });
    }
    case Family::kTernary: {
      TernaryDescriptor d{static_cast<TernaryKind>(c.op->kind), 0.5, t, t, t, t};
      return plan_workload<TernaryPlan>(s, d, {t, t, t}, {t},
                                        [](const Ptrs& p) { return TernaryArgs{p[0], p[1], p[2], p[3]}; });
    }
    case Family::kWhere: {
      const TensorLayout cond = TensorLayout::contiguous(DType::kBool, c.shape);
      return plan_workload<WherePlan>(s, WhereDescriptor{cond, t, t, t}, {cond, t, t}, {t},
                                      [](const Ptrs& p) { return WhereArgs{p[0], p[1], p[2], p[3]}; });
    }
    case Family::kFill:
      return plan_workload<FillPlan>(s, FillDescriptor{t, 1.5}, {}, {t}, [](const Ptrs& p) { return FillArgs{p[0]}; });
    case Family::kAffine:
      return plan_workload<AffinePlan>(s, AffineDescriptor{2, 1, t, t}, {t}, {t},
                                       [](const Ptrs& p) { return AffineArgs{p[0], p[1]}; });
    case Family::kUnaryParam: {
      UnaryParamDescriptor d{static_cast<UnaryKind>(c.op->kind), UnaryParams{0.2, 0, 0}, t, t};
      return plan_workload<UnaryParamPlan>(s, d, {t}, {t}, [](const Ptrs& p) { return UnaryArgs{p[0], p[1]}; });
    }
    case Family::kUnaryParamBwd: {
      UnaryParamBackwardDescriptor d{static_cast<UnaryKind>(c.op->kind), UnaryParams{0.2, 0, 0}, t, t, t};
      return plan_workload<UnaryParamBackwardPlan>(s, d, {t, t}, {t},
                                                   [](const Ptrs& p) { return UnaryBackwardArgs{p[0], p[1], p[2]}; });
    }
    case Family::kLerpBwd: {
      BinaryParamBackwardDescriptor d;
      d.kind = BinaryParamKind::kLerp;
      d.scalar = 0.3;
      d.grad_out = d.a = d.b = d.grad_a = d.grad_b = t;
      return plan_workload<BinaryParamBackwardPlan>(s, d, {t}, {t, t}, [](const Ptrs& p) {
        return BinaryParamBackwardArgs{.grad_out = p[0], .grad_a = p[1], .grad_b = p[2]};
      });
    }
    case Family::kTernaryBwd: {
      TernaryBackwardDescriptor d{static_cast<TernaryKind>(c.op->kind), 0.5, t, t, t, t, t, t, t, false, true, true};
      return plan_workload<TernaryBackwardPlan>(s, d, {t, t, t}, {t, t}, [](const Ptrs& p) {
        return TernaryBackwardArgs{.grad_out = p[0], .b = p[1], .c = p[2], .grad_b = p[3], .grad_c = p[4]};
      });
    }
    case Family::kWhereBwd: {
      const TensorLayout cond = TensorLayout::contiguous(DType::kBool, c.shape);
      WhereBackwardDescriptor d{cond, t, t, t};
      return plan_workload<WhereBackwardPlan>(s, d, {cond, t}, {t, t}, [](const Ptrs& p) {
        return WhereBackwardArgs{.cond = p[0], .grad_out = p[1], .grad_a = p[2], .grad_b = p[3]};
      });
    }
    case Family::kGatedBwd: {
      if (c.shape.empty() || c.shape.back() % 2 != 0)
        return Status(Code::kInvalidArgument, "swiglu_bwd: the last dim of the shape (x = [..., 2D]) must be even");
      Shape half = c.shape;
      half.back() /= 2;
      const TensorLayout gy = TensorLayout::contiguous(c.in, half);
      GatedActivationBackwardDescriptor d{static_cast<GatedKind>(c.op->kind), GatedInput::kPacked, GateHalf::kFirst, gy, t,
                                          {}, {}, t, {}, {}};
      return plan_workload<GatedActivationBackwardPlan>(s, d, {gy, t}, {t}, [](const Ptrs& p) {
        return GatedActivationBackwardArgs{.grad_y = p[0], .x = p[1], .grad_x = p[2]};
      });
    }
    case Family::kPReluBwd: {
      if (c.shape.size() < 2) return Status(Code::kInvalidArgument, "prelu_bwd: the shape needs a channel dim (dim 1)");
      const TensorLayout w = TensorLayout::contiguous(c.in, {c.shape[1]});
      PReluBackwardDescriptor d{t, t, w, t, w, true, true};
      return plan_workload<PReluBackwardPlan>(s, d, {t, t, w}, {t, w}, [](const Ptrs& p) {
        return PReluBackwardArgs{.grad_y = p[0], .x = p[1], .weight = p[2], .grad_x = p[3], .grad_weight = p[4]};
      });
    }
    case Family::kPack: {
      if (c.in != DType::kI8) return Status(Code::kInvalidArgument, "pack_s4 takes --dtype i8 (i8 -> s4)");
      const TensorLayout y = TensorLayout::contiguous(DType::kS4, c.shape);
      return plan_workload<PackPlan>(s, PackDescriptor{t, y}, {t}, {y}, [](const Ptrs& p) { return PackArgs{p[0], p[1]}; });
    }
    case Family::kUnpack: {
      if (c.in != DType::kI8) return Status(Code::kInvalidArgument, "unpack_s4 takes --dtype i8 (s4 -> i8)");
      const TensorLayout x = TensorLayout::contiguous(DType::kS4, c.shape);
      return plan_workload<UnpackPlan>(s, UnpackDescriptor{x, t}, {x}, {t},
                                       [](const Ptrs& p) { return UnpackArgs{p[0], p[1]}; });
    }
  }
  return Status(Code::kInternal, "unhandled op family");
}

// ============================================================================ random inputs
constexpr std::size_t kChunkBytes = 64u << 20;

// 64 MiB of random values of dtype t (floats uniform in [-4, 4]), generated once per dtype.
const std::vector<unsigned char>& host_chunk(DType t) {
  static std::map<DType, std::vector<unsigned char>> cache;
  auto& buf = cache[t];
  if (!buf.empty()) return buf;
  buf.resize(kChunkBytes);
  std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(t));
  std::uniform_real_distribution<float> uni(-4.0f, 4.0f);
  auto fill = [&](auto convert) {
    using T = decltype(convert(0.0f));
    auto* p = reinterpret_cast<T*>(buf.data());
    for (std::size_t i = 0; i < kChunkBytes / sizeof(T); ++i) p[i] = convert(uni(rng));
  };
  switch (t) {
    case DType::kF64: fill([](float x) { return static_cast<double>(x); }); break;
    case DType::kF32: fill([](float x) { return x; }); break;
    case DType::kF16: fill([](float x) { return f32_to_f16_bits(x); }); break;
    case DType::kBF16: fill([](float x) { return f32_to_bf16_bits(x); }); break;
    case DType::kE4M3: fill([](float x) { return f32_to_e4m3_bits(x, Fp8Overflow::kSaturate); }); break;
    case DType::kE5M2: fill([](float x) { return f32_to_e5m2_bits(x, Fp8Overflow::kSaturate); }); break;
    case DType::kBool: for (auto& v : buf) v = static_cast<unsigned char>(rng() & 1u); break;
    default: for (auto& v : buf) v = static_cast<unsigned char>(rng()); break;  // integers: random bits
  }
  return buf;
}

// Fills `bytes` of device memory: the host chunk rotated by a per-buffer offset (so two buffers
// of one dtype differ), then doubled on the device until the buffer is full.
Status fill_random(void* dst, std::size_t bytes, DType t, std::size_t seed, const Stream& s) {
  const auto& chunk = host_chunk(t);
  auto* d = static_cast<unsigned char*>(dst);
  const std::size_t first = std::min(bytes, chunk.size());
  const std::size_t rot = (seed * 7919u * 16u) % chunk.size();  // 16-byte steps keep elements whole
  const std::size_t head = std::min(first, chunk.size() - rot);
  BARACUDA_TRY(copy_to_device(d, chunk.data() + rot, head, s));
  BARACUDA_TRY(copy_to_device(d + head, chunk.data(), first - head, s));
  for (std::size_t filled = first; filled < bytes;) {
    const std::size_t n = std::min(filled, bytes - filled);
    BARACUDA_TRY(copy_device_to_device(d + filled, d, n, s));
    filled += n;
  }
  return Status::ok();
}

// k sets of operand buffers, k * (bytes of one set) > 3 * L2, so runs that rotate through
// them read from HBM rather than L2.
struct BufferSets {
  std::vector<std::vector<DeviceBuffer>> sets;
  std::vector<Ptrs> ptrs;
  DeviceBuffer workspace;
  int count() const { return static_cast<int>(sets.size()); }
};

Expected<BufferSets> allocate_sets(const Workload& w, std::size_t l2_bytes, const Stream& s) {
  static std::size_t seed = 0;
  const double set_bytes = std::max(w.bytes(), 1.0);
  const int k = static_cast<int>(std::floor(3.0 * static_cast<double>(l2_bytes) / set_bytes)) + 1;
  BufferSets b;
  for (int i = 0; i < k; ++i) {
    std::vector<DeviceBuffer> set;
    Ptrs ptrs;
    for (std::size_t j = 0; j < w.inputs.size() + w.outputs.size(); ++j) {
      const bool is_input = j < w.inputs.size();
      const TensorLayout& t = is_input ? w.inputs[j] : w.outputs[j - w.inputs.size()];
      const std::size_t bytes = dtype_storage_bytes(t.dtype, t.numel());
      auto buf = DeviceBuffer::allocate(bytes);
      if (!buf) return buf.error();
      if (is_input) BARACUDA_TRY(fill_random(buf->data(), bytes, t.dtype, seed++, s));
      ptrs.push_back(buf->data());
      set.push_back(std::move(*buf));
    }
    if (w.init) BARACUDA_TRY(w.init(s, ptrs));
    b.sets.push_back(std::move(set));
    b.ptrs.push_back(std::move(ptrs));
  }
  auto ws = DeviceBuffer::allocate(w.workspace_bytes);
  if (!ws) return ws.error();
  b.workspace = std::move(*ws);
  BARACUDA_TRY(s.synchronize());
  return b;
}

// ============================================================================ timing
// One step: run i of the timed sequence (events: one run on set i % k; graph: one replay of
// graph i % G, which holds kGraphRuns runs).
using Step = std::function<Status(int)>;
constexpr int kGraphRuns = 10;
constexpr double kWarmupMs = 25.0;  // warm up for about this long (and at least --warmup steps)

struct Timing {
  double ms = 0;      // median per run
  double ms_min = 0;  // fastest run
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Primes (one untimed step), warms up, then records an event before and after each of `reps`
// back-to-back steps.
Expected<Timing> measure(const Step& step, int runs_per_step, const Stream& s, int reps, int warmup) {
  std::vector<Event> ev;
  for (int i = 0; i <= std::max(reps, 1); ++i) {
    auto e = Event::create();
    if (!e) return e.error();
    ev.push_back(std::move(*e));
  }
  int idx = 0;
  BARACUDA_TRY(step(idx++));
  BARACUDA_TRY(s.synchronize());
  BARACUDA_TRY(ev[0].record(s));
  BARACUDA_TRY(step(idx++));
  BARACUDA_TRY(ev[1].record(s));
  BARACUDA_TRY(ev[1].synchronize());
  auto once = ev[1].elapsed_ms_since(ev[0]);
  if (!once) return once.error();
  const int n_warm = std::clamp(static_cast<int>(std::ceil(kWarmupMs / std::max<double>(*once, 1e-3))), warmup, 1000);
  for (int i = 0; i < n_warm; ++i) BARACUDA_TRY(step(idx++));

  BARACUDA_TRY(ev[0].record(s));
  for (int i = 0; i < reps; ++i) {
    BARACUDA_TRY(step(idx++));
    BARACUDA_TRY(ev[i + 1].record(s));
  }
  BARACUDA_TRY(ev[reps].synchronize());
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto ms = ev[i + 1].elapsed_ms_since(ev[i]);
    if (!ms) return ms.error();
    times.push_back(*ms / runs_per_step);
  }
  return Timing{median(times), *std::min_element(times.begin(), times.end())};
}

struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

// Captures kGraphRuns runs into one graph (runs on sets first, first + 1, ...).
Expected<GraphExec> capture(const Workload& w, const BufferSets& b, int first, const Stream& s) {
  BARACUDA_TRY(cuda_status(cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"));
  Status st;
  for (int j = 0; j < kGraphRuns && st; ++j) {
    const int set = (first + j) % b.count();
    st = w.run(s, b.ptrs[set], Workspace{b.workspace.data(), b.workspace.bytes()});
  }
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(s.handle(), &graph);
  if (!st) {
    if (graph) cudaGraphDestroy(graph);
    return st.add_context("during graph capture");
  }
  BARACUDA_TRY(cuda_status(end, "cudaStreamEndCapture"));
  cudaGraphExec_t exec = nullptr;
  cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  BARACUDA_TRY(cuda_status(inst, "cudaGraphInstantiate"));
  return GraphExec(exec);
}

Expected<Timing> time_events(const Workload& w, const BufferSets& b, const Stream& s, int reps, int warmup) {
  const Workspace ws{b.workspace.data(), b.workspace.bytes()};
  return measure([&](int i) { return w.run(s, b.ptrs[i % b.count()], ws); }, 1, s, reps, warmup);
}

// ceil(k / kGraphRuns) graphs cover all k buffer sets; replays rotate through the graphs.
Expected<Timing> time_graph(const Workload& w, const BufferSets& b, const Stream& s, int reps, int warmup) {
  BARACUDA_TRY(w.run(s, b.ptrs[0], Workspace{b.workspace.data(), b.workspace.bytes()}));  // loads modules
  BARACUDA_TRY(s.synchronize());
  std::vector<GraphExec> graphs;
  for (int first = 0; first < b.count(); first += kGraphRuns) {
    auto g = capture(w, b, first, s);
    if (!g) return g.error();
    graphs.push_back(std::move(*g));
  }
  return measure(
      [&](int i) {
        return cuda_status(cudaGraphLaunch(graphs[i % graphs.size()].get(), s.handle()), "cudaGraphLaunch");
      },
      kGraphRuns, s, reps, warmup);
}

// ============================================================================ output
struct Environment {
  const DeviceCaps* caps = nullptr;
  int driver = 0, runtime = 0;
};

struct Result {
  const Case* c = nullptr;
  Workload w;
  Timing t;
  int sets = 0;
  bool graph = false;
  double gbps() const { return w.moved_bytes() / (t.ms * 1e6); }
  std::optional<double> tflops() const {
    return w.flops > 0 ? std::optional<double>(w.flops / (t.ms * 1e9)) : std::nullopt;
  }
};

// The ceilings every later line is a percentage of.
struct Ceilings {
  std::optional<double> copy_gbps;
  std::optional<double> gemm_tflops;
};

std::optional<double> percent(std::optional<double> v, std::optional<double> ceiling) {
  if (!v || !ceiling || *ceiling <= 0) return std::nullopt;
  return 100.0 * *v / *ceiling;
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string fmt_opt(const char* f, std::optional<double> v, const char* none) { return v ? fmt(f, *v) : none; }

void print_header(const Environment& env, const Options& o) {
  const DeviceCaps& c = *env.caps;
  std::printf("# baracuda-bench: device %d \"%s\" sm%d, %d SMs, L2 %.0f MiB, %.1f GiB; driver %s, runtime %s; built for %s\n",
              c.ordinal, c.name.c_str(), c.sm, c.sm_count, c.l2_bytes / 1048576.0, c.global_mem_bytes / 1073741824.0,
              version_string(env.driver).c_str(), version_string(env.runtime).c_str(), build_arch_list());
  std::printf("# timing: %s, warm-up >= %d runs and ~%.0f ms, median (and min) of the timed runs; buffers rotated > 3x L2\n",
              o.graph ? "CUDA graph replay (10 runs per graph, ms = replay / 10)" : "CUDA events around each run",
              o.warmup, kWarmupMs);
  std::printf("%-13s %-9s %-15s %-46s %9s %9s %8s %6s %8s %6s %9s %10s\n", "op", "dtype", "shape", "sku", "ms", "min_ms",
              "GB/s", "%copy", "TFLOP/s", "%gemm", "select_us", "ws_bytes");
}

void print_line(const Result& r, const Ceilings& ceil) {
  std::printf("%-13s %-9s %-15s %-46s %9.4f %9.4f %8.1f %6s %8s %6s %9.1f %10zu\n", r.c->op->name,
              dtype_string(*r.c).c_str(), shape_string(r.c->shape).c_str(), r.w.sku.c_str(), r.t.ms, r.t.ms_min,
              r.gbps(), fmt_opt("%.1f", percent(r.gbps(), ceil.copy_gbps), "-").c_str(),
              fmt_opt("%.1f", r.tflops(), "-").c_str(), fmt_opt("%.1f", percent(r.tflops(), ceil.gemm_tflops), "-").c_str(),
              r.w.select_us, r.w.workspace_bytes);
  std::fflush(stdout);
}

std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) r += ch;
  }
  return r + "\"";
}

std::string json_line(const Result& r, const Ceilings& ceil, const Environment& env) {
  auto num = [](std::optional<double> v) { return fmt_opt("%.6g", v, "null"); };
  std::string s = "{";
  auto field = [&](const char* key, const std::string& value) {
    if (s.size() > 1) s += ", ";
    s += json_string(key) + ": " + value;
  };
  field("op", json_string(r.c->op->name));
  field("dtype", json_string(dtype_string(*r.c)));
  field("shape", json_string(shape_string(r.c->shape)));
  field("sku", json_string(r.w.sku));
  field("ms", num(r.t.ms));
  field("ms_min", num(r.t.ms_min));
  field("gbps", num(r.gbps()));
  field("tflops", num(r.tflops()));
  field("pct_copy", num(percent(r.gbps(), ceil.copy_gbps)));
  field("pct_gemm", num(percent(r.tflops(), ceil.gemm_tflops)));
  field("select_us", num(r.w.select_us));
  field("workspace_bytes", std::to_string(r.w.workspace_bytes));
  field("device", json_string(env.caps->name));
  field("bytes", fmt("%.0f", r.w.moved_bytes()));
  field("flops", fmt("%.0f", r.w.flops));
  field("sm", std::to_string(env.caps->sm));
  field("driver", json_string(version_string(env.driver)));
  field("runtime", json_string(version_string(env.runtime)));
  field("timing", json_string(r.graph ? "graph" : "events"));
  field("reps", std::to_string(r.c->reps));
  field("sets", std::to_string(r.sets));
  return s + "}";
}

// ============================================================================ driver
Expected<Result> run_case(const Case& c, const Options& o, const Environment& env, const Stream& s) {
  auto w = make_workload(c, s);
  if (!w) return w.error();
  auto bufs = allocate_sets(*w, env.caps->l2_bytes, s);
  if (!bufs) return Status(bufs.error()).add_context("allocate inputs");
  const bool graph = o.graph && w->no_graph.empty();
  if (o.graph && !graph)
    std::fprintf(stderr, "baracuda-bench: %s timed with CUDA events: %s\n", c.op->name, w->no_graph.c_str());
  auto t = graph ? time_graph(*w, *bufs, s, c.reps, o.warmup) : time_events(*w, *bufs, s, c.reps, o.warmup);
  if (!t) return Status(t.error()).add_context("run");
  return Result{&c, std::move(*w), *t, bufs->count(), graph};
}

// Ceilings first: copy cases (one is added when the list has none), then GEMMs, then the rest.
std::vector<Case> order_cases(std::vector<Case> cases, int reps) {
  auto is = [](Family f) { return [f](const Case& c) { return c.op->family == f; }; };
  if (std::none_of(cases.begin(), cases.end(), is(Family::kCopy))) {
    auto copy = make_case("copy", "bf16", default_shape(*find_op("copy")), reps ? reps : kDefaultReps);
    if (copy) cases.insert(cases.begin(), *copy);
  }
  auto rest = std::stable_partition(cases.begin(), cases.end(), is(Family::kCopy));
  std::stable_partition(rest, cases.end(), is(Family::kGemm));
  return cases;
}

Expected<Environment> open_device(int device) {
  auto n = Device::count();
  if (!n || *n == 0) return Status(Code::kNoDevice, "no CUDA device visible");
  BARACUDA_TRY(cuda_status(cudaSetDevice(device), "cudaSetDevice"));
  Environment env;
  auto caps = Device::caps(device);
  if (!caps) return caps.error();
  env.caps = *caps;
  cudaDriverGetVersion(&env.driver);
  cudaRuntimeGetVersion(&env.runtime);
  return env;
}

}  // namespace

int run_bench(int argc, char** argv) {
  auto opts = parse_options(argc, argv);
  if (!opts) {
    std::fprintf(stderr, "baracuda-bench: %s\n%s", opts.error().message().c_str(), kUsage);
    return 1;
  }
  if (opts->help) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (opts->list) {
    print_list();
    return 0;
  }
  g_preference.force_sku = opts->sku;
  auto cases = resolve_cases(*opts);
  if (!cases) {
    std::fprintf(stderr, "baracuda-bench: %s\n", cases.error().message().c_str());
    return 1;
  }
  auto env = open_device(opts->device);
  if (!env) {
    if (env.error().code() == Code::kNoDevice) {
      std::fprintf(stderr, "baracuda-bench: no CUDA device visible\n");
      return 2;
    }
    std::fprintf(stderr, "baracuda-bench: %s\n", env.error().to_string().c_str());
    return 1;
  }
  auto stream = Stream::create(opts->device);
  if (!stream) {
    std::fprintf(stderr, "baracuda-bench: %s\n", stream.error().to_string().c_str());
    return 1;
  }
  std::ofstream json;
  if (!opts->json_path.empty()) {
    json.open(opts->json_path);
    if (!json) {
      std::fprintf(stderr, "baracuda-bench: cannot write %s\n", opts->json_path.c_str());
      return 1;
    }
  }

  const std::vector<Case> ordered = order_cases(std::move(*cases), opts->reps);
  print_header(*env, *opts);
  Ceilings ceil;
  int failures = 0;
  for (const Case& c : ordered) {
    if (!opts->cases_path.empty()) g_preference.force_sku = c.force;  // a --cases line's SKU glob
    auto r = run_case(c, *opts, *env, *stream);
    if (!r && !c.force.empty() && r.error().code() == Code::kNotSupported) {  // no SKU of that backend accepts
      std::fprintf(stderr, "baracuda-bench: %s %s %s: no %s SKU accepts (row skipped)\n", c.op->name,
                   dtype_string(c).c_str(), shape_string(c.shape).c_str(), c.force.c_str());
      continue;
    }
    if (!r) {
      std::fprintf(stderr, "baracuda-bench: %s %s %s: %s\n", c.op->name, dtype_string(c).c_str(),
                   shape_string(c.shape).c_str(), r.error().to_string().c_str());
      ++failures;
      continue;
    }
    if (c.op->family == Family::kCopy && !ceil.copy_gbps) ceil.copy_gbps = r->gbps();
    if (c.op->family == Family::kGemm && !ceil.gemm_tflops) ceil.gemm_tflops = r->tflops();
    print_line(*r, ceil);
    if (json) json << json_line(*r, ceil, *env) << '\n' << std::flush;
  }
  if (failures) std::fprintf(stderr, "baracuda-bench: %d case(s) failed\n", failures);
  return failures ? 1 : 0;
}

}  // namespace baracuda::bench
