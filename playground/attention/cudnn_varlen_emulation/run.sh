#!/usr/bin/env bash
# CPU emulation (no GPU) of the cuDNN forward's numerics on `baracuda check`'s varlen problem,
# judged by reference::compare (see main.cpp). Needs a dev build (build/dev) for the reference
# library.  Usage: playground/attention/cudnn_varlen_emulation/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(mktemp -d)"
g++ -std=c++20 -O2 -I"$root/include" -I"$root/reference/include" "$here/main.cpp" -o "$out/emu" \
  "$root/build/dev/reference/libbaracuda_reference.a" -L"$root/build/dev" -lbaracuda -Wl,-rpath,"$root/build/dev" \
  -L/usr/local/cuda/lib64 -lcudart -lpthread
"$out/emu"
