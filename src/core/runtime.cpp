// Runtime layer: device caps (read once, cached), streams, events, device buffers, copies.
#include "baracuda/core/runtime.hpp"

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace baracuda {

Status cuda_status(int err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  auto e = static_cast<cudaError_t>(err);
  return Status(Code::kCudaError, std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")",
                StatusSource::kCuda, err);
}

#define BARACUDA_CUDA_TRY(call) BARACUDA_TRY(cuda_status(static_cast<int>(call), #call))

// ----------------------------------------------------------------------------- caps
Expected<DeviceCaps> DeviceCaps::for_arch(int sm) {
  DeviceCaps c;
  c.sm = sm;
  c.max_threads_per_sm = 2048;
  switch (sm) {
    case 80:
      c.name = "synthetic A100 (sm80)";
      c.sm_count = 108;
      c.smem_per_block_optin = 163 * 1024;
      c.l2_bytes = 40u << 20;
      c.global_mem_bytes = 80ull << 30;
      break;
    case 89:
      c.name = "synthetic L40S (sm89)";
      c.sm_count = 142;
      c.max_threads_per_sm = 1536;
      c.smem_per_block_optin = 99 * 1024;
      c.l2_bytes = 96u << 20;
      c.global_mem_bytes = 48ull << 30;
      break;
    case 90:
      c.name = "synthetic H100/H200 (sm90)";
      c.sm_count = 132;
      c.smem_per_block_optin = 227 * 1024;
      c.l2_bytes = 50u << 20;
      c.global_mem_bytes = 141ull << 30;
      break;
    default:
      return Status(Code::kInvalidArgument, "DeviceCaps::for_arch: sm = " + std::to_string(sm) + " is not one of 80, 89, 90");
  }
  return c;
}

std::string DeviceCaps::arch_name() const { return "sm" + std::to_string(sm); }

Expected<int> Device::count() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    return 0;
  }
  if (e != cudaSuccess) return cuda_status(e, "cudaGetDeviceCount");
  return n;
}

Expected<int> Device::current() {
  int d = 0;
  BARACUDA_CUDA_TRY(cudaGetDevice(&d));
  return d;
}

Expected<const DeviceCaps*> Device::caps(int ordinal) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<DeviceCaps>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (ordinal >= 0 && ordinal < static_cast<int>(cache.size()) && cache[ordinal]) return cache[ordinal].get();
  auto n = count();
  if (!n) return n.error();
  if (n.value() == 0) return Status(Code::kNoDevice, "no CUDA device is visible");
  if (ordinal < 0 || ordinal >= n.value())
    return Status(Code::kInvalidArgument, "device ordinal = " + std::to_string(ordinal) + " is out of range [0, " +
                                              std::to_string(n.value()) + ")");
  cudaDeviceProp p{};
  BARACUDA_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  auto c = std::make_unique<DeviceCaps>();
  c->ordinal = ordinal;
  c->name = p.name;
  c->sm = p.major * 10 + p.minor;
  c->sm_count = p.multiProcessorCount;
  c->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  c->smem_per_block_optin = p.sharedMemPerBlockOptin;
  c->l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  c->global_mem_bytes = p.totalGlobalMem;
  c->memory_bus_bits = p.memoryBusWidth;
  if (static_cast<int>(cache.size()) < n.value()) cache.resize(n.value());
  cache[ordinal] = std::move(c);
  return cache[ordinal].get();
}

// ----------------------------------------------------------------------------- stream
Expected<Stream> Stream::create(int device) {
  if (device < 0) {
    auto cur = Device::current();
    if (!cur) return cur.error();
    device = cur.value();
  }
  int prev = 0;
  BARACUDA_CUDA_TRY(cudaGetDevice(&prev));
  BARACUDA_CUDA_TRY(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaSetDevice(prev);
  if (e != cudaSuccess) return cuda_status(e, "cudaStreamCreateWithFlags");
  return Stream(s, device, true);
}

Stream Stream::borrow(cudaStream_t s, int device) { return Stream(s, device, false); }

Stream::~Stream() {
  if (owned_ && stream_) cudaStreamDestroy(stream_);
}

Stream::Stream(Stream&& o) noexcept : stream_(o.stream_), device_(o.device_), owned_(o.owned_) {
  o.stream_ = nullptr;
  o.owned_ = false;
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (owned_ && stream_) cudaStreamDestroy(stream_);
    stream_ = o.stream_;
    device_ = o.device_;
    owned_ = o.owned_;
    o.stream_ = nullptr;
    o.owned_ = false;
  }
  return *this;
}

Status Stream::synchronize() const { return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

Expected<bool> Stream::is_capturing() const {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  BARACUDA_CUDA_TRY(cudaStreamIsCapturing(stream_, &st));
  return st != cudaStreamCaptureStatusNone;
}

// ----------------------------------------------------------------------------- event
Expected<Event> Event::create(bool timing) {
  cudaEvent_t e = nullptr;
  BARACUDA_CUDA_TRY(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(e);
}
Event::~Event() {
  if (ev_) cudaEventDestroy(ev_);
}
Event::Event(Event&& o) noexcept : ev_(o.ev_) { o.ev_ = nullptr; }
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (ev_) cudaEventDestroy(ev_);
    ev_ = o.ev_;
    o.ev_ = nullptr;
  }
  return *this;
}
Status Event::record(const Stream& s) const { return cuda_status(cudaEventRecord(ev_, s.handle()), "cudaEventRecord"); }
Status Event::synchronize() const { return cuda_status(cudaEventSynchronize(ev_), "cudaEventSynchronize"); }
Expected<float> Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  BARACUDA_CUDA_TRY(cudaEventElapsedTime(&ms, start.ev_, ev_));
  return ms;
}

// ----------------------------------------------------------------------------- memory
Expected<DeviceBuffer> DeviceBuffer::allocate(std::size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  BARACUDA_CUDA_TRY(cudaMalloc(&b.ptr_, bytes));
  b.bytes_ = bytes;
  return b;
}

Expected<DeviceBuffer> DeviceBuffer::allocate_async(std::size_t bytes, const Stream& stream) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  BARACUDA_CUDA_TRY(cudaMallocAsync(&b.ptr_, bytes, stream.handle()));
  b.bytes_ = bytes;
  b.async_ = true;
  b.async_stream_ = stream.handle();
  return b;
}

Status DeviceBuffer::release() {
  if (!ptr_) return Status::ok();
  // A stream-ordered buffer is freed on its stream; on error the memory is leaked rather
  // than freed synchronously (a synchronous free could race with queued work).
  cudaError_t e = async_ ? cudaFreeAsync(ptr_, async_stream_) : cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  return cuda_status(e, async_ ? "cudaFreeAsync" : "cudaFree");
}

DeviceBuffer::~DeviceBuffer() { (void)release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(o.ptr_), bytes_(o.bytes_), async_stream_(o.async_stream_), async_(o.async_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    (void)release();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    async_stream_ = o.async_stream_;
    async_ = o.async_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

namespace {
Status copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, const Stream& s, const char* what) {
  if (bytes == 0) return Status::ok();
  BARACUDA_TRY(cuda_status(cudaMemcpyAsync(dst, src, bytes, kind, s.handle()), what));
  return Status::ok();
}
}  // namespace

Status copy_to_device(void* dst, const void* src, std::size_t bytes, const Stream& s) {
  return copy(dst, src, bytes, cudaMemcpyHostToDevice, s, "copy_to_device");
}
Status copy_to_host(void* dst, const void* src, std::size_t bytes, const Stream& s) {
  BARACUDA_TRY(copy(dst, src, bytes, cudaMemcpyDeviceToHost, s, "copy_to_host"));
  return s.synchronize();  // the host reads dst next
}
Status copy_device_to_device(void* dst, const void* src, std::size_t bytes, const Stream& s) {
  return copy(dst, src, bytes, cudaMemcpyDeviceToDevice, s, "copy_device_to_device");
}
Status memset_device(void* dst, int value, std::size_t bytes, const Stream& s) {
  if (bytes == 0) return Status::ok();
  return cuda_status(cudaMemsetAsync(dst, value, bytes, s.handle()), "memset_device");
}

}  // namespace baracuda
