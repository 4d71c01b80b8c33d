// GEMM descriptors and table helpers shared by the CPU tests (test_gemm.cpp,
// test_gemm_quant.cpp, test_refusals.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

// One run-time argument refusal: change one field of valid args, expect code and needle.
template <class Args>
struct ArgRefusal {
  std::function<void(Args&)> change;
  Code code;
  std::string needle;
};
// `check(ok)` passes; each row's args are refused with its code, the message naming the needle.
template <class Args, class Check>
void expect_arg_refusals(Check&& check, const Args& ok, const std::vector<ArgRefusal<Args>>& rows) {
  Status good = check(ok);
  EXPECT_TRUE(good.is_ok()) << good.to_string();
  for (const auto& r : rows) {
    Args a = ok;
    r.change(a);
    Status st = check(a);
    EXPECT_FALSE(st.is_ok()) << r.needle;
    EXPECT_EQ(st.code(), r.code) << st.to_string();
    EXPECT_NE(st.to_string().find(r.needle), std::string::npos) << "wanted '" << r.needle << "' in " << st.to_string();
  }
}

// One select refusal on the caps of sm_<sm>: change the descriptor, expect code and needle.
template <class Desc>
struct SelectRefusalRow {
  std::function<void(Desc&)> change;
  std::string needle;
  int sm = 90;
  Code code = Code::kInvalidArgument;
};
template <class PlanT, class Desc>
void expect_select_rows(const Desc& valid, const std::vector<SelectRefusalRow<Desc>>& rows) {
  for (const auto& r : rows) {
    Desc d = valid;
    r.change(d);
    auto p = PlanT::select_for_caps(DeviceCaps::for_arch(r.sm).value(), d);
    ASSERT_FALSE(p.has_value()) << d.to_string() << " was accepted";
    EXPECT_EQ(p.error().code(), r.code) << p.error().to_string();
    EXPECT_NE(p.error().to_string().find(r.needle), std::string::npos)
        << "message lacks '" << r.needle << "': " << p.error().to_string();
  }
}

}  // namespace baracuda::test_gemm
