#!/usr/bin/env bash
# The OpenMM peer of `reprocl bench --family md` (scripts/peer_openmm.py, run with $REPROCL_PYTHON or python3):
# where OpenMM cannot be imported, or the python cannot be run, the bench still succeeds and records the peer as
# skipped with the reason; where a python with the `openmm` package is found (not in CI: Debian has no openmm), the
# quick run on every device records OpenMM's steps/s beside reprocl's, and its potential energies of the same
# states (the initial lattice and the state 20 reprocl steps later) agree with reprocl's.
# Usage (ctest): cli_bench_openmm.sh <reprocl CLI> <source dir> <build dir>
. "$(dirname "$0")/clilib.sh"
export REPROCL_OPENMM_PEER="$SRC/scripts/peer_openmm.py"

# records DOC KIND: the md records of the OpenMM peer, one per line ("skipped VARIANT WHY" or "measured ...").
records() {
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r["family"] == "md" and r["record"] == "skipped" and r["variant"].startswith("openmm"):
        print("skipped", r["device"][:20], r["variant"], r["skipped"])
    elif r["family"] == "md" and r.get("mode") == "peer:openmm":
        print("measured", r["device"][:20], r["variant"], r["dtype"], "%.1f steps/s" % r["steps_per_s"],
              "agrees" if r["energy_agrees"] else "DIFFERS", r["pe_rel_diff"], r["check_pe_rel_diff"])
PY
}

# ---- absent: a python that cannot import openmm (no site packages), a python that does not exist -----------
printf '#!/bin/sh\nexec python3 -S "$@"\n' >"$TMP/nosite-python"
chmod +x "$TMP/nosite-python"
REPROCL_PYTHON="$TMP/nosite-python" expect 0 "bench --quick --family md with a python without openmm" -- \
  "$CLI" bench --quick --family md --device 0 -o "$TMP/absent.json"
records "$TMP/absent.json" >"$TMP/absent.txt"
contains "$TMP/absent.txt" "skipped" "the OpenMM peer is recorded as skipped"
contains "$TMP/absent.txt" "openmm not importable: No module named 'openmm'" "with the reason"
if grep -q measured "$TMP/absent.txt"; then fail "OpenMM measured without openmm"; else pass "nothing measured"; fi
python3 "$SRC/scripts/bench_table.py" --validate "$TMP/absent.json" >"$TMP/v.out" 2>&1 && pass "schema" ||
  fail "schema: $(head -5 "$TMP/v.out")"

REPROCL_PYTHON="$TMP/no-such-python" expect 0 "bench --quick --family md with a python that does not exist" -- \
  "$CLI" bench --quick --family md --device 0 -o "$TMP/nopy.json"
records "$TMP/nopy.json" >"$TMP/nopy.txt"
contains "$TMP/nopy.txt" "cannot run $TMP/no-such-python" "recorded as skipped: the python cannot be run"

# ---- present: the peer measured on every device, on the same system --------------------------------------------
py=${REPROCL_PYTHON:-python3}
if ! "$py" -c 'import openmm' 2>/dev/null; then
  echo "skip the OpenMM measurements: $py cannot import openmm (python3 -m pip install openmm to run them)"
  finish
  exit
fi
expect 0 "bench --quick --family md --device all with OpenMM $("$py" -c 'import openmm; print(openmm.version.version)')" -- \
  "$CLI" bench --quick --family md --device all -o "$TMP/openmm.json"
records "$TMP/openmm.json" >"$TMP/openmm.txt"
sed 's/^/     /' "$TMP/openmm.txt"
python3 - "$TMP/openmm.json" <<'PY' && pass "every device: OpenMM measured, steps/s > 0, energies agree with reprocl's" ||
import json, sys
doc = json.load(open(sys.argv[1]))
bad = []
for d in doc["devices"]:
    peer = [r for r in doc["results"] if r["device"] == d["name"] and r.get("mode") == "peer:openmm"]
    if not peer:
        bad.append(f"{d['name']}: no OpenMM measurement")
    for r in peer:
        if not (r["steps_per_s"] > 0 and r["energy_agrees"] and r["openmm_version"] and r["natoms"] == 864):
            bad.append(f"{d['name']} {r['variant']}: {r}")
        if r["pe_rel_diff"] > r["energy_tolerance"] or r["check_pe_rel_diff"] > r["energy_tolerance"]:
            bad.append(f"{d['name']} {r['variant']}: energy differs")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  fail "OpenMM records"
python3 "$SRC/scripts/bench_table.py" --validate "$TMP/openmm.json" >"$TMP/v.out" 2>&1 && pass "schema" ||
  fail "schema: $(head -5 "$TMP/v.out")"
finish
