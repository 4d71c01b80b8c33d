// What this build carries: the CUDA architecture list given to CMake (BARACUDA_CUDA_ARCHS,
// comma-separated here),
// used by select() to reject kernels that have no code for the device.
#include <cstdlib>
#include <sstream>
#include <string>

#include "baracuda/core/runtime.hpp"

#ifndef BARACUDA_BUILT_ARCHS
#error "BARACUDA_BUILT_ARCHS must be defined by the build (e.g. \"80-real,90a-real,90-virtual\")"
#endif

namespace baracuda {

const char* build_arch_list() noexcept { return BARACUDA_BUILT_ARCHS; }

bool build_supports(int sm, bool arch_specific) noexcept {
  return arch_list_supports(BARACUDA_BUILT_ARCHS, sm, arch_specific);
}

bool arch_list_supports(const char* list, int sm, bool arch_specific) noexcept {
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // "<digits>[a|f][-real|-virtual]"; no suffix means both machine code and PTX.
    char* rest = nullptr;
    const long arch = std::strtol(item.c_str(), &rest, 10);
    if (rest == item.c_str()) continue;  // not an architecture entry
    const std::string suffix(rest);
    const bool a = !suffix.empty() && (suffix[0] == 'a' || suffix[0] == 'f');  // arch-specific code
    const bool real = suffix.find("-virtual") == std::string::npos;
    const bool virt = suffix.find("-real") == std::string::npos;
    if (arch_specific) {
      if (a && real && arch == sm) return true;
      continue;
    }
    if (a) {  // sm_NNa code runs only on NN
      if (arch == sm) return true;
      continue;
    }
    if (real && arch / 10 == sm / 10 && arch % 10 <= sm % 10) return true;  // same major, minor >=
    if (virt && arch <= sm) return true;                                     // PTX: JIT to newer
  }
  return false;
}

}  // namespace baracuda
