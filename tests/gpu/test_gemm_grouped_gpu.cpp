// GroupedGemmPlan on the device against reference::grouped_gemm: empty groups, skinny groups
// (M = 1..16), odd sizes (primes), both weight orders, every dtype; outputs poisoned and
// every element checked, guard bytes; every SKU forced, 64 groups, alpha, an alignment promise
// of one element (pointers off a 16-byte boundary); run-time refusals with D untouched.
// Filter: --gtest_filter='*GroupedGemm*'.
#include <gtest/gtest.h>

#include <algorithm>
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

// `t` behind `shift` leading elements (a device copy whose element 0 sits `shift` elements
// past the 256-byte aligned base), the lead bytes 0xFF.
HostTensor shifted(const HostTensor& t, std::int64_t shift) {
  HostTensor s(TensorLayout::contiguous(t.layout().dtype, {t.layout().numel() + shift}));
  const std::size_t lead = static_cast<std::size_t>(shift) * dtype_size(t.layout().dtype);
  std::memset(s.storage(), 0xFF, lead);
  std::memcpy(s.storage() + lead, t.storage(), t.storage_bytes());
  return s;
}

// One grouped case under every SKU that accepts it (for_each_sku forces each), with a, b and d
// `shift` elements past a 16-byte boundary (the descriptor's alignment promise must allow it);
// d poisoned, every element checked, d's lead bytes and guard bytes untouched.
int run_grouped_every_sku(const GroupedGemmDescriptor& d, double alpha, std::int64_t shift) {
  SCOPED_TRACE(d.to_string() + " alpha " + std::to_string(alpha) + " shift " + std::to_string(shift));
  const std::int64_t M = d.total_m();
  HostTensor ha(TensorLayout::contiguous(d.dtype, {M, d.k})), hb(TensorLayout::contiguous(d.dtype, {d.groups(), d.k, d.n}));
  fill_random(ha, -1, 1);
  fill_random(hb, -1, 1);
  HostTensor hd(TensorLayout::contiguous(d.dtype, {M * d.n + shift}));
  const Stream& s = test_stream();
  DeviceTensor da(shifted(ha, shift), s), db(shifted(hb, shift), s), dd(hd, s);
  const std::size_t lead = static_cast<std::size_t>(shift) * dtype_size(d.dtype);
  auto oracle = reference::grouped_gemm(d, ha, hb, alpha);
  EXPECT_TRUE(oracle.has_value()) << (oracle ? "" : oracle.error().to_string());
  if (!oracle) return 0;
  return for_each_sku<GroupedGemmPlan>(
      d, [&] { dd.poison(0xFF, s); },
      [&](const GroupedGemmPlan& p, Workspace ws) {
        return p.run(s, ws,
                     GroupedGemmArgs{.a = static_cast<const char*>(da.data()) + lead, .b = static_cast<const char*>(db.data()) + lead,
                                     .d = static_cast<char*>(dd.data()) + lead, .alpha = alpha});
      },
      [&](const std::string& sku) {
        SCOPED_TRACE(sku);
        EXPECT_TRUE(dd.download(hd, s)) << "guard bytes around d";
        const auto* bytes = reinterpret_cast<const unsigned char*>(hd.storage());
        EXPECT_TRUE(std::all_of(bytes, bytes + lead, [](unsigned char c) { return c == 0xFF; })) << "bytes before d written";
        HostTensor h3(reference::batched_layout(MatrixLayout{d.dtype, M, d.n, d.n, MatrixOrder::kRowMajor, 16}, 1, M * d.n));
        std::memcpy(h3.data(), bytes + lead, static_cast<std::size_t>(M * d.n) * dtype_size(d.dtype));
        auto cmp = reference::compare_gemm_d(h3, *oracle);
        EXPECT_TRUE(cmp.ok) << cmp.detail;
      });
}

// Every SKU forced (cublaslt_loop, the one candidate), alpha != 1, the pointers' promise
// lowered to one element (alignment = the dtype's size, a, b and d one element off a 16-byte
// boundary: each group's GEMM gets its own, lower, pointer alignment), and many groups (64,
// M = 0..16: skinny and empty mixed) under both weight orders.
TEST_P(GroupedGemmGpu, EverySkuLowAlignmentAndManyGroups) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  int runs = 0;
  for (MatrixOrder bo : {MatrixOrder::kRowMajor, MatrixOrder::kColMajor}) {
    auto low = grouped(t, {5, 0, 13, 1, 7}, 96, 40, bo);
    low.alignment = static_cast<int>(dtype_size(t));
    runs += run_grouped_every_sku(low, -1.25, 1);
    std::vector<std::int64_t> many(64);
    for (std::size_t g = 0; g < many.size(); ++g) many[g] = static_cast<std::int64_t>(g * 7 % 17);
    runs += run_grouped_every_sku(grouped(t, many, 64, 48, bo), 0.5, 0);
  }
  RecordProperty("skus_run", runs);
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
