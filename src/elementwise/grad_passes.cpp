#include "elementwise/grad_passes.hpp"

#include <algorithm>

#include "core/workspace_align.hpp"
#include "elementwise/checks.hpp"
#include "elementwise/launch.hpp"

namespace baracuda::elementwise {

namespace {

// The sum over the broadcast dims of `operand`, read from the dense buffer `dense` (the
// forward output's shape) and stored at `dst`'s strides: dims ordered [reduced..., kept...]
// as broadcast_reduce.cuh expects.
BroadcastReduceParams make_sum_params(const TensorLayout& dense, const TensorLayout& operand, const TensorLayout& dst,
                                      const DeviceCaps& caps) {
  const TensorLayout db = broadcast_or_self(dst, dense);
  const int rank_diff = dense.rank - operand.rank;
  auto reduced_dim = [&](int dim) {
    const std::int64_t xs = dim < rank_diff ? 1 : operand.shape[dim - rank_diff];
    return dense.shape[dim] > 1 && xs == 1;
  };
  int order[kMaxRank], n = 0;
  for (int dim = 0; dim < dense.rank; ++dim)
    if (reduced_dim(dim)) order[n++] = dim;
  const int num_reduced = n;
  for (int dim = 0; dim < dense.rank; ++dim)
    if (!reduced_dim(dim) && dense.shape[dim] != 1) order[n++] = dim;
  BroadcastReduceParams p;
  p.which = 0;
  p.split_index = true;
  p.rank = n;
  p.reduced_rank = num_reduced;
  p.kept = p.reduced = 1;
  for (int i = 0; i < n; ++i) {
    const int dim = order[i];
    p.shape[i] = dense.shape[dim];
    p.strides[0][i] = dense.strides[dim];
    if (i < num_reduced) {
      p.reduced *= dense.shape[dim];
    } else {
      p.kept_shape[p.kept_rank] = dense.shape[dim];
      p.kept_strides[p.kept_rank++] = db.strides[dim];
      p.kept *= dense.shape[dim];
    }
  }
  if (dense.numel() == 0) {  // a zero-size dim: nothing to add, the gradient is zeros
    const TensorLayout ob = broadcast_or_self(operand, dense);
    p.reduced = 0;
    p.kept = operand.numel();
    p.rank = p.kept_rank = 0;
    for (int dim = 0; dim < ob.rank; ++dim)
      if (dense.shape[dim] != 0 && ob.shape[dim] > 1) {
        p.kept_shape[p.kept_rank] = ob.shape[dim];
        p.kept_strides[p.kept_rank++] = db.strides[dim];
      }
  }
  const std::int64_t target = static_cast<std::int64_t>(std::max(caps.sm_count, 1)) * 2048 * 2;
  std::int64_t chunks = p.kept > 0 ? (target + p.kept - 1) / p.kept : 1;
  chunks = std::max<std::int64_t>(1, std::min({chunks, (p.reduced + 15) / 16, std::int64_t{65535}}));
  p.chunk_len = p.reduced > 0 ? (p.reduced + chunks - 1) / chunks : 0;
  p.chunks = p.reduced > 0 ? (p.reduced + p.chunk_len - 1) / p.chunk_len : 0;
  return p;
}

MapPath best_path(const MapOperands& ops) {
  return map_path_rejection(ops, MapPath::kVecContig).empty() ? MapPath::kVecContig : MapPath::kStrided64;
}

// The direct passes of the contiguous path as one map, when they read the same inputs.
void plan_fused_pass(GradPasses& g, MapPath path) {
  if (path != MapPath::kVecContig) return;
  MapOperands ops;
  int n = 0;
  for (int k = 0; k < g.num; ++k) {
    const GradPass& p = g.pass[static_cast<std::size_t>(k)];
    if (p.reduce) continue;
    if (n == 0) {
      ops = p.ops;
      ops.num_out = 0;
    } else {
      if (p.ops.num_in != ops.num_in) return;
      for (int i = 0; i < ops.num_in; ++i)
        if (!(p.ops.in[i].layout == ops.in[i].layout)) return;
    }
    ops.out[static_cast<std::size_t>(ops.num_out++)] = p.ops.out[0];
    g.fused[static_cast<std::size_t>(n++)] = k;
  }
  if (n < 2 || !map_path_rejection(ops, path).empty()) return;
  g.num_fused = n;
  g.fused_map = make_map_params(ops, path, 0);
}

}  // namespace

bool grad_needs_reduction(const TensorLayout& operand, const TensorLayout& out) { return operand.numel() != out.numel(); }

GradPasses plan_grad_passes(const TensorLayout& grad_out, std::span<const GradRequest> requests, DType buf_dtype,
                            MapPath path, const DeviceCaps& caps) {
  GradPasses g;
  g.grad_dtype = grad_out.dtype;
  g.buf_dtype = buf_dtype;
  const TensorLayout dense = TensorLayout::contiguous(buf_dtype, grad_out.shape_span());
  const std::size_t buf_bytes = dtype_size(buf_dtype);  // an element of the dense / kept buffers
  std::size_t partial = 0, kept = 0;
  bool any_reduce = false;
  for (const GradRequest& r : requests) {
    GradPass& p = g.pass[static_cast<std::size_t>(g.num++)];
    p.which = r.which;
    p.reduce = grad_needs_reduction(r.operand, grad_out);
    p.ops = r.map;
    p.ops.num_out = 1;
    if (!p.reduce) {
      p.ops.out[0] = {broadcast_or_self(r.grad, grad_out), r.field, r.grad.alignment};
    } else {
      any_reduce = true;
      p.ops.out[0] = {dense, "workspace", static_cast<int>(kWorkspaceAlignment)};
      p.cast = buf_dtype != r.grad.dtype;
      const TensorLayout kept_buf = TensorLayout::contiguous(buf_dtype, r.operand.shape_span());
      p.sum = make_sum_params(dense, r.operand, p.cast ? kept_buf : r.grad, caps);
      partial = std::max(partial, static_cast<std::size_t>(std::max<std::int64_t>(p.sum.chunks, 1) * p.sum.kept) *
                                      kBroadcastReduceAccBytes);
      if (p.cast) {
        MapOperands co;
        co.num_out = co.num_in = 1;
        co.out[0] = {r.grad, r.field, r.grad.alignment};
        co.in[0] = {kept_buf, "workspace", static_cast<int>(kWorkspaceAlignment)};
        p.cast_map = make_map_params(co, best_path(co), 0);
        kept = std::max(kept, static_cast<std::size_t>(r.operand.numel()) * buf_bytes);
      }
    }
    if (g.rejection.empty()) {
      const std::string why = map_path_rejection(p.ops, path);
      if (!why.empty()) g.rejection = std::string(r.field) + ": " + why;
    }
    p.map = make_map_params(p.ops, path, 0);
  }
  plan_fused_pass(g, path);
  if (any_reduce) {
    g.partial_offset = align_workspace(static_cast<std::size_t>(dense.numel()) * dtype_size(buf_dtype));
    g.kept_offset = g.partial_offset + align_workspace(partial);
    g.workspace = g.kept_offset + align_workspace(kept);
  }
  return g;
}

namespace {
// Does pass k's output overlap any of its inputs?
bool writes_over_input(const GradPass& p, const MapPointers& ptr) {
  if (p.reduce) return false;
  for (int i = 0; i < p.ops.num_in; ++i)
    if (byte_ranges_overlap(ptr.out[0], p.ops.out[0].layout, ptr.in[i], p.ops.in[i].layout)) return true;
  return false;
}
}  // namespace

Status check_grad_aliasing(const GradPasses& g, std::span<const MapPointers> ptrs) {
  if (g.num <= 1) return Status::ok();
  int overlapping = 0;
  const char* first = "";
  for (int k = 0; k < g.num; ++k)
    if (writes_over_input(g.pass[static_cast<std::size_t>(k)], ptrs[static_cast<std::size_t>(k)])) {
      if (overlapping++ == 0) first = g.pass[static_cast<std::size_t>(k)].ops.out[0].field;
      else
        return Status(Code::kInvalidArgument, std::string("args.") + first + " and args." +
                                                  g.pass[static_cast<std::size_t>(k)].ops.out[0].field +
                                                  " both overwrite inputs (in place allows one gradient over an input)");
    }
  return Status::ok();
}

Status run_grad_passes(const GradPasses& g, std::span<const MapPointers> ptrs, Workspace ws, cudaStream_t s,
                       const GradMapLauncher& launch_map, const GradFusedLauncher& launch_fused) {
  char* base = static_cast<char*>(ws.data);
  bool fuse = g.num_fused >= 2 && static_cast<bool>(launch_fused);
  for (int j = 0; fuse && j < g.num_fused; ++j) {
    const int k = g.fused[static_cast<std::size_t>(j)];
    if (writes_over_input(g.pass[static_cast<std::size_t>(k)], ptrs[static_cast<std::size_t>(k)])) fuse = false;
  }
  int order[3], n = 0, last = -1;
  for (int k = 0; k < g.num; ++k)
    if (g.pass[static_cast<std::size_t>(k)].reduce) order[n++] = k;
  for (int k = 0; k < g.num && !fuse; ++k) {
    const GradPass& p = g.pass[static_cast<std::size_t>(k)];
    if (p.reduce) continue;
    if (writes_over_input(p, ptrs[static_cast<std::size_t>(k)])) last = k;
    else order[n++] = k;
  }
  if (last >= 0) order[n++] = last;
  for (int i = 0; i < n; ++i) {
    const GradPass& p = g.pass[static_cast<std::size_t>(order[i])];
    const MapPointers& ptr = ptrs[static_cast<std::size_t>(order[i])];
    MapParams mp = p.map;
    mp.out[0] = p.reduce ? static_cast<void*>(base) : ptr.out[0];
    for (int k = 0; k < mp.num_in; ++k) mp.in[k] = ptr.in[k];
    BARACUDA_TRY(launch_map(p.which, p.reduce, mp));
    if (!p.reduce) continue;
    BroadcastReduceParams sp = p.sum;
    sp.grad_out = base;
    sp.grad = p.cast ? static_cast<void*>(base + g.kept_offset) : ptr.out[0];
    sp.partial = base + g.partial_offset;
    BARACUDA_TRY(launch_binary_bwd_reduce(g.buf_dtype, BinaryKind::kAdd, sp, s));
    if (!p.cast) continue;
    MapParams cp = p.cast_map;
    cp.out[0] = ptr.out[0];
    cp.in[0] = base + g.kept_offset;
    BARACUDA_TRY(launch_cast(g.buf_dtype, g.grad_dtype, cp, s));
  }
  if (!fuse) return Status::ok();
  // the direct gradients, after every reduced one (none of them overlaps an input)
  MapParams fp = g.fused_map;
  int whiches[3];
  const MapPointers& first = ptrs[static_cast<std::size_t>(g.fused[0])];
  for (int k = 0; k < fp.num_in; ++k) fp.in[k] = first.in[k];
  for (int j = 0; j < g.num_fused; ++j) {
    const int k = g.fused[static_cast<std::size_t>(j)];
    fp.out[j] = ptrs[static_cast<std::size_t>(k)].out[0];
    whiches[j] = g.pass[static_cast<std::size_t>(k)].which;
  }
  return launch_fused(std::span<const int>(whiches, static_cast<std::size_t>(g.num_fused)), fp);
}

}  // namespace baracuda::elementwise
