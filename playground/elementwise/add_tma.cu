// Playground (not built by CMake): bf16 add with Hopper bulk copies (cp.async.bulk, the
// non-tensor TMA path) feeding shared memory through an mbarrier pipeline, against the
// LSU kernel of the library. Each persistent block walks tiles of TILE elements; thread 0
// keeps STAGES tiles of a and b in flight, every thread adds its slice from shared memory
// and stores 16-byte vectors straight to global memory.
// Build: nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I../../include -I../../src
//        --expt-relaxed-constexpr add_tma.cu -o add_tma
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "timing.cuh"

#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/binary_ops.cuh"

using namespace baracuda;
using B = __nv_bfloat16;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n" ::"r"(
          smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

__device__ __forceinline__ uint4 add8(uint4 a, uint4 b) {
  uint4 r;
  const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
  __nv_bfloat162* pr = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 fa = __bfloat1622float2(pa[i]), fb = __bfloat1622float2(pb[i]);
    pr[i] = __floats2bfloat162_rn(fa.x + fb.x, fa.y + fb.y);
  }
  return r;
}

// TILE bf16 elements per tile per input; n a multiple of TILE (playground).
template <int TILE, int STAGES, int THREADS>
__global__ void __launch_bounds__(THREADS) add_tma(const B* a, const B* b, B* o, long long tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr unsigned kBytes = TILE * 2;
  uint4* sa = reinterpret_cast<uint4*>(smem);
  uint4* sb = reinterpret_cast<uint4*>(smem + STAGES * kBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + 2 * STAGES * kBytes);
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  const long long first = blockIdx.x, step = gridDim.x;
  const long long my_tiles = first < tiles ? (tiles - first + step - 1) / step : 0;
  auto issue = [&](long long i) {  // tile number i of this block into stage i % STAGES
    const int s = static_cast<int>(i % STAGES);
    const long long t = first + i * step;
    mbar_expect_tx(&full[s], 2 * kBytes);
    bulk_load(reinterpret_cast<unsigned char*>(sa) + s * kBytes, a + t * TILE, kBytes, &full[s]);
    bulk_load(reinterpret_cast<unsigned char*>(sb) + s * kBytes, b + t * TILE, kBytes, &full[s]);
  };
  if (threadIdx.x == 0)
    for (long long i = 0; i < STAGES && i < my_tiles; ++i) issue(i);
  constexpr int kVecs = TILE / 8;  // 16-byte vectors per tile
  for (long long i = 0; i < my_tiles; ++i) {
    const int s = static_cast<int>(i % STAGES);
    mbar_wait(&full[s], static_cast<unsigned>((i / STAGES) & 1));
    const long long t = first + i * step;
    uint4* out = reinterpret_cast<uint4*>(o + t * TILE);
#pragma unroll
    for (int v = threadIdx.x; v < kVecs; v += THREADS) out[v] = add8(sa[s * kVecs + v], sb[s * kVecs + v]);
    __syncthreads();  // everyone is done with stage s
    if (threadIdx.x == 0 && i + STAGES < my_tiles) issue(i + STAGES);
  }
}

template <int TILE, int STAGES, int THREADS>
Variant make_tma(int blocks_per_sm, std::vector<elementwise::MapParams>& sets, long long n) {
  const int smem = 2 * STAGES * TILE * 2 + STAGES * 8;
  cudaFuncSetAttribute(add_tma<TILE, STAGES, THREADS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const long long tiles = n / TILE;
  const int grid = 132 * blocks_per_sm;
  std::string name = "tma tile" + std::to_string(TILE) + " st" + std::to_string(STAGES) + " t" + std::to_string(THREADS) + " bps" +
                     std::to_string(blocks_per_sm);
  return {name, [=, &sets](int s) {
            add_tma<TILE, STAGES, THREADS><<<grid, THREADS, smem>>>(static_cast<const B*>(sets[s].in[0]),
                                                                     static_cast<const B*>(sets[s].in[1]),
                                                                     static_cast<B*>(sets[s].out[0]), tiles);
          }};
}

int main() {
  const long long n = 16384LL * 8192;
  const int kSets = 4;
  std::vector<elementwise::MapParams> sets(kSets);
  for (auto& p : sets) {
    p.numel = n;
    p.path = elementwise::MapPath::kVecContig;
    for (void** q : {(void**)&p.in[0], (void**)&p.in[1], (void**)&p.out[0]}) {
      cudaMalloc(q, n * 2);
      cudaMemset(*q, 0x3C, n * 2);
    }
  }
  std::vector<Variant> v;
  v.push_back({"library", [&](int s) { (void)kernels::launch_map_contig<B, B>(kernels::BinaryFwdOp<BinaryKind::kAdd, B>{}, sets[s], 0); }});
  v.push_back(make_tma<4096, 4, 128>(2, sets, n));
  v.push_back(make_tma<4096, 4, 256>(2, sets, n));
  v.push_back(make_tma<4096, 3, 256>(3, sets, n));
  v.push_back(make_tma<8192, 3, 256>(2, sets, n));
  v.push_back(make_tma<2048, 8, 128>(2, sets, n));
  v.push_back(make_tma<4096, 6, 256>(1, sets, n));
  time_interleaved(v, kSets, 5);
  // correctness of the last tma variant against the library on set 0
  std::vector<unsigned short> ref(1 << 20), got(1 << 20);
  v[0].launch(0);
  cudaMemcpy(ref.data(), sets[0].out[0], ref.size() * 2, cudaMemcpyDeviceToHost);
  cudaMemset(sets[0].out[0], 0, n * 2);
  v.back().launch(0);
  cudaMemcpy(got.data(), sets[0].out[0], got.size() * 2, cudaMemcpyDeviceToHost);
  printf("tma matches library on the first 2^20 elements: %s\n", ref == got ? "yes" : "NO");
  for (auto& var : v) {
    const float m = median_of_rounds(var);
    printf("%-34s %8.4f ms %8.1f GB/s (rounds %.4f..%.4f)\n", var.name.c_str(), m, 6.0 * n / m / 1e6, var.med.front(), var.med.back());
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("status: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
