#!/usr/bin/env bash
# Installs the Debian packages reprocl needs (as root, or through sudo), always with --no-install-recommends:
#   scripts/install-deps.sh         scripts/debian-packages-user.txt and scripts/debian-packages.txt: build, run,
#                                   test, benchmark, CI (what scripts/run-tests.sh and .ci/run use)
#   scripts/install-deps.sh --user  scripts/debian-packages-user.txt only: build, run, check devices
#                                   (scripts/check-devices.sh; footprints in docs/install.md)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lists=("$here/debian-packages-user.txt")
case "${1:-}" in
--user) ;;
"") lists+=("$here/debian-packages.txt") ;;
*) echo "usage: scripts/install-deps.sh [--user]" >&2; exit 2 ;;
esac
pkgs=$(cat "${lists[@]}" | grep -v '^#' | tr '\n' ' ')
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
# shellcheck disable=SC2086
"${as_root[@]}" apt-get install -y --no-install-recommends $pkgs
