// A fake sm_90 device for the run-time refusal tables on a machine without a GPU (CI).
//
// LD_PRELOADed under baracuda_gpu_tests, it answers the CUDA runtime calls that select, the
// argument checks and the tests' own buffers make: one device (an H100-like sm_90 with 132
// SMs), streams that are tokens, and "device" memory that is host memory (so the tests'
// poisoned outputs can be filled and read back). Any kernel launch aborts the process: the
// refusal tables assert that bad input is refused *before any launch* with its outputs
// untouched, so under this library a table passes only if no row (and no set-up) launches.
//
// What it cannot fake: cuBLASLt and cuDNN (their handles need a driver), so the GEMM tables
// and the cuDNN SDPA SKUs stay device-only; tests/CMakeLists.txt lists the tables it runs.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

[[noreturn]] void launched(const char* how) {
  std::fprintf(stderr, "fake_device: a kernel launch (%s) reached the device: a refusal came too late\n", how);
  std::abort();
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "fake sm_90 (tests/fake_device)");
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->maxThreadsPerMultiProcessor = 2048;
  p->sharedMemPerBlockOptin = 232448;
  p->l2CacheSize = 50 << 20;
  p->totalGlobalMem = 80ull << 30;
  p->memoryBusWidth = 5120;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) {
  *v = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = reinterpret_cast<cudaStream_t>(0x1234);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* c) {
  *c = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
// Host blocks laid out as cudaMalloc lays out device memory: sizes rounded up to 2 MiB, plus
// 64 KiB. The tables move pointers by up to a row past an allocation (x + one row over a
// [4, 131072] x), which on a device lands in that rounding, never in the next tensor; packed
// host blocks would turn an overlap with x into one with the tensor allocated next.
cudaError_t cudaMalloc(void** p, size_t n) {
  constexpr size_t kGranule = size_t{2} << 20;
  *p = std::aligned_alloc(256, (n + kGranule - 1) / kGranule * kGranule + (64 << 10));
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) {
  std::memcpy(d, s, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  std::memset(d, v, n);
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void*) {
  std::memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 64;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void*, int, size_t) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void*, int, size_t, unsigned) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) { launched("cudaLaunchKernel"); }
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void*, void**) { launched("cudaLaunchKernelExC"); }
// The <<<...>>> syntax: the configuration is pushed before the launch call.
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, struct CUstream_st*) { launched("<<<...>>>"); }

}  // extern "C"
