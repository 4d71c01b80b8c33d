#!/usr/bin/env bash
# On the GPU machine: the GPU tests of bundle .devrun/$B as $N parallel gtest shards, each
# stopped after $TT seconds. Prints the failures, the counts and the shards without a result;
# writes $OUT/gpu_<B>.log (summary), $OUT/gpu_<B>_detail.log (the failures' messages).
#   B=main F='*Sdpa*:*Decode*' TT=300 bash scripts/devrun/tests.sh
# Filters match whole names: parameterised suites are 'Types/ReduceGpu.Backward/f64', so write
# '*ReduceGpu*', not 'ReduceGpu*' (session 36 lost a run to that). The > 2^31-element tests
# (ReduceHuge, ScanHuge, SoftmaxHuge, NormHuge: 5-18 GB each) go in a call of their own with N=4.
# The whole suite (F='*') takes 260-320 s with 16 shards on an H100: give it TT=520, alone in
# its call (one command may run 600 s).
# shellcheck source=scripts/devrun/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
B="${B:?B: the bundle name under .devrun}"
F="${F:-*}"
TT="${TT:-500}"
N="${N:-16}"
bin="$(devrun_binary "${B}" baracuda_gpu_tests)" || exit 1
tmp="$(mktemp -d)"
t0=${SECONDS}
for ((i = 0; i < N; i++)); do
  GTEST_TOTAL_SHARDS=${N} GTEST_SHARD_INDEX=${i} timeout -k 5 "${TT}" "${bin}" --gtest_filter="${F}" \
    >"${tmp}/s${i}.log" 2>&1 &
done
wait
cat "${tmp}"/s*.log >"${tmp}/all.log"
{
  echo "== gpu tests: bundle ${B}, filter ${F}, ${N} shards, $((SECONDS - t0)) s"
  grep -E '^\[  FAILED  \] [A-Za-z]' "${tmp}/all.log" | sed 's/ ([0-9]* ms)$//' | sort -u
  awk '/^\[  PASSED  \]/ {p += $4} /^\[  SKIPPED \] [0-9]/ {s += $4} /^\[  FAILED  \] [0-9]/ {f += $4}
       END {printf "gpu tests: %d passed, %d failed, %d skipped\n", p, f, s}' "${tmp}/all.log"
  for ((i = 0; i < N; i++)); do
    grep -qE '^\[  PASSED  \]|^\[  FAILED  \] [0-9]' "${tmp}/s${i}.log" ||
      echo "shard ${i}: NO RESULT (cut by TT=${TT}?): $(tail -n 1 "${tmp}/s${i}.log")"
  done
  grep -E '^\[  SKIPPED \] [A-Za-z]' "${tmp}/all.log" | sed 's/ ([0-9]* ms)$//' | sort -u
  # the slowest tests and the slowest shard's total (where the suite's wall time goes)
  echo "-- slowest tests (ms):"
  sed -nE 's/^\[       OK \] ([^ ]+) \(([0-9]+) ms\)$/\2 \1/p' "${tmp}/all.log" | sort -rn | head -n "${SLOWEST:-12}"
  for ((i = 0; i < N; i++)); do
    sed -nE 's/^\[==========\] .* ran\. \(([0-9]+) ms total\)$/\1/p' "${tmp}/s${i}.log" | sed "s/^/shard ${i}: /;s/$/ ms/"
  done | sort -t: -k2 -rn | head -n 3
} | tee "${OUT}/gpu_${B}.log"
grep -B40 -E '^\[  FAILED  \] [A-Za-z].*\(' "${tmp}/all.log" | grep -v '^\[       OK' | head -n 400 >"${OUT}/gpu_${B}_detail.log"
rm -rf "${tmp}"
