// The tensors the GPU tests of the along-an-axis families (softmax, scan) run over: rows of
// 1, 7, 1000, 4096, 65536 and 262144 elements, many rows, axes last / middle / first,
// strided views (padded rows, permuted kept dims, a transposed axis), in place, empty.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/tensor.hpp"

namespace baracuda::test {

struct AxisCase {
  std::string name;
  TensorLayout x;
  int axis = -1;
  bool in_place = false;
};

inline std::vector<AxisCase> axis_cases(DType t) {
  auto c = [&](std::vector<std::int64_t> s) { return TensorLayout::contiguous(t, s); };
  auto st = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> str) { return TensorLayout::strided(t, s, str); };
  return {
      {"len1", c({64, 1})},
      {"len7", c({33, 7})},
      {"len1000", c({17, 1000})},
      {"len4096", c({9, 4096})},
      {"len65536", c({3, 65536})},
      {"len262144", c({2, 262144})},
      {"len_odd", c({5, 3001})},
      {"many_rows", c({40000, 33})},
      {"many_rows_vec", c({20000, 64})},
      {"rank1", c({1000}), 0},
      {"axis_middle", c({4, 37, 19}), 1},
      {"axis_first", c({37, 5, 6}), 0},
      {"axis_middle_long", c({3, 5000, 7}), 1},
      {"axis_middle_neg", c({2, 300, 3, 4}), -3},
      {"padded_rows", st({64, 256}, {512, 1})},
      {"permuted_kept", st({8, 16, 128}, {128, 1024, 1})},
      {"transposed_axis", st({256, 64}, {1, 256})},
      {"in_place", c({31, 2048}), -1, true},
      {"in_place_axis0", c({300, 9}), 0, true},
      {"empty_rows", c({0, 16})},
      {"empty_len", c({16, 0})},
  };
}

}  // namespace baracuda::test
