#!/usr/bin/env bash
# reprocl's MD beside OpenMM on the NVIDIA GPU host (issue 20's table): `reprocl bench --family md` at 500, 4000,
# 32000 and 256000 atoms (REPROCL_BENCH_MD_ATOMS to change), reprocl on the NVIDIA OpenCL device, OpenMM's
# OpenCL and CUDA platforms on the same GPU in single and double precision, the same system and initial state.
# Writes OUTDIR/bench-md-openmm.json, .log, .md (scripts/md_openmm_table.py) and OUTDIR/plots/*-md-steps.png.
#
#   here (the host cannot download; .whl/ is git-ignored and travels with `carry`):
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#       --platform manylinux2014_x86_64 -d .whl openmm==8.6.1 openmm-cuda-13==8.6.1
#   there, from the project root (after `bash scripts/gpu_host.sh build`, or this builds build-gpu itself):
#     source .device/setup.sh && bash scripts/bench_md_openmm.sh gpu-out/md-openmm
#
# OpenMM 8.6.1's wheels are manylinux_2_34 (no 2_28 build of 8.6.1 exists for cp312; the host's python is 3.12 with
# numpy 2.5, so numpy need not travel). Its CUDA 13 plugin (OpenMM-CUDA-13: the host's PyTorch is cu130, driver 580)
# needs libnvrtc.so.13 and libcufft.so.12, which that PyTorch venv holds under nvidia/cu13/lib: the plugin goes
# without its pip dependencies (the CUDA 12 one would need CUDA 12's cuFFT and NVRTC, not known to be there) and
# that folder is put on LD_LIBRARY_PATH. Where OpenMM cannot be imported or a platform cannot load, the JSON says
# why (skipped records, with OpenMM's plugin load failures) and the rest still runs.
# Environment: REPROCL_PYTHON (default python3), BENCH_SECONDS (the bench's time budget, default 270); for a dry
# run elsewhere CLI (default build-gpu/reprocl) and DEVICE (default nvidia).
set -uo pipefail
out=${1:?usage: bench_md_openmm.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 3
mkdir -p "$out"
export PATH=/tmp/ocl/usr/bin:$PATH
py=${REPROCL_PYTHON:-python3}
export REPROCL_PYTHON=$py REPROCL_OPENMM_PEER=$PWD/scripts/peer_openmm.py

# ---- OpenMM from the carried wheels: unpacked into a folder of its own on PYTHONPATH (a wheel is a zip; no pip needed,
# the host's venv is left as it is). numpy only where the python has none.
if ! "$py" -c 'import openmm' 2>/dev/null && ls .whl/openmm-*.whl >/dev/null 2>&1; then
  rm -rf /tmp/openmm-py && mkdir -p /tmp/openmm-py
  wheels=(.whl/openmm-*.whl .whl/openmm_cuda_13-*.whl)
  "$py" -c 'import numpy' 2>/dev/null || wheels+=(.whl/numpy-*.whl)
  for w in "${wheels[@]}"; do [ -f "$w" ] && { "$py" -m zipfile -e "$w" /tmp/openmm-py || echo "cannot unpack $w"; }; done
  export PYTHONPATH=/tmp/openmm-py${PYTHONPATH:+:$PYTHONPATH}
fi
# The CUDA 13 plugin needs libnvrtc.so.13 and libcufft.so.12: the PyTorch venv's nvidia/cu13/lib, else CUDA's own.
nvlib=$("$py" -c 'import glob, site; print(" ".join(d for p in site.getsitepackages() for d in glob.glob(p + "/nvidia/cu13/lib")))' 2>/dev/null)
for d in $nvlib /usr/local/cuda/lib64; do [ -d "$d" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
"$py" - <<'PY' 2>&1 | tee "$out/openmm.txt"
try:
    import openmm as mm
except Exception as e:
    print("openmm not importable:", e)
else:
    print("OpenMM", mm.version.version, "platforms:",
          [mm.Platform.getPlatform(i).getName() for i in range(mm.Platform.getNumPlatforms())])
    for f in mm.Platform.getPluginLoadFailures():
        print("plugin load failure:", f)
PY

# ---- reprocl (build-gpu as scripts/gpu_host.sh builds it) ----------------------------------------------------------
cli=${CLI:-build-gpu/reprocl}
if [ ! -x "$cli" ]; then
  { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu --target reprocl_cli; } \
    >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 3; }
fi

# ---- the benchmark -------------------------------------------------------------------------------------------------
t0=$(date +%s)
REPROCL_TUNING=${REPROCL_TUNING:-off} REPROCL_BENCH_MD_ATOMS=${REPROCL_BENCH_MD_ATOMS:-500,4000,32000,256000} \
  "$cli" bench --family md --device "${DEVICE:-nvidia}" --max-seconds "${BENCH_SECONDS:-270}" -o "$out/bench-md-openmm.json" \
  >"$out/bench-md-openmm.log" 2>&1
st=$?
echo "bench --family md: exit status $st, $(($(date +%s) - t0)) s"
grep -E "skipped|steps/s|copy bandwidth|md: " "$out/bench-md-openmm.log" | grep -v "^WARNING" | tail -40
[ -s "$out/bench-md-openmm.json" ] || exit 1
python3 scripts/bench_table.py --validate "$out/bench-md-openmm.json"
python3 scripts/md_openmm_table.py "$out/bench-md-openmm.json" | tee "$out/bench-md-openmm.md"
plotpy=python3
$plotpy -c 'import matplotlib' 2>/dev/null || plotpy=/usr/bin/python3
$plotpy scripts/plot_bench.py "$out/bench-md-openmm.json" "$out/plots" ||
  echo "no plots here: run scripts/plot_bench.py $out/bench-md-openmm.json where matplotlib is"
exit $st
