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
# ---- HOOK (lead, after merging python/): build the Python package against the installed files here, while the
# ---- packages are installed (pkg-config reprocl, /usr/lib/libreprocl.so.0), and run its tests, e.g.
# ----   python3 -m pip install --break-system-packages ./python && python3 -m pytest python/tests
# ---- (Debian 12's python3 is externally managed, PEP 668: pip needs that flag, or a venv).
stage "deb: apt-get purge ${pkgs[*]}"
apt-get purge -y "${pkgs[@]}"
trap - EXIT
for f in /usr/bin/reprocl /usr/lib/libreprocl.so.0; do
  [ ! -e "$f" ] || { echo "FAIL ci-deb: $f left after purge" >&2; exit 1; }
done
echo "ci-deb: the .deb round trip passed (${pkgs[*]})"
