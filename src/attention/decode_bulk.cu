// SdpaDecodePlan's bulk-copy instances (kernels/decode_bulk.cuh; sm_90+): bf16 and f16 at D 64
// (6 stages) and 128 (3 stages), then the split combine of decode_mma.cuh when splits > 1.
#include "attention/decode_launch.cuh"
#include "attention/kernels/decode_bulk.cuh"

namespace baracuda::attention::detail {
namespace {

template <class T, int D>
Status launch_bulk_t(const DecodeParams& p, cudaStream_t s) {
  constexpr int kStages = decode_bulk_stages(D);
  auto kernel = &kernels::decode_bulk_kernel<T, D, kStages>;
  static std::atomic<unsigned long long> opted{0};
  // Opt in once for the largest layout (heads_per_cta = 1: 128-key tiles, the most padding).
  BARACUDA_TRY(allow_smem(kernel, opted, decode_bulk_smem_bytes(D, kStages, 1)));
  const std::int64_t smem = decode_bulk_smem_bytes(D, kStages, p.heads_per_cta);
  const dim3 grid(static_cast<unsigned>(p.batch * (p.hkv / p.heads_per_cta)), static_cast<unsigned>(p.splits));
  kernel<<<grid, kBulkThreads, static_cast<std::size_t>(smem), s>>>(p);
  BARACUDA_TRY(launch_status("paged_decode bulk_splitkv"));
  return launch_split_combine<T>(p, s);
}

template <class T>
Status launch_bulk_d(const DecodeParams& p, cudaStream_t s) {
  switch (p.d) {
    case 64: return launch_bulk_t<T, 64>(p, s);
    case 128: return launch_bulk_t<T, 128>(p, s);
    default: return Status(Code::kInternal, "paged_decode bulk_splitkv: no kernel for D = " + std::to_string(p.d));
  }
}

}  // namespace
}  // namespace baracuda::attention::detail

namespace baracuda::attention {
Status launch_decode_bulk(DType dtype, const DecodeParams& p, cudaStream_t s) {
  if (p.batch == 0 || p.sq == 0 || p.hq == 0) return Status::ok();
  if (dtype == DType::kBF16) return detail::launch_bulk_d<__nv_bfloat16>(p, s);
  if (dtype == DType::kF16) return detail::launch_bulk_d<__half>(p, s);
  return Status(Code::kInternal, "paged_decode bulk_splitkv: dtype " + std::string(dtype_name(dtype)) + " has no kernel");
}
}  // namespace baracuda::attention
