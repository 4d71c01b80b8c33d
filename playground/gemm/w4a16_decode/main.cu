// Playground: where does the W4A16 decode kernel's time go? (issue 4, must-show 2: W4A16 at
// M <= 16 on a 28672 x 8192 weight >= 3x a bf16 GEMM of the same shape.)
//
// One program, run on the H200, that times on the same weight (bf16 activations, s4 weights,
// group 128):
//  * read_ceiling: a grid-stride 16-byte read of the packed weight (the best a reader can do);
//  * tile<NT, TPW, D, MINB, mode>: the library's fragment scheme (int4_gemv.cuh: mma.sync
//    m16n8k16 with weight rows as the mma's M, X staged in shared memory in the permuted K order)
//    in a persistent grid: MINB resident blocks of 8 warps per SM, split s of K per block, each
//    warp walks 16 * TPW-row tiles with a D-deep register ring of raw loads. mode 0 loads only
//    (XOR of the words, the memory pattern without the arithmetic), 1 dequantizes and multiplies.
// Every computing variant is checked against a naive GPU reference (f32 sums of the same
// dequantized weights; max relative error printed). Built here with nvcc for sm_90a
// (run.sh), run there; prints one line per variant.
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
  unsigned char* wt[2];  // the same weights in the tiled layout
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

template <int NT, int D, int PF, bool TILED, int WARPS = kInt4StreamKWarps, int PROBE = 0>
void run_streamk(Problem& P, int splits) {
  const int blocks_per_sm = 1;
  char label[96];
  std::snprintf(label, sizeof label, "streamk%s W=%d probe=%d NT=%d D=%d pf=%d M=%lld splits=%d pad=%lld", TILED ? "_tiled" : "", WARPS, PROBE, NT, D, PF, (long long)P.M,
                splits, (long long)P.pad);
  const char* only = std::getenv("ONLY");
  if (only && !std::strstr(label, only)) return;
  const int reps = only ? 1 : 50;
  auto kern = int4_streamk_kernel<T, NT, true, D, PF, TILED, WARPS, PROBE>;
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
  p.cfg.smem_bytes = int4_streamk_ring_offset(P.M, p.cfg.kslice) + static_cast<std::size_t>(WARPS) * D * 1024 +
                     (PROBE == 4 ? p.cfg.kslice / 128 * 64 : 0);
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
  const std::size_t part_bytes = int4_streamk_partial_bytes(P.M, splits, sp.k);
  if (part_bytes > P.part_bytes) {
    std::printf("%s  (skip: partial %zu)\n", label, part_bytes);
    return;
  }
  const std::int64_t mn = P.M * P.N;
  auto launch = [&](int which) {
    sp.g.wt.w = TILED ? P.wt[which] : P.w[which];
    kern<<<sp.k.grid, WARPS * 32, p.cfg.smem_bytes>>>(sp);
    if (!std::getenv("NOREDUCE")) CK(launch_dependent(true, int4_streamk_reduce_kernel<T>, dim3(static_cast<unsigned>((mn + 255) / 256 < 4 * P.sms ? (mn + 255) / 256 : 4 * P.sms)),
                        dim3(256), nullptr, sp));
  };
  const double ms = time_it(P, launch, reps);
  CK(cudaGetLastError());
  launch(0);
  CK(cudaDeviceSynchronize());
  const double err = check(P);
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, kern));
  const double bytes = static_cast<double>(P.N) * P.K / 2 + static_cast<double>(P.N) * P.G * 2;
  std::printf("%s occ=%d regs=%d lmem=%zu slots=%lld part=%.1fMB: %.4f ms  %.0f GB/s  err %.2e\n", label, occ, fa.numRegs,
              fa.localSizeBytes, (long long)sp.k.slots, part_bytes * 1e-6, ms, bytes / ms * 1e-6, err);
}


// ---- sweep: blocks own whole tiles, a block's warps interleave over the chunks of a tile (warp w
// takes chunks w, w + W, ...), so a block streams one contiguous run of the tiled weight; the
// warps' sums of a tile are added in shared memory in warp order and y is written directly.
struct SweepParams {
  Int4GemvParams g;
  std::int64_t tiles, ct;   // 16-row tiles, chunks per tile (K / 128)
  std::size_t ring_offset, red_offset;
};

template <int NT, int D, int kWarps, int kProbe>
__global__ void __launch_bounds__(kWarps * 32, 1) sweep_kernel(const SweepParams P) {
  extern __shared__ uint4 smem_raw[];
  const Int4GemvParams& p = P.g;
  const Int4Weights& wt = p.wt;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  T* xs = reinterpret_cast<T*>(smem_raw);
  uint4* ring = smem_raw + P.ring_offset / 16 + warp * D * 64 + lane;
  float* red = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(smem_raw) + P.red_offset);
  const std::int64_t t0 = blockIdx.x * P.tiles / gridDim.x, t1 = (blockIdx.x + 1) * P.tiles / gridDim.x;
  const int per = static_cast<int>(P.ct / kWarps);  // chunks of a tile per warp (ct % kWarps == 0 here)
  const std::int64_t nunits = (t1 - t0) * per;
  const std::int64_t rs = p.cfg.kslice + 32;
  const uint4* wbase = static_cast<const uint4*>(wt.w) + lane;
  const unsigned short* sbase = static_cast<const unsigned short*>(wt.scales);
  // issue cursor: unit (itile, ichunk), advanced by one unit per issue
  std::int64_t itile = t0;
  int ichunk = warp;
  const int ct = static_cast<int>(P.ct);
  auto issue = [&](std::int64_t, uint4* dst) -> Int4StreamKGroupBits {
    const std::int64_t tile = itile;
    const int chunk = ichunk;
    ichunk += kWarps;
    if (ichunk >= ct) {
      ichunk = warp;
      ++itile;
    }
    const uint4* src = wbase + (tile * P.ct + chunk) * 64;
    baracuda::kernels::cp_async16<0>(dst, src, true);
    baracuda::kernels::cp_async16<0>(dst + 32, src + 32, true);
    const std::int64_t row = tile * 16 + g;
    Int4StreamKGroupBits b;
    b.s = __ldg(sbase + row * wt.groups + chunk) | (static_cast<std::uint32_t>(__ldg(sbase + (row + 8) * wt.groups + chunk)) << 16);
    b.z = 0;
    return b;
  };
  Int4StreamKGroupBits gb[D];
#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < nunits) gb[s] = issue(s, ring + s * 64);
    baracuda::kernels::cp_async_commit();
  }
  int4_stage_x<T>(p, xs, 0, wt.k);
  __syncthreads();
  float acc[NT][4] = {};
  int par = 0, cchunk = warp;
  std::int64_t ctile = t0;
  for (std::int64_t n0 = 0; n0 < nunits; n0 += D) {
#pragma unroll
    for (int s = 0; s < D; ++s) {
      const std::int64_t n = n0 + s;
      if (n < nunits) {
        baracuda::kernels::cp_async_wait<D - 1>();
        const uint4 q[2] = {ring[s * 64], ring[s * 64 + 32]};
        const int chunk = cchunk;
        cchunk += kWarps;
        if constexpr (kProbe == 1)
          acc[0][0] += __uint_as_float(q[0].x ^ q[0].y ^ q[0].z ^ q[0].w ^ q[1].x ^ q[1].y ^ q[1].z ^ q[1].w ^ gb[s].s);
        else
          int4_streamk_unit<T, NT, true>(acc, q, gb[s], xs, rs, chunk, g, t, p.m);
        if (n + D < nunits) gb[s] = issue(n + D, ring + s * 64);
        baracuda::kernels::cp_async_commit();
        if (cchunk >= ct) {  // the tile is done: add the warps' sums in order
          cchunk = warp;
          float* r = red + par * (kWarps * 32 * NT * 4);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              r[(warp * NT * 4 + nt * 4 + e) * 32 + lane] = acc[nt][e];
              acc[nt][e] = 0.0f;
            }
          __syncthreads();
          const std::int64_t tile = ctile++;
          for (int o = threadIdx.x; o < 16 * p.m; o += blockDim.x) {
            const int row = o / static_cast<int>(p.m), m = o - row * static_cast<int>(p.m);
            const int ln = 4 * (row & 7) + ((m & 7) >> 1), nt = m >> 3, e = (row >> 3) * 2 + (m & 1);
            float v = 0.0f;
            for (int w = 0; w < kWarps; ++w) v += r[(w * NT * 4 + nt * 4 + e) * 32 + ln];
            static_cast<T*>(p.y)[m * p.ldy + tile * 16 + row] = __float2bfloat16_rn(v);
          }
          par ^= 1;
        }
      }
    }
  }
}

template <int NT, int D, int WARPS, int PROBE = 0>
void run_sweep(Problem& P) {
  char label[96];
  std::snprintf(label, sizeof label, "sweep W=%d probe=%d NT=%d D=%d M=%lld", WARPS, PROBE, NT, D, (long long)P.M);
  const char* only = std::getenv("ONLY");
  if (only && !std::strstr(label, only)) return;
  const int reps = only ? 1 : 50;
  auto kern = sweep_kernel<NT, D, WARPS, PROBE>;
  SweepParams sp{};
  Int4GemvParams& p = sp.g;
  p.wt.scales = P.sc;
  p.wt.is_signed = true;
  p.wt.n = P.N;
  p.wt.k = P.K;
  p.wt.group_size = 128;
  p.wt.groups = P.G;
  p.x = P.x;
  p.ldx = P.K;
  p.x_vec16 = true;
  p.y = P.y;
  p.ldy = P.N;
  p.m = P.M;
  p.cfg.kslice = P.K;
  sp.tiles = P.N / 16;
  sp.ct = P.K / 128;
  sp.ring_offset = int4_streamk_ring_offset(P.M, P.K);
  sp.red_offset = sp.ring_offset + static_cast<std::size_t>(WARPS) * D * 1024;
  const std::size_t smem = sp.red_offset + 2 * WARPS * 32 * NT * 4 * 4;
  if (smem > 227 * 1024) {
    std::printf("%s  (skip: smem %zu)\n", label, smem);
    return;
  }
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  auto launch = [&](int which) {
    sp.g.wt.w = P.wt[which];
    kern<<<P.sms, WARPS * 32, smem>>>(sp);
  };
  const double ms = time_it(P, launch, reps);
  CK(cudaGetLastError());
  launch(0);
  CK(cudaDeviceSynchronize());
  const double err = check(P);
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, kern));
  const double bytes = static_cast<double>(P.N) * P.K / 2 + static_cast<double>(P.N) * P.G * 2;
  std::printf("%s regs=%d lmem=%zu: %.4f ms  %.0f GB/s  err %.2e\n", label, fa.numRegs, fa.localSizeBytes, ms,
              bytes / ms * 1e-6, err);
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

// Row-major [N, K/2 + pad] -> tiled: 16-byte vector i of unit u = tile * CT + chunk is row
// 16 tile + g + 8 h, k = 128 chunk + 32 t, with h = (i / 32), lane = i % 32 = 4 g + t.
__global__ void to_tiled(const unsigned char* w, std::int64_t ld, std::int64_t N, std::int64_t K, uint4* out) {
  const std::int64_t CT = (K + 127) / 128, tiles = (N + 15) / 16, total = tiles * CT * 64;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t unit = i / 64, tile = unit / CT, chunk = unit % CT;
    const int within = static_cast<int>(i % 64), h = within / 32, lane = within % 32, g = lane / 4, t = lane % 4;
    const std::int64_t row = tile * 16 + g + 8 * h, k = chunk * 128 + 32 * t;
    out[i] = row < N && k < K ? *reinterpret_cast<const uint4*>(w + row * ld + k / 2) : make_uint4(0, 0, 0, 0);
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
  const std::int64_t tbytes = (P.N + 15) / 16 * ((P.K + 127) / 128) * 1024;
  for (int i = 0; i < 2; ++i) {
    CK(cudaMalloc(&P.wt[i], tbytes));
    to_tiled<<<1024, 256>>>(P.w[i], P.K / 2 + P.pad, P.N, P.K, reinterpret_cast<uint4*>(P.wt[i]));
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
  for (std::int64_t M : {1, 4, 8, 16}) {
    if (ms && !std::strstr(ms, (std::to_string(M) + ",").c_str())) continue;
    P.M = M;
    reference<<<(M * P.N + 255) / 256, 256>>>(P.w[0], P.K / 2 + P.pad, P.sc, P.G, P.x, M, P.N, P.K, P.yref);
    CK(cudaDeviceSynchronize());
    if (M <= 8) {
      run_streamk<1, 4, 0, true>(P, 1);
      run_sweep<1, 4, 16, 1>(P);
      run_sweep<1, 4, 16>(P);
      run_sweep<1, 8, 16>(P);
      run_sweep<1, 4, 32>(P);
      run_sweep<1, 2, 32>(P);
    } else {
      run_streamk<2, 4, 0, true>(P, 2);
    }
  }
  return 0;
}
