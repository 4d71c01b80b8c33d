#!/usr/bin/env bash
# On the GPU machine: baracuda-bench suites $S of bundle .devrun/$B, each compared with PyTorch
# by the repository's bench/compare_torch.py (INTERLEAVE=1: A/B/A/B re-timing, SDPA rows too;
# slower, fairer on near ties). Writes $OUT/suite_<B>_<suite>.log and prints its rows under 1.0x.
#   B=main S="norm softmax" INTERLEAVE=1 bash scripts/devrun/suites.sh
# shellcheck source=scripts/devrun/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
B="${B:?B: the bundle name under .devrun}"
S="${S:-attention}"
bench="$(devrun_binary "${B}" baracuda-bench)" || exit 1
for s in ${S}; do
  log="${OUT}/suite_${B}_${s}.log"
  json="$(mktemp --suffix=.jsonl)"
  echo "== suite ${s}, bundle ${B}, $(date -u +%T)" | tee "${log}"
  "${bench}" --suite "${s}" --json "${json}" >"${json}.txt" 2>&1
  python3 bench/compare_torch.py --baracuda "${json}" ${INTERLEAVE:+--interleave "${bench}"} >>"${log}" 2>&1
  { echo "-- baracuda-bench rows"; cat "${json}.txt"; } >>"${log}"
  echo "-- ${s}: rows under 1.0x torch"
  awk 'NF >= 9 && $8 ~ /^[0-9.]+$/ && $8 + 0 < 1.0' "${log}"
  rm -f "${json}" "${json}.txt"
done
