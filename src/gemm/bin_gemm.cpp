// BinGemmPlan (baracuda/ops/gemm_bin.hpp): descriptor validation, the two candidates and the
// run-time argument checks. Candidates, in this order (both our kernels in
// kernels/bin_gemm.cuh, no workspace, launch shape fixed by M and N):
//  * "mma_b1": tensor-core mma.sync m16n8k256 b1 (.xor.popc / .and.popc), sm_80+;
//  * "popc_tile": CUDA-core __popc over a 128 x 128 register-tiled block, sm_80+.
#include <array>
#include <span>
#include <string>

#include "baracuda/ops/gemm_bin.hpp"
#include "core/hash.hpp"
#include "core/plan_impl.hpp"
#include "gemm/bin_params.hpp"
#include "gemm/quant_checks.hpp"

namespace baracuda {

const char* bin_gemm_op_name(BinGemmOp op) noexcept {
  switch (op) {
    case BinGemmOp::kXnorDot: return "xnor_dot";
    case BinGemmOp::kXnorCount: return "xnor_count";
    case BinGemmOp::kAndCount: return "and_count";
  }
  return "?";
}

std::size_t BinGemmDescriptor::hash() const noexcept {
  std::size_t h = gemm::quant_matrix_hash(a);
  h = detail::hash_combine(h, gemm::quant_matrix_hash(b));
  h = detail::hash_combine(h, gemm::quant_matrix_hash(d));
  h = detail::hash_combine(h, static_cast<std::size_t>(k));
  return detail::hash_combine(h, static_cast<std::size_t>(op) | (std::size_t{accumulate} << 4));
}

std::string BinGemmDescriptor::to_string() const {
  return "bin_gemm(a=" + gemm::quant_matrix_string(a) + ", b=" + gemm::quant_matrix_string(b) +
         ", d=" + gemm::quant_matrix_string(d) + ", k=" + std::to_string(k) + ", op=" + bin_gemm_op_name(op) +
         (accumulate ? ", accumulate" : "") + ")";
}

namespace gemm {
namespace {

std::string s64(std::int64_t v) { return std::to_string(v); }
std::string dt(DType t) { return std::string(dtype_name(t)); }

constexpr std::int64_t kMaxBinK = (std::int64_t{1} << 31) - 1;  // |d| <= K fits int32

Status validate_bin(const BinGemmDescriptor& d) {
  BARACUDA_TRY(validate_matrix(d.a, "a"));
  BARACUDA_TRY(validate_matrix(d.b, "b"));
  BARACUDA_TRY(validate_matrix(d.d, "d"));
  if (d.a.dtype != DType::kU32 && d.a.dtype != DType::kI32)
    return quant_invalid("a.dtype = " + dt(d.a.dtype) + ": BinGemmPlan takes 32-bit words of packed bits (u32 or i32)");
  if (d.b.dtype != d.a.dtype) return quant_invalid("b.dtype = " + dt(d.b.dtype) + " differs from a.dtype = " + dt(d.a.dtype));
  if (d.d.dtype != DType::kI32) return quant_invalid("d.dtype = " + dt(d.d.dtype) + ": BinGemmPlan writes i32");
  if (d.op != BinGemmOp::kXnorDot && d.op != BinGemmOp::kXnorCount && d.op != BinGemmOp::kAndCount)
    return quant_invalid("op = " + s64(static_cast<int>(d.op)) + " is not a BinGemmOp");
  for (const auto& [m, f] : {std::pair{&d.a, "a"}, std::pair{&d.b, "b"}, std::pair{&d.d, "d"}})
    if (m->order != MatrixOrder::kRowMajor)
      return quant_invalid(std::string(f) + ".order = column-major: BinGemmPlan takes " + f + " row-major" +
                           (m == &d.d ? "" : " (K-major: each row's bits packed in consecutive words)"));
  if (d.k <= 0 || d.k > kMaxBinK) return quant_invalid("k = " + s64(d.k) + " is outside 1 .. 2^31 - 1 bits");
  const std::int64_t w = d.words();
  if (d.a.cols != w) return quant_invalid("a.cols = " + s64(d.a.cols) + " differs from ceil(k / 32) = " + s64(w) + " words");
  if (d.b.cols != w) return quant_invalid("b.cols = " + s64(d.b.cols) + " differs from ceil(k / 32) = " + s64(w) + " words");
  if (d.d.rows != d.a.rows) return quant_invalid("d.rows = " + s64(d.d.rows) + " differs from a.rows = M = " + s64(d.a.rows));
  if (d.d.cols != d.b.rows) return quant_invalid("d.cols = " + s64(d.d.cols) + " differs from b.rows = N = " + s64(d.b.rows));
  for (const auto& [m, f] : {std::pair{&d.a, "a"}, std::pair{&d.b, "b"}, std::pair{&d.d, "d"}})
    if (m->alignment < 4) return quant_invalid(std::string(f) + ".alignment = " + s64(m->alignment) + " bytes is below 4 (one word)");
  return Status::ok();
}

BinGemmParams params_of(const BinGemmDescriptor& d, const BinGemmArgs& a) {
  BinGemmParams p;
  p.a = static_cast<const std::uint32_t*>(a.a);
  p.b = static_cast<const std::uint32_t*>(a.b);
  p.c = d.accumulate ? static_cast<const std::int32_t*>(a.c) : nullptr;
  p.d = static_cast<std::int32_t*>(a.d);
  p.m = d.m();
  p.n = d.n();
  p.words = d.words();
  p.lda = d.a.ld;
  p.ldb = d.b.ld;
  p.ldd = d.d.ld;
  p.k = static_cast<int>(d.k);
  p.last_mask = d.k % 32 == 0 ? 0xFFFFFFFFu : (1u << (d.k % 32)) - 1u;
  p.op = static_cast<int>(d.op);
  return p;
}

// impl 0: mma_b1, 1: popc_tile.
template <int kImpl>
struct BinCandidate {
  using Desc = BinGemmDescriptor;
  static Candidate<Desc, BinGemmArgs>::Probe probe(const Desc& d, const DeviceCaps&) {
    Candidate<Desc, BinGemmArgs>::Probe pr;
    pr.sku.family = "bin_gemm";
    pr.sku.impl = kImpl == 0 ? "mma_b1" : "popc_tile";
    pr.sku.in = d.a.dtype;
    pr.sku.compute = pr.sku.precision.accumulator = DType::kI32;
    pr.sku.out = DType::kI32;
    pr.sku.backend = Backend::kHand;
    pr.sku.min_sm = 80;
    pr.sku.graph_capturable = true;
    if ((d.n() + kBinTile - 1) / kBinTile > kBinMaxBlocksN)
      pr.rejection = "N = " + s64(d.n()) + " > " + s64(kBinMaxBlocksN * kBinTile) + " (65535 block columns of 128)";
    if ((d.m() + kBinTile - 1) / kBinTile > 0x7FFFFFFF) pr.rejection = "M = " + s64(d.m()) + " needs more than 2^31 - 1 blocks";
    return pr;
  }
  static Expected<std::shared_ptr<const void>> prepare(const Desc&, const DeviceCaps&) { return std::shared_ptr<const void>(); }
  static Status launch(const void*, const Desc& d, const BinGemmArgs& a, Workspace, cudaStream_t s) {
    if (d.m() == 0 || d.n() == 0) return Status::ok();
    const BinGemmParams p = params_of(d, a);
    return kImpl == 0 ? launch_bin_gemm_mma(p, s) : launch_bin_gemm_popc(p, s);
  }
};

constexpr std::array<Candidate<BinGemmDescriptor, BinGemmArgs>, 2> kBinCandidates = {
    Candidate<BinGemmDescriptor, BinGemmArgs>{&BinCandidate<0>::probe, &BinCandidate<0>::prepare, &BinCandidate<0>::launch},
    Candidate<BinGemmDescriptor, BinGemmArgs>{&BinCandidate<1>::probe, &BinCandidate<1>::prepare, &BinCandidate<1>::launch}};

}  // namespace

Status check_bin_gemm_args(const BinGemmDescriptor& d, const BinGemmArgs& a) {
  if (d.m() == 0 || d.n() == 0) return Status::ok();  // nothing is read or written
  // D == C exactly (in place) is allowed: C is then checked as if absent from the overlap test.
  const bool in_place = d.accumulate && a.c != nullptr && a.c == a.d;
  return check_quant_operands({
      {"d", a.d, d.d.as_tensor(), true, true},
      {"a", a.a, d.a.as_tensor(), true, false},
      {"b", a.b, d.b.as_tensor(), true, false},
      {"c", a.c, d.d.as_tensor(), d.accumulate && !in_place, false},
  });
}

}  // namespace gemm

template <>
struct FamilyTraits<BinGemmDescriptor> {
  static constexpr const char* kFamily = "bin_gemm";
  static Status validate(const BinGemmDescriptor& d) { return gemm::validate_bin(d); }
  static std::span<const Candidate<BinGemmDescriptor, BinGemmArgs>> candidates() { return gemm::kBinCandidates; }
  static Status check_args(const BinGemmDescriptor& d, const BinGemmArgs& a) { return gemm::check_bin_gemm_args(d, a); }
};

template class Plan<BinGemmDescriptor, BinGemmArgs>;

}  // namespace baracuda
