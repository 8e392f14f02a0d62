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
expect 2 "unknown device (bad input: exit status 2)" -- "$CLI" run reduce --n 5 --device no-such-device
contains "$TMP/err" "no OpenCL device matches \"no-such-device\"" "unknown device is named"
expect 2 "local size not a power of two (bad input: exit status 2)" -- "$CLI" run reduce --n 5000 --local 48
contains "$TMP/err" "not a power of two" "bad --local is explained"
expect 2 "unknown family" -- "$CLI" run matmul

# The option tables: errors name `reprocl run`, long names match exactly (with a suggestion), help is generated.
expect 2 "run reduce: an unknown option" -- "$CLI" run reduce --bad
contains "$TMP/err" "reprocl run: error: unknown option --bad" "the unknown option is reported by reprocl run"
contains "$TMP/err" "reprocl run reduce --help" "the error points to run reduce's help"
expect 2 "run reduce: no prefix matching (--dtyp)" -- "$CLI" run reduce --n 5 --dtyp f32
contains "$TMP/err" "unknown option --dtyp (did you mean --dtype?)" "--dtyp suggests --dtype"
expect 0 "run reduce: --name=value" -- "$CLI" run reduce --n=100 --op=dot --device=0
contains "$TMP/out" "reduce dot f32 ordered n=100" "--name=value sets the option"
expect 2 "run reduce: a flag given a value" -- "$CLI" run reduce --n 5 --json=yes
contains "$TMP/err" "--json takes no value" "a flag with a value is refused"
expect 2 "run reduce: an option without its value" -- "$CLI" run reduce --n
contains "$TMP/err" "--n needs a value" "a missing value is named"
[ ! -s "$TMP/out" ] && pass "an error prints nothing on stdout" || fail "an error printed on stdout"
for opt in --dtype --device --native --json --mode --local --groups --variant; do
  "$CLI" run reduce --help | grep -q -- "^  $opt" && pass "run reduce --help lists $opt" || fail "run reduce --help lacks $opt"
done
"$CLI" run reduce --help | grep -q "^exit status" && pass "run reduce --help gives the exit statuses" ||
  fail "run reduce --help has no exit statuses"
expect 0 "run --help lists the kernels" -- "$CLI" run --help
contains "$TMP/out" "reduce" "run --help names reduce"
expect 2 "run without a kernel" -- "$CLI" run
contains "$TMP/err" "give a kernel" "run without a kernel says what is missing"
expect 2 "run with an option before the kernel" -- "$CLI" run --device 0 reduce
contains "$TMP/err" "unknown option --device" "an option before the kernel is refused"

# --out (as in spmv, cg and stencil): the first device's result, raw; its sha256sum is the printed digest.
expect 0 "run reduce --out" -- "$CLI" run reduce --op nrm2 --dtype f64 --n 777 --device all --out "$TMP/r.bin"
sum=$(sha256sum "$TMP/r.bin" | cut -d' ' -f1)
[ "$(stat -c %s "$TMP/r.bin")" = 8 ] && pass "--out wrote one f64" || fail "--out wrote $(stat -c %s "$TMP/r.bin") bytes"
contains "$TMP/out" "wrote the result (8 bytes, sha256 $sum)" "--out's file has the printed digest"
contains "$TMP/out" "${sum:0:16}" "the devices' digest is the file's"
expect 2 "run reduce --out into a missing directory" -- "$CLI" run reduce --n 10 --out /nonexistent/dir/r.bin
contains "$TMP/err" "/nonexistent/dir/r.bin" "--out's error names the file"

# No device can run it: exit status 3 (could not run), not 1 (which means results disagree).
if RUSTICL_ENABLE=llvmpipe "$CLI" devices --no-selftest | grep -q llvmpipe; then
  expect 3 "run reduce f64 only on a device without fp64" -- env RUSTICL_ENABLE=llvmpipe "$CLI" run reduce --n 10 --dtype f64 --device llvmpipe
  contains "$TMP/out" "unsupported: " "the device's refusal is shown"
  contains "$TMP/out" "0 of 1 device(s) ran" "the summary says none ran"
else
  echo "note: skip the no-device-ran case: Rusticl's llvmpipe device is absent" >&2
fi
# --split: the reduction cut over several devices at once (every device, PoCL's sub-devices, given weights);
# its digest is the reference's, its shares cover the elements; bad weights are usage errors (2).
expect 0 "run reduce --split all" -- "$CLI" run reduce --dtype f64 --dist cancel --n 300007 --split all --json
split_agrees "$TMP/out" 300007 "run reduce --split all: the split's digest is the reference's"
expect 0 "run reduce --split with weights (text)" -- "$CLI" run reduce --op dot --n 262147 --split all --split-weights "$(python3 -c "print(':'.join(str(i + 1) for i in range($ndev)))")"
contains "$TMP/out" "SPLIT AGREES" "the split row agrees"
contains "$TMP/out" "elements [0, " "each device's share is shown"
if "$CLI" devices --no-selftest | grep -q "Portable Computing Language"; then
  expect 0 "run reduce --split pocl:/2" -- "$CLI" run reduce --mode exact --n 100001 --split pocl:/2 --split-weights 3:1 --json
  split_agrees "$TMP/out" 100001 "run reduce over PoCL's two sub-devices, 3:1: the reference's digest"
fi
expect 2 "--split-weights not a number" -- "$CLI" run reduce --n 10 --split 0 --split-weights 1:x
contains "$TMP/err" '"x"' "a bad weight is named"
expect 2 "--split-weights negative" -- "$CLI" run reduce --n 10 --split 0 --split-weights=-1
contains "$TMP/err" 'weight 0 is -1' "a negative weight is named"
expect 2 "--split-weights all zero" -- "$CLI" run reduce --n 10 --split 0 --split-weights 0:0
expect 2 "--split-weights: one per device" -- "$CLI" run reduce --n 10 --split 0 --split-weights 1:2
contains "$TMP/err" "2 weights given for 1 devices" "the count mismatch is named"
expect 2 "--split-weights without --split" -- "$CLI" run reduce --n 10 --split-weights 1
expect 2 "--split naming no device" -- "$CLI" run reduce --n 10 --split 0,no-such-device-xyz
if RUSTICL_ENABLE=llvmpipe "$CLI" devices --no-selftest | grep -q llvmpipe; then
  expect 0 "run reduce f64 --split with Rusticl" -- env RUSTICL_ENABLE=llvmpipe "$CLI" run reduce --n 5000 --dtype f64 --split all
  contains "$TMP/out" "left out: no fp64" "the split leaves Rusticl out of f64, saying why"
  contains "$TMP/out" "SPLIT AGREES" "the other devices' split agrees"
  expect 3 "a split that cannot run (f64 on Rusticl alone)" -- env RUSTICL_ENABLE=llvmpipe "$CLI" run reduce --n 10 --dtype f64 --split llvmpipe
  contains "$TMP/err" "no device left to run reduce f64" "the split's refusal says why"
else
  echo "note: skip the split's left-out device: Rusticl's llvmpipe device is absent" >&2
fi
finish
