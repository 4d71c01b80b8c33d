#!/usr/bin/env bash
# The test command (README, .ci/run). On a fresh Debian 12 machine with the CUDA toolkit:
#   scripts/test.sh
# 1. scripts/setup.sh (Debian packages, pinned CMake and NVIDIA headers in third_party/)
# 2. configure + build preset `ci` (sm_90a SASS + sm_80 PTX; BARACUDA_JOBS, default 2)
# 3. ctest --preset gpu: without a GPU every test skips itself (ctest counts it skipped);
#    the skip reasons are printed
# 4. ctest --preset unit (no GPU needed)
# 5. install into build/ci-install and build + run tests/consumer against it (find_package)
# Ends with the wall time of each phase. Exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="${PWD}"
jobs="${BARACUDA_JOBS:-2}"
build="${root}/build/ci"

# ------------------------------------------------------------------ phase timing
phase_names=()
phase_secs=()
phase_results=()
current=""
current_note=""
t_start=0
now() { date +%s.%N; }
begin() {
  current="$1"
  current_note=""
  t_start="$(now)"
  echo
  echo "==> ${current}"
}
end() {
  phase_names+=("${current}")
  phase_secs+=("$(awk -v a="${t_start}" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')")
  phase_results+=("${1:-ok}${current_note:+ (${current_note})}")
  current=""
}
summary() {
  local rc=$?
  [[ -n "${current}" ]] && end "FAILED"
  echo
  printf '%-12s %9s  %s\n' "phase" "seconds" "result"
  local i total=0
  for i in "${!phase_names[@]}"; do
    printf '%-12s %9s  %s\n' "${phase_names[$i]}" "${phase_secs[$i]}" "${phase_results[$i]}"
    total="$(awk -v a="${total}" -v b="${phase_secs[$i]}" 'BEGIN { printf "%.1f", a + b }')"
  done
  printf '%-12s %9s  %s\n' "total" "${total}" "$([[ ${rc} -eq 0 ]] && echo "PASS" || echo "FAIL (exit ${rc})")"
  exit "${rc}"
}
trap summary EXIT

# ------------------------------------------------------------------ 1. setup
begin "setup"
# shellcheck source=/dev/null  # (setup.sh returns early when sourced)
source scripts/setup.sh
echo "cmake: $(command -v cmake) ($(cmake --version | head -n1 | sed 's/cmake version //'))"
end

# ------------------------------------------------------------------ 2. configure + build
begin "configure"
cmake --preset ci
end

begin "build"
cmake --build --preset ci -j "${jobs}"
if command -v ccache >/dev/null 2>&1; then
  current_note="ccache $(ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
    $1 == "cache_miss" { m += $2 }
    END { printf "hits %d, misses %d (all time)", h, m }')"
fi
end

# ------------------------------------------------------------------ 3. gpu tests (skip visibly without a GPU)
begin "gpu tests"
gpu_log="${build}/gpu-tests.log"
if ! ctest --preset gpu >"${gpu_log}" 2>&1; then
  cat "${gpu_log}"
  echo "gpu tests FAILED (a test that cannot run here must skip itself, not fail)" >&2
  exit 1
fi
grep -E 'tests failed|Total Test time' "${gpu_log}" | sed 's/^/  gpu label: /' || true
# GoogleTest prints "<file>:<line>: Skipped" followed by the reason; count each reason.
reasons="$(grep -A1 -E ': Skipped$' "${build}/Testing/Temporary/LastTest.log" 2>/dev/null |
  grep -v -E ': Skipped$|^--$' | sed 's/^[[:space:]]*//' | sort | uniq -c | sort -rn |
  awk '{ n = $1; sub(/^[[:space:]]*[0-9]+[[:space:]]/, ""); printf "  %5d x %s\n", n, $0 }' || true)"
nskipped="$(grep -c -E '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "${build}/Testing/Temporary/LastTest.log" 2>/dev/null || true)"
if [[ -n "${reasons}" ]]; then
  echo "skipped gtest cases by reason:"
  echo "${reasons}" | head -n 20
  current_note="${nskipped:-some} gtest cases skipped; see above"
else
  current_note="none skipped"
fi
end

# ------------------------------------------------------------------ 4. unit tests (last: its ctest summary closes the run)
begin "unit tests"
ctest --preset unit
end

# ------------------------------------------------------------------ 5. install + consumer project
begin "consumer"
rm -rf build/ci-install build/consumer
cmake --install build/ci --prefix "${root}/build/ci-install" >build/ci/install.log 2>&1 ||
  { cat build/ci/install.log; exit 1; }
cmake -S tests/consumer -B build/consumer -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="${root}/build/ci-install" >build/ci/consumer-configure.log 2>&1 ||
  { cat build/ci/consumer-configure.log; exit 1; }
cmake --build build/consumer
build/consumer/consumer
end
