// Family-independent parts of select() and run(): preference filters, logging, the
// workspace / device / capture checks.
#include <cstdio>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>

#include "core/plan_impl.hpp"

namespace baracuda::detail {

std::string preference_rejection(const KernelSku& sku, std::size_t workspace, const DeviceCaps& caps,
                                 const PlanPreference& pref, bool have_device) {
  const std::string name = sku.name();
  if (!pref.force_sku.empty() && !sku_glob_match(pref.force_sku, name))
    return "not matched by PlanPreference.force_sku = '" + pref.force_sku + "'";
  for (const auto& skip : pref.skip_skus)
    if (sku_glob_match(skip, name)) return "skipped by PlanPreference.skip_skus entry '" + skip + "'";
  if ((pref.backends & backend_bit(sku.backend)) == 0)
    return std::string("backend ") + backend_name(sku.backend) + " excluded by PlanPreference.backends";
  if (pref.deterministic && !sku.precision.deterministic)
    return "not deterministic, and PlanPreference.deterministic = true";
  if (pref.require_graph_capturable && !sku.graph_capturable)
    return "not graph-capturable, and PlanPreference.require_graph_capturable = true";
  if (sku.precision.uses_tf32 && !pref.math.allow_tf32) return "uses TF32, and PlanPreference.math.allow_tf32 = false";
  if (sku.precision.reduced_precision_reduction && !pref.math.allow_reduced_precision_reduction)
    return "reduces in reduced precision, and PlanPreference.math.allow_reduced_precision_reduction = false";
  if (sku.precision.fast_math && !pref.math.allow_fast_math)
    return "uses approximate math, and PlanPreference.math.allow_fast_math = false";
  if (workspace > pref.max_workspace_bytes)
    return "needs " + std::to_string(workspace) + " workspace bytes > PlanPreference.max_workspace_bytes = " +
           std::to_string(pref.max_workspace_bytes);
  if (caps.sm < sku.min_sm)
    return "needs sm" + std::to_string(sku.min_sm) + "+, device is " + caps.arch_name();
  if (sku.arch_specific && caps.sm != sku.min_sm)
    return "sm" + std::to_string(sku.min_sm) + "a code runs only on sm" + std::to_string(sku.min_sm) + ", device is " +
           caps.arch_name();
  // The build's architecture list matters only on a real device: a caps-only decision
  // (select_for_caps) describes the algorithm, whatever this binary carries.
  if (have_device && !build_supports(caps.sm, sku.arch_specific))
    return std::string("not built for ") + caps.arch_name() + (sku.arch_specific ? "a" : "") +
           " (configure with BARACUDA_CUDA_ARCHS including it; built: " + build_arch_list() + ")";
  return {};
}

std::string format_reports(const std::vector<CandidateReport>& reports) {
  std::string s;
  for (const auto& r : reports) {
    s += "\n  " + r.sku.name() + ": " +
         (!r.rejection.empty() ? r.rejection : r.deferral.empty() ? std::string("accepts") : "accepts, deferred: " + r.deferral);
  }
  return s;
}

void log_dispatch(const char* family, const std::string& desc, const std::vector<CandidateReport>& reports,
                  int chosen) {
  std::string line = std::string("[baracuda dispatch] ") + family + " " + desc + " -> " +
                     (chosen >= 0 ? reports[chosen].sku.name() : std::string("NONE"));
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (static_cast<int>(i) == chosen) continue;
    if (!reports[i].rejection.empty()) line += " | rejected " + reports[i].sku.name() + ": " + reports[i].rejection;
    else if (!reports[i].deferral.empty()) line += " | deferred " + reports[i].sku.name() + ": " + reports[i].deferral;
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s\n", line.c_str());
}

Status check_workspace(Workspace ws, std::size_t needed) {
  if (needed == 0) return Status::ok();
  if (ws.bytes < needed)
    return Status(Code::kWorkspaceTooSmall, "workspace.bytes = " + std::to_string(ws.bytes) + " is below the " +
                                                std::to_string(needed) + " bytes workspace_size() requires");
  if (ws.data == nullptr) return Status(Code::kInvalidArgument, "workspace.data is null but " + std::to_string(needed) + " bytes are required");
  if (reinterpret_cast<std::uintptr_t>(ws.data) % kWorkspaceAlignment != 0)
    return Status(Code::kMisaligned, "workspace.data is not " + std::to_string(kWorkspaceAlignment) + "-byte aligned");
  return Status::ok();
}

Status check_stream_device(int plan_device, int stream_device) {
  if (plan_device < 0)
    return Status(Code::kInvalidArgument, "run: the plan was selected from caps alone (select_for_caps); select it on a stream to run");
  if (plan_device != stream_device)
    return Status(Code::kInvalidArgument, "run: stream.device = " + std::to_string(stream_device) +
                                              " differs from the device the plan was selected for (" +
                                              std::to_string(plan_device) + ")");
  return Status::ok();
}

Expected<bool> stream_is_capturing(const Stream& stream) { return stream.is_capturing(); }

}  // namespace baracuda::detail
