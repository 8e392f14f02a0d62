#!/usr/bin/env bash
# Installs reprocl into a temporary prefix and builds two consumers against it: one with
# find_package(reprocl) (CMake), one with pkg-config; both must build and run.
# REPROCL_INSTALLED_PREFIX=/usr: checks what is already installed there instead (scripts/ci-deb.sh: the .deb files).
. "$(dirname "$0")/clilib.sh"
prefix=${REPROCL_INSTALLED_PREFIX:-$TMP/prefix}
[ -n "${REPROCL_INSTALLED_PREFIX:-}" ] || expect 0 "cmake --install" -- cmake --install "$BUILD" --prefix "$prefix"
for f in include/reprocl/reprocl.h include/reprocl/version.h bin/reprocl; do
  [ -e "$prefix/$f" ] && pass "installed $f" || fail "missing $f"
done
libdir=$(ls -d "$prefix"/lib*/ | head -1)
ls "$libdir"libreprocl.so.0* >/dev/null 2>&1 && pass "versioned soname installed" || fail "no libreprocl.so.0"
[ -f "$libdir/pkgconfig/reprocl.pc" ] && pass "reprocl.pc installed" || fail "no reprocl.pc"
# The installed tool runs from the prefix (the README's examples call it as `reprocl`, on PATH).
expect 0 "installed reprocl --help" -- env PATH="$prefix/bin:$PATH" LD_LIBRARY_PATH="$libdir" reprocl --help
contains "$TMP/out" "exit status: 0 success" "installed reprocl states the exit statuses"

mkdir -p "$TMP/consumer"
cat >"$TMP/consumer/main.c" <<'C'
#include <reprocl/reprocl.h>
#include <stdio.h>
int main(void) {
  double x[4] = {1e16, 1.0, -1e16, 1.0}, r = 0;
  rcl_context *c;
  if (rcl_context_create(&c, NULL)) { fprintf(stderr, "%s\n", rcl_error_last()); return 1; }
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  o.mode = RCL_REDUCE_EXACT;
  int rc = rcl_reduce(&r, c, RCL_OP_SUM, RCL_F64, 4, x, NULL, &o);
  if (rc == RCL_ERR_UNSUPPORTED) { float xf[3] = {1, 2, 4}, rf; rc = rcl_sum_f32(&rf, c, xf, 3, NULL); r = rf == 7.0f ? 2.0 : -1; }
  rcl_context_free(c);
  if (rc) { fprintf(stderr, "%s\n", rcl_error_last()); return 1; }
  printf("%.17g\n", r);
  return r == 2.0 ? 0 : 1;
}
C
consumer_builds reprocl reprocl::reprocl reprocl "$TMP/consumer/main.c"
grep -qx 2 "$TMP/out" && pass "the consumer prints the exact sum 1e16+1-1e16+1 = 2" || fail "the consumer printed $(cat "$TMP/out")"
finish
