// GPU tests of AlibiPlan / AlibiBackwardPlan against reference::alibi(_backward): every dtype;
// bias add and bias alone; bottom-right and top-left; [H] and [B, H] slopes (strided too);
// Sq < Skv, Sq > Skv (both alignments), Skv not a whole vector, one key, Sq = Skv = 1,
// transposed scores, a padded row stride; in place;
// empty; every accepting SKU forced, poisoned outputs, guard bytes. Backward: grad_s only,
// grad_slopes only, both, grad_s in place of grad_y; the slope gradient bit-identical over two
// runs (deterministic), the padding between
// [B, H] slope rows untouched. A > 2^31-element case (sampled rows). Then the run-time refusals.
// Filter: --gtest_filter='*Alibi*'.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/ops/alibi.hpp"
#include "baracuda/reference/alibi.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

struct AlibiCase {
  std::string name;
  TensorLayout s;
  bool per_batch = false;
  CausalAlign align = CausalAlign::kBottomRight;
  bool in_place = false;
  bool bias_only = false;
};

std::vector<AlibiCase> alibi_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  const auto top = CausalAlign::kTopLeft;
  return {
      {"square", c({2, 4, 64, 64})},
      {"prefill_tail", c({2, 3, 17, 128})},
      {"sq_gt_skv", c({1, 2, 40, 24})},
      {"odd_skv", c({2, 3, 17, 33})},
      {"top_left_per_batch", c({3, 5, 32, 96}), true, top},
      {"decode_row", c({4, 8, 1, 1000})},
      {"transposed", TensorLayout::strided(t, {2, 4, 24, 40}, {4 * 960, 960, 1, 24})},
      {"padded_rows", TensorLayout::strided(t, {2, 3, 16, 64}, {3 * 16 * 72, 16 * 72, 72, 1})},
      {"in_place", c({2, 4, 33, 64}), false, CausalAlign::kBottomRight, true},
      {"in_place_per_batch", c({2, 4, 33, 64}), true, top, true},
      {"bias_only", c({2, 6, 31, 80}), false, CausalAlign::kBottomRight, false, true},
      {"bias_only_odd", c({1, 3, 9, 21}), true, top, false, true},
      {"empty", c({2, 4, 0, 64})},
      {"one_by_one", c({3, 2, 1, 1})},
      {"sq_gt_skv_top_left_per_batch", c({2, 3, 50, 16}), true, top},
      {"one_key_per_batch", c({2, 5, 24, 1}), true},
      {"big", c({2, 8, 256, 2048})},
  };
}

TensorLayout slopes_layout(const AlibiCase& c) {
  // [B, H] slopes with a padded batch stride; [H] contiguous
  if (c.per_batch) return TensorLayout::strided(DType::kF32, {c.s.shape[0], c.s.shape[1]}, {c.s.shape[1] + 3, 1}, 4);
  return TensorLayout::contiguous(DType::kF32, {c.s.shape[1]});
}

class AlibiGpu : public ::testing::TestWithParam<DType> {};

TEST_P(AlibiGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : alibi_cases(t)) {
    SCOPED_TRACE(c.name);
    const TensorLayout y = c.in_place ? c.s : TensorLayout::contiguous(t, c.s.shape_span());
    const TensorLayout sl = slopes_layout(c);
    AlibiDescriptor d{.s = c.bias_only ? TensorLayout{} : c.s, .y = y, .slopes = sl, .align = c.align};
    HostTensor hs(c.s), hy(y), hsl(sl);
    fill_random(hs, -4, 4, Fill::kWithEdges);
    fill_random(hsl, 0.001, 1);
    auto want = reference::alibi(d, c.bias_only ? nullptr : &hs, hsl);
    ASSERT_TRUE(want.has_value());
    const Stream& st = test_stream();
    DeviceTensor ds(hs, st), dy(hy, st), dsl(hsl, st);
    DeviceTensor& out = c.in_place ? ds : dy;
    for_each_sku<AlibiPlan>(
        d,
        [&] {
          ds.upload(hs, st);
          dy.poison(0xFF, st);
        },
        [&](const AlibiPlan& p, Workspace ws) {
          return p.run(st, ws, AlibiArgs{.s = c.bias_only ? nullptr : ds.data(), .y = out.data(),
                                         .slopes = static_cast<const float*>(dsl.data())});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE(out.download(hy, st));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
        });
  }
}

TEST_P(AlibiGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : alibi_cases(t)) {
    if (c.bias_only) continue;
    for (int which : {0, 1, 2}) {  // grad_s and grad_slopes, grad_s only, grad_slopes only
      SCOPED_TRACE(c.name + " which=" + std::to_string(which));
      const TensorLayout gs = which == 2 ? TensorLayout{} : c.in_place ? c.s : TensorLayout::contiguous(t, c.s.shape_span());
      const TensorLayout gsl = which == 1 ? TensorLayout{} : slopes_layout(c);
      AlibiBackwardDescriptor d{.grad_y = c.s, .grad_s = gs, .grad_slopes = gsl, .align = c.align};
      HostTensor hg(c.s), hgs(gs.rank ? gs : c.s), hgsl(gsl.rank ? gsl : slopes_layout(c));
      fill_random(hg, -4, 4);
      auto want = reference::alibi_backward(d, hg);
      ASSERT_TRUE(want.has_value());
      const Stream& st = test_stream();
      DeviceTensor dg(hg, st), dgs(hgs, st), dgsl(hgsl, st);
      DeviceTensor& gs_out = c.in_place ? dg : dgs;
      auto args = [&] {
        return AlibiBackwardArgs{.grad_y = dg.data(), .grad_s = gs.rank ? gs_out.data() : nullptr,
                                 .grad_slopes = gsl.rank ? static_cast<float*>(dgsl.data()) : nullptr};
      };
      for_each_sku<AlibiBackwardPlan>(
          d,
          [&] {
            dg.upload(hg, st);
            dgs.poison(0xFF, st);
            dgsl.poison(0xFF, st);
          },
          [&](const AlibiBackwardPlan& p, Workspace ws) { return p.run(st, ws, args()); },
          [&](const std::string& sku) {
            if (gs.rank) {
              ASSERT_TRUE(gs_out.download(hgs, st));
              EXPECT_TRUE(check_exact(hgs, want->grad_s, sku + " grad_s " + d.to_string()));
            }
            if (gsl.rank) {
              ASSERT_TRUE(dgsl.download(hgsl, st));
              EXPECT_TRUE(check_close(hgsl, want->grad_slopes, sku + " grad_slopes " + d.to_string()));
            }
          });
      if (gsl.rank && c.s.numel() > 0) {  // determinism: two runs of the default SKU, identical bits
        auto plan = AlibiBackwardPlan::select(st, d);
        ASSERT_TRUE(plan.has_value());
        HostTensor runs[2] = {HostTensor(gsl), HostTensor(gsl)};
        const unsigned char poison[2] = {0x00, 0xFF};
        for (int r = 0; r < 2; ++r) {
          dg.upload(hg, st);
          dgsl.poison(poison[r], st);
          ASSERT_TRUE(plan->run(st, test_workspace(plan->workspace_size()), args()).is_ok());
          ASSERT_TRUE(dgsl.download(runs[r], st));
        }
        // The bits of every slope element agree; the storage between elements ([B, H] slopes
        // with a padded batch stride) is not the plan's to write and keeps each run's poison.
        const std::size_t es = dtype_size(gsl.dtype);
        std::vector<bool> element(runs[0].storage_bytes(), false);
        for (std::int64_t i = 0; i < gsl.numel(); ++i) {
          const std::size_t at = runs[0].origin_bytes() + static_cast<std::size_t>(reference::offset_of(gsl, i)) * es;
          for (std::size_t q = 0; q < es; ++q) element[at + q] = true;
          EXPECT_EQ(std::memcmp(runs[0].storage() + at, runs[1].storage() + at, es), 0)
              << plan->sku().name() << ": slope gradient not deterministic at element " << i << " (" << runs[0].get(i)
              << " vs " << runs[1].get(i) << ")";
        }
        for (int r = 0; r < 2; ++r)
          for (std::size_t q = 0; q < element.size(); ++q)
            if (!element[q] && static_cast<unsigned char>(runs[r].storage()[q]) != poison[r]) {
              ADD_FAILURE() << plan->sku().name() << " run " << r << ": storage byte " << q << " between the slopes was written";
              break;
            }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, AlibiGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// More than 2^31 elements (64-bit offsets): [1, 2, 2^15 + 1, 2^15] bf16 in place, the scores set
// on the device to one byte pattern (no 4 GiB host copy); every SKU forced. Checked rows: with
// bottom-right alignment the last row of each head (head 1's lies past element 2^31) against
// the oracle of the one-row problem [1, 1, 1, Skv] (same distances |Skv - 1 - j|), with
// top-left the first row of each head against the one-row top-left problem (|0 - j|).
TEST(AlibiGpuHuge, BeyondTwoToThe31Elements) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t H = 2, Sq = (std::int64_t{1} << 15) + 1, Skv = std::int64_t{1} << 15;
  const auto sc = TensorLayout::contiguous(DType::kBF16, {1, H, Sq, Skv});
  ASSERT_GT(sc.numel(), std::int64_t{1} << 31);
  const std::size_t bytes = static_cast<std::size_t>(sc.numel()) * 2;
  auto buf = DeviceBuffer::allocate(bytes);
  ASSERT_TRUE(buf.has_value()) << buf.error().to_string();
  const Stream& st = test_stream();
  const auto sl = TensorLayout::contiguous(DType::kF32, {H});
  HostTensor hsl(sl);
  fill_random(hsl, 0.001, 0.01);
  DeviceTensor dsl(hsl, st);
  const auto row = TensorLayout::contiguous(DType::kBF16, {1, 1, 1, Skv});
  HostTensor one(row), got(row);
  for (std::int64_t j = 0; j < Skv; ++j) one.set(j, 0.74609375);  // bf16 0x3F3F, the memset pattern
  for (CausalAlign a : {CausalAlign::kBottomRight, CausalAlign::kTopLeft}) {
    AlibiDescriptor d{.s = sc, .y = sc, .slopes = sl, .align = a};
    for_each_sku<AlibiPlan>(
        d, [&] { ASSERT_TRUE(memset_device(buf->data(), 0x3F, bytes, st).is_ok()); },
        [&](const AlibiPlan& p, Workspace ws) {
          return p.run(st, ws, AlibiArgs{.s = buf->data(), .y = buf->data(), .slopes = static_cast<const float*>(dsl.data())});
        },
        [&](const std::string& sku) {
          for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t i = a == CausalAlign::kBottomRight ? Sq - 1 : 0;
            const std::size_t off = static_cast<std::size_t>((h * Sq + i) * Skv) * 2;
            ASSERT_TRUE(copy_to_host(got.data(), static_cast<const char*>(buf->data()) + off, static_cast<std::size_t>(Skv) * 2, st).is_ok());
            ASSERT_TRUE(st.synchronize().is_ok());
            HostTensor slope(TensorLayout::contiguous(DType::kF32, {1}));
            slope.set(0, hsl.get(h));
            AlibiDescriptor d1{.s = row, .y = row, .slopes = slope.layout(), .align = a};
            auto want = reference::alibi(d1, &one, slope);
            ASSERT_TRUE(want.has_value());
            EXPECT_TRUE(check_close(got, want.value(), sku + " head " + std::to_string(h) + " row " + std::to_string(i)));
          }
        });
  }
}

// Run-time refusals of both plans: null, misaligned, aliasing, and the backward's workspace
// (too small, null, misaligned); the outputs keep their poison.
TEST(AlibiGpuRefusals, RunTable) {
  BARACUDA_REQUIRE_GPU();
  const auto s = TensorLayout::contiguous(DType::kF32, {2, 4, 16, 32});
  const auto sl = TensorLayout::contiguous(DType::kF32, {4});
  auto fwd = AlibiPlan::select(test_stream(), AlibiDescriptor{.s = s, .y = s, .slopes = sl});
  auto bwd = AlibiBackwardPlan::select(test_stream(), AlibiBackwardDescriptor{.grad_y = s, .grad_s = s, .grad_slopes = sl});
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->workspace_size(), 0u);
  const std::size_t need = bwd->workspace_size();
  ASSERT_GT(need, 0u);
  HostTensor hs(s), hsl(sl);
  fill_random(hs, -2, 2);
  fill_random(hsl, 0.1, 1);
  const Stream& st = test_stream();
  DeviceTensor ds(hs, st), dg(hs, st), dsl(hsl, st);
  Untouched y(s), gs(s), gsl(sl);
  const auto* slp = static_cast<const float*>(dsl.data());
  void* s_row1 = static_cast<float*>(ds.data()) + 32;
  const Workspace ws = test_workspace(need + kWorkspaceAlignment);
  const AlibiBackwardArgs bargs{.grad_y = dg.data(), .grad_s = gs.data(), .grad_slopes = static_cast<float*>(gsl.data())};
  auto bwd_with = [&](AlibiBackwardArgs a, Workspace w) { return bwd->run(st, w, a); };
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  std::vector<RunRefusal> rows = workspace_refusals("backward", [&](Workspace w) { return bwd_with(bargs, w); }, ws, need);
  rows.insert(rows.end(),
              {
                  {"forward null slopes", [&] { return fwd->run(st, {}, {.s = ds.data(), .y = y.data(), .slopes = nullptr}); }, kBad,
                   "args.slopes is null"},
                  {"forward misaligned s",
                   [&] { return fwd->run(st, {}, {.s = static_cast<const char*>(ds.data()) + 4, .y = y.data(), .slopes = slp}); },
                   kMis, "not aligned to s.alignment = 16"},
                  {"forward y partially over s", [&] { return fwd->run(st, {}, {.s = ds.data(), .y = s_row1, .slopes = slp}); },
                   kBad, "args.y overlaps args.s"},
                  {"forward y over slopes",
                   [&] { return fwd->run(st, {}, {.s = ds.data(), .y = dsl.data(), .slopes = slp}); }, kBad,
                   "args.y overlaps args.slopes"},
                  {"backward null grad_y", [&] { auto a = bargs; a.grad_y = nullptr; return bwd_with(a, {ws.data, need}); }, kBad,
                   "args.grad_y is null"},
                  {"backward misaligned grad_s", [&] {
                     auto a = bargs;
                     a.grad_s = static_cast<char*>(gs.data()) + 4;
                     return bwd_with(a, {ws.data, need});
                   }, kMis, "not aligned to grad_s.alignment = 16"},
                  {"backward grad_slopes inside grad_y", [&] {
                     auto a = bargs;
                     a.grad_slopes = static_cast<float*>(dg.data());
                     return bwd_with(a, {ws.data, need});
                   }, kBad, "args.grad_slopes overlaps args.grad_y"},
                  {"backward grad_slopes inside grad_s", [&] {
                     auto a = bargs;
                     a.grad_slopes = static_cast<float*>(gs.data());
                     return bwd_with(a, {ws.data, need});
                   }, kBad, "overlap (outputs must be distinct)"},
              });
  expect_run_refusals(rows, {&y, &gs, &gsl});
}

}  // namespace
}  // namespace baracuda::test
