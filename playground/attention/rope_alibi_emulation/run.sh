#!/usr/bin/env bash
# CPU emulation of the rope / alibi kernels (no GPU): the kernel headers with each <<<...>>>
# launch rewritten into a sequential loop over blocks and threads (threads in reverse order, so
# that the emulated block_allreduce of shim/common/ has every thread's value when thread 0
# stores), the real host code (candidates, setup, launch) and baracuda::reference to compare.
# Catches indexing / dispatch bugs, not races or timing. Needs a dev build (build/dev) for
# libbaracuda and the reference library.  Usage: playground/attention/rope_alibi_emulation/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(mktemp -d)"
mkdir -p "$out/src/attention/kernels"
for f in rope alibi; do
  sed -E 's/([a-z_]+<[^>]*>)<<<([^,]*), ([^,]*), 0, s>>>\(p\)/emu_launch(\1, \2, \3, p)/' \
    "$root/src/attention/kernels/$f.cuh" > "$out/src/attention/kernels/$f.cuh"
done
inc="-I$here -I$out/src -I$here/shim -I$root/src -I$root/include -I$root/reference/include -I/usr/local/cuda/include"
objs=()
for d in F64 F32 F16 BF16; do
  for k in rope alibi; do
    printf '#define BARACUDA_INSTANCE_DTYPE k%s\n#include "attention/inst/%s.inl"\n' "$d" "$k" > "$out/inst_${k}_$d.cpp"
    g++ -std=c++20 -O1 -w $inc -include "$here/emu_shim.hpp" -c "$out/inst_${k}_$d.cpp" -o "$out/inst_${k}_$d.o"
    objs+=("$out/inst_${k}_$d.o")
  done
done
for f in emu_rope emu_alibi main; do
  g++ -std=c++20 -O1 -w $inc -include "$here/emu_shim.hpp" -c "$here/$f.cpp" -o "$out/$f.o"
  objs+=("$out/$f.o")
done
g++ -o "$out/emu" "${objs[@]}" "$root/build/dev/reference/libbaracuda_reference.a" -L"$root/build/dev" -lbaracuda \
  -Wl,-rpath,"$root/build/dev" -L/usr/local/cuda/lib64 -lcudart
"$out/emu"
