#include "test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace baracuda::test {

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    if (const char* s = std::getenv("BARACUDA_TEST_SEED")) return static_cast<std::uint64_t>(std::strtoull(s, nullptr, 0));
    return static_cast<std::uint64_t>(std::random_device{}()) << 32 ^ std::random_device{}();
  }();
  return seed;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g(test_seed());
  return g;
}

void fill_random(reference::HostTensor& t, double lo, double hi, Fill fill) {
  reference::fill_random(t, rng(), lo, hi, fill == Fill::kWithEdges);
}

::testing::AssertionResult check_close(const reference::HostTensor& got, const reference::Result& want,
                                       const std::string& what) {
  auto c = reference::compare(got, want, false);
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << c.detail << " (seed " << test_seed() << ")";
}

::testing::AssertionResult check_exact(const reference::HostTensor& got, const reference::Result& want,
                                       const std::string& what) {
  auto c = reference::compare(got, want, true);
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << c.detail << " (seed " << test_seed() << ")";
}

bool gpu_available() {
  static const bool yes = [] {
    auto n = Device::count();
    return n.has_value() && n.value() > 0;
  }();
  return yes;
}

DeviceTensor::DeviceTensor(const reference::HostTensor& host, const Stream& stream)
    : bytes_(host.storage_bytes()), origin_(host.origin_bytes()) {
  auto b = DeviceBuffer::allocate(bytes_ + 2 * kGuard);
  if (!b) throw std::runtime_error("DeviceTensor: " + b.error().to_string());
  buf_ = std::move(b.value());
  std::vector<unsigned char> guard(kGuard, kGuardByte);
  auto* base = static_cast<unsigned char*>(buf_.data());
  if (!copy_to_device(base, guard.data(), kGuard, stream) ||
      !copy_to_device(base + kGuard + bytes_, guard.data(), kGuard, stream))
    throw std::runtime_error("DeviceTensor: guard upload failed");
  upload(host, stream);
}

void* DeviceTensor::storage() const { return static_cast<unsigned char*>(buf_.data()) + kGuard; }
void* DeviceTensor::data() const { return static_cast<unsigned char*>(storage()) + origin_; }

void DeviceTensor::upload(const reference::HostTensor& host, const Stream& stream) {
  Status st = copy_to_device(storage(), host.storage(), bytes_, stream);
  if (!st) throw std::runtime_error("DeviceTensor::upload: " + st.to_string());
  st = stream.synchronize();
  if (!st) throw std::runtime_error("DeviceTensor::upload: " + st.to_string());
}

void DeviceTensor::poison(unsigned char byte, const Stream& stream) {
  Status st = memset_device(storage(), byte, bytes_, stream);
  if (!st) throw std::runtime_error("DeviceTensor::poison: " + st.to_string());
}

::testing::AssertionResult DeviceTensor::download(reference::HostTensor& host, const Stream& stream) const {
  // the storage straight into host (no staging copy: the > 2^31-element tests download
  // several GB), then the two guards
  unsigned char guards[2 * kGuard];
  const auto* base = static_cast<const unsigned char*>(buf_.data());
  Status st = stream.synchronize();
  if (!st) return ::testing::AssertionFailure() << "kernel failed: " << st.to_string();
  st = copy_to_host(host.storage(), base + kGuard, bytes_, stream);
  if (st) st = copy_to_host(guards, base, kGuard, stream);
  if (st) st = copy_to_host(guards + kGuard, base + kGuard + bytes_, kGuard, stream);
  if (!st) return ::testing::AssertionFailure() << "download failed: " << st.to_string();
  for (std::size_t i = 0; i < kGuard; ++i) {
    if (guards[i] != kGuardByte) return ::testing::AssertionFailure() << "guard byte " << i << " before the output was overwritten";
    if (guards[kGuard + i] != kGuardByte)
      return ::testing::AssertionFailure() << "guard byte " << i << " after the output was overwritten";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace baracuda::test
