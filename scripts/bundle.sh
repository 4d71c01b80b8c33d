#!/usr/bin/env bash
# Builds preset `bundle` (sm_90a) and stages a self-contained folder for the GPU machine:
#
#   bundle/baracuda/
#     bin/      baracuda, baracuda-bench, baracuda_unit_tests, baracuda_gpu_tests
#               (RUNPATH $ORIGIN/../lib)
#     lib/      libbaracuda.so* (RUNPATH $ORIGIN) + its CMake package, include/ beside it
#     bench/    compare_torch.py
#     run.sh    runs everything there, logs to $OUT (see docs/gpu-workflow.md)
#     BUILD_INFO
#
# The folder must stay under 60 MiB (it travels to the device machine with the working
# tree, 64 MiB in all); this script fails when it is larger.
# Environment: BARACUDA_JOBS (build jobs, default: the number of cores); BARACUDA_BUNDLE_QUICK=1
# builds and stages only what a device run of the GPU tests and the bench needs (no unit tests,
# no header check: about a quarter of a cold build's translation units on the 2-core machine).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="${PWD}"
jobs="${BARACUDA_JOBS:-$(nproc)}"
build="${root}/build/bundle"
dest="${root}/bundle/baracuda"
max_bytes=$((60 * 1024 * 1024))

# shellcheck source=/dev/null  # (setup.sh returns early when sourced)
source scripts/setup.sh

mkdir -p "${build}"
cmake --preset bundle >"${build}/configure.log" 2>&1 ||
  { cat "${build}/configure.log" >&2; echo "bundle.sh: cmake --preset bundle failed" >&2; exit 1; }
binaries=(
  tools/baracuda
  bench/baracuda-bench
  tests/baracuda_gpu_tests
)
if [[ "${BARACUDA_BUNDLE_QUICK:-0}" == 1 ]]; then
  cmake --build --preset bundle -j "${jobs}" --target baracuda_cli baracuda-bench baracuda_gpu_tests
else
  binaries+=(tests/baracuda_unit_tests)
  cmake --build --preset bundle -j "${jobs}"
fi
for b in "${binaries[@]}"; do
  [[ -x "${build}/${b}" ]] || { echo "bundle.sh: ${build#"${root}/"}/${b} was not built" >&2; exit 1; }
done

rm -rf "${dest}"
cmake --install "${build}" --prefix "${dest}" >"${build}/install.log" 2>&1 ||
  { cat "${build}/install.log" >&2; echo "bundle.sh: cmake --install failed" >&2; exit 1; }
mkdir -p "${dest}/bin" "${dest}/lib" "${dest}/bench"
for b in "${binaries[@]}"; do
  install -m 755 "${build}/${b}" "${dest}/bin/"
done

# Shared libraries of this build that the binaries need (libbaracuda, and any other the
# tests link) go into lib/.
for f in "${dest}"/bin/*; do
  ldd "${f}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
    case "$(readlink -f "${lib}")" in
      "${build}"/*)
        base="$(basename "${lib}")"
        if [[ ! -e "${dest}/lib/${base}" ]]; then
          cp -P "${lib}" "${dest}/lib/"
          [[ -L "${lib}" ]] && cp "$(readlink -f "${lib}")" "${dest}/lib/"
        fi
        ;;
    esac
  done
done

# $ORIGIN rpaths: the build tree's absolute paths must not leak into the bundle.
# shellcheck disable=SC2016  # '$ORIGIN' is literal
if command -v patchelf >/dev/null 2>&1; then
  for f in "${dest}"/bin/*; do
    patchelf --set-rpath '$ORIGIN/../lib' "${f}"
  done
  for f in "${dest}"/lib/*.so*; do
    [[ -L "${f}" ]] || patchelf --set-rpath '$ORIGIN' "${f}"
  done
else
  echo "bundle.sh: patchelf not found: the binaries keep CMake's rpath (run scripts/setup.sh)" >&2
fi

if [[ -f bench/compare_torch.py ]]; then
  install -m 644 bench/compare_torch.py "${dest}/bench/"
else
  echo "bundle.sh: warning: bench/compare_torch.py does not exist yet; the compare step will fail" >&2
fi

{
  echo "baracuda bundle"
  echo "built:      $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "commit:     $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "archs:      $(sed -n 's/^BARACUDA_CUDA_ARCHS:[A-Z]*=//p' "${build}/CMakeCache.txt")"
  echo "cuda:       $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "needs:      $(for f in "${dest}"/lib/libbaracuda.so.*.*; do readelf -d "${f}" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'; done | tr '\n' ' ')"
} >"${dest}/BUILD_INFO"

# ------------------------------------------------------------------ run.sh (runs on the GPU machine)
cat >"${dest}/run.sh" <<'RUN_SH'
#!/usr/bin/env bash
# shellcheck disable=SC2086,SC2317  # *_ARGS are word-split on purpose; steps are called by name
# Runs the baracuda bundle on a GPU machine, from anywhere:
#   OUT=/some/dir bundle/baracuda/run.sh
# Writes at most 8 files to ${OUT:-./out} (relative to this folder):
#   run.log          nvidia-smi, library paths, `baracuda info`, the summary table
#   unit_tests.log   gpu_tests.log  check.log  bench.log  bench.jsonl  compare.log
#   GPU_SHARDS      parallel gtest shards for the GPU tests (default 8)
# Environment:
#   STEPS           comma list, default info,unit,gpu,check,bench,compare; also: sanitize
#                   (compute-sanitizer on the GPU tests -> sanitize.log; not in the default)
#   GPU_TEST_ARGS   extra arguments for baracuda_gpu_tests (e.g. --gtest_filter=Unary*)
#   UNIT_TEST_ARGS  extra arguments for baracuda_unit_tests
#   CHECK_ARGS      extra arguments for `baracuda check`
#   BENCH_ARGS      arguments for baracuda-bench (default: --suite foundation)
#   COMPARE_ARGS    extra arguments for bench/compare_torch.py
#   SANITIZE_TOOL   memcheck (default), racecheck, initcheck or synccheck
#   SANITIZE_ARGS   arguments for the tests under the sanitizer (default: GPU_TEST_ARGS)
#   STEP_TIMEOUT    seconds each step may run (default 0: no limit)
#   PYTHON          the Python with PyTorch (default python3)
# Every step runs even when an earlier one failed; the exit status is 1 when any failed.
set -uo pipefail

cd "$(dirname "$0")" || exit 1
# bundle.sh ships files over 1 MiB as FILE.xz: restore them once.
find . -type f -name '*.xz' -print0 | xargs -0 -r xz -d -T0 -f || { echo "run.sh: could not decompress the bundle" >&2; exit 1; }
OUT="${OUT:-./out}"
mkdir -p "${OUT}"
OUT="$(cd "${OUT}" && pwd)"
STEPS="${STEPS:-info,unit,gpu,check,bench,compare}"
GPU_TEST_ARGS="${GPU_TEST_ARGS:-}"
UNIT_TEST_ARGS="${UNIT_TEST_ARGS:-}"
CHECK_ARGS="${CHECK_ARGS:-}"
BENCH_ARGS="${BENCH_ARGS:---suite foundation}"
COMPARE_ARGS="${COMPARE_ARGS:-}"
SANITIZE_TOOL="${SANITIZE_TOOL:-memcheck}"
SANITIZE_ARGS="${SANITIZE_ARGS:-${GPU_TEST_ARGS}}"
STEP_TIMEOUT="${STEP_TIMEOUT:-0}"
PYTHON="${PYTHON:-python3}"
log="${OUT}/run.log"
: >"${log}"

note() { echo "$*" | tee -a "${log}"; }

note "== baracuda bundle run: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), STEPS=${STEPS}"
cat BUILD_INFO >>"${log}" 2>/dev/null
note "bundle size: $(du -sh . 2>/dev/null | cut -f1)"
{
  echo "== nvidia-smi"
  nvidia-smi 2>&1 || echo "(nvidia-smi failed: rc $?)"
} >>"${log}"

# ------------------------------------------------------------------ find the CUDA libraries
# libcudart / libcublasLt / libcudnn come from the machine: the system (ld cache,
# /usr/local/cuda) or PyTorch's nvidia-* wheels.
missing_libs() {
  ldd lib/libbaracuda.so bin/* 2>/dev/null | awk '/=> not found/ { print $1 }' | sort -u
}
missing="$(missing_libs)"
if [[ -n "${missing}" ]]; then
  note "not found by the loader: ${missing//$'\n'/ }"
  candidates="$("${PYTHON}" - 2>/dev/null <<'PY'
import importlib, os
for m in ("nvidia.cudnn", "nvidia.cu13", "nvidia.cublas", "nvidia.cuda_runtime"):
    try:
        mod = importlib.import_module(m)
    except Exception:
        continue
    for p in getattr(mod, "__path__", []):
        d = os.path.join(p, "lib")
        if os.path.isdir(d):
            print(d)
PY
)"
  candidates+=$'\n'"/usr/local/cuda/lib64"$'\n'"/usr/local/cuda/targets/x86_64-linux/lib"
  for d in ${candidates}; do
    [[ -d "${d}" ]] || continue
    for lib in ${missing}; do
      if [[ -e "${d}/${lib}" ]]; then
        case ":${LD_LIBRARY_PATH:-}:" in *":${d}:"*) ;; *) export LD_LIBRARY_PATH="${d}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}" ;; esac
        note "  ${lib}: ${d} (added to LD_LIBRARY_PATH)"
      fi
    done
  done
  still="$(missing_libs)"
  [[ -z "${still}" ]] || note "STILL MISSING: ${still//$'\n'/ } (the binaries will not start)"
fi
{
  echo "== libraries"
  ldd lib/libbaracuda.so 2>&1 | grep -E 'cudart|cublas|cudnn|baracuda'
} >>"${log}"

# ------------------------------------------------------------------ steps
names=()
rcs=()
secs=()
enabled() { [[ ",${STEPS}," == *",$1,"* ]]; }
limit() {
  if [[ "${STEP_TIMEOUT}" != 0 ]]; then timeout --kill-after=10 "${STEP_TIMEOUT}" "$@"; else "$@"; fi
}
step() {  # step NAME FUNCTION
  local name="$1" fn="$2" t0 rc
  enabled "${name}" || return 0
  note ""
  note "== ${name}"
  t0=${SECONDS}
  "${fn}"
  rc=$?
  names+=("${name}")
  rcs+=("${rc}")
  secs+=("$((SECONDS - t0))")
  note "== ${name}: rc ${rc} ($((SECONDS - t0)) s)"
}

do_info() { limit bin/baracuda info 2>&1 | tee -a "${log}"; }
do_unit() { limit bin/baracuda_unit_tests ${UNIT_TEST_ARGS} >"${OUT}/unit_tests.log" 2>&1; local rc=$?; tail -n 3 "${OUT}/unit_tests.log" | tee -a "${log}"; return ${rc}; }
do_gpu() {  # GPU_SHARDS gtest shards in parallel (the oracle is single-threaded CPU work)
  local n="${GPU_SHARDS:-8}" rc=0 i
  local pids=()
  for ((i = 0; i < n; i++)); do
    GTEST_TOTAL_SHARDS=${n} GTEST_SHARD_INDEX=${i} limit bin/baracuda_gpu_tests ${GPU_TEST_ARGS} \
      >"${OUT}/gpu_shard_${i}.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
  cat "${OUT}"/gpu_shard_*.log >"${OUT}/gpu_tests.log"
  rm -f "${OUT}"/gpu_shard_*.log
  {
    grep -E '^\[  FAILED  \] [A-Za-z]' "${OUT}/gpu_tests.log" | sort -u
    awk '/^\[  PASSED  \]/ {p += $4} /^\[  SKIPPED \] [0-9]/ {s += $4} /^\[  FAILED  \] [0-9]/ {f += $4}
         END {printf "gpu tests (%s shards): %d passed, %d failed, %d skipped\n", "'"${n}"'", p, f, s}' "${OUT}/gpu_tests.log"
  } | tee -a "${log}"
  return ${rc}
}
do_check() { limit bin/baracuda check ${CHECK_ARGS} 2>&1 | tee "${OUT}/check.log"; }
do_bench() { limit bin/baracuda-bench ${BENCH_ARGS} --json "${OUT}/bench.jsonl" 2>&1 | tee "${OUT}/bench.log"; }
do_compare() {
  limit "${PYTHON}" bench/compare_torch.py --baracuda "${OUT}/bench.jsonl" ${COMPARE_ARGS} 2>&1 | tee "${OUT}/compare.log"
}
do_sanitize() {
  limit compute-sanitizer --tool "${SANITIZE_TOOL}" --error-exitcode 86 bin/baracuda_gpu_tests ${SANITIZE_ARGS} \
    >"${OUT}/sanitize.log" 2>&1
  local rc=$?
  tail -n 5 "${OUT}/sanitize.log" | tee -a "${log}"
  return ${rc}
}

step info do_info
step unit do_unit
step gpu do_gpu
step check do_check
step bench do_bench
step compare do_compare
step sanitize do_sanitize

# ------------------------------------------------------------------ summary
failed=0
{
  echo
  printf '%-10s %6s %8s\n' step rc seconds
  for i in "${!names[@]}"; do
    printf '%-10s %6s %8s\n' "${names[$i]}" "${rcs[$i]}" "${secs[$i]}"
  done
} | tee -a "${log}"
for r in "${rcs[@]}"; do [[ "${r}" == 0 ]] || failed=1; done
note "logs: ${OUT} ($(ls "${OUT}" | tr '\n' ' '))"
exit "${failed}"
RUN_SH
chmod 755 "${dest}/run.sh"

# ------------------------------------------------------------------ compression
# The library's fat binaries compress about 20:1, so every regular file over 1 MiB travels
# as FILE.xz; run.sh restores them on the GPU machine before its first step.
find "${dest}" -type f -size +1M ! -name '*.xz' -print0 | xargs -0 -r xz -T0 -6 -f

# ------------------------------------------------------------------ size check
bytes="$(du -sb "${dest}" | cut -f1)"
mib="$(awk -v b="${bytes}" 'BEGIN { printf "%.1f", b / 1048576 }')"
if ((bytes > max_bytes)); then
  echo "bundle.sh: ${dest#"${root}/"} is ${mib} MiB, over the 60 MiB limit:" >&2
  du -ab "${dest}" | sort -rn | head -n 8 | awk '{ printf "  %8.1f MiB  %s\n", $1 / 1048576, $2 }' >&2
  exit 1
fi
echo "bundle.sh: ${dest#"${root}/"} ready (${mib} MiB of 60): $(cd "${dest}" && echo bin/* lib/libbaracuda.so* | tr '\n' ' ')"
echo "  on the GPU machine: carry 'bundle', run: OUT=\$OUT bundle/baracuda/run.sh   (docs/gpu-workflow.md)"
