// Instances and launcher of KvCacheAppendPlan's kernel (kernels/kv_cache_append.cuh), one per
// copy-unit size (1, 2, 4, 8, 16 bytes).
#include <string>

#include "attention/decode_params.hpp"
#include "attention/kernels/kv_cache_append.cuh"

namespace baracuda::attention {

namespace {

struct alignas(8) Unit16x8 {  // a 16-byte element (c128) copied with 8-byte alignment
  std::uint64_t lo, hi;
};

template <class U>
Status launch_unit(const KvAppendParams& p, cudaStream_t s) {
  const std::int64_t total = 2 * p.batch * p.s_new * p.hkv * p.units;
  if (total == 0) return Status::ok();
  const std::int64_t blocks = (total + 255) / 256;
  kernels::kv_append_kernel<U><<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256, 0, s>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string("kv_cache_append kernel launch failed: ") + cudaGetErrorString(e),
                StatusSource::kCuda, static_cast<int>(e));
}

}  // namespace

Status launch_kv_append(const KvAppendParams& p, cudaStream_t s) {
  if (p.vec16) return launch_unit<uint4>(p, s);
  switch (p.unit_bytes) {
    case 1: return launch_unit<std::uint8_t>(p, s);
    case 2: return launch_unit<std::uint16_t>(p, s);
    case 4: return launch_unit<std::uint32_t>(p, s);
    case 8: return launch_unit<uint2>(p, s);
    case 16: return launch_unit<Unit16x8>(p, s);
    default: return Status(Code::kInternal, "kv_cache_append: unit of " + std::to_string(p.unit_bytes) + " bytes");
  }
}

}  // namespace baracuda::attention
