#!/usr/bin/env bash
# The HTML report of `reprocl check` opens in a real browser: headless Chromium parses it (the DOM holds
# every case row and the histograms) and renders a screenshot.
. "$(dirname "$0")/clilib.sh"
if ! command -v chromium >/dev/null; then
  echo "SKIP: chromium is not installed (Debian package chromium; CI installs it)"
  [ -n "${REPROCL_CI:-}" ] && { echo "FAIL: CI (REPROCL_CI) must run this test"; exit 1; }
  exit 0
fi
expect 0 "check writes the report" -- "$CLI" check --suite quick --family reduce --report "$TMP/r.html"
expect 0 "chromium loads the report" -- chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$TMP/r.html"
rows=$(grep -o '<tr>' "$TMP/out" | wc -l)
[ "$rows" -gt 40 ] && pass "the browser's DOM has $rows table rows" || fail "the browser's DOM has only $rows table rows"
contains "$TMP/out" "<svg" "the browser's DOM has the histograms"
expect 0 "screenshot" -- "$SRC/scripts/report_screenshot.sh" "$TMP/r.html" "$TMP/r.png"
[ -s "$TMP/r.png" ] && pass "screenshot written" || fail "no screenshot"
finish
