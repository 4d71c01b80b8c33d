// GroupedGemmPlan: G GEMMs of different M sharing N and K, as an MoE layer's expert matmuls,
// from a contiguous packing:
//   A: sum_g M_g x K, row-major, ld K (the tokens of group g are rows [off_g, off_g + M_g))
//   B: G weights of K x N stacked, weight g at g * K * N elements: row-major K x N (ld N), or
//      column-major (ld K: the [N, K] row-major weight of torch.nn.Linear read as K x N)
//   D: sum_g M_g x N, row-major, ld N;  D_g = alpha * A_g B_g.
// The group sizes come from the host array `group_m` in the descriptor (the plan is shaped
// by them). Groups of M = 0 are skipped. f64, f32 (strict), f16, bf16 as GemmPlan.
//
// select prepares one cuBLASLt GEMM per distinct (M_g, alignment of the group's pointers)
// (the heuristic runs once for each); run() loops over the groups issuing cuBLASLt GEMMs on
// the caller's stream: no allocation, no synchronization, graph-capturable.
// Open: group sizes from a device array of offsets at run time (would need cuBLASLt's
// grouped API or our own kernel: a host loop cannot read device sizes without a sync).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/gemm.hpp"

namespace baracuda {

struct GroupedGemmDescriptor {
  DType dtype = DType::kBF16;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::vector<std::int64_t> group_m;          // M_g >= 0, one per group
  MatrixOrder b_order = MatrixOrder::kRowMajor;  // each B_g (K x N)
  int alignment = 16;                         // bytes promised for the a, b, d pointers

  std::int64_t groups() const noexcept { return static_cast<std::int64_t>(group_m.size()); }
  std::int64_t total_m() const noexcept;
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const GroupedGemmDescriptor&, const GroupedGemmDescriptor&) = default;
};

struct GroupedGemmArgs {
  const void* a = nullptr;  // sum M x K
  const void* b = nullptr;  // G x K x N
  void* d = nullptr;        // sum M x N
  double alpha = 1.0;
};
using GroupedGemmPlan = Plan<GroupedGemmDescriptor, GroupedGemmArgs>;

// Group g's GEMM as a GemmDescriptor (M_g x K times K x N into M_g x N; the reference and
// the plan share it). `alignment` is the caller's promise for the group's pointers.
GemmDescriptor grouped_gemm_group(const GroupedGemmDescriptor& d, std::int64_t g, int alignment);

extern template class Plan<GroupedGemmDescriptor, GroupedGemmArgs>;

}  // namespace baracuda
