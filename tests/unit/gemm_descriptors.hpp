// GEMM descriptors shared by the CPU tests (test_gemm.cpp, test_refusals.cpp).
#pragma once

#include <cstdint>

#include "baracuda/ops/gemm.hpp"

namespace baracuda::test_gemm {

inline MatrixLayout mat(DType t, std::int64_t r, std::int64_t c, MatrixOrder o = MatrixOrder::kRowMajor,
                        std::int64_t ld = 0) {
  return MatrixLayout{t, r, c, ld ? ld : (o == MatrixOrder::kRowMajor ? c : r), o, 16};
}
// Row-major M x K times K x N, no C, no epilogue.
inline GemmDescriptor plain(DType t, std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmDescriptor d;
  d.a = mat(t, m, k);
  d.b = mat(t, k, n);
  d.d = mat(t, m, n);
  return d;
}
// bf16 64 x 48 x 32 with C, bias, gelu_tanh and its aux output: every field in use.
inline GemmDescriptor full_epilogue() {
  auto d = plain(DType::kBF16, 64, 48, 32);
  d.epilogue = {GemmActivation::kGeluTanh, true, true, GemmBiasGrad::kNone};
  d.bias = TensorLayout::contiguous(DType::kBF16, {48});
  d.aux = mat(DType::kBF16, 64, 48, MatrixOrder::kRowMajor, 48);
  d.with_c = true;
  d.c = d.d;
  return d;
}

}  // namespace baracuda::test_gemm
