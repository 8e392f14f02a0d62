# Shared helpers of the CLI tests (tests/cli_*.sh), sourced by each (not a test itself). ctest passes:
#   $1 the reprocl binary, $2 the source directory, $3 the build directory.
set -u
CLI=$1
SRC=$2
BUILD=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# expect STATUS DESCRIPTION -- command...: runs the command, checks its exit status, keeps its output.
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" = "$want" ]; then pass "$what"; else fail "$what: exit $got, expected $want"; sed 's/^/     /' "$TMP/out" "$TMP/err" | head -20; fi
}
# contains FILE TEXT DESCRIPTION
contains() { if grep -qF -- "$2" "$1"; then pass "$3"; else fail "$3: \"$2\" not in $(basename "$1")"; sed 's/^/     /' "$1" | head -10; fi; }
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" && pass "$2" || fail "$2: invalid JSON"; }
finish() { [ "$fails" = 0 ] && echo "all passed" || echo "$fails failed"; [ "$fails" = 0 ]; }
# split_agrees FILE ROWS DESCRIPTION: the "split" object of --json output FILE agrees (tests/split_agrees.py).
split_agrees() { python3 "$SRC/tests/split_agrees.py" "$1" "$2" && pass "$3" || fail "$3"; }
# consumer_builds PACKAGE TARGET PCMODULE SRC [RUNNER ...]: the C file SRC built against the installed $prefix
# (libraries in $libdir) twice — a CMake project with find_package(PACKAGE) linking TARGET, and cc with
# `pkg-config --cflags --libs PCMODULE` — and each build run (under RUNNER, e.g. `mpi 3`). The last run's
# output is in $TMP/out.
consumer_builds() {
  local pkg=$1 target=$2 module=$3 src=$4 dir gen flags pcpath
  shift 4
  dir=$(dirname "$src")
  printf 'cmake_minimum_required(VERSION 3.16...4.1)\nproject(consumer C)\nfind_package(%s REQUIRED)\nadd_executable(consumer %s)\ntarget_link_libraries(consumer PRIVATE %s)\n' \
    "$pkg" "$(basename "$src")" "$target" >"$dir/CMakeLists.txt"
  # The generator the project itself was configured with (Ninja in CI; make may not be installed).
  gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$BUILD/CMakeCache.txt")
  expect 0 "consumer configures with find_package($pkg)" -- cmake -S "$dir" -B "$dir/build" -G "${gen:-Unix Makefiles}" -DCMAKE_PREFIX_PATH="$prefix"
  expect 0 "consumer builds" -- cmake --build "$dir/build"
  expect 0 "consumer runs${1:+ (under $*)}" -- "$@" env LD_LIBRARY_PATH="$libdir" "$dir/build/consumer"
  pcpath="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  flags=$(PKG_CONFIG_PATH="$pcpath" pkg-config --cflags --libs "$module") && pass "pkg-config --cflags --libs $module: $flags" || fail "pkg-config $module"
  expect 0 "consumer builds with pkg-config" -- sh -c "cc -std=c11 -o '$dir/pc' '$src' $flags"
  expect 0 "pkg-config consumer runs${1:+ (under $*)}" -- "$@" env LD_LIBRARY_PATH="$libdir" "$dir/pc"
}
