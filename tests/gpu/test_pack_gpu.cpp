// GPU tests of PackPlan / UnpackPlan (s4 <-> i8, u4 <-> u8, bit <-> bool) against
// reference::pack / unpack, byte-exact: every packed byte of the layout's span (padding 0
// included) for pack, every element for unpack. Layouts: contiguous edge shapes (odd and
// even last dims, rows sharing a byte, empty), sized for the vec16_contig kernel too (a
// 16-element unit per thread, 1024 units a block): totals below one unit, whole units with
// no tail, a guarded partial tile + tail (8193, 16383), a whole tile + tail in the same
// last block (16385), many blocks + tail ([1024, 4097]); padded rows, strided / transposed
// / broadcast unpacked operands, a contiguous pair declared 8-byte aligned (bytes_i64
// only); outputs poisoned, guard bytes checked; run-time refusals.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "baracuda/reference/pack.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct PackCase {
  std::string name;
  TensorLayout plain, packed;  // the unpacked operand (pack: x; unpack: y) and the packed one
};

DType plain_of(DType packed) { return packed == DType::kS4 ? DType::kI8 : packed == DType::kU4 ? DType::kU8 : DType::kBool; }

std::vector<PackCase> pack_cases(DType packed) {
  const DType plain = plain_of(packed);
  const std::int64_t per = packed == DType::kBit ? 8 : 2;
  std::vector<PackCase> cs;
  for (std::vector<std::int64_t> s : std::vector<std::vector<std::int64_t>>{
           {0}, {1}, {7}, {16}, {17}, {31}, {1009}, {4097}, {8193}, {16383}, {16385}, {0, 33}, {3, 0}, {33, 128}, {33, 129}, {3, 5, 7, 11},
           {257, 1031}, {1024, 4096}, {1024, 4097}}) {
    std::string n = "contig[";
    for (auto d : s) n += std::to_string(d) + ",";
    cs.push_back({n + "]", TensorLayout::contiguous(plain, s), TensorLayout::contiguous(packed, s)});
  }
  const std::int64_t padded = (129 + per - 1) / per * per;  // rows on byte boundaries
  cs.push_back({"padded_rows", TensorLayout::contiguous(plain, {33, 129}), TensorLayout::strided(packed, {33, 129}, {padded, 1})});
  cs.push_back({"wide_padding", TensorLayout::contiguous(plain, {5, 3, 9}), TensorLayout::strided(packed, {5, 3, 9}, {3 * 40, 40, 1})});
  cs.push_back({"transposed_plain", TensorLayout::strided(plain, {33, 129}, {1, 33}), TensorLayout::contiguous(packed, {33, 129})});
  cs.push_back({"sliced_plain", TensorLayout::strided(plain, {33, 129}, {258, 2}), TensorLayout::contiguous(packed, {33, 129})});
  cs.push_back({"contig_align8", TensorLayout::contiguous(plain, {33, 129}, 8), TensorLayout::contiguous(packed, {33, 129}, 8)});
  cs.push_back({"scalar", TensorLayout::contiguous(plain, std::vector<std::int64_t>{}),
                TensorLayout::contiguous(packed, std::vector<std::int64_t>{})});
  return cs;
}

void fill_plain_bytes(HostTensor& h) {
  const bool is_bool = h.layout().dtype == DType::kBool;
  for (std::size_t i = 0; i < h.storage_bytes(); ++i) {
    auto b = static_cast<unsigned char>(rng()());
    h.storage()[i] = std::byte{is_bool ? static_cast<unsigned char>(b & 1) : b};  // every i8 / u8 value: saturation too
  }
}

// Every byte of the packed layout's span. An empty tensor has no span (its host buffer keeps
// one placeholder byte), so the plan must have written nothing: the poison must survive.
constexpr unsigned kPackedPoison = 0xA7;
::testing::AssertionResult same_storage(const HostTensor& got, const HostTensor& want, const std::string& what) {
  if (got.storage_bytes() != want.storage_bytes()) return ::testing::AssertionFailure() << what << ": storage sizes differ";
  if (got.layout().numel() == 0) {
    for (std::size_t i = 0; i < got.storage_bytes(); ++i)
      if (static_cast<unsigned>(got.storage()[i]) != kPackedPoison)
        return ::testing::AssertionFailure() << what << ": an empty output was written (byte " << i << ")";
    return ::testing::AssertionSuccess();
  }
  std::int64_t bad = 0;
  std::string first;
  for (std::size_t i = 0; i < got.storage_bytes(); ++i) {
    const auto g = static_cast<unsigned>(got.storage()[i]), w = static_cast<unsigned>(want.storage()[i]);
    if (g != w && bad++ < 5) first += "\n  byte " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " bytes differ (seed " << test_seed() << ")" << first;
}

// Elements (not padding bytes: an unpacked output's gaps are not written).
::testing::AssertionResult same_elements(const HostTensor& got, const HostTensor& want, const std::string& what) {
  std::int64_t bad = 0;
  std::string first;
  for (std::int64_t i = 0; i < got.layout().numel(); ++i) {
    const auto g = reference::load_as_int64(got.layout().dtype, got.data(), reference::offset_of(got.layout(), i));
    const auto w = reference::load_as_int64(want.layout().dtype, want.data(), reference::offset_of(want.layout(), i));
    if (g != w && bad++ < 5) first += "\n  [" + std::to_string(i) + "] got " + std::to_string(g) + ", want " + std::to_string(w);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " elements differ (seed " << test_seed() << ")" << first;
}

class PackGpu : public ::testing::TestWithParam<DType> {};

TEST_P(PackGpu, PackByteExact) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : pack_cases(GetParam())) {
    SCOPED_TRACE(c.name);
    PackDescriptor d{c.plain, c.packed};
    HostTensor hx(c.plain), hy(c.packed);
    fill_plain_bytes(hx);
    auto want = reference::pack(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    for_each_sku<PackPlan>(
        d,
        [&] {
          dx.upload(hx, test_stream());
          dy.poison(kPackedPoison, test_stream());
        },
        [&](const PackPlan& p, Workspace ws) { return p.run(test_stream(), ws, PackArgs{.x = dx.data(), .y = dy.data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy.download(hy, test_stream()));
          EXPECT_TRUE(same_storage(hy, want.value(), sku + " " + d.to_string()));
        });
  }
}

TEST_P(PackGpu, PackBroadcastRow) {
  BARACUDA_REQUIRE_GPU();
  const DType packed = GetParam();
  PackDescriptor d{TensorLayout::contiguous(plain_of(packed), {129}), TensorLayout::contiguous(packed, {33, 129})};
  HostTensor hx(d.x), hy(d.y);
  fill_plain_bytes(hx);
  auto want = reference::pack(d, hx);
  ASSERT_TRUE(want.has_value());
  DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
  for_each_sku<PackPlan>(
      d, [&] { dy.poison(kPackedPoison, test_stream()); },
      [&](const PackPlan& p, Workspace ws) { return p.run(test_stream(), ws, PackArgs{.x = dx.data(), .y = dy.data()}); },
      [&](const std::string& sku) {
        ASSERT_TRUE(dy.download(hy, test_stream()));
        EXPECT_TRUE(same_storage(hy, want.value(), sku));
      });
}

TEST_P(PackGpu, UnpackExact) {
  BARACUDA_REQUIRE_GPU();
  for (const auto& c : pack_cases(GetParam())) {
    SCOPED_TRACE(c.name);
    UnpackDescriptor d{c.packed, c.plain};
    HostTensor hx(c.packed), hy(c.plain);
    for (std::size_t i = 0; i < hx.storage_bytes(); ++i) hx.storage()[i] = std::byte{static_cast<unsigned char>(rng()())};
    auto want = reference::unpack(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    for_each_sku<UnpackPlan>(
        d,
        [&] {
          dx.upload(hx, test_stream());
          dy.poison(kPackedPoison, test_stream());
        },
        [&](const UnpackPlan& p, Workspace ws) { return p.run(test_stream(), ws, UnpackArgs{.x = dx.data(), .y = dy.data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy.download(hy, test_stream()));
          EXPECT_TRUE(same_elements(hy, want.value(), sku + " " + d.to_string()));
        });
  }
}

TEST_P(PackGpu, RoundTrip) {
  BARACUDA_REQUIRE_GPU();
  const DType packed = GetParam();
  const auto plain = TensorLayout::contiguous(plain_of(packed), {257, 1031});
  const auto pk = TensorLayout::contiguous(packed, {257, 1031});
  auto pack_plan = PackPlan::select(test_stream(), PackDescriptor{plain, pk});
  auto unpack_plan = UnpackPlan::select(test_stream(), UnpackDescriptor{pk, plain});
  ASSERT_TRUE(pack_plan.has_value() && unpack_plan.has_value());
  HostTensor hx(plain), hp(pk), hz(plain);
  for (std::int64_t i = 0; i < plain.numel(); ++i)  // values in range: the round trip is the identity
    hx.set(i, static_cast<double>(reference::unpack_code(packed, static_cast<unsigned>(rng()() % (packed == DType::kBit ? 2 : 16)))));
  DeviceTensor dx(hx, test_stream()), dp(hp, test_stream()), dz(hz, test_stream());
  ASSERT_TRUE(pack_plan->run(test_stream(), {}, PackArgs{.x = dx.data(), .y = dp.data()}));
  ASSERT_TRUE(unpack_plan->run(test_stream(), {}, UnpackArgs{.x = dp.data(), .y = dz.data()}));
  ASSERT_TRUE(dz.download(hz, test_stream()));
  EXPECT_TRUE(same_elements(hz, hx, "round trip"));
}

INSTANTIATE_TEST_SUITE_P(Packed, PackGpu, ::testing::Values(DType::kS4, DType::kU4, DType::kBit),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(PackGpuRefusals, NullAndAliasingLeaveOutputUntouched) {
  BARACUDA_REQUIRE_GPU();
  const auto plain = TensorLayout::contiguous(DType::kI8, {64});
  const auto pk = TensorLayout::contiguous(DType::kS4, {64});
  auto plan = PackPlan::select(test_stream(), PackDescriptor{plain, pk});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor hx(plain), hy(pk);
  fill_plain_bytes(hx);
  DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
  dy.poison(0x5A, test_stream());
  const Status null_x = plan->run(test_stream(), {}, PackArgs{.x = nullptr, .y = dy.data()});
  EXPECT_NE(null_x.message().find("args.x is null"), std::string::npos) << null_x.to_string();
  const Status alias = plan->run(test_stream(), {}, PackArgs{.x = dx.data(), .y = dx.data()});
  EXPECT_NE(alias.message().find("unsafe aliasing"), std::string::npos) << alias.to_string();
  const Status mis = plan->run(test_stream(), {}, PackArgs{.x = static_cast<char*>(dx.data()) + 1, .y = dy.data()});
  EXPECT_EQ(mis.code(), Code::kMisaligned) << mis.to_string();
  ASSERT_TRUE(dy.download(hy, test_stream()));
  for (std::size_t i = 0; i < hy.storage_bytes(); ++i) ASSERT_EQ(static_cast<unsigned>(hy.storage()[i]), 0x5Au) << i;
}

// Both plans, table-driven: null, misaligned and aliased pointers name their field; pack and
// unpack change the element size, so any overlap of x and y is refused. No workspace.
TEST(PackGpuRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto plain = TensorLayout::contiguous(DType::kI8, {64});
  const auto pk = TensorLayout::contiguous(DType::kS4, {64});
  auto pack = PackPlan::select(test_stream(), PackDescriptor{plain, pk});
  auto unpack = UnpackPlan::select(test_stream(), UnpackDescriptor{pk, plain});
  ASSERT_TRUE(pack && unpack);
  EXPECT_EQ(pack->workspace_size(), 0u);
  EXPECT_EQ(unpack->workspace_size(), 0u);
  HostTensor hx(plain), hp(pk);
  fill_plain_bytes(hx);
  DeviceTensor dx(hx, test_stream()), dp(hp, test_stream());
  Untouched packed(pk), unpacked(plain);
  const void* x = dx.data();
  const void* p = dp.data();
  auto pk_run = [&](const void* in, void* o) { return pack->run(test_stream(), {}, PackArgs{.x = in, .y = o}); };
  auto un_run = [&](const void* in, void* o) { return unpack->run(test_stream(), {}, UnpackArgs{.x = in, .y = o}); };
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  expect_run_refusals(
      {
          {"pack null y", [&] { return pk_run(x, nullptr); }, kBad, "args.y is null"},
          {"pack misaligned x", [&] { return pk_run(static_cast<const char*>(x) + 1, packed.data()); }, kMis,
           "not aligned to x.alignment = 16"},
          {"pack y over x", [&] { return pk_run(x, static_cast<char*>(dx.data()) + 16); }, kBad, "args.y overlaps args.x"},
          {"unpack null x", [&] { return un_run(nullptr, unpacked.data()); }, kBad, "args.x is null"},
          {"unpack misaligned y", [&] { return un_run(p, static_cast<char*>(unpacked.data()) + 1); }, kMis,
           "not aligned to y.alignment = 16"},
          {"unpack y over x", [&] { return un_run(p, dp.data()); }, kBad, "args.y overlaps args.x"},
      },
      {&packed, &unpacked});
}

}  // namespace
}  // namespace baracuda::test
