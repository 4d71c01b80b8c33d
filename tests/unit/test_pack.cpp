// PackPlan / UnpackPlan on the CPU: the oracle's packing rules (nibble / bit order,
// saturation, padding, odd rows), pack -> unpack round trips, and select-time refusals
// that name the field and value.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/pack.hpp"

namespace baracuda::reference {
namespace {

HostTensor ints(DType t, std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> vals) {
  HostTensor h(TensorLayout::contiguous(t, shape));
  std::int64_t i = 0;
  for (auto v : vals) h.set(i++, static_cast<double>(v));
  return h;
}
std::vector<unsigned> bytes_of(const HostTensor& t) {
  std::vector<unsigned> b;
  for (std::size_t i = 0; i < t.storage_bytes(); ++i) b.push_back(static_cast<unsigned>(t.storage()[i]));
  return b;
}

TEST(PackRules, NibblesLowFirstAndSaturated) {
  auto x = ints(DType::kI8, {6}, {1, 2, -1, 7, 100, -100});
  auto y = pack(PackDescriptor{x.layout(), TensorLayout::contiguous(DType::kS4, {6})}, x);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ(bytes_of(*y), (std::vector<unsigned>{0x21, 0x7F, 0x87}));  // -1 -> 0xF, 100 -> 7, -100 -> -8 (0x8)
  auto u = ints(DType::kU8, {3}, {15, 200, 3});
  auto yu = pack(PackDescriptor{u.layout(), TensorLayout::contiguous(DType::kU4, {3})}, u);
  ASSERT_TRUE(yu.has_value());
  EXPECT_EQ(bytes_of(*yu), (std::vector<unsigned>{0xFF, 0x03}));  // 200 -> 15; odd count: high nibble 0
  EXPECT_EQ(pack_saturate(DType::kS4, -9), 0x8u);
  EXPECT_EQ(pack_saturate(DType::kS4, 8), 0x7u);
  EXPECT_EQ(unpack_code(DType::kS4, 0x8), -8);
  EXPECT_EQ(unpack_code(DType::kS4, 0xF), -1);
  EXPECT_EQ(unpack_code(DType::kU4, 0xF), 15);
}

TEST(PackRules, BitsLsbFirst) {
  auto x = ints(DType::kBool, {10}, {1, 0, 0, 1, 0, 0, 0, 1, 0, 1});
  auto y = pack(PackDescriptor{x.layout(), TensorLayout::contiguous(DType::kBit, {10})}, x);
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(bytes_of(*y), (std::vector<unsigned>{0x89, 0x02}));
}

TEST(PackRules, OddRowsBackToBackOrPadded) {
  // [2, 3] s4: back to back (R = 3) the second row starts in the high nibble of byte 1.
  auto x = ints(DType::kI8, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto dense = pack(PackDescriptor{x.layout(), TensorLayout::contiguous(DType::kS4, {2, 3})}, x);
  ASSERT_TRUE(dense.has_value());
  EXPECT_EQ(bytes_of(*dense), (std::vector<unsigned>{0x21, 0x43, 0x65}));
  // Padded rows (R = 4): each row starts on a byte; the padding nibble is 0.
  auto padded = pack(PackDescriptor{x.layout(), TensorLayout::strided(DType::kS4, {2, 3}, {4, 1})}, x);
  ASSERT_TRUE(padded.has_value());
  EXPECT_EQ(bytes_of(*padded), (std::vector<unsigned>{0x21, 0x03, 0x54, 0x06}));
  // and back
  auto back = unpack(UnpackDescriptor{padded->layout(), TensorLayout::contiguous(DType::kI8, {2, 3})}, *padded);
  ASSERT_TRUE(back.has_value());
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(back->get(i), x.get(i));
}

TEST(PackRules, RoundTripEveryCode) {
  for (DType packed : {DType::kS4, DType::kU4, DType::kBit}) {
    const DType plain = packed == DType::kS4 ? DType::kI8 : packed == DType::kU4 ? DType::kU8 : DType::kBool;
    const std::int64_t n = packed == DType::kBit ? 2 : 16;
    HostTensor x(TensorLayout::contiguous(plain, {3, n + 1}));
    for (std::int64_t i = 0; i < x.layout().numel(); ++i) x.set(i, static_cast<double>(unpack_code(packed, static_cast<unsigned>(i % n))));
    auto y = pack(PackDescriptor{x.layout(), TensorLayout::contiguous(packed, {3, n + 1})}, x);
    ASSERT_TRUE(y.has_value());
    auto z = unpack(UnpackDescriptor{y->layout(), x.layout()}, *y);
    ASSERT_TRUE(z.has_value());
    for (std::int64_t i = 0; i < x.layout().numel(); ++i) EXPECT_EQ(z->get(i), x.get(i)) << dtype_name(packed) << " " << i;
  }
}

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }

TEST(PackPlanSelect, AcceptsThePairsAndLayouts) {
  for (auto [plain, packed] : {std::pair{DType::kI8, DType::kS4}, std::pair{DType::kU8, DType::kU4},
                               std::pair{DType::kBool, DType::kBit}}) {
    auto p = PackPlan::select_for_caps(caps90(), PackDescriptor{TensorLayout::strided(plain, {5, 7}, {1, 5}),
                                                                TensorLayout::strided(packed, {5, 7}, {8, 1})});
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().family, "pack");
    auto u = UnpackPlan::select_for_caps(caps90(), UnpackDescriptor{TensorLayout::contiguous(packed, {2, 5, 7}),
                                                                    TensorLayout::strided(plain, {2, 5, 7}, {1, 2, 10})});
    ASSERT_TRUE(u.has_value()) << u.error().to_string();
    EXPECT_EQ(u->sku().impl, "bytes_i64");
  }
}

TEST(PackPlanSelect, RefusalsNameFieldAndValue) {
  const auto i8 = TensorLayout::contiguous(DType::kI8, {4, 6});
  const auto s4 = TensorLayout::contiguous(DType::kS4, {4, 6});
  struct Bad {
    PackDescriptor d;
    const char* needle;
  };
  const Bad bad[] = {
      {{TensorLayout::contiguous(DType::kF32, {4, 6}), s4}, "x.dtype = f32 does not go with y.dtype = s4"},
      {{TensorLayout::contiguous(DType::kU8, {4, 6}), s4}, "x.dtype = u8"},
      {{i8, TensorLayout::contiguous(DType::kI8, {4, 6})}, "y.dtype = i8 is not a packed dtype"},
      {{i8, TensorLayout::contiguous(DType::kS4, {4, 7})}, "x.shape[1] = 6 cannot broadcast to 7"},
      {{i8, TensorLayout::strided(DType::kS4, {4, 6}, {1, 4})}, "strides[1] = 4 (needs 1)"},
      {{i8, TensorLayout::strided(DType::kS4, {4, 6}, {5, 1})}, "row stride strides[0] = 5 < shape[1] = 6"},
      {{i8, TensorLayout::strided(DType::kS4, {2, 4, 6}, {30, 6, 1})}, "strides[0] = 30 (needs 24)"},
  };
  for (const auto& b : bad) {
    auto plan = PackPlan::select_for_caps(caps90(), b.d);
    ASSERT_FALSE(plan.has_value()) << b.d.to_string();
    EXPECT_NE(plan.error().message().find(b.needle), std::string::npos) << plan.error().to_string();
  }
  auto shape = UnpackPlan::select_for_caps(caps90(), UnpackDescriptor{s4, TensorLayout::contiguous(DType::kI8, {4, 5})});
  ASSERT_FALSE(shape.has_value());
  EXPECT_NE(shape.error().message().find("does not have x's shape"), std::string::npos) << shape.error().to_string();
  auto overlap = UnpackPlan::select_for_caps(caps90(), UnpackDescriptor{s4, TensorLayout::strided(DType::kI8, {4, 6}, {0, 1})});
  ASSERT_FALSE(overlap.has_value());
  EXPECT_NE(overlap.error().message().find("y = "), std::string::npos) << overlap.error().to_string();
}

// vec16_contig comes first and takes dense, aligned, unpadded operands; every other accepted
// layout falls to bytes_i64, and the report says why.
TEST(PackPlanSelect, VecContigForDenseAlignedOperands) {
  for (auto [plain, packed] : {std::pair{DType::kI8, DType::kS4}, std::pair{DType::kU8, DType::kU4},
                               std::pair{DType::kBool, DType::kBit}}) {
    const auto pl = TensorLayout::contiguous(plain, {16384, 8192});
    const auto pk = TensorLayout::contiguous(packed, {16384, 8192});
    auto p = PackPlan::select_for_caps(caps90(), PackDescriptor{pl, pk});
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_EQ(p->sku().impl, "vec16_contig") << dtype_name(packed);
    auto u = UnpackPlan::select_for_caps(caps90(), UnpackDescriptor{pk, pl});
    ASSERT_TRUE(u.has_value()) << u.error().to_string();
    EXPECT_EQ(u->sku().impl, "vec16_contig") << dtype_name(packed);
    // Odd totals and scalars are still contiguous: the kernel's tail handles them.
    for (std::vector<std::int64_t> s : {std::vector<std::int64_t>{1009}, {33, 129}, {}}) {
      auto odd = PackPlan::select_for_caps(caps90(), PackDescriptor{TensorLayout::contiguous(plain, s), TensorLayout::contiguous(packed, s)});
      ASSERT_TRUE(odd.has_value()) << odd.error().to_string();
      EXPECT_EQ(odd->sku().impl, "vec16_contig");
    }
  }
}

// The vec16_contig candidate's rejection ("" = it accepts).
template <class PlanT>
std::string vec_contig_rejection(const typename PlanT::Descriptor& d) {
  auto reports = PlanT::candidates(caps90(), d);
  EXPECT_TRUE(reports.has_value());
  if (!reports) return "";
  for (const auto& r : reports.value())
    if (r.sku.impl == "vec16_contig") return r.rejection;
  ADD_FAILURE() << "no vec16_contig candidate";
  return "";
}

TEST(PackPlanSelect, VecContigRefusesPaddedStridedBroadcastMisaligned) {
  const auto i8 = TensorLayout::contiguous(DType::kI8, {33, 129});
  const auto s4 = TensorLayout::contiguous(DType::kS4, {33, 129});
  struct Refused {
    PackDescriptor d;
    const char* needle;
  };
  const Refused refused[] = {
      {{i8, TensorLayout::strided(DType::kS4, {33, 129}, {130, 1})}, "y has padded rows (row stride 130 > shape[1] = 129)"},
      {{TensorLayout::strided(DType::kI8, {33, 129}, {1, 33}), s4}, "x = i8[33,129]{1,33} is not dense row-major"},
      {{TensorLayout::strided(DType::kI8, {33, 129}, {258, 2}), s4}, "is not dense row-major"},
      {{TensorLayout::contiguous(DType::kI8, {129}), s4}, "(broadcast)"},
      {{TensorLayout::contiguous(DType::kI8, {33, 129}, 8), s4}, "x.alignment = 8 < 16 bytes"},
      {{i8, TensorLayout::contiguous(DType::kS4, {33, 129}, 4)}, "y.alignment = 4 < 16 bytes"},
  };
  for (const auto& r : refused) {
    const std::string why = vec_contig_rejection<PackPlan>(r.d);
    EXPECT_NE(why.find(r.needle), std::string::npos) << r.d.to_string() << ": \"" << why << "\"";
    auto plan = PackPlan::select_for_caps(caps90(), r.d);  // the general SKU still takes it
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    EXPECT_EQ(plan->sku().impl, "bytes_i64") << r.d.to_string();
  }
  const std::string padded = vec_contig_rejection<UnpackPlan>(
      UnpackDescriptor{TensorLayout::strided(DType::kBit, {5, 3, 9}, {3 * 40, 40, 1}), TensorLayout::contiguous(DType::kBool, {5, 3, 9})});
  EXPECT_NE(padded.find("x has padded rows (row stride 40 > shape[2] = 9)"), std::string::npos) << padded;
  const std::string strided_out =
      vec_contig_rejection<UnpackPlan>(UnpackDescriptor{TensorLayout::contiguous(DType::kU4, {2, 5, 7}),
                                            TensorLayout::strided(DType::kU8, {2, 5, 7}, {1, 2, 10})});
  EXPECT_NE(strided_out.find("y = u8[2,5,7]{1,2,10} is not dense row-major"), std::string::npos) << strided_out;
}

}  // namespace
}  // namespace baracuda::reference
