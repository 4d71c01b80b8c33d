// GPU tests of the binary plans against baracuda::reference, every SKU that accepts a case
// forced in turn, outputs poisoned, guard bytes checked:
//   BinaryKindGpu        every floating kind x f64/f32/f16/bf16; add, sub, mul and div on
//                        the full layout list (edge shapes, > L2, rank 4), the others on
//                        the short one
//   BinaryBackwardKindGpu  every differentiable kind, map and broadcast-reduction paths
//   BinaryBiasGradGpu    row-broadcast gradients (bcast_reduce_rows_vec16 and the others);
//                        BinaryBiasGrad: bit-identical runs
//   BinaryIntGpu         integer kinds x i64/i32/i16/i8/u8 (+ bitwise on bool), exact
//   BinaryLogicalGpu     logical and / or / xor on every dtype -> bool, exact
//   BinaryCmpGpu         eq..ge, isclose on every dtype, exact
//   BinaryParamGpu       lerp (scalar, tensor), add / sub with alpha, forward and backward
//   BinaryRefusals       null pointers, misalignment, unsafe aliasing, small workspace,
//                        with the outputs left untouched
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/reference/binary.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;
using K = BinaryKind;

struct Case {
  std::string name;
  TensorLayout a, b, out;
  bool in_place = false;  // out aliases a (same layout and dtype)
};

TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }
TensorLayout strided(DType t, std::initializer_list<std::int64_t> s, std::initializer_list<std::int64_t> st) {
  return TensorLayout::strided(t, s, st, 16);
}

// The short list of two-input layouts: every map path (contiguous, rows, strided 32-bit),
// broadcasts on either side, negative strides, a transposed output and in place. `o` is the
// output dtype (bool for the logical kinds and comparisons).
std::vector<Case> binary_cases(DType t, DType o) {
  std::vector<Case> cs;
  for (auto s : std::vector<std::vector<std::int64_t>>{{0}, {7}, {1009}, {33, 129}})
    cs.push_back({"contig" + std::to_string(s.size()) + "_" + std::to_string(s.back()), TensorLayout::contiguous(t, s),
                  TensorLayout::contiguous(t, s), TensorLayout::contiguous(o, s)});
  cs.push_back({"bias_row", contig(t, {257, 1031}), contig(t, {1031}), contig(o, {257, 1031})});
  cs.push_back({"bias_row_vec", contig(t, {257, 1024}), contig(t, {1024}), contig(o, {257, 1024})});
  cs.push_back({"bias_col", contig(t, {257, 1031}), contig(t, {257, 1}), contig(o, {257, 1031})});
  cs.push_back({"outer", contig(t, {257, 1}), contig(t, {1, 1031}), contig(o, {257, 1031})});
  cs.push_back({"scalar_b", contig(t, {33, 129}), contig(t, {}), contig(o, {33, 129})});
  cs.push_back({"transposed_a", strided(t, {33, 129}, {1, 33}), contig(t, {33, 129}), contig(o, {33, 129})});
  cs.push_back({"negative_b", contig(t, {33, 129}), strided(t, {33, 129}, {129, -1}), contig(o, {33, 129})});
  cs.push_back({"transposed_out", contig(t, {33, 129}), contig(t, {33, 129}), strided(o, {33, 129}, {1, 33})});
  cs.push_back({"padded_rows", strided(t, {33, 128}, {144, 1}), contig(t, {1, 128}), contig(o, {33, 128})});
  if (t == o) cs.push_back({"in_place", contig(t, {257, 1031}), contig(t, {257, 1031}), contig(o, {257, 1031}), true});
  return cs;
}

// The full list (the arithmetic kinds): edge shapes (0, 1, primes, > L2), every broadcast
// pattern, rank 4, zero rows, and a > L2 bias add.
std::vector<Case> binary_full_cases(DType t) {
  std::vector<std::vector<std::int64_t>> shapes = {{0}, {1}, {7}, {1009}, {4097}, {33, 129}, {3, 5, 7, 11}, {257, 1031}};
  if (t == DType::kBF16 || t == DType::kF32) shapes.push_back({8192, 4099});  // > L2
  std::vector<Case> cs;
  for (const auto& s : shapes) {
    auto l = TensorLayout::contiguous(t, s);
    std::string n = "contig[";
    for (auto d : s) n += std::to_string(d) + ",";
    cs.push_back({n + "]", l, l, l});
  }
  cs.push_back({"bias_row", contig(t, {257, 1031}), contig(t, {1031}), contig(t, {257, 1031})});
  cs.push_back({"bias_row_vec", contig(t, {257, 1024}), contig(t, {1024}), contig(t, {257, 1024})});
  cs.push_back({"padded_rows", strided(t, {33, 128}, {144, 1}), contig(t, {1, 128}), strided(t, {33, 128}, {136, 1})});
  cs.push_back({"bias_col", contig(t, {257, 1031}), contig(t, {257, 1}), contig(t, {257, 1031})});
  cs.push_back({"outer", contig(t, {257, 1}), contig(t, {1, 1031}), contig(t, {257, 1031})});
  cs.push_back({"rank4_broadcast", contig(t, {3, 1, 7, 1}), contig(t, {5, 1, 11}), contig(t, {3, 5, 7, 11})});
  cs.push_back({"scalar_b", contig(t, {33, 129}), contig(t, {}), contig(t, {33, 129})});
  cs.push_back({"transposed_a", strided(t, {33, 129}, {1, 33}), contig(t, {33, 129}), contig(t, {33, 129})});
  cs.push_back({"negative_b", contig(t, {33, 129}), strided(t, {33, 129}, {129, -1}), contig(t, {33, 129})});
  cs.push_back({"transposed_out", contig(t, {33, 129}), contig(t, {33, 129}), strided(t, {33, 129}, {1, 33})});
  cs.push_back({"zero_rows", contig(t, {0, 5}), contig(t, {5}), contig(t, {0, 5})});
  cs.push_back({"in_place", contig(t, {257, 1031}), contig(t, {257, 1031}), contig(t, {257, 1031}), true});
  if (t == DType::kBF16) cs.push_back({"bias_large", contig(t, {8192, 4099}), contig(t, {4099}), contig(t, {8192, 4099})});
  return cs;
}

bool arithmetic(BinaryKind k) {
  return k == BinaryKind::kAdd || k == BinaryKind::kSub || k == BinaryKind::kMul || k == BinaryKind::kDiv;
}
// add, sub, mul and div run the full list, the other kinds the short one.
std::vector<Case> float_cases(BinaryKind k, DType t) { return arithmetic(k) ? binary_full_cases(t) : binary_cases(t, t); }

const DType kFloatTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};
const DType kIntTypes[] = {DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8};
const DType kAllTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64,
                           DType::kI32, DType::kI16, DType::kI8,  DType::kU8,  DType::kBool};

std::string pname(DType t) { return std::string(dtype_name(t)); }

std::vector<K> kinds_where(bool (*pred)(const BinaryKindInfo&)) {
  std::vector<K> ks;
  for (int k = 0; k < kNumBinaryKinds; ++k)
    if (pred(binary_kind_info(static_cast<K>(k)))) ks.push_back(static_cast<K>(k));
  return ks;
}

// Runs a BinaryPlan / BinaryCmpPlan case (BinaryArgs) under every SKU.
template <class PlanT>
void check_binary_case(const typename PlanT::Descriptor& d, const Case& c, const HostTensor& ha, const HostTensor& hb,
                       const reference::Result& want, bool exact) {
  HostTensor ho(c.out);
  DeviceTensor da(ha, test_stream()), db(hb, test_stream()), dout(ho, test_stream());
  void* out_ptr = c.in_place ? da.data() : dout.data();
  for_each_sku<PlanT>(
      d,
      [&] {
        da.upload(ha, test_stream());
        dout.poison(0xFF, test_stream());
      },
      [&](const PlanT& p, Workspace ws) {
        return p.run(test_stream(), ws, BinaryArgs{.a = da.data(), .b = db.data(), .out = out_ptr});
      },
      [&](const std::string& sku) {
        ASSERT_TRUE((c.in_place ? da : dout).download(ho, test_stream()));
        if (exact) EXPECT_TRUE(check_exact(ho, want, sku + " " + d.to_string()));
        else EXPECT_TRUE(check_close(ho, want, sku + " " + d.to_string()));
      });
}

// ------------------------------------------------------------------------------- floating kinds
class BinaryKindGpu : public ::testing::TestWithParam<std::tuple<K, DType>> {};

TEST_P(BinaryKindGpu, EveryLayoutEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  const auto r = reference::binary_input_ranges(kind, false);
  for (const auto& c : float_cases(kind, t)) {
    SCOPED_TRACE(c.name);
    BinaryDescriptor d{kind, c.a, c.b, c.out};
    HostTensor ha(c.a), hb(c.b);
    fill_random(ha, r.a_lo, r.a_hi, Fill::kWithEdges);
    fill_random(hb, r.b_lo, r.b_hi, Fill::kWithEdges);
    auto want = reference::binary(d, ha, hb);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_binary_case<BinaryPlan>(d, c, ha, hb, want.value(), kind == K::kNextafter);
  }
}

std::string kind_dtype_name(K k, DType t) { return std::string(binary_kind_name(k)) + "_" + pname(t); }

INSTANTIATE_TEST_SUITE_P(
    Kinds, BinaryKindGpu,
    ::testing::Combine(::testing::ValuesIn(kinds_where([](const BinaryKindInfo& i) { return i.floating && !i.to_bool; })),
                       ::testing::ValuesIn(kFloatTypes)),
    [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// pow over the cross product of special bases and exponents (+-0, +-1, +-inf, NaN,
// subnormals, huge and tiny, bf16's neighbours of 1, odd / even / non-integer exponents):
// the bf16 kernels compute pow by MUFU lg2 / ex2 with the C special cases
// (kernels/binary_math.cuh pow_bf16), f16 by powf; contiguous and broadcast, every SKU.
class PowEdgeGridGpu : public ::testing::TestWithParam<DType> {};

TEST_P(PowEdgeGridGpu, SpecialBasesTimesSpecialExponents) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {0.0,   -0.0,   1.0,   -1.0,   inf,   -inf,       nan,        1e-40,   -1e-40, 1e-30,
                                 3e38,  -3e38,  0.5,   -0.5,   2.0,   -2.0,       3.0,        -3.0,    2.5,    -2.5,
                                 127.0, -127.0, 128.0, -128.0, 1e10,  1.0078125,  0.99609375, -1.0078125, 7.0, 0.1,
                                 60000.0, -60000.0, 1e-5, 16777216.0};
  const auto n = static_cast<std::int64_t>(v.size());
  const auto sq = contig(t, {n, n});
  for (const Case& c : {Case{"grid", sq, sq, sq}, Case{"broadcast_exponent_row", sq, contig(t, {n}), sq}}) {
    SCOPED_TRACE(c.name);
    BinaryDescriptor d{K::kPow, c.a, c.b, c.out};
    HostTensor ha(c.a), hb(c.b);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        ha.set(i * n + j, v[static_cast<std::size_t>(i)]);
        if (c.b.rank == 2) hb.set(i * n + j, v[static_cast<std::size_t>(j)]);
      }
    if (c.b.rank == 1)
      for (std::int64_t j = 0; j < n; ++j) hb.set(j, v[static_cast<std::size_t>(j)]);
    auto want = reference::binary(d, ha, hb);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_binary_case<BinaryPlan>(d, c, ha, hb, want.value(), false);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PowEdgeGridGpu, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) { return pname(info.param); });

// ------------------------------------------------------------------------------- backward
// Runs one backward problem (which: 0 = grad_a, 1 = grad_b, 2 = both; in_place: grad_a
// aliases grad_out where their layouts match) under every SKU that accepts it, against the
// oracle; returns the names of the SKUs run.
std::string check_backward_every_sku(K kind, const TensorLayout& out, const TensorLayout& a, const TensorLayout& b,
                                     int which, bool in_place) {
  const DType t = out.dtype;
  const auto r = reference::binary_input_ranges(kind, true);
  auto ga_l = TensorLayout::contiguous(t, a.shape_span());
  auto gb_l = TensorLayout::contiguous(t, b.shape_span());
  BinaryBackwardDescriptor d{kind, out, a, b, ga_l, gb_l, which != 1, which != 0};
  HostTensor hg(out), ha(a), hb(b), hga(ga_l), hgb(gb_l);
  fill_random(hg, -2, 2);
  fill_random(ha, r.a_lo, r.a_hi);
  fill_random(hb, r.b_lo, r.b_hi);
  auto want = reference::binary_backward(d, hg, ha, hb);
  EXPECT_TRUE(want.has_value()) << want.error().to_string();
  if (!want) return "";
  DeviceTensor dg(hg, test_stream()), da(ha, test_stream()), db(hb, test_stream()), dga(hga, test_stream()),
      dgb(hgb, test_stream());
  const bool ga_in_place = in_place && which != 1 && out == ga_l;  // grad_a overwrites grad_out
  void* ga_ptr = ga_in_place ? dg.data() : dga.data();
  std::string skus;
  for_each_sku<BinaryBackwardPlan>(
      d,
      [&] {
        dg.upload(hg, test_stream());
        dga.poison(0xFF, test_stream());
        dgb.poison(0xFF, test_stream());
      },
      [&](const BinaryBackwardPlan& p, Workspace ws) {
        return p.run(test_stream(), ws,
                     BinaryBackwardArgs{.grad_out = dg.data(), .a = da.data(), .b = db.data(), .grad_a = ga_ptr,
                                        .grad_b = dgb.data()});
      },
      [&](const std::string& sku) {
        skus += sku + " ";
        if (which != 1) {
          ASSERT_TRUE((ga_in_place ? dg : dga).download(hga, test_stream()));
          EXPECT_TRUE(check_close(hga, want->grad_a, sku + " grad_a " + d.to_string()));
        }
        if (which != 0) {
          ASSERT_TRUE(dgb.download(hgb, test_stream()));
          EXPECT_TRUE(check_close(hgb, want->grad_b, sku + " grad_b " + d.to_string()));
        }
      });
  return skus;
}

class BinaryBackwardKindGpu : public ::testing::TestWithParam<std::tuple<K, DType>> {};

TEST_P(BinaryBackwardKindGpu, MapAndReduceEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (const auto& c : float_cases(kind, t)) {
    if (!arithmetic(kind) && c.out.numel() > 0 && c.name.rfind("contig1", 0) == 0) continue;  // 1-D: as contig2
    for (int which : {2, 0, 1}) {
      SCOPED_TRACE(c.name + " which=" + std::to_string(which));
      check_backward_every_sku(kind, c.out, c.a, c.b, which, c.in_place);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, BinaryBackwardKindGpu,
    ::testing::Combine(::testing::ValuesIn(kinds_where([](const BinaryKindInfo& i) { return i.differentiable; })),
                       ::testing::ValuesIn(kFloatTypes)),
    [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// ------------------------------------------------------------------------------- bias gradients
// Row broadcasts that bcast_reduce_rows_vec16 accepts (one gradient reduced over leading
// rows, the other written in the same pass), with either or both gradients, the broadcast
// operand on either side, padded rows and grad_a in place over grad_out; every SKU that
// accepts runs, and the new one must be among them whenever a requested gradient needs a
// reduction.
constexpr const char* kRowsSku = "bcast_reduce_rows_vec16";

struct BiasCase {
  std::string name;
  TensorLayout a, b, out;
  bool ga_in_place = false;  // grad_a aliases grad_out (a has grad_out's layout)
};

std::vector<BiasCase> bias_grad_cases(DType t) {
  std::vector<BiasCase> cs;
  cs.push_back({"bias_257x1024", contig(t, {257, 1024}), contig(t, {1024}), contig(t, {257, 1024})});
  cs.push_back({"bias_4096x8", contig(t, {4096, 8}), contig(t, {8}), contig(t, {4096, 8})});
  cs.push_back({"bias_3x1000x64", contig(t, {3, 1000, 64}), contig(t, {64}), contig(t, {3, 1000, 64})});
  cs.push_back({"bias_1x1x64", contig(t, {2, 1000, 64}), contig(t, {1, 1, 64}), contig(t, {2, 1000, 64})});
  cs.push_back({"bias_on_a", contig(t, {1024}), contig(t, {257, 1024}), contig(t, {257, 1024})});
  cs.push_back({"padded_rows", strided(t, {33, 128}, {144, 1}), contig(t, {128}), contig(t, {33, 128})});
  // ragged column blocks (1048 columns = 131 vectors of 8: the last 16-vector block partly out of range) and a
  // ragged last chunk and unroll group (521 rows), contiguous and with padded rows
  cs.push_back({"ragged_521x1048", contig(t, {521, 1048}), contig(t, {1048}), contig(t, {521, 1048})});
  cs.push_back({"padded_ragged", strided(t, {67, 1048}, {1064, 1}), contig(t, {1048}), contig(t, {67, 1048})});
  cs.push_back({"in_place", contig(t, {257, 1024}), contig(t, {1024}), contig(t, {257, 1024}), true});
  return cs;
}

class BinaryBiasGradGpu : public ::testing::TestWithParam<std::tuple<K, DType>> {};

TEST_P(BinaryBiasGradGpu, RowsVec16AndEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (const auto& c : bias_grad_cases(t)) {
    for (int which : {2, 1, 0}) {
      SCOPED_TRACE(c.name + " which=" + std::to_string(which));
      const std::string skus = check_backward_every_sku(kind, c.out, c.a, c.b, which, c.ga_in_place);
      const bool reduces = (which != 1 && c.a.numel() != c.out.numel()) || (which != 0 && c.b.numel() != c.out.numel());
      if (reduces) EXPECT_NE(skus.find(kRowsSku), std::string::npos) << "SKUs run: " << skus;
      else EXPECT_EQ(skus.find(kRowsSku), std::string::npos) << "SKUs run: " << skus;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, BinaryBiasGradGpu,
                         ::testing::Combine(::testing::Values(K::kAdd, K::kSub, K::kMul, K::kDiv, K::kAtan2, K::kDivFloor),
                                            ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// The same problem twice under bcast_reduce_rows_vec16: bit-identical gradients (no atomics,
// chunks added in a fixed order), on a grid of many chunks.
TEST(BinaryBiasGrad, RowsVec16IsBitIdenticalRunToRun) {
  BARACUDA_REQUIRE_GPU();
  const DType t = DType::kBF16;
  auto out_l = contig(t, {8192, 1024});
  auto b_l = contig(t, {1024});
  BinaryBackwardDescriptor d{K::kMul, out_l, out_l, b_l, out_l, b_l};
  PlanPreference pref;
  pref.force_sku = std::string("*") + kRowsSku + "*";
  auto plan = BinaryBackwardPlan::select(test_stream(), d, pref);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor hg(out_l), ha(out_l), hb(b_l), hga(out_l), hgb(b_l);
  fill_random(hg, -2, 2);
  fill_random(ha, -2, 2);
  fill_random(hb, -2, 2);
  DeviceTensor dg(hg, test_stream()), da(ha, test_stream()), db(hb, test_stream()), dga(hga, test_stream()),
      dgb(hgb, test_stream());
  BinaryBackwardArgs args{.grad_out = dg.data(), .a = da.data(), .b = db.data(), .grad_a = dga.data(), .grad_b = dgb.data()};
  std::vector<std::byte> first;
  for (int run = 0; run < 3; ++run) {
    dgb.poison(0xFF, test_stream());
    ASSERT_TRUE(plan->run(test_stream(), test_workspace(plan->workspace_size()), args).is_ok());
    ASSERT_TRUE(dgb.download(hgb, test_stream()));
    std::vector<std::byte> bytes(hgb.storage(), hgb.storage() + hgb.storage_bytes());
    if (run == 0) first = bytes;
    else EXPECT_TRUE(bytes == first) << "run " << run << " differs from run 0";
  }
}

// ------------------------------------------------------------------------------- integers
// Each dtype's extremes, 0, -1 and small divisors (division by zero included); shift counts
// from -2 to width + 2.
void fill_int(HostTensor& h, DType t, bool divisor, bool shift_count) {
  const double lo = t == DType::kU8 ? 0 : t == DType::kI8 ? -128 : t == DType::kI16 ? -32768 : t == DType::kI32 ? -2e9 : -1e15;
  const double hi = t == DType::kU8 ? 255 : t == DType::kI8 ? 127 : t == DType::kI16 ? 32767 : t == DType::kI32 ? 2e9 : 1e15;
  const int bits = dtype_bits(t);
  if (t == DType::kBool) fill_random(h, 0, 1);
  else if (shift_count) fill_random(h, t == DType::kU8 ? 0 : -2, bits + 2);
  else if (divisor) fill_random(h, t == DType::kU8 ? 0 : -6, 6);
  else fill_random(h, lo, hi);
  const std::int64_t n = h.layout().numel();
  if (n < 6 || t == DType::kBool) return;
  const double min_v = t == DType::kU8 ? 0 : t == DType::kI64 ? -9223372036854775808.0 : lo;
  const double max_v = t == DType::kI64 ? 4e18 : hi;
  if (shift_count) {
    h.set(0, 0), h.set(1, bits - 1), h.set(2, bits), h.set(3, t == DType::kU8 ? 200 : -1);
  } else if (divisor) {
    h.set(0, 0), h.set(1, t == DType::kU8 ? 1 : -1), h.set(2, 0), h.set(3, 2);
  } else {
    h.set(0, min_v), h.set(1, max_v), h.set(2, 0), h.set(3, t == DType::kU8 ? 1 : -1);
  }
  h.set(4, 7), h.set(5, t == DType::kU8 ? 250 : -7);
}

class BinaryIntGpu : public ::testing::TestWithParam<std::tuple<K, DType>> {};

TEST_P(BinaryIntGpu, EveryLayoutEverySkuExact) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  const bool divisor = kind == K::kDivFloor || kind == K::kDivTrunc || kind == K::kFmod || kind == K::kRemainder;
  const bool shift = kind == K::kShiftLeft || kind == K::kShiftRight;
  for (const auto& c : binary_cases(t, t)) {
    SCOPED_TRACE(c.name);
    BinaryDescriptor d{kind, c.a, c.b, c.out};
    HostTensor ha(c.a), hb(c.b);
    fill_int(ha, t, false, false);
    fill_int(hb, t, divisor, shift);
    auto want = reference::binary(d, ha, hb);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_binary_case<BinaryPlan>(d, c, ha, hb, want.value(), true);
  }
}

std::vector<std::tuple<K, DType>> int_params() {
  std::vector<std::tuple<K, DType>> ps;
  for (K k : kinds_where([](const BinaryKindInfo& i) { return (i.integer || i.boolean) && !i.to_bool; })) {
    if (binary_kind_info(k).integer)
      for (DType t : kIntTypes) ps.emplace_back(k, t);
    if (binary_kind_info(k).boolean) ps.emplace_back(k, DType::kBool);
  }
  return ps;
}

INSTANTIATE_TEST_SUITE_P(Kinds, BinaryIntGpu, ::testing::ValuesIn(int_params()),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

// ------------------------------------------------------------------------------- -> bool
// Inputs from a small set (with edges for floating dtypes) so that ties, zeros and NaN occur.
void fill_small(HostTensor& h, DType t) {
  if (dtype_is_floating(t)) {
    fill_random(h, -2, 2, Fill::kWithEdges);
    const std::int64_t n = h.layout().numel();
    for (std::int64_t i = 0; i < n; i += 3) h.set(i, static_cast<double>(static_cast<int>(i % 5) - 2));  // ties
  } else {
    fill_random(h, t == DType::kBool ? 0 : (t == DType::kU8 ? 0 : -2), t == DType::kBool ? 1 : 2);
  }
}

class BinaryLogicalGpu : public ::testing::TestWithParam<std::tuple<K, DType>> {};

TEST_P(BinaryLogicalGpu, EveryLayoutEverySkuExact) {
  BARACUDA_REQUIRE_GPU();
  auto [kind, t] = GetParam();
  for (const auto& c : binary_cases(t, DType::kBool)) {
    SCOPED_TRACE(c.name);
    BinaryDescriptor d{kind, c.a, c.b, c.out};
    HostTensor ha(c.a), hb(c.b);
    fill_small(ha, t);
    fill_small(hb, t);
    auto want = reference::binary(d, ha, hb);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_binary_case<BinaryPlan>(d, c, ha, hb, want.value(), true);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, BinaryLogicalGpu,
                         ::testing::Combine(::testing::Values(K::kLogicalAnd, K::kLogicalOr, K::kLogicalXor),
                                            ::testing::ValuesIn(kAllTypes)),
                         [](const auto& info) { return kind_dtype_name(std::get<0>(info.param), std::get<1>(info.param)); });

struct CmpCase {
  std::string name;
  BinaryCmpKind kind;
  double rtol = 1e-5, atol = 1e-8;
  bool equal_nan = false;
};
const std::vector<CmpCase> kCmpCases = {
    {"eq", BinaryCmpKind::kEq},           {"ne", BinaryCmpKind::kNe}, {"lt", BinaryCmpKind::kLt},
    {"le", BinaryCmpKind::kLe},           {"gt", BinaryCmpKind::kGt}, {"ge", BinaryCmpKind::kGe},
    {"isclose", BinaryCmpKind::kIsclose}, {"isclose_loose_nan", BinaryCmpKind::kIsclose, 0.25, 0.5, true},
};

class BinaryCmpGpu : public ::testing::TestWithParam<std::tuple<int, DType>> {};

TEST_P(BinaryCmpGpu, EveryLayoutEverySkuExact) {
  BARACUDA_REQUIRE_GPU();
  auto [index, t] = GetParam();
  const CmpCase& cc = kCmpCases[static_cast<std::size_t>(index)];
  for (const auto& c : binary_cases(t, DType::kBool)) {
    SCOPED_TRACE(c.name);
    BinaryCmpDescriptor d{cc.kind, cc.rtol, cc.atol, cc.equal_nan, c.a, c.b, c.out};
    HostTensor ha(c.a), hb(c.b);
    fill_small(ha, t);
    fill_small(hb, t);
    auto want = reference::binary_cmp(d, ha, hb);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    check_binary_case<BinaryCmpPlan>(d, c, ha, hb, want.value(), true);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, BinaryCmpGpu,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(kCmpCases.size())),
                                            ::testing::ValuesIn(kAllTypes)),
                         [](const auto& info) {
                           return kCmpCases[static_cast<std::size_t>(std::get<0>(info.param))].name + "_" +
                                  pname(std::get<1>(info.param));
                         });

// ------------------------------------------------------------------------------- lerp / alpha
struct ParamCase {
  std::string name;
  BinaryParamKind kind;
  double scalar;
};
const std::vector<ParamCase> kParamCases = {
    {"lerp_0_3", BinaryParamKind::kLerp, 0.3},      {"lerp_0_8", BinaryParamKind::kLerp, 0.8},
    {"lerp_neg", BinaryParamKind::kLerp, -1.5},     {"lerp_tensor", BinaryParamKind::kLerpTensor, 0},
    {"add_alpha", BinaryParamKind::kAddAlpha, 2.5}, {"sub_alpha", BinaryParamKind::kSubAlpha, -0.75},
};

class BinaryParamGpu : public ::testing::TestWithParam<std::tuple<int, DType>> {};

TEST_P(BinaryParamGpu, ForwardAndBackwardEverySku) {
  BARACUDA_REQUIRE_GPU();
  auto [index, t] = GetParam();
  const ParamCase& pc = kParamCases[static_cast<std::size_t>(index)];
  const bool tw = pc.kind == BinaryParamKind::kLerpTensor;
  for (const auto& c : binary_cases(t, t)) {
    SCOPED_TRACE(c.name);
    // lerp_tensor: the weight takes b's layout (a broadcast weight on the broadcast cases)
    const TensorLayout wl = tw ? c.b : TensorLayout{};
    BinaryParamDescriptor d{pc.kind, pc.scalar, c.a, c.b, wl, c.out};
    HostTensor ha(c.a), hb(c.b), hw(tw ? c.b : contig(t, {1})), ho(c.out);
    fill_random(ha, -4, 4, Fill::kWithEdges);
    fill_random(hb, -4, 4, Fill::kWithEdges);
    fill_random(hw, -0.5, 1.5);
    auto want = reference::binary_param(d, ha, hb, hw);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor da(ha, test_stream()), db(hb, test_stream()), dw(hw, test_stream()), dout(ho, test_stream());
    void* out_ptr = c.in_place ? da.data() : dout.data();
    for_each_sku<BinaryParamPlan>(
        d,
        [&] {
          da.upload(ha, test_stream());
          dout.poison(0xFF, test_stream());
        },
        [&](const BinaryParamPlan& p, Workspace ws) {
          return p.run(test_stream(), ws,
                       BinaryParamArgs{.a = da.data(), .b = db.data(), .weight = tw ? dw.data() : nullptr, .out = out_ptr});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? da : dout).download(ho, test_stream()));
          EXPECT_TRUE(check_close(ho, want.value(), sku + " " + d.to_string()));
        });
  }
  // backward: gradients in grad_out's shape, the inputs may broadcast into it
  for (const auto& c : binary_cases(t, t)) {
    SCOPED_TRACE(c.name + " backward");
    const auto& g_l = c.out;
    const TensorLayout wl = tw ? c.b : TensorLayout{};
    BinaryParamBackwardDescriptor d{pc.kind, pc.scalar, g_l, c.a, c.b, wl, g_l, g_l, g_l};
    HostTensor hg(g_l), ha(c.a), hb(c.b), hw(tw ? c.b : contig(t, {1})), hga(g_l), hgb(g_l), hgw(g_l);
    fill_random(hg, -2, 2);
    fill_random(ha, -4, 4);
    fill_random(hb, -4, 4);
    fill_random(hw, -0.5, 1.5);
    auto want = reference::binary_param_backward(d, hg, ha, hb, hw);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dg(hg, test_stream()), da(ha, test_stream()), db(hb, test_stream()), dw(hw, test_stream()),
        dga(hga, test_stream()), dgb(hgb, test_stream()), dgw(hgw, test_stream());
    void* ga_ptr = c.in_place ? dg.data() : dga.data();  // in place: grad_a overwrites grad_out
    for_each_sku<BinaryParamBackwardPlan>(
        d,
        [&] {
          dg.upload(hg, test_stream());
          dga.poison(0xFF, test_stream());
          dgb.poison(0xFF, test_stream());
          dgw.poison(0xFF, test_stream());
        },
        [&](const BinaryParamBackwardPlan& p, Workspace ws) {
          return p.run(test_stream(), ws,
                       BinaryParamBackwardArgs{.grad_out = dg.data(), .a = da.data(), .b = db.data(),
                                               .weight = tw ? dw.data() : nullptr, .grad_a = ga_ptr,
                                               .grad_b = dgb.data(), .grad_weight = tw ? dgw.data() : nullptr});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? dg : dga).download(hga, test_stream()));
          EXPECT_TRUE(check_close(hga, want->grad_a, sku + " grad_a " + d.to_string()));
          ASSERT_TRUE(dgb.download(hgb, test_stream()));
          EXPECT_TRUE(check_close(hgb, want->grad_b, sku + " grad_b " + d.to_string()));
          if (tw) {
            ASSERT_TRUE(dgw.download(hgw, test_stream()));
            EXPECT_TRUE(check_close(hgw, want->grad_weight, sku + " grad_weight " + d.to_string()));
          }
        });
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, BinaryParamGpu,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(kParamCases.size())),
                                            ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) {
                           return kParamCases[static_cast<std::size_t>(std::get<0>(info.param))].name + "_" +
                                  pname(std::get<1>(info.param));
                         });

// ------------------------------------------------------------------------------- refusals
TEST(BinaryRefusals, ForwardPlansCheckArgsBeforeLaunch) {
  BARACUDA_REQUIRE_GPU();
  auto l = TensorLayout::contiguous(DType::kF32, {64, 64});
  auto lb = TensorLayout::contiguous(DType::kBool, {64, 64});
  HostTensor hx(l);
  fill_random(hx, -1, 1);
  DeviceTensor da(hx, test_stream()), db(hx, test_stream());
  char* a_bytes = static_cast<char*>(da.data());

  auto atan2 = BinaryPlan::select(test_stream(), BinaryDescriptor{K::kAtan2, l, l, l});
  ASSERT_TRUE(atan2.has_value());
  Untouched out(l);
  expect_refused(atan2->run(test_stream(), {}, BinaryArgs{.a = nullptr, .b = db.data(), .out = out.data()}),
                 Code::kInvalidArgument, "args.a is null");
  expect_refused(atan2->run(test_stream(), {}, BinaryArgs{.a = a_bytes + 4, .b = db.data(), .out = out.data()}),
                 Code::kMisaligned, "is not aligned to a.alignment = 16 bytes");
  expect_refused(atan2->run(test_stream(), {}, BinaryArgs{.a = da.data(), .b = db.data(), .out = a_bytes + 256}),
                 Code::kInvalidArgument, "unsafe aliasing");
  EXPECT_TRUE(out.check());

  auto cmp = BinaryCmpPlan::select(test_stream(), BinaryCmpDescriptor{BinaryCmpKind::kLe, 0, 0, false, l, l, lb});
  ASSERT_TRUE(cmp.has_value());
  Untouched bout(lb);
  expect_refused(cmp->run(test_stream(), {}, BinaryArgs{.a = da.data(), .b = nullptr, .out = bout.data()}),
                 Code::kInvalidArgument, "args.b is null");
  expect_refused(cmp->run(test_stream(), {}, BinaryArgs{.a = da.data(), .b = db.data(), .out = a_bytes + 64}),
                 Code::kInvalidArgument, "unsafe aliasing");  // a bool out over a f32 input: never in place
  EXPECT_TRUE(bout.check());

  auto lerp = BinaryParamPlan::select(test_stream(), BinaryParamDescriptor{BinaryParamKind::kLerpTensor, 0, l, l, l, l});
  ASSERT_TRUE(lerp.has_value());
  expect_refused(lerp->run(test_stream(), {}, BinaryParamArgs{.a = da.data(), .b = db.data(), .weight = nullptr, .out = out.data()}),
                 Code::kInvalidArgument, "args.weight is null");
  expect_refused(lerp->run(test_stream(), {},
                           BinaryParamArgs{.a = da.data(), .b = db.data(), .weight = a_bytes + 8, .out = out.data()}),
                 Code::kMisaligned, "weight.alignment");
  EXPECT_TRUE(out.check());
}

TEST(BinaryRefusals, BackwardPlansCheckArgsAndWorkspace) {
  BARACUDA_REQUIRE_GPU();
  auto out_l = TensorLayout::contiguous(DType::kBF16, {256, 128});
  auto row = TensorLayout::contiguous(DType::kBF16, {128});
  BinaryBackwardDescriptor d{K::kAtan2, out_l, out_l, row, out_l, row};
  auto plan = BinaryBackwardPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value());
  ASSERT_GT(plan->workspace_size(), 0u);
  HostTensor hg(out_l), hb(row);
  fill_random(hg, -1, 1);
  fill_random(hb, 0.5, 1);
  DeviceTensor dg(hg, test_stream()), da(hg, test_stream()), db(hb, test_stream());
  Untouched ga(out_l), gb(row);
  BinaryBackwardArgs args{.grad_out = dg.data(), .a = da.data(), .b = db.data(), .grad_a = ga.data(), .grad_b = gb.data()};
  Workspace small = test_workspace(plan->workspace_size());
  small.bytes = plan->workspace_size() - 1;
  expect_refused(plan->run(test_stream(), small, args), Code::kWorkspaceTooSmall, "workspace.bytes = ");
  auto null_a = args;
  null_a.a = nullptr;  // atan2 reads a
  expect_refused(plan->run(test_stream(), test_workspace(plan->workspace_size()), null_a), Code::kInvalidArgument,
                 "args.a is null");
  EXPECT_TRUE(ga.check());
  EXPECT_TRUE(gb.check());

  // lerp_tensor backward: grad_weight may not alias what the grad_a / grad_b map reads
  auto l = TensorLayout::contiguous(DType::kF32, {64, 64});
  BinaryParamBackwardDescriptor pd{BinaryParamKind::kLerpTensor, 0, l, l, l, l, l, l, l};
  auto pplan = BinaryParamBackwardPlan::select(test_stream(), pd);
  ASSERT_TRUE(pplan.has_value());
  HostTensor hx(l);
  fill_random(hx, -1, 1);
  DeviceTensor pg(hx, test_stream()), pa(hx, test_stream()), pb(hx, test_stream()), pw(hx, test_stream());
  Untouched pga(l), pgb(l);
  BinaryParamBackwardArgs pargs{.grad_out = pg.data(), .a = pa.data(), .b = pb.data(), .weight = pw.data(),
                                .grad_a = pga.data(), .grad_b = pgb.data(), .grad_weight = pg.data()};
  expect_refused(pplan->run(test_stream(), {}, pargs), Code::kInvalidArgument, "args.grad_weight overlaps args.grad_out");
  pargs.grad_weight = pga.data();
  expect_refused(pplan->run(test_stream(), {}, pargs), Code::kInvalidArgument, "overlap (outputs must be distinct)");
  pargs.grad_weight = nullptr;
  expect_refused(pplan->run(test_stream(), {}, pargs), Code::kInvalidArgument, "args.grad_weight is null");
  EXPECT_TRUE(pga.check());
  EXPECT_TRUE(pgb.check());
}

// The five binary plans, table-driven: a null, a misaligned and an unsafely aliased pointer
// each, and for BinaryBackwardPlan (the one with a workspace: a broadcast b is reduced) a
// workspace too small, null and misaligned; outputs poisoned and untouched after.
TEST(BinaryRefusals, EveryPlanRunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto l = contig(DType::kF32, {64, 64});
  const auto row = contig(DType::kF32, {64});
  const auto lb = contig(DType::kBool, {64, 64});
  HostTensor hx(l), hr(row);
  fill_random(hx, 0.5, 1);
  fill_random(hr, 0.5, 1);
  DeviceTensor da(hx, test_stream()), db(hx, test_stream()), dw(hx, test_stream()), drow(hr, test_stream());
  Untouched out(l), bout(lb), ga(l), gb(row), pga(l), pgb(l), pgw(l);
  const void* a = da.data();
  const void* b = db.data();
  const void* w = dw.data();
  const void* a_plus4 = static_cast<const char*>(a) + 4;  // breaks the promised 16 bytes
  void* out_plus4 = static_cast<char*>(out.data()) + 4;
  void* a_row1 = static_cast<float*>(da.data()) + 64;     // overlaps a one row on
  void* b_row1 = static_cast<float*>(db.data()) + 64;
  void* w_row1 = static_cast<float*>(dw.data()) + 64;
  auto bin = BinaryPlan::select(test_stream(), BinaryDescriptor{K::kAtan2, l, l, l});
  auto bwd = BinaryBackwardPlan::select(test_stream(), BinaryBackwardDescriptor{K::kMul, l, l, row, l, row});
  auto cmp = BinaryCmpPlan::select(test_stream(), BinaryCmpDescriptor{BinaryCmpKind::kGt, 0, 0, false, l, l, lb});
  auto par = BinaryParamPlan::select(test_stream(), BinaryParamDescriptor{BinaryParamKind::kLerpTensor, 0, l, l, l, l});
  auto pbw = BinaryParamBackwardPlan::select(
      test_stream(), BinaryParamBackwardDescriptor{BinaryParamKind::kLerpTensor, 0, l, l, l, l, l, l, l});
  ASSERT_TRUE(bin && bwd && cmp && par && pbw);
  const std::size_t need = bwd->workspace_size();
  ASSERT_GT(need, 0u);
  for (std::size_t ws : {bin->workspace_size(), cmp->workspace_size(), par->workspace_size(), pbw->workspace_size()})
    EXPECT_EQ(ws, 0u);
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const BinaryBackwardArgs bargs{.grad_out = b, .a = a, .b = drow.data(), .grad_a = ga.data(), .grad_b = gb.data()};
  auto bwd_with = [&](BinaryBackwardArgs args, Workspace wsp) { return bwd->run(test_stream(), wsp, args); };
  const BinaryParamBackwardArgs pargs{.grad_out = a, .a = a, .b = b, .weight = w,
                                      .grad_a = pga.data(), .grad_b = pgb.data(), .grad_weight = pgw.data()};
  auto pbw_with = [&](BinaryParamBackwardArgs args) { return pbw->run(test_stream(), {}, args); };
  const Stream& s = test_stream();
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w) { return bwd_with(bargs, w); }, ws, need);
  rows.insert(rows.end(),
      {
          {"binary null b", [&] { return bin->run(s, {}, {.a = a, .b = nullptr, .out = out.data()}); }, kBad, "args.b is null"},
          {"binary misaligned out", [&] { return bin->run(s, {}, {.a = a, .b = b, .out = out_plus4}); }, kMis,
           "not aligned to out.alignment = 16"},
          {"binary out over b", [&] { return bin->run(s, {}, {.a = a, .b = b, .out = b_row1}); }, kBad, "args.out overlaps args.b"},
          {"backward null grad_out", [&] { auto g = bargs; g.grad_out = nullptr; return bwd_with(g, {ws.data, need}); }, kBad,
           "args.grad_out is null"},
          {"backward misaligned a", [&] { auto g = bargs; g.a = a_plus4; return bwd_with(g, {ws.data, need}); }, kMis,
           "not aligned to a.alignment = 16"},
          {"backward grad_a over a", [&] { auto g = bargs; g.grad_a = a_row1; return bwd_with(g, {ws.data, need}); }, kBad,
           "args.grad_a overlaps args.a"},
          {"backward grad_b inside grad_a", [&] { auto g = bargs; g.grad_b = ga.data(); return bwd_with(g, {ws.data, need}); },
           kBad, "args.grad_a and args.grad_b overlap"},
          {"cmp null a", [&] { return cmp->run(s, {}, {.a = nullptr, .b = b, .out = bout.data()}); }, kBad, "args.a is null"},
          {"cmp misaligned a", [&] { return cmp->run(s, {}, {.a = a_plus4, .b = b, .out = bout.data()}); }, kMis,
           "not aligned to a.alignment = 16"},
          {"cmp out over a", [&] { return cmp->run(s, {}, {.a = a, .b = b, .out = a_row1}); }, kBad, "args.out overlaps args.a"},
          {"param null weight", [&] { return par->run(s, {}, {.a = a, .b = b, .weight = nullptr, .out = out.data()}); }, kBad,
           "args.weight is null"},
          {"param misaligned out", [&] { return par->run(s, {}, {.a = a, .b = b, .weight = w, .out = out_plus4}); }, kMis,
           "not aligned to out.alignment = 16"},
          {"param out over weight", [&] { return par->run(s, {}, {.a = a, .b = b, .weight = w, .out = w_row1}); }, kBad,
           "args.out overlaps args.weight"},
          {"param backward null weight", [&] { auto g = pargs; g.weight = nullptr; return pbw_with(g); }, kBad,
           "args.weight is null"},
          {"param backward misaligned a", [&] { auto g = pargs; g.a = a_plus4; return pbw_with(g); }, kMis,
           "not aligned to a.alignment = 16"},
          {"param backward grad_b over weight", [&] { auto g = pargs; g.grad_b = w_row1; return pbw_with(g); }, kBad,
           "args.grad_b overlaps args.weight"},
      });
  expect_run_refusals(rows, {&out, &bout, &ga, &gb, &pga, &pgb, &pgw});
}

}  // namespace
}  // namespace baracuda::test
