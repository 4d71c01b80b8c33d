// Select-time refusals of every elementwise plan (issue 3: "bad input is refused before any
// launch with an error that names the field and value"). One test per plan: from a
// descriptor the plan accepts, each case changes one field to a wrong dtype, a mismatched
// shape, or a bad stride / axis (an output mapping two elements to one address, an input
// too large for 64-bit indexing, a packed layout that is not row-major, a missing channel
// dim) and expects kInvalidArgument with a message naming that field and its value.
// The run-time refusals (null, misaligned, aliasing, workspace) need a device: the
// *Refusals* tests of tests/gpu. docs/testing.md has the coverage table.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "gemm_descriptors.hpp"

namespace baracuda {
namespace {

DeviceCaps caps90() { return DeviceCaps::for_arch(90).value(); }
TensorLayout contig(DType t, std::initializer_list<std::int64_t> s) { return TensorLayout::contiguous(t, s); }

// The shared bad layouts: [4, 8] with a broadcast row (an output may not use it), and [4, 8]
// with a row stride of 2^61 (3 * 2^61 elements apart: beyond 64-bit indexing).
TensorLayout overlapping(DType t) { return TensorLayout::strided(t, {4, 8}, {0, 1}); }
TensorLayout too_large(DType t) { return TensorLayout::strided(t, {4, 8}, {std::int64_t{1} << 61, 1}); }
const std::string kOverlapping = "[4,8]{0,1} maps several elements to one address";
const std::string kTooLarge = "[4,8]{2305843009213693952,1} is too large for 64-bit indexing";

template <class Desc>
struct Refusal {
  const char* category;  // "dtype", "shape", "stride", "axis"
  std::function<void(Desc&)> change;
  std::string needle;  // the field and its value
};

// `valid` is accepted; each case, applied to a copy of it, is refused with its needle.
template <class PlanT>
void expect_select_refusals(const typename PlanT::Descriptor& valid,
                            const std::vector<Refusal<typename PlanT::Descriptor>>& cases) {
  auto ok = PlanT::select_for_caps(caps90(), valid);
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  for (const auto& c : cases) {
    auto d = valid;
    c.change(d);
    SCOPED_TRACE(std::string(c.category) + ": " + d.to_string());
    auto p = PlanT::select_for_caps(caps90(), d);
    ASSERT_FALSE(p.has_value()) << "accepted";
    EXPECT_EQ(p.error().code(), Code::kInvalidArgument) << p.error().to_string();
    EXPECT_NE(p.error().message().find(c.needle), std::string::npos) << "wanted '" << c.needle << "' in\n"
                                                                        << p.error().message();
  }
}

const TensorLayout f32 = contig(DType::kF32, {4, 8});
const TensorLayout f16 = contig(DType::kF16, {4, 8});
const TensorLayout i32 = contig(DType::kI32, {4, 8});
const TensorLayout b8 = contig(DType::kBool, {4, 8});
const TensorLayout f32_4x9 = contig(DType::kF32, {4, 9});
const TensorLayout f32_row = contig(DType::kF32, {8});

// ------------------------------------------------------------------------------- unary
TEST(SelectRefusals, UnaryPlan) {
  using D = UnaryDescriptor;
  expect_select_refusals<UnaryPlan>(
      D{UnaryKind::kRelu, f32, f32},
      {{"dtype", [](D& d) { d.x = d.y = i32; }, "x.dtype = i32 is not supported by unary kind relu"},
       {"dtype", [](D& d) { d.y = f16; }, "y.dtype = f16 must be f32 for unary kind relu"},
       {"shape", [](D& d) { d.x = f32_4x9; }, "x.shape[1] = 9 cannot broadcast to 8"},
       {"stride", [](D& d) { d.y = overlapping(DType::kF32); }, "y = f32" + kOverlapping},
       {"stride", [](D& d) { d.x = too_large(DType::kF32); }, "x = f32" + kTooLarge}});
}

TEST(SelectRefusals, UnaryBackwardPlan) {
  using D = UnaryBackwardDescriptor;
  expect_select_refusals<UnaryBackwardPlan>(
      D{UnaryKind::kSilu, f32, f32, f32},
      {{"dtype", [](D& d) { d.grad_out = d.x = d.grad_in = i32; }, "x.dtype = i32 is not supported by unary_backward"},
       {"dtype", [](D& d) { d.grad_out = f16; }, "grad_out.dtype = f16 differs from x.dtype = f32"},
       {"shape", [](D& d) { d.grad_out = f32_4x9; }, "grad_out = f32[4,9] does not have the shape of grad_in = f32[4,8]"},
       {"stride", [](D& d) { d.grad_in = overlapping(DType::kF32); }, "grad_in = f32" + kOverlapping},
       {"stride", [](D& d) { d.x = too_large(DType::kF32); }, "x = f32" + kTooLarge}});
}

TEST(SelectRefusals, UnaryParamPlan) {
  using D = UnaryParamDescriptor;
  expect_select_refusals<UnaryParamPlan>(
      D{UnaryKind::kLeakyRelu, {0.01, 0, 0}, f32, f32},
      {{"dtype", [](D& d) { d.x = d.y = i32; }, "x.dtype = i32 is not supported by unary kind leaky_relu"},
       {"dtype", [](D& d) { d.y = f16; }, "y.dtype = f16 must be f32 for unary kind leaky_relu"},
       {"shape", [](D& d) { d.y = f32_4x9; }, "x.shape[1] = 8 cannot broadcast to 9"},
       {"stride", [](D& d) { d.y = overlapping(DType::kF32); }, "y = f32" + kOverlapping},
       {"stride", [](D& d) { d.x = too_large(DType::kF32); }, "x = f32" + kTooLarge}});
}

TEST(SelectRefusals, UnaryParamBackwardPlan) {
  using D = UnaryParamBackwardDescriptor;
  expect_select_refusals<UnaryParamBackwardPlan>(
      D{UnaryKind::kElu, {1, 0, 0}, f32, f32, f32},
      {{"dtype", [](D& d) { d.grad_out = d.x = d.grad_in = i32; },
        "x.dtype = i32 is not supported by unary_param_backward"},
       {"dtype", [](D& d) { d.grad_in = f16; }, "grad_in.dtype = f16 differs from x.dtype = f32"},
       {"shape", [](D& d) { d.x = f32_4x9; }, "x = f32[4,9] does not have the shape of grad_in = f32[4,8]"},
       {"stride", [](D& d) { d.grad_in = overlapping(DType::kF32); }, "grad_in = f32" + kOverlapping},
       {"stride", [](D& d) { d.grad_out = too_large(DType::kF32); }, "grad_out = f32" + kTooLarge}});
}

// ------------------------------------------------------------------------------ binary
TEST(SelectRefusals, BinaryPlan) {
  using D = BinaryDescriptor;
  expect_select_refusals<BinaryPlan>(
      D{BinaryKind::kAdd, f32, f32, f32},
      {{"dtype", [](D& d) { d.a = d.b = d.out = b8; }, "a.dtype = bool is not supported by binary kind add"},
       {"dtype", [](D& d) { d.b = f16; }, "b.dtype = f16 differs from a.dtype = f32"},
       {"shape", [](D& d) { d.b = f32_4x9; }, "a.shape[1] = 8 and b.shape[1] = 9 do not broadcast"},
       {"shape", [](D& d) { d.out = f32_4x9; }, "out = f32[4,9] does not have the shape of broadcast(a, b)"},
       {"stride", [](D& d) { d.out = overlapping(DType::kF32); }, "out = f32" + kOverlapping},
       {"stride", [](D& d) { d.a = too_large(DType::kF32); }, "a = f32" + kTooLarge}});
}

TEST(SelectRefusals, BinaryBackwardPlan) {
  using D = BinaryBackwardDescriptor;
  expect_select_refusals<BinaryBackwardPlan>(
      D{BinaryKind::kMul, f32, f32, f32, f32, f32},
      {{"dtype", [](D& d) { d.grad_out = d.a = d.b = d.grad_a = d.grad_b = i32; },
        "grad_out.dtype = i32 is not supported by binary_backward"},
       {"dtype", [](D& d) { d.grad_a = f16; }, "grad_a.dtype = f16 differs from grad_out.dtype = f32"},
       {"shape", [](D& d) { d.grad_b = f32_4x9; }, "grad_b = f32[4,9] does not have the shape of b = f32[4,8]"},
       {"shape", [](D& d) { d.grad_out = f32_4x9; }, "grad_out = f32[4,9] does not have the shape of broadcast(a, b)"},
       {"stride", [](D& d) { d.grad_b = overlapping(DType::kF32); }, "grad_b = f32" + kOverlapping},
       {"stride", [](D& d) { d.b = too_large(DType::kF32); }, "b = f32" + kTooLarge}});
}

TEST(SelectRefusals, BinaryCmpPlan) {
  using D = BinaryCmpDescriptor;
  expect_select_refusals<BinaryCmpPlan>(
      D{BinaryCmpKind::kLt, 0, 0, false, f32, f32, b8},
      {{"dtype", [](D& d) { d.out = f32; }, "out.dtype = f32 must be bool (binary_cmp)"},
       {"dtype", [](D& d) { d.b = f16; }, "b.dtype = f16 differs from a.dtype = f32"},
       {"shape", [](D& d) { d.a = f32_4x9; }, "a.shape[1] = 9 and b.shape[1] = 8 do not broadcast"},
       {"shape", [](D& d) { d.out = contig(DType::kBool, {8}); }, "out = bool[8] does not have the shape of broadcast(a, b)"},
       {"stride", [](D& d) { d.out = overlapping(DType::kBool); }, "out = bool" + kOverlapping},
       {"stride", [](D& d) { d.b = too_large(DType::kF32); }, "b = f32" + kTooLarge}});
}

TEST(SelectRefusals, BinaryParamPlan) {
  using D = BinaryParamDescriptor;
  expect_select_refusals<BinaryParamPlan>(
      D{BinaryParamKind::kLerpTensor, 0, f32, f32, f32, f32},
      {{"dtype", [](D& d) { d.a = d.b = d.weight = d.out = i32; }, "a.dtype = i32 is not supported by binary_param"},
       {"dtype", [](D& d) { d.weight = f16; }, "weight.dtype = f16 differs from a.dtype = f32"},
       {"shape", [](D& d) { d.weight = contig(DType::kF32, {3}); }, "weight.shape[0] = 3 do not broadcast"},
       {"shape", [](D& d) { d.out = f32_4x9; }, "out = f32[4,9] does not have the shape of broadcast(a, b, weight)"},
       {"stride", [](D& d) { d.out = overlapping(DType::kF32); }, "out = f32" + kOverlapping},
       {"stride", [](D& d) { d.weight = too_large(DType::kF32); }, "weight = f32" + kTooLarge}});
}

TEST(SelectRefusals, BinaryParamBackwardPlan) {
  using D = BinaryParamBackwardDescriptor;
  expect_select_refusals<BinaryParamBackwardPlan>(
      D{BinaryParamKind::kLerpTensor, 0, f32, f32, f32, f32, f32, f32, f32},
      {{"dtype", [](D& d) { d = D{BinaryParamKind::kLerpTensor, 0, i32, i32, i32, i32, i32, i32, i32}; },
        "grad_out.dtype = i32 is not supported by binary_param_backward"},
       {"dtype", [](D& d) { d.grad_a = f16; }, "grad_a.dtype = f16 differs from grad_out.dtype = f32"},
       {"shape", [](D& d) { d.grad_weight = f32_row; }, "grad_weight = f32[8] does not have the shape of grad_out = f32[4,8]"},
       {"shape", [](D& d) { d.grad_out = f32_4x9; }, "grad_out = f32[4,9] does not have the shape of broadcast(a, b, weight)"},
       {"stride", [](D& d) { d.grad_b = overlapping(DType::kF32); }, "grad_b = f32" + kOverlapping},
       {"stride", [](D& d) { d.weight = too_large(DType::kF32); }, "weight = f32" + kTooLarge}});
}

// ----------------------------------------------------------------------------- ternary
TEST(SelectRefusals, TernaryPlan) {
  using D = TernaryDescriptor;
  expect_select_refusals<TernaryPlan>(
      D{TernaryKind::kClamp, 1, f32, f32, f32, f32},
      {{"dtype", [](D& d) { d = D{TernaryKind::kFma, 1, i32, i32, i32, i32}; }, "a.dtype = i32 is not supported by ternary kind fma"},
       {"dtype", [](D& d) { d.b = f16; }, "b.dtype = f16 differs from a.dtype = f32"},
       {"shape", [](D& d) { d.c = f32_4x9; }, "c.shape[1] = 9 do not broadcast"},
       {"shape", [](D& d) { d.out = f32_4x9; }, "out = f32[4,9] does not have the shape of"},
       {"stride", [](D& d) { d.out = overlapping(DType::kF32); }, "out = f32" + kOverlapping},
       {"stride", [](D& d) { d.c = too_large(DType::kF32); }, "c = f32" + kTooLarge}});
}

TEST(SelectRefusals, TernaryBackwardPlan) {
  using D = TernaryBackwardDescriptor;
  expect_select_refusals<TernaryBackwardPlan>(
      D{TernaryKind::kFma, 1, f32, f32, f32, f32, f32, f32, f32},
      {{"dtype", [](D& d) { d = D{TernaryKind::kClamp, 1, i32, i32, i32, i32, i32, i32, i32}; }, "grad_out.dtype = i32 is not supported"},
       {"dtype", [](D& d) { d.grad_b = f16; }, "grad_b.dtype = f16 differs from grad_out.dtype = f32"},
       {"shape", [](D& d) { d.grad_a = f32_4x9; }, "grad_a = f32[4,9] does not have the shape of a = f32[4,8]"},
       {"shape", [](D& d) { d.grad_out = f32_4x9; }, "grad_out = f32[4,9] does not have the shape of"},
       {"stride", [](D& d) { d.grad_c = overlapping(DType::kF32); }, "grad_c = f32" + kOverlapping},
       {"stride", [](D& d) { d.b = too_large(DType::kF32); }, "b = f32" + kTooLarge}});
}

TEST(SelectRefusals, WherePlan) {
  using D = WhereDescriptor;
  expect_select_refusals<WherePlan>(
      D{b8, f32, f32, f32},
      {{"dtype", [](D& d) { d.cond = f32; }, "cond.dtype = f32 must be bool"},
       {"dtype", [](D& d) { d.b = f16; }, "b.dtype = f16 differs from a.dtype = f32"},
       {"dtype", [](D& d) { d.a = d.b = d.out = contig(DType::kC64, {4, 8}); }, "a.dtype = c64 is not supported by where"},
       {"shape", [](D& d) { d.b = f32_4x9; }, "b.shape[1] = 9 do not broadcast"},
       {"shape", [](D& d) { d.out = f32_4x9; }, "out = f32[4,9] does not have the shape of the broadcast shape of the inputs"},
       {"stride", [](D& d) { d.out = overlapping(DType::kF32); }, "out = f32" + kOverlapping},
       {"stride", [](D& d) { d.cond = too_large(DType::kBool); }, "cond = bool" + kTooLarge}});
}

TEST(SelectRefusals, WhereBackwardPlan) {
  using D = WhereBackwardDescriptor;
  expect_select_refusals<WhereBackwardPlan>(
      D{b8, f32, f32, f32},
      {{"dtype", [](D& d) { d.grad_out = d.grad_a = d.grad_b = i32; }, "grad_out.dtype = i32 is not supported by where_backward"},
       {"dtype", [](D& d) { d.grad_a = f16; }, "grad_a.dtype = f16 differs from grad_out.dtype = f32"},
       {"dtype", [](D& d) { d.cond = f32; }, "cond.dtype = f32 must be bool"},
       {"shape", [](D& d) { d.grad_a = f32_4x9; }, "grad_a.shape[1] = 9 cannot broadcast to 8"},
       {"shape", [](D& d) { d.cond = contig(DType::kBool, {4, 9}); }, "cond.shape[1] = 9 cannot broadcast to 8"},
       {"stride", [](D& d) { d.grad_b = overlapping(DType::kF32); }, "grad_b = f32" + kOverlapping},
       {"stride", [](D& d) { d.grad_out = too_large(DType::kF32); }, "grad_out = f32" + kTooLarge}});
}

TEST(SelectRefusals, AffinePlan) {
  using D = AffineDescriptor;
  expect_select_refusals<AffinePlan>(
      D{2, 1, f32, f32},
      {{"dtype", [](D& d) { d.y = f16; }, "y.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.x = d.y = b8; }, "x.dtype = bool is not supported by affine"},
       {"shape", [](D& d) { d.x = f32_4x9; }, "x.shape[1] = 9 cannot broadcast to 8"},
       {"stride", [](D& d) { d.y = overlapping(DType::kF32); }, "y = f32" + kOverlapping},
       {"stride", [](D& d) { d.x = too_large(DType::kF32); }, "x = f32" + kTooLarge}});
}

TEST(SelectRefusals, FillPlan) {
  using D = FillDescriptor;
  expect_select_refusals<FillPlan>(
      D{f32, 3},
      {{"dtype", [](D& d) { d.y = contig(DType::kS4, {4, 8}); }, "y.dtype = s4 is not supported by fill"},
       {"value", [](D& d) { d = D{contig(DType::kU8, {4}), 256}; }, "value = 256 is not an integer in the range of y.dtype = u8"},
       {"stride", [](D& d) { d.y = overlapping(DType::kF32); }, "y = f32" + kOverlapping},
       {"stride", [](D& d) { d.y = too_large(DType::kF32); }, "y = f32" + kTooLarge}});
}

// ------------------------------------------------------------------- cast, pack, unpack
TEST(SelectRefusals, CastPlan) {
  using D = CastDescriptor;
  expect_select_refusals<CastPlan>(
      D{i32, f32},
      {{"dtype", [](D& d) { d.x = contig(DType::kU32, {4, 8}); }, "x.dtype = u32 is not supported by cast"},
       {"dtype", [](D& d) { d.y = contig(DType::kC64, {4, 8}); }, "y.dtype = c64 is not supported by cast"},
       {"shape", [](D& d) { d.y = f32_4x9; }, "x.shape[1] = 8 cannot broadcast to 9"},
       {"stride", [](D& d) { d.y = overlapping(DType::kF32); }, "y = f32" + kOverlapping},
       {"stride", [](D& d) { d.x = too_large(DType::kI32); }, "x = i32" + kTooLarge}});
}

TEST(SelectRefusals, PackPlan) {
  using D = PackDescriptor;
  expect_select_refusals<PackPlan>(
      D{contig(DType::kI8, {4, 6}), contig(DType::kS4, {4, 6})},
      {{"dtype", [](D& d) { d.x = contig(DType::kF32, {4, 6}); }, "x.dtype = f32 does not go with y.dtype = s4"},
       {"dtype", [](D& d) { d.y = contig(DType::kI8, {4, 6}); }, "y.dtype = i8 is not a packed dtype"},
       {"shape", [](D& d) { d.y = contig(DType::kS4, {4, 7}); }, "x.shape[1] = 6 cannot broadcast to 7"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kS4, {4, 6}, {1, 4}); },
        "y = s4[4,6]{1,4} is not a packed row-major layout: strides[1] = 4 (needs 1)"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kS4, {4, 6}, {5, 1}); },
        "row stride strides[0] = 5 < shape[1] = 6"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kI8, {4, 6}, {std::int64_t{1} << 61, 1}); },
        "x = i8[4,6]{2305843009213693952,1} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, UnpackPlan) {
  using D = UnpackDescriptor;
  expect_select_refusals<UnpackPlan>(
      D{contig(DType::kS4, {4, 6}), contig(DType::kI8, {4, 6})},
      {{"dtype", [](D& d) { d.y = contig(DType::kU8, {4, 6}); }, "y.dtype = u8 does not go with x.dtype = s4"},
       {"dtype", [](D& d) { d.x = contig(DType::kI8, {4, 6}); }, "x.dtype = i8 is not a packed dtype"},
       {"shape", [](D& d) { d.y = contig(DType::kI8, {4, 5}); }, "y = i8[4,5] does not have x's shape (x = s4[4,6])"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kS4, {4, 6}, {5, 1}); },
        "x = s4[4,6]{5,1} is not a packed row-major layout: row stride strides[0] = 5 < shape[1] = 6"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kI8, {4, 6}, {0, 1}); },
        "y = i8[4,6]{0,1} maps several elements to one address"}});
}

// ------------------------------------------------------------------------ gated, prelu
TEST(SelectRefusals, GatedActivationPlan) {
  using D = GatedActivationDescriptor;
  const auto x = contig(DType::kF32, {4, 16});
  expect_select_refusals<GatedActivationPlan>(
      D{GatedKind::kSwiglu, GatedInput::kPacked, GateHalf::kSecond, x, {}, {}, f32},
      {{"dtype", [](D& d) { d.x = contig(DType::kBF16, {4, 16}); }, "x.dtype = bf16 differs from y.dtype = f32"},
       {"dtype", [](D& d) { d.x = contig(DType::kI32, {4, 16}), d.y = i32; }, "y.dtype = i32 is not supported by gated"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {4, 7}); }, "y = f32[4,7] is not x = f32[4,16] with the last dim halved"},
       {"axis", [](D& d) { d.x = contig(DType::kF32, {4, 15}); }, "x.shape[1] = 15 is odd"},
       {"stride", [](D& d) { d.y = overlapping(DType::kF32); }, "y = f32" + kOverlapping},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF32, {4, 16}, {std::int64_t{1} << 61, 1}); },
        "x = f32[4,16]{2305843009213693952,1} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, GatedActivationBackwardPlan) {
  using D = GatedActivationBackwardDescriptor;
  const auto x = contig(DType::kF32, {4, 16});
  expect_select_refusals<GatedActivationBackwardPlan>(
      D{GatedKind::kGegluTanh, GatedInput::kPacked, GateHalf::kFirst, f32, x, {}, {}, x, {}, {}},
      {{"dtype", [](D& d) { d.grad_x = contig(DType::kBF16, {4, 16}); }, "grad_x.dtype = bf16 differs from grad_y.dtype = f32"},
       {"dtype", [](D& d) { d.grad_y = i32; }, "grad_y.dtype = i32 is not supported by gated_backward"},
       {"shape", [](D& d) { d.grad_x = contig(DType::kF32, {4, 18}); },
        "grad_y = f32[4,8] is not grad_x = f32[4,18] with the last dim halved"},
       {"axis", [](D& d) { d.x = contig(DType::kF32, {4, 15}); }, "x.shape[1] = 15 is odd"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kF32, {4, 16}, {0, 1}); },
        "grad_x = f32[4,16]{0,1} maps several elements to one address"},
       {"stride", [](D& d) { d.grad_y = too_large(DType::kF32); }, "grad_y = f32" + kTooLarge}});
}

TEST(SelectRefusals, PReluPlan) {
  using D = PReluDescriptor;
  const auto x = contig(DType::kF32, {2, 3, 4});
  const auto w = contig(DType::kF32, {3});
  expect_select_refusals<PReluPlan>(
      D{x, w, x},
      {{"dtype", [](D& d) { d.weight = contig(DType::kF16, {3}); }, "weight.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d = D{contig(DType::kI32, {2, 3}), contig(DType::kI32, {3}), contig(DType::kI32, {2, 3})}; },
        "x.dtype = i32 is not supported by prelu"},
       {"shape", [](D& d) { d.y = contig(DType::kF32, {2, 3, 5}); }, "y = f32[2,3,5] does not have the shape of x = f32[2,3,4]"},
       {"axis", [](D& d) { d.weight = contig(DType::kF32, {4}); }, "weight = f32[4] has 4 elements: needs 1 or x.shape[1] = 3"},
       {"axis", [](D& d) { d = D{contig(DType::kF32, {5}), contig(DType::kF32, {5}), contig(DType::kF32, {5})}; },
        "weight = f32[5] has 5 elements: needs 1 or x.shape[1] = (x has no dim 1)"},
       {"stride", [](D& d) { d.y = TensorLayout::strided(DType::kF32, {2, 3, 4}, {0, 4, 1}); },
        "y = f32[2,3,4]{0,4,1} maps several elements to one address"},
       {"stride", [](D& d) { d.weight = TensorLayout::strided(DType::kF32, {3}, {std::int64_t{1} << 62}); },
        "weight = f32[3]{4611686018427387904} is too large for 64-bit indexing"}});
}

TEST(SelectRefusals, PReluBackwardPlan) {
  using D = PReluBackwardDescriptor;
  const auto x = contig(DType::kF32, {2, 3, 4});
  const auto w = contig(DType::kF32, {3});
  expect_select_refusals<PReluBackwardPlan>(
      D{x, x, w, x, w},
      {{"dtype", [](D& d) { d.grad_weight = contig(DType::kF16, {3}); }, "grad_weight.dtype = f16 differs from x.dtype = f32"},
       {"dtype", [](D& d) { d.grad_y = d.x = d.grad_x = contig(DType::kI32, {2, 3, 4}), d.weight = d.grad_weight = contig(DType::kI32, {3}); },
        "x.dtype = i32 is not supported by prelu_backward"},
       {"shape", [](D& d) { d.grad_y = contig(DType::kF32, {2, 3, 5}); }, "grad_y = f32[2,3,5] does not have the shape of x = f32[2,3,4]"},
       {"shape", [](D& d) { d.grad_weight = contig(DType::kF32, {1}); }, "grad_weight = f32[1] does not have the shape of weight = f32[3]"},
       {"axis", [](D& d) { d.weight = d.grad_weight = contig(DType::kF32, {2}); }, "weight = f32[2] has 2 elements: needs 1 or x.shape[1] = 3"},
       {"stride", [](D& d) { d.grad_x = TensorLayout::strided(DType::kF32, {2, 3, 4}, {0, 4, 1}); },
        "grad_x = f32[2,3,4]{0,4,1} maps several elements to one address"},
       {"stride", [](D& d) { d.x = TensorLayout::strided(DType::kF32, {2, 3, 4}, {std::int64_t{1} << 62, 4, 1}); },
        "x = f32[2,3,4]{4611686018427387904,4,1} is too large for 64-bit indexing"}});
}

// ------------------------------------------------------------------------------- gemm
using test_gemm::full_epilogue;
using test_gemm::mat;
using test_gemm::plain;

TEST(SelectRefusals, GemmPlan) {
  using D = GemmDescriptor;
  expect_select_refusals<GemmPlan>(full_epilogue(), {
      {"dtype", [](D& d) { d.a.dtype = d.b.dtype = d.d.dtype = DType::kI8; }, "a.dtype = i8: gemm takes f64, f32, f16 or bf16"},
      {"dtype", [](D& d) { d.b.dtype = DType::kF16; }, "b.dtype = f16 differs from a.dtype = bf16"},
      {"dtype", [](D& d) { d.d.dtype = DType::kF32; }, "d.dtype = f32 differs from a.dtype = bf16"},
      {"dtype", [](D& d) { d.c.dtype = DType::kF32; }, "c.dtype = f32 differs from a.dtype = bf16"},
      {"dtype", [](D& d) { d.bias.dtype = DType::kF32; }, "bias.dtype = f32 differs from d.dtype = bf16"},
      {"dtype", [](D& d) { d.aux.dtype = DType::kF32; }, "aux.dtype = f32: gelu_tanh's aux has d's dtype bf16"},
      {"shape", [](D& d) { d.b.rows = 33; d.b.ld = 48; }, "b.rows = 33 differs from a.cols = 32 (K)"},
      {"shape", [](D& d) { d.d.cols = 47; }, "d is 64 x 47, needs 64 x 48"},
      {"shape", [](D& d) { d.c.rows = 63; }, "c is 63 x 48, needs 64 x 48"},
      {"shape", [](D& d) { d.bias = TensorLayout::contiguous(DType::kBF16, {64}); }, "bias = bf16[64] must be [48] (N)"},
      {"shape", [](D& d) { d.aux.cols = 40; }, "aux is 64 x 40, needs 64 x 48"},
      {"stride", [](D& d) { d.a.ld = 31; }, "a.ld = 31 is below the minimum 32"},
      {"stride", [](D& d) { d.b.order = MatrixOrder::kColMajor; d.b.ld = 16; }, "b.ld = 16 is below the minimum 32"},
      {"stride", [](D& d) { d.d.ld = 0; }, "d.ld = 0 is below the minimum 48"},
      {"stride", [](D& d) { d.bias = TensorLayout::strided(DType::kBF16, {48}, {2}); }, "has stride 2 (cuBLASLt needs 1)"},
      {"stride", [](D& d) { d.aux.ld = 52; }, "aux.ld = 52 is not a multiple of 8 elements"},
      {"stride", [](D& d) { d.c.order = MatrixOrder::kColMajor; d.c.ld = 64; }, "c.order differs from d.order"},
      {"stride", [](D& d) { d.a.ld = std::int64_t{1} << 61; }, "a = bf16[64,32]{2305843009213693952,1} is too large for 64-bit indexing"},
      {"stride", [](D& d) { d.d.ld = std::int64_t{1} << 61; }, "d = bf16[64,48]{2305843009213693952,1} is too large for 64-bit indexing"},
      {"alignment", [](D& d) { d.a.alignment = 1; }, "a.alignment = 1 bytes is below one bf16 element (2 bytes)"},
      {"epilogue", [](D& d) { d.epilogue.activation = GemmActivation::kNone; }, "epilogue.aux = true without an activation"},
      {"epilogue", [](D& d) { d.epilogue.bias_grad = GemmBiasGrad::kA; }, "epilogue.bias_grad with bias, an activation or aux"},
  });
  auto relu = plain(DType::kF16, 64, 48, 32);
  relu.epilogue = {GemmActivation::kRelu, false, true, GemmBiasGrad::kNone};
  relu.aux = mat(DType::kBit, 64, 48, MatrixOrder::kRowMajor, 128);
  expect_select_refusals<GemmPlan>(relu, {
      {"dtype", [](D& d) { d.aux.dtype = DType::kF16; }, "aux.dtype = f16: relu's aux is a bit mask (bit)"},
      {"stride", [](D& d) { d.aux.ld = 64; }, "aux.ld = 64 is not a multiple of 128 bits"},
  });
  auto bgrad = plain(DType::kF32, 64, 48, 32);
  bgrad.epilogue.bias_grad = GemmBiasGrad::kB;
  bgrad.bias_grad = TensorLayout::contiguous(DType::kF32, {48});
  expect_select_refusals<GemmPlan>(bgrad, {
      {"shape", [](D& d) { d.bias_grad = TensorLayout::contiguous(DType::kF32, {64}); }, "bias_grad = f32[64] must be [48]"},
      {"dtype", [](D& d) { d.bias_grad.dtype = DType::kF16; }, "bias_grad.dtype = f16 differs from d.dtype = f32"},
  });
}

TEST(SelectRefusals, BatchedGemmPlan) {
  using D = BatchedGemmDescriptor;
  D valid;
  valid.gemm = full_epilogue();
  valid.batch = 4;
  valid.stride_a = 64 * 32;
  valid.stride_b = 0;  // broadcast
  valid.stride_c = valid.stride_d = valid.stride_aux = 64 * 48;
  valid.stride_bias = 0;
  expect_select_refusals<BatchedGemmPlan>(valid, {
      {"dtype", [](D& d) { d.gemm.b.dtype = DType::kF32; }, "b.dtype = f32 differs from a.dtype = bf16"},
      {"shape", [](D& d) { d.gemm.d.rows = 65; }, "d is 65 x 48, needs 64 x 48"},
      {"stride", [](D& d) { d.batch = -1; }, "batch = -1"},
      {"stride", [](D& d) { d.stride_a = -5; }, "stride_a = -5 is negative"},
      {"stride", [](D& d) { d.stride_d = 0; }, "stride_d = 0 is below the 3072 elements one d spans"},
      {"stride", [](D& d) { d.stride_d = 3000; }, "stride_d = 3000 is below the 3072 elements"},
      {"stride", [](D& d) { d.stride_aux = 100; }, "stride_aux = 100 is below the 3072 elements one aux spans"},
      {"stride", [](D& d) { d.stride_aux = 3076; }, "stride_aux = 3076 is not a multiple of 8"},
      // a batch whose offsets leave 64-bit indexing (4M batches 2^41 elements apart)
      {"stride", [](D& d) { d.batch = 1 << 22; d.stride_a = std::int64_t{1} << 41; },
       "a (batched) = bf16[4194304,64,32]{2199023255552,32,1} is too large for 64-bit indexing"},
      {"stride", [](D& d) { d.batch = 1 << 22; d.stride_c = d.stride_d = d.stride_aux = std::int64_t{1} << 41; },
       "c (batched) = bf16[4194304,64,48]{2199023255552,48,1} is too large for 64-bit indexing"},
      {"dtype", [](D& d) { d.gemm.bias.dtype = DType::kF16; }, "bias.dtype = f16 differs from d.dtype = bf16"},
      {"shape", [](D& d) { d.gemm.b.rows = 31; }, "b.rows = 31 differs from a.cols = 32 (K)"},
  });
}

}  // namespace
}  // namespace baracuda
