#!/usr/bin/env bash
# On the GPU machine: one device call's usual sequence, time-boxed so that it ends before the
# call's limit with its logs written: unpack, the GPU tests of bundle $B (filter $F) for at
# most $TT seconds, then the bench suites $S (each compared with PyTorch by suites.sh) while
# time is left. LIMIT: seconds the whole command may take (a little under run's timeout_s).
#   LIMIT=580 B=main F='*' TT=320 S="gemm reduce softmax" bash scripts/devrun/session.sh
#   LIMIT=580 B=main F='' S="attention norm scan" INTERLEAVE=1 bash scripts/devrun/session.sh
# F='' skips the tests. Writes what tests.sh and suites.sh write under $OUT.
# shellcheck source=scripts/devrun/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
LIMIT="${LIMIT:-580}"
B="${B:?B: the bundle name under .devrun}"
t0=${SECONDS}
left() { echo $((LIMIT - (SECONDS - t0) - ${1:-8})); }
bash scripts/devrun/unpack.sh
if [[ -n "${F-*}" ]]; then
  tt=$(left 20)
  ((tt > ${TT:-320})) && tt=${TT:-320}
  B="${B}" F="${F-*}" TT="${tt}" bash scripts/devrun/tests.sh
  echo "== session.sh: t = $((SECONDS - t0)) s after the tests"
fi
for s in ${S:-}; do
  l=$(left)
  ((l < 30)) && { echo "== session.sh: suite ${s} skipped (${l} s left)"; continue; }
  B="${B}" S="${s}" timeout -k 3 "${l}" bash scripts/devrun/suites.sh
  echo "== session.sh: t = $((SECONDS - t0)) s after suite ${s}"
done
