// Shared checks of the quantized GEMMs (see quant_checks.hpp).
#include "gemm/quant_checks.hpp"

#include <cstdio>

#include "core/hash.hpp"

namespace baracuda::gemm {

Status quant_invalid(const std::string& msg) { return Status(Code::kInvalidArgument, msg); }

std::string quant_matrix_string(const MatrixLayout& m) {
  return m.as_tensor().to_string() + (m.order == MatrixOrder::kRowMajor ? "R" : "C");
}
std::size_t quant_matrix_hash(const MatrixLayout& m) {
  return detail::hash_combine(m.as_tensor().hash(), static_cast<std::size_t>(m.order));
}

namespace {
std::string s64(std::int64_t v) { return std::to_string(v); }
}  // namespace

Status check_tn_operands(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& d, int ld_bytes, int align_bytes,
                         const char* plan) {
  BARACUDA_TRY(validate_matrix(a, "a"));
  BARACUDA_TRY(validate_matrix(b, "b"));
  BARACUDA_TRY(validate_matrix(d, "d"));
  if (b.rows != a.cols) return quant_invalid("b.rows = " + s64(b.rows) + " differs from a.cols = " + s64(a.cols) + " (K)");
  if (d.rows != a.rows || d.cols != b.cols)
    return quant_invalid("d is " + s64(d.rows) + " x " + s64(d.cols) + ", needs " + s64(a.rows) + " x " + s64(b.cols) +
                         " (a.rows x b.cols)");
  if (a.order != MatrixOrder::kRowMajor)
    return quant_invalid(std::string("a.order = column-major: ") + plan +
                         " takes A row-major (K contiguous; cuBLASLt's TN form, A transposed in its frame)");
  if (b.order != MatrixOrder::kColMajor)
    return quant_invalid(std::string("b.order = row-major: ") + plan +
                         " takes B column-major (K contiguous: the N x K row-major weight; cuBLASLt's TN form)");
  const std::int64_t size = static_cast<std::int64_t>(dtype_size(a.dtype));
  for (const auto* m : {&a, &b}) {
    const char* f = m == &a ? "a" : "b";
    if ((m->ld * size) % ld_bytes != 0)
      return quant_invalid(std::string(f) + ".ld = " + s64(m->ld) + " is not a multiple of " + s64(ld_bytes) + " bytes (" +
                           plan + ", cuBLASLt's rule)");
    if (m->alignment < align_bytes)
      return quant_invalid(std::string(f) + ".alignment = " + s64(m->alignment) + " bytes is below " + s64(align_bytes) +
                           " (" + plan + ", cuBLASLt's rule)");
  }
  if (a.cols == 0 && d.rows > 0 && d.cols > 0) return quant_invalid("a.cols = K = 0: cuBLASLt needs K >= 1");
  return Status::ok();
}

GemmDescriptor quant_frame(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& d) {
  GemmDescriptor g;
  g.a = a;
  g.b = b;
  g.d = d;
  return g;
}

Status check_quant_operands(const std::vector<QuantOperand>& ops) {
  for (const auto& o : ops) {
    if (!o.used) continue;
    if (o.ptr == nullptr) return quant_invalid(std::string("args.") + o.field + " is null");
    if (pointer_alignment(o.ptr) < o.span.alignment) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%p", o.ptr);
      return Status(Code::kMisaligned, std::string("args.") + o.field + " = " + buf + " is not aligned to " + o.field +
                                           ".alignment = " + std::to_string(o.span.alignment) + " bytes");
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].used || !ops[i].output) continue;
    for (std::size_t j = 0; j < ops.size(); ++j) {
      if (j == i || !ops[j].used || (ops[j].output && j < i)) continue;
      if (byte_ranges_overlap(ops[i].ptr, ops[i].span, ops[j].ptr, ops[j].span))
        return quant_invalid(std::string("args.") + ops[i].field + " overlaps args." + ops[j].field +
                             " (outputs may alias nothing)");
    }
  }
  return Status::ok();
}

}  // namespace baracuda::gemm
