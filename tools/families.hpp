// The families the `baracuda` tool knows: for `info`, the SKU select() picks per family x
// dtype x representative layout; for `check`, every SKU run on small random inputs on the
// GPU and compared with baracuda::reference. A new family adds one entry in families.cpp.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace baracuda::tools {

struct InfoRow {
  std::string family, dtype, layout, sku;  // sku holds the error when select fails
  std::size_t workspace = 0;
};

struct CheckRow {
  std::string sku;
  std::string problem;  // the descriptor
  bool pass = false;
  std::string detail;
};

struct FamilyEntry {
  std::string name;
  std::vector<DType> dtypes;
  std::string kinds;  // the kinds the family's plans take ("" when it has none)
  std::function<std::vector<InfoRow>(const DeviceCaps&, DType)> info;
  std::function<std::vector<CheckRow>(const Stream&, DType, std::mt19937_64&)> check;
};

const std::vector<FamilyEntry>& families();

}  // namespace baracuda::tools
