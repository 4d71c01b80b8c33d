// Playground (not built by CMake): the last fraction of a percent on bf16 add at the copy
// ceiling. Variants of one kernel shape (128 threads, one 16-byte vector per input per
// thread, as torch's vectorized_elementwise_kernel<8>) that differ in index width, load
// flavour, cache hints and grid shape; timed back-to-back, interleaved over rounds, against
// the library kernel and cudaMemcpy. The "copy" variants move one stream (1 read + 1 write,
// like a unary map): unary maps run at ~97% of cudaMemcpy for both torch and us, so a copy
// kernel that matches memcpy would show what the library's unary kernels leave. Build: nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a
//   -I../../include -I../../src --expt-relaxed-constexpr add_variants.cu -o add_variants
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

// kPrefetch256: the L2 fetches the whole 256-byte block around each load (one DRAM burst
// pair); kEvictFirst: loads marked evict-first in L2 (read once).
enum LoadKind { kPlain, kLdg, kNoAlloc, kPrefetch256, kEvictFirst };
template <LoadKind L>
__device__ __forceinline__ uint4 ld(const uint4* p) {
  uint4 r;
  if constexpr (L == kLdg) return __ldg(p);
  else if constexpr (L == kNoAlloc) {
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  } else if constexpr (L == kPrefetch256) {
    asm volatile("ld.global.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  } else if constexpr (L == kEvictFirst) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(policy));
    return r;
  } else return *p;
}

// kStreaming: st.global.cs (evict-first, written once).
enum StoreKind { kStorePlain, kStoreStreaming };
template <StoreKind S>
__device__ __forceinline__ void st(uint4* p, uint4 v) {
  if constexpr (S == kStoreStreaming) __stcs(p, v);
  else *p = v;
}

// One stream copied through registers (the unary shape), V vectors per thread.
template <LoadKind L, StoreKind S, int V>
__global__ void __launch_bounds__(128) copy_raw(const uint4* __restrict__ a, uint4* __restrict__ o) {
  const unsigned base = blockIdx.x * (128u * V) + threadIdx.x;
  uint4 x[V];
#pragma unroll
  for (int v = 0; v < V; ++v) x[v] = ld<L>(a + base + v * 128);
#pragma unroll
  for (int v = 0; v < V; ++v) st<S>(o + base + v * 128, x[v]);
}

// Persistent: a grid of `blocks` strides over the vectors, V per thread per step.
template <LoadKind L, int V>
__global__ void __launch_bounds__(256) copy_persistent(const uint4* __restrict__ a, uint4* __restrict__ o, unsigned vecs) {
  for (unsigned base = blockIdx.x * (256u * V) + threadIdx.x; base < vecs; base += gridDim.x * 256u * V) {
    uint4 x[V];
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = ld<L>(a + base + v * 256);
#pragma unroll
    for (int v = 0; v < V; ++v) o[base + v * 256] = x[v];
  }
}

// 32-bit vector index, no tail (n a multiple of 8 * blockDim), V vectors per thread.
template <LoadKind L, int V, StoreKind S = kStorePlain>
__global__ void __launch_bounds__(128) add_raw(const uint4* __restrict__ a, const uint4* __restrict__ b, uint4* __restrict__ o) {
  const unsigned base = blockIdx.x * (128u * V) + threadIdx.x;
  uint4 x[V], y[V];
#pragma unroll
  for (int v = 0; v < V; ++v) x[v] = ld<L>(a + base + v * 128), y[v] = ld<L>(b + base + v * 128);
#pragma unroll
  for (int v = 0; v < V; ++v) st<S>(o + base + v * 128, add8(x[v], y[v]));
}

int main(int argc, char** argv) {
  const int64_t n = 16384LL * 8192;
  const int kSets = 4;
  // Buffer placement (argv[1]): "set" allocates a, b, out per set; "grouped" all a's, then
  // all b's, then all outputs (torch's order in torch_config.py); "slab" one allocation
  // with the 12 buffers back to back in grouped order.
  const std::string order = argc > 1 ? argv[1] : "set";
  std::vector<elementwise::MapParams> sets(kSets);
  auto alloc = [&](void** q) {
    cudaMalloc(q, n * 2);
    cudaMemset(*q, 0x3C, n * 2);
  };
  char* slab = nullptr;
  if (order == "slab") {
    cudaMalloc(&slab, 3 * kSets * n * 2);
    cudaMemset(slab, 0x3C, 3 * kSets * n * 2);
  }
  for (int role = 0; role < 3; ++role)
    for (int s = 0; s < kSets; ++s) {
      auto& p = sets[s];
      p.numel = n;
      p.path = elementwise::MapPath::kVecContig;
      void** q = role == 0 ? (void**)&p.in[0] : role == 1 ? (void**)&p.in[1] : (void**)&p.out[0];
      if (order == "slab") *q = slab + (role * kSets + s) * n * 2;
      else if (order == "grouped") alloc(q);
      else if (role == 0) alloc((void**)&p.in[0]), alloc((void**)&p.in[1]), alloc((void**)&p.out[0]);
    }
  printf("placement: %s\n", order.c_str());
  auto A = [&](int s) { return static_cast<const uint4*>(sets[s].in[0]); };
  auto Bp = [&](int s) { return static_cast<const uint4*>(sets[s].in[1]); };
  auto O = [&](int s) { return static_cast<uint4*>(sets[s].out[0]); };
  const unsigned vecs = static_cast<unsigned>(n / 8);
  std::vector<Variant> v;
  v.push_back({"library", [&](int s) { (void)kernels::launch_map_contig<B, B>(kernels::BinaryFwdOp<BinaryKind::kAdd, B>{}, sets[s], 0); }});
  v.push_back({"raw i32 plain", [&](int s) { add_raw<kPlain, 1><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 ldg", [&](int s) { add_raw<kLdg, 1><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 no_allocate", [&](int s) { add_raw<kNoAlloc, 1><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 plain x2", [&](int s) { add_raw<kPlain, 2><<<vecs / 256, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 prefetch256", [&](int s) { add_raw<kPrefetch256, 1><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 evict_first", [&](int s) { add_raw<kEvictFirst, 1><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 st.cs", [&](int s) { add_raw<kPlain, 1, kStoreStreaming><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"raw i32 pf256 + st.cs", [&](int s) { add_raw<kPrefetch256, 1, kStoreStreaming><<<vecs / 128, 128>>>(A(s), Bp(s), O(s)); }});
  v.push_back({"copy d2d", [&](int s) { cudaMemcpyAsync(sets[s].out[0], sets[s].in[0], n * 2, cudaMemcpyDeviceToDevice); }});
  v.push_back({"copy raw", [&](int s) { copy_raw<kPlain, kStorePlain, 1><<<vecs / 128, 128>>>(A(s), O(s)); }});
  v.push_back({"copy raw x2", [&](int s) { copy_raw<kPlain, kStorePlain, 2><<<vecs / 256, 128>>>(A(s), O(s)); }});
  v.push_back({"copy raw prefetch256", [&](int s) { copy_raw<kPrefetch256, kStorePlain, 1><<<vecs / 128, 128>>>(A(s), O(s)); }});
  v.push_back({"copy raw st.cs", [&](int s) { copy_raw<kPlain, kStoreStreaming, 1><<<vecs / 128, 128>>>(A(s), O(s)); }});
  v.push_back({"copy raw evict_first", [&](int s) { copy_raw<kEvictFirst, kStorePlain, 1><<<vecs / 128, 128>>>(A(s), O(s)); }});
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  v.push_back({"copy persistent 8/SM x4", [&, sms](int s) { copy_persistent<kPlain, 4><<<sms * 8, 256>>>(A(s), O(s), vecs); }});
  v.push_back({"copy persistent 8/SM x4 pf256", [&, sms](int s) { copy_persistent<kPrefetch256, 4><<<sms * 8, 256>>>(A(s), O(s), vecs); }});
  time_interleaved(v, kSets, 5);
  for (auto& var : v) {
    const float m = median_of_rounds(var);
    printf("%-30s %8.4f ms %8.1f GB/s (rounds %.4f..%.4f)\n", var.name.c_str(), m, (var.name.rfind("copy", 0) == 0 ? 4.0 : 6.0) * n / m / 1e6,
           var.med.front(), var.med.back());
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("status: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
