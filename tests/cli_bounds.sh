#!/usr/bin/env bash
# `reprocl bounds`: the interval of an expression's values over every evaluation order and contraction,
# and where the host's orders, reprocl's contracts and every device's reproducible and native results
# fall inside it.
. "$(dirname "$0")/clilib.sh"

expect 0 "bounds --help" -- "$CLI" bounds --help
contains "$TMP/out" "--order any" "help explains the orders"
expect 0 "help bounds" -- "$CLI" help bounds
expect 0 "--help lists bounds" -- "$CLI" --help
contains "$TMP/out" "bounds" "the command list names bounds"

# Every device, both kinds and dtypes: values inside, reproducible results equal to the host reference.
for dt in f32 f64; do for kind in sum dot; do for dist in uniform cancel; do
  expect 0 "$kind $dt $dist n=16 on all devices" -- "$CLI" bounds --kind $kind --dtype $dt --dist $dist --n 16 --device all
  contains "$TMP/out" "INSIDE:" "$kind $dt $dist: every value inside"
  contains "$TMP/out" "tight  yes" "$kind $dt $dist: n=16 is exact in any order"
  contains "$TMP/out" "= host reference" "$kind $dt $dist: device results equal the host reference"
done; done; done
expect 0 "f64 on all devices" -- "$CLI" bounds --kind sum --dtype f64 --device all
if grep -q "rusticl" "$TMP/out"; then contains "$TMP/out" "unsupported: no fp64" "Rusticl's fp64 refusal is shown"; fi

# JSON: the fields, and the values' positions checked independently of the text output.
expect 0 "bounds --json" -- "$CLI" bounds --kind dot --n 12 --dist cancel --device all --json
json_ok "$TMP/out" "bounds --json is JSON"
python3 - "$TMP/out" <<'PY' && pass "JSON: lo <= every value <= hi; reproducible = host reference" || fail "JSON contents"
import json, struct, sys
d = json.load(open(sys.argv[1]))
b = d["bounds"]
assert d["command"] == "bounds" and d["kind"] == "dot" and d["n"] == 12 and d["all_inside"]
assert b["tight"] and b["order"] == "any" and b["fma"] and b["largest_sum"] == 12 and b["enclosed_sums"] == 0
f32 = lambda s: struct.unpack("<f", struct.pack("<f", float(s)))[0]
lo, hi = f32(b["lo"]), f32(b["hi"])
assert struct.pack(">f", lo).hex() == b["lo_bits"][2:] and struct.pack(">f", hi).hex() == b["hi_bits"][2:]
vals = [v for v in d["values"] if v["evaluation"] != "unsupported"]
ref = [v for v in vals if v["evaluation"] == "reprocl reduce.ordered"][0]["value"]
for v in vals:
    x = f32(v["value"])
    assert v["inside"] == (lo <= x <= hi), v
    if v["covered"]: assert v["inside"], v
    if v["evaluation"].startswith("reproducible"): assert v["value"] == ref, v
assert sum(v["evaluation"].startswith("native") for v in vals) >= 1
PY

# Large sums: the enclosure (said so), the associative DP, exact-only refusal.
expect 0 "n=1000 any order: enclosure" -- "$CLI" bounds --kind sum --n 1000 --device none --json
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["bounds"]; assert not b["tight"] and b["enclosed_sums"]==1 and b["width_ulps"]>0' "$TMP/out" \
  && pass "n=1000 any order is an enclosure" || fail "n=1000 enclosure fields"
expect 0 "n=300 written order: exact" -- "$CLI" bounds --kind dot --dtype f64 --n 300 --order assoc --device all
contains "$TMP/out" "tight  yes" "n=300 in written order is exact"
contains "$TMP/out" "--order assoc does not cover it" "the strided contract is marked as not covered"
expect 2 "exact-only refuses n=17" -- "$CLI" bounds --kind sum --n 17 --exact-only --device none
contains "$TMP/err" "a sum of 17 terms exceeds the exact any-order limit of 16" "the refusal names size and limit"
expect 0 "--max-any 17" -- "$CLI" bounds --kind sum --n 17 --max-any 17 --exact-only --device none
expect 0 "--no-fma" -- "$CLI" bounds --kind dot --n 8 --no-fma --device none
contains "$TMP/out" "no FMA contraction" "--no-fma is echoed"

# One SpMV row (generated and from a Matrix Market file) and one stencil point, on every device.
for dt in f32 f64; do
  expect 0 "spmv-row $dt on all devices" -- "$CLI" bounds --kind spmv-row --gen poisson2d:16 --row 40 --dtype $dt --dist cancel --device all
  contains "$TMP/out" "INSIDE:" "spmv-row $dt: every value inside"
  contains "$TMP/out" "reproducible (spmv.ordered)" "spmv-row $dt: device rows shown"
  expect 0 "stencil $dt on all devices" -- "$CLI" bounds --kind stencil --grid 40x30 --point 0,29 --weights=-1,0.5,0.25 --boundary periodic --dtype $dt --device all
  contains "$TMP/out" "INSIDE:" "stencil $dt: every value inside"
  contains "$TMP/out" "tight  yes" "stencil $dt: exact"
done
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.5\n2 1 -2\n2 3 0.1\n3 3 4\n' >"$TMP/m.mtx"
expect 0 "spmv-row from a file" -- "$CLI" bounds --kind spmv-row --matrix "$TMP/m.mtx" --row 1 --device all --json
json_ok "$TMP/out" "spmv-row --json is JSON"
python3 - "$TMP/out" <<'PY' && pass "spmv-row JSON: 2 entries plus the +0 start, reproducible = host reference" || fail "spmv-row JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "spmv-row" and d["row"] == 1 and d["row_entries"] == 2 and d["bounds"]["largest_sum"] == 3
vals = [v for v in d["values"] if v["evaluation"] != "unsupported"]
ref = [v for v in vals if v["evaluation"] == "reprocl spmv.ordered"][0]["value"]
assert d["all_inside"] and all(v["value"] == ref for v in vals if v["evaluation"].startswith("reproducible"))
PY
expect 0 "long powerlaw row: enclosure" -- "$CLI" bounds --kind spmv-row --gen powerlaw:1000x1000:4:7 --row 1 --device all
contains "$TMP/out" "tight  no: a rigorous enclosure" "a 238-entry row gets the enclosure"
contains "$TMP/out" "INSIDE:" "the long row's values lie inside the enclosure"
expect 2 "spmv-row without --row" -- "$CLI" bounds --kind spmv-row --gen poisson2d:4
contains "$TMP/err" "needs --row" "missing --row is explained"
expect 2 "spmv-row row out of range" -- "$CLI" bounds --kind spmv-row --matrix "$TMP/m.mtx" --row 3
contains "$TMP/err" "--row 3 is outside the matrix" "the bad row is named"
expect 2 "spmv-row without a matrix" -- "$CLI" bounds --kind spmv-row --row 0
expect 2 "stencil point outside" -- "$CLI" bounds --kind stencil --grid 8x8 --point 8,0
contains "$TMP/err" "--point 8,0 is outside the 8x8 grid" "the bad point is named"
expect 2 "stencil bad weights" -- "$CLI" bounds --kind stencil --weights 1,2
contains "$TMP/err" "three numbers" "bad weights are explained"

# Every host allocation of the library failing in turn (REPROCL_FAIL_ALLOC=k): a clean error, never a
# crash, until k passes the number of allocations and the command succeeds.
ok_alloc=1; k=1
while [ $k -le 200 ]; do
  REPROCL_FAIL_ALLOC=$k "$CLI" bounds --kind dot --n 20 --device none >"$TMP/out" 2>"$TMP/err"; st=$?
  if [ $st = 0 ]; then break; fi
  if [ $st != 2 ] || ! grep -q "out of host memory" "$TMP/err"; then ok_alloc=0; echo "     allocation $k: exit $st"; sed 's/^/     /' "$TMP/err" | head -3; break; fi
  k=$((k + 1))
done
[ $ok_alloc = 1 ] && [ $k -gt 5 ] && [ $k -le 200 ] && pass "each of $((k - 1)) failing allocations gives a clean error" || fail "failing allocations (stopped at $k)"

# Bad usage.
expect 2 "unknown kind" -- "$CLI" bounds --kind matmul
contains "$TMP/err" "unknown --kind \"matmul\"" "the unknown kind is named"
expect 2 "bad order" -- "$CLI" bounds --order sideways
contains "$TMP/err" "unknown evaluation order \"sideways\"" "the bad order is named"
expect 2 "max-any too large" -- "$CLI" bounds --max-any 21
contains "$TMP/err" "--max-any 21 exceeds 20" "the limit is named"
expect 2 "max-assoc too large" -- "$CLI" bounds --max-assoc 4096
expect 2 "n=0" -- "$CLI" bounds --n 0
contains "$TMP/err" "--n must be at least 1" "n=0 is explained"
expect 2 "bad dtype" -- "$CLI" bounds --dtype f16
expect 2 "stray argument" -- "$CLI" bounds extra
expect 2 "unknown device" -- "$CLI" bounds --device no-such-device
contains "$TMP/err" "no OpenCL device matches \"no-such-device\"" "the unknown device is named"
finish
