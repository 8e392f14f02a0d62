#!/usr/bin/env bash
# Tests of `reprocl stencil` (and `reprocl bench --family stencil --quick`): digests against the golden
# ones on every device, image and raw input/output, native drift and difference images, exit status 1
# when a device disagrees (a kernel changed through REPROCL_KERNEL_DIR), and clear errors (exit 2) for
# bad options and malformed input files.
# Usage (ctest): cli_stencil.sh <reprocl CLI> <source dir> <build dir>
set -u
cli=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
camera=/usr/lib/python3/dist-packages/skimage/data/camera.png

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run <expected status> <name> <args...>: runs the CLI, keeps stdout+stderr in $tmp/<name>.out
run() {
  local want=$1 name=$2
  shift 2
  "$cli" "$@" >"$tmp/$name.out" 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$name: exit status $got, expected $want: $cli $*"
    sed 's/^/    /' "$tmp/$name.out" >&2
  fi
}

# expect <name> <text>: the output of run <name> contains text
expect() {
  grep -qF -- "$2" "$tmp/$1.out" || { fail "$1: output lacks \"$2\""; sed 's/^/    /' "$tmp/$1.out" >&2; }
}

golden() { awk -v k="$1" 'substr($0, 67) == k { print $1 }' "$src/tests/data/golden/stencil.txt"; }

# Every device's digest (JSON) equals the golden digest of the configuration.
expect_all_digests() {
  local name=$1 want=$2 n
  n=$(grep -c "\"sha256\": \"$want\"" "$tmp/$name.out")
  [ "$n" -ge 2 ] || fail "$name: the golden digest $want appears $n times (reference + devices expected)"
  if grep '"sha256"' "$tmp/$name.out" | grep -v -q "$want"; then fail "$name: a digest differs from $want"; fi
}

# ---- digests on every device --------------------------------------------------------------------------
run 0 nine_all stencil --kind nine --grid 97x89 --init shoc --iters 10 --device all --json
expect_all_digests nine_all "$(golden "stencil.nine.v1 f32 shoc 97x89 fixed iters=10")"
expect nine_all '"all_agree": true'

for v in plain tiled task; do
  run 0 "nine_f64_$v" stencil --grid 97x89 --iters 10 --dtype f64 --variant "$v" --device all
  expect "nine_f64_$v" "$(golden "stencil.nine.v1 f64 shoc 97x89 fixed iters=10" | cut -c1-16)"
  expect "nine_f64_$v" AGREE
done
# f64 where a device lacks it: said so, not counted as a disagreement
if RUSTICL_ENABLE=llvmpipe "$cli" devices | grep -q llvmpipe; then
  RUSTICL_ENABLE=llvmpipe "$cli" stencil --grid 8x8 --iters 1 --dtype f64 --device all >"$tmp/f64.out" 2>&1 ||
    fail "f64 with an fp64-less device: exit status $?"
  expect f64 "unsupported: no fp64"
fi

run 0 general5 stencil --kind general --grid 61x67 --init random --seed 42 --boundary periodic --iters 5 \
  --weights "$(awk 'BEGIN { for (k = 0; k < 25; k++) printf "%s%.17g", k ? "," : "", (k % 2 ? 0.0625 : -0.03125) * (1 + k % 7) + 0.01 * k }')" \
  --boundary-value 0.75 --device all --json
expect_all_digests general5 "$(golden "stencil.general.v1 5x5 f32 random 61x67 periodic iters=5")"

run 0 tiled_shape stencil --grid 61x53 --iters 3 --variant tiled --local 8x4 --points 2x3 --device all
expect tiled_shape "tiled 8x4 x 2x3"
expect tiled_shape AGREE

run 0 laplace5 stencil --kind laplace5 --grid 40x30 --init point --iters 7 --boundary edge --device all
expect laplace5 AGREE

# ---- SOR ------------------------------------------------------------------------------------------------
run 0 sor stencil --kind sor --grid 64x48 --init random --rhs point --omega 1.9 --boundary periodic --iters 30 \
  --device all --out "$tmp/sor.raw"
expect sor AGREE
expect sor residual
ref=$(awk '/^  host reference/ { print $(NF-2) }' "$tmp/sor.out")
[ "$(sha256sum "$tmp/sor.raw" | cut -c1-16)" = "$ref" ] || fail "sor: --out file digest differs from the reference $ref"

# ---- files in and out -------------------------------------------------------------------------------
run 0 raw_out stencil --grid 33x17 --init random --iters 4 --out "$tmp/a.raw" --json --device 0
dev=$(grep -o '"sha256": "[0-9a-f]*"' "$tmp/raw_out.out" | tail -1 | cut -d'"' -f4)
[ "$(sha256sum "$tmp/a.raw" | cut -d' ' -f1)" = "$dev" ] || fail "raw_out: the file's SHA-256 is not the device's digest"
run 0 raw_in stencil --input "$tmp/a.raw" --grid 33x17 --iters 0 --json --device 0
grep -q "\"sha256\": \"$dev\"" "$tmp/raw_in.out" || fail "raw_in: zero iterations changed the grid"
run 0 image_out stencil --grid 64x64 --init point --kind laplace5 --iters 20 --image "$tmp/p.pgm" --device 0
head -c 2 "$tmp/p.pgm" | grep -q P5 || fail "image_out: $tmp/p.pgm is not a PGM"

if [ -r "$camera" ]; then
  run 0 camera stencil --input "$camera" --boundary edge --iters 20 --image "$tmp/cam.png" --device all --json
  expect_all_digests camera "$(golden "stencil.nine.v1 f32 camera.png edge iters=20")"
  run 0 camera_native stencil --input "$camera" --boundary edge --iters 20 --native --diff-image "$tmp/diff.png" \
    --device all --json
  expect camera_native '"drift"'
  expect camera_native '"diff_image"'
  expect camera_native '"all_agree": true'
  [ "$(head -c 4 "$tmp/cam.png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "camera: --image is not a PNG"
  ls "$tmp"/diff*.png >/dev/null 2>&1 || fail "camera: no difference image written"
  # The difference image is RGB: as an input it is refused as not greyscale.
  run 2 rgb_input stencil --input "$(ls "$tmp"/diff*.png | head -1)" --iters 1
  expect rgb_input "not greyscale"
else
  echo "skip camera.png checks: $camera is absent (install python3-skimage)" >&2
fi

run 0 no_ref stencil --grid 30x30 --iters 3 --device all --no-reference --diff-image "$tmp/dd.pgm"
expect no_ref "no host reference"
if [ "$(grep -c '^  [^ ]' "$tmp/no_ref.out")" -ge 3 ]; then # two devices or more
  expect no_ref "0 differing point(s) against the first device"
fi

# ---- disagreement: a device whose kernel differs makes the exit status 1 -------------------------------
mkdir "$tmp/cl"
cp "$src"/cl/*.cl "$tmp/cl/"
sed -i 's/R_ADD(R_ADD(R_ADD(n, s), e), w)/R_ADD(R_ADD(R_ADD(n, e), s), w)/' "$tmp/cl/stencil.cl"
grep -q 'R_ADD(R_ADD(R_ADD(n, e), s), w)' "$tmp/cl/stencil.cl" || fail "could not alter the kernel for the test"
# The first-use self-test (docs/selftest.md) catches the altered kernel before it runs: refused, with the
# element that differed, after a conservative rebuild that differs too.
REPROCL_KERNEL_DIR="$tmp/cl" "$cli" stencil --grid 97x89 --init random --iters 3 --device 0 >"$tmp/refused.out" 2>&1
[ $? = 2 ] || fail "altered kernel with the self-test: exit status is not 2"
expect refused "self-test failed: stencil nine"
expect refused "conservative build"
# Without the self-test the comparison with the host reference catches it.
REPROCL_SELFTEST=off REPROCL_KERNEL_DIR="$tmp/cl" "$cli" stencil --grid 97x89 --init random --iters 3 --device 0 \
  >"$tmp/altered.out" 2>&1
[ $? = 1 ] || fail "altered kernel: exit status is not 1"
expect altered DISAGREE
expect altered "DIFFERS from the reference"

# ---- errors: exit status 2 and a message naming the problem ---------------------------------------------
run 2 omega_high stencil --kind sor --grid 8x8 --iters 1 --omega 2.5
expect omega_high "outside (0, 2)"
run 2 omega_zero stencil --kind sor --grid 8x8 --iters 1 --omega 0
expect omega_zero "outside (0, 2)"
run 2 kind stencil --kind heat --grid 8x8 --iters 1
expect kind 'unknown --kind "heat"'
run 2 no_iters stencil --grid 8x8
expect no_iters "--iters is required"
run 2 no_grid stencil --iters 3
expect no_grid "--grid"
run 2 zero_grid stencil --grid 0x5 --iters 1
expect zero_grid "at least 1"
run 2 huge_grid stencil --grid 4000000000x4000000000 --iters 1
expect huge_grid "exceeds the largest supported size"
run 2 weights stencil --kind nine --weights 1,2 --iters 1 --grid 4x4
expect weights "takes 3 weights"
run 2 periodic_odd stencil --kind sor --grid 7x8 --boundary periodic --iters 1
expect periodic_odd "odd size"
run 2 local stencil --grid 8x8 --iters 1 --variant plain --local 100000x1 --device 0
expect local "exceeds"
head -c 100 "$tmp/a.raw" >"$tmp/short.raw"
run 2 truncated stencil --input "$tmp/short.raw" --grid 33x17 --iters 1
expect truncated "short.raw: truncated: 100 bytes"
run 2 raw_no_size stencil --input "$tmp/short.raw" --iters 1
expect raw_no_size "give its width and height"
printf 'P6\n2 2\n255\n0123456789ab' >"$tmp/colour.ppm"
run 2 ppm stencil --input "$tmp/colour.ppm" --iters 1
expect ppm "colour.ppm: a colour PPM image (P6), not a greyscale PGM"
printf 'P5\n99999999999999999999 2\n255\n' >"$tmp/huge.pgm"
run 2 huge_pgm stencil --input "$tmp/huge.pgm" --iters 1
expect huge_pgm "huge.pgm:2: the width is more than"
if [ -r "$camera" ]; then
  head -c 5000 "$camera" >"$tmp/cut.png"
  run 2 cut_png stencil --input "$tmp/cut.png" --iters 1
  expect cut_png "cut.png: truncated or corrupt PNG"
fi
run 2 missing stencil --input "$tmp/none.png" --iters 1
expect missing "none.png"

# A grid too large for the host's memory is bad input (2), not a disagreement (1). ulimit makes the
# allocation fail on any machine.
if ldd "$cli" 2>/dev/null | grep -q libasan; then
  echo "skip host_huge: ulimit -v cannot cap an AddressSanitizer build (it maps terabytes of shadow memory at start); the plain build runs it"
else
  (ulimit -v 4194304 && exec "$cli" stencil --grid 100000x100000 --iters 1 --device 0) >"$tmp/host_huge.out" 2>&1
  st=$?
  [ $st = 2 ] || fail "host_huge: exit status $st, expected 2"
  expect host_huge "out of host memory"
fi
# Option names match exactly, with a suggestion; the common options are in the help with the exit statuses.
run 2 typo stencil --grd 8x8 --iters 1
expect typo "unknown option --grd (did you mean --grid?)"
run 2 prefix stencil --grid 8x8 --iter 1
expect prefix "unknown option --iter (did you mean --iters?)"
run 0 help stencil --help
for opt in --device --dtype --native --json --out --kind --grid --input --diff-image; do expect help "  $opt "; done
expect help "exit status"
# No device can run it: 3 (could not run), not 1.
if RUSTICL_ENABLE=llvmpipe "$cli" devices --no-selftest | grep -q llvmpipe; then
  RUSTICL_ENABLE=llvmpipe "$cli" stencil --grid 8x8 --iters 1 --dtype f64 --device llvmpipe >"$tmp/none_ran.out" 2>&1
  st=$?
  [ $st = 3 ] || fail "none_ran: exit status $st, expected 3"
  expect none_ran "unsupported: no fp64"
fi

# ---- the benchmark, quick mode: runs and writes JSON with the stencil cases ------------------------------
"$cli" bench --family stencil --quick --repeats 1 --device 0 -o "$tmp/bench.json" >"$tmp/bench.out" 2>&1 ||
  fail "bench --family stencil --quick: exit status $?"
for key in '"family": "stencil"' '"kernel": "nine"' '"variant": "tiled"' '"mode": "native"' '"gbps"' '"gflops"'; do
  grep -qF "$key" "$tmp/bench.json" || fail "bench JSON lacks $key"
done

# --split: a stencil and SOR cut into blocks of rows over every device (PoCL's sub-devices with given weights):
# the digest is the reference's, the shares cover the grid rows.
run 0 split_general stencil --kind general --weights 0,1,0,1,-4,1,0,1,0 --init random --grid 97x301 --iters 13 \
  --boundary periodic --split all --json
python3 "$src/tests/split_agrees.py" "$tmp/split_general.out" 301 || fail "stencil --split all: the split's digest"
run 0 split_sor stencil --kind sor --grid 64x150 --iters 9 --rhs random --split all --json
python3 "$src/tests/split_agrees.py" "$tmp/split_sor.out" 150 || fail "sor --split all: the split's digest"
if "$cli" devices --no-selftest | grep -q "Portable Computing Language"; then
  run 0 split_sub stencil --grid 80x80 --iters 5 --dtype f64 --split pocl:/2 --split-weights 3:1
  expect split_sub "SPLIT AGREES"
  expect split_sub "grid rows [0, "
fi
run 2 split_bad_weights stencil --grid 8x8 --iters 1 --split 0 --split-weights 1::2
expect split_bad_weights '"1::2"'

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all stencil CLI checks passed"
