// Playground (not built by CMake): why s4 pack / unpack (vec16_contig) sit at ~87% of the copy
// ceiling while unary maps reach ~97%. Variants of the contiguous s4 kernels that differ in
// units per thread (unroll), in how many 16-element units share one packed-side access
// (1 unit = 8-byte packed access, 2 units = 16-byte), and in grid shape; timed
// interleaved over rounds against the library's kernels and cudaMemcpy.
// Build: nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I../../include -I../../src
//   --expt-relaxed-constexpr pack_variants.cu -o pack_variants
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "timing.cuh"

#include "elementwise/kernels/pack.cuh"

using namespace baracuda;
using U = kernels::PackUnit<DType::kS4>;

// Pack: each thread handles kUnroll groups of kPer units; one packed store per group
// (kPer == 1: 8-byte store; kPer == 2: 16-byte store built from two units).
template <int kUnroll, int kPer>
__global__ void __launch_bounds__(256) pack_var(const uint4* in, void* out, long long groups) {
  const long long first = (long long)blockIdx.x * 256 * kUnroll + threadIdx.x;
  uint4 x[kUnroll][kPer];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
#pragma unroll
    for (int k = 0; k < kPer; ++k) x[u][k] = in[(first + u * 256) * kPer + k];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    unsigned long long w[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      U::Plain p;
      p.v[0] = x[u][k].x; p.v[1] = x[u][k].y; p.v[2] = x[u][k].z; p.v[3] = x[u][k].w;
      w[k] = U::pack(p);
    }
    if constexpr (kPer == 1) static_cast<unsigned long long*>(out)[first + u * 256] = w[0];
    else static_cast<ulonglong2*>(out)[first + u * 256] = make_ulonglong2(w[0], w[1]);
  }
}

template <int kUnroll, int kPer>
__global__ void __launch_bounds__(256) unpack_var(const void* in, uint4* out, long long groups) {
  const long long first = (long long)blockIdx.x * 256 * kUnroll + threadIdx.x;
  unsigned long long w[kUnroll][kPer];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if constexpr (kPer == 1) w[u][0] = static_cast<const unsigned long long*>(in)[first + u * 256];
    else {
      const ulonglong2 t = static_cast<const ulonglong2*>(in)[first + u * 256];
      w[u][0] = t.x; w[u][1] = t.y;
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const U::Plain p = U::unpack(w[u][k]);
      out[(first + u * 256) * kPer + k] = make_uint4(p.v[0], p.v[1], p.v[2], p.v[3]);
    }
}

int main() {
  const long long n = 16384LL * 8192;  // plain s4 elements (bytes)
  const int kSets = 4;
  std::vector<void*> plain(kSets), packed(kSets), plain2(kSets);
  for (int s = 0; s < kSets; ++s) {
    cudaMalloc(&plain[s], n); cudaMemset(plain[s], 0x03, n);
    cudaMalloc(&plain2[s], n); cudaMemset(plain2[s], 0, n);
    cudaMalloc(&packed[s], n / 2); cudaMemset(packed[s], 0x21, n / 2);
  }
  const long long units = n / 16;
  std::vector<elementwise::PackParams> pp(kSets), up(kSets);
  for (int s = 0; s < kSets; ++s) {
    auto& p = pp[s];
    p = {};
    p.in = plain[s]; p.out = packed[s]; p.numel = n; p.bytes = n / 2; p.span = n; p.n = n; p.row_stride = n; p.rank = 1;
    p.shape[0] = n; p.strides[0] = 1;
    up[s] = p; up[s].in = packed[s]; up[s].out = plain2[s];
  }
  std::vector<Variant> v;
  v.push_back({"pack library", [&](int s) { kernels::pack_contig_kernel<DType::kS4><<<(unsigned)kernels::pack_contig_blocks(n), kernels::kPackBlock>>>(pp[s]); }});
  v.push_back({"pack u4 x1", [&](int s) { pack_var<4, 1><<<units / 1024, 256>>>((const uint4*)plain[s], packed[s], units); }});
  v.push_back({"pack u8 x1", [&](int s) { pack_var<8, 1><<<units / 2048, 256>>>((const uint4*)plain[s], packed[s], units); }});
  v.push_back({"pack u2 x2", [&](int s) { pack_var<2, 2><<<units / 1024, 256>>>((const uint4*)plain[s], packed[s], units / 2); }});
  v.push_back({"pack u4 x2", [&](int s) { pack_var<4, 2><<<units / 2048, 256>>>((const uint4*)plain[s], packed[s], units / 2); }});
  v.push_back({"pack u1 x1", [&](int s) { pack_var<1, 1><<<units / 256, 256>>>((const uint4*)plain[s], packed[s], units); }});
  v.push_back({"unpack library", [&](int s) { kernels::unpack_contig_kernel<DType::kS4><<<(unsigned)kernels::pack_contig_blocks(n), kernels::kPackBlock>>>(up[s]); }});
  v.push_back({"unpack u4 x1", [&](int s) { unpack_var<4, 1><<<units / 1024, 256>>>(packed[s], (uint4*)plain2[s], units); }});
  v.push_back({"unpack u8 x1", [&](int s) { unpack_var<8, 1><<<units / 2048, 256>>>(packed[s], (uint4*)plain2[s], units); }});
  v.push_back({"unpack u2 x2", [&](int s) { unpack_var<2, 2><<<units / 1024, 256>>>(packed[s], (uint4*)plain2[s], units / 2); }});
  v.push_back({"unpack u4 x2", [&](int s) { unpack_var<4, 2><<<units / 2048, 256>>>(packed[s], (uint4*)plain2[s], units / 2); }});
  v.push_back({"unpack u1 x1", [&](int s) { unpack_var<1, 1><<<units / 256, 256>>>(packed[s], (uint4*)plain2[s], units); }});
  v.push_back({"copy d2d 1.5n", [&](int s) { cudaMemcpyAsync(plain2[s], plain[s], n * 3 / 4, cudaMemcpyDeviceToDevice); }});
  time_interleaved(v, kSets, 5);
  for (auto& var : v) {
    const float m = median_of_rounds(var);
    printf("%-24s %8.4f ms %8.1f GB/s (rounds %.4f..%.4f)\n", var.name.c_str(), m, 1.5 * n / m / 1e6, var.med.front(), var.med.back());
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("status: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
