// GroupedGemmPlan on the CPU: the oracle against per-group GEMMs, select from caps (one
// cuBLASLt GEMM per distinct shape), select-time refusals naming field and value, run-time
// argument checks on fake pointers. Filter: --gtest_filter='*GroupedGemm*'.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/gemm.hpp"
#include "gemm/lt_gemm.hpp"
#include "gemm_descriptors.hpp"

namespace baracuda {
namespace {

using reference::HostTensor;

GroupedGemmDescriptor grouped(DType t, std::vector<std::int64_t> m, std::int64_t n, std::int64_t k,
                              MatrixOrder bo = MatrixOrder::kRowMajor) {
  GroupedGemmDescriptor d;
  d.dtype = t;
  d.n = n;
  d.k = k;
  d.group_m = std::move(m);
  d.b_order = bo;
  return d;
}

TEST(GroupedGemmReference, GroupsUseTheirOwnWeights) {
  // groups of 1, 0 and 2 rows; K = 2, N = 2; B_0 = I, B_1 unused, B_2 = 2 I
  auto d = grouped(DType::kF64, {1, 0, 2}, 2, 2);
  HostTensor a(TensorLayout::contiguous(DType::kF64, {3, 2})), b(TensorLayout::contiguous(DType::kF64, {3, 2, 2}));
  const double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {1, 0, 0, 1, 9, 9, 9, 9, 2, 0, 0, 2};
  for (int i = 0; i < 6; ++i) a.set(i, av[i]);
  for (int i = 0; i < 12; ++i) b.set(i, bv[i]);
  auto o = reference::grouped_gemm(d, a, b, 1.0);
  ASSERT_TRUE(o.has_value()) << o.error().to_string();
  EXPECT_EQ(o->m, 3);
  EXPECT_EQ(o->d, (std::vector<double>{1, 2, 6, 8, 10, 12}));
  // column-major weights: B_2 read as its transpose
  d.b_order = MatrixOrder::kColMajor;
  b.set(9, 1.0);  // B_2 column-major: element (k = 1, j = 0) at j * K + k = 1 -> offset 8 + 1
  o = reference::grouped_gemm(d, a, b, 1.0);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->d, (std::vector<double>{1, 2, 6 + 4, 8, 10 + 6, 12}));
}

TEST(GroupedGemmSelect, OnePlanPerShapeFromCaps) {
  const DeviceCaps caps = DeviceCaps::for_arch(90).value();
  auto p = GroupedGemmPlan::select_for_caps(caps, grouped(DType::kBF16, {0, 1, 7, 129, 0, 64, 3}, 256, 128));
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->sku().name(), "grouped_gemm.fwd.cublaslt_loop[bf16,f32].sm80+");
  EXPECT_EQ(p->workspace_size(), 0u);  // no device: cuBLASLt not queried
  EXPECT_TRUE(GroupedGemmPlan::select_for_caps(caps, grouped(DType::kF32, {5, 5}, 16, 8, MatrixOrder::kColMajor)).has_value());
}

TEST(GroupedGemmRefusals, SelectNamesFieldAndValue) {
  test_gemm::expect_select_rows<GroupedGemmPlan>(
      grouped(DType::kBF16, {4, 0, 9}, 64, 32), std::vector<test_gemm::SelectRefusalRow<GroupedGemmDescriptor>>{
                                                     {[](auto& t) { t.dtype = DType::kI8; }, "dtype = i8"},
                                                     {[](auto& t) { t.group_m[1] = -2; }, "group_m[1] = -2 is negative"},
                                                     {[](auto& t) { t.group_m.clear(); }, "group_m is empty"},
                                                     {[](auto& t) { t.k = 0; }, "k = 0"},
                                                     {[](auto& t) { t.n = -1; }, "n = -1 is negative"},
                                                     {[](auto& t) { t.alignment = 1; }, "alignment = 1 bytes"},
                                                     {[](auto& t) { t.alignment = 12; }, "alignment = 12 bytes"},
                                                 });
  // The groups' offsets: every group fits, the packing of all of them leaves 64-bit indexing.
  const std::int64_t big = std::int64_t{1} << 56;
  test_gemm::expect_select_rows<GroupedGemmPlan>(
      grouped(DType::kBF16, {4, 0, 9}, 64, 32), std::vector<test_gemm::SelectRefusalRow<GroupedGemmDescriptor>>{
          {[](auto& t) { t.group_m = {1, std::int64_t{1} << 62, std::int64_t{1} << 62}; t.n = 1; t.k = 1; },
           "group_m sums to more than 2^62 rows"},
          {[big](auto& t) { t.group_m = {1, big, big, big, big}; },
           "a (all groups) = bf16[288230376151711745,32] is too large for 64-bit indexing"},
          {[big](auto& t) { t.group_m = {1, big, big, big, big}; t.k = 8; },
           "d (all groups) = bf16[288230376151711745,64] is too large for 64-bit indexing"},
          {[](auto& t) { t.group_m = {1, 0, 0, 0}; t.k = std::int64_t{1} << 30; t.n = std::int64_t{1} << 31; },
           "b (all groups) = bf16[4,1073741824,2147483648] is too large for 64-bit indexing"},
      });
}

TEST(GroupedGemmRefusals, RunArgChecks) {
  auto d = grouped(DType::kF16, {3, 0, 5}, 64, 32);  // A 8 x 32, B 3 x 32 x 64, D 8 x 64 (f16)
  auto* base = reinterpret_cast<char*>(std::uintptr_t{1} << 30);
  GroupedGemmArgs ok{.a = base, .b = base + 4096, .d = base + 65536};
  const Code bad = Code::kInvalidArgument;
  test_gemm::expect_arg_refusals<GroupedGemmArgs>(
      [&](const GroupedGemmArgs& a) { return gemm::check_grouped_gemm_args(d, a); }, ok,
      {
          {[](GroupedGemmArgs& a) { a.a = nullptr; }, bad, "args.a is null"},
          {[](GroupedGemmArgs& a) { a.d = nullptr; }, bad, "args.d is null"},
          {[&](GroupedGemmArgs& a) { a.b = base + 4096 + 2; }, Code::kMisaligned, "args.b is not aligned to alignment = 16"},
          {[&](GroupedGemmArgs& a) { a.d = base + 256; }, bad, "args.d overlaps args.a"},
          {[&](GroupedGemmArgs& a) { a.d = base + 4096 + 1024; }, bad, "args.d overlaps args.b"},
      });
  auto empty = grouped(DType::kF16, {0, 0}, 64, 32);
  EXPECT_TRUE(gemm::check_grouped_gemm_args(empty, GroupedGemmArgs{}).is_ok());  // nothing read or written
}

}  // namespace
}  // namespace baracuda
