// Runtime layer: device capabilities, streams, events, device memory, copies, and the
// per-device cache of NVIDIA library handles.
//
// No CUDA header is needed to include this file: CUDA handle types are forward-declared
// (the declarations match the CUDA headers' own typedefs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "baracuda/core/status.hpp"

struct CUstream_st;
struct CUevent_st;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;
struct cudnnContext;
typedef struct cudnnContext* cudnnHandle_t;

namespace baracuda {

// What select() needs to know about a device. Read once per device and cached; a caps
// value can also be made up (for_arch) so dispatch can be decided and tested without a GPU.
struct DeviceCaps {
  int ordinal = -1;                  // -1 for a synthetic caps value
  std::string name;
  int sm = 0;                        // compute capability major*10 + minor (90 for H100/H200)
  int sm_count = 0;
  int max_threads_per_sm = 0;
  std::size_t smem_per_block_optin = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
  int memory_bus_bits = 0;

  // Typical caps of an A100 (sm 80), L40S (sm 89) and H100/H200 (sm 90).
  static Expected<DeviceCaps> for_arch(int sm);
  std::string arch_name() const;     // "sm90"
};

// Does this build carry machine code or PTX that can run on compute capability `sm`, and
// sm_90a code when `arch_specific`? (From the architecture list the library was built with.)
bool build_supports(int sm, bool arch_specific) noexcept;
// The list the library was built with, comma-separated, e.g. "80-real,89-real,90a-real,90-virtual".
const char* build_arch_list() noexcept;
// The rule behind build_supports for any such list (CMake CUDA_ARCHITECTURES entries:
// "NN-real" is machine code, which runs on the same major version at minor >= NN's, "NNa" only
// on NN itself; "NN-virtual" is PTX, which runs on NN and newer; plain "NN" is both).
bool arch_list_supports(const char* list, int sm, bool arch_specific) noexcept;

class Device {
 public:
  static Expected<int> count();                      // 0 when there is no driver / device
  static Expected<int> current();
  static Expected<const DeviceCaps*> caps(int ordinal);  // cached, thread-safe
};

// A CUDA stream: owning (destroyed with the object) or borrowed from a framework.
class Stream {
 public:
  Stream() = default;                                // the legacy default stream of device 0
  static Expected<Stream> create(int device = -1);   // -1: the current device; non-blocking
  static Stream borrow(cudaStream_t s, int device);  // does not take ownership
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t handle() const noexcept { return stream_; }
  int device() const noexcept { return device_; }
  Expected<const DeviceCaps*> caps() const { return Device::caps(device_); }
  Status synchronize() const;
  Expected<bool> is_capturing() const;

 private:
  Stream(cudaStream_t s, int device, bool owned) : stream_(s), device_(device), owned_(owned) {}
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  bool owned_ = false;
};

class Event {
 public:
  static Expected<Event> create(bool timing = true);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Status record(const Stream& s) const;
  Status synchronize() const;
  Expected<float> elapsed_ms_since(const Event& start) const;
  cudaEvent_t handle() const noexcept { return ev_; }

 private:
  explicit Event(cudaEvent_t e) : ev_(e) {}
  cudaEvent_t ev_ = nullptr;
};

// RAII device memory. allocate() uses cudaMalloc; allocate_async() is stream-ordered
// (cudaMallocAsync) and is freed on the same stream when the buffer dies, so that stream
// must outlive the buffer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Expected<DeviceBuffer> allocate(std::size_t bytes);
  static Expected<DeviceBuffer> allocate_async(std::size_t bytes, const Stream& stream);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return ptr_; }
  std::size_t bytes() const noexcept { return bytes_; }
  template <class T>
  T* as() const noexcept { return static_cast<T*>(ptr_); }
  Status release();  // free now (errors reported, unlike the destructor)

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t async_stream_ = nullptr;
  bool async_ = false;
};

// Host <-> device copies, ordered on `stream` (pageable host memory makes them synchronous
// with respect to the host, as in CUDA).
Status copy_to_device(void* dst, const void* src, std::size_t bytes, const Stream& stream);
Status copy_to_host(void* dst, const void* src, std::size_t bytes, const Stream& stream);
Status copy_device_to_device(void* dst, const void* src, std::size_t bytes, const Stream& stream);
Status memset_device(void* dst, int value, std::size_t bytes, const Stream& stream);

// Per-device cache of library handles: created on first use (never per call), shared by
// every plan on that device, safe to request from several threads, destroyed at exit.
// Callers set the stream on the handle before use where the library needs it (cuDNN).
class LibraryHandles {
 public:
  static Expected<cublasLtHandle_t> cublaslt(int device);
  static Expected<cudnnHandle_t> cudnn(int device);
  // The lock of the device's cuDNN handle (device as accepted by cudnn()): cudnnSetStream and
  // the work issued after it (graph building, execute) must not interleave between threads, so
  // every user of cudnn(device) holds this lock from cudnnSetStream to its last call.
  static std::mutex& cudnn_mutex(int device);
};

// Maps a cudaError_t (as int) to a Status (kCudaError, raw value kept) with `what` as context.
Status cuda_status(int cuda_error, const char* what);

}  // namespace baracuda
