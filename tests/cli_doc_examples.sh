#!/usr/bin/env bash
# Docs that cannot go stale: every marked example of README.md and docs/*.md (`<!-- example -->` before a
# fenced block) is run with this build's reprocl and must print what the doc shows, times masked, and every
# relative link there must resolve (scripts/doc_examples.py; refresh with its --update, then read the diff).
# The examples show CI's three CPU drivers as devices 0, 1, 2: PoCL, Rusticl (RUSTICL_ENABLE=llvmpipe),
# Intel's runtime. The script puts them in that order itself (an ICD directory of its own: the loader's order
# is the directory's, which differs between machines) and compares device names as placeholders (the
# machine that printed the docs' output is docs/examples-machine.json). Where one of the three is missing
# (its exit status 4) the examples are skipped, saying so, unless REPROCL_TEST_MIN_DEVICES asks for all three.
# Usage (ctest): cli_doc_examples.sh <reprocl CLI> <source dir> <build dir>
. "$(dirname "$0")/clilib.sh"

python3 "$SRC/scripts/doc_examples.py" --cli "$CLI" >"$TMP/out" 2>"$TMP/err"
status=$?
if [ "$status" = 4 ] && [ "${REPROCL_TEST_MIN_DEVICES:-1}" -lt 3 ]; then
  echo "skip the examples: $(cat "$TMP/err")"
  expect 0 "links resolve" -- python3 "$SRC/scripts/doc_examples.py" --links-only
  cat "$TMP/out"
elif [ "$status" = 0 ]; then
  pass "the marked examples print what the docs show; links resolve"
  cat "$TMP/out"
else
  fail "the marked examples (doc_examples.py exit $status):"
  cat "$TMP/out" "$TMP/err"
fi
finish
