#!/usr/bin/env bash
# Docs that cannot go stale: every marked example of README.md and docs/*.md (`<!-- example -->` before a
# fenced block) is run with this build's reprocl and must print what the doc shows, times masked, and every
# relative link there must resolve (scripts/doc_examples.py; refresh with its --update, then read the diff).
# The examples show CI's three CPU drivers in its order: PoCL, Rusticl (RUSTICL_ENABLE=llvmpipe), Intel's
# runtime. Elsewhere they are skipped, saying so, unless REPROCL_TEST_MIN_DEVICES asks for all three.
# Usage (ctest): cli_doc_examples.sh <reprocl CLI> <source dir> <build dir>
. "$(dirname "$0")/clilib.sh"

devices=$(RUSTICL_ENABLE=llvmpipe "$CLI" devices --no-selftest 2>&1 | grep '^\[')
if printf '%s\n' "$devices" | sed -n 1p | grep -q '^\[0\] Portable Computing Language' &&
  printf '%s\n' "$devices" | sed -n 2p | grep -q '^\[1\] rusticl' &&
  printf '%s\n' "$devices" | sed -n 3p | grep -q '^\[2\] Intel(R) OpenCL'; then
  expect 0 "the marked examples print what the docs show; links resolve" -- \
    python3 "$SRC/scripts/doc_examples.py" --cli "$CLI"
  cat "$TMP/out"
elif [ "${REPROCL_TEST_MIN_DEVICES:-1}" -ge 3 ]; then
  fail "the examples need PoCL, Rusticl and Intel's CPU runtime as devices 0, 1, 2; this machine has:"
  printf '     %s\n' "$devices"
else
  echo "skip the examples: they need PoCL, Rusticl and Intel's CPU runtime as devices 0, 1, 2 (CI's drivers); this machine has:"
  printf '     %s\n' "$devices"
  expect 0 "links resolve" -- python3 "$SRC/scripts/doc_examples.py" --links-only
  cat "$TMP/out"
fi
finish
