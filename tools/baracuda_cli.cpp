// `baracuda`: the command-line tool.
//   baracuda info [--arch sm_80|sm_89|sm_90]   device caps and the SKU select() picks per family x dtype
//   baracuda check [--seed N]                  every plan and SKU on small random inputs vs the reference
//   baracuda bench [bench args]                the benchmark (same as baracuda-bench)
// Without a GPU only `info --arch` works; the others exit non-zero with a message.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <string_view>

#include "baracuda/baracuda.hpp"
#include "bench.hpp"
#include "families.hpp"

namespace {

using namespace baracuda;

int usage() {
  std::fprintf(stderr,
               "usage: baracuda info [--arch sm_80|sm_89|sm_90]\n"
               "       baracuda check [--seed N]\n"
               "       baracuda bench [--suite NAME] [--op OP] [--dtype DT] [--shape MxN] [--json FILE] ...\n");
  return 2;
}

bool have_gpu() {
  auto n = Device::count();
  return n.has_value() && n.value() > 0;
}

void print_caps(const DeviceCaps& c) {
  std::printf("device: %s (%s%s)\n", c.name.c_str(), c.arch_name().c_str(), c.ordinal < 0 ? ", synthetic caps" : "");
  std::printf("  SMs %d, max threads/SM %d, smem/block opt-in %zu KiB, L2 %zu MiB, memory %zu GiB\n", c.sm_count,
              c.max_threads_per_sm, c.smem_per_block_optin / 1024, c.l2_bytes >> 20, c.global_mem_bytes >> 30);
  std::printf("  library built for: %s%s\n\n", build_arch_list(),
              build_supports(c.sm, false) ? "" : "  (no code for this arch in this build: the table shows the decision only)");
}

int cmd_info(int argc, char** argv) {
  int arch = 0;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--arch" && i + 1 < argc) {
      std::string v = argv[++i];
      if (v.rfind("sm_", 0) == 0) v = v.substr(3);
      else if (v.rfind("sm", 0) == 0) v = v.substr(2);
      arch = std::atoi(v.c_str());
    } else {
      return usage();
    }
  }
  DeviceCaps caps;
  if (arch) {
    auto c = DeviceCaps::for_arch(arch);
    if (!c) {
      std::fprintf(stderr, "baracuda info: %s\n", c.error().to_string().c_str());
      return 2;
    }
    caps = c.value();
  } else {
    if (!have_gpu()) {
      std::fprintf(stderr, "baracuda info: no CUDA device visible; use --arch sm_80|sm_89|sm_90 for a dispatch table without a GPU\n");
      return 1;
    }
    caps = *Device::caps(0).value();
  }
  print_caps(caps);
  std::printf("%-16s %-5s %-26s %s\n", "family", "dtype", "layout", "sku (workspace bytes)");
  for (const auto& f : tools::families())
    for (DType t : f.dtypes)
      for (const auto& r : f.info(caps, t))
        std::printf("%-16s %-5s %-26s %s%s\n", r.family.c_str(), r.dtype.c_str(), r.layout.c_str(), r.sku.c_str(),
                    r.workspace ? (" (" + std::to_string(r.workspace) + ")").c_str() : "");
  for (const auto& f : tools::families())
    if (!f.kinds.empty()) std::printf("kinds of %s: %s\n", f.name.c_str(), f.kinds.c_str());
  return 0;
}

int cmd_check(int argc, char** argv) {
  std::uint64_t seed = std::random_device{}();
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 0);
    else return usage();
  }
  if (!have_gpu()) {
    std::fprintf(stderr, "baracuda check: no CUDA device visible (check runs every SKU on the GPU)\n");
    return 1;
  }
  auto stream = Stream::create(0);
  if (!stream) {
    std::fprintf(stderr, "baracuda check: %s\n", stream.error().to_string().c_str());
    return 1;
  }
  print_caps(*Device::caps(0).value());
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  int failed_skus = 0, total_skus = 0;
  for (const auto& f : tools::families())
    for (DType t : f.dtypes) {
      // Aggregate per SKU: PASS when every problem it ran passed.
      std::map<std::string, std::pair<int, std::string>> per_sku;  // sku -> (problems run, first failure)
      std::map<std::string, bool> ok;
      for (const auto& r : f.check(stream.value(), t, rng)) {
        auto& e = per_sku[r.sku];
        ++e.first;
        if (!ok.count(r.sku)) ok[r.sku] = true;
        if (!r.pass && ok[r.sku]) {
          ok[r.sku] = false;
          e.second = r.problem + ": " + r.detail;
        }
      }
      for (const auto& [sku, e] : per_sku) {
        ++total_skus;
        failed_skus += !ok[sku];
        std::printf("%s %-48s %3d problems%s%s\n", ok[sku] ? "PASS" : "FAIL", sku.c_str(), e.first,
                    ok[sku] ? "" : "  first failure: ", e.second.c_str());
      }
    }
  std::printf("\n%d passed, %d failed\n", total_skus - failed_skus, failed_skus);
  return failed_skus ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string_view cmd = argv[1];
  if (cmd == "info") return cmd_info(argc - 2, argv + 2);
  if (cmd == "check") return cmd_check(argc - 2, argv + 2);
  if (cmd == "bench") return baracuda::bench::run_bench(argc - 1, argv + 1);
  return usage();
}
