// The bias-gradient reduction's plan (column_stream or kernels/bias_grad.cuh, see
// bias_grad.hpp) and its launches for the GEMM dtypes.
#include <string>

#include "core/workspace_align.hpp"
#include "gemm/bias_grad.hpp"
#include "gemm/launch_status.hpp"
#include "gemm/kernels/bias_grad.cuh"

namespace baracuda::gemm {
namespace {

template <class T>
Status launch_typed(const BiasGradParams& p, cudaStream_t stream) {
  using namespace kernels;
  if (p.x_count == 0 || p.batch == 0) return Status::ok();
  if (p.batch > 65535) return Status(Code::kNotSupported, "bias gradient: batch " + std::to_string(p.batch) + " > 65535");
  if (p.sx == 1) {
    const dim3 grid(static_cast<unsigned>((p.x_count + kBiasGradBlock - 1) / kBiasGradBlock), static_cast<unsigned>(p.batch));
    bias_grad_lines_kernel<T><<<grid, kBiasGradBlock, 0, stream>>>(p);
  } else {
    constexpr int kWarps = kBiasGradBlock / 32;
    const dim3 grid(static_cast<unsigned>((p.x_count + kWarps - 1) / kWarps), static_cast<unsigned>(p.batch));
    bias_grad_warp_kernel<T><<<grid, kBiasGradBlock, 0, stream>>>(p);
  }
  return kernel_launch_status("bias_grad");
}

}  // namespace

bool bias_grad_by_columns(DType t, const BiasGradParams& shape, int in_alignment, int out_alignment) {
  // Sums down unit-stride runs of whole 16-byte vectors, rows 16-byte apart, one batch.
  const std::int64_t vec = 16 / static_cast<std::int64_t>(dtype_size(t));
  return shape.batch == 1 && shape.sx == 1 && shape.out_stride == 1 && shape.x_count > 0 && shape.y_count > 0 &&
         shape.x_count % vec == 0 && shape.sy % vec == 0 && in_alignment >= 16 && out_alignment >= 16;
}

BiasGradPlan plan_bias_grad(DType t, const BiasGradParams& shape, int in_alignment, int out_alignment,
                            const DeviceCaps& caps) {
  BiasGradPlan plan;
  plan.dtype = t;
  plan.shape = shape;
  if (!bias_grad_by_columns(t, shape, in_alignment, out_alignment)) return plan;
  const std::int64_t vec = 16 / static_cast<std::int64_t>(dtype_size(t));
  elementwise::ColumnReduceParams& c = plan.column;
  c.which = 1;  // grad_b of an add: the column sums of grad_out, no input read
  c.rows = shape.y_count;
  c.cols = shape.x_count;
  c.row_stride[0] = shape.sy;
  elementwise::choose_column_chunks(c, vec, caps);
  const std::size_t acc = t == DType::kF64 ? 8 : 4;
  plan.workspace = align_workspace(static_cast<std::size_t>(c.chunks * c.cols) * acc);
  plan.column_stream = true;
  return plan;
}

Status launch_bias_grad(const BiasGradPlan& plan, const void* in, void* out, void* partial, cudaStream_t stream) {
  if (plan.column_stream) {
    elementwise::ColumnReduceParams c = plan.column;
    c.grad_out = in;
    c.grad_reduced = out;
    c.partial = partial;
    return elementwise::launch_binary_bwd_column_reduce(plan.dtype, BinaryKind::kAdd, c, stream);
  }
  BiasGradParams p = plan.shape;
  p.in = in;
  p.out = out;
  switch (plan.dtype) {
    case DType::kF64: return launch_typed<double>(p, stream);
    case DType::kF32: return launch_typed<float>(p, stream);
    case DType::kF16: return launch_typed<__half>(p, stream);
    case DType::kBF16: return launch_typed<__nv_bfloat16>(p, stream);
    default: return Status(Code::kNotSupported, "bias gradient: dtype " + std::string(dtype_name(plan.dtype)));
  }
}

}  // namespace baracuda::gemm
