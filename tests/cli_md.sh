#!/usr/bin/env bash
# CLI test of `reprocl md`: agreement across devices and with the host reference, JSON output, LAMMPS
# energies of the melt configuration, trajectory and thermo-log output read back, golden digests, and
# the errors of bad input. Arguments: CLI path, source dir, build dir.
set -u
cli=$1
src=$2
build=$3
tmp="$build/cli_md_tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
golden() { awk -v k="$1" '$2 == k {print $1}' "$src/tests/data/golden/md.txt"; }

# 1. a short fcc melt on every device, with the host reference: all agree, exit 0
out=$("$cli" md --lattice fcc --cells 4 --density 0.8442 --temp 3.0 --steps 40 --thermo 20 --device all \
  --reference --out "$tmp/traj.xyz" --log "$tmp/thermo.log" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "lattice run exited $rc"
echo "$out" | grep -q '^AGREE: ' || fail "lattice run: no AGREE line"
echo "$out" | grep -q 'host reference: .* identical to the devices' || fail "the host reference does not agree"
state=$(echo "$out" | awk '/final state/ {print $4; exit}')
forces=$(echo "$out" | awk '/forces\(step 0\)/ {print $4; exit}')
[ "$state" = "$(golden md.cli.fcc4.f32.step40.state)" ] || fail "final state digest $state is not the golden one"
[ "$forces" = "$(golden md.cli.fcc4.f32.step0.forces)" ] || fail "step-0 forces digest $forces is not the golden one"
frames=$(grep -c '^256$' "$tmp/traj.xyz")
[ "$frames" -eq 3 ] || fail "trajectory has $frames frames, expected 3 (steps 0, 20, 40)"
grep -q 'Properties=species:S:1:pos:R:3:vel:R:3' "$tmp/traj.xyz" || fail "trajectory frames lack Properties"
[ "$(grep -c '^ *[0-9]' "$tmp/thermo.log")" -eq 3 ] || fail "thermo log does not have 3 rows"
grep -q 'PE/N' "$tmp/thermo.log" || fail "thermo log has no header"

# 1b. the shorter stand-in for the 10 000-step melt of docs/md.md: 1000 steps of 500 atoms (156 list
# rebuilds) on every device and the host reference, against the golden digest
out=$("$cli" md --lattice fcc --cells 5 --density 0.8442 --temp 3.0 --steps 1000 --thermo 500 --device all \
  --reference 2>&1)
rc=$?
echo "$out" | tail -4
[ $rc -eq 0 ] || fail "1000-step run exited $rc"
echo "$out" | grep -q 'host reference: .* identical to the devices' || fail "1000-step run: the reference differs"
state=$(echo "$out" | awk '/final state/ {print $4; exit}')
[ "$state" = "$(golden md.cli.fcc5.f32.step1000.state)" ] || fail "1000-step final state $state is not the golden one"

# 1c. --split: the same run over PoCL as two sub-devices (weights 1:3), and over every device (tuning off),
# gives the golden digests; JSON: the split object with its shares
json=$(REPROCL_TUNING=off RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe} "$cli" md --lattice fcc --cells 4 \
  --density 0.8442 --temp 3.0 --steps 40 --thermo 20 --device pocl --split pocl:/2 --split-weights 1:3 --json 2>/dev/null)
rc=$?
if echo "$json" | grep -q '"split"'; then
  [ $rc -eq 0 ] || fail "md --split pocl:/2 exited $rc"
  echo "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)["split"]
assert d["matches_reference"] is True, d
assert d["count"] == 2 and sum(s["count"] for s in d["shares"]) == 256, d
print(d["state_sha256"], d["forces_sha256"], "%.3f s" % d["time_s"])' >"$tmp/split.txt" || fail "md --split JSON: $json"
  read -r sstate sforces _ <"$tmp/split.txt"
  [ "$sstate" = "$(golden md.cli.fcc4.f32.step40.state)" ] || fail "md --split final state $sstate is not the golden one"
  [ "$sforces" = "$(golden md.cli.fcc4.f32.step0.forces)" ] || fail "md --split forces $sforces are not the golden ones"
else
  echo "note: no split pocl:/2 here (PoCL without 2 compute units?): $json" | head -3
fi
out=$(REPROCL_TUNING=off "$cli" md --lattice fcc --cells 4 --density 0.8442 --temp 3.0 --steps 40 --split all 2>&1)
rc=$?
echo "$out" | tail -3
[ $rc -eq 0 ] || fail "md --split all exited $rc"
echo "$out" | grep -q '^SPLIT AGREES: ' || fail "md --split all: no SPLIT AGREES line"
echo "$out" | grep -q "state $(golden md.cli.fcc4.f32.step40.state | cut -c1-16)" ||
  fail "md --split all: not the golden final state"
out=$("$cli" md --lattice fcc --cells 4 --density 0.8442 --temp 3.0 --steps 4 --split-weights 1:1 2>&1)
[ $? -eq 2 ] || fail "--split-weights without --split: not exit 2: $out"

# 2. the first frame read back: the same step-0 forces digest
awk 'NR == 1 {n = $1} NR <= n + 2' "$tmp/traj.xyz" > "$tmp/frame0.xyz"
out=$("$cli" md --input "$tmp/frame0.xyz" --steps 0 2>&1) || fail "reading the XYZ frame back failed: $out"
echo "$out" | grep -q "forces(step 0) sha256 $forces" || fail "the XYZ frame read back gives other forces: $out"

# 3. --steps 0 on the LAMMPS melt configuration, JSON: the energy and virial pressure of LAMMPS
json=$("$cli" md --input "$src/tests/data/md/melt.data" --steps 0 --dtype f64 --json 2>/dev/null)
echo "$json" | grep -q '"all_agree": true' || fail "melt --json: all_agree is not true"
pe=$(echo "$json" | awk -F': ' '/"pe_total"/ {gsub(/,/, "", $2); print $2; exit}')
press=$(echo "$json" | awk -F': ' '/"pressure"/ {gsub(/,/, "", $2); print $2; exit}')
ref_pe=$(awk '{print $3}' "$src/tests/data/md/melt.ref")
ref_p=$(awk '{print $5}' "$src/tests/data/md/melt.ref")
awk -v a="$pe" -v b="$ref_pe" 'BEGIN {d = (a - b) / b; exit !(d < 1e-12 && d > -1e-12)}' || fail "melt pe $pe vs LAMMPS $ref_pe"
awk -v a="$press" -v b="$ref_p" 'BEGIN {d = (a - b) / b; exit !(d < 1e-12 && d > -1e-12)}' ||
  fail "melt pressure $press vs LAMMPS $ref_p"
for key in '"pe"' '"ke"' '"etotal"' '"pressure"' '"state_sha256"' '"forces_sha256"'; do
  echo "$json" | grep -q "$key" || fail "JSON lacks $key"
done
echo "$json" | grep -q "\"forces_sha256\": \"$(golden md.melt.f64.forces)\"" || fail "melt f64 forces digest"

# 4. f64 on every device: devices without fp64 are skipped with the reason, the rest agree
out=$("$cli" md --lattice fcc --cells 3 --density 0.8442 --temp 1.0 --steps 10 --dtype f64 --device all 2>&1)
[ $? -eq 0 ] || fail "f64 run failed: $out"
echo "$out" | grep -q 'AGREE' || fail "f64 run: no AGREE"

# 5. --native: the drift line is printed
out=$("$cli" md --lattice fcc --cells 3 --density 0.8442 --temp 1.0 --steps 20 --native 2>&1)
echo "$out" | grep -q 'native build:' || fail "--native printed no native line: $out"

# 6. bad input: clear messages, non-zero exit
printf 'title\n\n2 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 1\n\nAtoms\n\n1 1 1 1 1\n2 1 x 2 2\n' > "$tmp/bad.data"
out=$("$cli" md --input "$tmp/bad.data" --steps 0 2>&1)
[ $? -eq 2 ] || fail "malformed data file: exit status not 2"
echo "$out" | grep -q 'bad.data:17: the coordinate "x" is not a number' || fail "malformed file message: $out"
out=$("$cli" md --lattice fcc --cells 3 --density 0.8442 --temp 1.0 --cutoff 3.0 2>&1)
[ $? -eq 2 ] || fail "cutoff > half box: exit status not 2"
echo "$out" | grep -q 'larger than half the periodic box' || fail "cutoff message: $out"
out=$("$cli" md --input "$tmp/missing.data" 2>&1)
[ $? -eq 2 ] || fail "missing file: exit status not 2"
echo "$out" | grep -q 'cannot open' || fail "missing file message: $out"
out=$("$cli" md --lattice fcc --cells 3 2>&1)
[ $? -eq 2 ] || fail "incomplete --lattice options: exit status not 2"
out=$("$cli" md --lattice fcc --cells 3 --density 0.8442 --temp 1 --path nowhere 2>&1)
[ $? -eq 2 ] || fail "bad --path: exit status not 2"
echo "$out" | grep -q 'unknown force path "nowhere"' || fail "bad --path message: $out"

# a bad header is bad input: exit status 2 (the rule of docs/cli.md; 1 means that devices disagree)
printf 'title\n\nxx atoms\n1 atom types\n' > "$tmp/header.data"
out=$("$cli" md --input "$tmp/header.data" --steps 0 2>&1)
[ $? -eq 2 ] || fail "bad header: exit status not 2: $out"
echo "$out" | grep -q 'header.data:3: the atom count "xx" is not an integer' || fail "bad header message: $out"
# a simulation that fails on the device with bad input (a time step that blows it up): 2, and FAILED
out=$("$cli" md --lattice fcc --cells 3 --density 0.8442 --temp 1e6 --dt 0.5 --steps 1 --device 0 2>&1)
[ $? -eq 2 ] || fail "blown-up run: exit status not 2: $out"
echo "$out" | grep -q '^FAILED: the simulation stopped with an error on 1 device' || fail "blown-up run: $out"

# 7. the option table: exact names with a suggestion, the common options and exit statuses in the help
out=$("$cli" md --lattic fcc --cells 3 --density 0.8442 --temp 1 2>&1)
[ $? -eq 2 ] || fail "--lattic: exit status not 2"
echo "$out" | grep -q 'unknown option --lattic (did you mean --lattice?)' || fail "--lattic message: $out"
out=$("$cli" md --help 2>&1) || fail "md --help failed"
for opt in --device --dtype --native --json --out --input --lattice --reference --log; do
  echo "$out" | grep -q -- "^  $opt " || fail "md --help does not list $opt"
done
echo "$out" | grep -q '^exit status' || fail "md --help gives no exit statuses"
if RUSTICL_ENABLE=llvmpipe "$cli" devices --no-selftest | grep -q llvmpipe; then
  out=$(RUSTICL_ENABLE=llvmpipe "$cli" md --lattice fcc --cells 3 --density 0.8442 --temp 1 --dtype f64 --device llvmpipe 2>&1)
  [ $? -eq 3 ] || fail "md f64 on llvmpipe alone: exit status not 3 (no device could run): $out"
  echo "$out" | grep -q 'skipped: ' || fail "md f64 on llvmpipe alone: $out"
fi

rm -rf "$tmp"
[ $fails -eq 0 ] && echo "cli_md: all checks passed"
exit $((fails != 0))
