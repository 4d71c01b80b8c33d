// GPU tests of CastPlan: every pair among f64, f32, f16, bf16, e4m3, e5m2, i64, i32, i16,
// i8, u8 and bool (both fp8 overflow modes where the output is fp8), bit-exact against
// reference::cast_exact (NaN matches any NaN; everything else, signed zero included, must
// have identical bits). Sources of 16 bits or fewer run every bit pattern; wider ones run
// random patterns of every magnitude plus the rounding / saturation boundaries. Layouts:
// contiguous edge shapes, transposed, sliced, broadcast, negative strides, padded rows,
// transposed and under-aligned outputs, in place; every accepting SKU, poisoned outputs and
// guard bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/reference/cast.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

const DType kCastAll[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2,
                          DType::kI64, DType::kI32, DType::kI16, DType::kI8,   DType::kU8,   DType::kBool};

struct CastCase {
  std::string name;
  TensorLayout x, y;
  bool all_patterns = false;
  bool in_place = false;
};

std::string shape_name(const std::vector<std::int64_t>& s) {
  std::string n = "contig[";
  for (auto d : s) n += std::to_string(d) + ",";
  return n + "]";
}

std::vector<CastCase> cast_cases(DType from, DType to) {
  std::vector<CastCase> cs;
  const std::int64_t patterns = from == DType::kBool ? 2 : dtype_size(from) <= 2 ? std::int64_t{1} << (8 * dtype_size(from))
                                                                                 : std::int64_t{1} << 20;
  cs.push_back({"all_patterns", TensorLayout::contiguous(from, {patterns}), TensorLayout::contiguous(to, {patterns}), true});
  std::vector<std::vector<std::int64_t>> shapes = {{0}, {1}, {7}, {1009}, {4097}, {33, 129}, {3, 5, 7, 11}, {257, 1031}};
  if ((from == DType::kF32 && to == DType::kBF16) || (from == DType::kI32 && to == DType::kF32) ||
      (from == DType::kBF16 && to == DType::kF32))
    shapes.push_back({8192, 4099});  // > L2
  for (const auto& s : shapes) cs.push_back({shape_name(s), TensorLayout::contiguous(from, s), TensorLayout::contiguous(to, s)});
  const auto out = TensorLayout::contiguous(to, {33, 129});
  cs.push_back({"transposed_in", TensorLayout::strided(from, {33, 129}, {1, 33}), out});
  cs.push_back({"sliced_in", TensorLayout::strided(from, {33, 129}, {258, 2}), out});
  cs.push_back({"broadcast_row", TensorLayout::contiguous(from, {129}), out});
  cs.push_back({"broadcast_col", TensorLayout::contiguous(from, {33, 1}), out});
  cs.push_back({"negative_stride", TensorLayout::strided(from, {33, 129}, {129, -1}), out});
  // rows padded to 144 elements (a multiple of every vector width but 16): vec16_rows when both are >= 2 bytes
  cs.push_back({"padded_rows", TensorLayout::strided(from, {33, 128}, {144, 1}), TensorLayout::contiguous(to, {33, 128})});
  cs.push_back({"padded_rows16", TensorLayout::strided(from, {33, 128}, {160, 1}), TensorLayout::strided(to, {33, 128}, {176, 1})});
  cs.push_back({"transposed_out", TensorLayout::contiguous(from, {33, 129}), TensorLayout::strided(to, {33, 129}, {1, 33})});
  cs.push_back({"align2", TensorLayout::contiguous(from, {33, 129}), TensorLayout::contiguous(to, {33, 129}, 2)});
  if (from == to) cs.push_back({"in_place", TensorLayout::contiguous(from, {257, 1031}), TensorLayout::contiguous(to, {257, 1031}), false, true});
  return cs;
}

void put_bits(HostTensor& h, std::int64_t i, std::uint64_t bits) {
  const auto s = dtype_size(h.layout().dtype);
  if (h.layout().dtype == DType::kBool) bits &= 1;
  std::memcpy(static_cast<unsigned char*>(h.data()) + reference::offset_of(h.layout(), i) * static_cast<std::int64_t>(s), &bits, s);
}

// The boundaries of the rules: ties and overflow thresholds of every target, integer limits,
// truncation and saturation points (written after the random fill, at the first positions).
std::vector<double> float_specials() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0, -0.0, inf, -inf, std::nan(""), -std::nan(""), 0.5, -0.5, 0.999, -0.999, 1.5, -1.5, -1.0, 127.9, 128.0,
          -128.7, -129.0, 255.5, 256.0, 300.7, -300.7, 32767.9, 32768.0, -32769.0, 65519.0, 65520.0, 448.0, 464.0, 480.0,
          57344.0, 61440.0, 2147483647.0, 2147483648.0, -2147483649.0, 3e9, -3e9, 9.2e18, 9223372036854775808.0,
          -9223372036854775808.0, 1e19, -1e19, 3.4e38, -3.4e38, 1e-40, -1e-40, 6e-8, 1e-300, 1e300, -1e300,
          1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 9007199254740993.0, 4503599627370497.5};
}
std::vector<std::int64_t> int_specials() {
  const std::int64_t mx = std::numeric_limits<std::int64_t>::max(), mn = std::numeric_limits<std::int64_t>::min();
  const std::int64_t p30 = std::int64_t{1} << 30, p60 = std::int64_t{1} << 60;
  return {0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65504, 65519, 65520, 448, 464, 465,
          57344, 61439, 61440, 2147483647, -2147483647 - 1, (std::int64_t{1} << 24) + 1, p30 + (1 << 22),
          p30 + (1 << 22) + 1, p30 + 3 * (1 << 22), -(p30 + (1 << 22) + 1), p60 + (std::int64_t{1} << 36),
          p60 + (std::int64_t{1} << 36) + 1, p60 + (std::int64_t{1} << 52) + 1, (std::int64_t{1} << 53) + 1, mx, mn,
          mn + 1, -mx};
}

void fill_source(HostTensor& h, bool all_patterns) {
  const DType t = h.layout().dtype;
  const std::int64_t n = h.layout().numel();
  if (n == 0) return;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t bits = static_cast<std::uint64_t>(i);
    if (!all_patterns || dtype_size(t) > 2) {
      bits = rng()();
      if (!dtype_is_floating(t)) bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(bits) >> (rng()() % 64));
    }
    put_bits(h, i, bits);
  }
  if (all_patterns && dtype_size(t) <= 2) return;  // every pattern is there already
  if (t == DType::kF32 || t == DType::kF64) {
    if (!all_patterns) {  // layout cases: values in the integer ranges rather than raw bits
      std::uniform_real_distribution<double> u(-70000.0, 70000.0);
      for (std::int64_t i = 0; i < n; ++i) h.set(i, u(rng()));
    }
    const auto sp = float_specials();
    for (std::size_t k = 0; k < sp.size() && static_cast<std::int64_t>(k) < n; ++k) h.set(static_cast<std::int64_t>(k), sp[k]);
  } else if (dtype_is_floating(t)) {
    const auto sp = float_specials();
    for (std::size_t k = 0; k < sp.size() && static_cast<std::int64_t>(k) < n; ++k) h.set(static_cast<std::int64_t>(k), sp[k]);
  } else {
    const auto sp = int_specials();
    for (std::size_t k = 0; k < sp.size() && static_cast<std::int64_t>(k) < n; ++k)
      put_bits(h, static_cast<std::int64_t>(k), static_cast<std::uint64_t>(sp[k]));
  }
}

// Identical bits per element, except that a NaN matches any NaN.
::testing::AssertionResult same_bits(const HostTensor& got, const HostTensor& want, const HostTensor& x,
                                     const TensorLayout& xview, const std::string& what) {
  const DType t = got.layout().dtype;
  const auto s = dtype_size(t);
  std::int64_t bad = 0;
  std::string first;
  for (std::int64_t i = 0; i < got.layout().numel(); ++i) {
    const auto* g = static_cast<const unsigned char*>(got.data()) + reference::offset_of(got.layout(), i) * static_cast<std::int64_t>(s);
    const auto* w = static_cast<const unsigned char*>(want.data()) + reference::offset_of(want.layout(), i) * static_cast<std::int64_t>(s);
    if (std::memcmp(g, w, s) == 0) continue;
    if (dtype_is_floating(t) && std::isnan(reference::load_as_double(t, g, 0)) && std::isnan(reference::load_as_double(t, w, 0)))
      continue;
    if (bad++ < 5) {
      std::uint64_t gb = 0, wb = 0, xb = 0;
      std::memcpy(&gb, g, s);
      std::memcpy(&wb, w, s);
      const auto xs = dtype_size(x.layout().dtype);
      std::memcpy(&xb, static_cast<const unsigned char*>(x.data()) + reference::offset_of(xview, i) * static_cast<std::int64_t>(xs), xs);
      char buf[160];
      std::snprintf(buf, sizeof buf, "\n  [%lld] x bits 0x%llx: got 0x%llx, want 0x%llx", static_cast<long long>(i),
                    static_cast<unsigned long long>(xb), static_cast<unsigned long long>(gb), static_cast<unsigned long long>(wb));
      first += buf;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.layout().numel() << " elements differ (seed "
                                       << test_seed() << ")" << first;
}

class CastAllPairsGpu : public ::testing::TestWithParam<std::tuple<DType, DType, Fp8Overflow>> {};

TEST_P(CastAllPairsGpu, BitExact) {
  BARACUDA_REQUIRE_GPU();
  auto [from, to, mode] = GetParam();
  for (const auto& c : cast_cases(from, to)) {
    SCOPED_TRACE(c.name);
    CastDescriptor d{c.x, c.y, mode};
    HostTensor hx(c.x), hy(c.y);
    fill_source(hx, c.all_patterns);
    auto want = reference::cast_exact(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    const TensorLayout xview = broadcast_to(c.x, c.y.rank, c.y.shape, "x").value();
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    void* y_ptr = c.in_place ? dx.data() : dy.data();
    for_each_sku<CastPlan>(
        d,
        [&] {
          dx.upload(hx, test_stream());
          dy.poison(0xFF, test_stream());
        },
        [&](const CastPlan& p, Workspace ws) { return p.run(test_stream(), ws, CastArgs{.x = dx.data(), .y = y_ptr}); },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
          EXPECT_TRUE(same_bits(hy, want.value(), hx, xview, sku + " " + d.to_string()));
        });
  }
}

std::vector<std::tuple<DType, DType, Fp8Overflow>> all_pairs() {
  std::vector<std::tuple<DType, DType, Fp8Overflow>> v;
  for (DType a : kCastAll)
    for (DType b : kCastAll) {
      v.emplace_back(a, b, Fp8Overflow::kPyTorch);
      if (b == DType::kE4M3 || b == DType::kE5M2) v.emplace_back(a, b, Fp8Overflow::kSaturate);
    }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Pairs, CastAllPairsGpu, ::testing::ValuesIn(all_pairs()), [](const auto& info) {
  return std::string(dtype_name(std::get<0>(info.param))) + "_to_" + std::string(dtype_name(std::get<1>(info.param))) +
         (std::get<2>(info.param) == Fp8Overflow::kSaturate ? "_sat" : "");
});

// Run-time refusals leave the output untouched.
TEST(CastGpuRefusals, NullMisalignedAndAliasingLeaveOutputUntouched) {
  BARACUDA_REQUIRE_GPU();
  auto x = TensorLayout::contiguous(DType::kI32, {1024});
  auto y = TensorLayout::contiguous(DType::kF32, {1024});
  auto plan = CastPlan::select(test_stream(), CastDescriptor{x, y});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor hx(x), hy(y);
  fill_source(hx, false);
  DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
  dy.poison(0x5A, test_stream());
  const Status null_x = plan->run(test_stream(), {}, CastArgs{.x = nullptr, .y = dy.data()});
  EXPECT_NE(null_x.message().find("args.x is null"), std::string::npos) << null_x.to_string();
  const Status mis = plan->run(test_stream(), {}, CastArgs{.x = static_cast<char*>(dx.data()) + 4, .y = dy.data()});
  EXPECT_EQ(mis.code(), Code::kMisaligned) << mis.to_string();
  const Status alias = plan->run(test_stream(), {}, CastArgs{.x = dx.data(), .y = dx.data()});  // i32 -> f32 in place
  EXPECT_NE(alias.message().find("unsafe aliasing"), std::string::npos) << alias.to_string();
  ASSERT_TRUE(dy.download(hy, test_stream()));
  for (std::int64_t i = 0; i < 1024; ++i) {
    std::uint32_t b;
    std::memcpy(&b, static_cast<const char*>(hy.data()) + 4 * i, 4);
    ASSERT_EQ(b, 0x5A5A5A5Au) << i;
  }
}

// Table-driven: every pointer refusal names its field (CastPlan has no workspace).
TEST(CastGpuRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kI32, {1024});
  const auto y = TensorLayout::contiguous(DType::kF32, {1024});
  auto plan = CastPlan::select(test_stream(), CastDescriptor{x, y});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_EQ(plan->workspace_size(), 0u);
  HostTensor hx(x);
  fill_source(hx, false);
  DeviceTensor dx(hx, test_stream());
  Untouched out(y);
  const void* xp = dx.data();
  auto run = [&](const void* in, void* o) { return plan->run(test_stream(), {}, CastArgs{.x = in, .y = o}); };
  expect_run_refusals(
      {
          {"null x", [&] { return run(nullptr, out.data()); }, Code::kInvalidArgument, "args.x is null"},
          {"null y", [&] { return run(xp, nullptr); }, Code::kInvalidArgument, "args.y is null"},
          {"misaligned x", [&] { return run(static_cast<const char*>(xp) + 4, out.data()); }, Code::kMisaligned,
           "not aligned to x.alignment = 16"},
          {"misaligned y", [&] { return run(xp, static_cast<char*>(out.data()) + 4); }, Code::kMisaligned,
           "not aligned to y.alignment = 16"},
          {"y over x (i32 -> f32 in place)", [&] { return run(xp, dx.data()); }, Code::kInvalidArgument,
           "args.y overlaps args.x"},
      },
      {&out});
}

}  // namespace
}  // namespace baracuda::test
