#!/usr/bin/env bash
# Renders a `reprocl check --report` HTML file with headless Chromium (Debian package chromium) into a
# PNG, e.g. for docs/images/: scripts/report_screenshot.sh report.html out.png [width] [height]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 report.html out.png [width] [height]" >&2; exit 2; }
html=$(realpath "$1")
out=$(realpath -m "$2")
# --no-sandbox: CI and containers run as root, where Chromium's sandbox refuses to start.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${3:-1400},${4:-2400}" \
  --screenshot="$out" "file://$html" 2>/dev/null
[ -s "$out" ] || { echo "no screenshot written" >&2; exit 1; }
echo "$out"
