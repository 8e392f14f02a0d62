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
