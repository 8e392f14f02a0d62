#!/usr/bin/env bash
# The reprocl tool's general behaviour and `reprocl run reduce` on every device.
. "$(dirname "$0")/clilib.sh"

expect 0 "--help" -- "$CLI" --help
contains "$TMP/out" "run" "--help lists commands"
expect 0 "--version" -- "$CLI" --version
contains "$TMP/out" "reprocl " "--version prints the version"
expect 2 "unknown command" -- "$CLI" frobnicate
contains "$TMP/err" "unknown command \"frobnicate\"" "unknown command is named"
expect 2 "no command" -- "$CLI"

expect 0 "devices" -- "$CLI" devices
contains "$TMP/out" "reduce" "devices shows support per family"
expect 0 "devices --json" -- "$CLI" devices --json
json_ok "$TMP/out" "devices --json is JSON"
ndev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$TMP/out")
[ "$ndev" -ge 1 ] && pass "devices --json counts $ndev device(s)" || fail "no devices in JSON"

expect 0 "run reduce --help" -- "$CLI" run reduce --help
for dt in f32 f64; do for op in sum dot nrm2; do for mode in ordered exact; do
  expect 0 "run reduce $op $dt $mode on all devices" -- "$CLI" run reduce --op $op --dtype $dt --mode $mode --n 100003 --dist cancel --device all
  contains "$TMP/out" "AGREE:" "$op $dt $mode: devices agree"
done; done; done

expect 0 "run reduce --json --native" -- "$CLI" run reduce --op dot --dtype f32 --mode ordered --n 65537 --device all --native --json
json_ok "$TMP/out" "run reduce --json is JSON"
python3 - "$TMP/out" <<'PY' && pass "JSON: every device's digest equals the reference digest" || fail "JSON digests"
import json, sys
d = json.load(open(sys.argv[1]))
ref = d["reference"]["sha256"]
ran = [x for x in d["devices"] if x["support"] != "unsupported"]
assert d["all_agree"] and ran and all(x["sha256"] == ref and x["matches_reference"] for x in ran)
assert all("native" in x and "drift" in x["native"] for x in ran)
PY

expect 2 "missing --n" -- "$CLI" run reduce --op sum
contains "$TMP/err" "--n is required" "missing --n is explained"
expect 2 "bad --op" -- "$CLI" run reduce --op product --n 5
contains "$TMP/err" "unknown reduction \"product\"" "bad --op is named"
expect 2 "bad --n" -- "$CLI" run reduce --n -5
contains "$TMP/err" "--n expects a non-negative integer" "negative --n is explained"
expect 2 "bad --n suffix" -- "$CLI" run reduce --n 12abc
expect 1 "unknown device" -- "$CLI" run reduce --n 5 --device no-such-device
contains "$TMP/err" "no OpenCL device matches \"no-such-device\"" "unknown device is named"
expect 1 "local size not a power of two" -- "$CLI" run reduce --n 5000 --local 48
contains "$TMP/err" "not a power of two" "bad --local is explained"
expect 2 "unknown family" -- "$CLI" run matmul
finish
