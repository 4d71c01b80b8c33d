// CPU emulation of the cuDNN / flash forward numerics on `baracuda check`'s varlen SDPA problem
// (tools/families.cpp check_sdpa: q [40,4,64], k/v [45,2,64], cu_seqlens_q {0,15,15,40},
// cu_seqlens_k {0,10,15,45}, causal top-left, GQA 4/2). "got" = S in f32 from the f16/bf16
// inputs, P = exp(S - max) in f32 rounded to the storage dtype before P.V (as cuDNN's and our
// flash kernels' tensor-core P.V does), the row sum from the unrounded P, o rounded to the
// dtype. Counts the elements reference::compare rejects with the tolerance rule of the time.
// Variants: P not rounded (control), and the diagonal aligned bottom-right per sequence (what a
// semantic mistake would look like).
#include <cmath>
#include <cstdio>
#include <random>

#include "baracuda/reference/attention.hpp"
#include "baracuda/reference/compare.hpp"

using namespace baracuda;
using namespace baracuda::reference;

static std::int64_t emulate(DType t, bool round_p, bool bottom_right, std::uint64_t seed) {
  SdpaDescriptor d;
  d.q = d.o = TensorLayout::contiguous(t, {40, 4, 64});
  d.k = d.v = TensorLayout::contiguous(t, {45, 2, 64});
  d.lse = TensorLayout::contiguous(DType::kF32, {4, 40});
  d.options.varlen = true;
  d.options.causal = true;
  d.options.batch = 3;
  d.options.max_seqlen_q = 25;
  d.options.max_seqlen_k = 30;
  const std::vector<std::int32_t> cq{0, 15, 15, 40}, ck{0, 10, 15, 45};
  std::mt19937_64 rng(seed);
  HostTensor hq(d.q), hk(d.k), hv(d.v), ho(d.o);
  fill_random(hq, rng, -3, 3, false);
  fill_random(hk, rng, -1, 1, false);
  fill_random(hv, rng, -1, 1, false);
  SdpaHostInputs in;
  in.q = &hq;
  in.k = &hk;
  in.v = &hv;
  in.cu_seqlens_q = cq;
  in.cu_seqlens_k = ck;
  auto want = sdpa(d, in).value();
  const float scale = 1.0f / 8.0f;
  for (int b = 0; b < 3; ++b) {
    const int sq = cq[b + 1] - cq[b], skv = ck[b + 1] - ck[b], off = bottom_right ? skv - sq : 0;
    for (int i = 0; i < sq; ++i)
      for (int h = 0; h < 4; ++h) {
        const int kh = h / 2;
        std::vector<float> s(skv, -INFINITY);
        float m = -INFINITY;
        for (int j = 0; j < skv && j <= i + off; ++j) {
          float dot = 0;
          for (int e = 0; e < 64; ++e)
            dot += static_cast<float>(hq.get(((cq[b] + i) * 4 + h) * 64 + e)) *
                   static_cast<float>(hk.get(((ck[b] + j) * 2 + kh) * 64 + e));
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        float l = 0;
        std::vector<float> p(skv, 0.0f);
        for (int j = 0; j < skv; ++j)
          if (s[j] != -INFINITY) {
            p[j] = std::exp(s[j] - m);
            l += p[j];
            if (round_p) p[j] = static_cast<float>(round_to(t, p[j]));
          }
        for (int e = 0; e < 64; ++e) {
          float acc = 0;
          for (int j = 0; j < skv; ++j) acc += p[j] * static_cast<float>(hv.get(((ck[b] + j) * 2 + kh) * 64 + e));
          ho.set(((cq[b] + i) * 4 + h) * 64 + e, m == -INFINITY ? 0.0 : round_to(t, acc / l));
        }
      }
  }
  return compare(ho, want.o, false).mismatches;
}

int main() {
  for (DType t : {DType::kF16, DType::kBF16}) {
    std::printf("%s: o elements out of tolerance of 10240, seeds 1..5\n", t == DType::kF16 ? "f16" : "bf16");
    struct Variant {
      const char* name;
      bool round_p, bottom_right;
    };
    for (const Variant& v : {Variant{"P rounded (cuDNN / flash)", true, false}, Variant{"P in f32 (control)", false, false},
                             Variant{"bottom-right diagonal", true, true}}) {
      std::printf("  %-28s", v.name);
      for (std::uint64_t seed = 1; seed <= 5; ++seed)
        std::printf(" %5lld", static_cast<long long>(emulate(t, v.round_p, v.bottom_right, seed)));
      std::printf("\n");
    }
  }
}
