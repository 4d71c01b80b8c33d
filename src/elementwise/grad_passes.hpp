// The backward of a map with broadcast inputs (TernaryBackwardPlan, WhereBackwardPlan), one
// pass per requested gradient (the direct ones fused into one map where they can be, below):
//  * direct: the operand was not broadcast - one map writes the gradient tensor;
//  * reduced: the operand was broadcast - one map writes the per-element gradient densely
//    into the workspace (in `buf_dtype`), then broadcast_reduce.cuh's two passes (through
//    launch_binary_bwd_reduce with kind add, i.e. a plain sum) add it up over the broadcast
//    dims in a fixed order (deterministic) into the gradient - or, when the gradient's dtype
//    is narrower than buf_dtype, into an f32 buffer that one cast rounds into the gradient.
// Reduced passes run first, then the direct ones; a direct gradient written over one of the
// inputs (in place) runs last, so every read of that input comes before (check_grad_aliasing
// refuses two such gradients).
#pragma once

#include <array>
#include <functional>
#include <span>
#include <string>

#include "baracuda/core/runtime.hpp"
#include "elementwise/map_family.hpp"
#include "elementwise/map_params.hpp"

namespace baracuda::elementwise {

struct GradRequest {
  int which = 0;          // operand index, handed back to the launcher
  TensorLayout operand;   // the forward operand (its shape decides the reduction)
  TensorLayout grad;      // the gradient tensor
  const char* field = "";
  MapOperands map;        // the gradient's map with out[0] left empty (set by plan_grad_passes)
};

struct GradPass {
  int which = 0;
  bool reduce = false;
  bool cast = false;                // reduce into the f32 buffer, then cast into the gradient
  MapOperands ops;                  // layouts of the map (out[0]: the gradient or the dense buffer)
  MapParams map;
  BroadcastReduceParams sum;
  MapParams cast_map;
};

struct GradPasses {
  int num = 0;
  std::array<GradPass, 3> pass{};
  // Two or more direct gradients of the contiguous path that read the same inputs run as one
  // map writing all of them (each input read once), when the caller gives a fused launcher
  // and no gradient is written over an input. fused[j]: the pass index of output j.
  int num_fused = 0;
  std::array<int, 3> fused{};
  MapParams fused_map;
  DType grad_dtype = DType::kF32;
  DType buf_dtype = DType::kF32;
  std::size_t partial_offset = 0, kept_offset = 0, workspace = 0;
  std::string rejection;  // why `path` cannot run the maps ("" = it can)
};

bool grad_needs_reduction(const TensorLayout& operand, const TensorLayout& out);
GradPasses plan_grad_passes(const TensorLayout& grad_out, std::span<const GradRequest> requests, DType buf_dtype,
                            MapPath path, const DeviceCaps& caps);

// ptrs[k]: pass k's map pointers (out[0] = its gradient tensor, in[] = its inputs).
// With several passes, at most one gradient written directly may overlap an input.
Status check_grad_aliasing(const GradPasses& g, std::span<const MapPointers> ptrs);

// Runs the passes: launch_map(which, to_buffer, params) runs one gradient map (to_buffer:
// its output is the dense buffer in buf_dtype instead of the gradient's dtype).
using GradMapLauncher = std::function<Status(int which, bool to_buffer, const MapParams& p)>;
// launch_fused(whiches, params) runs the direct gradients `whiches` (output j of the map is
// gradient whiches[j]) in one map; empty: every gradient runs its own pass.
using GradFusedLauncher = std::function<Status(std::span<const int> whiches, const MapParams& p)>;
Status run_grad_passes(const GradPasses& g, std::span<const MapPointers> ptrs, Workspace ws, cudaStream_t s,
                       const GradMapLauncher& launch_map, const GradFusedLauncher& launch_fused = {});

}  // namespace baracuda::elementwise
