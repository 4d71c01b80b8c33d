// Playground (not built by CMake): the library's contiguous bf16 add behind a C entry point,
// so Python can time it against torch.add on the very same tensors in one process
// (same_buffers.py). Build: nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a
//   -I../../include -I../../src --expt-relaxed-constexpr -shared -Xcompiler -fPIC add_shim.cu -o add_shim.so
#include <cuda_bf16.h>

#include "elementwise/kernels/map.cuh"
#include "elementwise/kernels/ops.cuh"

using namespace baracuda;

extern "C" int baracuda_add_bf16(const void* a, const void* b, void* out, long long n, void* stream) {
  elementwise::MapParams p;
  p.path = elementwise::MapPath::kVecContig;
  p.num_in = 2;
  p.numel = n;
  p.in[0] = a;
  p.in[1] = b;
  p.out[0] = out;
  return kernels::launch_map_contig<__nv_bfloat16, __nv_bfloat16>(kernels::BinaryOp<BinaryKind::kAdd>{}, p,
                                                                   static_cast<cudaStream_t>(stream))
             .is_ok()
             ? 0
             : 1;
}
