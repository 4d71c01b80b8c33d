#!/usr/bin/env bash
# Here (no GPU): a PyTorch for checking semantics on the CPU (edge values, backward rules) the
# way sessions 36+ settled docs/semantics questions. PyPI's Linux torch wheel is the CUDA
# build; it imports without a GPU once the few CUDA libraries the toolkit here lacks are
# installed beside it (no CUDA is used). Optional: nothing in the build or CI needs it.
#   bash scripts/torch_cpu.sh            # creates ${TORCH_VENV:-/tmp/tv} (about 1.5 GB, ~1 min)
#   bash scripts/torch_cpu.sh run x.py   # runs x.py with that torch
set -euo pipefail
venv="${TORCH_VENV:-/tmp/tv}"
site() { "${venv}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
if [[ ! -x "${venv}/bin/python" ]] || ! "${venv}/bin/python" -c 'import torch' >/dev/null 2>&1; then
  [[ -x "${venv}/bin/python" ]] || python3 -m venv "${venv}"
  "${venv}/bin/pip" install -q --no-deps torch numpy
  "${venv}/bin/pip" install -q typing_extensions sympy filelock networkx jinja2 fsspec
  "${venv}/bin/pip" install -q --no-deps nvidia-cufile nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13
fi
sp="$(site)"
export LD_LIBRARY_PATH="${sp}/nvidia/cu13/lib:${sp}/nvidia/nvshmem/lib:${sp}/nvidia/nccl/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
if [[ "${1:-}" == run ]]; then
  shift
  exec "${venv}/bin/python" "$@"
fi
"${venv}/bin/python" -c 'import torch; print("torch", torch.__version__, "at", torch.__file__)' 2>/dev/null
