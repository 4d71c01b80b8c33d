// Select-time refusal tables for the unit tests of a plan family: from a descriptor the plan
// accepts (on sm90 caps), each case changes one field and expects select to refuse with a
// message naming that field and its value (and, with check_code, kInvalidArgument: the
// descriptor's own validation; candidate rejections, e.g. a stride no kernel takes, carry
// the code of the no-candidate error instead).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace baracuda::test {

template <class Desc>
struct Refusal {
  const char* category;  // "dtype", "shape", "stride", "axis", ...
  std::function<void(Desc&)> change;
  std::string needle;  // the field and its value
};

template <class PlanT>
void expect_select_refusals(const typename PlanT::Descriptor& valid,
                            const std::vector<Refusal<typename PlanT::Descriptor>>& cases, bool check_code = true) {
  const DeviceCaps caps = DeviceCaps::for_arch(90).value();
  auto ok = PlanT::select_for_caps(caps, valid);
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  for (const auto& c : cases) {
    auto d = valid;
    c.change(d);
    SCOPED_TRACE(std::string(c.category) + ": " + d.to_string());
    auto p = PlanT::select_for_caps(caps, d);
    ASSERT_FALSE(p.has_value()) << "accepted";
    if (check_code) EXPECT_EQ(p.error().code(), Code::kInvalidArgument) << p.error().to_string();
    EXPECT_NE(p.error().message().find(c.needle), std::string::npos) << "wanted '" << c.needle << "' in\n"
                                                                        << p.error().message();
  }
}

}  // namespace baracuda::test
