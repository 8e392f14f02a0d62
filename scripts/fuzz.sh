#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan) and runs each one.
#   scripts/fuzz.sh                      every target for 20 s (the CI setting)
#   scripts/fuzz.sh --seconds 300        every target for 300 s
#   scripts/fuzz.sh --runs 1000000       every target for exactly 1,000,000 executions
#   scripts/fuzz.sh --runs 1000000 fuzz_lint_source fuzz_cli_numbers   only those targets
# tests/fuzz/<target>.options adds libFuzzer flags (a larger -max_len, a dictionary). Each target first re-runs its regression inputs (tests/fuzz/regressions/<target>/, one per bug found),
# then fuzzes from its seed corpus (tests/fuzz/corpus/<target>/) into a scratch corpus under
# build-fuzz/fuzz-work/. A crash, sanitizer report, leak or property violation fails the script and
# leaves the input under build-fuzz/fuzz-work/<target>/findings/; so does a single allocation above 2 GiB
# (-malloc_limit_mb=2048: no parser input of a few kB may justify one). The summary (executions per target)
# is printed and written to build-fuzz/fuzz-summary.txt for docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=20
runs=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
  --seconds) seconds=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  *) targets+=("$1"); shift ;;
  esac
done

build=$(realpath -m "${REPROCL_FUZZ_BUILD:-build-fuzz}")
command -v clang >/dev/null || { echo "fuzz.sh: clang is required (apt-get install clang)" >&2; exit 2; }
if [ ! -f "$build/build.ninja" ]; then
  CC=clang cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPROCL_FUZZ=ON \
    -DREPROCL_BUILD_TESTS=OFF -DREPROCL_BUILD_CLI=OFF >/dev/null
fi
cmake --build "$build" >/dev/null
[ ${#targets[@]} -gt 0 ] || mapfile -t targets <"$build/fuzz-targets.txt"

# Only the two CPU drivers CI tests, PoCL and Rusticl (Mesa's Clover, also installed, has no device
# here and leaks from a library it unloads, which no suppression can name: docs/reliability.md).
# Driver-internal leaks are suppressed by function name, never reprocl's.
if [ -z "${OCL_ICD_VENDORS:-}" ]; then
  mkdir -p "$build/icd"
  for v in pocl rusticl; do [ -e "/etc/OpenCL/vendors/$v.icd" ] && ln -sf "/etc/OpenCL/vendors/$v.icd" "$build/icd/"; done
  export OCL_ICD_VENDORS=$build/icd
fi
export RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe}
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

summary="$build/fuzz-summary.txt"
{
  if [ -n "$runs" ]; then mode="--runs $runs"; else mode="--seconds $seconds"; fi
  echo "# scripts/fuzz.sh $mode on $(date -u +%Y-%m-%d) ($(nproc) cores, $(clang --version | head -1))"
  printf '%-24s %12s %8s %10s %s\n' target executions seconds corpus result
} >"$summary"
failed=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
  work="$build/fuzz-work/$t"
  mkdir -p "$work/corpus" "$work/findings"
  result=ok
  # 1. regression inputs: each must now run clean.
  if [ -d "tests/fuzz/regressions/$t" ] && [ -n "$(ls -A "tests/fuzz/regressions/$t")" ]; then
    if ! "$bin" "tests/fuzz/regressions/$t"/* >"$work/regressions.log" 2>&1; then
      echo "FAIL $t: a regression input fails again (see $work/regressions.log)"
      result=REGRESSION
      failed=1
    fi
  fi
  # 2. fuzzing from the seeds (read-only) into the scratch corpus.
  limit=(-max_total_time="$seconds")
  [ -n "$runs" ] && limit=(-runs="$runs")
  extra=()
  [ -f "tests/fuzz/$t.options" ] && read -r -a extra <"tests/fuzz/$t.options"
  seeds=()
  [ -d "tests/fuzz/corpus/$t" ] && seeds+=("tests/fuzz/corpus/$t")
  # The lint's real inputs are the kernels themselves: seed from cl/ as it is (no copies to go stale).
  [ "$t" = fuzz_lint_source ] && seeds+=("cl")
  t0=$(date +%s)
  set +e
  "$bin" "${limit[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=2048 -print_final_stats=1 "${extra[@]}" \
    -artifact_prefix="$work/findings/" "$work/corpus" "${seeds[@]}" >"$work/fuzz.log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - t0 ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)
  if [ $rc -ne 0 ]; then
    result="FINDING (exit $rc, $(ls "$work/findings" | head -1))"
    failed=1
    echo "FAIL $t:"
    grep -E "ERROR|property violated|SUMMARY|Test unit written" "$work/fuzz.log" | head -8 | sed 's/^/     /'
  fi
  ncorpus=$(ls "$work/corpus" | wc -l)
  printf '%-24s %12s %8s %10s %s\n' "$t" "${execs:-?}" "$secs" "$ncorpus" "$result" | tee -a "$summary"
done
echo "summary: $summary"
exit $failed
