#!/usr/bin/env bash
# The reproducibility check on every OpenCL device found: builds reprocl, lists the devices and what
# they guarantee, then runs every reduction (op x dtype x mode) on all of them and compares digests.
#   scripts/check-devices.sh            install the user's dependencies (scripts/debian-packages-user.txt), build, check
#   scripts/check-devices.sh --no-deps  skip the apt-get step
set -uo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--no-deps" ] || scripts/install-deps.sh --user || exit 1
# The test suite needs Check (scripts/debian-packages.txt): without it the library and the tool are built alone.
tests=ON
pkg-config --exists check 2>/dev/null || tests=OFF
{ cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPROCL_BUILD_TESTS=$tests >/dev/null &&
  cmake --build build >/dev/null; } || exit 1
export RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe}
./build/reprocl devices || exit 1
status=0
for dt in f32 f64; do for op in sum dot nrm2; do for mode in ordered exact; do
  ./build/reprocl run reduce --op $op --dtype $dt --mode $mode --n 1000003 --dist cancel --device all --native || status=1
done; done; done
[ $status = 0 ] && echo "reprocl: every device agrees with the host reference in every reproducible case" \
                || echo "reprocl: DISAGREEMENT (see above)"
exit $status
