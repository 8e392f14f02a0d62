#!/usr/bin/env bash
# Where an MD decomposition's time goes on a GPU (issues 17/21): the case of the issue, LJ fcc 100^3 = 4,000,000
# atoms, f32, 200 steps, on one device (`reprocl md`) and over 1 and 2 ranks (`reprocl-mpi md`), each rank on
# device $DEVICE (two ranks share it unless DEVICE_MAP names two GPUs, e.g. rank:nvidia:#0,nvidia:#1). Writes
# one.json, mpi-1.json, mpi-2.json and summary.txt (each run's time, decompositions and the "breakdown" of
# decompose_s into its phases: state read, migration pack/messages/unpack, ghosts, local fill, local build) to
# the directory given. The digests of the three runs must be equal (summary.txt says whether they are).
#   scripts/md_decompose_gpu.sh OUTDIR          (after a build: scripts/gpu_host.sh build; ~2-3 minutes on an H100)
# Environment: REPROCL (default build-gpu/reprocl), REPROCL_MPI (build-gpu/reprocl-mpi), DEVICE (nvidia),
# DEVICE_MAP, CELLS (100), STEPS (200), MPIRUN (mpirun; as root with --allow-run-as-root --oversubscribe).
set -euo pipefail
out=${1:?usage: md_decompose_gpu.sh OUTDIR}
mkdir -p "$out"
cli=${REPROCL:-build-gpu/reprocl} mpi_cli=${REPROCL_MPI:-build-gpu/reprocl-mpi} device=${DEVICE:-nvidia}
mpirun_cmd=${MPIRUN:-mpirun}
[ "$(id -u)" = 0 ] && [ -z "${MPIRUN:-}" ] && mpirun_cmd="mpirun --allow-run-as-root --oversubscribe"
args=(--lattice fcc --cells "${CELLS:-100}" --density 0.8442 --temp 3 --steps "${STEPS:-200}" --dtype f32 --json)
export REPROCL_TUNING=${REPROCL_TUNING:-off}
"$cli" md "${args[@]}" --device "$device" >"$out/one.json" 2>"$out/one.err"
for k in 1 2; do
  dev=(--device-map "${DEVICE_MAP:-rank:$device}")
  $mpirun_cmd -n $k "$mpi_cli" md "${args[@]}" "${dev[@]}" >"$out/mpi-$k.json" 2>"$out/mpi-$k.err"
done
python3 - "$out" >"$out/summary.txt" <<'PY'
import json, sys
d = sys.argv[1]
first = json.load(open(f"{d}/one.json"))["devices"][0]
print(f"one device ({first['name']}): {first['time_s']:.3f} s, {first['neighbor_builds']} neighbour-list builds")
digests = {(first["forces_sha256"], first["state_sha256"])}
for k in (1, 2):
    j = json.load(open(f"{d}/mpi-{k}.json"))
    digests.add((j["forces_sha256"], j["state_sha256"]))
    b = j["breakdown"]
    n = max(j["neighbor_builds"] - 1, 1)  # the run's decompositions (the first is the creation's)
    print(f"{k} rank(s): {j['time_s']:.3f} s, {j['neighbor_builds']} decompositions, {j['natoms']} atoms")
    for key, v in b.items():
        if key.startswith("decompose"):
            print(f"  {key:28s} {v:9.3f} s  {v / n * 1e3:9.2f} ms per decomposition")
print("same digests on one device and over 1 and 2 ranks:", len(digests) == 1)
PY
cat "$out/summary.txt"
