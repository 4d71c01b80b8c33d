// Throwaway-grade CPU emulation shims for the rope / alibi kernels (see run.sh).
// CPU emulation shims for the rope / alibi kernels (throwaway check; not part of the repo).
#pragma once
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#undef __global__
#define __global__
#undef __launch_bounds__
#define __launch_bounds__(...)
#ifndef __grid_constant__
#define __grid_constant__
#endif
struct EmuDim { unsigned x = 1, y = 1, z = 1; };
inline EmuDim emu_threadIdx, emu_blockIdx, emu_blockDim, emu_gridDim;
#define threadIdx emu_threadIdx
#define blockIdx emu_blockIdx
#define blockDim emu_blockDim
#define gridDim emu_gridDim
inline uint4 __ldcs(const uint4* p) { return *p; }
inline void __stcs(uint4* p, uint4 v) { *p = v; }
template <class K, class P>
void emu_launch(K kern, unsigned grid, dim3 block, const P& p) {
  emu_gridDim = {grid, 1, 1};
  emu_blockDim = {block.x, block.y, 1};
  for (unsigned b = 0; b < grid; ++b)
    for (int ty = static_cast<int>(block.y) - 1; ty >= 0; --ty)
      for (int tx = static_cast<int>(block.x) - 1; tx >= 0; --tx) {
        emu_blockIdx = {b, 0, 0};
        emu_threadIdx = {static_cast<unsigned>(tx), static_cast<unsigned>(ty), 0};
        kern(p);
      }
}
template <class K, class P>
void emu_launch(K kern, unsigned grid, int block, const P& p) { emu_launch(kern, grid, dim3(block), p); }
#define cudaGetLastError() cudaSuccess
