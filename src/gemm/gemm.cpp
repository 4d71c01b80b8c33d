// GemmPlan and BatchedGemmPlan: descriptor validation, the candidate table, run-time
// argument checks. Eight candidates, in this order:
//  * "cublaslt": cuBLASLt, strict compute (f64 for f64, f32 for the others: no TF32);
//  * "cublaslt_tf32": f32 only, CUBLAS_COMPUTE_32F_FAST_TF32 (PrecisionInfo::uses_tf32, so
//    select takes it only when PlanPreference::math.allow_tf32, and then after the strict one
//    unless that is skipped or another SKU is forced);
//  * "cublaslt_bgrad_reduce" / "cublaslt_tf32_bgrad_reduce": bias-gradient epilogues only,
//    the GEMM above without the epilogue followed by our reduction (bias_grad.hpp), where
//    cuBLASLt's BGRADA / BGRADB find no algorithm;
//  * "cublaslt_act" / "cublaslt_tf32_act": forward gelu_erf and silu (no cuBLASLt epilogue):
//    the plain GEMM, then our activation pass (act_epilogue.hpp);
//  * "cublaslt_dact" / "cublaslt_tf32_dact": the activation backward (activation_grad) where
//    cuBLASLt's DRELU / DGELU (+ BGRAD) cannot, or where the fused bias gradient is deferred
//    as slower (fused_bias_grad_deferral): the plain GEMM, our act'(aux) pass, and the
//    bias_grad.hpp reduction over D's columns for bias_grad kD.
// The cuBLASLt frame change, heuristic and launch are in lt_gemm.cpp.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>

#include "baracuda/ops/gemm.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "core/workspace_align.hpp"
#include "gemm/act_epilogue.hpp"
#include "gemm/bias_grad.hpp"
#include "gemm/lt_gemm.hpp"
#include "gemm/one_candidate.hpp"

namespace baracuda {

const char* gemm_activation_name(GemmActivation a) noexcept {
  switch (a) {
    case GemmActivation::kNone: return "none";
    case GemmActivation::kRelu: return "relu";
    case GemmActivation::kGeluTanh: return "gelu_tanh";
    case GemmActivation::kGeluErf: return "gelu_erf";
    case GemmActivation::kSilu: return "silu";
  }
  return "?";
}

std::string GemmEpilogue::to_string() const {
  if (activation_grad)
    return "d" + std::string(gemm_activation_name(activation)) + (bias_grad == GemmBiasGrad::kD ? "+bgrad_d" : "");
  if (bias_grad != GemmBiasGrad::kNone)
    return bias_grad == GemmBiasGrad::kA ? "bgrad_a" : bias_grad == GemmBiasGrad::kB ? "bgrad_b" : "bgrad_d";
  std::string s;
  if (bias) s = "bias";
  if (activation != GemmActivation::kNone) s += (s.empty() ? "" : "+") + std::string(gemm_activation_name(activation));
  if (aux) s += (s.empty() ? "" : "+") + std::string("aux");
  return s.empty() ? "none" : s;
}

namespace {
std::size_t matrix_hash(const MatrixLayout& m) { return m.as_tensor().hash(); }
std::string matrix_string(const MatrixLayout& m) {
  return m.as_tensor().to_string() + (m.order == MatrixOrder::kRowMajor ? "R" : "C");
}
}  // namespace

std::size_t GemmDescriptor::hash() const noexcept {
  std::size_t h = matrix_hash(a);
  for (const MatrixLayout* m : {&b, &c, &d, &aux}) h = detail::hash_combine(h, matrix_hash(*m));
  h = detail::hash_combine(h, bias.hash());
  h = detail::hash_combine(h, bias_grad.hash());
  const std::size_t e = static_cast<std::size_t>(epilogue.activation) | (std::size_t{epilogue.bias} << 4) |
                        (std::size_t{epilogue.aux} << 5) | (static_cast<std::size_t>(epilogue.bias_grad) << 6) |
                        (std::size_t{with_c} << 8) | (std::size_t{epilogue.activation_grad} << 9);
  return detail::hash_combine(h, e);
}

std::string GemmDescriptor::to_string() const {
  std::string s = "gemm(a=" + matrix_string(a) + ", b=" + matrix_string(b);
  if (with_c) s += ", c=" + matrix_string(c);
  s += ", d=" + matrix_string(d) + ", epilogue=" + epilogue.to_string();
  if (epilogue.bias) s += ", bias=" + bias.to_string();
  if (epilogue.bias_grad != GemmBiasGrad::kNone) s += ", bias_grad=" + bias_grad.to_string();
  if (epilogue.aux) s += ", aux=" + matrix_string(aux);
  return s + ")";
}

std::size_t BatchedGemmDescriptor::hash() const noexcept {
  std::size_t h = gemm.hash();
  for (std::int64_t v : {batch, stride_a, stride_b, stride_c, stride_d, stride_bias, stride_aux})
    h = detail::hash_combine(h, static_cast<std::size_t>(v));
  return h;
}

std::string BatchedGemmDescriptor::to_string() const {
  return "batched_" + gemm.to_string() + " x " + std::to_string(batch) + " strides{a=" + std::to_string(stride_a) +
         ", b=" + std::to_string(stride_b) + ", c=" + std::to_string(stride_c) + ", d=" + std::to_string(stride_d) +
         ", bias=" + std::to_string(stride_bias) + ", aux=" + std::to_string(stride_aux) + "}";
}

TensorLayout gemm_batched_layout(const TensorLayout& m, std::int64_t batch, std::int64_t stride) {
  TensorLayout t;
  t.dtype = m.dtype;
  t.alignment = m.alignment;
  t.rank = m.rank + 1;
  t.shape[0] = batch;
  t.strides[0] = stride;
  for (int i = 0; i < m.rank; ++i) {
    t.shape[i + 1] = m.shape[i];
    t.strides[i + 1] = m.strides[i];
  }
  return t;
}

namespace gemm {

namespace {

Status invalid(const std::string& msg) { return Status(Code::kInvalidArgument, msg); }
std::string str(std::int64_t v) { return std::to_string(v); }
std::string dt(DType t) { return std::string(dtype_name(t)); }

Status check_dtype(const MatrixLayout& m, const char* field, DType want, const char* want_field) {
  if (m.dtype != want)
    return invalid(std::string(field) + ".dtype = " + dt(m.dtype) + " differs from " + want_field + ".dtype = " + dt(want));
  return Status::ok();
}

Status check_alignment_covers_element(int alignment, DType t, const char* field) {
  const int size = static_cast<int>(dtype_size(t));
  if (size > 0 && alignment < size)
    return invalid(std::string(field) + ".alignment = " + std::to_string(alignment) + " bytes is below one " + dt(t) +
                   " element (" + std::to_string(size) + " bytes)");
  return Status::ok();
}

Status check_extent(const MatrixLayout& m, const char* field, std::int64_t rows, std::int64_t cols, const char* why) {
  if (m.rows != rows || m.cols != cols)
    return invalid(std::string(field) + " is " + str(m.rows) + " x " + str(m.cols) + ", needs " + str(rows) + " x " +
                   str(cols) + " (" + why + ")");
  return Status::ok();
}

// A [n] unit-stride vector of dtype t.
Status check_vector(const TensorLayout& v, const char* field, std::int64_t n, const char* n_name, DType t) {
  BARACUDA_TRY(validate_layout(v, field));
  if (v.dtype != t) return invalid(std::string(field) + ".dtype = " + dt(v.dtype) + " differs from d.dtype = " + dt(t));
  if (v.rank != 1 || v.shape[0] != n)
    return invalid(std::string(field) + " = " + v.to_string() + " must be [" + str(n) + "] (" + n_name + ")");
  if (n > 1 && v.strides[0] != 1)
    return invalid(std::string(field) + " = " + v.to_string() + " has stride " + str(v.strides[0]) + " (cuBLASLt needs 1)");
  return check_alignment_covers_element(v.alignment, t, field);
}

// The activation backward (DRELU / DGELU (+ BGRAD) and our composite): what it excludes.
Status validate_activation_grad(const GemmDescriptor& g) {
  const GemmEpilogue& e = g.epilogue;
  const std::string name = e.to_string();
  if (e.activation == GemmActivation::kNone)
    return invalid("epilogue.activation_grad = true with activation none: name the forward's activation");
  if (!e.aux)
    return invalid("epilogue " + name + " needs epilogue.aux = true (aux is its input: the forward's relu mask or "
                   "pre-activation)");
  if (e.bias)
    return invalid("epilogue.bias = true with activation_grad: the backward adds no bias (bias_grad = kD gives its gradient)");
  if (g.with_c) return invalid("with_c = true with epilogue " + name + ": the activation backward takes no C");
  if (g.d.dtype == DType::kF64)
    return invalid("d.dtype = f64 with epilogue " + name +
                   ": cuBLASLt's DRELU / DGELU take f32, f16 and bf16, and so does our activation-gradient pass");
  return Status::ok();
}

}  // namespace

Status validate_gemm(const GemmDescriptor& g) {
  BARACUDA_TRY(validate_matrix(g.a, "a"));
  BARACUDA_TRY(validate_matrix(g.b, "b"));
  BARACUDA_TRY(validate_matrix(g.d, "d"));
  const DType t = g.a.dtype;
  if (t != DType::kF64 && t != DType::kF32 && t != DType::kF16 && t != DType::kBF16)
    return invalid("a.dtype = " + dt(t) + ": gemm takes f64, f32, f16 or bf16 (int8: IntGemmPlan; fp8: Fp8GemmPlan)");
  BARACUDA_TRY(check_dtype(g.b, "b", t, "a"));
  BARACUDA_TRY(check_dtype(g.d, "d", t, "a"));
  if (g.b.rows != g.a.cols) return invalid("b.rows = " + str(g.b.rows) + " differs from a.cols = " + str(g.a.cols) + " (K)");
  BARACUDA_TRY(check_extent(g.d, "d", g.a.rows, g.b.cols, "a.rows x b.cols"));
  BARACUDA_TRY(check_alignment_covers_element(g.a.alignment, t, "a"));
  BARACUDA_TRY(check_alignment_covers_element(g.b.alignment, t, "b"));
  BARACUDA_TRY(check_alignment_covers_element(g.d.alignment, t, "d"));
  if (g.with_c) {
    BARACUDA_TRY(validate_matrix(g.c, "c"));
    BARACUDA_TRY(check_dtype(g.c, "c", t, "a"));
    BARACUDA_TRY(check_extent(g.c, "c", g.d.rows, g.d.cols, "D's shape"));
    if (g.c.order != g.d.order) return invalid("c.order differs from d.order (cuBLASLt cannot transpose C)");
    BARACUDA_TRY(check_alignment_covers_element(g.c.alignment, t, "c"));
  }
  const GemmEpilogue& e = g.epilogue;
  if (e.activation_grad) BARACUDA_TRY(validate_activation_grad(g));
  if (e.bias_grad == GemmBiasGrad::kD) {
    if (!e.activation_grad)
      return invalid("epilogue.bias_grad = bgrad_d without activation_grad (the column sums of D are the activation "
                     "backward's bias gradient; use kA / kB for an operand's sums)");
    BARACUDA_TRY(check_vector(g.bias_grad, "bias_grad", g.d.cols, "N, sums of D's columns", t));
  } else if (e.bias_grad != GemmBiasGrad::kNone) {
    if (e.bias || e.aux || e.activation != GemmActivation::kNone)
      return invalid("epilogue.bias_grad with bias, an activation or aux: the bias gradient epilogue stands alone");
    const bool of_a = e.bias_grad == GemmBiasGrad::kA;
    BARACUDA_TRY(check_vector(g.bias_grad, "bias_grad", of_a ? g.a.rows : g.b.cols, of_a ? "M, sums of A's rows" : "N, sums of B's columns", t));
  }
  if (e.bias) BARACUDA_TRY(check_vector(g.bias, "bias", g.d.cols, "N", t));
  if (e.aux) {
    if (e.activation == GemmActivation::kNone) return invalid("epilogue.aux = true without an activation (aux is its backward input)");
    BARACUDA_TRY(validate_matrix(g.aux, "aux"));
    BARACUDA_TRY(check_extent(g.aux, "aux", g.d.rows, g.d.cols, "D's shape"));
    if (g.aux.order != g.d.order) return invalid("aux.order differs from d.order");
    const bool relu = e.activation == GemmActivation::kRelu;
    const DType want = relu ? DType::kBit : t;
    if (g.aux.dtype != want)
      return invalid("aux.dtype = " + dt(g.aux.dtype) + ": " +
                     (relu ? std::string("relu's aux is a bit mask (bit)")
                           : std::string(gemm_activation_name(e.activation)) + "'s aux has d's dtype " + dt(t)));
    const std::int64_t multiple = relu ? 128 : 8;
    // cuBLASLt writes relu's and gelu_tanh's aux; the composite activations' aux is ours
    if (!is_composite_activation(e.activation) && g.aux.ld % multiple != 0)
      return invalid("aux.ld = " + str(g.aux.ld) + " is not a multiple of " + str(multiple) + (relu ? " bits" : " elements") +
                     " (cuBLASLt's rule)");
    if (!relu) BARACUDA_TRY(check_alignment_covers_element(g.aux.alignment, t, "aux"));
  }
  return Status::ok();
}

namespace {

// One output matrix of a batch must not reach into the next one.
Status check_output_stride(std::int64_t batch, std::int64_t stride, std::int64_t span, const char* field) {
  if (batch <= 1) return Status::ok();
  if (stride < span)
    return invalid(std::string("stride_") + field + " = " + str(stride) + " is below the " + str(span) +
                   " elements one " + field + " spans: the batch's outputs would overlap");
  return Status::ok();
}

std::int64_t span_of(const MatrixLayout& m) { return m.as_tensor().element_span().end_offset; }

}  // namespace

Status validate_batched(const BatchedGemmDescriptor& b) {
  BARACUDA_TRY(validate_gemm(b.gemm));
  if (b.batch < 0 || b.batch > INT32_MAX) return invalid("batch = " + str(b.batch) + " (needs 0 <= batch < 2^31)");
  const std::pair<std::int64_t, const char*> strides[] = {{b.stride_a, "a"},       {b.stride_b, "b"},   {b.stride_c, "c"},
                                                          {b.stride_d, "d"},       {b.stride_bias, "bias"}, {b.stride_aux, "aux"}};
  for (const auto& [s, f] : strides)
    if (s < 0) return invalid(std::string("stride_") + f + " = " + str(s) + " is negative");
  const GemmDescriptor& g = b.gemm;
  // What each operand spans over the batch (its offsets) within 64-bit indexing.
  const GemmEpilogue& e = g.epilogue;
  const std::tuple<TensorLayout, std::int64_t, const char*, bool> spans[] = {
      {g.a.as_tensor(), b.stride_a, "a (batched)", true},
      {g.b.as_tensor(), b.stride_b, "b (batched)", true},
      {g.c.as_tensor(), b.stride_c, "c (batched)", g.with_c},
      {g.d.as_tensor(), b.stride_d, "d (batched)", true},
      {g.bias, b.stride_bias, "bias (batched)", e.bias},
      {g.bias_grad, b.stride_bias, "bias_grad (batched)", e.bias_grad != GemmBiasGrad::kNone},
      {g.aux.as_tensor(), b.stride_aux, "aux (batched)", e.aux}};
  for (const auto& [one, stride, field, used] : spans)
    if (used) BARACUDA_TRY(validate_layout(gemm_batched_layout(one, b.batch, stride), field));
  BARACUDA_TRY(check_output_stride(b.batch, b.stride_d, span_of(g.d), "d"));
  if (g.epilogue.bias_grad != GemmBiasGrad::kNone)
    BARACUDA_TRY(check_output_stride(b.batch, b.stride_bias, g.bias_grad.numel(), "bias"));
  if (g.epilogue.aux) {
    if (!g.epilogue.activation_grad)  // an output of the forward; the backward only reads it
      BARACUDA_TRY(check_output_stride(b.batch, b.stride_aux, span_of(g.aux), "aux"));
    const std::int64_t multiple = g.epilogue.activation == GemmActivation::kRelu ? 128 : 8;
    if (b.batch > 1 && !is_composite_activation(g.epilogue.activation) && b.stride_aux % multiple != 0)
      return invalid("stride_aux = " + str(b.stride_aux) + " is not a multiple of " + str(multiple) + " (cuBLASLt's rule)");
  }
  return Status::ok();
}

// ------------------------------------------------------------------------------ run-time checks
namespace {

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

struct Operand {
  const char* field;
  const void* ptr;
  TensorLayout span;  // every batch
  bool used;
};

}  // namespace

Status check_gemm_args(const BatchedGemmDescriptor& b, const GemmArgs& a, const GemmArgNames& names) {
  const GemmDescriptor& g = b.gemm;
  const GemmEpilogue& e = g.epilogue;
  const bool bgrad = e.bias_grad != GemmBiasGrad::kNone;
  const std::int64_t n = b.batch;
  // aux is the forward's output, and the activation backward's input
  const TensorLayout aux_span = gemm_batched_layout(g.aux.as_tensor(), n, b.stride_aux);
  const std::array<Operand, 5> inputs = {{
      {names.a, a.a, gemm_batched_layout(g.a.as_tensor(), n, b.stride_a), true},
      {names.b, a.b, gemm_batched_layout(g.b.as_tensor(), n, b.stride_b), true},
      {names.c, a.c, gemm_batched_layout(g.c.as_tensor(), n, b.stride_c), g.with_c},
      {names.bias, a.bias, gemm_batched_layout(g.bias, n, b.stride_bias), e.bias},
      {names.aux, a.aux, aux_span, e.aux && e.activation_grad},
  }};
  const std::array<Operand, 3> outputs = {{
      {names.d, a.d, gemm_batched_layout(g.d.as_tensor(), n, b.stride_d), true},
      {names.aux, a.aux, aux_span, e.aux && !e.activation_grad},
      {names.bias_grad, a.bias_grad, gemm_batched_layout(g.bias_grad, n, b.stride_bias), bgrad},
  }};
  if (g.m() == 0 || g.n() == 0 || n == 0) return Status::ok();  // nothing is read or written
  if (bgrad && a.alpha != 1.0)
    return invalid("args.alpha = " + std::to_string(a.alpha) +
                   " with epilogue " + e.to_string() + ": the bias gradient is of the unscaled operand; use alpha = 1");
  auto check_one = [](const Operand& o) -> Status {
    if (!o.used) return Status::ok();
    if (o.ptr == nullptr) return invalid(std::string("args.") + o.field + " is null");
    if (pointer_alignment(o.ptr) < o.span.alignment)
      return Status(Code::kMisaligned, std::string("args.") + o.field + " = " + hex(o.ptr) + " is not aligned to " + o.field +
                                           ".alignment = " + std::to_string(o.span.alignment) + " bytes");
    return Status::ok();
  };
  for (const auto& o : outputs) BARACUDA_TRY(check_one(o));
  for (const auto& i : inputs) BARACUDA_TRY(check_one(i));
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const Operand& out = outputs[o];
    if (!out.used) continue;
    for (std::size_t o2 = o + 1; o2 < outputs.size(); ++o2)
      if (outputs[o2].used && byte_ranges_overlap(out.ptr, out.span, outputs[o2].ptr, outputs[o2].span))
        return invalid(std::string("args.") + out.field + " and args." + outputs[o2].field + " overlap (outputs must be distinct)");
    for (const auto& in : inputs) {
      if (!in.used || !byte_ranges_overlap(out.ptr, out.span, in.ptr, in.span)) continue;
      // cuBLASLt computes in place only for C == D with one layout
      const bool in_place = o == 0 && &in == &inputs[2] && in.ptr == out.ptr && g.c == g.d &&
                            b.stride_c == b.stride_d;
      if (!in_place)
        return invalid(std::string("args.") + out.field + " overlaps args." + in.field +
                       " (only c may alias d, with the same pointer, layout and batch stride)");
    }
  }
  return Status::ok();
}

// ------------------------------------------------------------------------------ candidates
namespace {

template <class Desc>
const GemmDescriptor& gemm_of(const Desc& d) {
  if constexpr (std::is_same_v<Desc, BatchedGemmDescriptor>) return d.gemm;
  else return d;
}

template <class Desc>
std::int64_t batch_of(const Desc& d) {
  if constexpr (std::is_same_v<Desc, BatchedGemmDescriptor>) return d.batch;
  else return 1;
}

// bias_grad kD of an activation backward: the column sums of D (x = column j, y = row i).
template <class Desc>
BiasGradParams dact_bias_grad_shape(const Desc& d) {
  const GemmDescriptor& g = gemm_of(d);
  const bool row = g.d.order == MatrixOrder::kRowMajor;
  BiasGradParams b;
  b.x_count = g.d.cols;
  b.y_count = g.d.rows;
  b.sx = row ? 1 : g.d.ld;
  b.sy = row ? g.d.ld : 1;
  b.out_stride = g.bias_grad.strides[0];
  b.batch = batch_of(d);
  if constexpr (std::is_same_v<Desc, BatchedGemmDescriptor>) {
    b.in_batch_stride = d.stride_d;
    b.out_batch_stride = d.stride_bias;
  }
  return b;
}

// cuBLASLt's fused DGELU_BGRAD / DRELU_BGRAD measured slower than cublaslt_dact (the plain
// GEMM, our act' pass and the column reduction) wherever that reduction takes the bias
// gradient: bf16 4096^3 0.335 / 0.294 ms fused against 0.236 / 0.228 composite, 2048x14336x4096
// 0.575 / 0.557 against 0.439 / 0.389 (H100, session 17). The fused one is deferred there.
template <class Desc>
std::string fused_bias_grad_deferral(const Desc& d) {
  const GemmDescriptor& g = gemm_of(d);
  if (!g.epilogue.activation_grad || g.epilogue.bias_grad != GemmBiasGrad::kD) return {};
  if (!bias_grad_by_columns(g.d.dtype, dact_bias_grad_shape(d), g.d.alignment, g.bias_grad.alignment)) return {};
  return "cublaslt_dact (GEMM, act' pass, column reduction) measured faster than the fused bias-gradient epilogue";
}

template <class Desc, bool kTf32>
struct LtCandidate {
  using Self = LtCandidate;
  static typename Candidate<Desc, GemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    typename Candidate<Desc, GemmArgs>::Probe pr;
    const GemmDescriptor& g = gemm_of(d);
    pr.sku = lt_sku(g.d.dtype, kTf32);
    if (kTf32 && g.d.dtype != DType::kF32) pr.rejection = "tf32 applies to f32 only (dtype " + dt(g.d.dtype) + ")";
    else pr.rejection = lt_rejection(g);
    pr.deferral = fused_bias_grad_deferral(d);
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    return lt_prepare(lt_problem(d, kTf32), caps, pref);
  }
  static Status launch(const void* state, const Desc&, const GemmArgs& a, Workspace ws, cudaStream_t s) {
    return lt_launch(state, a, ws, s);
  }
  static constexpr Candidate<Desc, GemmArgs> make() { return {&probe, &prepare_without_preference<Self, Desc>, &launch}; }
};

template <class Desc>
GemmDescriptor& gemm_of(Desc& d) {
  if constexpr (std::is_same_v<Desc, BatchedGemmDescriptor>) return d.gemm;
  else return d;
}

// The bias-gradient reduction over one operand of `d` (pointers filled in at launch).
template <class Desc>
BiasGradParams bias_grad_shape(const Desc& d) {
  const GemmDescriptor& g = gemm_of(d);
  const bool of_a = g.epilogue.bias_grad == GemmBiasGrad::kA;
  const MatrixLayout& m = of_a ? g.a : g.b;  // A: M x K, B: K x N
  const std::int64_t rs = m.order == MatrixOrder::kRowMajor ? m.ld : 1;
  const std::int64_t cs = m.order == MatrixOrder::kRowMajor ? 1 : m.ld;
  BiasGradParams p;
  p.x_count = of_a ? m.rows : m.cols;  // A: sums of rows i; B: sums of columns j
  p.y_count = of_a ? m.cols : m.rows;  // over k
  p.sx = of_a ? rs : cs;
  p.sy = of_a ? cs : rs;
  p.out_stride = g.bias_grad.strides[0];
  p.batch = batch_of(d);
  if constexpr (std::is_same_v<Desc, BatchedGemmDescriptor>) {
    p.in_batch_stride = of_a ? d.stride_a : d.stride_b;
    p.out_batch_stride = d.stride_bias;
  }
  return p;
}

struct BgradReduceState {
  std::shared_ptr<const void> lt;  // the cuBLASLt GEMM without the bias-gradient epilogue
  std::size_t lt_workspace = 0;    // its share of the workspace; the reduction's partials follow
  BiasGradPlan bias_grad;
  bool of_a = true;
};

// The workspace of a cuBLASLt GEMM followed by a bias-gradient reduction: the GEMM's bytes
// rounded up to kWorkspaceAlignment, then the reduction's partials (the two run one after
// the other on the stream but are kept apart, so neither constrains the other's layout).
std::size_t lt_then_reduce_workspace(std::size_t lt_bytes, const BiasGradPlan& bg) {
  if (bg.workspace == 0) return lt_bytes;
  return align_workspace(lt_bytes) + bg.workspace;
}
// The column reduction only while the whole workspace stays within the preference's cap;
// past it the workspace-free kernels of bias_grad.cuh (the GEMM's own share is capped by
// lt_prepare already).
BiasGradPlan within_workspace_cap(BiasGradPlan bg, std::size_t lt_bytes, const PlanPreference& pref) {
  if (bg.column_stream && lt_then_reduce_workspace(lt_bytes, bg) > pref.max_workspace_bytes) {
    bg.column_stream = false;
    bg.workspace = 0;
  }
  return bg;
}
void* reduce_partials(Workspace ws, std::size_t lt_bytes) {
  return static_cast<unsigned char*>(ws.data) + align_workspace(lt_bytes);
}

// cuBLASLt with no bias-gradient epilogue, then our deterministic reduction of the operand
// (bias_grad.hpp): accepts every bias-gradient case cuBLASLt's GEMM itself accepts, for the
// layouts where BGRADA / BGRADB find no algorithm (on the H200 with cuBLAS 13.1: A
// row-major for bgrad_a, B column-major for bgrad_b) and for f64.
template <class Desc, bool kTf32>
struct BgradReduceCandidate {
  using Self = BgradReduceCandidate;
  static Desc without_bias_grad(const Desc& d) {
    Desc plain = d;
    gemm_of(plain).epilogue.bias_grad = GemmBiasGrad::kNone;
    return plain;
  }
  static typename Candidate<Desc, GemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    typename Candidate<Desc, GemmArgs>::Probe pr;
    const GemmDescriptor& g = gemm_of(d);
    pr.sku = lt_sku(g.d.dtype, kTf32);
    pr.sku.impl = kTf32 ? "cublaslt_tf32_bgrad_reduce" : "cublaslt_bgrad_reduce";
    pr.sku.backend = Backend::kHand;  // a cuBLASLt GEMM and our reduction kernel
    if (g.epilogue.bias_grad == GemmBiasGrad::kNone) pr.rejection = "only for a bias-gradient epilogue";
    else if (g.epilogue.activation_grad) pr.rejection = "bias gradient of an activation backward: the cublaslt_dact candidates run it";
    else if (kTf32 && g.d.dtype != DType::kF32) pr.rejection = "tf32 applies to f32 only (dtype " + dt(g.d.dtype) + ")";
    else pr.rejection = lt_rejection(gemm_of(without_bias_grad(d)));
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    auto inner = lt_prepare(lt_problem(without_bias_grad(d), kTf32), caps, pref);
    if (!inner) return inner.error();
    const GemmDescriptor& g = gemm_of(d);
    auto st = std::make_shared<BgradReduceState>();
    st->lt = std::move(inner->state);
    st->lt_workspace = inner->workspace_bytes;
    st->of_a = g.epilogue.bias_grad == GemmBiasGrad::kA;
    st->bias_grad = within_workspace_cap(plan_bias_grad(g.d.dtype, bias_grad_shape(d), st->of_a ? g.a.alignment : g.b.alignment,
                                                        g.bias_grad.alignment, caps),
                                         st->lt_workspace, pref);
    return PreparedCandidate{st, lt_then_reduce_workspace(st->lt_workspace, st->bias_grad)};
  }
  static Status launch(const void* state, const Desc& d, const GemmArgs& a, Workspace ws, cudaStream_t s) {
    // Empty M, N or batch: nothing is written, bias_grad included (check_gemm_args checked no pointer)
    if (gemm_of(d).m() == 0 || gemm_of(d).n() == 0 || batch_of(d) == 0) return Status::ok();
    const auto& st = *static_cast<const BgradReduceState*>(state);
    BARACUDA_TRY(lt_launch(st.lt.get(), a, Workspace{ws.data, st.lt_workspace}, s));
    return launch_bias_grad(st.bias_grad, st.of_a ? a.a : a.b, a.bias_grad, reduce_partials(ws, st.lt_workspace), s);
  }
  static constexpr Candidate<Desc, GemmArgs> make() { return {&probe, &prepare_without_preference<Self, Desc>, &launch}; }
};

// The elementwise pass over D (and aux, in D's order) of the composite candidates; pointers
// are filled in at launch.
template <class Desc>
ActEpilogueParams act_shape(const Desc& d) {
  const GemmDescriptor& g = gemm_of(d);
  const bool row = g.d.order == MatrixOrder::kRowMajor;
  ActEpilogueParams p;
  p.batch = batch_of(d);
  p.outer = row ? g.d.rows : g.d.cols;
  p.inner = row ? g.d.cols : g.d.rows;
  p.d_ld = g.d.ld;
  p.aux_ld = g.aux.ld;
  if constexpr (std::is_same_v<Desc, BatchedGemmDescriptor>) {
    p.d_batch_stride = d.stride_d;
    p.aux_batch_stride = d.stride_aux;
  }
  switch (g.epilogue.activation) {
    case GemmActivation::kRelu: p.act = ActKind::kRelu; break;
    case GemmActivation::kGeluTanh: p.act = ActKind::kGeluTanh; break;
    case GemmActivation::kSilu: p.act = ActKind::kSilu; break;
    default: p.act = ActKind::kGeluErf; break;
  }
  return p;
}

struct ActState {
  std::shared_ptr<const void> lt;  // the cuBLASLt GEMM (bias epilogue only)
  ActEpilogueParams shape;         // pointers filled in at launch
  DType dtype = DType::kF32;
};

// The activations cuBLASLt has no epilogue for (gelu_erf, silu): cuBLASLt writes the
// pre-activation to D (with its BIAS epilogue when there is a bias), then our elementwise
// pass (act_epilogue.hpp) copies it to aux when wanted and applies the activation in place.
template <class Desc, bool kTf32>
struct ActCandidate {
  using Self = ActCandidate;
  static Desc without_activation(const Desc& d) {
    Desc plain = d;
    gemm_of(plain).epilogue.activation = GemmActivation::kNone;
    gemm_of(plain).epilogue.aux = false;
    return plain;
  }
  static typename Candidate<Desc, GemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    typename Candidate<Desc, GemmArgs>::Probe pr;
    const GemmDescriptor& g = gemm_of(d);
    pr.sku = lt_sku(g.d.dtype, kTf32);
    pr.sku.impl = kTf32 ? "cublaslt_tf32_act" : "cublaslt_act";
    pr.sku.backend = Backend::kHand;  // a cuBLASLt GEMM and our activation pass
    if (!is_composite_activation(g.epilogue.activation) || g.epilogue.activation_grad)
      pr.rejection = "only for the forward of gelu_erf and silu";
    else if (g.d.dtype == DType::kF64) pr.rejection = "activation " + std::string(gemm_activation_name(g.epilogue.activation)) + " with f64: the activation pass takes f32, f16 and bf16";
    else if (kTf32 && g.d.dtype != DType::kF32) pr.rejection = "tf32 applies to f32 only (dtype " + dt(g.d.dtype) + ")";
    else pr.rejection = lt_rejection(gemm_of(without_activation(d)));
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    auto inner = lt_prepare(lt_problem(without_activation(d), kTf32), caps, pref);
    if (!inner) return inner.error();
    auto st = std::make_shared<ActState>();
    st->lt = std::move(inner->state);
    st->shape = act_shape(d);
    st->dtype = gemm_of(d).d.dtype;
    if (!gemm_of(d).epilogue.aux) st->shape.aux_ld = 0;
    return PreparedCandidate{st, inner->workspace_bytes};
  }
  static Status launch(const void* state, const Desc& d, const GemmArgs& a, Workspace ws, cudaStream_t s) {
    const auto& st = *static_cast<const ActState*>(state);
    BARACUDA_TRY(lt_launch(st.lt.get(), a, ws, s));
    ActEpilogueParams p = st.shape;
    p.d = a.d;
    p.aux = gemm_of(d).epilogue.aux ? a.aux : nullptr;
    return launch_act_epilogue(st.dtype, p, s);
  }
  static constexpr Candidate<Desc, GemmArgs> make() { return {&probe, &prepare_without_preference<Self, Desc>, &launch}; }
};

struct DactState {
  std::shared_ptr<const void> lt;  // the plain cuBLASLt GEMM
  std::size_t lt_workspace = 0;    // its share of the workspace; the reduction's partials follow
  ActEpilogueParams act;           // D = D .* act'(aux)
  BiasGradPlan bias_grad;          // column sums of D
  bool with_bias_grad = false;
  DType dtype = DType::kF32;
};

// The activation backward where cuBLASLt's DRELU / DGELU (+ BGRAD) cannot run it (gelu_erf
// and silu, which have no cuBLASLt epilogue; bias_grad kD with column-major D; layouts or
// alignments for which the heuristic finds no fused algorithm): cuBLASLt writes alpha A B to
// D, our elementwise pass (act_epilogue.hpp) multiplies by act'(aux) in place, and the
// bias-gradient reduction (bias_grad.hpp, deterministic) sums D's columns.
template <class Desc, bool kTf32>
struct DactCandidate {
  using Self = DactCandidate;
  static Desc plain(const Desc& d) {
    Desc p = d;
    gemm_of(p).epilogue = GemmEpilogue{};
    return p;
  }
  static typename Candidate<Desc, GemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    typename Candidate<Desc, GemmArgs>::Probe pr;
    const GemmDescriptor& g = gemm_of(d);
    pr.sku = lt_sku(g.d.dtype, kTf32);
    pr.sku.impl = kTf32 ? "cublaslt_tf32_dact" : "cublaslt_dact";
    pr.sku.backend = Backend::kHand;  // a cuBLASLt GEMM, our gradient pass and reduction
    if (!g.epilogue.activation_grad) pr.rejection = "only for an activation backward (epilogue.activation_grad)";
    else if (g.epilogue.bias_grad == GemmBiasGrad::kD && batch_of(d) > 65535)
      pr.rejection = "batch = " + std::to_string(batch_of(d)) + " > 65535 with the bias-gradient reduction (one grid row per batch)";
    else if (kTf32 && g.d.dtype != DType::kF32) pr.rejection = "tf32 applies to f32 only (dtype " + dt(g.d.dtype) + ")";
    else pr.rejection = lt_rejection(gemm_of(plain(d)));
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    auto inner = lt_prepare(lt_problem(plain(d), kTf32), caps, pref);
    if (!inner) return inner.error();
    auto st = std::make_shared<DactState>();
    st->lt = std::move(inner->state);
    st->lt_workspace = inner->workspace_bytes;
    st->act = act_shape(d);
    const GemmDescriptor& g = gemm_of(d);
    st->dtype = g.d.dtype;
    st->with_bias_grad = g.epilogue.bias_grad == GemmBiasGrad::kD;
    std::string deferral;
    if (st->with_bias_grad) {
      const BiasGradPlan wanted =
          plan_bias_grad(g.d.dtype, dact_bias_grad_shape(d), g.d.alignment, g.bias_grad.alignment, caps);
      st->bias_grad = within_workspace_cap(wanted, st->lt_workspace, pref);
      // The column reduction is what makes this composite faster than cuBLASLt's fused
      // DGELU/DRELU_BGRAD (fused_bias_grad_deferral); without it, the fused one goes first.
      if (wanted.column_stream && !st->bias_grad.column_stream)
        deferral = "the column reduction's " + std::to_string(wanted.workspace) +
                   " bytes of partials exceed max_workspace_bytes: the bias gradient falls back to a kernel per column";
    }
    return PreparedCandidate{st, lt_then_reduce_workspace(st->lt_workspace, st->bias_grad), std::move(deferral)};
  }
  static Status launch(const void* state, const Desc&, const GemmArgs& a, Workspace ws, cudaStream_t s) {
    const auto& st = *static_cast<const DactState*>(state);
    if (st.act.batch == 0 || st.act.outer == 0 || st.act.inner == 0) return Status::ok();  // empty: nothing is written
    BARACUDA_TRY(lt_launch(st.lt.get(), a, Workspace{ws.data, st.lt_workspace}, s));
    ActEpilogueParams p = st.act;
    p.d = a.d;
    p.aux = a.aux;
    BARACUDA_TRY(launch_act_grad_epilogue(st.dtype, p, s));
    if (!st.with_bias_grad) return Status::ok();
    return launch_bias_grad(st.bias_grad, a.d, a.bias_grad, reduce_partials(ws, st.lt_workspace), s);
  }
  static constexpr Candidate<Desc, GemmArgs> make() { return {&probe, &prepare_without_preference<Self, Desc>, &launch}; }
};

// Fused cuBLASLt first; the composites where the fused epilogue is refused or deferred
// (fused_bias_grad_deferral).
template <class Desc>
inline constexpr std::array<Candidate<Desc, GemmArgs>, 8> kCandidates = {
    LtCandidate<Desc, false>::make(),         LtCandidate<Desc, true>::make(),  BgradReduceCandidate<Desc, false>::make(),
    BgradReduceCandidate<Desc, true>::make(), ActCandidate<Desc, false>::make(), ActCandidate<Desc, true>::make(),
    DactCandidate<Desc, false>::make(),       DactCandidate<Desc, true>::make()};

template <class Desc>
Expected<PreparedCandidate> prepare_candidate(std::size_t i, const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
  switch (i) {
    case 0: return LtCandidate<Desc, false>::prepare_pref(d, caps, pref);
    case 1: return LtCandidate<Desc, true>::prepare_pref(d, caps, pref);
    case 2: return BgradReduceCandidate<Desc, false>::prepare_pref(d, caps, pref);
    case 3: return BgradReduceCandidate<Desc, true>::prepare_pref(d, caps, pref);
    case 4: return ActCandidate<Desc, false>::prepare_pref(d, caps, pref);
    case 5: return ActCandidate<Desc, true>::prepare_pref(d, caps, pref);
    case 6: return DactCandidate<Desc, false>::prepare_pref(d, caps, pref);
    default: return DactCandidate<Desc, true>::prepare_pref(d, caps, pref);
  }
}

BatchedGemmDescriptor as_batched(const GemmDescriptor& g) {
  BatchedGemmDescriptor b;
  b.gemm = g;
  return b;
}

}  // namespace
}  // namespace gemm

template <>
struct FamilyTraits<GemmDescriptor> {
  static constexpr const char* kFamily = "gemm";
  static Status validate(const GemmDescriptor& d) { return gemm::validate_gemm(d); }
  static std::span<const Candidate<GemmDescriptor, GemmArgs>> candidates() { return gemm::kCandidates<GemmDescriptor>; }
  static Expected<PreparedCandidate> prepare_with_preference(std::size_t i, const GemmDescriptor& d, const DeviceCaps& caps,
                                                             const PlanPreference& pref) {
    return gemm::prepare_candidate(i, d, caps, pref);
  }
  static Status check_args(const GemmDescriptor& d, const GemmArgs& a) { return gemm::check_gemm_args(gemm::as_batched(d), a); }
};

template <>
struct FamilyTraits<BatchedGemmDescriptor> {
  static constexpr const char* kFamily = "batched_gemm";
  static Status validate(const BatchedGemmDescriptor& d) { return gemm::validate_batched(d); }
  static std::span<const Candidate<BatchedGemmDescriptor, GemmArgs>> candidates() {
    return gemm::kCandidates<BatchedGemmDescriptor>;
  }
  static Expected<PreparedCandidate> prepare_with_preference(std::size_t i, const BatchedGemmDescriptor& d,
                                                             const DeviceCaps& caps, const PlanPreference& pref) {
    return gemm::prepare_candidate(i, d, caps, pref);
  }
  static Status check_args(const BatchedGemmDescriptor& d, const GemmArgs& a) { return gemm::check_gemm_args(d, a); }
};

// ------------------------------------------------------------------------------ backward
MatrixLayout gemm_transposed(const MatrixLayout& m) {
  MatrixLayout t = m;
  t.rows = m.cols;
  t.cols = m.rows;
  t.order = m.order == MatrixOrder::kRowMajor ? MatrixOrder::kColMajor : MatrixOrder::kRowMajor;
  return t;
}

GemmDescriptor gemm_backward_grad_a(const GemmBackwardDescriptor& d) {
  GemmDescriptor g;
  g.a = d.grad_d;
  g.b = gemm_transposed(d.b);
  g.d = d.grad_a;
  return g;
}

GemmDescriptor gemm_backward_grad_b(const GemmBackwardDescriptor& d) {
  GemmDescriptor g;
  g.a = gemm_transposed(d.a);
  g.b = d.grad_d;
  g.d = d.grad_b;
  if (d.compute_grad_bias) {
    g.epilogue.bias_grad = GemmBiasGrad::kB;
    g.bias_grad = d.grad_bias;
  }
  return g;
}

std::size_t GemmBackwardDescriptor::hash() const noexcept {
  std::size_t h = matrix_hash(a);
  for (const MatrixLayout* m : {&b, &grad_d, &grad_a, &grad_b}) h = detail::hash_combine(h, matrix_hash(*m));
  h = detail::hash_combine(h, grad_bias.hash());
  return detail::hash_combine(h, std::size_t{compute_grad_a} | (std::size_t{compute_grad_b} << 1) |
                                     (std::size_t{compute_grad_bias} << 2));
}

std::string GemmBackwardDescriptor::to_string() const {
  std::string s = "gemm_backward(a=" + matrix_string(a) + ", b=" + matrix_string(b) +
                  ", grad_d=" + matrix_string(grad_d);
  if (compute_grad_a) s += ", grad_a=" + matrix_string(grad_a);
  if (compute_grad_b) s += ", grad_b=" + matrix_string(grad_b);
  if (compute_grad_bias) s += ", grad_bias=" + grad_bias.to_string();
  return s + ")";
}

namespace gemm {
namespace {

Status validate_backward(const GemmBackwardDescriptor& d) {
  if (!d.compute_grad_a && !d.compute_grad_b)
    return invalid("compute_grad_a = false and compute_grad_b = false: nothing to compute");
  if (d.compute_grad_bias && !d.compute_grad_b)
    return invalid("compute_grad_bias = true needs compute_grad_b (the bias gradient is the grad_b GEMM's epilogue)");
  // Every field checked under its own name first: the two GEMMs' own checks below would name
  // grad_d as their "a" or "b" and grad_a / grad_b as their "d" (they stay as the last word).
  const DType t = d.a.dtype;
  if (t != DType::kF64 && t != DType::kF32 && t != DType::kF16 && t != DType::kBF16)
    return invalid("a.dtype = " + dt(t) + ": gemm backward takes f64, f32, f16 or bf16");
  struct Named {
    const MatrixLayout* m;
    const char* field;
    bool used;
  };
  const Named operands[] = {{&d.a, "a", true},
                            {&d.b, "b", true},
                            {&d.grad_d, "grad_d", true},
                            {&d.grad_a, "grad_a", d.compute_grad_a},
                            {&d.grad_b, "grad_b", d.compute_grad_b}};
  for (const Named& o : operands) {
    if (!o.used) continue;
    BARACUDA_TRY(validate_matrix(*o.m, o.field));
    BARACUDA_TRY(check_dtype(*o.m, o.field, t, "a"));
    BARACUDA_TRY(check_alignment_covers_element(o.m->alignment, t, o.field));
  }
  if (d.b.rows != d.a.cols) return invalid("b.rows = " + str(d.b.rows) + " differs from a.cols = " + str(d.a.cols) + " (K)");
  BARACUDA_TRY(check_extent(d.grad_d, "grad_d", d.a.rows, d.b.cols, "a.rows x b.cols"));
  if (d.compute_grad_a) BARACUDA_TRY(check_extent(d.grad_a, "grad_a", d.a.rows, d.a.cols, "a's shape"));
  if (d.compute_grad_b) BARACUDA_TRY(check_extent(d.grad_b, "grad_b", d.b.rows, d.b.cols, "b's shape"));
  if (d.compute_grad_bias) {
    if (d.grad_bias.dtype != t)
      return invalid("grad_bias.dtype = " + dt(d.grad_bias.dtype) + " differs from a.dtype = " + dt(t));
    BARACUDA_TRY(check_vector(d.grad_bias, "grad_bias", d.b.cols, "N, sums of grad_d's columns", t));
  }
  if (d.compute_grad_a) BARACUDA_TRY(validate_gemm(gemm_backward_grad_a(d)).add_context("grad_a = grad_d b^T"));
  if (d.compute_grad_b) BARACUDA_TRY(validate_gemm(gemm_backward_grad_b(d)).add_context("grad_b = a^T grad_d"));
  return Status::ok();
}

struct BackwardState {
  std::shared_ptr<const detail::PlanImpl<GemmDescriptor, GemmArgs>> grad_a, grad_b;
};

struct PairCandidate {
  using Self = PairCandidate;
  using Desc = GemmBackwardDescriptor;
  static Candidate<Desc, GemmBackwardArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, GemmBackwardArgs>::Probe pr;
    pr.sku = lt_sku(d.grad_d.dtype, false);
    pr.sku.direction = Direction::kBackward;
    pr.sku.impl = "cublaslt_pair";
    if (d.compute_grad_a) pr.rejection = lt_rejection(gemm_backward_grad_a(d));
    if (pr.rejection.empty() && d.compute_grad_b) {
      GemmDescriptor gb = gemm_backward_grad_b(d);
      gb.epilogue.bias_grad = GemmBiasGrad::kNone;  // fused, or the bgrad_reduce candidate where it is not
      pr.rejection = lt_rejection(gb);
    }
    return pr;
  }
  static Expected<PreparedCandidate> prepare_pref(const Desc& d, const DeviceCaps& caps, const PlanPreference& pref) {
    auto st = std::make_shared<BackwardState>();
    PlanPreference sub = pref;
    sub.force_sku.clear();  // the preference named the pair's SKU; each GEMM takes the strict cuBLASLt one
    sub.skip_skus = {"gemm.fwd.cublaslt_tf32*"};
    std::size_t ws = 0;
    if (d.compute_grad_a) {
      auto p = detail::select_impl<GemmDescriptor, GemmArgs>(caps, gemm_backward_grad_a(d), sub, caps.ordinal);
      if (!p) return Status(p.error()).add_context("grad_a");
      st->grad_a = p.value();
      ws = std::max(ws, st->grad_a->workspace_bytes);
    }
    if (d.compute_grad_b) {
      auto p = detail::select_impl<GemmDescriptor, GemmArgs>(caps, gemm_backward_grad_b(d), sub, caps.ordinal);
      if (!p) return Status(p.error()).add_context("grad_b");
      st->grad_b = p.value();
      ws = std::max(ws, st->grad_b->workspace_bytes);
    }
    return PreparedCandidate{st, ws};
  }
  // The two GEMMs in order on one stream, sharing the workspace.
  static Status launch(const void* state, const Desc& d, const GemmBackwardArgs& a, Workspace ws, cudaStream_t s) {
    const auto& st = *static_cast<const BackwardState*>(state);
    if (st.grad_a)
      BARACUDA_TRY(st.grad_a->candidate->launch(st.grad_a->state.get(), st.grad_a->desc,
                                                GemmArgs{.a = a.grad_d, .b = a.b, .d = a.grad_a, .alpha = a.alpha}, ws, s));
    if (st.grad_b)
      BARACUDA_TRY(st.grad_b->candidate->launch(
          st.grad_b->state.get(), st.grad_b->desc,
          GemmArgs{.a = a.a, .b = a.grad_d, .d = a.grad_b, .bias_grad = a.grad_bias, .alpha = a.alpha}, ws, s));
    return Status::ok();
  }
};
inline constexpr std::array<Candidate<GemmBackwardDescriptor, GemmBackwardArgs>, 1> kBackwardCandidates = {
    Candidate<GemmBackwardDescriptor, GemmBackwardArgs>{&PairCandidate::probe, &prepare_without_preference<PairCandidate, GemmBackwardDescriptor>, &PairCandidate::launch}};

Status check_backward_args(const GemmBackwardDescriptor& d, const GemmBackwardArgs& a) {
  if (d.compute_grad_a)
    BARACUDA_TRY(check_gemm_args(as_batched(gemm_backward_grad_a(d)), GemmArgs{.a = a.grad_d, .b = a.b, .d = a.grad_a, .alpha = a.alpha},
                                 GemmArgNames{.a = "grad_d", .d = "grad_a"})
                     .add_context("grad_a = grad_d b^T"));
  if (d.compute_grad_b)
    BARACUDA_TRY(check_gemm_args(as_batched(gemm_backward_grad_b(d)),
                                 GemmArgs{.a = a.a, .b = a.grad_d, .d = a.grad_b, .bias_grad = a.grad_bias, .alpha = a.alpha},
                                 GemmArgNames{.b = "grad_d", .d = "grad_b", .bias_grad = "grad_bias"})
                     .add_context("grad_b = a^T grad_d"));
  // grad_a is written before the grad_b GEMM reads a and grad_d and writes grad_b / grad_bias
  if (d.compute_grad_a && d.compute_grad_b && d.grad_a.rows > 0 && d.grad_a.cols > 0) {
    const TensorLayout ga = d.grad_a.as_tensor();
    const std::pair<const void*, TensorLayout> others[] = {
        {a.a, d.a.as_tensor()}, {a.grad_b, d.grad_b.as_tensor()}, {a.grad_bias, d.grad_bias}};
    const char* names[] = {"a", "grad_b", "grad_bias"};
    for (int i = 0; i < 3; ++i) {
      if (i == 2 && !d.compute_grad_bias) continue;
      if (byte_ranges_overlap(a.grad_a, ga, others[i].first, others[i].second))
        return invalid(std::string("args.grad_a overlaps args.") + names[i]);
    }
  }
  return Status::ok();
}

}  // namespace
}  // namespace gemm

template <>
struct FamilyTraits<GemmBackwardDescriptor> {
  static constexpr const char* kFamily = "gemm_backward";
  static Status validate(const GemmBackwardDescriptor& d) { return gemm::validate_backward(d); }
  static std::span<const Candidate<GemmBackwardDescriptor, GemmBackwardArgs>> candidates() {
    return gemm::kBackwardCandidates;
  }
  static Expected<PreparedCandidate> prepare_with_preference(std::size_t, const GemmBackwardDescriptor& d,
                                                             const DeviceCaps& caps, const PlanPreference& pref) {
    return gemm::PairCandidate::prepare_pref(d, caps, pref);
  }
  static Status check_args(const GemmBackwardDescriptor& d, const GemmBackwardArgs& a) {
    return gemm::check_backward_args(d, a);
  }
};

Expected<gemm::GemmImpl> gemm::select_gemm_impl(const DeviceCaps& caps, const GemmDescriptor& d, const PlanPreference& pref) {
  return detail::select_impl<GemmDescriptor, GemmArgs>(caps, d, pref, caps.ordinal);
}

template class Plan<GemmDescriptor, GemmArgs>;
template class Plan<BatchedGemmDescriptor, GemmArgs>;
template class Plan<GemmBackwardDescriptor, GemmBackwardArgs>;

}  // namespace baracuda
