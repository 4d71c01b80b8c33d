// Consumer smoke test: include the installed umbrella header, choose a plan from a made-up
// sm_90 caps value (no GPU needed) and print the chosen SKU. Exit 0 iff that worked.
#include <baracuda/baracuda.hpp>

#include <cstdio>

int main() {
  auto caps = baracuda::DeviceCaps::for_arch(90);
  if (!caps) {
    std::fprintf(stderr, "consumer: DeviceCaps::for_arch(90): %s\n", caps.error().to_string().c_str());
    return 1;
  }
  baracuda::UnaryDescriptor desc;
  desc.kind = baracuda::UnaryKind::kGeluErf;
  desc.x = baracuda::TensorLayout::contiguous(baracuda::DType::kBF16, {4096, 8192});
  desc.y = desc.x;

  auto plan = baracuda::UnaryPlan::select_for_caps(caps.value(), desc);
  if (!plan) {
    std::fprintf(stderr, "consumer: select_for_caps: %s\n", plan.error().to_string().c_str());
    return 1;
  }
  std::printf("consumer: %s -> %s\n", desc.to_string().c_str(), plan->sku().name().c_str());
  return 0;
}
