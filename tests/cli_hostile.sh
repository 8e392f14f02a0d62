#!/usr/bin/env bash
# Hostile and malformed input to the reprocl tool (docs/reliability.md, catalogue C1-C78): every one
# gets a specific error naming the problem and the documented exit status, never a crash (a crash
# would be status >= 128) or a silent acceptance. Cases marked "bug:" failed before the fix they name.
# Exit statuses follow the one rule (docs/cli.md): 2 bad usage or input (an option, a value, a file, a device
# spec, the environment's settings, a problem too large), 3 could not run (a build failure), never 1 (which
# means that reproducible results disagree).
. "$(dirname "$0")/clilib.sh"
export RUSTICL_ENABLE=${RUSTICL_ENABLE:-llvmpipe}
nonutf8=$(printf '\xff\xfe\x80')
long=$(head -c 100000 /dev/zero | tr '\0' 'a')

# ---- numbers: --n, --seed, --local, --groups, --repeats (cli_parse_*) -------------------------------
expect 2 "C1 bug: --n ' -5' (blank then sign) was 2^64-5" -- "$CLI" run reduce --n " -5"
contains "$TMP/err" "--n expects a non-negative integer, got \" -5\"" "C1 message"
expect 2 "C2 bug: --seed ' -5' was accepted as 2^64-5" -- "$CLI" run reduce --n 10 --seed " -5"
contains "$TMP/err" "--seed expects a non-negative integer" "C2 message"
expect 2 "C3 bug: --n '2^ 5' was accepted as 32" -- "$CLI" run reduce --n "2^ 5"
contains "$TMP/err" "2^k needs k <= 63" "C3 message"
expect 2 "C4 --n 2^64 (exponent too large)" -- "$CLI" run reduce --n 2^64
contains "$TMP/err" "2^k needs k <= 63" "C4 message"
expect 2 "C5 --n 2^64 written out" -- "$CLI" run reduce --n 18446744073709551616
contains "$TMP/err" "is too large" "C5 message"
expect 2 "C6 --n 17179869184G overflows through its suffix" -- "$CLI" run reduce --n 17179869184G
contains "$TMP/err" "is too large" "C6 message"
expect 2 "C7 --n 16Q (unknown suffix)" -- "$CLI" run reduce --n 16Q
contains "$TMP/err" "--n expects an integer, got \"16Q\"" "C7 message"
expect 2 "C8 --n '' (empty)" -- "$CLI" run reduce --n ""
contains "$TMP/err" "--n expects a non-negative integer" "C8 message"
expect 2 "C9 --n 0x10 (hex)" -- "$CLI" run reduce --n 0x10
expect 2 "C10 --n 1e6 (float syntax)" -- "$CLI" run reduce --n 1e6
expect 2 "C11 --n 2^62: the byte count overflows" -- "$CLI" run reduce --n 2^62
contains "$TMP/err" "is too large" "C11 message"
start=$(date +%s)
expect 2 "C12 bug: --n 2^40 (4 TiB) allocated host memory before the device limit was checked" -- \
  "$CLI" run reduce --n 2^40 --device all
contains "$TMP/err" "CL_DEVICE_MAX_MEM_ALLOC_SIZE" "C12 names the device limit"
[ $(( $(date +%s) - start )) -lt 60 ] && pass "C12 refused at once" || fail "C12 took $(( $(date +%s) - start )) s"
expect 2 "C13 --local 2^40" -- "$CLI" run reduce --n 5000 --local 2^40
contains "$TMP/err" "exceeds" "C13 names the limit"
expect 2 "C14 --local 48 (not a power of two)" -- "$CLI" run reduce --n 5000 --local 48
contains "$TMP/err" "not a power of two" "C14 message"
expect 2 "C15 bug: bench --repeats '\\n3' was accepted as 3" -- "$CLI" bench --repeats "$(printf '\n3')"
contains "$TMP/err" "--repeats expects an integer" "C15 message"
expect 2 "C16 bench --repeats 0" -- "$CLI" bench --repeats 0
contains "$TMP/err" "outside [1, 1000]" "C16 message"
expect 2 "C17 bench --repeats 99999999999999999999" -- "$CLI" bench --repeats 99999999999999999999
expect 2 "C18 bench --repeats -3" -- "$CLI" bench --repeats -3

# ---- names: --op, --dtype, --mode, --dist, --family, --suite ----------------------------------------
expect 2 "C19 --op with non-UTF-8 bytes" -- "$CLI" run reduce --n 10 --op "$nonutf8"
contains "$TMP/err" "unknown reduction" "C19 message"
expect 2 "C20 --dtype f16" -- "$CLI" run reduce --n 10 --dtype f16
contains "$TMP/err" "unknown dtype \"f16\"" "C20 message"
expect 2 "C21 --mode with a 100 kB value" -- "$CLI" run reduce --n 10 --mode "$long"
contains "$TMP/err" "unknown reduction mode" "C21 message"
expect 2 "C22 --dist ''" -- "$CLI" run reduce --n 10 --dist ""
contains "$TMP/err" "unknown data kind" "C22 message"
expect 2 "C23 bench --family with an empty item" -- "$CLI" bench --family reduce,,reduce
contains "$TMP/err" "unknown family \"\"" "C23 message"
expect 2 "C24 bench --family with non-UTF-8 bytes" -- "$CLI" bench --family "$nonutf8"
expect 2 "C25 check --suite bogus" -- "$CLI" check --suite bogus
contains "$TMP/err" "--suite expects quick or full" "C25 message"
expect 2 "C26 check --family nosuch" -- "$CLI" check --family nosuch
contains "$TMP/err" "unknown family \"nosuch\"" "C26 message"
expect 2 "C27 unexpected positional argument" -- "$CLI" run reduce --n 10 extra
contains "$TMP/err" "unexpected argument \"extra\"" "C27 message"
expect 2 "C28 unknown option" -- "$CLI" devices --bogus
contains "$TMP/err" "unknown option --bogus; \`reprocl devices --help\` lists the options" "C28 message"
expect 2 "C29 unknown command with non-UTF-8 bytes" -- "$CLI" "$nonutf8"

# ---- devices: --device, REPROCL_DEVICE ----------------------------------------------------------------
expect 2 "C30 --device with non-UTF-8 bytes" -- "$CLI" run reduce --n 10 --device "$nonutf8"
contains "$TMP/err" "no OpenCL device matches" "C30 message"
expect 2 "C31 --device with a 100 kB name" -- "$CLI" run reduce --n 10 --device "$long"
contains "$TMP/err" "no OpenCL device matches" "C31 message"
expect 2 "C32 --device 99999999999999999999999 (index overflow)" -- "$CLI" run reduce --n 10 --device 99999999999999999999999
expect 2 "C33 REPROCL_DEVICE names no device" -- env REPROCL_DEVICE="$nonutf8" "$CLI" run reduce --n 10
contains "$TMP/err" "(from REPROCL_DEVICE)" "C33 says where the spec came from"

# ---- environment: REPROCL_TUNING, REPROCL_KERNEL_DIR --------------------------------------------------
expect 2 "C34 REPROCL_TUNING=sometimes" -- env REPROCL_TUNING=sometimes "$CLI" run reduce --n 10
contains "$TMP/err" "REPROCL_TUNING=\"sometimes\"" "C34 message"
expect 2 "C35 REPROCL_KERNEL_DIR does not exist" -- env REPROCL_KERNEL_DIR=/nonexistent/kernels "$CLI" run reduce --n 10
contains "$TMP/err" "/nonexistent/kernels/" "C35 names the file"
mkdir -p "$TMP/kd/prelude.cl"
cp "$SRC"/cl/*.cl "$TMP/kd/" 2>/dev/null || true
expect 2 "C36 REPROCL_KERNEL_DIR holds a directory named like a kernel file" -- \
  env REPROCL_KERNEL_DIR="$TMP/kd" "$CLI" run reduce --n 10
contains "$TMP/err" "error reading kernel source" "C36 message"
rm -rf "$TMP/kd" && mkdir -p "$TMP/kd" && cp "$SRC"/cl/*.cl "$TMP/kd/"
printf '__kernel void rcl_ordered_sum_pass1( {\n' >"$TMP/kd/reduce.cl"
expect 3 "C37 REPROCL_KERNEL_DIR holds a kernel that does not compile" -- \
  env REPROCL_KERNEL_DIR="$TMP/kd" "$CLI" run reduce --n 10 --device 0
contains "$TMP/err" "building reduce.cl" "C37 names the file"
contains "$TMP/err" "build log" "C37 includes the build log"

# ---- files: compare's fingerprint JSON, output paths ------------------------------------------------
ref="$SRC/tests/data/reference-fingerprint.json"
fp() { printf '{"format":"reprocl-fingerprint","format_version":1,"devices":[{"name":"d"}],"cases":[%s]}' "$1"; }
good='{"name":"a","status":"ok","reference":"x","results":[{"device":0,"status":"ok","sha256":"x"}]}'
fp "$good" >"$TMP/good.json"
expect 0 "C38 compare: a minimal valid fingerprint against itself" -- "$CLI" compare "$TMP/good.json" "$TMP/good.json"
expect 2 "C39 compare: one file" -- "$CLI" compare "$ref"
contains "$TMP/err" "at least two" "C39 message"
expect 2 "C40 compare: missing file" -- "$CLI" compare "$ref" "$TMP/missing.json"
contains "$TMP/err" "$TMP/missing.json" "C40 names the file"
expect 2 "C41 compare: a directory" -- "$CLI" compare "$ref" "$TMP"
# A fixed first byte: random data starting with a newline would (rightly) be reported on line 2.
{ printf 'G'; head -c 4095 /dev/urandom; } >"$TMP/random.bin"
expect 2 "C42 compare: binary garbage" -- "$CLI" compare "$ref" "$TMP/random.bin"
contains "$TMP/err" "random.bin:1:" "C42 names file and line"
printf '[1, 2]' >"$TMP/array.json"
expect 2 "C43 compare: JSON of the wrong type" -- "$CLI" compare "$ref" "$TMP/array.json"
contains "$TMP/err" "not a reprocl fingerprint" "C43 message"
sed 's/"format_version": 1/"format_version": 2/' "$ref" >"$TMP/v2.json"
expect 2 "C44 compare: a future format version" -- "$CLI" compare "$ref" "$TMP/v2.json"
contains "$TMP/err" "version 2 is not supported" "C44 message"
fp '{"status":"ok"}' >"$TMP/noname.json"
expect 2 "C45 bug: compare crashed on a case without a name" -- "$CLI" compare "$TMP/good.json" "$TMP/noname.json"
contains "$TMP/err" "cases[0] needs a string \"name\"" "C45 message"
fp '{"name":5,"status":"ok"}' >"$TMP/numname.json"
expect 2 "C46 bug: compare crashed on a case name that is a number" -- "$CLI" compare "$TMP/good.json" "$TMP/numname.json"
fp '{"name":"a","status":"ok","reference":"x","results":[{"device":0,"status":"ok"}]}' >"$TMP/nosha.json"
expect 2 "C47 bug: an ok result without sha256 counted as a difference" -- "$CLI" compare "$TMP/good.json" "$TMP/nosha.json"
contains "$TMP/err" "no string \"sha256\"" "C47 message"
fp '{"name":"a","status":"ok","reference":"x","results":[{"device":-5,"status":"ok","sha256":"x"}]}' >"$TMP/negdev.json"
expect 2 "C48 compare: a negative device index" -- "$CLI" compare "$TMP/good.json" "$TMP/negdev.json"
contains "$TMP/err" "\"device\" index below 1" "C48 message"
fp "$good,$good" >"$TMP/dup.json"
expect 2 "C49 compare: a case name twice" -- "$CLI" compare "$TMP/good.json" "$TMP/dup.json"
contains "$TMP/err" "appears twice" "C49 message"
python3 -c "print('[' * 100000)" >"$TMP/deep.json"
expect 2 "C50 compare: 100000 nested arrays" -- "$CLI" compare "$ref" "$TMP/deep.json"
contains "$TMP/err" "maximum parsing depth" "C50 message"
printf '{"format":"reprocl-fingerprint","host":"\xff\xfe"}' >"$TMP/badutf8.json"
expect 2 "C51 compare: invalid UTF-8 in a string" -- "$CLI" compare "$ref" "$TMP/badutf8.json"
contains "$TMP/err" "badutf8.json:1:" "C51 names file and place"
python3 -c "import json; d=json.load(open('$ref')); d['host']='h'*(1<<22); json.dump(d, open('$TMP/bigline.json','w'))"
expect 0 "C52 compare: a 4 MiB line (a huge string value)" -- "$CLI" compare "$ref" "$TMP/bigline.json"
expect 2 "C53 fingerprint -o into a missing directory" -- "$CLI" fingerprint --suite quick --device 0 -o /nonexistent/dir/fp.json
contains "$TMP/err" "/nonexistent/dir/fp.json" "C53 names the file"

# ---- reprocl md: input files and options ----------------------------------------------------------
lat=(--lattice fcc --cells 3 --density 0.8442 --temp 1.0 --steps 1 --device 0)
expect 2 "C54 bug: md --input /dev/zero grew one line until memory ran out" -- "$CLI" md --input /dev/zero --steps 0
contains "$TMP/err" "/dev/zero is not a regular file but a device" "C54 message"
expect 2 "C55 md --input a directory" -- "$CLI" md --input "$TMP" --steps 0
contains "$TMP/err" "is not a regular file but a directory" "C55 message"
hdr='LAMMPS data file\n\n%s atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 1\n\nAtoms\n\n'
printf "$hdr"'1 1 1 1 1\n' 1000000000 >"$TMP/absurd.data"
expect 2 "C56 bug: md --input claiming 10^9 atoms in one line allocated 72 GiB" -- "$CLI" md --input "$TMP/absurd.data" --steps 0
contains "$TMP/err" "absurd.data: the header declares 1000000000 atoms but only" "C56 message"
printf '1000000000\ncomment\nAr 0 0 0\n' >"$TMP/absurd.xyz"
expect 2 "C57 bug: md --input XYZ claiming 10^9 atoms allocated 56 GiB" -- "$CLI" md --input "$TMP/absurd.xyz" --steps 0
contains "$TMP/err" "absurd.xyz:1: the file declares 1000000000 atoms" "C57 message"
printf "$hdr"'1 1 nan 1 1\n2 1 2 2 2\n' 2 >"$TMP/nan.data"
expect 2 "C58 md --input with a NaN position" -- "$CLI" md --input "$TMP/nan.data" --steps 0
contains "$TMP/err" "nan.data:16: the coordinate is nan" "C58 message"
printf "$hdr"'1 1 1 1 1\n2 1 2 10.5 2\n' 2 >"$TMP/outside.data"
expect 2 "C59 md --input with an atom outside the box" -- "$CLI" md --input "$TMP/outside.data" --steps 0
contains "$TMP/err" "outside.data:17: atom 2 lies outside the box: y = 10.5" "C59 message"
printf '0\nempty\n' >"$TMP/zero.xyz"
expect 2 "C60 md --input with zero atoms" -- "$CLI" md --input "$TMP/zero.xyz" --steps 0
contains "$TMP/err" "zero.xyz:1: the file declares 0 atoms" "C60 message"
{ printf '2\n'; head -c 4194304 /dev/zero | tr '\0' 'c'; printf '\nAr 1 1 1\nAr 2 2\n'; } >"$TMP/bigline.xyz"
expect 2 "C61 md --input with a 4 MiB comment line" -- "$CLI" md --input "$TMP/bigline.xyz" --steps 0
contains "$TMP/err" "bigline.xyz:4: an atom line has 4 columns" "C61 names the right line"
printf '2\nLattice="4 0 0 0 4 0 0 0 4"\nAr 1 1 1\nAr 2 2 2\n' >"$TMP/small.xyz"
expect 2 "C62 md: cutoff above half the box of an input file" -- "$CLI" md --input "$TMP/small.xyz" --steps 0 --cutoff 2.5
contains "$TMP/err" "cutoff 2.5 is larger than half the periodic box length along x (4)" "C62 message"
expect 2 "C63 md --cutoff nan" -- "$CLI" md "${lat[@]}" --cutoff nan
contains "$TMP/err" "--cutoff expects a finite number, got \"nan\"" "C63 message"
expect 2 "C64 md --cutoff 0" -- "$CLI" md "${lat[@]}" --cutoff 0
contains "$TMP/err" "cutoff 0 is outside [0.01, 1000]" "C64 message"
expect 2 "C65 md --cells 2^21 (an absurd lattice)" -- "$CLI" md --lattice fcc --cells 2^21 --density 0.8 --temp 1
contains "$TMP/err" "2097152 unit cells per side: expected 1..600" "C65 message"
expect 2 "C66 md --density 0" -- "$CLI" md --lattice fcc --cells 3 --density 0 --temp 1
contains "$TMP/err" "density 0 is outside [1e-6, 1000]" "C66 message"
expect 2 "C67 md --temp 1e300" -- "$CLI" md --lattice fcc --cells 3 --density 0.8 --temp 1e300
contains "$TMP/err" "temperature 1e+300 is outside [0, 1e6]" "C67 message"
expect 2 "C68 md --lattice hcp" -- "$CLI" md --lattice hcp --cells 3 --density 0.8 --temp 1
contains "$TMP/err" "unknown lattice \"hcp\"" "C68 message"
expect 2 "C69 md --dt -0.005" -- "$CLI" md "${lat[@]}" --dt -0.005
contains "$TMP/err" "--dt -0.005 is not a positive time step" "C69 message"
expect 2 "C70 md --dt 1e300" -- "$CLI" md "${lat[@]}" --dt 1e300
contains "$TMP/out" "time step 1e+300 is not a positive finite number <= 1000" "C70 message"
expect 2 "C71 md --skin 1e300" -- "$CLI" md "${lat[@]}" --skin 1e300
contains "$TMP/out" "skin 1e+300 is outside [0.001, 100]" "C71 message"
expect 2 "C72 md --local 3" -- "$CLI" md "${lat[@]}" --local 3
contains "$TMP/out" "local_size 3 is not a power of two" "C72 message"
expect 2 "C73 md --path task --local 64" -- "$CLI" md "${lat[@]}" --path task --local 64
contains "$TMP/out" "the task path runs a single work-item" "C73 message"
expect 2 "C74 md: a time step that blows the system up" -- "$CLI" md --lattice fcc --cells 3 --density 0.8442 --temp 1e6 --dt 0.5 --steps 1 --device 0
contains "$TMP/out" "an atom moved more than half a periodic box length in one step" "C74 message"
expect 2 "C75 md --out into a missing directory" -- "$CLI" md "${lat[@]}" --out /nonexistent/dir/t.xyz
contains "$TMP/err" "cannot open /nonexistent/dir/t.xyz for writing" "C75 message"
expect 2 "C76 md with both --input and --lattice" -- "$CLI" md "${lat[@]}" --input "$TMP/small.xyz"
contains "$TMP/err" "give either --input FILE or --lattice" "C76 message"
expect 2 "C77 md --mixing harmonic" -- "$CLI" md "${lat[@]}" --mixing harmonic
contains "$TMP/err" "unknown mixing rule \"harmonic\"" "C77 message"
expect 2 "C78 md --steps -1" -- "$CLI" md --lattice fcc --cells 3 --density 0.8442 --temp 1.0 --steps -1
contains "$TMP/err" "--steps expects a non-negative integer" "C78 message"

# ---- the option tables (src/cli/opt.h) and the exit-status rule (docs/cli.md) ------------------------
expect 2 "C79 a prefix is no longer an option: --dtyp" -- "$CLI" bounds --dtyp f64 --device none
contains "$TMP/err" "unknown option --dtyp (did you mean --dtype?)" "C79 suggests --dtype"
expect 2 "C80 a misspelt option: --devcie" -- "$CLI" check --devcie 0
contains "$TMP/err" "unknown option --devcie (did you mean --device?)" "C80 suggests --device"
expect 0 "C81 --name=VALUE" -- "$CLI" bounds --kind=dot --n=4 --dtype=f64 --device=none
contains "$TMP/out" "bounds: dot" "C81 the values were taken"
expect 2 "C82 a flag given a value" -- "$CLI" compare --json=yes "$ref" "$ref"
contains "$TMP/err" "--json takes no value" "C82 message"
expect 2 "C83 an option without its value" -- "$CLI" check --family
contains "$TMP/err" "--family needs a value" "C83 message"
expect 2 "C84 unknown command: the nearest is suggested" -- "$CLI" fingerprnt
contains "$TMP/err" "unknown command \"fingerprnt\" (did you mean fingerprint?)" "C84 message"
expect 2 "C85 help for an unknown command" -- "$CLI" help nosuch
contains "$TMP/err" "unknown command \"nosuch\"" "C85 message"
expect 0 "C86 help CMD is CMD --help" -- "$CLI" help compare
contains "$TMP/out" "usage: reprocl compare" "C86 the usage"
contains "$TMP/out" "exit status: 0 success" "C86 the exit statuses"
expect 0 "C87 the top-level usage states the exit statuses" -- "$CLI" --help
contains "$TMP/out" "2 bad usage or input; 3 could not run" "C87 message"
# --device naming no device is bad input (2) on every command that takes it, not "devices disagree" (1).
for cmd in "check --suite quick" "fingerprint --json" "bounds" "tune" "cache list" "compile -o $TMP/x.bundle" \
  "audit" "bench --quick" "devices"; do
  # shellcheck disable=SC2086
  expect 2 "C88 $cmd --device 99" -- "$CLI" $cmd --device 99
  contains "$TMP/err" "no OpenCL device matches \"99\"" "C88 $cmd names the device"
done
expect 2 "C89 fingerprint --native does not apply" -- "$CLI" fingerprint --json --native
contains "$TMP/err" "--native does not apply to reprocl fingerprint: " "C89 says why"
expect 2 "C90 check --native with --no-native" -- "$CLI" check --native --no-native
contains "$TMP/err" "contradict" "C90 message"
expect 2 "C91 fingerprint with neither -o nor --json" -- "$CLI" fingerprint --suite quick
contains "$TMP/err" "-o FILE.json (or --json) is required" "C91 message"
finish
