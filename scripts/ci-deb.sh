#!/usr/bin/env bash
# The Debian package round trip of CI (.ci/run, after the main suite; docs/install.md): builds the .deb files
# with cpack in the build directory CI already made, installs them with apt, builds a C program against the
# installed files (tests/cli_install.sh with REPROCL_INSTALLED_PREFIX=/usr: find_package(reprocl) and
# pkg-config), runs /usr/bin/reprocl, then removes the packages again.
# Usage: scripts/ci-deb.sh [BUILD_DIR]   (default build/; as root: it installs and removes system packages,
# so it is meant for CI's throwaway machine or a chroot, never a developer's machine)
set -euo pipefail
cd "$(dirname "$0")/.."
bld=$(cd "${1:-build}" && pwd)
[ "$(id -u)" = 0 ] || { echo "ci-deb: run as root (it installs and removes the reprocl packages)" >&2; exit 2; }
stage() { printf '\n==== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
export DEBIAN_FRONTEND=noninteractive
stage "deb: cpack -G DEB in $bld"
rm -f "$bld"/*.deb
(cd "$bld" && cpack -G DEB)
debs=("$bld"/*.deb)
pkgs=()
for d in "${debs[@]}"; do
  pkgs+=("$(dpkg-deb -f "$d" Package)")
  echo "$(basename "$d"): Depends: $(dpkg-deb -f "$d" Depends)"
done
# Removed on every exit, pass or fail: the machine is left as it was.
trap 'apt-get purge -y "${pkgs[@]}" >/dev/null 2>&1 || true' EXIT
stage "deb: apt-get install ${pkgs[*]}"
apt-get install -y --no-install-recommends "${debs[@]}"
for f in /usr/bin/reprocl /usr/lib/pkgconfig/reprocl.pc /usr/include/reprocl/reprocl.h; do
  [ -e "$f" ] || { echo "FAIL ci-deb: $f not installed" >&2; exit 1; }
done
stage "deb: a C program against the installed files; /usr/bin/reprocl"
REPROCL_INSTALLED_PREFIX=/usr bash tests/cli_install.sh /usr/bin/reprocl "$PWD" "$bld"
# The tool from /usr/bin: the devices with their self-tests, and the quick suite's reductions on
# every device against the host reference (48 cases; native and split runs left out: the main suite has them).
(cd / && /usr/bin/reprocl devices && /usr/bin/reprocl check --suite quick --family reduce --no-native --no-split)
# The Python package against the installed files (docs/python.md): a venv over Debian's numpy, scipy and pytest,
# `pip install ./python` finding the library with pkg-config (it builds and bundles nothing then), the README's
# five lines, whose digest must be the one /usr/bin/reprocl prints for the same dot, and the pytest files that
# check the binding against the installed headers and the errors (the main suite's ctest `python` runs them all).
stage "deb: pip install ./python against the installed library; five lines = /usr/bin/reprocl; pytest"
venv=$(mktemp -d)
trap 'rm -rf "$venv"; apt-get purge -y "${pkgs[@]}" >/dev/null 2>&1 || true' EXIT
# Debian's python3: the one the package list equips (numpy, scipy, pytest, setuptools, wheel), not another first on PATH
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-build-isolation --no-deps ./python
(cd / && "$venv/bin/python" - <<'PY') >"$venv/five.txt"
import reprocl
x = reprocl.generate(1_000_000, "uniform", seed=1)
y = reprocl.generate(1_000_000, "uniform", seed=2)
with reprocl.Context(device=0) as ctx:
    print(ctx.dot(x, y), reprocl.digest(ctx.dot(x, y)))
import os.path
print(os.path.normpath(reprocl.LIBRARY_PATH))
PY
cat "$venv/five.txt"
sed -n 2p "$venv/five.txt" | grep -q '^/usr/lib/libreprocl\.so' ||
  { echo "FAIL ci-deb: the package did not load the installed library" >&2; exit 1; }
(cd / && /usr/bin/reprocl run reduce --op dot --dtype f32 --mode ordered --n 1000000 --seed 1 --device 0 \
  --out "$venv/dot.bin" >/dev/null)
want=$(sha256sum "$venv/dot.bin" | cut -d' ' -f1)
[ "$(sed -n 1p "$venv/five.txt" | cut -d' ' -f2)" = "$want" ] ||
  { echo "FAIL ci-deb: the five lines' digest is not the CLI's $want" >&2; exit 1; }
(cd "$venv" && REPROCL_CLI=/usr/bin/reprocl "$venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests/test_layout.py" \
  "$OLDPWD/python/tests/test_errors.py")
stage "deb: apt-get purge ${pkgs[*]}"
apt-get purge -y "${pkgs[@]}"
rm -rf "$venv"
trap - EXIT
for f in /usr/bin/reprocl /usr/lib/libreprocl.so.0; do
  [ ! -e "$f" ] || { echo "FAIL ci-deb: $f left after purge" >&2; exit 1; }
done
echo "ci-deb: the .deb round trip passed (${pkgs[*]})"
