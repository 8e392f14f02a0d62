#!/usr/bin/env bash
# scripts/plot_bench.py where matplotlib is absent (python3 -S: no site packages), no device needed: it says
# what to install in one line and exits 3 (could not run), no traceback. (cli_bench.sh runs it, and
# scripts/bench_table.py, on a real run.)
# Usage (ctest): cli_bench_scripts.sh <reprocl CLI> <source dir> <build dir>
. "$(dirname "$0")/clilib.sh"

if python3 -S -c 'import matplotlib' 2>/dev/null; then
  echo "skip plot_bench.py without matplotlib: python3 -S still imports it (installed outside site-packages)"
else
  expect 3 "plot_bench.py without matplotlib: exit 3" -- python3 -S "$SRC/scripts/plot_bench.py" x.json out
  contains "$TMP/err" "plot_bench.py: matplotlib is not installed (Debian: python3-matplotlib)" "plot_bench.py says what to install"
  if [ "$(wc -l <"$TMP/err")" = 1 ] && ! grep -q Traceback "$TMP/err"; then pass "one line, no traceback"; else
    fail "plot_bench.py without matplotlib printed more than one line:"
    sed 's/^/     /' "$TMP/err"
  fi
fi
finish
