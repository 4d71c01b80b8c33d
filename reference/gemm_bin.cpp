// The BinGemmPlan oracle (see baracuda/reference/gemm_bin.hpp).
#include "baracuda/reference/gemm_bin.hpp"

#include <bit>
#include <string>

namespace baracuda::reference {

namespace {

const std::uint32_t* words_of(const HostTensor& t) { return static_cast<const std::uint32_t*>(t.data()); }

Status check_inputs(const BinGemmDescriptor& d, const HostTensor& a, const HostTensor& b, const HostTensor* c) {
  if (d.k <= 0) return Status(Code::kInvalidArgument, "reference::bin_gemm: k = " + std::to_string(d.k));
  if (a.layout() != d.a.as_tensor() || b.layout() != d.b.as_tensor())
    return Status(Code::kInvalidArgument, "reference::bin_gemm: a / b do not have the descriptor's layouts");
  if (d.accumulate && (c == nullptr || c->layout() != d.d.as_tensor()))
    return Status(Code::kInvalidArgument, "reference::bin_gemm: accumulate needs c with d's layout");
  return Status::ok();
}

std::int32_t finish(const BinGemmDescriptor& d, std::int64_t s, const HostTensor* c, std::int64_t m, std::int64_t n) {
  std::int64_t v = d.op == BinGemmOp::kXnorDot ? d.k - 2 * s : d.op == BinGemmOp::kXnorCount ? d.k - s : s;
  if (d.accumulate) v += static_cast<std::int64_t>(static_cast<const std::int32_t*>(c->data())[m * d.d.ld + n]);
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));  // wraps mod 2^32
}

}  // namespace

Expected<std::vector<std::int32_t>> bin_gemm(const BinGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                             const HostTensor* c) {
  BARACUDA_TRY(check_inputs(d, a, b, c));
  const std::int64_t M = d.m(), N = d.n(), W = d.words();
  const std::uint32_t last = d.k % 32 == 0 ? 0xFFFFFFFFu : (1u << (d.k % 32)) - 1u;
  const bool use_and = d.op == BinGemmOp::kAndCount;
  const std::uint32_t *pa = words_of(a), *pb = words_of(b);
  std::vector<std::int32_t> out(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m) {
    const std::uint32_t* ra = pa + m * d.a.ld;
    for (std::int64_t n = 0; n < N; ++n) {
      const std::uint32_t* rb = pb + n * d.b.ld;
      std::int64_t s = 0;
      for (std::int64_t w = 0; w < W; ++w) {
        std::uint32_t x = use_and ? (ra[w] & rb[w]) : (ra[w] ^ rb[w]);
        if (w == W - 1) x &= last;
        s += std::popcount(x);
      }
      out[m * N + n] = finish(d, s, c, m, n);
    }
  }
  return out;
}

Expected<std::vector<std::int32_t>> bin_gemm_bitwise(const BinGemmDescriptor& d, const HostTensor& a, const HostTensor& b,
                                                     const HostTensor* c) {
  BARACUDA_TRY(check_inputs(d, a, b, c));
  const std::int64_t M = d.m(), N = d.n();
  const std::uint32_t *pa = words_of(a), *pb = words_of(b);
  std::vector<std::int32_t> out(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      std::int64_t dot = 0, equal = 0, both = 0;
      for (std::int64_t k = 0; k < d.k; ++k) {
        const int x = (pa[m * d.a.ld + k / 32] >> (k % 32)) & 1, y = (pb[n * d.b.ld + k / 32] >> (k % 32)) & 1;
        dot += (2 * x - 1) * (2 * y - 1);
        equal += x == y;
        both += x & y;
      }
      // express each op through its popcount s so finish() applies the same formula
      const std::int64_t s = d.op == BinGemmOp::kXnorDot ? (d.k - dot) / 2 : d.op == BinGemmOp::kXnorCount ? d.k - equal : both;
      out[m * N + n] = finish(d, s, c, m, n);
    }
  return out;
}

Comparison compare_bin_gemm(const HostTensor& got, const MatrixLayout& layout, const std::vector<std::int32_t>& want) {
  Comparison c;
  const std::int64_t M = layout.rows, N = layout.cols;
  const auto* g = static_cast<const std::int32_t*>(got.data());
  std::int64_t got_zero = 0, want_zero = 0;
  std::string first;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int32_t v = g[m * layout.ld + n], w = want[m * N + n];
      ++c.checked;
      got_zero += v == 0;
      want_zero += w == 0;
      if (v != w && ++c.mismatches <= 5)
        first += "\n  d[" + std::to_string(m) + ", " + std::to_string(n) + "] = " + std::to_string(v) + ", want " +
                 std::to_string(w);
    }
  finish_comparison(c, M * N, got_zero, want_zero, first);
  return c;
}

}  // namespace baracuda::reference
