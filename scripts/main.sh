#!/usr/bin/env bash
# The main job (README): set up, build, then run the `baracuda` command-line tool.
#   scripts/main.sh                      -> baracuda info (on a machine without a GPU:
#                                           info --arch sm_90 and info --arch sm_80)
#   scripts/main.sh info --arch sm_89    -> any subcommand and arguments: info, check, bench
# Environment:
#   BARACUDA_PRESET   configure/build preset: default (every architecture; the default) or dev
#                     (sm_90a only, faster to build), or ci / bundle
#   BARACUDA_JOBS     parallel build jobs (default: the number of cores)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset="${BARACUDA_PRESET:-default}"
case "${preset}" in
  default | dev | ci | bundle) ;;
  *) echo "main.sh: BARACUDA_PRESET='${preset}' is not a preset (default, dev, ci, bundle)" >&2; exit 2 ;;
esac
jobs="${BARACUDA_JOBS:-$(nproc)}"

# shellcheck source=/dev/null  # (setup.sh returns early when sourced)
source scripts/setup.sh

mkdir -p "build/${preset}"
cmake --preset "${preset}" >"build/${preset}/configure.log" 2>&1 ||
  { cat "build/${preset}/configure.log" >&2; echo "main.sh: cmake --preset ${preset} failed" >&2; exit 1; }
# Quiet when up to date; a real build shows ninja's progress.
cmake --build --preset "${preset}" -j "${jobs}"

tool="build/${preset}/tools/baracuda"
if [[ ! -x "${tool}" ]]; then
  echo "main.sh: ${tool} was not built (is BARACUDA_BUILD_TOOLS off?)" >&2
  exit 1
fi

args=("$@")
((${#args[@]})) || args=(info)

have_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}
has_arch_arg() {
  local a
  for a in "${args[@]}"; do
    [[ "${a}" == --arch || "${a}" == --arch=* ]] && return 0
  done
  return 1
}

if [[ "${args[0]}" == info ]] && ! has_arch_arg && ! have_gpu; then
  echo "main.sh: no NVIDIA GPU visible (nvidia-smi lists none), so instead of this device's table"
  echo "main.sh: here are the dispatch tables for sm_90 (H100/H200) and sm_80 (A100): info --arch sm_90, info --arch sm_80"
  echo
  "${tool}" "${args[@]}" --arch sm_90
  echo
  exec "${tool}" "${args[@]}" --arch sm_80
fi
exec "${tool}" "${args[@]}"
