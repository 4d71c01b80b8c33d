// Launches of the composite-epilogue activation pass (kernels/act_epilogue.cuh).
#include <algorithm>
#include <string>

#include "gemm/act_epilogue.hpp"
#include "gemm/launch_status.hpp"
#include "gemm/kernels/act_epilogue.cuh"

namespace baracuda::gemm {
namespace {

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

// kGrad: the gradient pass (gemm_act_grad_kernel), else the forward (gemm_act_kernel).
template <class T, ActKind kAct, bool kGrad>
Status launch_typed(const ActEpilogueParams& p, cudaStream_t stream) {
  using namespace kernels;
  if (p.batch == 0 || p.outer == 0 || p.inner == 0) return Status::ok();
  constexpr int kVec = 16 / sizeof(T);
  bool vec = p.inner % kVec == 0 && p.d_ld % kVec == 0 && p.d_batch_stride % kVec == 0 && aligned16(p.d);
  // the relu mask is read bit by bit, any offset
  if (p.aux && kAct != ActKind::kRelu)
    vec = vec && p.aux_ld % kVec == 0 && p.aux_batch_stride % kVec == 0 && aligned16(p.aux);
  const std::int64_t steps = p.batch * p.outer * (vec ? p.inner / kVec : p.inner);
  // enough blocks to fill the device several times over; the loop strides over the rest
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((steps + kActBlock - 1) / kActBlock, 65536));
  if constexpr (kGrad) {
    if (vec) gemm_act_grad_kernel<T, kAct, kVec><<<blocks, kActBlock, 0, stream>>>(p);
    else gemm_act_grad_kernel<T, kAct, 1><<<blocks, kActBlock, 0, stream>>>(p);
    return kernel_launch_status("gemm activation gradient");
  } else {
    if (vec) gemm_act_kernel<T, kAct, kVec><<<blocks, kActBlock, 0, stream>>>(p);
    else gemm_act_kernel<T, kAct, 1><<<blocks, kActBlock, 0, stream>>>(p);
    return kernel_launch_status("gemm activation");
  }
}

template <class T>
Status launch_act(const ActEpilogueParams& p, cudaStream_t stream) {
  switch (p.act) {
    case ActKind::kGeluErf: return launch_typed<T, ActKind::kGeluErf, false>(p, stream);
    case ActKind::kSilu: return launch_typed<T, ActKind::kSilu, false>(p, stream);
    default: return Status(Code::kInternal, "gemm activation pass: relu and gelu_tanh are cuBLASLt's epilogues");
  }
}

template <class T>
Status launch_act_grad(const ActEpilogueParams& p, cudaStream_t stream) {
  if (p.aux == nullptr) return Status(Code::kInternal, "gemm activation gradient pass without aux");
  switch (p.act) {
    case ActKind::kGeluErf: return launch_typed<T, ActKind::kGeluErf, true>(p, stream);
    case ActKind::kSilu: return launch_typed<T, ActKind::kSilu, true>(p, stream);
    case ActKind::kRelu: return launch_typed<T, ActKind::kRelu, true>(p, stream);
    default: return launch_typed<T, ActKind::kGeluTanh, true>(p, stream);
  }
}

template <bool kGrad>
Status launch_for_dtype(DType t, const ActEpilogueParams& p, cudaStream_t stream) {
  switch (t) {
    case DType::kF32: return kGrad ? launch_act_grad<float>(p, stream) : launch_act<float>(p, stream);
    case DType::kF16: return kGrad ? launch_act_grad<__half>(p, stream) : launch_act<__half>(p, stream);
    case DType::kBF16: return kGrad ? launch_act_grad<__nv_bfloat16>(p, stream) : launch_act<__nv_bfloat16>(p, stream);
    default: return Status(Code::kNotSupported, "gemm activation epilogue: dtype " + std::string(dtype_name(t)));
  }
}

}  // namespace

Status launch_act_epilogue(DType t, const ActEpilogueParams& p, cudaStream_t stream) {
  return launch_for_dtype<false>(t, p, stream);
}

Status launch_act_grad_epilogue(DType t, const ActEpilogueParams& p, cudaStream_t stream) {
  return launch_for_dtype<true>(t, p, stream);
}

}  // namespace baracuda::gemm
