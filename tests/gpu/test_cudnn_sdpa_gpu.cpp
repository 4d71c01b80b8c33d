// The cuDNN SDPA SKUs on the GPU beyond the shared SDPA suite (tests/gpu/test_sdpa_gpu.cpp,
// which forces every accepting SKU against the reference): graph building for a spread of
// options (each select forced onto cuDNN, the prepare failure printed when a graph does not
// build), CUDA-graph capture of forward and backward with dropout read from a device
// {seed, offset} (run() must neither sync nor copy from host memory), bitwise replay, and two
// host threads running one plan at once on two streams (the shared handle's lock). Also the
// capture check for the persistent flash_wgmma_ws, whose run() zeroes a tile counter in the
// workspace (these helpers serve both). Then cuDNN's own cases against the reference (forward
// and both backward SKUs forced): a bias of q's dtype with -inf entries and fully masked rows,
// odd lengths (17, 1000, 1), and dropout checked by cuDNN's own mask, read back from the
// forward, so that its values and the backward's replay are compared element by element.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
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

// ------------------------------------------------------------------ against the reference
// cuDNN's own cases value by value against reference::sdpa / sdpa_backward (attention in double;
// compare.hpp's rule: max error <= 3x the naive same-precision twin's + atol), cuDNN's forward
// and both backward SKUs forced in turn on poisoned outputs with guard bytes (the shared suite
// never gives cuDNN a bias it takes, and checks its dropout by statistics only):
//   * a bias of q's dtype over [.., Sq, Skv] (per head, per batch, 2-D), with -inf entries (a
//     mask as cuDNN takes it: "an additive bias of -inf is the equivalent") and whole query rows
//     of -inf (fully masked rows: o = 0, lse = -inf, zero gradients), with causal top-left and a
//     two-sided window;
//   * odd lengths: Sq = Skv = 17, 17 queries over 1000 keys (top-left causal), 1000 queries over
//     17 keys, one query;
//   * dropout by cuDNN's own mask: a first run with q = k = 0 and v = I (Dv = Skv) writes
//     keep_ij / (n_i (1 - p)) into o_ij (n_i the visible keys of row i), from which the mask is
//     read; then random inputs with the same seed and offset: o, lse and the gradients of both
//     backward SKUs (which replay the mask from the seed) against the reference with that mask.
constexpr std::uint64_t kRefSeed = 0x5eed1234ull, kRefOffset = 0x77ull << 32 | 5;

struct RefCase {
  std::string name;
  SdpaDescriptor d;
  double neg_inf = 0;      // fraction of the bias entries set to -inf
  int dead_row_every = 0;  // every n-th query row of the bias all -inf (a fully masked row)
};

const char* const kCudnnForward = "sdpa.fwd.cudnn*";
const std::vector<const char*> kCudnnBackward = {"sdpa.bwd.cudnn_fused[*", "sdpa.bwd.cudnn_fused_deterministic*"};

template <class PlanT>
Expected<PlanT> forced(const typename PlanT::Descriptor& d, const char* sku) {
  PlanPreference pref;
  pref.force_sku = sku;
  return PlanT::select(test_stream(), d, pref);
}

// The query row (b, h, i) of a bias element at logical index `n` of its layout [.., Sq, Skv].
std::int64_t bias_row(const TensorLayout& bias, std::int64_t n) { return n / bias.shape[bias.rank - 1] % bias.shape[bias.rank - 2]; }

// cuDNN's keep mask of `d` (dropout_p > 0; Dv = Skv; v contiguous) read back from a forward with
// q = k = 0, a zero bias (where d has one) and v = I: o_ij != 0 exactly where key j of a visible
// row is kept. The kept values must all be 1 / (n_i (1 - p)); row i sees n_i keys (Skv, or
// i + 1 causal top-left), and the kept fraction is within 5 sigma of 1 - p.
std::vector<std::uint8_t> cudnn_keep_mask(const SdpaPlan& plan, const SdpaDescriptor& d) {
  const std::int64_t B = d.q.shape[0], H = d.q.shape[1], Sq = d.q.shape[2], Skv = d.k.shape[2];
  EXPECT_EQ(d.v.shape[3], Skv) << "the mask read needs v = I (Dv = Skv)";
  const double p = d.options.dropout_p;
  HostTensor q(d.q), k(d.k), v(d.v), o(d.o), lse(d.lse), bias(d.bias.rank ? d.bias : TensorLayout::contiguous(d.q.dtype, {1}));
  for (std::int64_t i = 0; i < d.v.numel(); ++i) v.set(i, (i / Skv) % Skv == i % Skv ? 1.0 : 0.0);
  const Stream& s = test_stream();
  DeviceTensor dq(q, s), dk(k, s), dv(v, s), dout(o, s), dlse(lse, s), dbias(bias, s);
  dout.poison(0xFF, s);
  SdpaArgs a{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .lse = static_cast<float*>(dlse.data())};
  if (d.bias.rank) a.bias = dbias.data();
  a.seed = kRefSeed;
  a.offset = kRefOffset;
  EXPECT_TRUE(plan.run(s, test_workspace(plan.workspace_size()), a));
  EXPECT_TRUE(dout.download(o, s));
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(B * H * Sq * Skv), 0);
  std::int64_t kept = 0, visible = 0, bad_value = 0;
  for (std::int64_t r = 0; r < B * H * Sq; ++r) {
    const std::int64_t i = r % Sq, n = d.options.causal ? std::min(i + 1, Skv) : Skv;
    const double want = reference::round_to(d.o.dtype, 1.0 / (static_cast<double>(n) * (1 - p)));
    for (std::int64_t j = 0; j < n; ++j) {
      const double x = o.get(r * Skv + j);
      const bool kj = x != 0;
      keep[static_cast<std::size_t>(r * Skv + j)] = kj;
      kept += kj;
      ++visible;
      if (kj && std::fabs(x - want) > 1e-2 * want) ++bad_value;
    }
  }
  EXPECT_EQ(bad_value, 0) << "kept values are not 1 / (n (1 - p))";
  const double frac = static_cast<double>(kept) / static_cast<double>(visible);
  EXPECT_NEAR(frac, 1 - p, 5 * std::sqrt(p * (1 - p) / static_cast<double>(visible))) << "kept fraction";
  return keep;
}

// The forward (forced `fwd_sku`) and each backward of `bwd_skus` against the reference.
void run_against_reference(const RefCase& c, const char* fwd_sku = kCudnnForward,
                           const std::vector<const char*>& bwd_skus = kCudnnBackward) {
  SCOPED_TRACE(c.name + " " + c.d.to_string() + " seed " + std::to_string(test_seed()));
  const SdpaDescriptor& d = c.d;
  auto fwd = forced<SdpaPlan>(d, fwd_sku);
  ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
  std::vector<std::uint8_t> keep;
  if (d.options.dropout_p > 0) keep = cudnn_keep_mask(*fwd, d);

  HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o), hlse(d.lse);
  fill_random(hq, -3, 3);
  fill_random(hk, -1, 1);
  fill_random(hv, -1, 1);
  HostTensor hbias(d.bias.rank ? d.bias : TensorLayout::contiguous(d.q.dtype, {1}));
  fill_random(hbias, -2, 2);
  std::int64_t dead = 0;
  for (std::int64_t n = 0; d.bias.rank && n < d.bias.numel(); ++n) {
    const bool dead_row = c.dead_row_every > 0 && bias_row(d.bias, n) % c.dead_row_every == 1;
    if (dead_row || std::uniform_real_distribution<double>(0, 1)(rng()) < c.neg_inf)
      hbias.set(n, -std::numeric_limits<double>::infinity());
    dead += dead_row;
  }
  if (c.dead_row_every > 0) ASSERT_GT(dead, 0);
  reference::SdpaHostInputs in{&hq, &hk, &hv, d.bias.rank ? &hbias : nullptr};
  if (!keep.empty()) in.keep = &keep;
  auto want = reference::sdpa(d, in);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();

  const Stream& s = test_stream();
  DeviceTensor dq(hq, s), dk(hk, s), dv(hv, s), dout(ho, s), dlse(hlse, s), dbias(hbias, s);
  SdpaArgs args{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dout.data(), .lse = static_cast<float*>(dlse.data())};
  if (d.bias.rank) args.bias = dbias.data();
  args.seed = kRefSeed;
  args.offset = kRefOffset;
  dout.poison(0xFF, s);
  dlse.poison(0xFF, s);
  ASSERT_TRUE(fwd->run(s, test_workspace(fwd->workspace_size()), args)) << fwd->sku().name();
  ASSERT_TRUE(dout.download(ho, s)) << "guard bytes around o";
  ASSERT_TRUE(dlse.download(hlse, s)) << "guard bytes around lse";
  EXPECT_TRUE(check_close(ho, want->o, fwd->sku().name() + " o"));
  EXPECT_TRUE(check_close(hlse, want->lse, fwd->sku().name() + " lse"));

  // Backward from the reference's o (rounded to the dtype) and lse.
  const SdpaBackwardDescriptor g = reference::sdpa_backward_of(d);
  HostTensor href_o(d.o), href_lse(d.lse), hgo(d.o), hgq(g.grad_q), hgk(g.grad_k), hgv(g.grad_v);
  for (std::int64_t i = 0; i < d.o.numel(); ++i) href_o.set(i, want->o.exact[static_cast<std::size_t>(i)]);
  for (std::int64_t i = 0; i < d.lse.numel(); ++i) href_lse.set(i, want->lse.exact[static_cast<std::size_t>(i)]);
  fill_random(hgo, -1, 1);
  auto gwant = reference::sdpa_backward(g, in, href_o, hgo);
  ASSERT_TRUE(gwant.has_value()) << gwant.error().to_string();
  DeviceTensor dro(href_o, s), drl(href_lse, s), dgo(hgo, s), dgq(hgq, s), dgk(hgk, s), dgv(hgv, s);
  SdpaBackwardArgs ba{.q = dq.data(), .k = dk.data(), .v = dv.data(), .o = dro.data(), .grad_o = dgo.data(),
                      .lse = static_cast<const float*>(drl.data()), .grad_q = dgq.data(), .grad_k = dgk.data(),
                      .grad_v = dgv.data()};
  ba.bias = args.bias;
  ba.seed = kRefSeed;
  ba.offset = kRefOffset;
  for (const char* sku : bwd_skus) {
    auto bwd = forced<SdpaBackwardPlan>(g, sku);
    ASSERT_TRUE(bwd.has_value()) << sku << ": " << bwd.error().to_string();
    const std::string name = bwd->sku().name();
    dgq.poison(0xFF, s);
    dgk.poison(0xFF, s);
    dgv.poison(0xFF, s);
    ASSERT_TRUE(bwd->run(s, test_workspace(bwd->workspace_size()), ba)) << name;
    ASSERT_TRUE(dgq.download(hgq, s)) << name << " guard bytes around grad_q";
    ASSERT_TRUE(dgk.download(hgk, s)) << name << " guard bytes around grad_k";
    ASSERT_TRUE(dgv.download(hgv, s)) << name << " guard bytes around grad_v";
    EXPECT_TRUE(check_close(hgq, gwant->grad_q, name + " grad_q"));
    EXPECT_TRUE(check_close(hgk, gwant->grad_k, name + " grad_k"));
    EXPECT_TRUE(check_close(hgv, gwant->grad_v, name + " grad_v"));
  }
}

SdpaDescriptor with_options(SdpaDescriptor d, bool causal, std::int64_t wl = -1, std::int64_t wr = -1, double p = 0) {
  d.options.causal = causal;
  d.options.window_left = wl;
  d.options.window_right = wr;
  d.options.dropout_p = p;
  return d;
}
SdpaDescriptor with_bias(SdpaDescriptor d, std::vector<std::int64_t> shape) {
  d.bias = TensorLayout::contiguous(d.q.dtype, shape);
  return d;
}

TEST(CudnnSdpaGpu, BiasMaskedRowsAgainstTheReference) {
  BARACUDA_REQUIRE_GPU();
  const std::vector<RefCase> cases = {
      {"bias over heads, -inf entries and rows, causal top-left",
       with_bias(with_options(mha(DType::kBF16, 2, 4, 2, 70, 96, 64, 64), true), {1, 4, 70, 96}), 0.25, 5},
      {"bias over batch", with_bias(mha(DType::kF16, 2, 2, 2, 33, 64, 128, 128), {2, 1, 33, 64})},
      {"2-D bias, -inf rows, two-sided window", with_bias(with_options(mha(DType::kBF16, 1, 4, 1, 48, 128, 64, 64), false, 16, 8), {48, 128}),
       0.1, 3},
      {"bias over heads, d 256 GQA, -inf entries", with_bias(mha(DType::kF16, 1, 4, 2, 40, 56, 256, 256), {1, 4, 40, 56}), 0.3},
  };
  for (const RefCase& c : cases) run_against_reference(c);
}

TEST(CudnnSdpaGpu, OddLengthsAgainstTheReference) {
  BARACUDA_REQUIRE_GPU();
  const std::vector<RefCase> cases = {
      {"17 x 17 GQA", mha(DType::kF16, 2, 4, 2, 17, 17, 64, 64)},
      {"17 x 1000 causal top-left", with_options(mha(DType::kBF16, 1, 4, 1, 17, 1000, 128, 128), true)},
      {"1000 x 17", mha(DType::kBF16, 1, 2, 2, 1000, 17, 64, 64)},
      {"1 x 17 MQA", mha(DType::kF16, 3, 4, 1, 1, 17, 96, 96)},
  };
  for (const RefCase& c : cases) run_against_reference(c);
}

TEST(CudnnSdpaGpu, DropoutByItsOwnMaskForwardAndBackward) {
  BARACUDA_REQUIRE_GPU();
  const std::vector<RefCase> cases = {
      {"dropout GQA", with_options(mha(DType::kBF16, 2, 4, 2, 100, 64, 64, 64), false, -1, -1, 0.3)},
      {"dropout causal top-left, dk 128 dv 128", with_options(mha(DType::kF16, 1, 2, 1, 64, 128, 128, 128), true, -1, -1, 0.2)},
      {"dropout + bias", with_bias(with_options(mha(DType::kBF16, 2, 2, 2, 40, 64, 64, 64), false, -1, -1, 0.4), {1, 2, 40, 64})},
  };
  for (const RefCase& c : cases) run_against_reference(c);
}

}  // namespace
}  // namespace baracuda::test
