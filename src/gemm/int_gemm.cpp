// IntGemmPlan: int8 x int8 -> int32 on cuBLASLt (CUBLAS_COMPUTE_32I), and the scaled outputs
// (i8 / f16 / bf16 / f32) through our epilogue kernel over the int32 product in the workspace.
// One candidate, "cublaslt_imma". Rules in baracuda/ops/gemm_quant.hpp and docs/gemm.md.
#include <array>
#include <span>
#include <string>

#include "baracuda/ops/gemm_quant.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "gemm/int_epilogue.hpp"
#include "gemm/lt_quant.hpp"
#include "gemm/one_candidate.hpp"
#include "gemm/quant_checks.hpp"

namespace baracuda {

const char* quant_scale_name(QuantScale s) noexcept {
  switch (s) {
    case QuantScale::kNone: return "none";
    case QuantScale::kPerTensor: return "per_tensor";
    case QuantScale::kPerRow: return "per_row";
    case QuantScale::kPerColumn: return "per_column";
    case QuantScale::kBlock1x128: return "block1x128";
    case QuantScale::kBlock128x128: return "block128x128";
  }
  return "?";
}

std::size_t IntGemmDescriptor::hash() const noexcept {
  std::size_t h = gemm::quant_matrix_hash(a);
  h = detail::hash_combine(h, gemm::quant_matrix_hash(b));
  h = detail::hash_combine(h, gemm::quant_matrix_hash(d));
  return detail::hash_combine(h, static_cast<std::size_t>(scale_a) | (static_cast<std::size_t>(scale_b) << 4) |
                                     (std::size_t{bias} << 8));
}

std::string IntGemmDescriptor::to_string() const {
  return "int_gemm(a=" + gemm::quant_matrix_string(a) + ", b=" + gemm::quant_matrix_string(b) +
         ", d=" + gemm::quant_matrix_string(d) + ", scale_a=" + quant_scale_name(scale_a) +
         ", scale_b=" + quant_scale_name(scale_b) + (bias ? ", bias" : "") + ")";
}

namespace gemm {
namespace {

std::string s64(std::int64_t v) { return std::to_string(v); }

// Largest K whose int32 sum cannot overflow: K * 128 * 128 <= 2^31 - 1.
constexpr std::int64_t kMaxIntK = (std::int64_t{1} << 17) - 1;

bool d_is_i32(const IntGemmDescriptor& d) { return d.d.dtype == DType::kI32; }

// The int32 intermediate of the scaled outputs: D's order when cuBLASLt's "m" (the inner
// dimension of that order) is a multiple of 4, else the other order.
bool acc_row_major(const IntGemmDescriptor& d) {
  const bool row = d.d.order == MatrixOrder::kRowMajor;
  const bool d_order_ok = (row ? d.n() : d.m()) % 4 == 0;
  return d_order_ok ? row : !row;
}

MatrixLayout acc_layout(const IntGemmDescriptor& d) {
  const bool row = acc_row_major(d);
  return MatrixLayout{DType::kI32, d.m(), d.n(), row ? d.n() : d.m(), row ? MatrixOrder::kRowMajor : MatrixOrder::kColMajor,
                      256};
}

Status validate_int(const IntGemmDescriptor& d) {
  if (d.a.dtype != DType::kI8) return quant_invalid("a.dtype = " + std::string(dtype_name(d.a.dtype)) + ": IntGemmPlan takes i8");
  if (d.b.dtype != DType::kI8) return quant_invalid("b.dtype = " + std::string(dtype_name(d.b.dtype)) + ": IntGemmPlan takes i8");
  const DType t = d.d.dtype;
  if (t != DType::kI32 && t != DType::kI8 && t != DType::kF16 && t != DType::kBF16 && t != DType::kF32)
    return quant_invalid("d.dtype = " + std::string(dtype_name(t)) + ": IntGemmPlan writes i32, i8, f16, bf16 or f32");
  BARACUDA_TRY(check_tn_operands(d.a, d.b, d.d, 4, 4, "IntGemmPlan"));
  const std::int64_t m = d.m(), n = d.n(), k = d.k();
  if (k % 4 != 0) return quant_invalid("a.cols = K = " + s64(k) + " is not a multiple of 4 (cuBLASLt's int8 kernels)");
  if (k > kMaxIntK) return quant_invalid("a.cols = K = " + s64(k) + " > " + s64(kMaxIntK) + ": the int32 sum could overflow");
  const int size = static_cast<int>(dtype_size(t));
  if (d.d.alignment < size)
    return quant_invalid("d.alignment = " + s64(d.d.alignment) + " bytes is below one " + std::string(dtype_name(t)) + " element");
  const bool row = d.d.order == MatrixOrder::kRowMajor;
  if (t == DType::kI32) {
    if (d.scale_a != QuantScale::kNone || d.scale_b != QuantScale::kNone || d.bias)
      return quant_invalid(std::string("scale_a = ") + quant_scale_name(d.scale_a) + ", scale_b = " +
                           quant_scale_name(d.scale_b) + ", bias = " + (d.bias ? "true" : "false") +
                           " with d.dtype = i32: the int32 output is the exact product (scales and bias need i8, f16, "
                           "bf16 or f32 D)");
    if (d.d.ld % 4 != 0) return quant_invalid("d.ld = " + s64(d.d.ld) + " is not a multiple of 4 (cuBLASLt's int8 kernels)");
    const std::int64_t lt_m = row ? n : m;
    if (lt_m % 4 != 0)
      return quant_invalid(std::string(row ? "d.cols = N = " : "d.rows = M = ") + s64(lt_m) +
                           " is not a multiple of 4: cuBLASLt's int8 kernels need it for " +
                           (row ? "row-major" : "column-major") + " i32 D (its 'm')");
  } else {
    if (d.scale_a != QuantScale::kNone && d.scale_a != QuantScale::kPerTensor && d.scale_a != QuantScale::kPerRow)
      return quant_invalid(std::string("scale_a = ") + quant_scale_name(d.scale_a) + ": IntGemmPlan takes none, per_tensor or per_row");
    if (d.scale_b != QuantScale::kNone && d.scale_b != QuantScale::kPerTensor && d.scale_b != QuantScale::kPerColumn)
      return quant_invalid(std::string("scale_b = ") + quant_scale_name(d.scale_b) +
                           ": IntGemmPlan takes none, per_tensor or per_column");
    if (m % 4 != 0 && n % 4 != 0)
      return quant_invalid("d is " + s64(m) + " x " + s64(n) +
                           ": neither M nor N is a multiple of 4 (cuBLASLt's int8 kernels need one for the int32 product)");
  }
  return Status::ok();
}

LtQuantProblem int_problem(const IntGemmDescriptor& d) {
  LtQuantProblem p;
  const MatrixLayout out = d_is_i32(d) ? d.d : acc_layout(d);
  p.frame = lt_problem(quant_frame(d.a, d.b, out), false);
  p.kind = LtQuantKind::kInt8;
  p.type_a = p.type_b = DType::kI8;
  p.type_c = p.type_d = DType::kI32;
  if (!d_is_i32(d)) p.extra_workspace = static_cast<std::size_t>(d.m() * d.n()) * 4;
  return p;
}

struct IntCandidate {
  using Desc = IntGemmDescriptor;
  static Candidate<Desc, IntGemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, IntGemmArgs>::Probe pr;
    pr.sku.family = "int_gemm";
    pr.sku.impl = d_is_i32(d) ? "cublaslt_imma" : "cublaslt_imma_scaled";
    pr.sku.in = DType::kI8;
    pr.sku.compute = pr.sku.precision.accumulator = DType::kI32;
    pr.sku.out = d.d.dtype;
    pr.sku.backend = Backend::kCublasLt;
    pr.sku.min_sm = 80;
    pr.sku.graph_capturable = true;
    pr.workspace_bytes = d_is_i32(d) ? 0 : static_cast<std::size_t>(d.m() * d.n()) * 4;
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    return lt_quant_prepare(int_problem(d), caps, pref);
  }
  static Status launch(const void* state, const Desc& d, const IntGemmArgs& a, Workspace ws, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const bool swap = d_is_i32(d) ? d.d.order == MatrixOrder::kRowMajor : acc_row_major(d);
    LtQuantPointers q;
    q.a = swap ? a.b : a.a;
    q.b = swap ? a.a : a.b;
    if (d_is_i32(d)) {
      q.d = a.d;
      return lt_quant_launch(state, q, ws, s);
    }
    const std::size_t off = lt_quant_extra_offset(state);
    auto* acc = reinterpret_cast<std::int32_t*>(static_cast<char*>(ws.data) + off);
    q.d = acc;
    BARACUDA_TRY(lt_quant_launch(state, q, Workspace{ws.data, off}, s));
    IntEpilogueParams e;
    e.acc = acc;
    e.acc_row_major = swap;
    e.m = d.m();
    e.n = d.n();
    e.d = a.d;
    e.d_dtype = d.d.dtype;
    e.ld = d.d.ld;
    e.d_row_major = d.d.order == MatrixOrder::kRowMajor;
    e.scale_a = d.scale_a == QuantScale::kNone ? nullptr : a.scale_a;
    e.per_row_a = d.scale_a == QuantScale::kPerRow;
    e.scale_b = d.scale_b == QuantScale::kNone ? nullptr : a.scale_b;
    e.per_col_b = d.scale_b == QuantScale::kPerColumn;
    e.bias = d.bias ? a.bias : nullptr;
    return launch_int_epilogue(e, s);
  }
};

TensorLayout f32_vector(std::int64_t n) { return TensorLayout::contiguous(DType::kF32, {n}, 4); }

}  // namespace

Status check_int_gemm_args(const IntGemmDescriptor& d, const IntGemmArgs& a) {
  if (d.m() == 0 || d.n() == 0) return Status::ok();  // nothing is read or written
  const bool sa = d.scale_a != QuantScale::kNone, sb = d.scale_b != QuantScale::kNone;
  return check_quant_operands({
      {"d", a.d, d.d.as_tensor(), true, true},
      {"a", a.a, d.a.as_tensor(), true, false},
      {"b", a.b, d.b.as_tensor(), true, false},
      {"scale_a", a.scale_a, f32_vector(d.scale_a == QuantScale::kPerRow ? d.m() : 1), sa, false},
      {"scale_b", a.scale_b, f32_vector(d.scale_b == QuantScale::kPerColumn ? d.n() : 1), sb, false},
      {"bias", a.bias, f32_vector(d.n()), d.bias, false},
  });
}

}  // namespace gemm

template <>
struct FamilyTraits<IntGemmDescriptor> : gemm::OneCandidateTraits<IntGemmDescriptor, IntGemmArgs, gemm::IntCandidate> {
  static constexpr const char* kFamily = "int_gemm";
  static Status validate(const IntGemmDescriptor& d) { return gemm::validate_int(d); }
  static Status check_args(const IntGemmDescriptor& d, const IntGemmArgs& a) { return gemm::check_int_gemm_args(d, a); }
};

template class Plan<IntGemmDescriptor, IntGemmArgs>;

}  // namespace baracuda
