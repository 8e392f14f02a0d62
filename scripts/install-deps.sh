#!/usr/bin/env bash
# Installs the Debian packages listed in scripts/debian-packages.txt (as root, or through sudo).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkgs=$(grep -v '^#' "$here/debian-packages.txt" | tr '\n' ' ')
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
# shellcheck disable=SC2086
"${as_root[@]}" apt-get install -y --no-install-recommends $pkgs
