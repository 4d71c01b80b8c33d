// GPU tests of RopePlan / RopeBackwardPlan against reference::rope(_backward): every dtype;
// [B, S, H, D], [B, H, S, D], [T, H, D] and [B, S, D]; neox and interleaved; full and partial
// rotary; position ids ([S] i32, [B, S] i64, out-of-cache positions -> NaN) or offsets; f32 and
// x-dtype caches, HF's [max_pos, R] cache as a half view, a cache with unaligned rows; in-kernel
// tables with every scaling rule and large positions (also with position ids, partial rotary,
// interleaved pairs, [T, H, D] / [B, H, S, D], q + k, in place; YaRN's own attention factor and betas); q + k (GQA head counts) in one launch;
// strided views (a q slice of packed qkv, a non-unit head dim); in place; empty; > 2^31
// elements (sampled rows); every accepting SKU forced, poisoned outputs, guard bytes; graph
// capture. Then the run-time refusals (null, misaligned, aliasing) with the outputs left
// untouched. Filter: --gtest_filter='*Rope*'.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "baracuda/ops/rope.hpp"
#include "baracuda/reference/rope.hpp"
#include "gemm_gpu_util.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

enum class Ids { kNone, kSeq32, kBatch64, kOutOfRange };
enum class Cache { kNone, kF32, kSame, kHfView, kPadded };

struct RopeCase {
  std::string name;
  TensorLayout x;
  TensorLayout x2;  // rank 0: none
  RopeOptions options;
  Ids ids = Ids::kNone;
  Cache cache = Cache::kNone;
  bool in_place = false;
};

RopeOptions opts(int seq_axis, RopeStyle style = RopeStyle::kNeox, std::int64_t rotary = 0) {
  RopeOptions o;
  o.seq_axis = seq_axis;
  o.style = style;
  o.rotary_dim = rotary;
  return o;
}
RopeOptions scaled(RopeScaling s, std::int64_t offset) {
  RopeOptions o;
  o.scaling = s;
  o.factor = s == RopeScaling::kLlama3 ? 8 : 4;
  o.theta = s == RopeScaling::kLlama3 ? 500000 : 10000;
  o.original_max_position = s == RopeScaling::kLlama3 ? 8192 : 4096;
  o.position_offset = offset;
  return o;
}

std::vector<RopeCase> rope_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  const auto inter = RopeStyle::kInterleaved;
  // q of a packed qkv [2, 19, 3 * 4, 64]: the first 4 heads
  const auto q_of_qkv = TensorLayout::strided(t, {2, 19, 4, 64}, {19 * 12 * 64, 12 * 64, 64, 1});
  // [B, S, H, D] with the head dim strided (D innermost in storage is not the last dim)
  const auto head_dim_strided = TensorLayout::strided(t, {2, 7, 3, 16}, {7 * 3 * 16, 1, 7 * 16, 7});
  // the in-kernel tables' scaling rules with position ids, partial rotary, interleaved pairs,
  // other layouts and q + k; YaRN with an explicit attention factor and its own betas
  auto laid = [](RopeOptions o, int seq_axis, RopeStyle style, std::int64_t rotary) {
    o.seq_axis = seq_axis;
    o.style = style;
    o.rotary_dim = rotary;
    return o;
  };
  RopeOptions yarn = scaled(RopeScaling::kYarn, 0);
  yarn.attention_factor = 0.9;
  yarn.beta_fast = 16;
  yarn.beta_slow = 2;
  const auto neox = RopeStyle::kNeox;
  return {
      {"bshd_neox_cache_f32", c({2, 33, 4, 64}), {}, opts(1), Ids::kNone, Cache::kF32},
      {"bshd_neox_cache_same", c({2, 33, 4, 64}), {}, opts(1), Ids::kBatch64, Cache::kSame},
      {"bshd_hf_cache_view", c({2, 9, 3, 32}), {}, opts(1), Ids::kSeq32, Cache::kHfView},
      {"bshd_cache_padded_rows", c({2, 9, 3, 32}), {}, opts(1, RopeStyle::kInterleaved), Ids::kBatch64, Cache::kPadded},
      {"bhsd_interleaved", c({2, 4, 33, 64}), {}, opts(2, inter), Ids::kBatch64},
      {"bhsd_neox_tables", c({3, 5, 41, 128}), {}, opts(2)},
      {"tokens_partial", c({37, 5, 80}), {}, opts(0, RopeStyle::kNeox, 32), Ids::kSeq32},
      {"tokens_partial_interleaved", c({37, 5, 80}), {}, opts(0, inter, 48), Ids::kSeq32, Cache::kF32},
      {"bsd_one_head", c({3, 17, 16}), {}, opts(1)},
      {"odd_half", c({2, 11, 3, 10}), {}, opts(1, RopeStyle::kNeox, 6)},
      {"odd_head_dim", c({2, 11, 3, 9}), {}, opts(1, inter, 6)},
      {"qk_gqa", c({2, 19, 8, 128}), c({2, 19, 2, 128}), opts(1), Ids::kBatch64, Cache::kSame},
      {"qk_gqa_tables_bhsd", c({2, 8, 19, 64}), c({2, 1, 19, 64}), opts(2, inter, 32)},
      {"q_of_packed_qkv", q_of_qkv, {}, opts(1), Ids::kNone, Cache::kF32},
      {"head_dim_strided", head_dim_strided, {}, opts(1, inter)},
      {"in_place", c({2, 33, 4, 64}), {}, opts(1), Ids::kBatch64, Cache::kF32, true},
      {"in_place_partial_qk", c({2, 33, 4, 64}), c({2, 33, 1, 64}), opts(1, RopeStyle::kNeox, 16), Ids::kNone, Cache::kNone, true},
      {"out_of_cache_positions", c({2, 13, 2, 32}), {}, opts(1), Ids::kOutOfRange, Cache::kF32},
      {"linear_offset", c({1, 64, 2, 64}), {}, scaled(RopeScaling::kLinear, 1000)},
      {"ntk_offset", c({1, 64, 2, 64}), {}, scaled(RopeScaling::kNtk, 30000)},
      {"yarn_offset", c({1, 64, 2, 64}), {}, scaled(RopeScaling::kYarn, 7000)},
      {"llama3_long", c({1, 64, 2, 128}), {}, scaled(RopeScaling::kLlama3, 120000)},
      {"yarn_ids_interleaved_partial", c({2, 21, 3, 64}), {}, laid(yarn, 1, inter, 48), Ids::kBatch64},
      {"llama3_ids_bhsd_qk_partial", c({2, 4, 17, 128}), c({2, 1, 17, 128}), laid(scaled(RopeScaling::kLlama3, 0), 2, neox, 96),
       Ids::kSeq32},
      {"ntk_tokens_interleaved", c({29, 4, 64}), {}, laid(scaled(RopeScaling::kNtk, 500), 0, inter, 0)},
      {"linear_ids_partial_in_place", c({2, 9, 2, 32}), {}, laid(scaled(RopeScaling::kLinear, 0), 1, neox, 16), Ids::kBatch64,
       Cache::kNone, true},
      {"empty_seq", c({2, 0, 4, 64}), {}, opts(1)},
      {"big", c({2, 512, 16, 128}), c({2, 512, 4, 128}), opts(1), Ids::kNone, Cache::kF32},
  };
}

std::int64_t seq_of(const RopeCase& c) { return c.x.shape[c.options.seq_axis]; }
std::int64_t batch_of(const RopeCase& c) { return c.options.seq_axis == 0 ? 1 : c.x.shape[0]; }
std::int64_t rotary_of(const RopeCase& c) { return c.options.rotary_dim ? c.options.rotary_dim : c.x.shape[c.x.rank - 1]; }
constexpr std::int64_t kMaxPos = 160;
// Rows of a case's cos / sin cache: kMaxPos, or every position of a case without ids
// (position_offset + S, which the plan requires to fit in the cache).
std::int64_t cache_rows(const RopeCase& c) {
  return c.ids == Ids::kNone ? std::max(kMaxPos, c.options.position_offset + seq_of(c)) : kMaxPos;
}

// Host inputs of a case: the layouts, the id / cache tensors, and a descriptor-ready set.
struct Inputs {
  TensorLayout ids, cos, sin;
  std::optional<HostTensor> hids, hcos, hsin;
};

Inputs make_inputs(const RopeCase& c) {
  Inputs in;
  const std::int64_t S = seq_of(c), B = batch_of(c), half = rotary_of(c) / 2;
  if (c.ids != Ids::kNone) {
    in.ids = c.ids == Ids::kSeq32 ? TensorLayout::contiguous(DType::kI32, {S}) : TensorLayout::contiguous(DType::kI64, {B, S});
    in.hids.emplace(in.ids);
    std::uniform_int_distribution<std::int64_t> pos(0, c.cache == Cache::kNone ? 20000 : kMaxPos - 1);
    for (std::int64_t i = 0; i < in.ids.numel(); ++i) {
      std::int64_t v = pos(rng());
      if (c.ids == Ids::kOutOfRange && i % 5 == 0) v = i % 10 == 0 ? -1 : kMaxPos;
      in.hids->set(i, static_cast<double>(v));
    }
  }
  if (c.cache != Cache::kNone) {
    const DType ct = c.cache == Cache::kSame ? c.x.dtype : DType::kF32;
    const std::int64_t rows = cache_rows(c);
    if (c.cache == Cache::kHfView)  // the first half of HF's [max_pos, R] cache (cat(freqs, freqs))
      in.cos = in.sin = TensorLayout::strided(DType::kF32, {rows, half}, {2 * half, 1});
    else if (c.cache == Cache::kPadded)  // rows of half + 1 entries: not whole 16-byte vectors
      in.cos = in.sin = TensorLayout::strided(DType::kF32, {rows, half}, {half + 1, 1}, 4);
    else
      in.cos = in.sin = TensorLayout::contiguous(ct, {rows, half});
    in.hcos.emplace(in.cos);
    in.hsin.emplace(in.sin);
    fill_random(*in.hcos, -1, 1);
    fill_random(*in.hsin, -1, 1);
  }
  return in;
}

class RopeGpu : public ::testing::TestWithParam<DType> {};

template <class PlanT, class Desc, class ArgsFn, class RefFn>
void run_case(const RopeCase& c, const Desc& d, const TensorLayout& out, const TensorLayout& out2, const Inputs& in,
              ArgsFn make_args, RefFn reference_of) {
  HostTensor hx(c.x), hy(out);
  fill_random(hx, -4, 4, Fill::kWithEdges);
  std::optional<HostTensor> hx2, hy2;
  if (c.x2.rank) {
    hx2.emplace(c.x2);
    hy2.emplace(out2);
    fill_random(*hx2, -4, 4, Fill::kWithEdges);
  }
  reference::RopeInputs ri{.x = &hx, .x2 = hx2 ? &*hx2 : nullptr, .position_ids = in.hids ? &*in.hids : nullptr,
                           .cos = in.hcos ? &*in.hcos : nullptr, .sin = in.hsin ? &*in.hsin : nullptr};
  auto want = reference_of(d, ri);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  const Stream& s = test_stream();
  DeviceTensor dx(hx, s), dy(hy, s);
  std::optional<DeviceTensor> dx2, dy2, dids, dcos, dsin;
  if (hx2) {
    dx2.emplace(*hx2, s);
    dy2.emplace(*hy2, s);
  }
  if (in.hids) dids.emplace(*in.hids, s);
  if (in.hcos) {
    dcos.emplace(*in.hcos, s);
    dsin.emplace(*in.hsin, s);
  }
  DeviceTensor& ydev = c.in_place ? dx : dy;
  for_each_sku<PlanT>(
      d,
      [&] {
        dx.upload(hx, s);
        dy.poison(0xFF, s);
        if (dx2) {
          dx2->upload(*hx2, s);
          dy2->poison(0xFF, s);
        }
      },
      [&](const PlanT& p, Workspace ws) {
        void* y2 = dy2 ? (c.in_place ? dx2->data() : dy2->data()) : nullptr;
        return p.run(s, ws,
                     make_args(dx.data(), ydev.data(), dx2 ? dx2->data() : nullptr, y2, dids ? dids->data() : nullptr,
                               dcos ? dcos->data() : nullptr, dsin ? dsin->data() : nullptr));
      },
      [&](const std::string& sku) {
        ASSERT_TRUE(ydev.download(hy, s));
        EXPECT_TRUE(check_close(hy, want->y, sku + " " + d.to_string()));
        if (dx2) {
          ASSERT_TRUE((c.in_place ? *dx2 : *dy2).download(*hy2, s));
          EXPECT_TRUE(check_close(*hy2, want->y2, sku + " second tensor " + d.to_string()));
        }
      });
}

TEST_P(RopeGpu, ForwardAndBackward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : rope_cases(t)) {
    SCOPED_TRACE(c.name);
    const Inputs in = make_inputs(c);
    const TensorLayout out = c.in_place ? c.x : TensorLayout::contiguous(t, c.x.shape_span());
    const TensorLayout out2 = c.x2.rank == 0 ? TensorLayout{} : c.in_place ? c.x2 : TensorLayout::contiguous(t, c.x2.shape_span());
    RopeDescriptor d{.x = c.x, .y = out, .x2 = c.x2, .y2 = out2, .position_ids = in.ids, .cos = in.cos, .sin = in.sin,
                     .options = c.options};
    run_case<RopePlan>(
        c, d, out, out2, in,
        [](const void* x, void* y, const void* x2, void* y2, const void* ids, const void* cs, const void* sn) {
          return RopeArgs{.x = x, .y = y, .x2 = x2, .y2 = y2, .position_ids = ids, .cos = cs, .sin = sn};
        },
        [](const RopeDescriptor& dd, const reference::RopeInputs& ri) { return reference::rope(dd, ri); });
    RopeBackwardDescriptor bd{.grad_y = c.x, .grad_x = out, .grad_y2 = c.x2, .grad_x2 = out2, .position_ids = in.ids,
                              .cos = in.cos, .sin = in.sin, .options = c.options};
    run_case<RopeBackwardPlan>(
        c, bd, out, out2, in,
        [](const void* g, void* gx, const void* g2, void* gx2, const void* ids, const void* cs, const void* sn) {
          return RopeBackwardArgs{.grad_y = g, .grad_x = gx, .grad_y2 = g2, .grad_x2 = gx2, .position_ids = ids, .cos = cs,
                                  .sin = sn};
        },
        [](const RopeBackwardDescriptor& dd, const reference::RopeInputs& ri) { return reference::rope_backward(dd, ri); });
  }
}

INSTANTIATE_TEST_SUITE_P(Types, RopeGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Captured in a CUDA graph and replayed: the same result as the eager run.
TEST(RopeGpuGraph, CaptureAndReplay) {
  BARACUDA_REQUIRE_GPU();
  const auto x = TensorLayout::contiguous(DType::kBF16, {2, 64, 8, 128});
  RopeDescriptor d{.x = x, .y = x};
  auto plan = RopePlan::select(test_stream(), d);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  EXPECT_TRUE(plan->sku().graph_capturable);
  HostTensor hx(x), hy(x);
  fill_random(hx, -4, 4);
  auto want = reference::rope(d, {.x = &hx}).value();
  DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
  ASSERT_TRUE(test_stream().synchronize().is_ok());
  cudaStream_t s = test_stream().handle();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan->run(test_stream(), {}, RopeArgs{.x = dx.data(), .y = dy.data()});
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  dy.poison(0xFF, test_stream());
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_TRUE(dy.download(hy, test_stream()));
  EXPECT_TRUE(check_close(hy, want.y, "graph replay"));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// More than 2^31 elements (64-bit offsets): x [1, 2^17 + 1, 128, 128] bf16 in place, set on the
// device to one byte pattern, tables computed in the kernel; every SKU forced. The last position's
// first and last heads (past element 2^31) against the oracle of [1, 1, 1, 128] with
// position_offset = S - 1.
TEST(RopeGpuHuge, BeyondTwoToThe31Elements) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t S = (std::int64_t{1} << 17) + 1, H = 128, D = 128;
  const auto x = TensorLayout::contiguous(DType::kBF16, {1, S, H, D});
  ASSERT_GT(x.numel(), std::int64_t{1} << 31);
  const std::size_t bytes = static_cast<std::size_t>(x.numel()) * 2;
  auto buf = DeviceBuffer::allocate(bytes);
  ASSERT_TRUE(buf.has_value()) << buf.error().to_string();
  const Stream& st = test_stream();
  const auto row = TensorLayout::contiguous(DType::kBF16, {1, 1, 1, D});
  HostTensor one(row), got(row);
  for (std::int64_t j = 0; j < D; ++j) one.set(j, 0.74609375);  // bf16 0x3F3F, the memset pattern
  RopeDescriptor d{.x = x, .y = x};
  RopeDescriptor d1{.x = row, .y = row};
  d1.options.position_offset = S - 1;
  auto want = reference::rope(d1, {.x = &one});
  ASSERT_TRUE(want.has_value());
  for_each_sku<RopePlan>(
      d, [&] { ASSERT_TRUE(memset_device(buf->data(), 0x3F, bytes, st).is_ok()); },
      [&](const RopePlan& p, Workspace ws) { return p.run(st, ws, RopeArgs{.x = buf->data(), .y = buf->data()}); },
      [&](const std::string& sku) {
        for (std::int64_t h : {std::int64_t{0}, H - 1}) {
          const std::size_t off = static_cast<std::size_t>(((S - 1) * H + h) * D) * 2;
          ASSERT_TRUE(copy_to_host(got.data(), static_cast<const char*>(buf->data()) + off, static_cast<std::size_t>(D) * 2, st).is_ok());
          ASSERT_TRUE(st.synchronize().is_ok());
          EXPECT_TRUE(check_close(got, want->y, sku + " last position, head " + std::to_string(h)));
        }
      });
}

// Run-time refusals: null, misaligned, aliasing (y over x2, y2 over x, y / y2 / grad_x over the
// caches, y partially over x); the outputs keep their poison. The caches are as large as x, so
// that an output placed over one lies inside it and overlaps nothing else: the refusal names
// that cache (a larger output would run on into the neighbouring allocations - position_ids,
// y - and be refused, rightly, for those first).
// The refusal tables' host operands: x [2, 8, 4, 32] and k [2, 8, 2, 32] f32 (random), a cos /
// sin cache [128, 16] (8 KiB, x's size) and position ids 0..7.
struct RefusalOperands {
  TensorLayout x = TensorLayout::contiguous(DType::kF32, {2, 8, 4, 32});
  TensorLayout k = TensorLayout::contiguous(DType::kF32, {2, 8, 2, 32});
  TensorLayout cache = TensorLayout::contiguous(DType::kF32, {128, 16});
  TensorLayout ids = TensorLayout::contiguous(DType::kI32, {8});
  HostTensor hx{x}, hk{k}, hc{cache}, hids{ids};
  RefusalOperands() {
    fill_random(hx, -2, 2);
    fill_random(hk, -2, 2);
    fill_random(hc, -1, 1);
    for (std::int64_t i = 0; i < 8; ++i) hids.set(i, static_cast<double>(i));
  }
};

TEST(RopeGpuRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const RefusalOperands o;
  const TensorLayout &x = o.x, &k = o.k, &cache = o.cache, &ids = o.ids;
  const HostTensor &hx = o.hx, &hk = o.hk, &hc = o.hc, &hids = o.hids;
  RopeDescriptor d{.x = x, .y = x, .x2 = k, .y2 = k, .position_ids = ids, .cos = cache, .sin = cache};
  auto fwd = RopePlan::select(test_stream(), d);
  RopeBackwardDescriptor bd{.grad_y = x, .grad_x = x, .position_ids = ids, .cos = cache, .sin = cache};
  auto bwd = RopeBackwardPlan::select(test_stream(), bd);
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->workspace_size(), 0u);
  const Stream& s = test_stream();
  DeviceTensor dx(hx, s), dk(hk, s), dc(hc, s), dsn(hc, s), dids(hids, s);
  ASSERT_EQ(dc.storage_bytes(), dx.storage_bytes());
  Untouched y(x), y2(k), gx(x);
  const RopeArgs ok{.x = dx.data(), .y = y.data(), .x2 = dk.data(), .y2 = y2.data(), .position_ids = dids.data(),
                    .cos = dc.data(), .sin = dsn.data()};
  auto with = [&](auto change) {
    RopeArgs a = ok;
    change(a);
    return fwd->run(s, {}, a);
  };
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  void* x_row1 = static_cast<float*>(dx.data()) + 32;
  std::vector<RunRefusal> rows = {
      {"null x", [&] { return with([](RopeArgs& a) { a.x = nullptr; }); }, kBad, "args.x is null"},
      {"null cos", [&] { return with([](RopeArgs& a) { a.cos = nullptr; }); }, kBad, "args.cos is null"},
      {"null position_ids", [&] { return with([](RopeArgs& a) { a.position_ids = nullptr; }); }, kBad, "args.position_ids is null"},
      {"misaligned x2", [&] { return with([&](RopeArgs& a) { a.x2 = static_cast<const char*>(ok.x2) + 4; }); }, kMis,
       "not aligned to x2.alignment = 16"},
      {"misaligned y", [&] { return with([&](RopeArgs& a) { a.y = static_cast<char*>(ok.y) + 8; }); }, kMis,
       "not aligned to y.alignment = 16"},
      {"y partially over x", [&] { return with([&](RopeArgs& a) { a.y = x_row1; }); }, kBad, "args.y overlaps args.x"},
      {"y over x2", [&] { return with([&](RopeArgs& a) { a.y = dk.data(); }); }, kBad, "args.y overlaps args.x2"},
      {"y2 over x", [&] { return with([&](RopeArgs& a) { a.y2 = dx.data(); }); }, kBad, "args.y2 overlaps args.x"},
      {"y2 over cos", [&] { return with([&](RopeArgs& a) { a.y2 = dc.data(); }); }, kBad, "args.y2 overlaps args.cos"},
      {"y over sin", [&] { return with([&](RopeArgs& a) { a.y = dsn.data(); }); }, kBad, "args.y overlaps args.sin"},
      {"y over y2", [&] { return with([&](RopeArgs& a) { a.y2 = y.data(); }); }, kBad, "overlap (outputs must be distinct)"},
      {"backward null grad_y",
       [&] { return bwd->run(s, {}, RopeBackwardArgs{.grad_x = gx.data(), .position_ids = dids.data(), .cos = dc.data(), .sin = dsn.data()}); },
       kBad, "args.grad_y is null"},
      {"backward grad_x over sin", [&] {
         return bwd->run(s, {}, RopeBackwardArgs{.grad_y = dx.data(), .grad_x = dsn.data(), .position_ids = dids.data(),
                                                 .cos = dc.data(), .sin = dsn.data()});
       }, kBad, "args.grad_x overlaps args.sin"},
  };
  expect_run_refusals(rows, {&y, &y2, &gx});
}

// RopeBackwardPlan's run-time refusals under each SKU (vec16, strided): null, misaligned and
// aliased pointers (grad_x may alias grad_y only exactly; grad_x over grad_y2, grad_x2 over
// grad_y, an output over position_ids or a cache, two outputs overlapping); workspace_size()
// is 0 for both (asserted; no workspace rows). A moved pointer lies inside the allocation it
// aliases; grad_x / grad_x2 keep their poison.
TEST(RopeGpuRefusals, BackwardRunTableEverySku) {
  BARACUDA_REQUIRE_GPU();
  const RefusalOperands o;
  const TensorLayout &x = o.x, &k = o.k;
  const RopeBackwardDescriptor d{.grad_y = x, .grad_x = x, .grad_y2 = k, .grad_x2 = k, .position_ids = o.ids, .cos = o.cache,
                                 .sin = o.cache};
  const Stream& s = test_stream();
  DeviceTensor dgy(o.hx, s), dgy2(o.hk, s), dc(o.hc, s), dsn(o.hc, s), dids(o.hids, s);
  Untouched gx(x), gx2(k);
  const RopeBackwardArgs ok{.grad_y = dgy.data(), .grad_x = gx.data(), .grad_y2 = dgy2.data(), .grad_x2 = gx2.data(),
                            .position_ids = dids.data(), .cos = dc.data(), .sin = dsn.data()};
  auto at = [](const void* p, int bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; };
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  using A = RopeBackwardArgs;
  for (const char* force : {"rope.bwd.vec16*", "rope.bwd.strided*"}) {
    SCOPED_TRACE(force);
    PlanPreference pref;
    pref.force_sku = force;
    auto plan = RopeBackwardPlan::select(s, d, pref);
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    ASSERT_EQ(plan->workspace_size(), 0u);
    expect_arg_run_refusals<A>(
        "rope_backward", ok, [&](Workspace w, const A& a) { return plan->run(s, w, a); }, Workspace{}, 0,
        {
            {"null grad_x", [](A& a) { a.grad_x = nullptr; }, kBad, "args.grad_x is null"},
            {"null grad_y2", [](A& a) { a.grad_y2 = nullptr; }, kBad, "args.grad_y2 is null"},
            {"null grad_x2", [](A& a) { a.grad_x2 = nullptr; }, kBad, "args.grad_x2 is null"},
            {"null sin", [](A& a) { a.sin = nullptr; }, kBad, "args.sin is null"},
            {"null position_ids", [](A& a) { a.position_ids = nullptr; }, kBad, "args.position_ids is null"},
            {"misaligned grad_y", [&](A& a) { a.grad_y = at(a.grad_y, 4); }, kMis, "not aligned to grad_y.alignment = 16"},
            {"misaligned grad_x", [&](A& a) { a.grad_x = at(a.grad_x, 8); }, kMis, "not aligned to grad_x.alignment = 16"},
            {"misaligned grad_x2", [&](A& a) { a.grad_x2 = at(a.grad_x2, 4); }, kMis, "not aligned to grad_x2.alignment = 16"},
            {"misaligned cos", [&](A& a) { a.cos = at(a.cos, 4); }, kMis, "not aligned to cos.alignment = 16"},
            {"grad_x partly over grad_y", [&](A& a) { a.grad_x = at(a.grad_y, 128); }, kBad,
             "args.grad_x overlaps args.grad_y without the identical layout"},
            {"grad_y2 inside grad_x", [](A& a) { a.grad_y2 = a.grad_x; }, kBad,
             "args.grad_x overlaps args.grad_y2 (grad_x may alias only grad_y)"},
            {"grad_x2 inside grad_y", [](A& a) { a.grad_x2 = const_cast<void*>(a.grad_y); }, kBad,
             "args.grad_x2 overlaps args.grad_y (grad_x2 may alias only grad_y2)"},
            {"position_ids inside grad_x", [](A& a) { a.position_ids = a.grad_x; }, kBad, "args.grad_x overlaps args.position_ids"},
            {"grad_x2 inside cos", [](A& a) { a.grad_x2 = const_cast<void*>(a.cos); }, kBad, "args.grad_x2 overlaps args.cos"},
            {"grad_x2 inside grad_x", [](A& a) { a.grad_x2 = a.grad_x; }, kBad,
             "args.grad_x and args.grad_x2 overlap (outputs must be distinct)"},
        },
        {&gx, &gx2});
  }
}

}  // namespace
}  // namespace baracuda::test
