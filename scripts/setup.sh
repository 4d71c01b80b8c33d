#!/usr/bin/env bash
# Installs what baracuda's build and tests need on a Debian 12 machine, idempotently.
#
#   bash scripts/setup.sh [-v]     set up (quiet when there is nothing to do; -v: always print a summary)
#   source scripts/setup.sh        the same, then puts third_party/venv/bin first on PATH
#                                  (arguments are ignored when sourced; BARACUDA_SETUP_VERBOSE=1 for -v)
#
# What it does:
#   - Debian packages: ninja-build, libgtest-dev, ccache, patchelf (and python3-venv when the
#     Python in use cannot make a venv). `apt-get update` runs only when one is missing.
#   - Checks the CUDA toolkit (nvcc >= 12.8, cuBLASLt) and cuDNN (cudnn.h, libcudnn.so): says
#     what is missing; it does not install them.
#   - A venv at third_party/venv with pinned PyPI wheels: CMake (nvcc's C++20 dialect with
#     CUDA 13 needs CMake >= 3.31; Debian 12 ships 3.25), and the header-only NVIDIA libraries
#     CUTLASS/CuTe (nvidia-cutlass) and the cuDNN frontend (nvidia-cudnn-frontend), exposed as
#       third_party/include/cutlass-root     (holds cutlass/cutlass.h and cute/tensor.hpp)
#       third_party/include/cudnn-frontend   (holds cudnn_frontend.h)
#   - A stamp (third_party/.setup-stamp) makes the next run take well under a second.
#
# Environment: BARACUDA_PYTHON (python for the venv; default python3), CUDA_HOME.

# ------------------------------------------------------------------ sourced: run in a child, then set PATH
if [[ "${BASH_SOURCE[0]}" != "${0}" ]]; then
  _baracuda_setup_rc=0
  bash "${BASH_SOURCE[0]}" || _baracuda_setup_rc=$?
  if [[ ${_baracuda_setup_rc} -eq 0 ]]; then
    # shellcheck source=scripts/env.sh
    . "$(dirname "${BASH_SOURCE[0]}")/env.sh"
  fi
  # shellcheck disable=SC2248
  return ${_baracuda_setup_rc}
fi

set -euo pipefail

# Pinned versions (checked 2025-12 with `pip index versions`; each wheel carries the C++ headers).
readonly CMAKE_PIN="3.31.6"
readonly CUTLASS_PIN="4.2.0.0"
readonly CUDNN_FRONTEND_PIN="1.32.0"
readonly MIN_CUDA="12.8"
readonly SETUP_REVISION="1"  # bump to force the Python part to be redone everywhere

verbose="${BARACUDA_SETUP_VERBOSE:-0}"
case "${1:-}" in
  -v | --verbose) verbose=1 ;;
  -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "baracuda setup: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tp="${root}/third_party"
venv="${tp}/venv"
stamp="${tp}/.setup-stamp"
log="${tp}/setup.log"
mkdir -p "${tp}"

say() { echo "baracuda setup: $*"; }
problems=()
problem() { problems+=("$*"); }
fail_with_log() {
  echo "baracuda setup: error: $1" >&2
  if [[ -s "${log}" ]]; then
    echo "---- last lines of ${log} ----" >&2
    tail -n 25 "${log}" >&2
  fi
  exit 1
}

# One setup at a time (main.sh and test.sh may start together).
if command -v flock >/dev/null 2>&1; then
  exec 9>"${tp}/.setup.lock"
  flock 9
fi

did_work=0

# ------------------------------------------------------------------ Python for the venv
py="${BARACUDA_PYTHON:-python3}"
py_ok() { command -v "$1" >/dev/null 2>&1 && "$1" -c 'import venv, ensurepip' >/dev/null 2>&1; }
need_python_venv=0
if ! py_ok "${py}"; then
  if [[ -z "${BARACUDA_PYTHON:-}" && "${py}" != /usr/bin/python3 ]] && py_ok /usr/bin/python3; then
    py=/usr/bin/python3
  else
    need_python_venv=1
  fi
fi

# ------------------------------------------------------------------ Debian packages
deb_packages=(ninja-build libgtest-dev ccache patchelf)
((need_python_venv)) && deb_packages+=(python3 python3-venv)
missing=()
installed="$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${deb_packages[@]}" 2>/dev/null || true)"
for p in "${deb_packages[@]}"; do
  grep -qx "${p} installed" <<<"${installed}" || missing+=("${p}")
done
if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "baracuda setup: error: missing packages ${missing[*]} and no apt-get (this script targets Debian 12)" >&2
    exit 1
  fi
  sudo=()
  if [[ ${EUID} -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "baracuda setup: error: missing Debian packages: ${missing[*]}" >&2
      echo "  run as root, or: sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  say "installing Debian packages: ${missing[*]}"
  : >"${log}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"${log}" 2>&1 ||
    fail_with_log "apt-get update failed"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >>"${log}" 2>&1 || fail_with_log "apt-get install ${missing[*]} failed"
  did_work=1
  if ((need_python_venv)); then
    py=/usr/bin/python3
    py_ok "${py}" || fail_with_log "${py} still cannot create a venv after installing python3-venv"
  fi
fi

# ------------------------------------------------------------------ CUDA toolkit and cuDNN (checked, not installed)
nvcc_bin="$(command -v nvcc 2>/dev/null || true)"
if [[ -z "${nvcc_bin}" ]]; then
  for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [[ -n "${c}" && -x "${c}/bin/nvcc" ]]; then nvcc_bin="${c}/bin/nvcc"; break; fi
  done
fi
cuda_root=""
cuda_version=""
if [[ -z "${nvcc_bin}" ]]; then
  problem "nvcc not found (not on PATH, nor in \$CUDA_HOME or /usr/local/cuda): install the CUDA toolkit >= ${MIN_CUDA} with cuBLAS (Debian: NVIDIA's cuda-toolkit package) or set CUDA_HOME"
else
  cuda_root="$(cd "$(dirname "$(readlink -f "${nvcc_bin}")")/.." && pwd)"
  cuda_version="$("${nvcc_bin}" --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p' | head -n1)"
  if [[ -z "${cuda_version}" ]]; then
    problem "could not read the CUDA version from '${nvcc_bin} --version'"
  elif [[ "$(printf '%s\n%s\n' "${MIN_CUDA}" "${cuda_version}" | sort -V | head -n1)" != "${MIN_CUDA}" ]]; then
    problem "CUDA ${cuda_version} at ${cuda_root} is too old: baracuda needs >= ${MIN_CUDA} (nvcc 13 recommended)"
  fi
fi

lib_dirs=()
if [[ -n "${cuda_root}" ]]; then
  lib_dirs+=("${cuda_root}/lib64" "${cuda_root}/lib" "${cuda_root}/targets/x86_64-linux/lib")
fi
lib_dirs+=(/usr/lib/x86_64-linux-gnu /usr/local/lib /usr/lib)
find_lib() {  # find_lib libname.so -> prints the first dir that holds it
  local d
  for d in "${lib_dirs[@]}"; do
    if [[ -e "${d}/$1" ]]; then echo "${d}"; return 0; fi
  done
  return 1
}
if [[ -n "${cuda_root}" ]] && ! find_lib libcublasLt.so >/dev/null; then
  problem "libcublasLt.so not found next to CUDA at ${cuda_root}: install the toolkit's cuBLAS (libcublas-dev / cuda-libraries-dev)"
fi
inc_dirs=()
[[ -n "${cuda_root}" ]] && inc_dirs+=("${cuda_root}/include" "${cuda_root}/targets/x86_64-linux/include")
inc_dirs+=(/usr/include /usr/local/include /usr/include/x86_64-linux-gnu)
cudnn_header=""
for d in "${inc_dirs[@]}"; do
  if [[ -e "${d}/cudnn.h" ]]; then cudnn_header="${d}/cudnn.h"; break; fi
done
if [[ -z "${cudnn_header}" ]]; then
  problem "cuDNN header cudnn.h not found (looked in ${inc_dirs[*]}): install cuDNN 9 for CUDA ${cuda_version:-13} (Debian: cudnn9-cuda-13 / libcudnn9-dev-cuda-13) into the CUDA toolkit's include/ and lib/"
fi
if ! find_lib libcudnn.so >/dev/null; then
  problem "cuDNN library libcudnn.so not found (looked in ${lib_dirs[*]}): install cuDNN 9 (its -dev package provides libcudnn.so)"
fi

# ------------------------------------------------------------------ Python venv with pinned wheels
key="revision=${SETUP_REVISION} python=$(readlink -f "$(command -v "${py}")") cmake==${CMAKE_PIN} nvidia-cutlass==${CUTLASS_PIN} nvidia-cudnn-frontend==${CUDNN_FRONTEND_PIN}"
cutlass_link="${tp}/include/cutlass-root"
frontend_link="${tp}/include/cudnn-frontend"

venv_ready() {
  [[ -f "${stamp}" && "$(cat "${stamp}")" == "${key}" ]] &&
    [[ -e "${cutlass_link}/cutlass/cutlass.h" && -e "${cutlass_link}/cute/tensor.hpp" ]] &&
    [[ -e "${frontend_link}/cudnn_frontend.h" ]] &&
    [[ -x "${venv}/bin/cmake" ]] && "${venv}/bin/cmake" --version >/dev/null 2>&1
}

if ! venv_ready; then
  did_work=1
  rm -f "${stamp}"
  : >"${log}"
  # A venv made by another Python (or broken) is rebuilt from scratch.
  if [[ -d "${venv}" ]] && ! "${venv}/bin/python" -c '' >/dev/null 2>&1; then rm -rf "${venv}"; fi
  if [[ -d "${venv}" ]]; then
    want="$("${py}" -c 'import sys; print(sys.version.split()[0])')"
    have="$("${venv}/bin/python" -c 'import sys; print(sys.version.split()[0])')"
    [[ "${want}" == "${have}" ]] || rm -rf "${venv}"
  fi
  if [[ ! -d "${venv}" ]]; then
    say "creating ${venv#"${root}/"} with ${py}"
    "${py}" -m venv "${venv}" >>"${log}" 2>&1 || fail_with_log "could not create the venv with ${py} -m venv"
  fi
  say "installing cmake==${CMAKE_PIN} nvidia-cutlass==${CUTLASS_PIN} nvidia-cudnn-frontend==${CUDNN_FRONTEND_PIN} (headers only: --no-deps)"
  # --no-deps: only the C++ headers (and CMake) are used; the wheels' Python dependencies
  # (cuda-python, scipy, nvidia-cutlass-dsl, ...) are not needed to build baracuda.
  "${venv}/bin/python" -m pip install --disable-pip-version-check --no-input --no-deps --no-compile -q \
    "cmake==${CMAKE_PIN}" "nvidia-cutlass==${CUTLASS_PIN}" "nvidia-cudnn-frontend==${CUDNN_FRONTEND_PIN}" \
    >>"${log}" 2>&1 || fail_with_log "pip install failed (is PyPI reachable?)"

  purelib="$("${venv}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cutlass_inc="${purelib}/cutlass_library/source/include"
  frontend_inc="${purelib}/include"
  [[ -e "${cutlass_inc}/cutlass/cutlass.h" && -e "${cutlass_inc}/cute/tensor.hpp" ]] ||
    fail_with_log "nvidia-cutlass ${CUTLASS_PIN} has no cutlass/cutlass.h + cute/tensor.hpp under ${cutlass_inc}"
  [[ -e "${frontend_inc}/cudnn_frontend.h" ]] ||
    fail_with_log "nvidia-cudnn-frontend ${CUDNN_FRONTEND_PIN} has no cudnn_frontend.h under ${frontend_inc}"
  mkdir -p "${tp}/include"
  ln -sfn "$(realpath --relative-to="${tp}/include" "${cutlass_inc}")" "${cutlass_link}"
  ln -sfn "$(realpath --relative-to="${tp}/include" "${frontend_inc}")" "${frontend_link}"

  got="$("${venv}/bin/cmake" --version | sed -n 's/^cmake version //p')"
  [[ "${got}" == "${CMAKE_PIN}" ]] || fail_with_log "third_party/venv/bin/cmake reports '${got}', expected ${CMAKE_PIN}"
  printf '%s\n' "${key}" >"${stamp}"
fi

# ------------------------------------------------------------------ report
if ((${#problems[@]})); then
  echo "baracuda setup: the build cannot work yet:" >&2
  for p in "${problems[@]}"; do echo "  - ${p}" >&2; done
  exit 1
fi
if ((did_work || verbose)); then
  say "ready. CUDA ${cuda_version} (${cuda_root}), cuDNN header ${cudnn_header}"
  say "  cmake: ${venv}/bin/cmake (${CMAKE_PIN}); use it with: source scripts/env.sh"
  say "  CUTLASS ${CUTLASS_PIN}: third_party/include/cutlass-root -> $(readlink "${cutlass_link}")"
  say "  cuDNN frontend ${CUDNN_FRONTEND_PIN}: third_party/include/cudnn-frontend -> $(readlink "${frontend_link}")"
fi
exit 0
