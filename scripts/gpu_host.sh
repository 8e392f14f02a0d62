#!/usr/bin/env bash
# Builds reprocl and runs named steps on the NVIDIA GPU host (see ../shared/device/README.md), writing
# logs under $OUT (or ./gpu-out). Used to produce the cross-vendor records in docs/; each step is also a
# plain command anyone can run on their own GPU machine.
#   source .device/setup.sh; bash scripts/gpu_host.sh build test reduce bench-reduce
#   source .device/setup.sh; bash scripts/gpu_host.sh bench-all     (after build; docs/performance.md)
#   source .device/setup.sh; bash scripts/gpu_host.sh bench-split   (after build: H100 + PoCL, PoCL/2)
#   source .device/setup.sh; bash scripts/gpu_host.sh build exact-ab (issue 20: exact reductions, A/B)
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
export PATH=/tmp/ocl/usr/bin:$PATH
# Debian puts gmp.h under the multiarch include directory.
export CPATH=/tmp/ocl/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
# Open MPI carried as Debian packages (../shared/device/prepare.sh openmpi-bin libopenmpi-dev ..., see
# docs/scaleout.md): unpacked under /tmp/ocl, relocated with OPAL_PREFIX; Debian's mpirun/mpicc names are
# alternatives links that no package holds, so they are made here.
# Where the host has an Open MPI of its own (seen 2026-11-25 on nvidia-h100-x2: 4.1.6 with a newer PMIx), the
# carried libraries must not shadow its own: they are removed from /tmp/ocl.
if [ -x /usr/bin/mpirun ] && [ -d /tmp/ocl/usr/lib/x86_64-linux-gnu/openmpi ]; then
  (cd /tmp/ocl/usr/lib/x86_64-linux-gnu && rm -rf libpmix* libevent* libhwloc* libfabric* libucx* libuc[pst]* \
    libibverbs* librdmacm* libnl-* libpsm* libnuma* libmunge* libltdl* libmpi* libopen-* openmpi pmix* hwloc ucx)
  rm -f /tmp/ocl/usr/bin/mpi* /tmp/ocl/usr/bin/orte*
fi
if [ -x /tmp/ocl/usr/bin/mpirun.openmpi ] && ! command -v mpirun >/dev/null 2>&1; then
  ln -sf mpirun.openmpi /tmp/ocl/usr/bin/mpirun
  ln -sf mpicc.openmpi /tmp/ocl/usr/bin/mpicc
  export OPAL_PREFIX=/tmp/ocl/usr
  export LD_LIBRARY_PATH=/tmp/ocl/usr/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
build=build-gpu
cli=$build/reprocl
step_build() {
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -40 "$out/cmake.log"; return 1; }
  cmake --build $build >>"$out/cmake.log" 2>&1 || { grep -E "error|Error" -A5 "$out/cmake.log" | head -60; return 1; }
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; clinfo -l; $cli devices; } 2>&1 | tee "$out/devices.txt"
  { lscpu; nvidia-smi topo -m; command -v mpirun && mpirun --version; } >>"$out/devices.txt" 2>&1
  $cli devices --json >"$out/devices.json"
}
step_test() {
  # Every test on every device of the host: the H100 and PoCL on the Xeon.
  REPROCL_DATA_PREFIX=/tmp/ocl REPROCL_TEST_MIN_DEVICES=2 ctest --test-dir $build --output-on-failure -j1 --timeout ${CTEST_TIMEOUT:-400} ${CTEST_ARGS:-} 2>&1 | tee "$out/ctest.log" | grep -E "Test +#|tests passed|FAILED|Failed" | tail -40
}
step_reduce() {
  # The foundation's acceptance: one digest per op/dtype/mode on every device, plus native drift.
  : >"$out/reduce.txt"
  for dt in f32 f64; do for op in sum dot nrm2; do for mode in ordered exact; do
    for dist in uniform cancel; do
      echo "\$ reprocl run reduce --op $op --dtype $dt --mode $mode --n 16777259 --dist $dist --device all --native" >>"$out/reduce.txt"
      $cli run reduce --op $op --dtype $dt --mode $mode --n 16777259 --dist $dist --device all --native >>"$out/reduce.txt" 2>&1
      echo "exit status $?" >>"$out/reduce.txt"
    done
  done; done; done
  grep -E "AGREE|DISAGREE|differs|exit status [^0]" "$out/reduce.txt" | sort | uniq -c
}
step_stencil() {
  # The stencil family's acceptance: 1000 iterations of SHOC's stencil give one digest on every device
  # (golden 3c5aa4f6... at 64x64, docs/stencil.md), each implementation, plus native drift at 8192^2.
  : >"$out/stencil.txt"
  for args in "--grid 64x64 --iters 1000" "--grid 64x64 --iters 1000 --variant tiled" \
    "--grid 64x64 --iters 1000 --variant task" "--grid 256x256 --iters 1000 --dtype f64" \
    "--kind sor --grid 512x512 --init random --iters 200" "--kind general --grid 1021x1019 --init random --iters 10 --weights $(seq -s, 0.01 0.01 0.25)"; do
    echo "\$ reprocl stencil $args --device all --native" >>"$out/stencil.txt"
    $cli stencil $args --device all --native >>"$out/stencil.txt" 2>&1
    echo "exit status $?" >>"$out/stencil.txt"
  done
  echo "\$ reprocl stencil --grid 8192x8192 --iters 100 --device nvidia --no-reference --native" >>"$out/stencil.txt"
  $cli stencil --grid 8192x8192 --iters 100 --device nvidia --no-reference --native >>"$out/stencil.txt" 2>&1
  grep -E "AGREE|DISAGREE|differs|exit status [^0]" "$out/stencil.txt" | sort | uniq -c
}
step_check() {
  export REPROCL_DATA_PREFIX=/tmp/ocl  # the real matrices and images of the suite (unpacked by setup.sh)
  # The standard suite on every device with native drift, the HTML report, a fingerprint, and the
  # comparison with the reference fingerprint made on PoCL (tests/data/reference-fingerprint.json).
  $cli check --suite ${SUITE:-full} --report "$out/check-h100.html" >"$out/check.txt" 2>&1
  echo "check exit status $?" | tee -a "$out/check.txt"
  grep -E "^(AGREE|DISAGREE)" "$out/check.txt"
  $cli fingerprint --suite quick -o "$out/fingerprint-h100.json"
  $cli compare tests/data/reference-fingerprint.json "$out/fingerprint-h100.json" | tee "$out/compare.txt" | tail -3
}
step_sparse() {
  # Cross-vendor SpMV and CG digests on two real matrices and generated ones (package files unpacked
  # under /tmp/ocl by setup.sh).
  export REPROCL_DATA_PREFIX=/tmp/ocl
  local M=/tmp/ocl/usr/lib/R/library/Matrix/external S=/tmp/ocl/usr/share/doc/libsuperlu-dev/examples
  : >"$out/sparse.txt"
  while read -r args; do
    echo "\$ reprocl $args" >>"$out/sparse.txt"
    eval "$cli $args" >>"$out/sparse.txt" 2>&1
    echo "exit status $?" >>"$out/sparse.txt"
  done <<EOF2
spmv --matrix $M/utm300.rua --dtype f32 --device all --native
spmv --matrix $S/g20.rua --dtype f32 --x random:1 --contract exact --device all
spmv --matrix $M/lund_a.mtx --dtype f64 --x random:2 --device all --native
spmv --gen poisson3d:40 --dtype f32 --x random:1 --device all --native
spmv --gen poisson3d:40 --dtype f64 --x random:1 --contract exact --device all
cg --matrix $M/lund_a.mtx --dtype f32 --jacobi --tol 1e-4 --maxit 5000 --device all
cg --matrix $M/lund_a.mtx --dtype f64 --jacobi --tol 1e-10 --maxit 5000 --device all
cg --gen poisson2d:100 --dtype f32 --tol 1e-5 --device all
cg --gen poisson2d:100 --dtype f64 --tol 1e-10 --device all
EOF2
  grep -E "exit status|AGREE|agree" "$out/sparse.txt" | sort | uniq -c
}
step_bench-all() {
  # The performance record (docs/performance.md): every family on the H100 with reproducible, native,
  # CLBlast and ViennaCL side by side in one run and one JSON, then the Markdown tables (targets first)
  # and the PNG charts. The peers must have been found by CMake (carry libclblast1 libclblast-dev
  # libviennacl-dev with prepare.sh; ViennaCL also needs g++); "peers in this build" says which were.
  # BENCH_SECONDS (default 480) is the run's time budget: sizes that would not fit are skipped and
  # recorded, so the step ends within the device tool's 10 minutes.
  export REPROCL_DATA_PREFIX=/tmp/ocl
  $cli bench --device nvidia --max-seconds "${BENCH_SECONDS:-480}" -o "$out/bench-h100.json" >"$out/bench-h100.log" 2>&1
  local st=$?
  grep -E "copy bandwidth|summary|skipped|^  [a-z]+: [0-9.]+ s$" "$out/bench-h100.log" | tail -60
  [ -s "$out/bench-h100.json" ] || { echo "no JSON (exit status $st)"; return 1; }
  python3 scripts/bench_table.py --validate "$out/bench-h100.json"
  python3 -c 'import json,sys; print("peers in this build:", json.load(open(sys.argv[1]))["peers"])' "$out/bench-h100.json"
  python3 scripts/bench_table.py "$out/bench-h100.json" >"$out/bench-h100.md"
  python3 scripts/bench_table.py "$out/bench-h100.json" --targets-only
  local py=python3
  $py -c 'import matplotlib' 2>/dev/null || py=/usr/bin/python3
  if $py -c 'import matplotlib' 2>/dev/null; then
    $py scripts/plot_bench.py "$out/bench-h100.json" "$out/plots"
  else
    echo "no matplotlib on this host: make the charts where it is (python3-matplotlib):"
    echo "  scripts/plot_bench.py bench-h100.json docs/perf"
  fi
  return $st
}
step_audit() {
  # What the device compilers produced: NVIDIA's PTX (and PoCL's IR where an llvm-dis for its LLVM is on
  # PATH, e.g. llvm-16 from ../shared/device/prepare.sh) for every program, reproducible beside native.
  # The binaries go into one archive (few files come back from the host).
  rm -rf "$out/audit-binaries"
  $cli audit --device all --details --save "$out/audit-binaries" >"$out/audit.txt" 2>&1
  echo "audit exit status $?" | tee -a "$out/audit.txt"
  $cli audit --device all --json >"$out/audit.json" 2>&1
  tar -C "$out" -czf "$out/audit-binaries.tgz" audit-binaries && rm -rf "$out/audit-binaries"
  grep -vE "^  [a-z_]+\.cl.* (clean|opaque) +(clean|opaque)?$" "$out/audit.txt" | head -120
}
step_md() {
  # The MD family's acceptance (docs/md.md): the 10 000-step fcc melt gives the same final digest on every
  # device (the H100 and PoCL here; PoCL and Rusticl on CI machines), in f32 and f64, per force path, and
  # the native build drifts. The LAMMPS comparison tests run with the HEAT data file carried in .device.
  export REPROCL_LAMMPS_EXAMPLES=${REPROCL_LAMMPS_EXAMPLES:-$PWD/.device/lammps}
  : >"$out/md.txt"
  while read -r args; do
    echo "\$ reprocl md $args" >>"$out/md.txt"
    eval "$cli md $args" >>"$out/md.txt" 2>&1
    echo "exit status $?" >>"$out/md.txt"
  done <<EOF2
--lattice fcc --cells 5 --density 0.8442 --temp 3.0 --steps 10000 --thermo 1000 --device all --native
--lattice fcc --cells 5 --density 0.8442 --temp 3.0 --steps 10000 --thermo 1000 --dtype f64 --device all --native
--lattice fcc --cells 10 --density 0.8442 --temp 3.0 --steps 10000 --thermo 2000 --device all --path symmetric
--lattice fcc --cells 10 --density 0.8442 --temp 3.0 --steps 10000 --thermo 2000 --device all --path gather
--input tests/data/md/melt.data --steps 0 --dtype f64 --device all --native
EOF2
  grep -E "^\\\$|agree|AGREE|DISAGREE|final state|exit status" "$out/md.txt"
  REPROCL_DATA_PREFIX=/tmp/ocl ctest --test-dir $build --output-on-failure -j1 --timeout 400 -R 'test_md|cli_md' 2>&1 | tee "$out/ctest-md.log" | grep -E "Test +#|tests passed|FAILED|Failed" | tail -10
}
step_mpi-scaling() {
  # Strong scaling over MPI (docs/performance.md, "MPI scaling"): K = 1, 2, 4, 8 ranks of PoCL on the Xeon, each
  # rank's PoCL on its share of the 16 cores (POCL_CPU_MAX_CU_COUNT = 16 / K), CG on poisson3d:115 (10.5M
  # non-zeros), the stencil on 8192^2, the reproducible allreduce against MPI_Allreduce. Needs Open MPI (mpirun,
  # and CMake found MPI at step build, so $build/reprocl-mpi exists).
  [ -x $build/reprocl-mpi ] || { echo "no $build/reprocl-mpi: Open MPI was not found at step build"; return 1; }
  REPROCL_MPI=$build/reprocl-mpi REPROCL_DATA_PREFIX=/tmp/ocl scripts/bench_mpi_scaling.sh --full --device pocl \
    --cores-per-rank --out "$out/mpi-scaling-pocl-xeon.json" 2>"$out/mpi-scaling.log" || { tail -20 "$out/mpi-scaling.log"; return 1; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(b, r["ranks"], "%.3f s" % r["time_s"], "eff %.2f" % r["efficiency"], r["matches_reference"]) for b in ("cg","stencil") for r in d[b]["runs"]]' "$out/mpi-scaling-pocl-xeon.json"
}
step_multigpu() {
  # Issue 21: CG (poisson3d:245, 102.6M non-zeros, f64, 200 iterations), the 9-point stencil on 32768^2 and MD
  # with 4M atoms on every GPU of the host alone, PoCL alone, the GPUs as one split, and one MPI rank per GPU
  # (K = 1..G); digests must all agree (docs/performance.md "Several GPUs of one host").
  local g
  g=$(nvidia-smi -L | wc -l)
  REPROCL=$cli REPROCL_MPI=$build/reprocl-mpi REPROCL_DATA_PREFIX=/tmp/ocl scripts/bench_multigpu.sh --gpus "$g" \
    ${MG_FAMILIES:+--families "$MG_FAMILIES"} ${MG_ONE:+--one "$MG_ONE"} --keep /tmp/multigpu-$g \
    --out "$out/multigpu-$g.json" 2>"$out/multigpu-$g.log"
  local rc=$?
  # Every command's JSON in one file (what comes back from the GPU host is limited in number of files).
  tar -C /tmp -cf "$out/multigpu-$g-runs.tar" "multigpu-$g"
  grep -vE "^---|^Primary|^a non-zero|^mpirun detected|^the job|^  Process|^  Exit|^$" "$out/multigpu-$g.log" | tail -40
  return $rc
}
step_cg-diag() {
  # Where a CG iteration's time goes on the first GPU: CG on poisson3d:100 with tuning off and on, one SpMV and
  # one ordered dot at the size of poisson3d:245 (the multi-GPU case).
  local t
  for t in off on; do
    echo "REPROCL_TUNING=$t cg poisson3d:100 f64, 100 iterations:"
    REPROCL_TUNING=$t $cli cg --gen poisson3d:100 --dtype f64 --tol 0 --maxit 100 --device nvidia:#0 --json \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); [print("  %s %.4f s, %.3f ms/iteration" % (x["name"], x["time_s"], 1e3 * x["time_s"] / 100)) for x in d["devices"]]'
  done
  $cli spmv --gen poisson3d:245 --dtype f64 --device nvidia:#0 2>&1 | tail -3
  $cli run reduce --op dot --dtype f64 --mode ordered --n 14706125 --device nvidia:#0 2>&1 | tail -2
}
step_md-floor() {
  # Issue 20's MD steps/s, this tree (scripts/bench_md_floor.sh: status every 32, 1 and 128 steps) beside the tree
  # in .old (OLD_TREE; its CLI alone built here: the baseline on the same GPU in the same call), then OpenMM
  # (scripts/bench_md_openmm.sh, wheels in .whl). Results tarred: the device returns at most 8 files.
  local old=${OLD_TREE:-.old}
  if [ -d "$old" ]; then
    { cmake -S "$old" -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build-old --target reprocl_cli; } \
      >"$out/cmake-old.log" 2>&1 && SYNCS=32 REPROCL_BIN=build-old/reprocl timeout 240 scripts/bench_md_floor.sh /tmp/mdfloor-old | tail -30
  fi
  REPROCL_BIN=$cli timeout 240 scripts/bench_md_floor.sh /tmp/mdfloor | tail -30
  [ -d .whl ] && BENCH_SECONDS=${OPENMM_BENCH_SECONDS:-150} timeout "${OPENMM_TIMEOUT:-240}" bash scripts/bench_md_openmm.sh /tmp/md-openmm | tail -40
  tar -C /tmp -czf "$out/md-floor.tgz" mdfloor mdfloor-old md-openmm 2>/dev/null
}
step_mpi-md() {
  # The cost of an MD decomposition on one GPU (issue 21's 4M atoms, 100 steps; K ranks sharing the GPU): this tree
  # and, when .old holds an earlier tree, its reprocl-mpi built and run beside it; each run's JSON breakdown.
  local old=${OLD_TREE:-.old} k b tag
  [ -d "$old" ] && { cmake -S "$old" -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1;
    cmake --build build-old --target reprocl_mpi_cli >"$out/cmake-old-mpi.log" 2>&1; }
  mkdir -p /tmp/mpi-md
  for b in $build build-old; do
    [ -x $b/reprocl-mpi ] || continue
    tag=new; [ $b = build-old ] && tag=old
    for k in ${MD_KS:-1 2}; do
      REPROCL_TUNING=off timeout "${MD_TIMEOUT:-120}" mpirun --allow-run-as-root --oversubscribe --bind-to none -n $k \
        $b/reprocl-mpi md --lattice fcc --cells "${MD_CELLS:-100}" --density 0.8442 --temp 3 --steps "${MD_STEPS:-100}" \
        --dtype f32 --device nvidia --json >/tmp/mpi-md/$tag-$k.json 2>/tmp/mpi-md/$tag-$k.err
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], "ranks", "%.3f s" % d["time_s"], d["neighbor_builds"], "builds", d["state_sha256"][:16], json.dumps(d.get("breakdown")))' \
        /tmp/mpi-md/$tag-$k.json $tag $k || tail -3 /tmp/mpi-md/$tag-$k.err
    done
  done
  tar -C /tmp -czf "$out/mpi-md.tgz" mpi-md
}
step_mpi-scaling-16() {
  # Issue 17's CPU scaling on 16 cores of a larger host: the whole job pinned to cores 0-15 (taskset), the
  # ranks not bound further, each rank's PoCL on 16 / K compute units (RANK_CORES=N: on N for every K; ONE_RUN=1:
  # one run plus the phases run per K; TAG: a name for the run's files; BIND=1: each rank bound to its own cores
  # (bench_mpi_scaling.sh --bind; BIND_CORES=C: C cores each) instead of --bind-to none; the environment reaches mpirun, so OMPI_MCA_*
  # settings apply).
  local cpr=(--cores-per-rank) margs="--bind-to none"
  [ -n "${RANK_CORES:-}" ] && cpr=(--rank-cores "$RANK_CORES")
  [ -n "${BIND:-}" ] && cpr+=(--bind) margs=""
  [ -n "${BIND_CORES:-}" ] && cpr+=(--bind-cores "$BIND_CORES")
  REPROCL_MPI=$build/reprocl-mpi \
    REPROCL_DATA_PREFIX=/tmp/ocl taskset -c 0-15 scripts/bench_mpi_scaling.sh --full --device pocl \
    "${cpr[@]}" ${ONE_RUN:+--one-run} \
    --ks "${KS:-1 2 4 8}" --maxit "${MAXIT:-100}" --iters "${ITERS:-50}" --md-steps "${MD_STEPS:-30}" \
    --mpirun-args "$margs" --keep /tmp/mpi-scaling-16${RANK_CORES:+-rc$RANK_CORES}${TAG:+-$TAG} --out "$out/mpi-scaling-pocl-16${RANK_CORES:+-rc$RANK_CORES}${TAG:+-$TAG}.json" 2>"$out/mpi-scaling-16.log" || { tail -20 "$out/mpi-scaling-16.log"; return 1; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(b, r["ranks"], "%.3f s" % r["time_s"], "eff %.2f" % r["efficiency"], r.get("matches_reference", d["md"]["same_bits"])) for b in ("cg","stencil","md") for r in d[b]["runs"]]; [print("allreduce", a["mode"], a["per_rank"], a["ranks"], "ratio %.2f" % a["ratio"]) for a in d["allreduce"]]' "$out/mpi-scaling-pocl-16${RANK_CORES:+-rc$RANK_CORES}${TAG:+-$TAG}.json"
  tar -C /tmp -czf "$out/mpi-scaling-16-runs${TAG:+-$TAG}.tgz" "mpi-scaling-16${RANK_CORES:+-rc$RANK_CORES}${TAG:+-$TAG}" # each command's JSON
}
step_tune() {
  # Tuned vs default speed and the time spent tuning, per kernel family, on the H100 and PoCL
  # (docs/tuning.md); a fresh cache directory so that every kernel is tuned now.
  export REPROCL_CACHE_DIR=$(mktemp -d) REPROCL_DATA_PREFIX=/tmp/ocl
  $cli tune --kernel all --device all --budget-ms ${TUNE_BUDGET_MS:-4000} --json >"$out/tune.json" 2>"$out/tune.err"
  echo "tune exit status $?"
  $cli cache list >"$out/tune-cache.txt" 2>&1
  tail -5 "$out/tune.err"
  python3 - "$out/tune.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
print("mismatches:", d.get("mismatches"))
for r in d.get("results", []):
    print("%-50.50s %-26s %-4s default %9.3g s tuned %9.3g s x%5.2f tuning %6.2f s timed %s %s" % (r["device"], r["kernel"], r["dtype"],
          r.get("default_time_s", 0), r.get("tuned_time_s", 0), r.get("speedup", 0), r.get("tuning_s", 0),
          r.get("candidates", {}).get("timed"), r.get("choice")))
PY
}
step_bench-pocl() {
  # The same benchmark on PoCL (the host's 16-core Xeon): the CPU table of docs/performance.md.
  export REPROCL_DATA_PREFIX=/tmp/ocl
  $cli bench --device pocl --max-seconds "${BENCH_SECONDS:-300}" -o "$out/bench-pocl-xeon.json" >"$out/bench-pocl-xeon.log" 2>&1
  echo "bench exit status $?"
  python3 scripts/bench_table.py "$out/bench-pocl-xeon.json" --targets-only 2>&1 | tail -40
}
step_bench-families() {
  # One run per family (FAMILIES, default "reduce stencil"), each with its own time budget
  # (BENCH_SECONDS_<family>, default 200): the first size of a family pays its program builds and tuning,
  # so one shared budget cuts the large sizes the targets are about. bench_merge.py joins the runs.
  export REPROCL_DATA_PREFIX=/tmp/ocl
  local dev=${BENCH_DEVICE:-nvidia} tag=${BENCH_TAG:-h100} files=()
  for f in ${FAMILIES:-reduce stencil}; do
    local v="BENCH_SECONDS_$f"
    timeout $(( ${!v:-200} + 60 )) $cli bench --family $f --device $dev --max-seconds "${!v:-200}" -o "$out/bench-$tag-$f.json" >"$out/bench-$tag-$f.log" 2>&1
    echo "bench $f exit status $?"
    grep -E "skipped: time|: [0-9.]+ s$" "$out/bench-$tag-$f.log" | tail -8
    [ -s "$out/bench-$tag-$f.json" ] && files+=("$out/bench-$tag-$f.json")
  done
  python3 scripts/bench_merge.py "$out/bench-$tag-families.json" "${files[@]}" && python3 scripts/bench_table.py "$out/bench-$tag-families.json" --targets-only
}
step_build-old() {
  # The tree before a change (OLD_TREE, e.g. `git archive <commit> | tar -x -C .old`, carried): built beside
  # build-gpu for the before/after benchmark.
  cmake -S "${OLD_TREE:-.old}" -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake-old.log" 2>&1 &&
    cmake --build build-old >>"$out/cmake-old.log" 2>&1 || { tail -30 "$out/cmake-old.log"; return 1; }
}
step_bench-ab() {
  # Before/after speed of a change on one machine in one call: for each family (FAMILIES), the old build
  # (build-old, step build-old) then the new one, the same budget (BENCH_SECONDS, default 45) and platform
  # launch defaults (REPROCL_TUNING=off), then scripts/bench_ab.py's ratios (docs/performance.md).
  export REPROCL_DATA_PREFIX=/tmp/ocl REPROCL_TUNING=off
  local dev=${BENCH_DEVICE:-nvidia} s=${BENCH_SECONDS:-45}
  for f in ${FAMILIES:-reduce spmv stencil md}; do
    for which in old new; do
      local c=build-gpu/reprocl
      [ $which = old ] && c=build-old/reprocl
      timeout $((s + 60)) $c bench --family $f --device $dev --max-seconds $s --skip-peer clblast,viennacl \
        -o "$out/ab-$which-$f.json" >"$out/ab-$which-$f.log" 2>&1
      echo "bench $f ($which) exit status $?"
    done
    python3 scripts/bench_ab.py "$out/ab-old-$f.json" "$out/ab-new-$f.json" --json "$out/ab-$f.json" | tail -4
  done
}
step_ab-cli() {
  # Before/after at the sizes the speed targets are about, through the CLI's own timing (median of the
  # repeats, kernel only): old and new builds alternate, ROUNDS times (default 2), so drift hits both.
  export REPROCL_DATA_PREFIX=/tmp/ocl REPROCL_TUNING=off
  local w25; w25=$(seq -s, 0.01 0.01 0.25)
  : >"$out/ab-cli.txt"
  while read -r args; do
    [[ -n "${AB_ONLY:-}" && "$args" != *"$AB_ONLY"* ]] && continue # AB_ONLY: only the lines containing it
    for r in $(seq "${ROUNDS:-2}"); do for which in old new; do
      local c=build-gpu/reprocl
      [ $which = old ] && c=build-old/reprocl
      echo "\$ [$which] reprocl $args" >>"$out/ab-cli.txt"
      eval "$c $args" 2>&1 | grep -E "NVIDIA|error" | head -3 >>"$out/ab-cli.txt"
    done; done
  done <<EOF2
spmv --gen poisson3d:120 --dtype f64 --x random:1 --device nvidia --repeats 20
spmv --gen poisson3d:120 --dtype f32 --x random:1 --device nvidia --repeats 20
spmv --gen poisson3d:120 --dtype f64 --x random:1 --device nvidia --repeats 20 --variant scalar
stencil --kind general --grid 8192x8192 --iters 20 --weights $w25 --device nvidia --no-reference
stencil --kind general --grid 8192x8192 --iters 20 --weights $w25 --dtype f64 --device nvidia --no-reference
stencil --grid 8192x8192 --iters 100 --device nvidia --no-reference
run reduce --op sum --dtype f32 --mode ordered --n 67108864 --device nvidia
run reduce --op dot --dtype f64 --mode ordered --n 67108864 --device nvidia
EOF2
  cat "$out/ab-cli.txt"
}
step_exact-ab() {
  # Issue 20: exact sum/dot/nrm2 (f32, f64, 2^20..2^28) on one device with the digit window (the old
  # default, accum=window) beside each new candidate, forced through the platform defaults (REPROCL_TUNING=off
  # and a platform directory: the shipped files plus one line for reduce.*.exact). The candidates alternate
  # within each case, so drift hits all. Per case: time (median of 3 calls, each to clFinish), TB/s of the
  # loads, the digest; every candidate's digest must equal the window's (else the step fails).
  # EXACT_AB_CANDS: "label=params;..." (params name=value, comma-separated); EXACT_AB_DEVICE (nvidia),
  # EXACT_AB_SIZES (20 22 24 26 28). About 2 minutes on the H100 (the host reference of each case included).
  local dev=${EXACT_AB_DEVICE:-nvidia} sizes=${EXACT_AB_SIZES:-20 22 24 26 28} c label lg dt op
  local cands=${EXACT_AB_CANDS:-window=accum=window;fast=accum=fast} plat=$out/exact-ab-platforms labels=()
  rm -rf "$plat"
  for c in ${cands//;/ }; do
    label=${c%%=*}
    labels+=("$label")
    mkdir -p "$plat/$label" && cp platforms/*.conf "$plat/$label/"
    printf 'reprocl-platform 1\nmatch *\n[all]\nreduce.*.exact %s\n' "${c#*=}" | tr ',' ' ' >"$plat/$label/zz-exact-ab.conf"
  done
  : >"$out/exact-ab.tsv"
  for lg in $sizes; do for dt in f32 f64; do for op in sum dot nrm2; do for label in "${labels[@]}"; do
    REPROCL_TUNING=off REPROCL_PLATFORM_DIR=$plat/$label $cli run reduce --op $op --dtype $dt --mode exact \
      --n "2^$lg" --device "$dev" --json 2>>"$out/exact-ab.log" |
      python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"][0]; print("\t".join(sys.argv[1:] + ["%.9f" % d["time_s"], d["sha256"]]))' \
        "$lg" "$dt" "$op" "$label" >>"$out/exact-ab.tsv" || echo "2^$lg $dt $op $label: failed (exact-ab.log)"
  done; done; done; done
  python3 - "$out/exact-ab.tsv" "${labels[@]}" <<'EOF2'
import sys
rows, labels = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l], sys.argv[2:]
case = {}
for lg, dt, op, label, t, sha in rows:
    case.setdefault((int(lg), dt, op), {})[label] = (float(t), sha)
print("size  dtype op   " + "".join("%-22s" % (l + " ms TB/s") for l in labels) + "speed-up  digest")
bad = 0
for (lg, dt, op), c in sorted(case.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
    loads = (2 if op == "dot" else 1) * (4 if dt == "f32" else 8) * 2**lg
    cells = "".join("%9.3f %5.2f       " % (c[l][0] * 1e3, loads / c[l][0] / 1e12) if l in c else "%-22s" % "-" for l in labels)
    shas = {v[1] for v in c.values()}
    same = len(shas) == 1 and len(c) == len(labels)
    bad += not same
    sp = " ".join("%.2fx" % (c[labels[0]][0] / c[l][0]) for l in labels[1:] if l in c and labels[0] in c)
    print("2^%-3d %-5s %-4s %s%-9s %s %s" % (lg, dt, op, cells, sp, next(iter(shas))[:16], "same" if same else "DIFFER"))
print("digests: %s" % ("all equal" if not bad else "%d case(s) differ or failed" % bad))
sys.exit(1 if bad else 0)
EOF2
}
step_bench-stencil() { $cli bench --family stencil --device nvidia -o "$out/bench-stencil-h100.json" 2>&1 | tail -80; }
step_bench-reduce() { $cli bench --family reduce --device nvidia -o "$out/bench-reduce-h100.json" 2>&1 | tail -80; }
step_bench-split() {
  # Scaling over several devices (issue 17, docs/performance.md "Scaling over several devices"): each family
  # on the H100 alone, on PoCL (the Xeon) alone and over both, in one run; then the Xeon as 2 PoCL
  # sub-devices. Weights measured and tuned on first use (the warm-up call), in a cache of the step's own.
  # The summary line of each family gives the ratio split / fastest device alone (target: <= 1).
  export REPROCL_CACHE_DIR=$out/cache-bench-split
  local spec name
  for spec in ${SPLITS:-nvidia:,pocl: pocl:/2}; do
    name=$(echo "$spec" | tr -c 'a-z0-9\n' '-' | sed 's/-*$//')
    $cli bench --split "$spec" --repeats "${BENCH_REPEATS:-5}" -o "$out/bench-split-$name.json" \
      2>"$out/bench-split-$name.log" >/dev/null
    echo "bench --split $spec: exit status $?"
    grep -E "fastest alone|skipped|error" "$out/bench-split-$name.log"
  done
}
for s in "$@"; do
  echo "=== $s"
  "step_$s" || { echo "step $s failed"; exit 1; }
done
