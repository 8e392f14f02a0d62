#!/usr/bin/env bash
# reprocl check, fingerprint and compare: the quick suite on every device agrees with the host reference
# and with the reference fingerprint made on PoCL and checked in (tests/data/reference-fingerprint.json),
# so any change of result bits on any device fails CI; compare detects differences and contract changes.
. "$(dirname "$0")/clilib.sh"
REF="$SRC/tests/data/reference-fingerprint.json"
# From the source tree: suite cases read their data files by paths relative to it (tests/data/md/melt.data).
cd "$SRC" || exit 1

expect 0 "check --help" -- "$CLI" check --help
contains "$TMP/out" "Suites: full (the default)" "check --help names the default suite"
for fam in reduce stencil spmv md; do
  grep -q "^Families (--family, default all):.* $fam" "$TMP/out" && pass "check --help lists --family $fam" ||
    fail "check --help lacks --family $fam"
done
contains "$TMP/out" "exit status: 0 success" "check --help states the exit statuses"
expect 0 "fingerprint --help" -- "$CLI" fingerprint --help
contains "$TMP/out" "Families (--family, default all):" "fingerprint --help lists the families"
expect 0 "check quick suite on all devices, with HTML report" -- "$CLI" check --suite quick --report "$TMP/report.html"
contains "$TMP/out" "AGREE:" "check agrees"
contains "$TMP/out" "native (vendor default options)" "check shows native drift"
contains "$TMP/report.html" "<table>" "report has the table"
contains "$TMP/report.html" "<svg" "report has histograms"
contains "$TMP/report.html" "</html>" "report is complete"

expect 0 "check --json" -- "$CLI" check --suite quick --family reduce --no-native --json
json_ok "$TMP/out" "check --json is JSON"

expect 0 "fingerprint" -- "$CLI" fingerprint --suite quick -o "$TMP/fp.json"
json_ok "$TMP/fp.json" "fingerprint is JSON"
expect 0 "fingerprint --json (stdout)" -- "$CLI" fingerprint --suite quick --family reduce --device 0 --json
json_ok "$TMP/out" "fingerprint --json is JSON"
contains "$TMP/out" '"format": "reprocl-fingerprint"' "fingerprint --json prints the fingerprint"
expect 0 "check --native (its default, explicit)" -- "$CLI" check --suite quick --family reduce --device 0 --native
contains "$TMP/out" "native (vendor default options)" "check --native shows native drift"
expect 0 "compare with the checked-in PoCL reference fingerprint" -- "$CLI" compare "$REF" "$TMP/fp.json"
contains "$TMP/out" " 0 differ" "no case differs from the reference fingerprint"
python3 - "$TMP/fp.json" <<'PY' && pass "the MD cases ran (the LAMMPS data file was found)" || fail "MD cases missing or skipped"
import json, sys
d = json.load(open(sys.argv[1]))
md = [c for c in d["cases"] if c["family"] == "md"]
assert len(md) >= 10, len(md)
assert all(c["status"] == "ok" for c in md), [(c["name"], c["status"]) for c in md if c["status"] != "ok"]
assert any(c.get("input", "").endswith("melt.data") for c in md)
PY

# A changed digest is a mismatch (exit 1) naming the case; a changed contract version is exit 3.
python3 - "$TMP/fp.json" "$TMP/bad.json" "$TMP/bumped.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = next(c for c in d["cases"] if c["status"] == "ok" and c["results"][0]["status"] == "ok")
c["results"][0]["sha256"] = "0" * 64
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    if c["contract"] == "reduce.ordered.v1":
        c["contract"] = "reduce.ordered.v2"
        c["reference"] = "1" * 64
        for r in c.get("results", []):
            if r["status"] == "ok": r["sha256"] = "1" * 64
json.dump(d, open(sys.argv[3], "w"))
PY
expect 1 "compare detects a changed digest" -- "$CLI" compare "$TMP/fp.json" "$TMP/bad.json"
contains "$TMP/out" "DIFFERS" "the differing case is named"
expect 3 "compare reports contract version changes" -- "$CLI" compare "$TMP/fp.json" "$TMP/bumped.json"
contains "$TMP/out" "reduce.ordered.v2" "the new contract version is named"
printf '{"format": "reprocl-fingerprint",\n "format_version": 1, oops}' >"$TMP/broken.json"
expect 2 "compare refuses malformed JSON with line and column" -- "$CLI" compare "$TMP/fp.json" "$TMP/broken.json"
contains "$TMP/err" "broken.json:2:" "the error names file and line"
echo '{"format": "something-else"}' >"$TMP/other.json"
expect 2 "compare refuses a non-fingerprint" -- "$CLI" compare "$TMP/fp.json" "$TMP/other.json"
expect 2 "compare needs two files" -- "$CLI" compare "$TMP/fp.json"
expect 2 "check refuses an unknown family" -- "$CLI" check --family nosuch
finish
