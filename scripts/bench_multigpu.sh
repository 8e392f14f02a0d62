#!/usr/bin/env bash
# Multi-GPU strong scaling (issue 21, docs/performance.md "Several GPUs of one host"): CG on a 3D Poisson matrix,
# the 9-point stencil and Lennard-Jones MD on G GPUs of one host —
#   one GPU alone (`reprocl CMD --device all`: every GPU alone and PoCL on the host CPU, the same case), the G
#   GPUs as one in-process split (`--split nvidia:#0,...` with equal weights, where the command has --split),
#   and one MPI rank per GPU for K = 1..G (`mpirun -n K reprocl-mpi CMD --device-map rank:nvidia:#0,...`)
# — each printing its digests; one JSON document with every run's digest and time, the speedup T1 / TK and the
# parallel efficiency T1 / (K TK), T1 = the first GPU alone (its solve, the data already on the device), TK an MPI
# run's solve (solve_s: the call less its setup phase — uploads and the result read back —, slowest rank) or the
# in-process split's whole call (it takes and returns host arrays). Digests must all be equal: the script exits 1 if not.
#   scripts/bench_multigpu.sh [--gpus G] [--out FILE] [--families "cg stencil md"] [--one DEVICES] [--keep DIR]
# --one: the devices of the one-device runs (default all: every GPU and PoCL; e.g. "nvidia:#0" to save time);
# --keep: each command's JSON is written there as it ends (default: a temporary folder), so a run cut short
# keeps what it measured. Each command is limited to CMD_TIMEOUT seconds (default 300).
# Environment: CG_N (poisson3d:N, default 245: 102.6M non-zeros), CG_MAXIT (200), GRID (32768), STENCIL_ITERS
# (20), MD_CELLS (fcc N^3 cells, 100: 4M atoms), MD_STEPS (200), GPU (the platform part of the GPU specs,
# default nvidia), MPI_ARGS (more options of the reprocl-mpi commands, e.g. --no-reference), REPROCL (build/reprocl), REPROCL_MPI (build/reprocl-mpi), MPIRUN (mpirun; as root with
# --allow-run-as-root --oversubscribe; always --bind-to none: each rank's host threads are not pinned).
set -euo pipefail
gpus=2 out="" families="cg stencil md" one_dev=all keep=""
while [ $# -gt 0 ]; do
  case "$1" in
  --gpus) gpus=$2; shift ;;
  --out) out=$2; shift ;;
  --families) families=$2; shift ;;
  --one) one_dev=$2; shift ;;
  --keep) keep=$2; shift ;;
  *) echo "bench_multigpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cli=${REPROCL:-build/reprocl} tool=${REPROCL_MPI:-build/reprocl-mpi} gpu=${GPU-nvidia}
mpirun_cmd=${MPIRUN:-mpirun}
[ "$(id -u)" = 0 ] && [ -z "${MPIRUN:-}" ] && mpirun_cmd="mpirun --allow-run-as-root --oversubscribe"
specs=() weights=()
for ((g = 0; g < gpus; g++)); do specs+=("$gpu:#$g"); weights+=(1); done
split=$(IFS=,; echo "${specs[*]}") sw=$(IFS=:; echo "${weights[*]}")
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
bench_workdir "$keep"
limit=(timeout --signal=INT --kill-after=20 "${CMD_TIMEOUT:-300}")
# The MPI runs skip rank 0's host reference (minutes at these sizes): their digests are compared with the one-device
# run's, which checks the reference (cg; MPI_REFERENCE=1 checks it in every run).
noref=(--no-reference --phases) # and each rank's phases (halo exchange, reductions, kernels: docs/scaleout.md)
# Tuning on first use would run inside the timed calls (each K cuts other sizes, so each run would tune anew):
# off unless the caller says otherwise (then tune beforehand: `reprocl tune`).
export REPROCL_TUNING=${REPROCL_TUNING:-off}
[ "${MPI_REFERENCE:-0}" = 1 ] && noref=(--phases)
cg=(--gen "poisson3d:${CG_N:-245}" --dtype f64 --tol 0 --maxit "${CG_MAXIT:-200}")
st=(--kind nine --grid "${GRID:-32768}x${GRID:-32768}" --iters "${STENCIL_ITERS:-20}" --dtype f32)
md=(--lattice fcc --cells "${MD_CELLS:-100}" --density 0.8442 --temp 3 --steps "${MD_STEPS:-200}" --dtype f32)
for fam in $families; do
  case $fam in
  cg) args=("${cg[@]}" "${noref[@]}") one=(cg "${cg[@]}" --split "$split" --split-weights "$sw") ;;
  stencil) args=("${st[@]}" "${noref[@]}") one=(stencil "${st[@]}" --no-reference --split "$split" --split-weights "$sw") ;;
  md) args=("${md[@]}") one=(md "${md[@]}") ;;
  esac
  echo "$fam: every device alone$([ $fam = md ] || echo ' and the in-process split')" >&2
  "${limit[@]}" $cli "${one[@]}" --device "$one_dev" --json >"$tmp/$fam-one.json" || echo "  exit status $?" >&2
  for ((k = 1; k <= gpus; k++)); do
    map=$(IFS=,; echo "${specs[*]:0:k}")
    echo "$fam: $k MPI rank(s), one GPU each" >&2
    "${limit[@]}" $mpirun_cmd --bind-to none -n $k "$tool" $fam "${args[@]}" --device-map "rank:$map" ${MPI_ARGS:-} --json \
      >"$tmp/$fam-mpi-$k.json" || echo "  exit status $?" >&2
  done
done
python3 - "$tmp" "$gpus" "$families" "$split" >"${out:-/dev/stdout}" <<'PY'
import json, os, platform, sys
tmp, gpus, families, split = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
def load(name):
    p = os.path.join(tmp, name)
    if not os.path.exists(p) or os.path.getsize(p) == 0:
        return None
    with open(p) as f:
        return json.load(f)
def digest(j, fam):
    if fam == "cg":
        return (j.get("iterations"), j.get("history_sha256"), j.get("solution_sha256"))
    if fam == "stencil":
        return j.get("sha256")
    return (j.get("forces_sha256"), j.get("state_sha256"))
doc, ok = {"command": "bench_multigpu", "host": platform.node(), "gpus": gpus, "split": split}, True
for fam in families:
    one = load(f"{fam}-one.json") or {}
    rows = []
    for d in one.get("devices", []) + ([one["split"]] if isinstance(one.get("split"), dict) else []):
        rows.append({"run": d.get("name") or d.get("device") or "split", "time_s": d.get("time_s"),
                     "digest": digest(d, fam)})
    for k in range(1, gpus + 1):
        j = load(f"{fam}-mpi-{k}.json")
        ph = j and j.get("phases")
        rows.append({"run": f"mpi {k} rank(s)", "ranks": k, "time_s": j and j.get("time_s"),
                     "digest": j and digest(j, fam), "matches_reference": j and j.get("matches_reference"),
                     "phases": ph, "breakdown": j and j.get("breakdown")})
        if ph and ph.get("ranks"):  # the solve: the call less its setup (uploads, the result read back), slowest rank
            rows[-1]["solve_s"] = max(r["total_s"] - r["setup_s"] for r in ph["ranks"])
    # speedup and efficiency: one GPU alone (its solve, the data on the device) against each run's solve — an MPI
    # run's call less its setup (solve_s), the in-process split's whole call (it takes and returns host arrays)
    t1 = rows[0]["time_s"] if rows and rows[0]["time_s"] else None
    for r in rows:
        k = r.get("ranks", gpus if r["run"] == "split" else 1)
        t = r.get("solve_s") or r["time_s"]
        if t1 and t:
            r["speedup"] = t1 / t
            r["efficiency"] = t1 / (k * t)
    same = len({json.dumps(r["digest"]) for r in rows}) == 1 and all(r["digest"] for r in rows)
    ok = ok and same
    doc[fam] = {"case": one.get("matrix", {}).get("name") if fam == "cg" else None, "runs": rows, "same_bits": same,
                "raw_one_device": {k: v for k, v in one.items() if k not in ("devices", "split")}}
doc["all_same_bits"] = ok
json.dump(doc, sys.stdout, indent=2)
print()
for fam in families:
    for r in doc[fam]["runs"]:
        print("%-8s %-62.62s %10s s  solve %8s s  speedup %5s  eff %5s" % (fam, r["run"],
              "%.4f" % r["time_s"] if r["time_s"] else "-", "%.4f" % r["solve_s"] if r.get("solve_s") else "-",
              "%.2f" % r["speedup"] if "speedup" in r else "-", "%.2f" % r["efficiency"] if "efficiency" in r else "-"),
              file=sys.stderr)
    print("%-8s same bits: %s" % (fam, doc[fam]["same_bits"]), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
