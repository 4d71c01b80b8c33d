// Checks shared by IntGemmPlan and Fp8GemmPlan: the TN operand rules of cuBLASLt's int8 and
// fp8 kernels, descriptor strings, and the run-time pointer checks (null, alignment,
// overlap of an output with anything else).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/gemm_bin.hpp"
#include "baracuda/ops/gemm_int4.hpp"
#include "baracuda/ops/gemm_quant.hpp"

namespace baracuda::gemm {

Status quant_invalid(const std::string& msg);
std::string quant_matrix_string(const MatrixLayout& m);
std::size_t quant_matrix_hash(const MatrixLayout& m);

// a: M x K row-major, b: K x N column-major, d: M x N (K = a.cols = b.rows); ld of a and b a
// multiple of `ld_bytes`, their alignment >= `align_bytes`; `plan` names the rule's owner.
Status check_tn_operands(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& d, int ld_bytes, int align_bytes,
                         const char* plan);

// The GemmDescriptor of the product (no epilogue) for lt_problem().
GemmDescriptor quant_frame(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& d);

// One operand of a run: its pointer, what it spans, whether it is used, whether it is written.
struct QuantOperand {
  const char* field;
  const void* ptr;
  TensorLayout span;
  bool used;
  bool output;
};
// Null and misaligned pointers (args.<field>), then any output overlapping another operand.
Status check_quant_operands(const std::vector<QuantOperand>& ops);

// The run-time argument checks of each plan (what run() calls before launching).
Status check_int_gemm_args(const IntGemmDescriptor& d, const IntGemmArgs& a);
Status check_fp8_gemm_args(const Fp8GemmDescriptor& d, const Fp8GemmArgs& a);
Status check_int4_gemm_args(const Int4GemmDescriptor& d, const Int4GemmArgs& a);  // int4_gemm.cpp
Status check_bin_gemm_args(const BinGemmDescriptor& d, const BinGemmArgs& a);     // bin_gemm.cpp

}  // namespace baracuda::gemm
