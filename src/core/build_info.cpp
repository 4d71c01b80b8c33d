// What this build carries: the CUDA architecture list given to CMake (BARACUDA_CUDA_ARCHS,
// comma-separated here),
// used by select() to reject kernels that have no code for the device.
#include <sstream>
#include <string>

#include "baracuda/core/runtime.hpp"

#ifndef BARACUDA_BUILT_ARCHS
#error "BARACUDA_BUILT_ARCHS must be defined by the build (e.g. \"80-real,90a-real,90-virtual\")"
#endif

namespace baracuda {

const char* build_arch_list() noexcept { return BARACUDA_BUILT_ARCHS; }

bool build_supports(int sm, bool arch_specific) noexcept {
  std::stringstream ss(BARACUDA_BUILT_ARCHS);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    // CMake CUDA_ARCHITECTURES entries: "90a-real", "80-virtual", "89" (= real + virtual).
    bool real = item.find("-virtual") == std::string::npos;
    bool virt = item.find("-real") == std::string::npos;
    bool a = item.find('a') != std::string::npos;
    int arch = std::stoi(item);
    if (arch_specific) {
      if (a && real && arch == sm) return true;
      continue;
    }
    if (real && arch / 10 == sm / 10 && arch % 10 <= sm % 10 && !(a && arch != sm)) return true;
    if (virt && !a && arch <= sm) return true;
    if (virt && a && arch == sm) return true;
  }
  return false;
}

}  // namespace baracuda
