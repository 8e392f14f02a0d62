#!/usr/bin/env bash
# The reliability jobs of CI (docs/reliability.md), run by .ci/run after the main test command:
#   1. sanitize  build with -fsanitize=address,undefined (gcc) and run the whole ctest suite on PoCL
#                (memory errors, UB), then the reliability set with LeakSanitizer on PoCL and Rusticl
#                (REPROCL_SANITIZE_ALL=1: the whole suite on both with leak checks); then the leak
#                canary: clean must pass, leaky must be reported with reprocl's frames.
#   2. valgrind  the normal build (build/, from scripts/run-tests.sh) under
#                valgrind --leak-check=full --error-exitcode=1 with tests/sanitizers/valgrind.supp: the
#                canary both ways, every host-side test case, one representative device test per
#                kernel family, and the CLI (see the list below and docs/reliability.md).
#   3. fuzz      every libFuzzer target for a short time (scripts/fuzz.sh, clang).
# Every job starts from empty caches of its own (PoCL's kernel cache, Mesa's shader cache, reprocl's cache),
# warmed by an uninstrumented first run of what the checked runs compile: a job must not pass only on a
# machine whose caches earlier work warmed (docs/reliability.md, "Hermetic jobs").
# Usage: scripts/ci-reliability.sh [sanitize] [valgrind] [fuzz]   (default: all three)
# Environment: REPROCL_FUZZ_SECONDS (default 20 per target), REPROCL_SANITIZE_ALL (1: whole suite on both drivers).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=("$@")
[ ${#jobs[@]} -gt 0 ] || jobs=(sanitize valgrind fuzz)

export RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe}
export REPROCL_TEST_MIN_DEVICES=${REPROCL_TEST_MIN_DEVICES:-2}
# The drivers CI tests are PoCL and Rusticl. Mesa's Clover (mesa.icd, installed with mesa-opencl-icd)
# has no device here and leaks from a library it has already unloaded, which no suppression can name,
# so the ICD loader is pointed at the other two only.
icd=$root/build-reliability-icd
mkdir -p "$icd"
for v in pocl rusticl; do
  [ -e "/etc/OpenCL/vendors/$v.icd" ] || { echo "ci-reliability: /etc/OpenCL/vendors/$v.icd missing" >&2; exit 2; }
  ln -sf "/etc/OpenCL/vendors/$v.icd" "$icd/"
done
export OCL_ICD_VENDORS=$icd

failed=()
stage() { printf '\n==== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
timed() { # timed NAME command...: runs it, records a failure, prints wall and CPU time
  local name=$1 rc
  shift
  set +e
  /usr/bin/time -f "%e s wall, %U s user, %S s sys" -o "$tmpd/time" "$@"
  rc=$?
  set -e
  echo "---- $name: exit $rc, $(cat "$tmpd/time")"
  [ $rc -eq 0 ] || failed+=("$name")
  return 0
}
# timed NAME "${to_null[@]}" command...: the command's stdout discarded, timed's own line kept.
to_null=(bash -c '"$@" >/dev/null' to-null)
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
# fresh_caches JOB: empty cache directories for JOB, never a developer's ~/.cache (PoCL's kernel cache
# follows POCL_CACHE_DIR, else XDG_CACHE_HOME; Mesa's MESA_SHADER_CACHE_DIR; reprocl's REPROCL_CACHE_DIR,
# which ctest's tests replace with their build directory's test-cache, emptied by each job below).
fresh_caches() {
  local d=$tmpd/cache-$1
  rm -rf "$d"
  mkdir -p "$d/pocl" "$d/mesa" "$d/reprocl"
  export XDG_CACHE_HOME=$d POCL_CACHE_DIR=$d/pocl MESA_SHADER_CACHE_DIR=$d/mesa REPROCL_CACHE_DIR=$d/reprocl
}

# Checks that a leaky canary run was reported, with reprocl's own frames in the report.
expect_canary_reported() { # LOG TOOL
  local log=$1 tool=$2 missing=0
  for frame in rcl_devices rcl_program_build rcl_context_create; do
    grep -q "$frame" "$log" || { echo "FAIL $tool did not report the canary's leak through $frame"; missing=1; }
  done
  # The dropped cl_mem: its allocation is the driver's, reached through rcl__buffer_create, whose frame
  # the fast frame-pointer unwinder may lose inside Rusticl's Rust code; the canary's own line (the
  # rcl__buffer_create call in leak_on) proves the report all the same.
  local bufline
  bufline=$(grep -n 'rcl__buffer_create(&m' "$root/tests/sanitizers/leak_canary.c" | cut -d: -f1)
  grep -qE "rcl__buffer_create|leak_canary\.c:$bufline" "$log" ||
    { echo "FAIL $tool did not report the canary's dropped buffer (rcl__buffer_create, leak_canary.c:$bufline)"; missing=1; }
  [ $missing -eq 0 ] && echo "ok   $tool reports every deliberate leak with reprocl's frames"
  return $missing
}

for job in "${jobs[@]}"; do
  case "$job" in
  sanitize)
    stage "sanitize: ASan + UBSan build: whole suite on PoCL; reliability set with leak check on PoCL and Rusticl"
    asan=${REPROCL_RELIABILITY_ASAN_BUILD:-build-asan}
    cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPROCL_SANITIZE=ON >/dev/null
    cmake --build "$asan" >/dev/null
    fresh_caches sanitize
    rm -rf "$asan/test-cache"
    export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    # detect_leaks is on by default with ASan on Linux; said here so nobody wonders.
    export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1"
    # 1. The whole suite on PoCL (every test but cli_install: it builds and runs an uninstrumented
    #    consumer against the installed, here instrumented, shared library, and ASan must come first in a
    #    process, which a consumer built without -fsanitize cannot arrange; packaging is tested by the
    #    main job), for memory errors and undefined behaviour, with leak detection off: on a machine whose
    #    PoCL kernel cache is cold, PoCL 3.1 leaks LLVM objects while compiling (operator new inside
    #    libpocl/libLLVM, no symbol to name; test_bounds, test_spmv, test_tune_families, cli_check,
    #    cli_tune), and a module-wide suppression would hide reprocl's own leaks through PoCL too.
    # 2. Leaks: the reliability set with LeakSanitizer on, on PoCL and Rusticl together — every fault,
    #    failing-allocator, hostile-input, policy and cache test, the host references, SOR, the audit and
    #    the CLI through cli_hostile, whose kernels PoCL compiles without leaking — then test_md's every
    #    case on PoCL, and the leak canary below. valgrind's job covers leaks on PoCL end to end.
    # REPROCL_SANITIZE_ALL=1: the whole suite on both drivers with leak detection.
    mkdir -p "$tmpd/icd-pocl"
    ln -sf /etc/OpenCL/vendors/pocl.icd "$tmpd/icd-pocl/"
    if [ "${REPROCL_SANITIZE_ALL:-0}" = 1 ]; then
      # Warm-up without leak check: PoCL leaks while compiling into a cold cache (above).
      timed "sanitize: whole suite, PoCL and Rusticl (no leak check: warm-up)" \
        env ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" ctest --test-dir "$asan" --output-on-failure --timeout 3000 -E '^cli_install$'
      timed "sanitize: whole suite, PoCL and Rusticl" ctest --test-dir "$asan" --output-on-failure --timeout 3000 -E '^cli_install$'
    else
      leak_set='^(test_context|test_failalloc|test_faults|test_grid_io|test_hostile_policy|test_hostile_readers'
      leak_set+='|test_policy|test_prelude|test_softfloat|test_sor|test_sparse_io|test_tune_cache|test_audit'
      leak_set+='|cli_hostile)$'
      # cli_mpi is left out too: it is the command-line matrix of reprocl-mpi (K = 1..5 ranks x every command),
      # ~10 minutes uninstrumented on 2 cores; the MPI layer's code runs under ASan through test_mpi_* with 1 to
      # 3 ranks (3: a count that is no power of two, uneven shares), the 4- and 5-rank runs in the main job only. The
      # reliability set is left out here as well: it runs twice below under this same build, on PoCL and Rusticl.
      timed "sanitize: whole suite on PoCL (ASan + UBSan, no leak check)" env OCL_ICD_VENDORS="$tmpd/icd-pocl" \
        REPROCL_TEST_MIN_DEVICES=1 ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
        ctest --test-dir "$asan" --output-on-failure --timeout 3000 -E "^(cli_install|cli_mpi|test_mpi_[a-z]+_np[45])\$|$leak_set"
      # From empty caches (Mesa's and reprocl's) Rusticl leaks blobs while it builds a program the first
      # time (realloc inside libRusticlOpenCL.so, no frame LSan can name; test_audit, test_context,
      # test_failalloc, test_hostile_policy, test_prelude): the set runs once without leak check first,
      # so that the checked run builds nothing new.
      timed "sanitize: reliability set without leak check (warm-up)" env ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
        ctest --test-dir "$asan" --timeout 3000 -R "$leak_set" >/dev/null
      timed "sanitize: reliability set with leak check, PoCL and Rusticl" \
        ctest --test-dir "$asan" --output-on-failure --timeout 3000 -R "$leak_set"
      # test_md's device cases under LSan on PoCL only: under Rusticl LSan reports 128 bytes realloc'ed
      # from code it cannot name (llvmpipe's JIT-compiled kernel); docs/reliability.md, "Sanitizers".
      timed "sanitize: test_md with leak check (PoCL)" env OCL_ICD_VENDORS="$tmpd/icd-pocl" REPROCL_TEST_MIN_DEVICES=1 \
        "$asan"/tests/test_md
    fi
    # The canary's own program was compiled by none of the runs above: warm the caches for it first.
    timed "sanitize: canary warm-up (no leak check)" env ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
      "${to_null[@]}" "$asan"/tests/leak_canary leak
    timed "sanitize: canary clean" "$asan"/tests/leak_canary clean
    set +e
    "$asan"/tests/leak_canary leak >"$tmpd/lsan-canary.log" 2>&1
    rc=$?
    set -e
    if [ $rc -ne 0 ] && expect_canary_reported "$tmpd/lsan-canary.log" LeakSanitizer; then :; else
      echo "FAIL LeakSanitizer: leaky canary exit $rc"; head -40 "$tmpd/lsan-canary.log" | sed 's/^/     /'
      failed+=("sanitize: canary leak not reported")
    fi
    unset LSAN_OPTIONS UBSAN_OPTIONS ASAN_OPTIONS
    ;;
  valgrind)
    stage "valgrind: host code, one device test per family, the CLI"
    bld=${REPROCL_RELIABILITY_BUILD:-build}
    [ -f "$bld/build.ninja" ] || cmake -S . -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$bld" >/dev/null
    vg=(valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
        --show-leak-kinds=definite,indirect --suppressions="$root/tests/sanitizers/valgrind.supp"
        --error-exitcode=1 --num-callers=40 --child-silent-after-fork=yes)
    fresh_caches valgrind
    export CK_DEFAULT_TIMEOUT=0
    # Valgrind's virtual CPU has no AVX-512, so under valgrind PoCL takes its avx2 kernel library (the
    # "haswell" target), whose kernels no native run on an AVX-512 machine compiles; and PoCL 3.1 with
    # LLVM 15 leaks while it compiles (pocl_check_kernel_disk_cache, libLLVM-15: MBs "definitely lost").
    # So every run is made twice with POCL_KERNELLIB_NAME=avx2, the variant valgrind gets: natively first,
    # which compiles every kernel into this job's empty caches, then under valgrind, which finds them all
    # there. valgrind.supp names no PoCL or LLVM compile frame (it would match reprocl's forgotten
    # programs too), so a kernel the warm-up missed may fail the job; the end lists any such kernel.
    export POCL_KERNELLIB_NAME=avx2
    vg_runs() { # vg_runs TAG RUNNER...: the job's runs, each through RUNNER (none: the native warm-up)
      local tag=$1 tc
      shift
      # The canary: clean on both drivers (the leaky run is checked below).
      timed "$tag canary clean" "$@" "$bld/tests/leak_canary" clean
      # Host-side code: every host test case (policy, lint, hostile inputs, failing allocator with the
      # in-process CLI, context errors, the Matrix Market/Harwell-Boeing/grid readers, CG's host
      # reference), on both drivers' enumeration.
      for tc in test_context:host test_policy:host test_hostile_policy:host test_failalloc:host \
        test_hostile_readers:host test_sparse_io:io test_grid_io:host test_cg:host; do
        timed "$tag ${tc%%:*} (${tc#*:})" env CK_RUN_CASE="${tc#*:}" "$@" "$bld/tests/${tc%%:*}"
      done
      # Device code, one representative test per kernel family on PoCL (Rusticl compiles every program
      # with clang inside the process, ~20x slower under valgrind; ASan covers it in full): test_faults
      # runs every reduction entry point, SpMV in both contracts and the 9-point stencil with special
      # values, plus the device faults.
      timed "$tag test_faults (reduce, sparse, stencil; device faults) on PoCL" \
        env OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd REPROCL_TEST_MIN_DEVICES=1 "$@" "$bld/tests/test_faults"
      # The CLI: listing, and a reduction on every device.
      timed "$tag reprocl devices" "${to_null[@]}" "$@" "$bld/reprocl" devices --json
      timed "$tag reprocl run reduce" "${to_null[@]}" "$@" "$bld/reprocl" run reduce --op dot --mode exact \
        --n 5000 --device all --native
    }
    vg_runs "valgrind warm-up (native):"
    timed "valgrind warm-up (native): canary leak on PoCL" \
      env OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd "${to_null[@]}" "$bld/tests/leak_canary" leak
    # PoCL's cache, less the tempfile_* scratch files PoCL leaves at its top level.
    pocl_files() { find "$POCL_CACHE_DIR" -type f ! -name 'tempfile_*' | sort; }
    pocl_files >"$tmpd/pocl-warm.txt"
    vg_runs "valgrind:" "${vg[@]}"
    # The leaky canary, reported with reprocl's frames.
    set +e
    OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd "${vg[@]}" "$bld/tests/leak_canary" leak >"$tmpd/vg-canary.log" 2>&1
    rc=$?
    set -e
    if [ $rc -ne 0 ] && expect_canary_reported "$tmpd/vg-canary.log" valgrind; then :; else
      echo "FAIL valgrind: leaky canary exit $rc"; head -40 "$tmpd/vg-canary.log" | sed 's/^/     /'
      failed+=("valgrind: canary leak not reported")
    fi
    pocl_files >"$tmpd/pocl-end.txt"
    echo "valgrind: PoCL's kernel cache held $(wc -l <"$tmpd/pocl-warm.txt") files after the warm-up," \
      "$(wc -l <"$tmpd/pocl-end.txt") at the end; compiled under valgrind:"
    comm -13 "$tmpd/pocl-warm.txt" "$tmpd/pocl-end.txt" | sed "s|^$POCL_CACHE_DIR/|  |"
    unset CK_DEFAULT_TIMEOUT POCL_KERNELLIB_NAME
    ;;
  fuzz)
    stage "fuzz: every libFuzzer target for ${REPROCL_FUZZ_SECONDS:-20} s"
    fresh_caches fuzz
    timed "fuzz" scripts/fuzz.sh --seconds "${REPROCL_FUZZ_SECONDS:-20}"
    ;;
  *)
    echo "ci-reliability: unknown job \"$job\" (sanitize, valgrind, fuzz)" >&2
    exit 2
    ;;
  esac
done

echo
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "reliability jobs passed: ${jobs[*]}"
