#!/bin/sh
# MD steps per second on one GPU against system size (issue 20, "MD: no floor"): the LJ fcc liquid of the
# issue's table (density 0.8442, T* 3, cutoff 2.5, dt 0.005, 2000 steps, REPROCL_TUNING=off) at 500, 4000,
# 32000 and 256000 atoms, f32 and f64, through `reprocl md --json`, with the status read every 32 steps (the
# default), every step (REPROCL_MD_SYNC=1: a host round trip and a state snapshot per step, slower than the
# design before the change) and every 128. The state digest must be the same for every K.
# `reprocl md` runs the fast configuration (no kernel-time events, arguments set once, 6 launches a step);
# REPROCL_BIN=path/to/other/reprocl measures another build (e.g. main's) the same way.
# Builds nothing: build/reprocl must exist. Writes OUTDIR/md_<atoms>_<dtype>_sync<K>.json and a summary
# OUTDIR/summary.tsv (atoms dtype K steps/s builds state digest). About 1-2 minutes on an H100.
#   usage: scripts/bench_md_floor.sh OUTDIR [DEVICE]   (DEVICE: a --device spec, default nvidia:)
# SYNCS: the K values (default "32 1 128"; for a build before the change, which ignores it, "32"); CELLS: the
# lattice sizes (default "5 10 20 40": 500, 4000, 32000, 256000 atoms).
set -eu
out=${1:?usage: scripts/bench_md_floor.sh OUTDIR [DEVICE]}
dev=${2:-nvidia:}
bin=${REPROCL_BIN:-build/reprocl}
[ -x "$bin" ] || { echo "bench_md_floor: $bin not found (build first)" >&2; exit 2; }
mkdir -p "$out"
export REPROCL_TUNING=off
"$bin" devices > "$out/devices.txt" 2>&1 || true
printf 'atoms\tdtype\tsync\tsteps_per_s\tneighbor_builds\tstate_sha256\n' > "$out/summary.tsv"
for cells in ${CELLS:-5 10 20 40}; do
  atoms=$((4 * cells * cells * cells))
  for dt in f32 f64; do
    for k in ${SYNCS:-32 1 128}; do
      f="$out/md_${atoms}_${dt}_sync${k}.json"
      if ! REPROCL_MD_SYNC=$k timeout 60 "$bin" md --lattice fcc --cells "$cells" --density 0.8442 --temp 3 \
        --steps 2000 --dtype "$dt" --device "$dev" --json > "$f" 2> "$f.err"; then
        echo "bench_md_floor: $atoms atoms $dt sync $k failed (see $f.err)" >&2
        continue
      fi
      python3 - "$f" "$atoms" "$dt" "$k" >> "$out/summary.tsv" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], "%.1f" % d["steps_per_s"], str(d["neighbor_builds"]),
                 d["state_sha256"]]))
PY
    done
  done
done
cat "$out/summary.tsv"
