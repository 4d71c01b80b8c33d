// GroupedGemmPlan on the device against reference::grouped_gemm: empty groups, skinny groups
// (M = 1..16), odd sizes (primes), both weight orders, every dtype; outputs poisoned and
// every element checked, guard bytes; run-time refusals with D untouched.
// Filter: --gtest_filter='*GroupedGemm*'.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "baracuda/reference/gemm.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

GroupedGemmDescriptor grouped(DType t, std::vector<std::int64_t> m, std::int64_t n, std::int64_t k, MatrixOrder bo) {
  GroupedGemmDescriptor d;
  d.dtype = t;
  d.n = n;
  d.k = k;
  d.group_m = std::move(m);
  d.b_order = bo;
  return d;
}

void run_grouped(const GroupedGemmDescriptor& d, double alpha) {
  SCOPED_TRACE(d.to_string());
  const std::int64_t M = d.total_m();
  HostTensor ha(TensorLayout::contiguous(d.dtype, {M, d.k})), hb(TensorLayout::contiguous(d.dtype, {d.groups(), d.k, d.n}));
  HostTensor hd(TensorLayout::contiguous(d.dtype, {M, d.n}));
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  const Stream& s = test_stream();
  auto plan = GroupedGemmPlan::select(s, d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  DeviceTensor da(ha, s), db(hb, s), dd(hd, s);
  dd.poison(0xFF, s);
  Status st = plan->run(s, test_workspace(plan->workspace_size()),
                        GroupedGemmArgs{.a = da.data(), .b = db.data(), .d = dd.data(), .alpha = alpha});
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  auto oracle = reference::grouped_gemm(d, ha, hb, alpha);
  ASSERT_TRUE(oracle.has_value()) << oracle.error().to_string();
  ASSERT_TRUE(dd.download(hd, s)) << "guard bytes around d";
  // compare_gemm_d reads a [batch, M, N] layout
  HostTensor h3(reference::batched_layout(MatrixLayout{d.dtype, M, d.n, d.n, MatrixOrder::kRowMajor, 16}, 1, M * d.n));
  std::memcpy(h3.data(), hd.data(), static_cast<std::size_t>(M * d.n) * dtype_size(d.dtype));
  auto cmp = reference::compare_gemm_d(h3, *oracle);
  EXPECT_TRUE(cmp.ok) << cmp.detail;
}

class GroupedGemmGpu : public ::testing::TestWithParam<DType> {};

TEST_P(GroupedGemmGpu, EmptySkinnyOddGroups) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (MatrixOrder bo : {MatrixOrder::kRowMajor, MatrixOrder::kColMajor}) {
    run_grouped(grouped(t, {0, 1, 7, 129, 0, 64, 3, 16}, 256, 128, bo), 1.0);  // empty, skinny, odd
    run_grouped(grouped(t, {13, 0, 31, 2}, 131, 67, bo), 0.5);                   // odd N, K: unaligned group starts
    run_grouped(grouped(t, {0, 0, 5}, 64, 32, bo), 1.0);                        // leading empty groups
    run_grouped(grouped(t, {1024, 1, 512}, 512, 1024, bo), 1.0);               // large groups
  }
}

TEST_P(GroupedGemmGpu, AllGroupsEmpty) {
  BARACUDA_REQUIRE_GPU();
  auto d = grouped(GetParam(), {0, 0, 0}, 64, 32, MatrixOrder::kRowMajor);
  auto plan = GroupedGemmPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_TRUE(plan->run(test_stream(), test_workspace(plan->workspace_size()), GroupedGemmArgs{}).is_ok());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GroupedGemmGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(GroupedGemmRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  auto d = grouped(DType::kBF16, {5, 0, 11}, 64, 32, MatrixOrder::kColMajor);
  auto plan = GroupedGemmPlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor ha(TensorLayout::contiguous(d.dtype, {16, 32})), hb(TensorLayout::contiguous(d.dtype, {3, 32, 64}));
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  const Stream& s = test_stream();
  DeviceTensor da(ha, s), db(hb, s);
  Untouched dout(TensorLayout::contiguous(d.dtype, {16, 64}));
  const GroupedGemmArgs ok{.a = da.data(), .b = db.data(), .d = dout.data()};
  const std::size_t need = plan->workspace_size();
  const Code bad = Code::kInvalidArgument;
  expect_arg_run_refusals<GroupedGemmArgs>(
      "grouped_gemm", ok, [&](Workspace w, const GroupedGemmArgs& a) { return plan->run(s, w, a); },
      test_workspace(need + kWorkspaceAlignment), need,
      {
          {"null b", [](GroupedGemmArgs& a) { a.b = nullptr; }, bad, "args.b is null"},
          {"null a", [](GroupedGemmArgs& a) { a.a = nullptr; }, bad, "args.a is null"},
          {"null d", [](GroupedGemmArgs& a) { a.d = nullptr; }, bad, "args.d is null"},
          {"misaligned a", [&](GroupedGemmArgs& a) { a.a = static_cast<const char*>(da.data()) + 2; }, Code::kMisaligned,
           "args.a is not aligned"},
          {"misaligned b", [&](GroupedGemmArgs& a) { a.b = static_cast<const char*>(db.data()) + 2; }, Code::kMisaligned,
           "args.b is not aligned to alignment = 16 bytes"},
          {"misaligned d", [&](GroupedGemmArgs& a) { a.d = static_cast<char*>(dout.data()) + 2; }, Code::kMisaligned,
           "args.d is not aligned to alignment = 16 bytes"},
          {"d aliases a", [](GroupedGemmArgs& a) { a.a = a.d; }, bad, "args.d overlaps args.a"},
          {"a starts inside d", [](GroupedGemmArgs& a) { a.a = static_cast<const char*>(a.d) + 256; }, bad, "args.d overlaps args.a"},
          {"d inside the last group's weight", [&](GroupedGemmArgs& a) { a.d = const_cast<char*>(static_cast<const char*>(a.b)) + 2 * 32 * 64 * 2; },
           bad, "args.d overlaps args.b"},
      },
      {&dout});
}

}  // namespace
}  // namespace baracuda::test
