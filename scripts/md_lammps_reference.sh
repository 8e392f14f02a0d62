#!/usr/bin/env bash
# Regenerates the LAMMPS reference values of the MD tests (tests/data/md/) with /usr/bin/lmp (Debian
# packages lammps and lammps-examples; python3 rounds coordinates to binary32). Run from the project root;
# it rewrites melt*.data, *.forces and *.ref from the inputs in.melt_ref, in.melt_f32_ref, in.heat_lj_ref.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data="$root/tests/data/md"
heat=${HEAT_DATA:-/usr/share/lammps/examples/HEAT/data.lj}
lmp=${LMP:-lmp}
command -v "$lmp" >/dev/null || { echo "no $lmp: apt-get install lammps lammps-examples" >&2; exit 1; }
[ -f "$heat" ] || { echo "no $heat: apt-get install lammps-examples" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$lmp" -in "$data/in.melt_ref" -log none -screen none
# the data file keeps positions, masses and box; velocities were zeroed, so drop that section
awk '/^Velocities/{skip=1; next} skip && /^[A-Z]/{skip=0} !skip' melt.data > melt.clean
sed -i -e '${/^$/d}' melt.clean
cp melt.clean "$data/melt.data"
# dump files: keep "id fx fy fz" rows only
awk 'f{print} /^ITEM: ATOMS/{f=1}' melt.forces > "$data/melt.forces"
cp melt.ref "$data/melt.ref"
# the same configuration with every coordinate rounded to binary32 (%.9g round-trips it): the reference
# for single precision, whose own arithmetic is then all that differs from LAMMPS's binary64
python3 - melt.clean melt_f32.data <<'PY'
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
out, atoms = [], False
for line in open(src):
    t = line.split()
    if line.startswith('Atoms'):
        atoms = True
    elif atoms and len(t) == 8:
        t[2:5] = ['%.9g' % struct.unpack('f', struct.pack('f', float(v)))[0] for v in t[2:5]]
        line = ' '.join(t) + '\n'
    elif atoms and t and not t[0].lstrip('-').isdigit():
        atoms = False
    out.append(line)
open(dst, 'w').writelines(out)
PY
cp melt_f32.data "$data/melt_f32.data"
"$lmp" -var data melt_f32.data -var out melt_f32 -in "$data/in.melt_f32_ref" -log none -screen none
awk 'f{print} /^ITEM: ATOMS/{f=1}' melt_f32.forces > "$data/melt_f32.forces"
cp melt_f32.ref "$data/melt_f32.ref"
"$lmp" -var data "$heat" -in "$data/in.heat_lj_ref" -log none -screen none
awk 'f{print} /^ITEM: ATOMS/{f=1}' heat_lj.forces > "$data/heat_lj.forces"
cp heat_lj.ref "$data/heat_lj.ref"
echo "LAMMPS $("$lmp" -h | sed -n 2p | sed 's/^ *//')" > "$data/lammps.version"
ls -l "$data"
