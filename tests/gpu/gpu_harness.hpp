// GPU test harness: runs a plan under every SKU that accepts the descriptor (forcing each
// in turn), on poisoned outputs with guard bytes, and checks against the oracle.
#pragma once

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace baracuda::test {

const Stream& test_stream();
const DeviceCaps& test_caps();

// A workspace buffer of at least `bytes` (shared by the tests of one process).
Workspace test_workspace(std::size_t bytes);

// For every candidate of `desc` that accepts on this device: select it by forcing its
// name, then call `reset()` (upload inputs, poison outputs), `launch(plan, workspace)` and
// `verify(sku_name)`. Returns the number of SKUs run (the test fails when none accepts).
// `not_forced` (optional) gives the reason not to force an accepting SKU on this descriptor
// ("" = force it), e.g. a kernel that walks a row with one thread on rows of 2^30 elements:
// such a SKU is printed with its reason and not counted as run.
template <class PlanT>
int for_each_sku(const typename PlanT::Descriptor& desc, const std::function<void()>& reset,
                 const std::function<Status(const PlanT&, Workspace)>& launch,
                 const std::function<void(const std::string&)>& verify,
                 const std::function<std::string(const KernelSku&)>& not_forced = nullptr) {
  auto reports = PlanT::candidates(test_caps(), desc);
  EXPECT_TRUE(reports.has_value()) << (reports ? "" : reports.error().to_string());
  if (!reports) return 0;
  int ran = 0;
  for (const auto& r : reports.value()) {
    if (!r.rejection.empty()) continue;
    if (const std::string why = not_forced ? not_forced(r.sku) : std::string(); !why.empty()) {
      std::cout << "  not forced: " << r.sku.name() << " on " << desc.to_string() << ": " << why << "\n";
      continue;
    }
    PlanPreference pref;
    pref.force_sku = r.sku.name();
    auto plan = PlanT::select(test_stream(), desc, pref);
    EXPECT_TRUE(plan.has_value()) << r.sku.name() << ": " << (plan ? "" : plan.error().to_string());
    if (!plan) continue;
    EXPECT_EQ(plan->sku().name(), r.sku.name());
    reset();
    Status st = launch(plan.value(), test_workspace(plan->workspace_size()));
    EXPECT_TRUE(st.is_ok()) << r.sku.name() << ": " << st.to_string();
    if (!st) continue;
    verify(r.sku.name());
    ++ran;
  }
  EXPECT_GT(ran, 0) << "no SKU accepts " << desc.to_string();
  return ran;
}

// A device tensor filled with 0x5A that must still hold only 0x5A after a refused run:
// bad args are refused before any launch and the outputs stay byte-for-byte untouched.
class Untouched {
 public:
  explicit Untouched(const TensorLayout& l);
  void* data() const { return dev_.data(); }
  ::testing::AssertionResult check();

 private:
  reference::HostTensor host_;
  DeviceTensor dev_;
};

// st has `code` and its message contains `needle`.
void expect_refused(const Status& st, Code code, const std::string& needle);

// One run-time refusal of a table: `run` calls plan.run() with one bad argument (null,
// misaligned, unsafely aliased pointer, or a too-small workspace).
struct RunRefusal {
  std::string what;
  std::function<Status()> run;
  Code code;
  std::string needle;  // the field and its value
};
// Every row is refused with its code and needle, then every output still holds its poison.
void expect_run_refusals(const std::vector<RunRefusal>& rows, const std::vector<Untouched*>& outputs);
// The workspace rows of a plan whose workspace_size() is `need` > 0: need - 1 bytes, a null
// and a misaligned buffer. `run(ws)` runs it with otherwise valid args; `buf` holds at least
// need + kWorkspaceAlignment bytes.
std::vector<RunRefusal> workspace_refusals(const std::string& plan, const std::function<Status(Workspace)>& run,
                                           Workspace buf, std::size_t need);

}  // namespace baracuda::test
