#!/bin/bash
# reprocl tune / cache / compile from the command line: a tuned record lands in the cache and is listed
# readably; 16 `reprocl tune` processes tuning into one cache at once leave a valid cache holding all
# their records; clear; a compiled bundle runs with the same bits; every kernel tunes on every device;
# bad usage is refused by name.
# Run by ctest as: cli_tune.sh <reprocl> <source dir> <binary dir>
set -euo pipefail
cli=$1
bin=$3
work=$(mktemp -d "$bin/cli-tune-XXXXXX")
trap 'rm -rf "$work"' EXIT
export REPROCL_CACHE_DIR=$work/cache
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cli" tune --kernel reduce.sum.ordered --device 0 --dtype f32 --size 2^16 --budget-ms 400 --json >"$work/t.json"
grep -q '"mismatches": 0' "$work/t.json" || fail "tune --json: $(cat "$work/t.json")"
grep -q '"kernel": "reduce.sum.ordered"' "$work/t.json" || fail "tune --json lacks the kernel"
[ "$("$cli" cache path)" = "$work/cache" ] || fail "cache path: $("$cli" cache path)"
"$cli" cache list | grep -q "reduce.sum.ordered   f32  2^16" || fail "cache list: $("$cli" cache list)"
"$cli" tune --kernel reduce.axpy --device 0 --dtype f32 --size 2^16 --budget-ms 300 | grep -q "reduce.axpy" ||
  fail "tune (text)"

# 16 processes at once, each tuning a different kernel/size into the same cache.
pids=()
for k in reduce.sum.ordered reduce.dot.ordered reduce.nrm2.ordered reduce.sum.exact reduce.dot.exact \
         reduce.nrm2.exact reduce.axpy reduce.scal; do
  for s in 2^16 2^17; do
    "$cli" tune --kernel "$k" --device 0 --dtype f32 --size "$s" --budget-ms 150 >/dev/null &
    pids+=($!)
  done
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent reprocl tune failed"; done
"$cli" cache list --json >"$work/list.json"
grep -q '"skipped": 0' "$work/list.json" || fail "corrupt lines after concurrent tuning: $(head -5 "$work/list.json")"
grep -q '"records": 16,' "$work/list.json" || fail "expected 16 records: $(grep records "$work/list.json")"
[ "$(grep -c '"kernel":' "$work/list.json")" = 16 ] || fail "listing holds the wrong number of entries"

"$cli" cache clear --device 0 | grep -q "removed 16 tuning records" || fail "cache clear --device"
"$cli" cache list | grep -q ": 0 tuning records" || fail "records left after clear"
"$cli" cache clear | grep -q "^removed" || fail "cache clear"

# Offline bundle: the run loads every program from it and gives the reference bits.
"$cli" compile --device 0 -o "$work/b.bundle" | grep -q "program binaries" || fail "compile"
REPROCL_NO_BINARY_CACHE=1 REPROCL_BINARIES="$work/b.bundle" \
  "$cli" run reduce --op dot --mode exact --n 100000 --device 0 | grep -q "^AGREE" || fail "run with a bundle"
for args in "stencil --kind general --weights 0,.25,0,.25,0,.25,0,.25,0 --grid 40x30 --iters 3" \
            "stencil --kind sor --grid 40x30 --iters 3" "spmv --gen powerlaw:500:3 --contract exact" \
            "cg --gen poisson2d:20"; do
  # shellcheck disable=SC2086
  REPROCL_NO_BINARY_CACHE=1 REPROCL_BINARIES="$work/b.bundle" "$cli" $args --device 0 | grep -q "^AGREE" ||
    fail "$args with a bundle"
done
"$cli" compile --device 0 --emit-source "$work/src" | grep -q "manifest.txt" || fail "compile --emit-source"
[ "$(ls "$work/src"/*.cl | wc -l)" -ge 1 ] || fail "no sources emitted"
# A directory given with a trailing '/' names its manifest without a doubled '/'.
out=$("$cli" compile --device 0 --emit-source "$work/src2/")
echo "$out" | grep -qF "(see $work/src2/manifest.txt)" && ! echo "$out" | grep -qF "//" ||
  fail "compile --emit-source DIR/: $out"
set +e
out=$(REPROCL_BINARIES="$work/missing.bundle" "$cli" run reduce --n 10 --device 0 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q "missing.bundle does not exist" || fail "a missing bundle: $rc $out"

# Every family tunes from the command line into the cache.
"$cli" tune --kernel stencil.nine,spmv.regular.ordered --device 0 --dtype f32 --size 2^16 --budget-ms 400 --json \
  >"$work/f.json"
grep -q '"mismatches": 0' "$work/f.json" || fail "tune stencil/spmv --json: $(cat "$work/f.json")"
"$cli" cache list | grep -q "stencil.nine .*f32  2^16" || fail "cache list (stencil): $("$cli" cache list)"
"$cli" cache list | grep -q "spmv.regular.ordered .*f32  2^16" || fail "cache list (spmv): $("$cli" cache list)"
"$cli" tune --kernel md.gather,md.task --device 0 --dtype f32 --size 2^9 --budget-ms 400 --json >"$work/m.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); r = d["results"]
assert d["mismatches"] == 0 and [x["kernel"] for x in r] == ["md.gather", "md.task"], d' "$work/m.json" ||
  fail "tune md --json: $(cat "$work/m.json")"
"$cli" cache list | grep -q "md.gather .*f32  2^9" || fail "cache list (md.gather): $("$cli" cache list)"
"$cli" cache list | grep -q "md.task .*f32  2^9" || fail "cache list (md.task): $("$cli" cache list)"

# Every kernel on every device (CI: PoCL, Rusticl and Intel's CPU runtime), each tuned or skipped with its
# reason: md.task once crashed on Rusticl, whose events still read "running" after clFinish.
"$cli" tune --kernel all --device all --dtype f32 --size 2^10 --budget-ms 50 --json >"$work/all.json" ||
  fail "tune --kernel all --device all"
kernels=$("$cli" tune --help | sed -n 's/^Kernels: //p')
python3 - "$work/all.json" "${REPROCL_TEST_MIN_DEVICES:-1}" $kernels <<'PY' || fail "tune all: $(cat "$work/all.json")"
import collections, json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[3:]
assert len(want) >= 20 and d["mismatches"] == 0, (want, d["mismatches"])
seen = collections.defaultdict(list)
for r in d["results"]:
    assert r["dtype"] == "f32" and ("choice" in r) != ("skipped" in r), r
    seen[r["device"]].append(r["kernel"])
assert len(seen) >= int(sys.argv[2]), f"{len(seen)} devices tuned, {sys.argv[2]} required"
for dev, ks in seen.items():
    assert ks == want, f"{dev}: {ks}"
PY

# Usage errors name the problem.
set +e
out=$("$cli" tune --kernel nope 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q '"nope" names no tunable kernel' || fail "tune --kernel nope: $rc $out"
set +e
out=$("$cli" cache bogus 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q 'unknown action "bogus"' || fail "cache bogus: $rc $out"
set +e
out=$("$cli" compile 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q -- "-o FILE" || fail "compile without -o: $rc $out"
set +e
out=$("$cli" tune --budget-ms -5 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q -- "--budget-ms" || fail "tune --budget-ms -5: $rc $out"
set +e
out=$("$cli" tune --native 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q -- "--native does not apply to reprocl tune: " || fail "tune --native: $rc $out"
set +e
out=$("$cli" tune --budget 5 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q -- "unknown option --budget (did you mean --budget-ms?)" ||
  fail "tune --budget (a prefix is no longer taken): $rc $out"
set +e
out=$("$cli" cache 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q -- "missing argument: usage: reprocl cache path|list|clear" ||
  fail "cache without an action: $rc $out"
set +e
out=$("$cli" compile --device all -o "$work/x.bundle" 2>&1); rc=$?
set -e
[ $rc = 2 ] && echo "$out" | grep -q -- "a bundle is for one device" || fail "compile --device all: $rc $out"
echo "cli_tune: ok"
