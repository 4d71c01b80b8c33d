// GPU tests of GumbelSoftmaxPlan / SparsemaxPlan and their backward against
// reference::gumbel_softmax / sparsemax (and _backward): every dtype, axes last / middle /
// first, rows of 1, 7, 1000, 4096, 65536 and 262144 elements, many rows, strided views
// (axis_cases.hpp), in place, empty tensors; every accepting SKU forced in turn, poisoned
// outputs and guard bytes. Gumbel: the device Philox noise reproduced by the host twin
// (soft y and y_soft element by element; the hard one-hot checked against z, as near-ties
// may pick either index), the hard path without y_soft, strided y / y_soft / noise / grad_x,
// the caller-noise path, reproducibility, the sample frequencies of the hard path, graph
// capture. Sparsemax: adversarial rows for the Newton steps, magnitudes, non-finite rows,
// strided y / grad_x. Run-time refusals (null, misaligned, aliasing; the
// workspace of the gumbel backward's split_row, none elsewhere) with outputs untouched.
// Filter: --gtest_filter='*Gumbel*:*Sparsemax*'
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "axis_cases.hpp"
#include "baracuda/reference/gumbel_softmax.hpp"
#include "baracuda/reference/softmax.hpp"
#include "baracuda/reference/sparsemax.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;

TensorLayout dense_like(const TensorLayout& l) { return TensorLayout::contiguous(l.dtype, l.shape_span()); }

// The hard output: per row NaN everywhere when the soft sample is NaN, else exactly one 1
// (the rest 0) at an index whose exact z is within rounding of the row's max z.
::testing::AssertionResult check_hard(const HostTensor& y, const reference::GumbelSoftmaxResult& want, const TensorLayout& l,
                                      int axis, const std::string& what) {
  const reference::AxisRows a = reference::axis_rows(l, axis);
  const double rel = l.dtype == DType::kF64 ? 1e-12 : 2e-5;
  for (std::int64_t row = 0; row < a.rows && a.len > 0; ++row) {
    const bool nan_row = std::isnan(want.y_soft.exact[static_cast<std::size_t>(a.index(row, 0))]);
    std::int64_t ones = 0, at = -1;
    double zmax = -std::numeric_limits<double>::infinity();
    for (std::int64_t k = 0; k < a.len; ++k) {
      const std::int64_t i = a.index(row, k);
      const double v = y.get(i);
      zmax = std::max(zmax, want.z[static_cast<std::size_t>(i)]);
      if (nan_row) {
        if (!std::isnan(v)) return ::testing::AssertionFailure() << what << ": row " << row << " should be NaN, [" << k << "] = " << v;
        continue;
      }
      if (v == 1.0) {
        ++ones;
        at = i;
      } else if (v != 0.0) {
        return ::testing::AssertionFailure() << what << ": row " << row << " [" << k << "] = " << v << " is not 0 or 1"
                                             << " (seed " << test_seed() << ")";
      }
    }
    if (nan_row) continue;
    if (ones != 1) return ::testing::AssertionFailure() << what << ": row " << row << " has " << ones << " ones";
    const double z = want.z[static_cast<std::size_t>(at)];
    if (!(z >= zmax - rel * (1 + std::fabs(zmax))))
      return ::testing::AssertionFailure() << what << ": row " << row << " picked z = " << z << " < max " << zmax
                                           << " (seed " << test_seed() << ")";
  }
  return ::testing::AssertionSuccess();
}

// A backward case under every SKU: grad_y `hg` in the case's layout (grad_x over it when
// in place), the saved forward output `hy`, grad_x poisoned; make(grad_y, y, grad_x) -> args.
template <class PlanT, class MakeArgs>
void backward_case(const AxisCase& c, const typename PlanT::Descriptor& d, const HostTensor& hg, const HostTensor& hy,
                   HostTensor& hgx, const reference::Result& want, MakeArgs make) {
  DeviceTensor dg(hg, test_stream()), dy(hy, test_stream()), dgx(hgx, test_stream());
  void* gx_ptr = c.in_place ? dg.data() : dgx.data();
  for_each_sku<PlanT>(
      d,
      [&] {
        dg.upload(hg, test_stream());
        dgx.poison(0xFF, test_stream());
      },
      [&](const PlanT& p, Workspace ws) { return p.run(test_stream(), ws, make(dg.data(), dy.data(), gx_ptr)); },
      [&](const std::string& sku) {
        ASSERT_TRUE((c.in_place ? dg : dgx).download(hgx, test_stream()));
        EXPECT_TRUE(check_close(hgx, want, sku + " " + d.to_string()));
      });
}

class GumbelSoftmaxGpu : public ::testing::TestWithParam<DType> {};

// Soft and hard (with y_soft), Philox noise and the caller's noise tensor (laid out as x).
TEST_P(GumbelSoftmaxGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : axis_cases(t))
    for (bool hard : {false, true})
      for (GumbelNoise src : {GumbelNoise::kPhilox, GumbelNoise::kTensor}) {
        SCOPED_TRACE(c.name + (hard ? " hard" : " soft") + (src == GumbelNoise::kTensor ? " noise tensor" : " philox"));
        const TensorLayout y = c.in_place ? c.x : dense_like(c.x);
        const TensorLayout ys = dense_like(c.x);
        const double tau = hard ? 0.5 : 1.7;
        GumbelSoftmaxDescriptor d{.x = c.x, .y = y, .y_soft = ys, .noise = c.x, .axis = c.axis, .tau = tau, .hard = hard,
                                  .save_soft = hard, .noise_source = src};
        HostTensor hx(c.x), hy(y), hys(ys), hg(c.x);
        fill_random(hx, -4, 4);
        const std::uint64_t seed = rng()(), offset = rng()() >> 8;
        if (src == GumbelNoise::kTensor) {
          auto draw = reference::gumbel_softmax(GumbelSoftmaxDescriptor{.x = c.x, .y = c.x}, hx, nullptr, seed ^ 1, 3);
          ASSERT_TRUE(draw.has_value());
          for (std::int64_t i = 0; i < c.x.numel(); ++i) hg.set(i, draw->g[static_cast<std::size_t>(i)]);
        }
        auto want = reference::gumbel_softmax(d, hx, &hg, seed, offset);
        ASSERT_TRUE(want.has_value()) << want.error().to_string();
        DeviceTensor dx(hx, test_stream()), dy(hy, test_stream()), dys(hys, test_stream()), dg(hg, test_stream());
        void* y_ptr = c.in_place ? dx.data() : dy.data();
        for_each_sku<GumbelSoftmaxPlan>(
            d,
            [&] {
              dx.upload(hx, test_stream());
              dy.poison(0xFF, test_stream());
              dys.poison(0xFF, test_stream());
            },
            [&](const GumbelSoftmaxPlan& p, Workspace ws) {
              return p.run(test_stream(), ws,
                           GumbelSoftmaxArgs{.x = dx.data(), .y = y_ptr, .y_soft = dys.data(), .noise = dg.data(),
                                             .seed = seed, .offset = offset});
            },
            [&](const std::string& sku) {
              ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
              const std::string what = sku + " " + d.to_string();
              if (!hard) {
                EXPECT_TRUE(check_close(hy, want->y, what));
                return;
              }
              EXPECT_TRUE(check_hard(hy, want.value(), c.x, c.axis, what));
              ASSERT_TRUE(dys.download(hys, test_stream()));
              EXPECT_TRUE(check_close(hys, want->y_soft, what + " y_soft"));
            });
      }
}

TEST_P(GumbelSoftmaxGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : axis_cases(t)) {
    SCOPED_TRACE(c.name);
    const TensorLayout gx = c.in_place ? c.x : dense_like(c.x);
    const TensorLayout yl = dense_like(c.x);
    GumbelSoftmaxBackwardDescriptor d{c.x, yl, gx, c.axis, 0.6};
    HostTensor hx(yl), hy(yl), hg(c.x), hgx(gx);
    fill_random(hx, -4, 4);
    fill_random(hg, -2, 2);
    auto fy = reference::gumbel_softmax(GumbelSoftmaxDescriptor{.x = yl, .y = yl, .axis = c.axis, .tau = 0.6}, hx, nullptr,
                                        rng()(), 0);
    ASSERT_TRUE(fy.has_value());
    for (std::int64_t i = 0; i < yl.numel(); ++i) hy.set(i, fy->y.exact[static_cast<std::size_t>(i)]);
    auto want = reference::gumbel_softmax_backward(d, hg, hy);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    backward_case<GumbelSoftmaxBackwardPlan>(c, d, hg, hy, hgx, want.value(), [](const void* g, const void* y, void* gx) {
      return GumbelSoftmaxBackwardArgs{.grad_y = g, .y_soft = y, .grad_x = gx};
    });
  }
}

// The hard forward without save_soft (Forward saves y_soft whenever it is hard): the one-hot
// alone against the exact z, Philox noise, every axis case. And strided outputs (the axis
// cases write dense y and y_soft): y and y_soft padded / transposed, soft and hard with
// y_soft, both noise sources; the backward with y_soft and grad_x strided. Every SKU.
TEST_P(GumbelSoftmaxGpu, HardWithoutSoftAndStridedOutputs) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : axis_cases(t)) {
    SCOPED_TRACE(c.name + " hard, no y_soft");
    const TensorLayout y = c.in_place ? c.x : dense_like(c.x);
    GumbelSoftmaxDescriptor d{.x = c.x, .y = y, .axis = c.axis, .tau = 0.7, .hard = true};
    HostTensor hx(c.x), hy(y);
    fill_random(hx, -4, 4);
    const std::uint64_t seed = rng()(), offset = rng()() >> 8;
    auto want = reference::gumbel_softmax(d, hx, nullptr, seed, offset);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    void* y_ptr = c.in_place ? dx.data() : dy.data();
    for_each_sku<GumbelSoftmaxPlan>(
        d,
        [&] {
          dx.upload(hx, test_stream());
          dy.poison(0xFF, test_stream());
        },
        [&](const GumbelSoftmaxPlan& p, Workspace ws) {
          return p.run(test_stream(), ws, GumbelSoftmaxArgs{.x = dx.data(), .y = y_ptr, .seed = seed, .offset = offset});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
          EXPECT_TRUE(check_hard(hy, want.value(), c.x, c.axis, sku + " " + d.to_string()));
        });
  }
  struct Case {
    TensorLayout x;
    int axis;
    TensorLayout y, y_soft;
  };
  auto dn = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  auto st = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> str) { return TensorLayout::strided(t, s, str); };
  const std::vector<Case> cases = {
      {dn({64, 256}), -1, st({64, 256}, {384, 1}), st({64, 256}, {1, 64})},
      {dn({256, 64}), -1, st({256, 64}, {1, 256}), st({256, 64}, {72, 1})},
      {dn({3, 65536}), -1, st({3, 65536}, {65600, 1}), st({3, 65536}, {65664, 1})},
      {dn({37, 5, 6}), 0, st({37, 5, 6}, {1, 222, 37}), st({37, 5, 6}, {40, 8, 1})},
  };
  for (const auto& cs : cases)
    for (bool hard : {false, true})
      for (GumbelNoise src : {GumbelNoise::kPhilox, GumbelNoise::kTensor}) {
        GumbelSoftmaxDescriptor d{.x = cs.x, .y = cs.y, .y_soft = cs.y_soft, .noise = cs.y_soft, .axis = cs.axis, .tau = 1.3,
                                  .hard = hard, .save_soft = hard, .noise_source = src};
        SCOPED_TRACE(d.to_string());
        HostTensor hx(cs.x), hy(cs.y), hys(cs.y_soft), hn(cs.y_soft);
        fill_random(hx, -4, 4);
        const std::uint64_t seed = rng()(), offset = rng()() >> 8;
        if (src == GumbelNoise::kTensor) {
          auto draw = reference::gumbel_softmax(GumbelSoftmaxDescriptor{.x = cs.x, .y = cs.x}, hx, nullptr, seed ^ 5, 1);
          ASSERT_TRUE(draw.has_value());
          for (std::int64_t i = 0; i < cs.x.numel(); ++i) hn.set(i, draw->g[static_cast<std::size_t>(i)]);
        }
        auto want = reference::gumbel_softmax(d, hx, &hn, seed, offset);
        ASSERT_TRUE(want.has_value()) << want.error().to_string();
        DeviceTensor dx(hx, test_stream()), dy(hy, test_stream()), dys(hys, test_stream()), dnz(hn, test_stream());
        for_each_sku<GumbelSoftmaxPlan>(
            d,
            [&] {
              dy.poison(0xFF, test_stream());
              dys.poison(0xFF, test_stream());
            },
            [&](const GumbelSoftmaxPlan& p, Workspace ws) {
              return p.run(test_stream(), ws,
                           GumbelSoftmaxArgs{.x = dx.data(), .y = dy.data(), .y_soft = dys.data(), .noise = dnz.data(),
                                             .seed = seed, .offset = offset});
            },
            [&](const std::string& sku) {
              ASSERT_TRUE(dy.download(hy, test_stream()));
              const std::string what = sku + " " + d.to_string();
              if (!hard) {
                EXPECT_TRUE(check_close(hy, want->y, what));
                return;
              }
              EXPECT_TRUE(check_hard(hy, want.value(), cs.x, cs.axis, what));
              ASSERT_TRUE(dys.download(hys, test_stream()));
              EXPECT_TRUE(check_close(hys, want->y_soft, what + " y_soft"));
            });
        if (!hard || src != GumbelNoise::kPhilox) continue;
        // backward: y_soft (strided, as saved) and grad_x strided (y's layout), grad_y dense
        for (std::int64_t i = 0; i < cs.y_soft.numel(); ++i) hys.set(i, want->y_soft.exact[static_cast<std::size_t>(i)]);
        const TensorLayout gl = dense_like(cs.x);
        GumbelSoftmaxBackwardDescriptor bd{gl, cs.y_soft, cs.y, cs.axis, 1.3};
        HostTensor hg(gl), hgx(cs.y);
        fill_random(hg, -2, 2);
        auto bwant = reference::gumbel_softmax_backward(bd, hg, hys);
        ASSERT_TRUE(bwant.has_value()) << bwant.error().to_string();
        backward_case<GumbelSoftmaxBackwardPlan>(AxisCase{}, bd, hg, hys, hgx, bwant.value(),
                                                 [](const void* g, const void* ys, void* gx) {
                                                   return GumbelSoftmaxBackwardArgs{.grad_y = g, .y_soft = ys, .grad_x = gx};
                                                 });
      }
}

INSTANTIATE_TEST_SUITE_P(Types, GumbelSoftmaxGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Same (seed, offset): the same bits, run after run; another offset or seed: other noise.
TEST(GumbelSoftmaxGpuNoise, ReproducibleAndKeyed) {
  BARACUDA_REQUIRE_GPU();
  const auto l = TensorLayout::contiguous(DType::kF32, {64, 1000});
  auto plan = GumbelSoftmaxPlan::select(test_stream(), GumbelSoftmaxDescriptor{.x = l, .y = l});
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  HostTensor hx(l), a(l), b(l);
  fill_random(hx, -1, 1);
  DeviceTensor dx(hx, test_stream()), dy(a, test_stream());
  auto run = [&](std::uint64_t seed, std::uint64_t offset, HostTensor& out) {
    dy.poison(0xFF, test_stream());
    ASSERT_TRUE(plan->run(test_stream(), {}, GumbelSoftmaxArgs{.x = dx.data(), .y = dy.data(), .seed = seed, .offset = offset}).is_ok());
    ASSERT_TRUE(dy.download(out, test_stream()));
  };
  run(42, 7, a);
  run(42, 7, b);
  EXPECT_EQ(std::memcmp(a.storage(), b.storage(), a.storage_bytes()), 0) << "same seed and offset differ";
  for (auto [seed, offset] : {std::pair<std::uint64_t, std::uint64_t>{42, 8}, {43, 7}}) {
    run(seed, offset, b);
    std::int64_t same = 0;
    for (std::int64_t i = 0; i < l.numel(); ++i) same += a.get(i) == b.get(i);
    EXPECT_LT(same, l.numel() / 100) << "seed " << seed << " offset " << offset;
  }
}

// The hard path samples class k with probability softmax(x)_k: 2^17 rows of the same 5 logits.
TEST(GumbelSoftmaxGpuNoise, HardSampleFrequencies) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t rows = 1 << 17;
  const double p[5] = {0.05, 0.1, 0.15, 0.3, 0.4};
  for (DType t : {DType::kF32, DType::kBF16, DType::kF64}) {
    const auto l = TensorLayout::contiguous(t, {rows, 5});
    GumbelSoftmaxDescriptor d{.x = l, .y = l, .tau = 0.8, .hard = true};
    HostTensor hx(l), hy(l);
    for (std::int64_t r = 0; r < rows; ++r)
      for (int k = 0; k < 5; ++k) hx.set(r * 5 + k, std::log(p[k]) + 3.0);  // logits up to a shift
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    for_each_sku<GumbelSoftmaxPlan>(
        d, [&] { dy.poison(0xFF, test_stream()); },
        [&](const GumbelSoftmaxPlan& plan, Workspace ws) {
          return plan.run(test_stream(), ws, GumbelSoftmaxArgs{.x = dx.data(), .y = dy.data(), .seed = 2024, .offset = 1});
        },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy.download(hy, test_stream()));
          double count[5] = {};
          for (std::int64_t r = 0; r < rows; ++r)
            for (int k = 0; k < 5; ++k) count[k] += hy.get(r * 5 + k);
          for (int k = 0; k < 5; ++k) {
            // the rounded logits shift p a little for bf16 (relative 2^-8 in x ~ 0.02 in log p)
            const double pk = std::exp(reference::round_to(t, std::log(p[k]) + 3.0) - 3.0);
            double norm = 0;
            for (int j = 0; j < 5; ++j) norm += std::exp(reference::round_to(t, std::log(p[j]) + 3.0) - 3.0);
            const double want = pk / norm, sigma = std::sqrt(want * (1 - want) / static_cast<double>(rows));
            EXPECT_NEAR(count[k] / static_cast<double>(rows), want, 5 * sigma) << sku << " class " << k;
          }
        });
  }
}

// A captured run() replays with the captured seed / offset: the replay equals the eager run.
TEST(GumbelSoftmaxGpuNoise, GraphCaptureReplays) {
  BARACUDA_REQUIRE_GPU();
  const auto l = TensorLayout::contiguous(DType::kBF16, {129, 4096});
  auto plan = GumbelSoftmaxPlan::select(test_stream(), GumbelSoftmaxDescriptor{.x = l, .y = l, .tau = 0.3});
  ASSERT_TRUE(plan.has_value());
  HostTensor hx(l), eager(l), replay(l);
  fill_random(hx, -3, 3);
  DeviceTensor dx(hx, test_stream()), dy(eager, test_stream());
  const GumbelSoftmaxArgs args{.x = dx.data(), .y = dy.data(), .seed = 99, .offset = 5};
  ASSERT_TRUE(plan->run(test_stream(), {}, args).is_ok());
  ASSERT_TRUE(dy.download(eager, test_stream()));
  cudaStream_t s = test_stream().handle();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan->run(test_stream(), {}, args);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  dy.poison(0xFF, test_stream());
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_TRUE(dy.download(replay, test_stream()));
  EXPECT_EQ(std::memcmp(eager.storage(), replay.storage(), eager.storage_bytes()), 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// ------------------------------------------------------------------------------ sparsemax
class SparsemaxGpu : public ::testing::TestWithParam<DType> {};

TEST_P(SparsemaxGpu, Forward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : axis_cases(t)) {
    SCOPED_TRACE(c.name);
    const TensorLayout y = c.in_place ? c.x : dense_like(c.x);
    SparsemaxDescriptor d{c.x, y, c.axis};
    HostTensor hx(c.x), hy(y);
    fill_random(hx, -3, 3);
    auto want = reference::sparsemax(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    void* y_ptr = c.in_place ? dx.data() : dy.data();
    for_each_sku<SparsemaxPlan>(
        d,
        [&] {
          dx.upload(hx, test_stream());
          dy.poison(0xFF, test_stream());
        },
        [&](const SparsemaxPlan& p, Workspace ws) { return p.run(test_stream(), ws, SparsemaxArgs{.x = dx.data(), .y = y_ptr}); },
        [&](const std::string& sku) {
          ASSERT_TRUE((c.in_place ? dx : dy).download(hy, test_stream()));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
        });
  }
}

TEST_P(SparsemaxGpu, Backward) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  for (const auto& c : axis_cases(t)) {
    SCOPED_TRACE(c.name);
    const TensorLayout gx = c.in_place ? c.x : dense_like(c.x);
    const TensorLayout yl = dense_like(c.x);
    SparsemaxBackwardDescriptor d{c.x, yl, gx, c.axis};
    HostTensor hx(yl), hy(yl), hg(c.x), hgx(gx);
    fill_random(hx, -1, 1);  // supports of several elements
    fill_random(hg, -2, 2);
    auto fy = reference::sparsemax(SparsemaxDescriptor{yl, yl, c.axis}, hx);
    ASSERT_TRUE(fy.has_value());
    for (std::int64_t i = 0; i < yl.numel(); ++i) hy.set(i, fy->exact[static_cast<std::size_t>(i)]);
    auto want = reference::sparsemax_backward(d, hg, hy);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    backward_case<SparsemaxBackwardPlan>(c, d, hg, hy, hgx, want.value(), [](const void* g, const void* y, void* gx) {
      return SparsemaxBackwardArgs{.grad_y = g, .y = y, .grad_x = gx};
    });
  }
}

// Rows that stress the threshold search: geometric spacing (Newton visits many supports),
// all equal (support = the row), one far above the rest (support 1), a shift of 1e4 (f16:
// 1e3), a dense cluster within 1 of the max, and the non-finite rows (NaN, +inf, all -inf,
// one -inf), for row lengths on every path.
TEST_P(SparsemaxGpu, HardRows) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  const double inf = std::numeric_limits<double>::infinity();
  const double shift = t == DType::kF16 ? 1e3 : 1e4;
  for (std::int64_t len : {7, 1000, 8192, 65536}) {
    const auto l = TensorLayout::contiguous(t, {10, len});
    HostTensor hx(l), hy(l);
    fill_random(hx, -0.5, 0.5);
    for (std::int64_t k = 0; k < len; ++k) {
      hx.set(0 * len + k, -std::ldexp(1.0, -static_cast<int>(k % 60)) * (k % 2 ? 1 : 1.5));  // geometric
      hx.set(1 * len + k, 0.25);                                                               // all equal
      hx.set(2 * len + k, k == len / 2 ? 5.0 : -static_cast<double>(k % 13));                 // one on top
      hx.set(3 * len + k, shift + static_cast<double>(k % 17) / 16);                          // shifted
      hx.set(4 * len + k, 1.0 - static_cast<double>((k * 7919) % 1024) / 1024 / len);         // cluster near the max
      hx.set(9 * len + k, -inf);                                                              // all -inf
    }
    hx.set(5 * len + len / 3, std::nan(""));
    hx.set(6 * len + len - 1, inf);
    hx.set(7 * len + len / 2, -inf);
    SparsemaxDescriptor d{l, l, -1};
    auto want = reference::sparsemax(d, hx);
    ASSERT_TRUE(want.has_value());
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    for_each_sku<SparsemaxPlan>(
        d, [&] { dy.poison(0xFF, test_stream()); },
        [&](const SparsemaxPlan& p, Workspace ws) { return p.run(test_stream(), ws, SparsemaxArgs{.x = dx.data(), .y = dy.data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy.download(hy, test_stream()));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string() + " len " + std::to_string(len)));
          EXPECT_TRUE(std::isnan(hy.get(5 * len)) && std::isnan(hy.get(6 * len)) && std::isnan(hy.get(9 * len))) << sku;
          EXPECT_EQ(hy.get(7 * len + len / 2), 0.0) << sku;
          for (int row : {0, 1, 2, 3, 4, 7, 8}) {
            double s = 0;
            for (std::int64_t k = 0; k < len; ++k) s += hy.get(row * len + k);
            EXPECT_NEAR(s, 1.0, t == DType::kF64 ? 1e-9 : 0.02 + 2e-6 * static_cast<double>(len)) << sku << " row " << row;
          }
        });
  }
}

// Strided outputs (the axis cases write dense y and grad_x): y padded / transposed /
// permuted along the last and the first axis; the backward with y and grad_x strided, and
// grad_x over grad_y in place with a strided grad_y. Every SKU.
TEST_P(SparsemaxGpu, StridedOutputs) {
  BARACUDA_REQUIRE_GPU();
  const DType t = GetParam();
  struct Case {
    TensorLayout x;
    int axis;
    TensorLayout y, gx;
  };
  auto dn = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  auto st = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> str) { return TensorLayout::strided(t, s, str); };
  const std::vector<Case> cases = {
      {dn({64, 256}), -1, st({64, 256}, {384, 1}), st({64, 256}, {1, 64})},
      {dn({256, 64}), -1, st({256, 64}, {1, 256}), st({256, 64}, {72, 1})},
      {dn({3, 65536}), -1, st({3, 65536}, {65600, 1}), st({3, 65536}, {65664, 1})},
      {dn({37, 5, 6}), 0, st({37, 5, 6}, {1, 222, 37}), st({37, 5, 6}, {40, 8, 1})},
  };
  for (const auto& cs : cases) {
    SparsemaxDescriptor d{cs.x, cs.y, cs.axis};
    SCOPED_TRACE(d.to_string());
    HostTensor hx(cs.x), hy(cs.y);
    fill_random(hx, -1, 1);
    auto want = reference::sparsemax(d, hx);
    ASSERT_TRUE(want.has_value()) << want.error().to_string();
    DeviceTensor dx(hx, test_stream()), dy(hy, test_stream());
    for_each_sku<SparsemaxPlan>(
        d, [&] { dy.poison(0xFF, test_stream()); },
        [&](const SparsemaxPlan& p, Workspace ws) { return p.run(test_stream(), ws, SparsemaxArgs{.x = dx.data(), .y = dy.data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy.download(hy, test_stream()));
          EXPECT_TRUE(check_close(hy, want.value(), sku + " " + d.to_string()));
        });
    for (std::int64_t i = 0; i < cs.y.numel(); ++i) hy.set(i, want->exact[static_cast<std::size_t>(i)]);
    for (bool in_place : {false, true}) {
      // in place: grad_y takes grad_x's strided layout and grad_x is written over it
      const TensorLayout gl = in_place ? cs.gx : dense_like(cs.x);
      SparsemaxBackwardDescriptor bd{gl, cs.y, cs.gx, cs.axis};
      SCOPED_TRACE(bd.to_string() + (in_place ? " in place" : ""));
      HostTensor hg(gl), hgx(cs.gx);
      fill_random(hg, -2, 2);
      auto bwant = reference::sparsemax_backward(bd, hg, hy);
      ASSERT_TRUE(bwant.has_value()) << bwant.error().to_string();
      AxisCase ac;
      ac.in_place = in_place;
      backward_case<SparsemaxBackwardPlan>(ac, bd, hg, hy, hgx, bwant.value(), [](const void* g, const void* y, void* gx) {
        return SparsemaxBackwardArgs{.grad_y = g, .y = y, .grad_x = gx};
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SparsemaxGpu, ::testing::Values(DType::kF64, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ------------------------------------------------------------------------------ refusals
// Null, misaligned and aliased pointers are refused before any launch, outputs untouched; no
// forced SKU here asks for a workspace (a null one is fine). The gumbel backward runs
// softmax's backward table (no block_loop: `force_backward` names its SKU).
void gumbel_sparsemax_run_refusals(const std::string& force, const std::string& force_backward) {
  const auto x = TensorLayout::contiguous(DType::kF32, {8, 64});
  PlanPreference pref;
  pref.force_sku = force;
  PlanPreference pref_backward;
  pref_backward.force_sku = force_backward;
  const Stream& s = test_stream();
  auto gf = GumbelSoftmaxPlan::select(s, GumbelSoftmaxDescriptor{.x = x, .y = x, .y_soft = x, .hard = true, .save_soft = true}, pref);
  auto gn = GumbelSoftmaxPlan::select(s, GumbelSoftmaxDescriptor{.x = x, .y = x, .noise = x, .noise_source = GumbelNoise::kTensor}, pref);
  auto gb = GumbelSoftmaxBackwardPlan::select(s, GumbelSoftmaxBackwardDescriptor{x, x, x}, pref_backward);
  auto sf = SparsemaxPlan::select(s, SparsemaxDescriptor{x, x}, pref);
  auto sb = SparsemaxBackwardPlan::select(s, SparsemaxBackwardDescriptor{x, x, x}, pref);
  ASSERT_TRUE(gf && gn && gb && sf && sb) << force;
  for (std::size_t w : {gf->workspace_size(), gn->workspace_size(), gb->workspace_size(), sf->workspace_size(), sb->workspace_size()})
    EXPECT_EQ(w, 0u);
  HostTensor hx(x);
  fill_random(hx, -2, 2);
  DeviceTensor dx(hx, test_stream()), dg(hx, test_stream());
  Untouched y(x), y2(x), gx(x);
  const void *xp = dx.data(), *gp = dg.data();
  void* x_row1 = static_cast<float*>(dx.data()) + 64;
  void* y_row1 = static_cast<float*>(y.data()) + 64;
  void* g_row1 = static_cast<float*>(dg.data()) + 64;
  auto mis = [](const void* p) { return static_cast<const char*>(p) + 4; };
  const Code kBad = Code::kInvalidArgument, kMis = Code::kMisaligned;
  const GumbelSoftmaxArgs ga{.x = xp, .y = y.data(), .y_soft = y2.data()};
  const GumbelSoftmaxArgs na{.x = xp, .y = y.data(), .noise = gp};
  const GumbelSoftmaxBackwardArgs gba{.grad_y = gp, .y_soft = xp, .grad_x = gx.data()};
  const SparsemaxBackwardArgs sba{.grad_y = gp, .y = xp, .grad_x = gx.data()};
  const std::vector<RunRefusal> rows = {
      {"gumbel null x", [&] { auto a = ga; a.x = nullptr; return gf->run(s, {}, a); }, kBad, "args.x is null"},
      {"gumbel null y_soft", [&] { auto a = ga; a.y_soft = nullptr; return gf->run(s, {}, a); }, kBad, "args.y_soft is null"},
      {"gumbel null noise", [&] { auto a = na; a.noise = nullptr; return gn->run(s, {}, a); }, kBad, "args.noise is null"},
      {"gumbel misaligned y", [&] { auto a = ga; a.y = const_cast<char*>(mis(a.y)); return gf->run(s, {}, a); }, kMis,
       "not aligned to y.alignment = 16"},
      {"gumbel misaligned noise", [&] { auto a = na; a.noise = mis(a.noise); return gn->run(s, {}, a); }, kMis,
       "not aligned to noise.alignment = 16"},
      {"gumbel y over x shifted", [&] { auto a = ga; a.y = x_row1; return gf->run(s, {}, a); }, kBad, "args.y overlaps args.x"},
      {"gumbel y_soft over y shifted", [&] { auto a = ga; a.y_soft = y_row1; return gf->run(s, {}, a); }, kBad,
       "args.y and args.y_soft overlap"},
      {"gumbel y_soft is y", [&] { auto a = ga; a.y_soft = a.y; return gf->run(s, {}, a); }, kBad,
       "args.y and args.y_soft overlap"},
      {"gumbel_backward null grad_y", [&] { auto a = gba; a.grad_y = nullptr; return gb->run(s, {}, a); }, kBad, "args.grad_y is null"},
      {"gumbel_backward misaligned y_soft", [&] { auto a = gba; a.y_soft = mis(a.y_soft); return gb->run(s, {}, a); }, kMis,
       "not aligned to y_soft.alignment = 16"},
      {"gumbel_backward grad_x over y_soft shifted", [&] { auto a = gba; a.grad_x = x_row1; return gb->run(s, {}, a); }, kBad,
       "args.grad_x overlaps args."},
      {"sparsemax null y", [&] { return sf->run(s, {}, SparsemaxArgs{.x = xp, .y = nullptr}); }, kBad, "args.y is null"},
      {"sparsemax misaligned x", [&] { return sf->run(s, {}, SparsemaxArgs{.x = mis(xp), .y = y.data()}); }, kMis,
       "not aligned to x.alignment = 16"},
      {"sparsemax y over x shifted", [&] { return sf->run(s, {}, SparsemaxArgs{.x = xp, .y = x_row1}); }, kBad,
       "args.y overlaps args.x"},
      {"sparsemax_backward null y", [&] { auto a = sba; a.y = nullptr; return sb->run(s, {}, a); }, kBad, "args.y is null"},
      {"sparsemax_backward misaligned grad_x", [&] { auto a = sba; a.grad_x = const_cast<char*>(mis(a.grad_x)); return sb->run(s, {}, a); },
       kMis, "not aligned to grad_x.alignment = 16"},
      {"sparsemax_backward grad_x over y shifted", [&] { auto a = sba; a.grad_x = x_row1; return sb->run(s, {}, a); }, kBad,
       "args.grad_x overlaps args."},
      // the remaining pointers of each plan: null, misaligned, and an output over the other input
      {"gumbel null y", [&] { auto a = ga; a.y = nullptr; return gf->run(s, {}, a); }, kBad, "args.y is null"},
      {"gumbel misaligned x", [&] { auto a = ga; a.x = mis(a.x); return gf->run(s, {}, a); }, kMis,
       "not aligned to x.alignment = 16"},
      {"gumbel misaligned y_soft", [&] { auto a = ga; a.y_soft = const_cast<char*>(mis(a.y_soft)); return gf->run(s, {}, a); },
       kMis, "not aligned to y_soft.alignment = 16"},
      {"gumbel y over noise shifted", [&] { auto a = na; a.y = g_row1; return gn->run(s, {}, a); }, kBad,
       "args.y overlaps args.noise without the identical layout"},
      {"gumbel y_soft over x shifted", [&] { auto a = ga; a.y_soft = x_row1; return gf->run(s, {}, a); }, kBad,
       "args.y_soft overlaps args.x without the identical layout"},
      {"gumbel_backward null y_soft", [&] { auto a = gba; a.y_soft = nullptr; return gb->run(s, {}, a); }, kBad,
       "args.y_soft is null"},
      {"gumbel_backward null grad_x", [&] { auto a = gba; a.grad_x = nullptr; return gb->run(s, {}, a); }, kBad,
       "args.grad_x is null"},
      {"gumbel_backward misaligned grad_y", [&] { auto a = gba; a.grad_y = mis(a.grad_y); return gb->run(s, {}, a); }, kMis,
       "not aligned to grad_y.alignment = 16"},
      {"gumbel_backward misaligned grad_x", [&] { auto a = gba; a.grad_x = const_cast<char*>(mis(a.grad_x)); return gb->run(s, {}, a); },
       kMis, "not aligned to grad_x.alignment = 16"},
      {"gumbel_backward grad_x over grad_y shifted", [&] { auto a = gba; a.grad_x = g_row1; return gb->run(s, {}, a); }, kBad,
       "args.grad_x overlaps args.grad_y without the identical layout"},
      {"sparsemax null x", [&] { return sf->run(s, {}, SparsemaxArgs{.x = nullptr, .y = y.data()}); }, kBad, "args.x is null"},
      {"sparsemax misaligned y", [&] { return sf->run(s, {}, SparsemaxArgs{.x = xp, .y = const_cast<char*>(mis(y.data()))}); },
       kMis, "not aligned to y.alignment = 16"},
      {"sparsemax_backward null grad_y", [&] { auto a = sba; a.grad_y = nullptr; return sb->run(s, {}, a); }, kBad,
       "args.grad_y is null"},
      {"sparsemax_backward null grad_x", [&] { auto a = sba; a.grad_x = nullptr; return sb->run(s, {}, a); }, kBad,
       "args.grad_x is null"},
      {"sparsemax_backward misaligned grad_y", [&] { auto a = sba; a.grad_y = mis(a.grad_y); return sb->run(s, {}, a); }, kMis,
       "not aligned to grad_y.alignment = 16"},
      {"sparsemax_backward misaligned y", [&] { auto a = sba; a.y = mis(a.y); return sb->run(s, {}, a); }, kMis,
       "not aligned to y.alignment = 16"},
      {"sparsemax_backward grad_x over grad_y shifted", [&] { auto a = sba; a.grad_x = g_row1; return sb->run(s, {}, a); },
       kBad, "args.grad_x overlaps args.grad_y without the identical layout"},
  };
  expect_run_refusals(rows, {&y, &y2, &gx});
}

TEST(GumbelSparsemaxGpuRefusals, WarpRow) {
  BARACUDA_REQUIRE_GPU();
  gumbel_sparsemax_run_refusals("*warp_row_vec16*", "*warp_row_vec16*");
}
TEST(GumbelSparsemaxGpuRefusals, BlockLoop) {
  BARACUDA_REQUIRE_GPU();
  gumbel_sparsemax_run_refusals("*block_loop*", "*.column[*");
}

// GumbelSoftmaxBackwardPlan runs softmax's backward table: on split_row (forced, 4 x 20000
// f32) it needs a workspace. Too small by a byte, null and misaligned workspaces are refused,
// then the pointer rows with a valid workspace; grad_x untouched. (The forward and sparsemax
// never ask for a workspace: gumbel_sparsemax_run_refusals asserts 0 for every SKU.)
TEST(GumbelSparsemaxGpuRefusals, GumbelBackwardSplitRowWorkspace) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t len = 20000;
  const auto x = TensorLayout::contiguous(DType::kF32, {4, len});
  PlanPreference split;
  split.force_sku = "*split_row_vec16*";
  auto gb = GumbelSoftmaxBackwardPlan::select(test_stream(), GumbelSoftmaxBackwardDescriptor{x, x, x, -1, 0.5}, split);
  ASSERT_TRUE(gb.has_value()) << gb.error().to_string();
  EXPECT_EQ(gb->sku().impl, "split_row_vec16");
  const std::size_t need = gb->workspace_size();
  ASSERT_GT(need, 0u);
  HostTensor hx(x);
  fill_random(hx, -2, 2);
  DeviceTensor dy(hx, test_stream()), dg(hx, test_stream());
  Untouched gx(x);
  const Stream& s = test_stream();
  const Workspace ws = test_workspace(need + kWorkspaceAlignment), exact{ws.data, need};
  const GumbelSoftmaxBackwardArgs a0{.grad_y = dg.data(), .y_soft = dy.data(), .grad_x = gx.data()};
  void* g_row1 = static_cast<float*>(dg.data()) + len;
  std::vector<RunRefusal> rows =
      workspace_refusals("gumbel_backward", [&](Workspace w) { return gb->run(s, w, a0); }, ws, need);
  rows.insert(rows.end(), {
      {"null grad_x", [&] { auto a = a0; a.grad_x = nullptr; return gb->run(s, exact, a); }, Code::kInvalidArgument,
       "args.grad_x is null"},
      {"misaligned y_soft", [&] { auto a = a0; a.y_soft = static_cast<const char*>(a.y_soft) + 4; return gb->run(s, exact, a); },
       Code::kMisaligned, "not aligned to y_soft.alignment = 16"},
      {"grad_x over grad_y shifted", [&] { auto a = a0; a.grad_x = g_row1; return gb->run(s, exact, a); },
       Code::kInvalidArgument, "args.grad_x overlaps args.grad_y without the identical layout"},
  });
  expect_run_refusals(rows, {&gx});
}

}  // namespace
}  // namespace baracuda::test
