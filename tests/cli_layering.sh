#!/usr/bin/env bash
# The layering check (scripts/check_layering.py, docs/developing.md "Layout"): the library as built passes it,
# and a made-up tree with one violation of each kind fails it, each one named.
# Usage (ctest): cli_layering.sh <reprocl CLI> <source dir> <build dir>
. "$(dirname "$0")/clilib.sh"
check=$SRC/scripts/check_layering.py

expect 0 "the library's layering passes" -- python3 "$check" "$BUILD"
contains "$TMP/out" "layering: ok" "it says ok"

# A made-up tree: core calls up into tune; tune includes a context header; build/a.c and build/b.c call each
# other (a knot); a folder missing from the layer table; the CLI includes a private header.
fake=$TMP/fake obj=$TMP/fake/build/CMakeFiles/reprocl_objects.dir/src
mkdir -p "$fake/src"/{core,tune,build,context,cli,misc} "$obj"/{core,tune,build,context,misc}
printf 'int tune_fn(void);\nint core_fn(void) { return tune_fn(); }\n' >"$fake/src/core/low.c"
printf '#include "context/ctx.h"\nint tune_fn(void) { return 1; }\n' >"$fake/src/tune/high.c"
printf 'int ctx_fn(void) { return 2; }\n' >"$fake/src/context/ctx.c"
: >"$fake/src/context/ctx.h"
printf 'int b_fn(void);\nint a_fn(void) { return b_fn(); }\n' >"$fake/src/build/a.c"
printf 'int a_fn(void);\nint b_fn(void) { return a_fn() + 1; }\n' >"$fake/src/build/b.c"
printf 'int misc_fn(void) { return 3; }\n' >"$fake/src/misc/m.c"
printf '#include "core/internal.h"\n' >"$fake/src/cli/main.c"
for f in core/low tune/high context/ctx build/a build/b misc/m; do
  cc -c -I"$fake/src" -o "$obj/$f.c.o" "$fake/src/$f.c" || fail "compiling the made-up $f.c"
done
expect 1 "a tree with violations fails" -- python3 "$check" --src "$fake/src" "$fake/build"
contains "$TMP/out" "src/core/low.c uses tune_fn of src/tune/high.c: 'core' may not depend on 'tune'" "an upward call"
contains "$TMP/out" "src/tune/high.c:1: includes context/ctx.h: 'tune' may not depend on 'context'" "an upward include"
contains "$TMP/out" "a knot between files (each reaches the others): build/a.c, build/b.c" "a knot"
contains "$TMP/out" "folder 'misc' is not in the layer table" "an unknown folder"
contains "$TMP/out" "the CLI includes the library's private header core/internal.h" "the CLI's private include"
expect 2 "bad usage" -- python3 "$check" --bogus
finish
