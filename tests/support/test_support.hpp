// Test support shared by the unit and GPU tests: seeded random fills (seed printed on
// failure), edge values, device tensors with guard bytes and poisoned outputs, the
// tolerance policy and the zero-trust check.
//
// The tolerance policy itself lives in baracuda/reference/compare.hpp.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::test {

// The seed of this process (BARACUDA_TEST_SEED, else random); printed by every failure.
std::uint64_t test_seed();
std::mt19937_64& rng();

enum class Fill {
  kUniform,      // uniform in [lo, hi]
  kWithEdges,    // uniform plus +-0, +-inf, NaN, subnormals, huge and tiny magnitudes sprinkled in
};
void fill_random(reference::HostTensor& t, double lo, double hi, Fill fill = Fill::kUniform);

::testing::AssertionResult check_close(const reference::HostTensor& got, const reference::Result& want,
                                       const std::string& what);
// Bit-exact comparison (casts, data movement).
::testing::AssertionResult check_exact(const reference::HostTensor& got, const reference::Result& want,
                                       const std::string& what);

// ------------------------------------------------------------------ GPU helpers
bool gpu_available();
#define BARACUDA_REQUIRE_GPU()                                                  \
  do {                                                                          \
    if (!::baracuda::test::gpu_available()) GTEST_SKIP() << "no CUDA device visible: GPU test skipped"; \
  } while (0)

// A device copy of a HostTensor's storage with guard bytes on both sides.
class DeviceTensor {
 public:
  static constexpr std::size_t kGuard = 256;
  static constexpr unsigned char kGuardByte = 0xA5;
  DeviceTensor(const reference::HostTensor& host, const Stream& stream);
  void* data() const;  // element 0 (aligned as the host layout's alignment allows: 256-byte base)
  // Overwrites the tensor's storage with `byte` (poison) - guards untouched.
  void poison(unsigned char byte, const Stream& stream);
  void upload(const reference::HostTensor& host, const Stream& stream);
  // Copies the storage back into `host` and checks the guards are intact.
  ::testing::AssertionResult download(reference::HostTensor& host, const Stream& stream) const;
  std::size_t storage_bytes() const { return bytes_; }
  void* storage() const;

 private:
  DeviceBuffer buf_;
  std::size_t bytes_ = 0;
  std::size_t origin_ = 0;
};

}  // namespace baracuda::test
