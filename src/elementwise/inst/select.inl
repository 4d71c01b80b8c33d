// Instance body: where, where's gradient and fill for one element size, named by a dtype
// of that size (BARACUDA_INSTANCE_DTYPE: u8, i16, i32, i64); every dtype of the size uses it.
#include <type_traits>

#include "elementwise/kernels/select_map.cuh"
#include "elementwise/launch_ternary.hpp"

namespace baracuda::elementwise {
namespace {
using W = std::make_unsigned_t<kernels::DeviceType<DType::BARACUDA_INSTANCE_DTYPE>>;
constexpr int kBytes = sizeof(W);
}  // namespace

template <>
Status launch_where<kBytes>(const MapParams& p, cudaStream_t s) {
  return kernels::launch_select<W>(kernels::WhereOp<W>{}, p, s);
}
template <>
Status launch_where_grad<kBytes>(int which, const MapParams& p, cudaStream_t s) {
  return kernels::launch_select<W>(kernels::WhereGradOp<W>{which}, p, s);
}
template <>
Status launch_where_grads<kBytes>(const MapParams& p, cudaStream_t s) {
  return kernels::launch_where_grads_contig<W>(p, s);
}
template <>
Status launch_fill<kBytes>(std::uint64_t bits, const MapParams& p, cudaStream_t s) {
  return kernels::launch_select<W>(kernels::FillOp<W>{static_cast<W>(bits)}, p, s);
}
}  // namespace baracuda::elementwise
