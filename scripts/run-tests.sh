#!/usr/bin/env bash
# Builds reprocl and runs every test on every OpenCL device found (PoCL and Rusticl at least; CI also
# installs Intel's CPU runtime, scripts/install-intel-ocl.sh, and sets REPROCL_TEST_MIN_DEVICES=3).
#   scripts/run-tests.sh            install dependencies, build, test
#   scripts/run-tests.sh --no-deps  skip the apt-get step
# Caches: PoCL's, Mesa's and reprocl's caches follow POCL_CACHE_DIR, MESA_SHADER_CACHE_DIR and
# XDG_CACHE_HOME (the tests keep reprocl's in build/test-cache); .ci/run points them at empty folders.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--no-deps" ] || scripts/install-deps.sh
# Tests ON explicitly: a build/ first configured by scripts/check-devices.sh without Check has them off.
# The Python tests run on Debian's python3, which has the numpy, scipy and pytest the package list installs
# (another python3 first on PATH — pyenv, a venv — may lack them).
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPROCL_BUILD_TESTS=ON -DREPROCL_PYTHON=$py
cmake --build build
# Rusticl exposes its CPU device only when asked; CI must see both drivers, so a missing one fails.
export RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe}
export REPROCL_TEST_MIN_DEVICES=${REPROCL_TEST_MIN_DEVICES:-2}
ctest --test-dir build --output-on-failure --timeout 1800
