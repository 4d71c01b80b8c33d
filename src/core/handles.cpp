// Per-device cache of NVIDIA library handles. A handle is created on first request (its
// creation may synchronize the device, so never per call), shared by every plan of that
// device, and destroyed at process exit.
#include <array>
#include <mutex>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "baracuda/core/runtime.hpp"

namespace baracuda {

namespace {
constexpr int kMaxDevices = 64;

template <class H>
struct HandleCache {
  explicit HandleCache(void (*d)(H)) : destroy(d) {}
  std::mutex mu;
  std::array<H, kMaxDevices> handles{};
  void (*const destroy)(H);
  ~HandleCache() {
    // At exit the CUDA context may already be gone; destroying is best effort.
    for (auto h : handles)
      if (h && destroy) destroy(h);
  }
};

template <class H, class Create>
Expected<H> get_or_create(HandleCache<H>& cache, int device, Create create, const char* what) {
  if (device < 0 || device >= kMaxDevices)
    return Status(Code::kInvalidArgument, std::string(what) + ": device = " + std::to_string(device) + " is out of range");
  std::lock_guard<std::mutex> lock(cache.mu);
  if (cache.handles[device]) return cache.handles[device];
  int prev = 0;
  BARACUDA_TRY(cuda_status(cudaGetDevice(&prev), "cudaGetDevice"));
  BARACUDA_TRY(cuda_status(cudaSetDevice(device), "cudaSetDevice"));
  H h{};
  Status st = create(&h);
  cudaSetDevice(prev);
  if (!st) return st;
  cache.handles[device] = h;
  return h;
}
}  // namespace

Expected<cublasLtHandle_t> LibraryHandles::cublaslt(int device) {
  static HandleCache<cublasLtHandle_t> cache([](cublasLtHandle_t h) { cublasLtDestroy(h); });
  return get_or_create(
      cache, device,
      [](cublasLtHandle_t* h) {
        cublasStatus_t s = cublasLtCreate(h);
        if (s != CUBLAS_STATUS_SUCCESS)
          return Status(Code::kLibraryError, "cublasLtCreate failed", StatusSource::kCublas, static_cast<int>(s));
        return Status::ok();
      },
      "LibraryHandles::cublaslt");
}

Expected<cudnnHandle_t> LibraryHandles::cudnn(int device) {
  static HandleCache<cudnnHandle_t> cache([](cudnnHandle_t h) { cudnnDestroy(h); });
  return get_or_create(
      cache, device,
      [](cudnnHandle_t* h) {
        cudnnStatus_t s = cudnnCreate(h);
        if (s != CUDNN_STATUS_SUCCESS)
          return Status(Code::kLibraryError, std::string("cudnnCreate failed: ") + cudnnGetErrorString(s),
                        StatusSource::kCudnn, static_cast<int>(s));
        return Status::ok();
      },
      "LibraryHandles::cudnn");
}

std::mutex& LibraryHandles::cudnn_mutex(int device) {
  static std::array<std::mutex, kMaxDevices> locks;
  return locks[static_cast<std::size_t>(device) % kMaxDevices];
}

}  // namespace baracuda
