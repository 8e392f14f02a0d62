#!/usr/bin/env bash
# reprocl-mpi under mpirun (docs/scaleout.md): `mpirun -n K reprocl-mpi run reduce` prints the digest that
# `reprocl run reduce` prints on one device, for K = 1..5 ranks on PoCL, on Rusticl and on both mixed (--device-map),
# every op x mode x dtype, with sizes smaller than K (empty slices) and trap inputs (dist cancel: sums that any
# reordering changes; the slices cut them). Faults: one rank's device spec matching nothing, or a dtype one rank's
# device cannot run, fails every rank with status 2/3 and a message naming the rank; a rank killed mid-run
# (REPROCL_MPI_TEST_DIE_RANK) ends mpirun, non-zero, in bounded time, leaving no output file, partial or temporary.
# reprocl-mpi spmv, cg and stencil (SOR too) print the digests of reprocl spmv / cg / stencil on one device for
# K = 1..5 (a Matrix Market file read once by rank 0 and scattered, generated matrices with fewer rows than ranks and
# power-law rows, grids thinner than the ranks' halos), --out is written once by rank 0; rank 0 failing to read the
# matrix fails every rank (exit 2), and a rank killed as CG starts ends mpirun in bounded time with no output file.
# reprocl-mpi bench allreduce runs and writes its JSON fields (its timings are not judged).
# Usage (ctest): cli_mpi.sh <reprocl CLI> <source dir> <build dir>; ctest sets REPROCL_MPI_CLI (reprocl-mpi) and
# REPROCL_MPIEXEC where the MPI layer is built. Exit 77 (a skip, saying why) where it is not.
. "$(dirname "$0")/clilib.sh"
MPI_CLI=${REPROCL_MPI_CLI:-}
MPIEXEC=${REPROCL_MPIEXEC:-mpirun}
if [ -z "$MPI_CLI" ] || [ ! -x "$MPI_CLI" ]; then
  echo "skip: reprocl-mpi is not built (CMake found no MPI, or REPROCL_MPI=OFF; Debian: libopenmpi-dev openmpi-bin)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe}
LIMIT=120 # seconds: no mpirun of this test may take longer (a hang fails instead of blocking ctest)

# mpirun -n K with a bounded time.
mpi() {
  local k=$1
  shift
  timeout -k 10 "$LIMIT" "$MPIEXEC" -n "$k" "$@"
}

# The digests of a --json result: "<result sha256> <reference sha256>" (one process: the first device's result).
digests() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["sha256"] if "sha256" in d else d["devices"][0]["sha256"]
print(r, d["reference"]["sha256"])' "$1" 2>/dev/null
}

have_rusticl=0
"$CLI" devices 2>/dev/null | grep -q '^\[[0-9]*\] rusticl' && have_rusticl=1
[ "$have_rusticl" = 1 ] || echo "note: no Rusticl device (RUSTICL_ENABLE=llvmpipe): its rows run on PoCL only"

# ---- the digests of K = 1..5 ranks equal one device's ----------------------------------------------------------
declare -A want # "op dtype mode n" -> the one-process digests
one_device() {  # op dtype mode n dist
  local key="$1 $2 $3 $4 $5"
  if [ -z "${want[$key]:-}" ]; then
    "$CLI" run reduce --op "$1" --dtype "$2" --mode "$3" --n "$4" --dist "$5" --device pocl --json >"$TMP/one.json" 2>"$TMP/one.err" ||
      fail "reprocl run reduce $key on PoCL: exit $?"
    want[$key]=$(digests "$TMP/one.json")
  fi
  echo "${want[$key]}"
}

# Configurations: every rank on PoCL; on Rusticl; mixed (by rank for even K, by local rank for odd K).
runs=0
for k in 1 2 3 4 5; do
  configs=("pocl:rank:pocl")
  if [ "$have_rusticl" = 1 ]; then
    mixed="mixed:rank:pocl,rusticl"
    [ $((k % 2)) = 1 ] && mixed="mixed:local:rusticl,pocl"
    configs+=("rusticl:rank:rusticl" "$mixed")
  fi
  sizes=($((k - 1)) 4099 100003) # k-1 < k ranks: empty slices (k = 1: an empty vector)
  idx=0
  for cfg in "${configs[@]}"; do
    name=${cfg%%:*} map=${cfg#*:}
    refused=0 # f64 where a rank drives Rusticl (no fp64) is refused once per configuration
    for op in sum dot nrm2; do
      for mode in ordered exact; do
        for dt in f32 f64; do
          n=${sizes[$(((idx + k) % 3))]}
          idx=$((idx + 1))
          # K = 2 and 5 run every op x mode x dtype; K = 1, 3, 4 every third (rotating), to keep CI's time.
          [ "$k" = 2 ] || [ "$k" = 5 ] || [ $(((idx + k) % 3)) = 0 ] || continue
          what="K=$k $name ($map) $op $dt $mode n=$n"
          if [ "$dt" = f64 ] && [ "$name" != pocl ] && [ "$map" != rank:pocl,rusticl -o "$k" != 1 ]; then
            [ "$refused" = 1 ] && continue
            refused=1
          fi
          mpi "$k" "$MPI_CLI" run reduce --op "$op" --dtype "$dt" --mode "$mode" --n "$n" --dist cancel \
            --device-map "$map" --json >"$TMP/mpi.json" 2>"$TMP/mpi.err"
          rc=$?
          runs=$((runs + 1))
          if [ "$refused" = 1 ] && [ "$dt" = f64 ]; then # every rank refuses, naming the rank that cannot
            if [ "$rc" = 3 ] && grep -q "rank [0-9]*: .*f64\|rank [0-9]*: .*fp64" "$TMP/mpi.err"; then
              pass "$what: refused on every rank (exit 3), naming the rank"
            else
              fail "$what: exit $rc, expected 3 naming the rank"
              head -5 "$TMP/mpi.err" | sed 's/^/     /'
            fi
            continue
          fi
          w=$(one_device "$op" "$dt" "$mode" "$n" cancel)
          got=$(digests "$TMP/mpi.json")
          if [ "$rc" = 0 ] && [ -n "$got" ] && [ "$got" = "$w" ] && [ "${got% *}" = "${got#* }" ]; then
            pass "$what: ${got% *} = one device = reference"
          else
            fail "$what: exit $rc, digests '$got', one device '$w'"
            head -5 "$TMP/mpi.err" | sed 's/^/     /'
          fi
        done
      done
    done
  done
done
echo "($runs mpirun runs of run reduce)"

# ---- the text output: the lines of reprocl run reduce, a line per rank --------------------------------------------
expect 0 "text output, 3 ranks" -- mpi 3 "$MPI_CLI" run reduce --n 1000 --dist cancel --device pocl
contains "$TMP/out" "reduce sum f32 ordered n=1000 dist=cancel seed=1" "the head line of run reduce"
contains "$TMP/out" "host reference (C, -ffp-contract=off)" "the reference line"
contains "$TMP/out" "rank 2   [667, 1000) Portable Computing Language" "rank 2's slice and device"
contains "$TMP/out" "AGREE: 3 rank(s) ran, every rank holds the same bits, equal to the reference" "the verdict"
[ "$(grep -c AGREE "$TMP/out")" = 1 ] && pass "rank 0 alone prints" || fail "the verdict printed $(grep -c AGREE "$TMP/out") times"

# ---- --out: written once by rank 0, the bytes of reprocl run reduce --out -----------------------------------------
mkdir -p "$TMP/o1" "$TMP/o2"
expect 0 "one process --out" -- "$CLI" run reduce --n 5000 --dist cancel --dtype f64 --mode exact --device pocl --out "$TMP/o1/r.bin"
expect 0 "4 ranks --out" -- mpi 4 "$MPI_CLI" run reduce --n 5000 --dist cancel --dtype f64 --mode exact --device pocl --out "$TMP/o2/r.bin"
cmp -s "$TMP/o1/r.bin" "$TMP/o2/r.bin" && pass "--out: the same 8 bytes" || fail "--out files differ"
[ "$(ls -A "$TMP/o2")" = r.bin ] && pass "--out leaves the file alone" || fail "--out left: $(ls -A "$TMP/o2")"

# ---- bench allreduce: the reproducible allreduce against MPI_Allreduce, JSON fields (timings are not judged) -----
for mode in ordered exact; do
  expect 0 "bench allreduce --mode $mode over 3 ranks (2^13 values, --device pocl)" -- \
    mpi 3 "$MPI_CLI" bench allreduce --mode $mode --n 8192 --reps 50 --device pocl --json
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["ranks"] == 3 and d["mode"] == sys.argv[2] and d["n"] == 8192 and d["rounds"] == 5
ok = ok and all(d[k] > 0 for k in ("rcl_mpi_partial_allreduce_s", "mpi_allreduce_s", "part_host_s", "part_device_s"))
sys.exit(0 if ok else 1)' "$TMP/out" $mode && pass "bench allreduce $mode: its JSON fields" || fail "bench allreduce $mode: JSON fields"
done

# ---- faults ----------------------------------------------------------------------------------------------------
t0=$(date +%s)
expect 2 "a device spec that matches nothing on rank 1 of 3: exit 2 on every rank" -- \
  mpi 3 "$MPI_CLI" run reduce --n 100 --device-map rank:pocl,no-such-device,pocl
contains "$TMP/err" "rank 1: no OpenCL device matches \"no-such-device\"" "the message names rank 1 and its spec"
[ "$(grep -c "error:" "$TMP/err")" = 1 ] && pass "one error line (rank 0 speaks)" || fail "$(grep -c "error:" "$TMP/err") error lines"
expect 2 "a bad device map: exit 2" -- mpi 2 "$MPI_CLI" run reduce --n 100 --device-map pocl
contains "$TMP/err" "expected \"local:SPEC,SPEC,...\" or \"rank:SPEC,SPEC,...\"" "the map's form is named"
expect 2 "a bad option: exit 2" -- mpi 2 "$MPI_CLI" run reduce --n 100 --dtyp f64
contains "$TMP/err" "reprocl-mpi run: error: unknown option --dtyp (did you mean --dtype?)" "the option is named"
expect 2 "--native does not apply" -- mpi 2 "$MPI_CLI" run reduce --n 100 --native
expect 2 "--device all is refused" -- mpi 2 "$MPI_CLI" run reduce --n 100 --device all
for die in 0 1 3; do
  mkdir -p "$TMP/die$die"
  start=$(date +%s)
  REPROCL_MPI_TEST_DIE_RANK=$die mpi 4 "$MPI_CLI" run reduce --n 300000 --dist cancel --device pocl \
    --out "$TMP/die$die/r.bin" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  took=$(($(date +%s) - start))
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$took" -lt "$LIMIT" ]; then # 124: timeout ended it
    pass "rank $die of 4 killed: mpirun ends non-zero (exit $rc) in ${took}s"
  else
    fail "rank $die of 4 killed: exit $rc after ${took}s (limit $LIMIT s)"
  fi
  [ -z "$(ls -A "$TMP/die$die")" ] && pass "rank $die killed: no output file, partial or temporary" ||
    fail "rank $die killed: left $(ls -A "$TMP/die$die")"
done
echo "(the faults took $(($(date +%s) - t0)) s)"

# ---- spmv, cg, stencil: the digests of reprocl spmv / cg / stencil on one device, for K = 1..5 ------------------
# The --json digests: "<result> <reference>" (spmv, stencil) or "<history> <solution> <reference's>" (cg).
cg_digests() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d if "history_sha256" in d else d["devices"][0]
print(r["history_sha256"], r["solution_sha256"], d["reference"]["history_sha256"], d["reference"]["solution_sha256"])' "$1" 2>/dev/null
}
mtx="$TMP/m.mtx"
python3 - "$mtx" <<'PY'
import sys
# A symmetric positive definite matrix with a trap row: 1, 2^60, 1, -2^60 in row 0 would not be SPD, so the trap
# sits in x (--x random) and the long rows: row i couples to i+-1 and to every 7th row (power-law-ish lengths).
n = 211
e = {}
for i in range(n):
    e[(i, i)] = 40.0 + i % 5
    if i + 1 < n: e[(i, i + 1)] = e[(i + 1, i)] = -1.0
    if i % 7 == 0:
        for j in range(0, n, 13):
            if j != i: e[(i, j)] = e[(j, i)] = -0.125
with open(sys.argv[1], "w") as f:
    f.write("%%MatrixMarket matrix coordinate real general\n" + "%d %d %d\n" % (n, n, len(e)))
    for (i, j), v in sorted(e.items()): f.write("%d %d %.17g\n" % (i + 1, j + 1, v))
PY
sruns=0
check_digests() { # what, extractor, mpirun's exit status: $TMP/one.json (one process) against $TMP/mpi.json
  local w g
  w=$($2 "$TMP/one.json") g=$($2 "$TMP/mpi.json")
  sruns=$((sruns + 1))
  if [ "$3" = 0 ] && [ -n "$g" ] && [ "$g" = "$w" ]; then pass "$1: ${g%% *} = one device"; else
    fail "$1: exit $3, digests '$g', one device '$w'"
    head -5 "$TMP/mpi.err" | sed 's/^/     /'
  fi
}
compare_runs() { # command extractor args...: one process on PoCL against $k ranks on $map, in $dt, per args
  local cmd=$1 ex=$2 args
  shift 2
  for args in "$@"; do
    "$CLI" "$cmd" $args --dtype "$dt" --device pocl --json >"$TMP/one.json" 2>/dev/null
    mpi "$k" "$MPI_CLI" "$cmd" $args --dtype "$dt" --device-map "$map" --json >"$TMP/mpi.json" 2>"$TMP/mpi.err"
    check_digests "K=$k $map $cmd $args $dt" "$ex" $?
  done
}
maps=("rank:pocl")
[ "$have_rusticl" = 1 ] && maps+=("rank:pocl,rusticl")
for k in 1 2 3 4 5; do
  map=${maps[$((k % ${#maps[@]}))]}
  dt=f64
  [ "$map" != rank:pocl ] && dt=f32 # Rusticl has no fp64
  compare_runs spmv digests "--matrix $mtx --x random:5 --beta 0.5 --y0 random:6" \
    "--gen powerlaw:$((k * 300 + 1)):3:$k --contract exact" "--gen random:$((k - 1)):3:2"
  compare_runs cg cg_digests "--matrix $mtx --rhs random:3" "--gen poisson2d:$((k + 9)) --jacobi --dots exact" \
    "--gen poisson2d:12 --maxit 5 --contract exact"
  compare_runs stencil digests \
    "--kind general --weights 1,-2,3,-4,5,-6,7,-8,9 --grid 33x$((k + 1)) --init random --iters 7 --boundary periodic" \
    "--kind nine --grid 64x71 --init random --iters 20 --boundary edge" \
    "--kind sor --grid 32x$((2 * k + 2)) --rhs random --iters 9 --boundary periodic" "--kind sor --grid 40x150 --iters 30"
done
echo "($sruns mpirun runs of spmv, cg, stencil)"
expect 0 "cg text output, 3 ranks" -- mpi 3 "$MPI_CLI" cg --matrix "$mtx" --device pocl
contains "$TMP/out" "rank 2   [" "rank 2's rows"
contains "$TMP/out" "AGREE: 3 rank(s) ran, equal to the reference (converged after" "the verdict"
[ "$(grep -c AGREE "$TMP/out")" = 1 ] && pass "rank 0 alone prints" || fail "the verdict printed $(grep -c AGREE "$TMP/out") times"
mkdir -p "$TMP/so1" "$TMP/so2"
for cmd in "spmv --matrix $mtx --x random:2" "cg --matrix $mtx" "stencil --kind nine --grid 50x9 --iters 4"; do
  name=${cmd%% *}
  expect 0 "one process $name --out" -- "$CLI" $cmd --device pocl --out "$TMP/so1/$name.bin"
  expect 0 "4 ranks $name --out" -- mpi 4 "$MPI_CLI" $cmd --device pocl --out "$TMP/so2/$name.bin"
  cmp -s "$TMP/so1/$name.bin" "$TMP/so2/$name.bin" && pass "$name --out: the same bytes" || fail "$name --out files differ"
done
[ "$(ls -A "$TMP/so2" | tr '\n' ' ')" = "cg.bin spmv.bin stencil.bin " ] && pass "--out: no temporary left" ||
  fail "--out left: $(ls -A "$TMP/so2")"
# --phases: every rank's per-phase times in the JSON ("phases": slowest rank, max, mean, per rank) and as text; the
# same digests as without it (the timed path waits for the queue more often, never with other bits).
for cmd in "cg --gen poisson2d:40" "spmv --gen poisson2d:40" "stencil --kind sor --grid 40x30 --iters 6" \
  "stencil --kind nine --grid 64x40 --iters 9"; do
  mpi 3 "$MPI_CLI" $cmd --device pocl --json >"$TMP/ph0.json" 2>/dev/null
  mpi 3 "$MPI_CLI" $cmd --device pocl --json --phases >"$TMP/ph1.json" 2>"$TMP/mpi.err"
  why=$(python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
p, keys = b.get("phases"), ("total_s", "halo_read_s", "halo_mpi_s", "halo_write_s", "reduce_part_s",
                            "reduce_allreduce_s", "kernels_s", "setup_s")
same = all(a.get(k) == b.get(k) for k in ("sha256", "history_sha256", "solution_sha256", "residual"))
if "phases" in a: print("phases without --phases")
elif not p or not same or not b["matches_reference"]: print("no phases, or other digests")
elif len(p["ranks"]) != 3 or p["calls"] != 1 or not 0 <= p["slowest_rank"] < 3 or p["exchanges"] < 1: print(p)
elif sys.argv[3] == "cg" and p["reductions"] < 3: print("cg without reductions")
elif any(not 0 <= p[k]["mean"] <= p[k]["max"] or p[k]["slowest"] > p[k]["max"] or
         p[k]["max"] != max(r[k] for r in p["ranks"]) for k in keys): print("inconsistent", p)
elif abs(sum(p["ranks"][p["slowest_rank"]][k] for k in keys[1:]) - p["total_s"]["slowest"]) > 1e-3: print("sum", p)' \
    "$TMP/ph0.json" "$TMP/ph1.json" "${cmd%% *}" 2>&1)
  [ -z "$why" ] && pass "${cmd%% *} --phases: the phases of 3 ranks, the same digests" || fail "$cmd --phases: $why"
done
expect 0 "cg --phases text, 2 ranks" -- mpi 2 "$MPI_CLI" cg --gen poisson2d:30 --device pocl --phases
contains "$TMP/out" "phases (seconds; slowest rank " "the phases' line"
contains "$TMP/out" "reduce parts " "the reductions' phases"
# --no-reference (large runs): the same digests, "reference" and "matches_reference" null, exit 0, no verdict on the
# text form but the digests; with the reference the same run says AGREE (tested above and in every case here).
for cmd in "cg --gen poisson2d:40 --maxit 30" "spmv --gen poisson2d:40" "stencil --kind sor --grid 40x30 --iters 6"; do
  mpi 2 "$MPI_CLI" $cmd --device pocl --json >"$TMP/nr0.json" 2>/dev/null
  expect 0 "${cmd%% *} --no-reference: exit 0" -- mpi 2 "$MPI_CLI" $cmd --device pocl --json --no-reference
  why=$(python3 -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
keys = ("sha256", "history_sha256", "solution_sha256", "residual", "iterations")
if not a["matches_reference"] or a["reference"] is None: print("the run with the reference does not agree")
elif b["reference"] is not None or b["matches_reference"] is not None: print("reference not null:", b["reference"])
elif any(a.get(k) != b.get(k) for k in keys): print("other digests")' "$TMP/nr0.json" "$TMP/out" 2>&1)
  [ -z "$why" ] && pass "${cmd%% *} --no-reference: the digests of the checked run, reference null" || fail "$cmd --no-reference: $why"
done
expect 0 "stencil --no-reference text" -- mpi 2 "$MPI_CLI" stencil --grid 64x40 --iters 3 --device pocl --no-reference
contains "$TMP/out" "RAN: 2 rank(s) ran; no host reference (--no-reference)" "the text says no reference was checked"
# Faults: only rank 0 reads the file: its failure fails every rank (exit 2), rank 0 naming the file.
expect 2 "cg, a matrix file rank 0 cannot read: exit 2 on every rank" -- mpi 3 "$MPI_CLI" cg --matrix "$TMP/none.mtx" --device pocl
contains "$TMP/err" "none.mtx" "the message names the file"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n' >"$TMP/bad.mtx"
expect 2 "spmv, a malformed matrix file: exit 2 on every rank" -- mpi 3 "$MPI_CLI" spmv --matrix "$TMP/bad.mtx" --device pocl
expect 3 "stencil f64 on a rank driving Rusticl: exit 3, naming it" -- mpi 2 "$MPI_CLI" stencil --grid 8x8 --iters 1 --dtype f64 --device-map rank:pocl,rusticl
[ "$have_rusticl" = 1 ] && contains "$TMP/err" "rank 1: " "the message names rank 1"
for die in 0 2; do
  mkdir -p "$TMP/cgdie$die"
  start=$(date +%s)
  REPROCL_MPI_TEST_DIE_RANK=$die mpi 3 "$MPI_CLI" cg --gen poisson2d:60 --device pocl --out "$TMP/cgdie$die/x.bin" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  took=$(($(date +%s) - start))
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$took" -lt "$LIMIT" ]; then
    pass "cg: rank $die of 3 killed as the solve starts: mpirun ends non-zero (exit $rc) in ${took}s"
  else
    fail "cg: rank $die of 3 killed: exit $rc after ${took}s (limit $LIMIT s)"
  fi
  [ -z "$(ls -A "$TMP/cgdie$die")" ] && pass "cg rank $die killed: no output file" || fail "cg rank $die killed: left $(ls -A "$TMP/cgdie$die")"
done

# ---- md: reprocl md's digests for K = 1..5 ranks, mixed drivers; --out written once, whole; a rank killed ---------
md_digests() { # "<forces sha256> <state sha256>" of a --json result (reprocl md: its first device)
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["devices"][0] if "devices" in d else d
print(r["forces_sha256"], r["state_sha256"])' "$1" 2>/dev/null
}
md_args=(--lattice fcc --cells 3 --density 0.8442 --temp 4 --steps 150 --thermo 50) # slabs thinner than 2.8 at K >= 2
md_runs=0
for dt in f32 f64; do
  for path in gather symmetric; do
    "$CLI" md "${md_args[@]}" --dtype $dt --path $path --device pocl --json >"$TMP/md1.json" 2>"$TMP/md1.err" ||
      fail "reprocl md $dt $path on PoCL: exit $?"
    w=$(md_digests "$TMP/md1.json")
    for k in 1 2 3 4 5; do
      map=rank:pocl # Rusticl runs f32 gather (no fp64, no 64-bit integer atomics)
      if [ "$have_rusticl" = 1 ] && [ $dt = f32 ] && [ $path = gather ]; then
        map=rank:pocl,rusticl
        [ $((k % 2)) = 1 ] && map=local:rusticl,pocl
      fi
      mpi "$k" "$MPI_CLI" md "${md_args[@]}" --dtype $dt --path $path --device-map "$map" --json >"$TMP/mdk.json" 2>"$TMP/mdk.err"
      rc=$?
      md_runs=$((md_runs + 1))
      got=$(md_digests "$TMP/mdk.json")
      if [ "$rc" = 0 ] && [ -n "$w" ] && [ "$got" = "$w" ]; then
        pass "md K=$k $dt $path ($map): forces and final state = reprocl md on one device"
      else
        fail "md K=$k $dt $path ($map): exit $rc, digests '$got', one device '$w'"
        head -5 "$TMP/mdk.err" | sed 's/^/     /'
      fi
    done
  done
done
echo "($md_runs mpirun runs of md)"
melt=(--input "$SRC/tests/data/md/melt.data" --steps 20 --thermo 10) # LAMMPS's data file, read by rank 0 and scattered
"$CLI" md "${melt[@]}" --device pocl --json >"$TMP/md1.json" 2>"$TMP/md1.err" || fail "reprocl md melt.data: exit $?"
expect 0 "md melt.data over 3 ranks" -- mpi 3 "$MPI_CLI" md "${melt[@]}" --device pocl --json
[ "$(md_digests "$TMP/out")" = "$(md_digests "$TMP/md1.json")" ] && pass "md melt.data: the digests of reprocl md" ||
  fail "md melt.data: '$(md_digests "$TMP/out")' vs '$(md_digests "$TMP/md1.json")'"
if [ "$have_rusticl" = 1 ]; then
  expect 3 "md f64 with a Rusticl rank: refused on every rank" -- \
    mpi 2 "$MPI_CLI" md "${md_args[@]}" --dtype f64 --device-map rank:pocl,rusticl
  contains "$TMP/err" "rank 1: " "the message names rank 1"
fi
mkdir -p "$TMP/md1" "$TMP/md4"
expect 0 "reprocl md --out --log" -- "$CLI" md "${md_args[@]}" --device pocl --out "$TMP/md1/t.xyz" --dump 30 --log "$TMP/md1/log.txt"
expect 0 "4 ranks md --out --log" -- mpi 4 "$MPI_CLI" md "${md_args[@]}" --device pocl --out "$TMP/md4/t.xyz" --dump 30 --log "$TMP/md4/log.txt"
contains "$TMP/out" "rank 3   Portable Computing Language" "a line per rank"
[ "$(grep -c "final state" "$TMP/out")" = 1 ] && pass "md: rank 0 alone prints" || fail "md: printed $(grep -c "final state" "$TMP/out") times"
cmp -s "$TMP/md1/t.xyz" "$TMP/md4/t.xyz" && pass "md --out: the frames of reprocl md, byte for byte" || fail "md --out files differ"
cmp -s "$TMP/md1/log.txt" "$TMP/md4/log.txt" && pass "md --log: reprocl md's thermo log" || fail "md --log files differ"
[ "$(ls -A "$TMP/md4" | tr '\n' ' ')" = "log.txt t.xyz " ] && pass "md: no temporary file left" || fail "md left: $(ls -A "$TMP/md4")"
for die in 0 2; do
  mkdir -p "$TMP/mddie$die"
  start=$(date +%s)
  REPROCL_MPI_TEST_DIE_RANK=$die mpi 3 "$MPI_CLI" md "${md_args[@]}" --device pocl --out "$TMP/mddie$die/t.xyz" \
    --log "$TMP/mddie$die/log.txt" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  took=$(($(date +%s) - start))
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$took" -lt "$LIMIT" ]; then
    pass "md: rank $die of 3 killed mid-run: mpirun ends non-zero (exit $rc) in ${took}s"
  else
    fail "md: rank $die of 3 killed mid-run: exit $rc after ${took}s (limit $LIMIT s)"
  fi
  [ -z "$(ls -A "$TMP/mddie$die")" ] && pass "md: rank $die killed: no output file" || fail "md: left $(ls -A "$TMP/mddie$die")"
done


# ---- installed: mpi.h, libreprocl_mpi, find_package(reprocl_mpi) and reprocl-mpi.pc build a consumer ------------
prefix="$TMP/prefix"
expect 0 "cmake --install" -- cmake --install "$BUILD" --prefix "$prefix"
libdir=$(ls -d "$prefix"/lib*/ | head -1)
for f in include/reprocl/mpi.h bin/reprocl-mpi; do [ -e "$prefix/$f" ] && pass "installed $f" || fail "missing $f"; done
ls "$libdir"libreprocl_mpi.so.0* "$libdir"libreprocl_mpi.a >/dev/null 2>&1 && pass "libreprocl_mpi installed" || fail "no libreprocl_mpi"
mkdir -p "$TMP/consumer"
cat >"$TMP/consumer/main.c" <<'C'
#include <reprocl/mpi.h>
#include <stdio.h>
/* Every rank holds 2^30, 1, -2^30, 1 (rank 2: none): an exact sum of all is the count of ones, which a float sum
 * in any plain order loses. */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rcl_context *c = NULL;
  int rc = rcl_mpi_context_create(&c, MPI_COMM_WORLD, "rank:pocl", NULL);
  float x[4] = {0x1p30f, 1.0f, -0x1p30f, 1.0f}, got = -1, want = 2.0f * (float)(size - (size > 2));
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  o.mode = RCL_REDUCE_EXACT;
  if (!rc) rc = rcl_mpi_reduce(&got, MPI_COMM_WORLD, c, RCL_OP_SUM, RCL_F32, rank == 2 ? 0 : 4, x, NULL, &o);
  if (rank == 0) printf("%s %.9g (want %.9g)\n", rc ? rcl_error_last() : "sum", got, want);
  rcl_context_free(c);
  MPI_Finalize();
  return rc || got != want;
}
C
consumer_builds reprocl_mpi reprocl::reprocl_mpi reprocl-mpi "$TMP/consumer/main.c" mpi 3
contains "$TMP/out" "sum 4 (want 4)" "the consumer's sum on 3 ranks (rank 2 empty)"
finish
