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
# cuDNN: of the loader's libcudnn.so.9 (the system's: 9.14 on the device machines) and the one
# in PyTorch's nvidia-cudnn wheel (9.19), the newer goes first on LD_LIBRARY_PATH, so that our
# cuDNN SKUs and torch's run the same library (H100 session 24, sdpa_bwd_causal bf16 d128 B8
# H16 S4096 on our cudnn SKU: 2.94-3.02 ms with 9.14, 2.86-2.87 with 9.19; forward equal).
# Candidates: the loader's, and libcudnn.so.9 under nvidia/cudnn/lib, nvidia/cu13/lib or
# torch/lib of every sys.path entry, each version read in a fresh process (one library per
# process; sessions 25-33 reported 9.14 from the loader path although torch ran 9.19: the old
# picker, which imported nvidia.cudnn and loaded both libraries in one process, never chose
# the wheel). BARACUDA_CUDNN=system keeps the loader's. Chosen once per call (exported);
# `python3 -c "${_cudnn_pick}" -v` lists the candidates.
_cudnn_pick='
import os, subprocess, sys
def version(path):
    probe = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cudnnGetVersion())"
    r = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True)
    try:
        return int(r.stdout.strip())
    except ValueError:
        return 0
found = ["libcudnn.so.9"]
for entry in sys.path:
    for sub in (("nvidia", "cudnn", "lib"), ("nvidia", "cu13", "lib"), ("torch", "lib")):
        f = os.path.realpath(os.path.join(entry or ".", *sub, "libcudnn.so.9"))
        if os.path.isfile(f) and f not in found:
            found.append(f)
best, best_dir = 0, ""
for f in found:
    v = version(f)
    if "-v" in sys.argv:
        print("cudnn candidate", f, v, file=sys.stderr)
    if v > best:
        best, best_dir = v, (os.path.dirname(f) if "/" in f else "")
print(best, best_dir)
'
if [[ -z "${BARACUDA_CUDNN_CHOSEN:-}" && "${BARACUDA_CUDNN:-}" != system ]]; then
  BARACUDA_CUDNN_CHOSEN="$(python3 -c "${_cudnn_pick}" 2>/dev/null)"
  export BARACUDA_CUDNN_CHOSEN="${BARACUDA_CUDNN_CHOSEN:-0}"
  read -r _cudnn_version _cudnn_dir <<<"${BARACUDA_CUDNN_CHOSEN}"
  if [[ -n "${_cudnn_dir:-}" ]]; then export LD_LIBRARY_PATH="${_cudnn_dir}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"; fi
  # said once per machine (the scripts run one another as child processes)
  if [[ ! -e /tmp/.baracuda_cudnn_said ]]; then
    echo "devrun: cuDNN ${_cudnn_version:-?} from ${_cudnn_dir:-the loader path}" >&2
    : >/tmp/.baracuda_cudnn_said
  fi
fi
