#!/usr/bin/env bash
# Run on the device with cuobjdump beside it (PyPI wheel nvidia-cuda-cuobjdump, copied into
# bundle/tools/ with this script; carry ["bundle"]): bash bundle/tools/torch_sass.sh > $OUT/torch_sass.txt
# Dumps the SASS of torch's vectorized bf16 add kernel (the name found from the symbol table).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
lib="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')"
echo "lib: $lib"
"$here/cuobjdump" -symbols "$lib" 2>/dev/null | grep -o '_ZN2at6native29vectorized_elementwise_kernelILi8E[A-Za-z0-9_]*' | sort -u > /tmp/vec8.txt
wc -l < /tmp/vec8.txt
grep -i 'add' /tmp/vec8.txt | grep 'BFloat16' | head -20
fun="$(grep 'CUDAFunctor_add' /tmp/vec8.txt | grep 'BFloat16' | head -1)"
echo "fun: $fun"
[ -n "$fun" ] && PATH="$here:$PATH" "$here/cuobjdump" -sass -arch sm_90 -fun "$fun" "$lib" 2>&1 | grep -v "not found\|^$\|Fatbin\|=====\|arch =\|code version\|host =\|compile_size\|compressed\|code for" | head -300
