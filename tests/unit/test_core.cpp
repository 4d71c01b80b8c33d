// Unit tests (no GPU): dtype traits, layouts, status, SKU names and globs.
#include <gtest/gtest.h>

#include <array>

#include "baracuda/baracuda.hpp"

namespace baracuda {
namespace {

TEST(DType, NamesSizesAndTraits) {
  EXPECT_EQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_EQ(dtype_size(DType::kF64), 8u);
  EXPECT_EQ(dtype_size(DType::kE4M3), 1u);
  EXPECT_EQ(dtype_size(DType::kC128), 16u);
  EXPECT_EQ(dtype_bits(DType::kS4), 4);
  EXPECT_EQ(dtype_bits(DType::kBit), 1);
  EXPECT_EQ(dtype_size(DType::kS4), 0u);  // packed: no whole-byte size
  EXPECT_TRUE(dtype_is_packed(DType::kU4));
  EXPECT_EQ(dtype_storage_bytes(DType::kS4, 5), 3u);
  EXPECT_EQ(dtype_storage_bytes(DType::kBit, 9), 2u);
  EXPECT_TRUE(dtype_is_floating(DType::kE5M2));
  EXPECT_FALSE(dtype_is_floating(DType::kC64));
  EXPECT_TRUE(dtype_is_complex(DType::kC64));
  EXPECT_TRUE(dtype_is_integer(DType::kU32));
  EXPECT_FALSE(dtype_is_integer(DType::kBool));
  EXPECT_FALSE(dtype_info(DType::kU8).is_signed);
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    EXPECT_EQ(dtype_info(t).dtype, t);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t) << dtype_name(t);
  }
  EXPECT_FALSE(parse_dtype("f128").has_value());
}

TEST(DType, DispatchMapsToHostTypes) {
  std::size_t size = 0;
  Status st = dispatch_float(DType::kBF16, [&](auto tag) {
    size = sizeof(typename decltype(tag)::type);
    return Status::ok();
  });
  EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(size, 2u);
  st = dispatch_float(DType::kI32, [&](auto) { return Status::ok(); });
  EXPECT_EQ(st.code(), Code::kNotSupported);
  EXPECT_NE(st.message().find("i32"), std::string::npos) << st.message();
}

TEST(Tensor, ContiguityNumelAndSpan) {
  auto t = TensorLayout::contiguous(DType::kF32, {2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides[0], 12);
  EXPECT_EQ(t.element_span().end_offset, 24);
  auto tr = TensorLayout::strided(DType::kF32, {3, 2}, {1, 3});  // transposed
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.element_span().end_offset, 6);
  auto neg = TensorLayout::strided(DType::kF32, {4}, {-1});
  EXPECT_EQ(neg.element_span().min_offset, -3);
  EXPECT_EQ(neg.element_span().end_offset, 1);
  EXPECT_EQ(neg.byte_span().min_offset, -12);
  auto bc = TensorLayout::strided(DType::kBF16, {5, 7}, {0, 1});
  EXPECT_TRUE(bc.has_broadcast());
  EXPECT_EQ(bc.element_span().end_offset, 7);
  auto empty = TensorLayout::contiguous(DType::kF32, {3, 0});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.is_contiguous());
  EXPECT_EQ(empty.element_span().end_offset, 0);
  auto packed = TensorLayout::contiguous(DType::kS4, {5});
  EXPECT_EQ(packed.byte_span().end_offset, 3);
}

TEST(Tensor, ValidateNamesFieldAndValue) {
  auto t = TensorLayout::contiguous(DType::kF32, {2, -3});
  Status st = validate_layout(t, "x");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("x.shape[1] = -3"), std::string::npos) << st.message();
  std::array<std::int64_t, 9> nine{1, 1, 1, 1, 1, 1, 1, 1, 1};
  st = validate_layout(TensorLayout::contiguous(DType::kF32, nine), "y");
  EXPECT_NE(st.message().find("y.rank = 9"), std::string::npos) << st.message();
  auto a = TensorLayout::contiguous(DType::kF32, {4}, 12);
  st = validate_layout(a, "a");
  EXPECT_NE(st.message().find("a.alignment = 12"), std::string::npos) << st.message();
}

TEST(Tensor, Broadcasting) {
  auto a = TensorLayout::contiguous(DType::kF32, {4, 1, 3});
  auto b = TensorLayout::contiguous(DType::kF32, {5, 1});
  auto s = broadcast_shape(a, b, "a", "b");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->rank, 3);
  EXPECT_EQ(s->shape[0], 4);
  EXPECT_EQ(s->shape[1], 5);
  EXPECT_EQ(s->shape[2], 3);
  auto bb = broadcast_to(b, 3, s->shape, "b");
  ASSERT_TRUE(bb.has_value());
  EXPECT_EQ(bb->strides[0], 0);
  EXPECT_EQ(bb->strides[1], 1);
  EXPECT_EQ(bb->strides[2], 0);
  auto c = TensorLayout::contiguous(DType::kF32, {4, 2});
  auto bad = broadcast_shape(a, c, "a", "c");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("do not broadcast"), std::string::npos) << bad.error().message();
}

TEST(Tensor, CollapseMergesDenseDimsPerOperand) {
  auto out = TensorLayout::contiguous(DType::kF32, {4, 5, 6});
  auto in = TensorLayout::contiguous(DType::kF32, {4, 5, 6});
  const TensorLayout* ops[] = {&out, &in};
  auto c = collapse_dims(ops);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.shape[0], 120);
  auto bias = broadcast_to(TensorLayout::contiguous(DType::kF32, {6}), 3, out.shape, "b").value();
  const TensorLayout* ops2[] = {&out, &bias};
  auto c2 = collapse_dims(ops2);
  EXPECT_EQ(c2.rank, 2);
  EXPECT_EQ(c2.shape[0], 20);
  EXPECT_EQ(c2.shape[1], 6);
  EXPECT_EQ(c2.strides[1][0], 0);
  EXPECT_EQ(c2.strides[1][1], 1);
  auto with_ones = TensorLayout::strided(DType::kF32, {1, 7, 1}, {99, 1, 5});
  const TensorLayout* ops3[] = {&with_ones};
  EXPECT_EQ(collapse_dims(ops3).rank, 1);
}

TEST(Tensor, OverlapAndAlignment) {
  alignas(256) static float buf[64];
  auto t = TensorLayout::contiguous(DType::kF32, {8});
  EXPECT_TRUE(byte_ranges_overlap(buf, t, buf + 7, t));
  EXPECT_FALSE(byte_ranges_overlap(buf, t, buf + 8, t));
  EXPECT_GE(pointer_alignment(buf), 256);
  EXPECT_EQ(pointer_alignment(reinterpret_cast<char*>(buf) + 64), 64);  // exactly: buf is 256-aligned
  EXPECT_EQ(pointer_alignment(reinterpret_cast<char*>(buf) + 2), 2);
}

TEST(Status, MessagesAndCodes) {
  Status st(Code::kWorkspaceTooSmall, "workspace.bytes = 3");
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(st.to_string(), "workspace_too_small: workspace.bytes = 3");
  st.add_context("run binary_backward");
  EXPECT_EQ(st.message(), "run binary_backward: workspace.bytes = 3");
  Status cu(Code::kCudaError, "cudaMalloc failed", StatusSource::kCuda, 2);
  EXPECT_EQ(cu.raw_status(), 2);
  EXPECT_NE(cu.to_string().find("raw status 2"), std::string::npos);
  Expected<int> e = Status(Code::kInternal, "x");
  EXPECT_FALSE(e.has_value());
  Expected<int> v = 5;
  EXPECT_EQ(v.value(), 5);
}

TEST(Sku, StableNamesAndGlobs) {
  KernelSku s;
  s.family = "unary";
  s.impl = "vec16_contig";
  s.in = s.out = DType::kBF16;
  s.compute = DType::kF32;
  EXPECT_EQ(s.name(), "unary.fwd.vec16_contig[bf16,f32].sm80+");
  s.out = DType::kE4M3;
  s.direction = Direction::kBackward;
  s.min_sm = 90;
  s.arch_specific = true;
  EXPECT_EQ(s.name(), "unary.bwd.vec16_contig[bf16,f32,e4m3].sm90a");
  EXPECT_TRUE(sku_glob_match("unary.*", s.name()));
  EXPECT_TRUE(sku_glob_match("*vec16*", s.name()));
  EXPECT_TRUE(sku_glob_match("unary.bwd.vec16_contig[bf16,f32,e4m3].sm9?a", s.name()));
  EXPECT_FALSE(sku_glob_match("binary.*", s.name()));
  EXPECT_FALSE(sku_glob_match("", s.name()));
}

TEST(Caps, SyntheticArchs) {
  for (int sm : {80, 89, 90}) {
    auto c = DeviceCaps::for_arch(sm);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->sm, sm);
    EXPECT_GT(c->sm_count, 0);
  }
  auto bad = DeviceCaps::for_arch(75);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("sm = 75"), std::string::npos);
}

}  // namespace
}  // namespace baracuda

namespace baracuda {
namespace {
TEST(BuildInfo, ArchListRules) {
  const char* full = "80-real,89-real,90a-real,90-virtual";
  EXPECT_TRUE(arch_list_supports(full, 80, false));
  EXPECT_TRUE(arch_list_supports(full, 86, false));   // sm_80 machine code runs on 8.6
  EXPECT_TRUE(arch_list_supports(full, 89, false));
  EXPECT_TRUE(arch_list_supports(full, 90, false));
  EXPECT_TRUE(arch_list_supports(full, 100, false));  // compute_90 PTX, JIT-compiled
  EXPECT_TRUE(arch_list_supports(full, 90, true));    // sm_90a code
  EXPECT_FALSE(arch_list_supports(full, 89, true));
  EXPECT_FALSE(arch_list_supports(full, 75, false));
  const char* ci = "90a-real,80-virtual";
  EXPECT_TRUE(arch_list_supports(ci, 80, false));     // PTX for 8.0 runs everywhere newer
  EXPECT_TRUE(arch_list_supports(ci, 89, false));
  EXPECT_TRUE(arch_list_supports(ci, 90, true));
  EXPECT_FALSE(arch_list_supports(ci, 100, true));
  const char* hopper_only = "90a-real";
  EXPECT_TRUE(arch_list_supports(hopper_only, 90, false));
  EXPECT_FALSE(arch_list_supports(hopper_only, 100, false));  // 90a code does not run on 10.0
  EXPECT_FALSE(arch_list_supports(hopper_only, 80, false));
  EXPECT_TRUE(arch_list_supports("80", 86, false));     // plain entry: machine code + PTX
  EXPECT_TRUE(arch_list_supports("80", 90, false));
  EXPECT_FALSE(arch_list_supports("86-real", 80, false));
  EXPECT_FALSE(arch_list_supports("", 90, false));
}

TEST(LibraryHandles, CudnnLockIsOnePerDevice) {
  // No device needed: the lock exists without the handle.
  EXPECT_EQ(&LibraryHandles::cudnn_mutex(0), &LibraryHandles::cudnn_mutex(0));
  EXPECT_NE(&LibraryHandles::cudnn_mutex(0), &LibraryHandles::cudnn_mutex(1));
  std::lock_guard<std::mutex> lock(LibraryHandles::cudnn_mutex(3));
  EXPECT_TRUE(LibraryHandles::cudnn_mutex(2).try_lock());
  LibraryHandles::cudnn_mutex(2).unlock();
}
}  // namespace
}  // namespace baracuda
