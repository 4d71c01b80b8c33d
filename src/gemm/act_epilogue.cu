// Launches of the composite-epilogue activation pass (kernels/act_epilogue.cuh).
#include <algorithm>
#include <string>

#include "gemm/act_epilogue.hpp"
#include "gemm/launch_status.hpp"
#include "gemm/kernels/act_epilogue.cuh"

namespace baracuda::gemm {
namespace {

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

template <class T, ActKind kAct>
Status launch_typed(const ActEpilogueParams& p, cudaStream_t stream) {
  using namespace kernels;
  if (p.batch == 0 || p.outer == 0 || p.inner == 0) return Status::ok();
  constexpr int kVec = 16 / sizeof(T);
  bool vec = p.inner % kVec == 0 && p.d_ld % kVec == 0 && p.d_batch_stride % kVec == 0 && aligned16(p.d);
  if (p.aux) vec = vec && p.aux_ld % kVec == 0 && p.aux_batch_stride % kVec == 0 && aligned16(p.aux);
  const std::int64_t steps = p.batch * p.outer * (vec ? p.inner / kVec : p.inner);
  // enough blocks to fill the device several times over; the loop strides over the rest
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((steps + kActBlock - 1) / kActBlock, 65536));
  if (vec) gemm_act_kernel<T, kAct, kVec><<<blocks, kActBlock, 0, stream>>>(p);
  else gemm_act_kernel<T, kAct, 1><<<blocks, kActBlock, 0, stream>>>(p);
  return kernel_launch_status("gemm activation");
}

template <class T>
Status launch_act(const ActEpilogueParams& p, cudaStream_t stream) {
  return p.act == ActKind::kGeluErf ? launch_typed<T, ActKind::kGeluErf>(p, stream) : launch_typed<T, ActKind::kSilu>(p, stream);
}

}  // namespace

Status launch_act_epilogue(DType t, const ActEpilogueParams& p, cudaStream_t stream) {
  switch (t) {
    case DType::kF32: return launch_act<float>(p, stream);
    case DType::kF16: return launch_act<__half>(p, stream);
    case DType::kBF16: return launch_act<__nv_bfloat16>(p, stream);
    default: return Status(Code::kNotSupported, "gemm activation epilogue: dtype " + std::string(dtype_name(t)));
  }
}

}  // namespace baracuda::gemm
