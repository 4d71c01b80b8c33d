// Emulation of block_allreduce for sequential threads run in reverse order (thread 0 last).
#pragma once
namespace baracuda::kernels {
template <class R, class Merge>
inline R block_allreduce(R v, Merge merge, R identity, R*) {
  static R acc;
  if (threadIdx.x == blockDim.x - 1) acc = identity;
  acc = merge(acc, v);
  return acc;
}
}  // namespace baracuda::kernels
