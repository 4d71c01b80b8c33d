// Fp8GemmPlan: e4m3 / e5m2 GEMM on cuBLASLt (sm_89+), per-tensor scales or (sm_90) block-wise
// scales, optional bias and amax. One candidate, "cublaslt_fp8" (or "cublaslt_fp8_block"
// for block-wise scaling). Rules in baracuda/ops/gemm_quant.hpp and docs/gemm.md.
#include <array>
#include <span>
#include <string>

#include <cublasLt.h>

#include "baracuda/ops/gemm_quant.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "gemm/lt_quant.hpp"
#include "gemm/one_candidate.hpp"
#include "gemm/quant_checks.hpp"

namespace baracuda {

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
bool is_block(const Fp8GemmDescriptor& d) { return d.scale_a == QuantScale::kBlock1x128; }
}  // namespace

std::int64_t fp8_scale_count_a(const Fp8GemmDescriptor& d) noexcept {
  return d.scale_a == QuantScale::kBlock1x128 ? ceil_div(d.k(), 128) * d.m() : 1;
}
std::int64_t fp8_scale_count_b(const Fp8GemmDescriptor& d) noexcept {
  return d.scale_b == QuantScale::kBlock128x128 ? ceil_div(d.n(), 128) * (ceil_div(ceil_div(d.k(), 128), 4) * 4) : 1;
}

std::size_t Fp8GemmDescriptor::hash() const noexcept {
  std::size_t h = gemm::quant_matrix_hash(a);
  h = detail::hash_combine(h, gemm::quant_matrix_hash(b));
  h = detail::hash_combine(h, gemm::quant_matrix_hash(d));
  return detail::hash_combine(h, static_cast<std::size_t>(scale_a) | (static_cast<std::size_t>(scale_b) << 4) |
                                     (std::size_t{bias} << 8) | (std::size_t{amax} << 9) | (std::size_t{fast_accum} << 10));
}

std::string Fp8GemmDescriptor::to_string() const {
  return "fp8_gemm(a=" + gemm::quant_matrix_string(a) + ", b=" + gemm::quant_matrix_string(b) +
         ", d=" + gemm::quant_matrix_string(d) + ", scale_a=" + quant_scale_name(scale_a) +
         ", scale_b=" + quant_scale_name(scale_b) + (bias ? ", bias" : "") + (amax ? ", amax" : "") +
         (fast_accum ? ", fast_accum" : "") + ")";
}

namespace gemm {
namespace {

std::string s64(std::int64_t v) { return std::to_string(v); }
std::string dt(DType t) { return std::string(dtype_name(t)); }
bool is_fp8(DType t) { return t == DType::kE4M3 || t == DType::kE5M2; }

Status validate_fp8(const Fp8GemmDescriptor& d) {
  if (!is_fp8(d.a.dtype)) return quant_invalid("a.dtype = " + dt(d.a.dtype) + ": Fp8GemmPlan takes e4m3 or e5m2");
  if (!is_fp8(d.b.dtype)) return quant_invalid("b.dtype = " + dt(d.b.dtype) + ": Fp8GemmPlan takes e4m3 or e5m2");
  if (d.a.dtype == DType::kE5M2 && d.b.dtype == DType::kE5M2)
    return quant_invalid("a.dtype = e5m2 and b.dtype = e5m2: cuBLASLt has no e5m2 x e5m2 kernel (one operand must be e4m3)");
  const DType t = d.d.dtype;
  if (t != DType::kBF16 && t != DType::kF16 && t != DType::kF32 && t != DType::kE4M3)
    return quant_invalid("d.dtype = " + dt(t) + ": Fp8GemmPlan writes bf16, f16, f32 or e4m3");
  BARACUDA_TRY(check_tn_operands(d.a, d.b, d.d, 16, 16, "Fp8GemmPlan"));
  const std::int64_t m = d.m(), n = d.n(), k = d.k();
  if (k % 16 != 0) return quant_invalid("a.cols = K = " + s64(k) + " is not a multiple of 16 (cuBLASLt's fp8 kernels)");
  const bool row = d.d.order == MatrixOrder::kRowMajor;
  const std::int64_t lt_m = row ? n : m;
  if (lt_m % 16 != 0)
    return quant_invalid(std::string(row ? "d.cols = N = " : "d.rows = M = ") + s64(lt_m) +
                         " is not a multiple of 16: cuBLASLt's fp8 kernels need it for " + (row ? "row-major" : "column-major") +
                         " D (its 'm')");
  const std::int64_t size = static_cast<std::int64_t>(dtype_size(t));
  if ((d.d.ld * size) % 16 != 0)
    return quant_invalid("d.ld = " + s64(d.d.ld) + " is not a multiple of 16 bytes (cuBLASLt's fp8 kernels)");
  if (d.d.alignment < 16) return quant_invalid("d.alignment = " + s64(d.d.alignment) + " bytes is below 16 (cuBLASLt's fp8 kernels)");
  const bool pt = d.scale_a == QuantScale::kPerTensor && d.scale_b == QuantScale::kPerTensor;
  const bool block = d.scale_a == QuantScale::kBlock1x128 && d.scale_b == QuantScale::kBlock128x128;
  if (!pt && !block)
    return quant_invalid(std::string("scale_a = ") + quant_scale_name(d.scale_a) + ", scale_b = " + quant_scale_name(d.scale_b) +
                         ": Fp8GemmPlan takes per_tensor for both, or block1x128 (A) with block128x128 (B)");
  if (block) {
    if (k % 128 != 0)
      return quant_invalid("a.cols = K = " + s64(k) + " is not a multiple of 128 (block-wise scaling)");
    if (m % 4 != 0) return quant_invalid("a.rows = M = " + s64(m) + " is not a multiple of 4 (block-wise scaling: the 1x128 scales of A are M-contiguous columns of 16-byte multiples)");
  }
  if (d.bias && !row)
    return quant_invalid("bias = true with d column-major: cuBLASLt broadcasts its bias along D's rows in its frame, "
                         "which is bias[j] (j < N) only for row-major D");
  if (d.amax && t != DType::kE4M3)
    return quant_invalid("amax = true with d.dtype = " + dt(t) + ": Fp8GemmPlan computes amax for e4m3 D only");
  return Status::ok();
}

int lt_scale_mode(QuantScale s) {
  if (s == QuantScale::kBlock1x128) return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  if (s == QuantScale::kBlock128x128) return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

LtQuantProblem fp8_problem(const Fp8GemmDescriptor& d) {
  LtQuantProblem p;
  p.frame = lt_problem(quant_frame(d.a, d.b, d.d), false);
  const bool swap = p.frame.swap;
  p.kind = LtQuantKind::kFp8;
  p.type_a = swap ? d.b.dtype : d.a.dtype;
  p.type_b = swap ? d.a.dtype : d.b.dtype;
  p.scale_mode_a = lt_scale_mode(swap ? d.scale_b : d.scale_a);
  p.scale_mode_b = lt_scale_mode(swap ? d.scale_a : d.scale_b);
  p.type_d = d.d.dtype;
  p.type_c = d.d.dtype == DType::kE4M3 ? DType::kBF16 : d.d.dtype;  // cuBLASLt's fp8 table: C bf16 for e4m3 D
  p.scale_d = d.d.dtype == DType::kE4M3;
  p.amax = d.amax;
  p.bias = d.bias;
  p.bias_type = d.bias_dtype();
  p.bias_alignment = 16;
  p.fast_accum = d.fast_accum;
  return p;
}

struct Fp8Candidate {
  using Desc = Fp8GemmDescriptor;
  static Candidate<Desc, Fp8GemmArgs>::Probe probe(const Desc& d, const DeviceCaps& caps) {
    Candidate<Desc, Fp8GemmArgs>::Probe pr;
    pr.sku.family = "fp8_gemm";
    pr.sku.impl = is_block(d) ? "cublaslt_fp8_block" : "cublaslt_fp8";
    pr.sku.in = d.a.dtype;
    pr.sku.compute = pr.sku.precision.accumulator = DType::kF32;
    pr.sku.out = d.d.dtype;
    pr.sku.backend = Backend::kCublasLt;
    pr.sku.min_sm = is_block(d) ? 90 : 89;
    pr.sku.graph_capturable = true;
    if (caps.sm < 89)
      pr.rejection = "fp8 tensor cores need sm_89+ (device " + caps.arch_name() + ")";
    else if (is_block(d) && caps.sm != 90)
      pr.rejection = "block-wise fp8 scaling (cuBLASLt VEC128_32F / BLK128x128_32F) is implemented by cuBLAS 12.9+ on "
                     "sm_90 (Hopper) only, not on " + caps.arch_name() + "; we do not emulate it";
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    return lt_quant_prepare(fp8_problem(d), caps, pref);
  }
  static Status launch(const void* state, const Desc& d, const Fp8GemmArgs& a, Workspace ws, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const bool swap = d.d.order == MatrixOrder::kRowMajor;
    LtQuantPointers q;
    q.a = swap ? a.b : a.a;
    q.b = swap ? a.a : a.b;
    q.scale_a = swap ? a.scale_b : a.scale_a;
    q.scale_b = swap ? a.scale_a : a.scale_b;
    q.d = a.d;
    q.scale_d = d.d.dtype == DType::kE4M3 ? a.scale_d : nullptr;
    q.amax = d.amax ? a.amax : nullptr;
    q.bias = d.bias ? a.bias : nullptr;
    return lt_quant_launch(state, q, ws, s);
  }
};

}  // namespace

Status check_fp8_gemm_args(const Fp8GemmDescriptor& d, const Fp8GemmArgs& a) {
  if (d.m() == 0 || d.n() == 0) return Status::ok();  // nothing is read or written
  const bool block = is_block(d);
  const auto vec = [](DType t, std::int64_t n, int align) { return TensorLayout::contiguous(t, {n}, align); };
  return check_quant_operands({
      {"d", a.d, d.d.as_tensor(), true, true},
      {"amax", a.amax, vec(DType::kF32, 1, 4), d.amax, true},
      {"a", a.a, d.a.as_tensor(), true, false},
      {"b", a.b, d.b.as_tensor(), true, false},
      {"scale_a", a.scale_a, vec(DType::kF32, fp8_scale_count_a(d), block ? 16 : 4), true, false},
      {"scale_b", a.scale_b, vec(DType::kF32, fp8_scale_count_b(d), block ? 16 : 4), true, false},
      {"scale_d", a.scale_d, vec(DType::kF32, 1, 4), d.d.dtype == DType::kE4M3, false},
      {"bias", a.bias, vec(d.bias_dtype(), d.n(), 16), d.bias, false},
  });
}

}  // namespace gemm

template <>
struct FamilyTraits<Fp8GemmDescriptor> : gemm::OneCandidateTraits<Fp8GemmDescriptor, Fp8GemmArgs, gemm::Fp8Candidate> {
  static constexpr const char* kFamily = "fp8_gemm";
  static Status validate(const Fp8GemmDescriptor& d) { return gemm::validate_fp8(d); }
  static Status check_args(const Fp8GemmDescriptor& d, const Fp8GemmArgs& a) { return gemm::check_fp8_gemm_args(d, a); }
};

template class Plan<Fp8GemmDescriptor, Fp8GemmArgs>;

}  // namespace baracuda
