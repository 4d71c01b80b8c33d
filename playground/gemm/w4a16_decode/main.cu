// Playground: where does the W4A16 decode kernel's time go? (issue 4, must-show 2: W4A16 at
// M <= 16 on a 28672 x 8192 weight >= 3x a bf16 GEMM of the same shape.)
//
// One program, run on the H200, that times on the same weight (bf16 activations, s4 weights,
// group 128): read_ceiling (a grid-stride 16-byte read of the packed weight, the best a reader
// can do) and the library's stream-K kernel (kernels/int4_streamk.cuh, row-major s4 weights)
// with its reduction, per K-split count at the library's ring depth (ALL=1: deeper rings too),
// M in {1, 4, 8, 16} (MS=1,16, to pick; ONLY=substring runs one variant once, for ncu), and the
// parts of each time: the stream-K kernel alone, the reduction alone, an empty kernel of the
// same launch shape (session 31 found a ~10 us fixed part in the bench's times: run it at
// several K, argv N K, to split it). Every variant is checked against a naive GPU reference
// (f32 sums of the exact weights; max relative error printed).
// Build (here): nvcc -std=c++20 -O3 -arch=sm_90a -I../../../src -I../../../include main.cu
//   -o ../../../.devrun/w4a16_decode; run there with carry [".devrun"].
// Session 9 findings (H200; details in docs/gemm.md): loads alone 0.0346 ms, compute alone
// 0.031 ms, both 0.041 (M = 1, without the reduction); a tiled weight layout (1 KiB units
// contiguous) -5%; an offset-form dequantization (mma on the raw B + u bits, C = -(B + z) sum x)
// no gain; block-wide sweeps with per-tile barriers slower; the reduction fused into the last
// warp of each tile (fence + atomic) 0.060 / 0.125 ms at M = 1 / 16 against 0.048 / 0.074 (the
// fence waits for the warp's in-flight copies).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gemm/kernels/int4_streamk.cuh"

using namespace baracuda::gemm;
using namespace baracuda::gemm::kernels;
using T = __nv_bfloat16;

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                    \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void empty_kernel() {}

__global__ void read_ceiling(const uint4* w, std::int64_t n16, unsigned* sink) {
  unsigned acc = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcs(w + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

// Naive reference: one thread per (m, n), w = (q - 8) s exactly (in f32), f32 sums in K order.
__global__ void reference(const unsigned char* w, std::int64_t ldw, const T* sc, std::int64_t G, const T* x,
                          std::int64_t M, std::int64_t N, std::int64_t K, float* y) {
  const std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= M * N) return;
  const std::int64_t m = idx / N, n = idx % N;
  float acc = 0;
  for (std::int64_t k = 0; k < K; ++k) {
    const unsigned byte = w[n * ldw + k / 2];
    const int q = static_cast<int>((byte >> (4 * (k & 1))) & 15u) ^ 8;  // s4 stored as two's complement nibble
    const int qs = q - 8;
    const float wv = static_cast<float>(qs) * __bfloat162float(sc[n * G + k / (K / G)]);  // exact in f32
    acc += wv * __bfloat162float(x[m * K + k]);
  }
  y[idx] = acc;
}

struct Problem {
  std::int64_t M, N, K, G, pad;
  unsigned char* w[2];
  T* sc;
  T* x;
  T* y;
  float* part;
  std::size_t part_bytes;
  float* yref;
  unsigned* sink;
  int sms;
  cudaEvent_t e0, e1;
};

using baracuda::kernels::launch_dependent;

template <class F>
double time_it(Problem& P, F&& launch, int reps) {
  if (reps > 1)
    for (int i = 0; i < 3; ++i) launch(i & 1);
  CK(cudaEventRecord(P.e0));
  for (int i = 0; i < reps; ++i) launch(i & 1);
  CK(cudaEventRecord(P.e1));
  CK(cudaEventSynchronize(P.e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, P.e0, P.e1));
  return ms / reps;
}

double check(Problem& P) {
  std::vector<T> y(P.M * P.N);
  std::vector<float> r(P.M * P.N);
  CK(cudaMemcpy(y.data(), P.y, y.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r.data(), P.yref, r.size() * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = std::abs(static_cast<double>(__bfloat162float(y[i])) - r[i]) / (std::abs(r[i]) + 1e-1);
    if (!(d <= worst)) worst = d;  // NaN sticks
  }
  return worst;
}

template <int NT, int D, int PF>
void run_streamk(Problem& P, int splits) {
  constexpr int WARPS = kInt4StreamKWarps;
  const int blocks_per_sm = 1;
  char label[96];
  std::snprintf(label, sizeof label, "streamk NT=%d D=%d pf=%d M=%lld splits=%d pad=%lld", NT, D, PF, (long long)P.M,
                splits, (long long)P.pad);
  const char* only = std::getenv("ONLY");
  if (only && !std::strstr(label, only)) return;
  const int reps = only ? 1 : 50;
  auto kern = int4_streamk_kernel<T, NT, /*kSigned=*/true, /*kTiled=*/false, D, PF>;
  Int4StreamKParams sp;
  Int4GemvParams& p = sp.g;
  p.wt.ld_bytes = P.K / 2 + P.pad;
  p.wt.scales = P.sc;
  p.wt.is_signed = true;
  p.wt.n = P.N;
  p.wt.k = P.K;
  p.wt.group_size = P.K / P.G;
  p.wt.groups = P.G;
  p.act = baracuda::DType::kBF16;
  p.x = P.x;
  p.ldx = P.K;
  p.x_vec16 = true;
  p.y = P.y;
  p.ldy = P.N;
  p.m = P.M;
  const std::int64_t chunks = (P.K + 127) / 128;
  p.cfg.kslice = (chunks + splits - 1) / splits * 128;
  p.cfg.splits = splits;
  p.cfg.group_shift = __builtin_ctzll(p.wt.group_size);
  p.cfg.smem_bytes = int4_streamk_smem_bytes(P.M, p.cfg.kslice, D);
  p.partial = P.part;
  if (blocks_per_sm * (p.cfg.smem_bytes + 1024) > 228 * 1024) {
    std::printf("%s  (skip: smem %zu)\n", label, p.cfg.smem_bytes);
    return;
  }
  sp.k.tiles = (P.N + 15) / 16;
  sp.k.grid = P.sms * blocks_per_sm / splits * splits;
  sp.k.warps_per_split = static_cast<std::int64_t>(sp.k.grid / splits) * WARPS;
  const std::int64_t last_chunks = (P.K - (splits - 1) * p.cfg.kslice + 127) / 128;
  const std::int64_t umin = sp.k.tiles * last_chunks;
  const std::int64_t per_warp = umin / sp.k.warps_per_split;  // >= 1 asserted below
  sp.k.slots = (chunks + per_warp - 1) / per_warp + 1;
  sp.k.stages = D;
  sp.k.ring_offset = int4_streamk_ring_offset(P.M, p.cfg.kslice);
  if (per_warp < 1) {
    std::printf("%s  (skip: W > U)\n", label);
    return;
  }
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(p.cfg.smem_bytes)));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, WARPS * 32, p.cfg.smem_bytes));
  const std::size_t part_bytes = int4_streamk_workspace_bytes(P.M, splits, sp.k);
  sp.counts = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(P.part) + int4_streamk_counts_offset(P.M, splits, sp.k));
  if (part_bytes > P.part_bytes) {
    std::printf("%s  (skip: partial %zu)\n", label, part_bytes);
    return;
  }
  const dim3 reduce_grid(static_cast<unsigned>((sp.k.tiles * 4 * P.M + 127) / 128));
  auto stream_k = [&](int which) {
    sp.g.wt.w = P.w[which];
    kern<<<sp.k.grid, WARPS * 32, p.cfg.smem_bytes>>>(sp);
  };
  auto reduce = [&](bool pdl) { CK(launch_dependent(pdl, int4_streamk_reduce_kernel<T>, reduce_grid, dim3(128), nullptr, sp)); };
  auto both = [&](int which) {
    stream_k(which);
    reduce(true);
  };
  const double ms = time_it(P, both, reps);
  CK(cudaGetLastError());
  both(0);
  CK(cudaDeviceSynchronize());
  const double err = check(P);
  // The parts of that time (back-to-back launches, so launch gaps hide partly behind the
  // previous kernel): the stream-K kernel alone, the reduction alone (on the slots the check's
  // run left), and an empty kernel of the stream-K launch shape and shared memory.
  const double ms_k = time_it(P, stream_k, reps);
  const double ms_r = time_it(P, [&](int) { reduce(false); }, reps);
  CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(p.cfg.smem_bytes)));
  const double ms_e = time_it(P, [&](int) { empty_kernel<<<sp.k.grid, WARPS * 32, p.cfg.smem_bytes>>>(); }, reps);
  CK(cudaGetLastError());
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, kern));
  const double bytes = static_cast<double>(P.N) * P.K / 2 + static_cast<double>(P.N) * P.G * 2;
  std::printf("%s occ=%d regs=%d lmem=%zu slots=%lld part=%.1fMB: %.4f ms  %.0f GB/s  err %.2e | stream-K alone %.4f, "
              "reduction alone %.4f, empty launch %.4f ms\n",
              label, occ, fa.numRegs, fa.localSizeBytes, (long long)sp.k.slots, part_bytes * 1e-6, ms, bytes / ms * 1e-6,
              err, ms_k, ms_r, ms_e);
}


__global__ void fill_bytes(unsigned char* p, std::int64_t n, unsigned seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = static_cast<unsigned char>(h);
  }
}
__global__ void fill_bf16(T* p, std::int64_t n, unsigned seed, float lo, float hi) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2bfloat16_rn(lo + (hi - lo) * (h & 0xffffff) / 16777216.0f);
  }
}

int main(int argc, char** argv) {
  Problem P{};
  P.N = argc > 1 ? std::atoll(argv[1]) : 28672;
  P.K = argc > 2 ? std::atoll(argv[2]) : 8192;
  P.G = P.K / 128;
  CK(cudaDeviceGetAttribute(&P.sms, cudaDevAttrMultiProcessorCount, 0));
  P.pad = argc > 3 ? std::atoll(argv[3]) : 0;
  const std::int64_t wbytes = P.N * (P.K / 2 + P.pad);
  for (auto& w : P.w) {
    CK(cudaMalloc(&w, wbytes));
    fill_bytes<<<1024, 256>>>(w, wbytes, 1234u);
  }
  CK(cudaMalloc(&P.sc, P.N * P.G * 2));
  fill_bf16<<<1024, 256>>>(P.sc, P.N * P.G, 77u, 0.01f, 0.02f);
  CK(cudaMalloc(&P.x, 16 * P.K * 2));
  fill_bf16<<<1024, 256>>>(P.x, 16 * P.K, 99u, -1.0f, 1.0f);
  CK(cudaMalloc(&P.y, 16 * P.N * 2));
  P.part_bytes = std::size_t{64} << 20;
  CK(cudaMalloc(&P.part, P.part_bytes));
  CK(cudaMalloc(&P.yref, 16 * P.N * 4));
  CK(cudaMalloc(&P.sink, 64));
  CK(cudaEventCreate(&P.e0));
  CK(cudaEventCreate(&P.e1));
  std::printf("N=%lld K=%lld weight %.1f MB, %d SMs\n", (long long)P.N, (long long)P.K, wbytes * 1e-6, P.sms);

  {
    const double ms = time_it(P, [&](int which) {
      read_ceiling<<<P.sms * 8, 256>>>(reinterpret_cast<const uint4*>(P.w[which]), wbytes / 16, P.sink);
    }, 50);
    std::printf("read_ceiling: %.4f ms  %.0f GB/s\n", ms, wbytes / ms * 1e-6);
  }
  const char* ms = std::getenv("MS");
  const bool all = std::getenv("ALL") != nullptr;  // the other ring depths too
  for (std::int64_t M : {1, 4, 8, 16}) {
    if (ms && !std::strstr(ms, (std::to_string(M) + ",").c_str())) continue;
    P.M = M;
    reference<<<(M * P.N + 255) / 256, 256>>>(P.w[0], P.K / 2 + P.pad, P.sc, P.G, P.x, M, P.N, P.K, P.yref);
    CK(cudaDeviceSynchronize());
    for (int splits : {1, 2, 4}) {
      if (M <= 8) {
        run_streamk<1, int4_streamk_stages(8), 128>(P, splits);
        if (all) {
          run_streamk<1, 6, 128>(P, splits);
          run_streamk<1, 8, 128>(P, splits);
        }
      } else {
        run_streamk<2, int4_streamk_stages(16), 128>(P, splits);
        if (all) {
          run_streamk<2, 4, 128>(P, splits);
          run_streamk<2, 6, 128>(P, splits);
        }
      }
    }
  }
  return 0;
}
