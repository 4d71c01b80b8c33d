// CPU emulation of the general SDPA kernels (src/attention/kernels/sdpa_general.cuh) for machines
// without a GPU: each block runs as 256 std::threads (blocks one after another, shared memory
// poisoned with NaN per block), barriers stand in for __syncthreads and the warp shuffles, and
// every output (poisoned with NaN) is compared with reference::sdpa(_backward) by the tolerance
// rule of reference/compare.hpp. Forward and backward (delta, f64 lse, dQ, dK/dV, grad_bias)
// for f32, f64, bf16, f16 on small cases: GQA, causal bottom-right (Sq > Skv too), window +
// dropout + softcap, full and broadcast bias with grad_bias, bool mask, ALiBi, strided q/o,
// varlen with empty sequences. Not part of the build; after a dev build (~6 min to run):
//   R=$PWD; g++ -std=c++20 -O1 -Wno-attributes -I/usr/local/cuda/include -I$R/include -I$R/src \
//     -I$R/reference/include tests/emu/sdpa_general_emu.cpp src/attention/sdpa_problem.cpp -o /tmp/sdpa_emu \
//     build/dev/reference/libbaracuda_reference.a -Lbuild/dev -lbaracuda -Wl,-rpath,$R/build/dev \
//     -L/usr/local/cuda/lib64 -lcudart -lpthread && /tmp/sdpa_emu
#define __device__
#define __global__
#define __host__
#define __shared__
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#undef __launch_bounds__
#define __launch_bounds__(...)

struct EmuIdx {
  unsigned x = 0, y = 0, z = 0;
};
thread_local EmuIdx emu_tid, emu_bid;
#define threadIdx emu_tid
#define blockIdx emu_bid
const EmuIdx emu_bdim{256, 1, 1};
#define blockDim emu_bdim

struct EmuBlock {
  std::barrier<>* block;
  std::barrier<>* warp[8];
  unsigned long long slots[8][32];
};
EmuBlock* g_blk = nullptr;

inline void __syncthreads() { g_blk->block->arrive_and_wait(); }
template <class T>
T emu_shfl(T v, int src) {
  const int w = emu_tid.x / 32, lane = emu_tid.x % 32;
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  g_blk->slots[w][lane] = bits;
  g_blk->warp[w]->arrive_and_wait();
  unsigned long long got = g_blk->slots[w][src & 31];
  g_blk->warp[w]->arrive_and_wait();
  T r;
  std::memcpy(&r, &got, sizeof(T));
  return r;
}
template <class T>
T __shfl_sync(unsigned, T v, int src) { return emu_shfl(v, src); }
template <class T>
T __shfl_xor_sync(unsigned, T v, int x) { return emu_shfl(v, (emu_tid.x % 32) ^ x); }
template <class T>
T __shfl_down_sync(unsigned, T v, int d) {
  const int lane = emu_tid.x % 32;
  return emu_shfl(v, lane + d < 32 ? lane + d : lane);
}
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
using std::exp;
using std::log;
using std::tanh;

#define kernels kernels_emu
#include "attention/kernels/sdpa_general.cuh"
#undef kernels

namespace baracuda::kernels_emu::attention {
double general_smem[1 << 16];
}

#include "attention/sdpa_problem.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/reference/attention.hpp"
#include "baracuda/reference/compare.hpp"
#include "../sdpa_test_descriptors.hpp"

using namespace baracuda;
namespace K = baracuda::kernels_emu::attention;

// Runs `grid` blocks of 256 threads sequentially.
void launch(unsigned grid, const std::function<void()>& kernel) {
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> block(256);
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    EmuBlock blk;
    blk.block = &block;
    for (int w = 0; w < 8; ++w) {
      warps.push_back(std::make_unique<std::barrier<>>(32));
      blk.warp[w] = warps.back().get();
    }
    g_blk = &blk;
    for (auto& x : K::general_smem) x = std::nan("");
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 256; ++t)
      ts.emplace_back([&, t] {
        emu_tid.x = t;
        emu_bid.x = b;
        kernel();
        blk.block->arrive_and_drop();
        blk.warp[t / 32]->arrive_and_drop();
      });
    for (auto& th : ts) th.join();
  }
}

struct Buf {
  reference::HostTensor h;
  explicit Buf(const TensorLayout& l) : h(l) {}
  void* p() { return h.data(); }
};

int pick_rows(std::int64_t seq) {
  int cap = 1;
  while (cap < 32 && cap < seq) cap *= 2;
  return cap;
}

template <class T>
bool run(const char* name, SdpaDescriptor d, std::vector<std::int32_t> cu_q = {}, std::vector<std::int32_t> cu_k = {},
         bool grad_bias = false) {
  std::mt19937_64 rng(42);
  reference::HostTensor q(d.q), k(d.k), v(d.v), o(d.o), lse(d.lse);
  reference::HostTensor bias(d.bias.rank ? d.bias : TensorLayout::contiguous(DType::kF32, {1}));
  reference::HostTensor mask(d.mask.rank ? d.mask : TensorLayout::contiguous(DType::kU8, {1}));
  reference::HostTensor alibi(d.alibi_slopes.rank ? d.alibi_slopes : TensorLayout::contiguous(DType::kF32, {1}));
  reference::fill_random(q, rng, -3, 3, false);
  reference::fill_random(k, rng, -1, 1, false);
  reference::fill_random(v, rng, -1, 1, false);
  reference::fill_random(bias, rng, -2, 2, false);
  for (std::int64_t i = 0; i < mask.layout().numel(); ++i) mask.set(i, (rng() % 4) != 0 && i % 7 != 3);
  for (std::int64_t i = 0; i < alibi.layout().numel(); ++i) alibi.set(i, 0.05 * (1 + i % 5));
  reference::SdpaHostInputs in;
  in.q = &q;
  in.k = &k;
  in.v = &v;
  if (d.bias.rank) in.bias = &bias;
  if (d.mask.rank) in.mask = &mask;
  if (d.alibi_slopes.rank) in.alibi = &alibi;
  in.cu_seqlens_q = cu_q;
  in.cu_seqlens_k = cu_k;
  const auto p = attention::make_sdpa_problem(d);
  const auto keep = reference::sdpa_dropout_keep(p.batch, p.hq, p.sq, p.skv, p.dropout_p, 99, 5);
  in.keep = &keep;
  auto want = reference::sdpa(d, in).value();
  attention::GeneralParams g;
  g.p = p;
  g.q = q.data();
  g.k = k.data();
  g.v = v.data();
  g.o = o.data();
  g.lse = static_cast<float*>(lse.data());
  if (d.bias.rank) g.bias = bias.data();
  if (d.mask.rank) g.mask = static_cast<const std::uint8_t*>(mask.data());
  if (d.alibi_slopes.rank) g.alibi = static_cast<const float*>(alibi.data());
  g.cu_q = cu_q.data();
  g.cu_k = cu_k.data();
  g.seed = 99;
  g.offset = 5;
  for (std::int64_t i = 0; i < o.layout().numel(); ++i) o.set(i, std::nan(""));
  g.rows = pick_rows(p.sq);
  const unsigned grid = static_cast<unsigned>((p.sq + g.rows - 1) / g.rows * p.hq * p.batch);
  launch(grid, [&] { K::sdpa_general_fwd<T, false>(g); });
  auto co = reference::compare(o, want.o, false);
  auto cl = reference::compare(lse, want.lse, false);
  std::printf("%-28s fwd o %s lse %s %s %s\n", name, co.ok ? "ok" : "FAIL", cl.ok ? "ok" : "FAIL", co.detail.c_str(),
              cl.detail.c_str());
  bool ok = co.ok && cl.ok;
  // backward
  auto bd = reference::sdpa_backward_of(d, grad_bias);
  reference::HostTensor ro(d.o), rl(d.lse), go(d.o), gq(d.q), gk(d.k), gv(d.v);
  reference::HostTensor gb(bd.grad_bias.rank ? bd.grad_bias : TensorLayout::contiguous(DType::kF32, {1}));
  for (std::int64_t i = 0; i < d.o.numel(); ++i) ro.set(i, want.o.exact[i]);
  for (std::int64_t i = 0; i < d.lse.numel(); ++i) rl.set(i, want.lse.exact[i]);
  reference::fill_random(go, rng, -1, 1, false);
  auto gw = reference::sdpa_backward(bd, in, ro, go).value();
  const auto bp = attention::make_sdpa_problem(bd);
  attention::GeneralParams b = g;
  b.p = bp;
  b.o = nullptr;
  b.lse = nullptr;
  b.o_in = ro.data();
  b.grad_o = go.data();
  b.lse_in = static_cast<const float*>(rl.data());
  b.grad_q = gq.data();
  b.grad_k = gk.data();
  b.grad_v = gv.data();
  if (bd.grad_bias.rank) b.grad_bias = gb.data();
  using C = kernels_emu::Compute<T>;
  const std::int64_t qrows = bp.varlen ? bp.hq * bp.total_q : bp.batch * bp.hq * bp.sq;
  std::vector<C> delta(qrows + 1), wlse(qrows + 1);
  b.ws_delta = delta.data();
  for (auto* t : {&gq, &gk, &gv, &gb})
    for (std::int64_t i = 0; i < t->layout().numel(); ++i) t->set(i, std::nan(""));
  launch(static_cast<unsigned>((qrows + 7) / 8), [&] { K::sdpa_general_bwd_delta<T>(b, qrows); });
  if (sizeof(T) == 8) {
    b.ws_lse = wlse.data();
    b.rows = pick_rows(bp.sq);
    launch(static_cast<unsigned>((bp.sq + b.rows - 1) / b.rows * bp.hq * bp.batch), [&] { K::sdpa_general_fwd<T, true>(b); });
  }
  std::int64_t gbn = 0;
  if (bp.grad_bias.present) {
    bool direct = true;
    const std::int64_t full[4] = {bp.batch, bp.hq, bp.sq, bp.skv};
    gbn = 1;
    for (int i = 0; i < 4; ++i) {
      direct = direct && bp.grad_bias.size[i] == full[i];
      gbn *= bp.grad_bias.size[i];
    }
    b.grad_bias_direct = direct;
    if (direct) gbn = 0;
  }
  b.rows = pick_rows(bp.sq);
  launch(static_cast<unsigned>((bp.sq + b.rows - 1) / b.rows * bp.hq * bp.batch), [&] { K::sdpa_general_bwd_dq<T>(b); });
  b.rows = pick_rows(bp.skv);
  launch(static_cast<unsigned>((bp.skv + b.rows - 1) / b.rows * bp.hkv * bp.batch), [&] { K::sdpa_general_bwd_dkdv<T>(b); });
  if (gbn > 0) launch(static_cast<unsigned>((gbn + 255) / 256), [&] { K::sdpa_general_bwd_grad_bias<T>(b, gbn); });
  auto c1 = reference::compare(gq, gw.grad_q, false);
  auto c2 = reference::compare(gk, gw.grad_k, false);
  auto c3 = reference::compare(gv, gw.grad_v, false);
  bool gbok = true;
  std::string gbd;
  if (bd.grad_bias.rank) {
    auto c4 = reference::compare(gb, gw.grad_bias, false);
    gbok = c4.ok;
    gbd = c4.detail;
  }
  std::printf("%-28s bwd dq %s dk %s dv %s dbias %s %s %s %s %s\n", name, c1.ok ? "ok" : "FAIL", c2.ok ? "ok" : "FAIL",
              c3.ok ? "ok" : "FAIL", gbok ? "ok" : "FAIL", c1.detail.c_str(), c2.detail.c_str(), c3.detail.c_str(),
              gbd.c_str());
  return ok && c1.ok && c2.ok && c3.ok && gbok;
}


template <class T>
int suite(DType t) {
  int fails = 0;
  auto D = [&](auto... a) { return test::mha(t, a...); };
  {
    auto d = D(1, 2, 2, 17, 23, 40, 24);
    fails += !run<T>("plain_dk40_dv24", d);
  }
  {
    auto d = D(2, 4, 2, 33, 45, 64, 64);
    d.options.causal = true;
    d.options.align = CausalAlign::kBottomRight;
    fails += !run<T>("gqa_causal_br", d);
  }
  {
    auto d = D(1, 2, 1, 40, 20, 32, 32);
    d.options.causal = true;
    d.options.align = CausalAlign::kBottomRight;
    fails += !run<T>("causal_br_sq_gt_skv", d);
  }
  {
    auto d = D(1, 2, 2, 37, 37, 32, 32);
    d.options.window_left = 5;
    d.options.window_right = 2;
    d.options.dropout_p = 0.3;
    d.options.softcap = 3;
    fails += !run<T>("window_dropout_softcap", d);
  }
  {
    auto d = D(2, 2, 1, 19, 37, 32, 16);
    d.bias = TensorLayout::contiguous(DType::kF32, {2, 2, 19, 37});
    d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {2});
    fails += !run<T>("bias_full_grad_alibi", d, {}, {}, true);
  }
  {
    auto d = D(2, 4, 2, 19, 37, 32, 16);
    d.bias = TensorLayout::contiguous(t, {4, 1, 37});
    d.mask = TensorLayout::contiguous(DType::kU8, {2, 1, 19, 37});
    fails += !run<T>("bias_bcast_grad_mask", d, {}, {}, true);
  }
  {
    auto d = D(1, 2, 2, 20, 20, 32, 32);
    // [B, S, H, D] memory
    d.q = TensorLayout::strided(t, {1, 2, 20, 32}, {20 * 2 * 32, 32, 2 * 32, 1});
    d.o = d.q;
    fails += !run<T>("strided", d);
  }
  {
    SdpaDescriptor d;
    d.q = d.o = TensorLayout::contiguous(t, {62, 4, 32});
    d.k = d.v = TensorLayout::contiguous(t, {90, 2, 32});
    d.lse = TensorLayout::contiguous(DType::kF32, {4, 62});
    d.options.varlen = true;
    d.options.batch = 4;
    d.options.max_seqlen_q = 40;
    d.options.max_seqlen_k = 50;
    d.options.causal = true;
    d.options.align = CausalAlign::kBottomRight;
    d.options.dropout_p = 0.2;
    d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {4, 4});
    fails += !run<T>("varlen_empty", d, {0, 17, 17, 57, 62}, {0, 30, 40, 90, 90});
  }
  return fails;
}

int main() {
  int f = 0;
  f += suite<float>(DType::kF32);
  f += suite<double>(DType::kF64);
  f += suite<__nv_bfloat16>(DType::kBF16);
  f += suite<__half>(DType::kF16);
  std::printf("%d failing cases\n", f);
  return f != 0;
}
