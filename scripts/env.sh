# shellcheck shell=bash
# Source this file (bash): puts baracuda's pinned tools first on PATH.
#   source scripts/env.sh
# - third_party/venv/bin (CMake 3.31 from PyPI, made by scripts/setup.sh)
# - the CUDA toolkit's bin (nvcc) when nvcc is not on PATH yet
# Safe to source several times; changes nothing but PATH and BARACUDA_ROOT.

BARACUDA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BARACUDA_ROOT

_baracuda_path_prepend() {
  case ":${PATH}:" in
    *":$1:"*) ;;
    *) PATH="$1${PATH:+:${PATH}}" ;;
  esac
}

if ! command -v nvcc >/dev/null 2>&1; then
  for _baracuda_cuda in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [[ -n "${_baracuda_cuda}" && -x "${_baracuda_cuda}/bin/nvcc" ]]; then
      _baracuda_path_prepend "${_baracuda_cuda}/bin"
      break
    fi
  done
  unset _baracuda_cuda
fi

if [[ -d "${BARACUDA_ROOT}/third_party/venv/bin" ]]; then
  # Move the venv to the front even when it is already somewhere on PATH.
  PATH=":${PATH}:"
  PATH="${PATH//:${BARACUDA_ROOT}\/third_party\/venv\/bin:/:}"
  PATH="${PATH#:}"
  PATH="${PATH%:}"
  PATH="${BARACUDA_ROOT}/third_party/venv/bin${PATH:+:${PATH}}"
fi
export PATH
unset -f _baracuda_path_prepend
hash -r 2>/dev/null || true
