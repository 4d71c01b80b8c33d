#!/usr/bin/env bash
# On the GPU machine: interleaved A/B timing of staged bundles. For each of $ROUNDS rounds, each
# bundle of $BUNDLES runs every case of the file $CASES (lines "op dtype shape [sku-glob]",
# # comments) through baracuda-bench; prints "bundle round op dtype shape sku median_ms min_ms".
#   BUNDLES="base variant" ROUNDS=3 CASES=.devrun/cases.txt bash scripts/devrun/ab.sh
# Compare mins first: long tensor-core runs have bimodal medians (bench/results session 19).
# shellcheck source=scripts/devrun/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BUNDLES="${BUNDLES:?BUNDLES: bundle names under .devrun}"
CASES="${CASES:?CASES: a file of 'op dtype shape [sku]' lines}"
ROUNDS="${ROUNDS:-3}"
REPS="${REPS:-30}"
declare -A one_process  # bundles whose bench takes --cases (built from session 25 on)
for b in ${BUNDLES}; do
  bench="$(devrun_binary "${b}" baracuda-bench)" || exit 1
  "${bench}" --help 2>/dev/null | grep -q -- '--cases' && one_process[${b}]=1
done
ops="$(awk '$1 !~ /^#/ && NF {print $1}' "${CASES}" | sort -u | tr '\n' ' ')"
for ((r = 1; r <= ROUNDS; r++)); do
  for b in ${BUNDLES}; do
    bench="$(devrun_binary "${b}" baracuda-bench)"
    if [[ -n "${one_process[${b}]:-}" ]]; then  # one process for all the cases
      if out="$("${bench}" --cases "${CASES}" --reps "${REPS}" 2>&1)"; then
        awk -v b="${b}" -v r="${r}" -v ops="${ops}" 'BEGIN {n = split(ops, a, " "); for (i = 1; i <= n; ++i) k[a[i]] = 1}
          ($1 in k) && NF >= 6 {print b, r, $1, $2, $3, $4, $5, $6}' <<<"${out}"
        continue
      fi
      # e.g. an op this (older) bundle does not know: its cases one by one, the rest still timed
      echo "ab.sh: ${b} refused ${CASES} ($(tail -n 1 <<<"${out}")); its cases one by one" >&2
    fi
    while read -r op dtype shape sku; do
      [[ -z "${op}" || "${op}" == \#* ]] && continue
      "${bench}" --op "${op}" --dtype "${dtype}" --shape "${shape}" \
        ${sku:+--sku "${sku}"} --reps "${REPS}" 2>&1 |
        awk -v b="${b}" -v r="${r}" -v o="${op}" '$1 == o {print b, r, $1, $2, $3, $4, $5, $6}'
    done <"${CASES}"
  done
done
