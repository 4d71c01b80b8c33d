// Shared by the *Reference.TorchEdgeValues tests: a reference result against PyTorch's values
// (NaN matches NaN, +-inf and 0 exactly, anything else to 1e-12 relative; the sign of a zero
// is not checked).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace baracuda::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline void expect_torch_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i] << ", torch NaN";
    else if (std::isinf(want[i]) || want[i] == 0) EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    else EXPECT_NEAR(got[i], want[i], 1e-12 * std::fabs(want[i])) << what << " [" << i << "]";
  }
}

inline std::string list_string(const std::vector<double>& v) {
  std::string s = "[";
  for (double d : v) s += std::to_string(d) + ",";
  return s + "]";
}

}  // namespace baracuda::test
