#include "gpu_harness.hpp"

#include <mutex>

namespace baracuda::test {

const Stream& test_stream() {
  static Stream s = [] {
    auto st = Stream::create(0);
    if (!st) throw std::runtime_error(st.error().to_string());
    return std::move(st.value());
  }();
  return s;
}

const DeviceCaps& test_caps() {
  static const DeviceCaps* c = Device::caps(0).value();
  return *c;
}

Workspace test_workspace(std::size_t bytes) {
  static std::mutex mu;
  static DeviceBuffer buf;
  std::lock_guard<std::mutex> lock(mu);
  if (bytes == 0) return {};
  if (buf.bytes() < bytes) {
    (void)test_stream().synchronize();
    auto b = DeviceBuffer::allocate(bytes);
    if (!b) throw std::runtime_error(b.error().to_string());
    buf = std::move(b.value());
    // Fresh workspace content should not matter: fill it with garbage.
    (void)memset_device(buf.data(), 0x7B, bytes, test_stream());
  }
  return {buf.data(), bytes};
}

}  // namespace baracuda::test
