// Run-time refusal tables of the GEMM-family GPU tests (GemmPlan, IntGemmPlan, Fp8GemmPlan,
// GroupedGemmPlan): rows that change one field of valid args, plus the workspace rows when
// the plan needs workspace, checked by expect_run_refusals (outputs untouched).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gpu_harness.hpp"

namespace baracuda::test {

template <class Args>
struct ArgRefusalRow {
  std::string what;
  std::function<void(Args&)> change;
  Code code;
  std::string needle;
};

// `run(ws, args)` runs the plan; `buf` holds at least need + kWorkspaceAlignment bytes and
// each row runs with its first `need` bytes.
template <class Args>
void expect_arg_run_refusals(const std::string& plan, const Args& ok, const std::function<Status(Workspace, const Args&)>& run,
                             Workspace buf, std::size_t need, const std::vector<ArgRefusalRow<Args>>& table,
                             const std::vector<Untouched*>& outputs) {
  std::vector<RunRefusal> rows;
  for (const auto& r : table)
    rows.push_back({r.what,
                    [&run, &ok, buf, need, change = r.change] {
                      Args a = ok;
                      change(a);
                      return run(Workspace{buf.data, need}, a);
                    },
                    r.code, r.needle});
  if (need > 0) {
    auto more = workspace_refusals(plan, [&](Workspace w) { return run(w, ok); }, buf, need);
    rows.insert(rows.end(), more.begin(), more.end());
  } else {
    ::testing::Test::RecordProperty("workspace_rows", "skipped: the chosen algorithm needs no workspace");
  }
  expect_run_refusals(rows, outputs);
}

// Bytes of an output outside its logical elements (the ld padding) still hold the poison:
// the logical elements are zeroed in a poisoned copy and in `got`, then compared byte for byte.
inline ::testing::AssertionResult quant_padding_untouched(const reference::HostTensor& got, unsigned char poison) {
  reference::HostTensor want(got.layout()), g = got;
  std::memset(want.storage(), poison, want.storage_bytes());
  for (std::int64_t i = 0; i < got.layout().numel(); ++i) {
    want.set(i, 0.0);
    g.set(i, 0.0);
  }
  if (std::memcmp(want.storage(), g.storage(), want.storage_bytes()) != 0)
    return ::testing::AssertionFailure() << "bytes outside the logical elements (ld padding) were written";
  return ::testing::AssertionSuccess();
}

}  // namespace baracuda::test
