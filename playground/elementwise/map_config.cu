// Playground (not built by CMake): block size x bytes in flight for the memory-bound maps
// (relu, exp, add, cast f32->bf16 on bf16 [16384, 8192]), interleaved over rounds so clock
// drift does not decide a near tie; torch_config.py times PyTorch in the same device call.
// Build: nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I../../include -I../../src
//        --expt-relaxed-constexpr map_config.cu -o map_config
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"
#include "elementwise/kernels/unary_fast16.cuh"

using namespace baracuda;
using namespace baracuda::kernels;
using B = __nv_bfloat16;

struct Variant {
  std::string name;
  double bytes;
  std::function<void(int set)> launch;
  std::vector<float> medians;
};

template <class TIn, class TOut, class Op, int kInFlight, int kBlock>
Variant make(const char* name, std::vector<elementwise::MapParams>* sets, double bytes) {
  using Shape = MapShape<TIn, TOut, kInFlight, kBlock>;
  return {std::string(name) + " f" + std::to_string(kInFlight) + " b" + std::to_string(kBlock), bytes, [=](int s) {
            auto& p = (*sets)[s];
            const int64_t blocks = (p.numel + Shape::kPerBlock - 1) / Shape::kPerBlock;
            map_contig_kernel<TIn, TOut, Op, kInFlight, false, kBlock><<<static_cast<unsigned>(blocks), kBlock>>>(contig_params(p), Op{});
          }};
}

template <class TIn, class TOut, class Op>
void add_all(std::vector<Variant>& v, const char* name, std::vector<elementwise::MapParams>* sets, double bytes) {
  v.push_back(make<TIn, TOut, Op, 16, 128>(name, sets, bytes));
  v.push_back(make<TIn, TOut, Op, 16, 256>(name, sets, bytes));
  v.push_back(make<TIn, TOut, Op, 16, 512>(name, sets, bytes));
  v.push_back(make<TIn, TOut, Op, 32, 128>(name, sets, bytes));
  v.push_back(make<TIn, TOut, Op, 32, 256>(name, sets, bytes));
  v.push_back(make<TIn, TOut, Op, 64, 128>(name, sets, bytes));
}

int main(int argc, char** argv) {
  // "b2b": events between back-to-back launches (baracuda-bench's method); default: an event
  // pair around each launch with a sync after it.
  const bool b2b = argc > 1 && std::string(argv[1]) == "b2b";
  const int64_t n = 16384LL * 8192;
  const int kSets = 4;
  std::vector<elementwise::MapParams> unary(kSets), binary(kSets), cast(kSets);
  std::vector<void*> bufs;
  auto alloc = [&](size_t bytes) {
    void* p;
    cudaMalloc(&p, bytes);
    cudaMemset(p, 0x3C, bytes);
    bufs.push_back(p);
    return p;
  };
  for (int s = 0; s < kSets; ++s) {
    for (auto* p : {&unary[s], &binary[s], &cast[s]}) p->numel = n, p->path = elementwise::MapPath::kVecContig;
    unary[s].in[0] = alloc(n * 2), unary[s].out[0] = alloc(n * 2);
    binary[s].in[0] = alloc(n * 2), binary[s].in[1] = alloc(n * 2), binary[s].out[0] = alloc(n * 2);
    cast[s].in[0] = alloc(n * 4), cast[s].out[0] = alloc(n * 2);
  }
  std::vector<Variant> v;
  v.push_back({"copy cudaMemcpy 256MiB", 4.0 * n, [&](int s) {
                 cudaMemcpyAsync(unary[s].out[0], unary[s].in[0], n * 2, cudaMemcpyDeviceToDevice);
               }});
  add_all<B, B, UnaryOp<UnaryKind::kRelu>>(v, "relu", &unary, 4.0 * n);
  add_all<B, B, UnaryOp<UnaryKind::kExp>>(v, "exp", &unary, 4.0 * n);
  add_all<B, B, BinaryOp<BinaryKind::kAdd>>(v, "add", &binary, 6.0 * n);
  add_all<float, B, CastOp>(v, "cast", &cast, 6.0 * n);
  add_all<B, B, UnaryFast16Op<UnaryKind::kGeluErf>>(v, "gelu_erf", &unary, 4.0 * n);
  add_all<B, B, UnaryOp<UnaryKind::kSilu>>(v, "silu", &unary, 4.0 * n);
  add_all<B, B, UnaryOp<UnaryKind::kGeluTanh>>(v, "gelu_tanh", &unary, 4.0 * n);
  add_all<B, B, UnaryGradOp<UnaryKind::kGeluErf>>(v, "gelu_erf_bwd", &binary, 6.0 * n);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const int kRounds = 3;
  for (int round = 0; round < kRounds; ++round)
    for (auto& var : v) {
      std::vector<float> ms;
      if (b2b) {
        std::vector<cudaEvent_t> ev(41);
        for (auto& e : ev) cudaEventCreate(&e);
        for (int r = 0; r < 8; ++r) var.launch(r % kSets);
        cudaEventRecord(ev[0]);
        for (int r = 0; r < 40; ++r) {
          var.launch(r % kSets);
          cudaEventRecord(ev[r + 1]);
        }
        cudaEventSynchronize(ev[40]);
        for (int r = 0; r < 40; ++r) {
          float t;
          cudaEventElapsedTime(&t, ev[r], ev[r + 1]);
          ms.push_back(t);
        }
        for (auto& e : ev) cudaEventDestroy(e);
      }
      for (int r = 0; r < (b2b ? 0 : 40); ++r) {
        cudaEventRecord(a);
        var.launch(r % kSets);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float t;
        cudaEventElapsedTime(&t, a, b);
        if (r >= 8) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      var.medians.push_back(ms[ms.size() / 2]);
    }
  for (auto& var : v) {
    std::sort(var.medians.begin(), var.medians.end());
    const float m = var.medians[var.medians.size() / 2];
    printf("%-28s %8.4f ms %8.1f GB/s  (rounds %.4f..%.4f)\n", var.name.c_str(), m, var.bytes / m / 1e6, var.medians.front(),
           var.medians.back());
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("status: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
