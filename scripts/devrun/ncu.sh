#!/usr/bin/env bash
# On the GPU machine: one Nsight Compute profile of a kernel of one baracuda-bench case of
# bundle .devrun/$B: the kernel $K (a regular expression on its name), its launch number $SKIP
# (skips the warm-up launches), sections for speed of light, memory, warp states, scheduler,
# occupancy and source counters. Writes $OUT/ncu_<NAME>.ncu-rep, the details page as
# $OUT/ncu_<NAME>.txt (printed, trimmed), and the per-SASS-instruction stall samples as
# $OUT/ncu_<NAME>_sass.csv when this ncu can print its source page.
#   B=main K=norm_bwd_tma_lean OP=layer_norm_bwd DT=bf16 SHAPE=16384x8192 NAME=lnb bash scripts/devrun/ncu.sh
# One profile takes ~15 s (H100, session 19).
# shellcheck source=scripts/devrun/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
B="${B:?B: the bundle name under .devrun}"
K="${K:?K: a regular expression on the kernel name}"
OP="${OP:?OP: the bench op}"
DT="${DT:-bf16}"
SHAPE="${SHAPE:?SHAPE: the bench shape}"
NAME="${NAME:-${OP}}"
SKIP="${SKIP:-5}"
NCU="${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}"
bench="$(devrun_binary "${B}" baracuda-bench)" || exit 1
rep="${OUT}/ncu_${NAME}"
"${NCU}" --kernel-name "regex:${K}" --launch-skip "${SKIP}" --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section LaunchStats --section SourceCounters -f -o "${rep}" \
  "${bench}" --op "${OP}" --dtype "${DT}" --shape "${SHAPE}" --reps 10 >"${rep}.log" 2>&1 ||
  { echo "ncu.sh: ncu failed, see ${rep}.log"; tail -n 5 "${rep}.log"; exit 1; }
"${NCU}" --import "${rep}.ncu-rep" --page details >"${rep}.txt" 2>&1
grep -E 'Duration|DRAM Throughput|Memory Throughput|Executed Instructions  |No Eligible|Issued Warp|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Stall|stall' "${rep}.txt" | head -n 40
# Per-instruction SASS with its stall samples (newer ncu); skipped quietly where unsupported.
"${NCU}" --import "${rep}.ncu-rep" --page source --csv --print-source sass >"${rep}_sass.csv" 2>/dev/null ||
  rm -f "${rep}_sass.csv"
[[ -f "${rep}_sass.csv" ]] && echo "ncu.sh: SASS with stall samples in ${rep}_sass.csv ($(wc -l <"${rep}_sass.csv") lines)"
exit 0
