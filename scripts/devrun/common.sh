#!/usr/bin/env bash
# Sourced by the scripts/devrun helpers that run on the GPU machine: the repository root as the
# working directory, $OUT (the device tool's folder; /tmp/devrun_out elsewhere) created, and
# devrun_binary NAME BIN: the path of staged bundle .devrun/NAME's bin/BIN, or exit with why.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
OUT="${OUT:-/tmp/devrun_out}"
mkdir -p "${OUT}"
devrun_binary() {
  local path=".devrun/$1/baracuda/bin/$2"
  [[ -x "${path}" ]] || { echo "devrun: ${path} missing (staged with stage.sh? unpacked with unpack.sh?)" >&2; exit 1; }
  echo "${path}"
}
