#!/usr/bin/env bash
# Strong scaling of reprocl over MPI: for K = 1, 2, 4, 8 ranks (one mpirun each), CG on poisson3d, the 9-point
# stencil and the reproducible allreduce (rcl_mpi_partial_allreduce against MPI_Allreduce(MPI_SUM) of one value,
# for one value and 2^20 values per rank), collected into one JSON document with speedup and parallel efficiency
# per K (T1 / TK and the parallel efficiency: T1 / (K TK) where each rank brings its own cores, T1 / TK where the K
# ranks share the same cores; "efficiency_formula" in the JSON says which). Every run also checks its bits against the one-device host reference
# (matches_reference), so a scaling record is a reproducibility record too. CG and the stencil: the least time
# of two runs per K (the first also builds or loads the kernels); a third run with --phases gives each family's
# "phases" per K (seconds in halo exchange, reductions, kernels: the slowest rank's and the mean; docs/scaleout.md).
#   scripts/bench_mpi_scaling.sh [--full] [--ks "1 2 4 8"] [--device D | --device-map MAP] [--cg SPEC]
#       [--grid WxH] [--iters N] [--maxit N] [--md-cells N] [--md-steps S] [--mpirun-args "..."]
#       [--cores-per-rank | --rank-cores N] [--bind [--bind-cores C]] [--one-run] [--keep DIR] [--out FILE]
# MD: an fcc lattice of N^3 cells (4 N^3 atoms; --full: 40, 256,000 atoms), f32, S steps (default 30), one run per
# K (its time is the step loop alone, the kernels built before it); its "breakdown" (ghost exchange,
# decompositions, device) in the JSON. --keep DIR: every command's JSON is written there (default: a temporary
# folder removed at the end), so a run cut short keeps what it measured.
# --full: CG on poisson3d:115 (1.52M rows, 10.5M non-zeros), the stencil on 8192^2; default: small sizes.
# --cg SPEC, --maxit N: CG's --gen matrix and iterations; --grid WxH, --iters N: the stencil's (over --full's or the
# defaults). --device-map MAP: passed to every command instead of --device (e.g. rank:nvidia:#0,nvidia:#1).
# (bench allreduce, which takes no map, times its parts on the map's first spec.)
# --mpirun-args "...": extra mpirun arguments (e.g. --bind-to none).
# --cores-per-rank: each rank's PoCL uses its share of the machine's cores (POCL_CPU_MAX_CU_COUNT = cores / K): the
#   same cores for every K, so the efficiency is T1 / TK (what the decomposition costs on a fixed machine).
# --rank-cores N: every rank's PoCL uses N cores for every K (POCL_CPU_MAX_CU_COUNT = N; K = 1 runs on N cores, K = 8
#   on 8 N): classic strong scaling, efficiency T1 / (K TK). Without either, PoCL takes every core in each rank.
# --bind: each rank bound to cores of its own (mpirun --map-by slot:PE=N --bind-to core, N its PoCL's cores: those
#   of --rank-cores or --cores-per-rank, else 1), so its PoCL workers and its host thread (MPI progress, queue
#   waits) never compete with another rank's; the rank's threads inherit the binding. --bind-cores C: C cores
#   per rank instead (e.g. --rank-cores 1 --bind-cores 2: one PoCL worker and a core for the host thread).
# --one-run: CG and the stencil run once plus the --phases run per K (the least of the two) instead of twice plus it.
# Environment: MPIRUN (default: mpirun, with --allow-run-as-root --oversubscribe as root), REPROCL_MPI (the tool,
# default build/reprocl-mpi).
set -euo pipefail
full=0 ks="1 2 4 8" device=${REPROCL_DEVICE:-0} map="" share=0 rank_cores="" out="" margs="" runs="1 2"
o_cg="" o_grid="" o_iters="" o_maxit="" md_cells="" md_steps=30 keep="" bind=0 bind_cores=""
while [ $# -gt 0 ]; do
  case "$1" in
  --full) full=1 ;;
  --ks) ks=$2; shift ;;
  --device) device=$2; shift ;;
  --device-map) map=$2; shift ;;
  --cg) o_cg=$2; shift ;;
  --grid) o_grid=$2; shift ;;
  --iters) o_iters=$2; shift ;;
  --maxit) o_maxit=$2; shift ;;
  --md-cells) md_cells=$2; shift ;;
  --md-steps) md_steps=$2; shift ;;
  --keep) keep=$2; shift ;;
  --mpirun-args) margs=$2; shift ;;
  --cores-per-rank) share=1 ;;
  --rank-cores) rank_cores=$2; shift ;;
  --one-run) runs="1" ;;
  --bind) bind=1 ;;
  --bind-cores) bind_cores=$2; shift ;;
  --out) out=$2; shift ;;
  *) echo "bench_mpi_scaling.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
tool=${REPROCL_MPI:-build/reprocl-mpi}
mpirun_cmd=${MPIRUN:-mpirun}
[ "$(id -u)" = 0 ] && [ -z "${MPIRUN:-}" ] && mpirun_cmd="mpirun --allow-run-as-root --oversubscribe"
cores=$(nproc)
if [ $full = 1 ]; then
  gen=poisson3d:115 maxit=200 grid=8192x8192 iters=100 cells=40
else
  gen=poisson3d:30 maxit=100 grid=1024x1024 iters=50 cells=8
fi
cells=${md_cells:-$cells}
gen=${o_cg:-$gen} maxit=${o_maxit:-$maxit} grid=${o_grid:-$grid} iters=${o_iters:-$iters}
cg=(--gen "$gen" --maxit "$maxit")
dev=(--device "$device")
[ -n "$map" ] && dev=(--device-map "$map")
bdevice=$device # bench allreduce takes --device only: with a map, its first spec
if [ -n "$map" ]; then bdevice=${map#*:} bdevice=${bdevice%%,*}; fi
# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
bench_workdir "$keep"
for k in $ks; do
  env=()
  [ $share = 1 ] && env=(-x POCL_CPU_MAX_CU_COUNT=$((cores / k > 0 ? cores / k : 1)))
  [ -n "$rank_cores" ] && env=(-x POCL_CPU_MAX_CU_COUNT="$rank_cores")
  pe=${rank_cores:-1}
  [ $share = 1 ] && pe=$((cores / k > 0 ? cores / k : 1))
  pe=${bind_cores:-$pe}
  [ $bind = 1 ] && env+=(--map-by "slot:PE=$pe" --bind-to core --report-bindings)
  # shellcheck disable=SC2086 # --mpirun-args is split into words on purpose
  run() { $mpirun_cmd $margs -n "$k" ${env[@]+"${env[@]}"} "$tool" "$@"; }
  for r in $runs phases; do # the first run of a K also builds (or loads) the kernels: the least of the runs
    ph=()
    [ $r = phases ] && ph=(--phases)
    echo "K = $k: cg ($r)" >&2
    run cg "${cg[@]}" --dtype f64 "${dev[@]}" ${ph[@]+"${ph[@]}"} --json >"$tmp/cg-$k-$r.json"
    echo "K = $k: stencil ($r)" >&2
    run stencil --kind nine --grid "$grid" --iters "$iters" --dtype f32 "${dev[@]}" ${ph[@]+"${ph[@]}"} --json \
      >"$tmp/stencil-$k-$r.json"
  done
  echo "K = $k: md" >&2
  run md --lattice fcc --cells "$cells" --density 0.8442 --temp 3 --steps "$md_steps" --dtype f32 "${dev[@]}" --json \
    >"$tmp/md-$k.json"
  for mode in ordered exact; do
    echo "K = $k: allreduce $mode" >&2
    run bench allreduce --mode $mode --n 1 --json >"$tmp/allreduce-$mode-1-$k.json"
    run bench allreduce --mode $mode --n $((k * 1048576)) --reps 5000 --device "$bdevice" --json \
      >"$tmp/allreduce-$mode-2^20-$k.json"
  done
done
python3 - "$tmp" "$full" "$cores" "$share" "$ks" "$map" "$margs" "$rank_cores" "$bind" "$bind_cores" >"${out:-/dev/stdout}" <<'PY'
import json, os, platform, sys
tmp, full, cores, share, ks = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5].split()
device_map, mpirun_args, rank_cores, bind, bind_cores = sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9], sys.argv[10]
def eff(t1, k, t):  # the same cores for every K (--cores-per-rank): T1 / TK; else each rank brings its own
    return t1 / t if share else t1 / (int(k) * t)
def load(name):
    with open(os.path.join(tmp, name)) as f:
        return json.load(f)
def scaling(kind):
    rows, t1 = [], None
    for k in ks:
        ph = load(f"{kind}-{k}-phases.json")
        runs = [load(f"{kind}-{k}-{r}.json") for r in (1, 2) if os.path.exists(os.path.join(tmp, f"{kind}-{k}-{r}.json"))]
        j = min(runs + [ph], key=lambda j: j["time_s"])
        t = j["time_s"]
        t1 = t if t1 is None else t1
        row = {"ranks": int(k), "time_s": t, "speedup": t1 / t, "efficiency": eff(t1, k, t),
               "matches_reference": j["matches_reference"] and ph["matches_reference"],
               "devices": [r["device"] for r in j["ranks"]], "phases": ph["phases"]}
        for key in ("iterations", "history_sha256", "solution_sha256", "sha256"):
            if key in j:
                row[key] = j[key]
        rows.append(row)
    first = load(f"{kind}-{ks[0]}-1.json")
    what = {"matrix": first["matrix"]} if kind == "cg" else {"grid": f'{first["width"]}x{first["height"]}',
                                                              "iterations": first["iterations"]}
    return {**what, "dtype": first["dtype"], "runs": rows}
def md_scaling():
    rows, t1 = [], None
    for k in ks:
        j = load(f"md-{k}.json")
        t1 = j["time_s"] if t1 is None else t1
        rows.append({"ranks": int(k), "time_s": j["time_s"], "speedup": t1 / j["time_s"],
                     "efficiency": eff(t1, k, j["time_s"]), "forces_sha256": j["forces_sha256"],
                     "state_sha256": j["state_sha256"], "breakdown": j.get("breakdown")})
    first = load(f"md-{ks[0]}.json")
    same = len({(r["forces_sha256"], r["state_sha256"]) for r in rows}) == 1
    return {"natoms": first["natoms"], "steps": first["steps"], "dtype": first["dtype"], "same_bits": same,
            "runs": rows}
allreduce = []
for mode in ("ordered", "exact"):
    for per in ("1", "2^20"):
        for k in ks:
            j = load(f"allreduce-{mode}-{per}-{k}.json")
            allreduce.append({"ranks": j["ranks"], "mode": mode, "n": j["n"], "per_rank": per,
                              "rcl_mpi_partial_allreduce_s": j["rcl_mpi_partial_allreduce_s"],
                              "mpi_allreduce_s": j["mpi_allreduce_s"], "ratio": j["ratio"],
                              "part_host_s": j["part_host_s"], "part_device_s": j["part_device_s"]})
doc = {"command": "bench mpi-scaling", "host": platform.node(), "cores": cores, "full": full,
       "cores_per_rank": (f"POCL_CPU_MAX_CU_COUNT = {cores} / K" if share else
                          f"POCL_CPU_MAX_CU_COUNT = {rank_cores}" if rank_cores else "not limited"),
       "efficiency_formula": "T1 / TK (the same cores for every K)" if share else "T1 / (K TK)",
       "device": load(f"cg-{ks[0]}-1.json")["ranks"][0]["device"], "device_map": device_map or None,
       "mpirun_args": mpirun_args,
       "binding": ("none" if bind == "0" else "each rank bound to its own cores (--map-by slot:PE=N --bind-to core" +
                   (f", N = {bind_cores}" if bind_cores else ", N = its PoCL's cores") + ")"),
       "cg": scaling("cg"), "stencil": scaling("stencil"), "md": md_scaling(), "allreduce": allreduce}
json.dump(doc, sys.stdout, indent=2)
print()
PY
