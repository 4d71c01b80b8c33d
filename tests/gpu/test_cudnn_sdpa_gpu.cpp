// The cuDNN SDPA SKUs on the GPU beyond the shared SDPA suite (tests/gpu/test_sdpa_gpu.cpp,
// which forces every accepting SKU against the reference): graph building for a spread of
// options (each select forced onto cuDNN, the prepare failure printed when a graph does not
// build), CUDA-graph capture of forward and backward with dropout read from a device
// {seed, offset} (run() must neither sync nor copy from host memory), bitwise replay, and two
// host threads running one plan at once on two streams (the shared handle's lock). Also the
// capture check for the persistent flash_wgmma_ws, whose run() zeroes a tile counter in the
// workspace (these helpers serve both).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/attention.hpp"
#include "gpu_harness.hpp"
#include "../sdpa_test_descriptors.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::HostTensor;


HostTensor& filled(HostTensor& h, double lo, double hi) {
  fill_random(h, lo, hi);
  return h;
}
HostTensor seed_pair(std::int64_t seed, std::int64_t offset) {
  HostTensor h(TensorLayout::contiguous(DType::kI64, {2}));
  h.set(0, static_cast<double>(seed));
  h.set(1, static_cast<double>(offset));
  return h;
}

// Device buffers of a dense forward + backward with random inputs.
struct Buffers {
  HostTensor hq, hk, hv, ho, hlse, hgo, hgq, hgk, hgv, hseed;
  DeviceTensor q, k, v, o, lse, go, gq, gk, gv, seed;
  Buffers(const SdpaDescriptor& d, const Stream& s)
      : hq(d.q), hk(d.k), hv(d.v), ho(d.o), hlse(d.lse), hgo(d.o), hgq(d.q), hgk(d.k), hgv(d.v),
        hseed(seed_pair(12345, 678)),
        q(filled(hq, -2, 2), s), k(filled(hk, -1, 1), s), v(filled(hv, -1, 1), s), o(ho, s), lse(hlse, s),
        go(filled(hgo, -1, 1), s), gq(hgq, s), gk(hgk, s), gv(hgv, s), seed(hseed, s) {}
  SdpaArgs fwd() const {
    SdpaArgs a{.q = q.data(), .k = k.data(), .v = v.data(), .o = o.data(), .lse = static_cast<float*>(lse.data())};
    a.philox_seed_offset = static_cast<const std::uint64_t*>(seed.data());
    return a;
  }
  SdpaBackwardArgs bwd() const {
    SdpaBackwardArgs a{.q = q.data(), .k = k.data(), .v = v.data(), .o = o.data(), .grad_o = go.data(),
                       .lse = static_cast<const float*>(lse.data()), .grad_q = gq.data(), .grad_k = gk.data(),
                       .grad_v = gv.data()};
    a.philox_seed_offset = static_cast<const std::uint64_t*>(seed.data());
    return a;
  }
};

std::vector<std::byte> bytes_of(const DeviceTensor& t, HostTensor& h, const Stream& s) {
  EXPECT_TRUE(t.download(h, s));
  return {h.storage(), h.storage() + h.storage_bytes()};
}

TEST(CudnnSdpaGpu, GraphsBuildForTheAcceptedOptions) {
  BARACUDA_REQUIRE_GPU();
  struct Row {
    const char* what;
    SdpaDescriptor d;
  };
  std::vector<Row> rows;
  rows.push_back({"bf16 MHA d128", mha(DType::kBF16, 2, 8, 8, 256, 256, 128, 128)});
  rows.push_back({"f16 GQA d64 odd lengths", mha(DType::kF16, 2, 8, 2, 17, 1000, 64, 64)});
  rows.push_back({"dk 192 dv 128", mha(DType::kBF16, 1, 4, 4, 128, 128, 192, 128)});
  rows.push_back({"d256", mha(DType::kBF16, 1, 4, 1, 128, 300, 256, 256)});
  auto d = mha(DType::kBF16, 2, 8, 4, 200, 333, 128, 128);
  d.options.causal = true;
  rows.push_back({"causal top-left", d});
  d.options.align = CausalAlign::kBottomRight;
  rows.push_back({"causal bottom-right", d});
  d.options.window_left = 64;
  rows.push_back({"sliding window bottom-right", d});
  d = mha(DType::kBF16, 2, 8, 4, 200, 333, 64, 64);
  d.options.window_left = 32;
  d.options.window_right = 16;
  rows.push_back({"two-sided window top-left", d});
  d = mha(DType::kF16, 2, 8, 8, 128, 192, 64, 64);
  d.bias = TensorLayout::contiguous(DType::kF16, {1, 8, 128, 192});
  rows.push_back({"bias over heads", d});
  d.options.dropout_p = 0.1;
  rows.push_back({"bias + dropout", d});
  for (const Row& r : rows) {
    for (const char* force : {"sdpa.fwd.cudnn*"}) {
      PlanPreference pref;
      pref.force_sku = force;
      auto plan = SdpaPlan::select(test_stream(), r.d, pref);
      EXPECT_TRUE(plan.has_value()) << r.what << ": " << (plan ? "" : plan.error().to_string());
    }
    const auto g = reference::sdpa_backward_of(r.d);
    for (const char* force : {"sdpa.bwd.cudnn_fused[*", "sdpa.bwd.cudnn_fused_deterministic*"}) {
      PlanPreference pref;
      pref.force_sku = force;
      auto plan = SdpaBackwardPlan::select(test_stream(), g, pref);
      EXPECT_TRUE(plan.has_value()) << r.what << " " << force << ": " << (plan ? "" : plan.error().to_string());
    }
  }
}

TEST(CudnnSdpaGpu, CapturedRunsReplayBitwise) {
  BARACUDA_REQUIRE_GPU();
  auto d = mha(DType::kBF16, 2, 8, 2, 256, 320, 128, 128);
  d.options.causal = true;
  d.options.dropout_p = 0.2;
  PlanPreference fp;
  fp.force_sku = "sdpa.fwd.cudnn*";
  auto plan = SdpaPlan::select(test_stream(), d, fp);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  const auto g = reference::sdpa_backward_of(d);
  PlanPreference bp;
  bp.force_sku = "sdpa.bwd.cudnn_fused[*";
  auto bplan = SdpaBackwardPlan::select(test_stream(), g, bp);
  ASSERT_TRUE(bplan.has_value()) << bplan.error().to_string();

  const Stream& s = test_stream();
  Buffers b(d, s);
  Workspace ws = test_workspace(std::max(plan->workspace_size(), bplan->workspace_size()));
  ASSERT_TRUE(plan->run(s, ws, b.fwd()).is_ok());
  const auto o1 = bytes_of(b.o, b.ho, s), l1 = bytes_of(b.lse, b.hlse, s);

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeGlobal), cudaSuccess);
  Status st = plan->run(s, ws, b.fwd());
  ASSERT_EQ(cudaStreamEndCapture(s.handle(), &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  b.o.poison(0xFF, s);
  b.lse.poison(0xFF, s);
  ASSERT_EQ(cudaGraphLaunch(exec, s.handle()), cudaSuccess);
  EXPECT_EQ(bytes_of(b.o, b.ho, s), o1) << "graph replay of the forward, same device seed";
  EXPECT_EQ(bytes_of(b.lse, b.hlse, s), l1);
  // A fresh seed in the device pair changes the dropout mask of the replay.
  b.hseed = seed_pair(999, 678);
  b.seed.upload(b.hseed, s);
  ASSERT_EQ(cudaGraphLaunch(exec, s.handle()), cudaSuccess);
  EXPECT_NE(bytes_of(b.o, b.ho, s), o1) << "the replay reads the seed from device memory";
  EXPECT_EQ(bytes_of(b.lse, b.hlse, s), l1) << "lse is of the undropped scores";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // Backward: eager, then captured and replayed (dQ uses atomics: compare within rounding).
  ASSERT_TRUE(bplan->run(s, ws, b.bwd()).is_ok());
  ASSERT_TRUE(b.gk.download(b.hgk, s));
  HostTensor gk1 = b.hgk;
  ASSERT_EQ(cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeGlobal), cudaSuccess);
  st = bplan->run(s, ws, b.bwd());
  ASSERT_EQ(cudaStreamEndCapture(s.handle(), &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  b.gk.poison(0xFF, s);
  ASSERT_EQ(cudaGraphLaunch(exec, s.handle()), cudaSuccess);
  ASSERT_TRUE(b.gk.download(b.hgk, s));
  double worst = 0, scale = 0;
  for (std::int64_t i = 0; i < gk1.layout().numel(); ++i) {
    worst = std::max(worst, std::abs(b.hgk.get(i) - gk1.get(i)));
    scale = std::max(scale, std::abs(gk1.get(i)));
  }
  EXPECT_TRUE(std::isfinite(worst) && worst <= 1e-2 * scale) << "replayed dK differs by " << worst << " (max " << scale << ")";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// workspace_size() is the prepared graph's exact need (aux + the graph's), within the probe's
// upper bound (what Plan::candidates reports before any graph is built), and runs with exactly
// that much.
PlanPreference cudnn_forward() {
  PlanPreference fp;
  fp.force_sku = "sdpa.fwd.cudnn*";
  return fp;
}

TEST(CudnnSdpaGpu, WorkspaceIsThePreparedGraphs) {
  BARACUDA_REQUIRE_GPU();
  const auto d = mha(DType::kBF16, 2, 8, 8, 256, 256, 64, 64);
  auto plan = SdpaPlan::select(test_stream(), d, cudnn_forward());
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  auto caps = test_stream().caps();
  ASSERT_TRUE(caps.has_value());
  auto reports = SdpaPlan::candidates(*caps.value(), d, cudnn_forward());
  ASSERT_TRUE(reports.has_value());
  std::size_t bound = 0;
  for (const auto& r : *reports)
    if (r.rejection.empty()) bound = r.workspace_bytes;
  ASSERT_GT(bound, 0u);
  EXPECT_LE(plan->workspace_size(), bound);
  Buffers b(d, test_stream());
  const std::size_t need = plan->workspace_size();
  auto w = DeviceBuffer::allocate(need + 1);
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(plan->run(test_stream(), {w->data(), need}, b.fwd()).is_ok());
  EXPECT_TRUE(test_stream().synchronize().is_ok());
}

TEST(CudnnSdpaGpu, TwoThreadsShareTheHandle) {
  BARACUDA_REQUIRE_GPU();
  const auto d = mha(DType::kBF16, 4, 16, 16, 512, 512, 64, 64);
  auto plan = SdpaPlan::select(test_stream(), d, cudnn_forward());
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  const Stream& s0 = test_stream();
  Buffers b(d, s0);
  const std::size_t need = plan->workspace_size();
  auto w1 = DeviceBuffer::allocate(need + 1), w2 = DeviceBuffer::allocate(need + 1);
  ASSERT_TRUE(w1.has_value() && w2.has_value());
  ASSERT_TRUE(plan->run(s0, {w1->data(), need}, b.fwd()).is_ok());
  const auto want = bytes_of(b.o, b.ho, s0);

  auto s1 = Stream::create(s0.device()), s2 = Stream::create(s0.device());
  ASSERT_TRUE(s1.has_value() && s2.has_value());
  HostTensor h1(d.o), h2(d.o), l1(d.lse), l2(d.lse);
  DeviceTensor o1(h1, s0), o2(h2, s0), lse1(l1, s0), lse2(l2, s0);
  ASSERT_TRUE(s0.synchronize().is_ok());
  auto worker = [&](const Stream& s, DeviceTensor& o, DeviceTensor& lse, void* w, Status* out) {
    SdpaArgs a = b.fwd();
    a.o = o.data();
    a.lse = static_cast<float*>(lse.data());
    for (int i = 0; i < 20 && out->is_ok(); ++i) *out = plan->run(s, {w, need}, a);
    if (out->is_ok()) *out = s.synchronize();
  };
  Status st1 = Status::ok(), st2 = Status::ok();
  std::thread t1(worker, std::cref(s1.value()), std::ref(o1), std::ref(lse1), w1->data(), &st1);
  std::thread t2(worker, std::cref(s2.value()), std::ref(o2), std::ref(lse2), w2->data(), &st2);
  t1.join();
  t2.join();
  ASSERT_TRUE(st1.is_ok()) << st1.to_string();
  ASSERT_TRUE(st2.is_ok()) << st2.to_string();
  EXPECT_EQ(bytes_of(o1, h1, s0), want);
  EXPECT_EQ(bytes_of(o2, h2, s0), want);
}

// flash_wgmma_ws (sm_90a) claims its work tiles from a counter in the workspace that run()
// zeroes with a memset before the kernel. Captured, that memset is a graph node, so every
// replay starts from 0: two replays reproduce the eager run's bytes (a counter left at its
// end would make the replay's CTAs skip the claimed tiles and leave the poison in o). 512 work
// tiles (4 x 16 heads x 8 query blocks), more than any GPU's SM count, so the counter is used.
TEST(FlashSdpaGpu, PersistentWsCapturedRunsReplayBitwise) {
  BARACUDA_REQUIRE_GPU();
  auto d = mha(DType::kBF16, 4, 16, 4, 1000, 1000, 128, 128);
  d.options.causal = true;
  PlanPreference fp;
  fp.force_sku = "sdpa.fwd.flash_wgmma_ws*";
  auto plan = SdpaPlan::select(test_stream(), d, fp);
  if (test_caps().sm != 90) {
    ASSERT_FALSE(plan.has_value()) << "flash_wgmma_ws is sm_90a-only";
    GTEST_SKIP() << "flash_wgmma_ws runs on sm_90 only (refusal checked above)";
  }
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  ASSERT_GE(plan->workspace_size(), sizeof(int));
  const Stream& s = test_stream();
  Buffers b(d, s);
  Workspace ws = test_workspace(plan->workspace_size());
  ASSERT_TRUE(plan->run(s, ws, b.fwd()).is_ok());
  const auto o1 = bytes_of(b.o, b.ho, s), l1 = bytes_of(b.lse, b.hlse, s);

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan->run(s, ws, b.fwd());
  ASSERT_EQ(cudaStreamEndCapture(s.handle(), &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    b.o.poison(0xFF, s);
    b.lse.poison(0xFF, s);
    ASSERT_EQ(cudaGraphLaunch(exec, s.handle()), cudaSuccess);
    EXPECT_EQ(bytes_of(b.o, b.ho, s), o1) << "replay " << replay;
    EXPECT_EQ(bytes_of(b.lse, b.hlse, s), l1) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace baracuda::test
