#!/bin/bash
# reprocl audit from the command line: the PTX fixture's findings (text and JSON), PoCL bitcode through
# llvm-dis, an x86-64 object through objdump, every device's programs (reproducible clean; native rcl_axpy
# contracted on PoCL and Intel's CPU runtime; Rusticl read as front-end SPIR-V only; Intel's machine
# code read), exit statuses, bad usage, and every host allocation failing in turn.
# Run by ctest as: cli_audit.sh <reprocl> <source dir> <binary dir>
source "$(dirname "$0")/clilib.sh"
PTX=$SRC/tests/data/audit/nvidia-sample.ptx

# --- a binary file: the hand-written PTX (fma.rn.f32 x2, div.full.f32, and a helper with sqrt.approx.ftz
# and an unrounded mul) ---
expect 1 "PTX fixture: findings give exit status 1" -- "$CLI" audit --binary "$PTX"
contains "$TMP/out" "ptx, read as assembly" "PTX is read as assembly"
contains "$TMP/out" "rcl_sample_native                fma 3, approx 2, ftz 1" "native kernel: counts per class"
contains "$TMP/out" "div.full.f32 (2 ulp)" "div.full.f32 is reported"
contains "$TMP/out" "sqrt.approx.ftz.f32" "the helper's sqrt.approx.ftz is reported"
contains "$TMP/out" "in rcl_sample_norm" "findings name the function they are in"
contains "$TMP/out" "rcl_sample_reproducible          clean" "mul.rn/add.rn/div.rn/sqrt.rn kernel is clean"
expect 1 "PTX fixture --json" -- "$CLI" audit --binary "$PTX" --json
json_ok "$TMP/out" "PTX --json is valid JSON"
python3 - "$TMP/out" <<'EOF' && pass "PTX --json: kernels, counts and findings" || fail "PTX --json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "ptx" and d["depth"] == "assembly" and d["clean"] is False, d
k = {x["kernel"]: x for x in d["kernels"]}
n = k["rcl_sample_native"]
assert (n["fma"], n["approx"], n["ftz"], n["fast-math"]) == (3, 2, 1, 0), n
f = {(x["what"], x["where"]): x for x in n["findings"]}
assert f[("fma.rn.f32", "rcl_sample_native")]["count"] == 2
assert f[("sqrt.approx.ftz.f32", "rcl_sample_norm")]["classes"] == ["approx", "ftz"]
assert k["rcl_sample_reproducible"]["clean"] is True and k["rcl_sample_reproducible"]["findings"] == []
EOF

# --- LLVM bitcode (as PoCL stores it), assembled from the IR fixture when llvm-as is installed ---
LLVM_AS=$(command -v llvm-as-15 llvm-as 2>/dev/null | head -1 || true)
if [ -n "$LLVM_AS" ]; then
  "$LLVM_AS" "$SRC/tests/data/audit/pocl-sample.ll" -o "$TMP/sample.bc"
  expect 1 "bitcode through llvm-dis" -- "$CLI" audit --binary "$TMP/sample.bc" --details
  contains "$TMP/out" "llvm-bitcode, read as ir" "bitcode is read as IR"
  contains "$TMP/out" "call llvm.fmuladd.f32" "llvm.fmuladd is reported"
  contains "$TMP/out" "fdiv !fpmath 2.5 ulp" "approximate fdiv is reported"
  contains "$TMP/out" "denormal-fp-math-f32=preserve-sign,preserve-sign" "FTZ attribute is reported"
  expect 0 "no disassembler: opaque, not an error" -- "$CLI" audit --binary "$TMP/sample.bc" --llvm-dis /nonexistent/llvm-dis
  contains "$TMP/out" "read as opaque" "unread bitcode is opaque"
  contains "$TMP/out" "/nonexistent/llvm-dis cannot be run" "the missing disassembler is named"
else
  echo "skip bitcode checks: no llvm-as (Debian package llvm-15)"
fi
# --- x86-64 machine code (Intel's CPU runtime returns it in an ELF container's .ocl.obj section): the
# hand-written object (3 FMAs, MXCSR |= 0x8040, a helper with vrcp14ps, rsqrtss and MXCSR = 0x9fc0, an
# MXCSR load it cannot follow, a vectorized form _ZGVeN16v_k_vec with vfmadd231ps) ---
if cc -c "$SRC/tests/data/audit/x86-sample.s" -o "$TMP/x86-sample.o" 2>/dev/null && command -v objdump >/dev/null; then
  X86=$TMP/x86-sample.o
  expect 1 "x86-64 object: findings give exit status 1" -- "$CLI" audit --binary "$X86" --details
  contains "$TMP/out" "elf, read as machine" "the object is read as machine code"
  contains "$TMP/out" "k_native                         fma 3, approx 2, ftz 2" "native kernel: counts per class"
  contains "$TMP/out" "ldmxcsr (sets FTZ and DAZ: 0x8040 OR-ed in)" "an MXCSR write setting FTZ and DAZ"
  contains "$TMP/out" "vrcp14ps (approximate reciprocal)                    x1  in helper" "the helper's vrcp14ps"
  contains "$TMP/out" "k_clean                          clean" "correctly rounded code, MXCSR restored: clean"
  contains "$TMP/out" "vfmadd231ps                                          x1  in _ZGVeN16v_k_vec" \
    "the vectorized form is reported under its kernel"
  expect 0 "no objdump: opaque, not an error" -- "$CLI" audit --binary "$X86" --objdump /nonexistent/objdump
  contains "$TMP/out" "elf, read as opaque" "unread machine code is opaque"
  contains "$TMP/out" "/nonexistent/objdump cannot be run" "the missing disassembler is named"
else
  X86=
  echo "skip x86-64 object checks: no x86-64 cc or no objdump (Debian package binutils)"
fi
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\001\000\267\000' >"$TMP/arm.o"
head -c 44 /dev/zero >>"$TMP/arm.o"
expect 0 "an ELF file of another machine is opaque" -- "$CLI" audit --binary "$TMP/arm.o"
contains "$TMP/out" "ELF object for AArch64 (e_machine 183): machine code, opaque to reprocl" "AArch64 ELF is opaque"

# --- every device: the library's programs in both modes ---
expect 0 "audit --device all (reproducible builds clean)" -- "$CLI" audit --device all
contains "$TMP/out" "reproducible builds: no contract-breaking instruction" "the verdict is printed"
expect 0 "audit --device all --json" -- "$CLI" audit --device all --json
json_ok "$TMP/out" "device --json is valid JSON"
python3 - "$TMP/out" <<'EOF' && pass "device --json: clean reproducible builds, native contraction, front-end note" || fail "device --json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["clean"] is True
for dev in d["devices"]:
    modes = {m["mode"]: m for m in dev["modes"]}
    rep, nat = modes["reproducible"], modes["native"]
    assert rep["kernels_with_findings"] == 0, (dev["device"], rep)
    # The same kernels in both modes, except MD's symmetric force kernel: without int64 atomics it exists
    # only in the native build (which accumulates with 32-bit float atomics instead).
    rk = {(p["program"], p["dtype"], p.get("defines"), k["kernel"]) for p in rep["programs"] for k in p["kernels"]}
    nk = {(p["program"], p["dtype"], p.get("defines"), k["kernel"]) for p in nat["programs"] for k in p["kernels"]}
    assert rk and rk <= nk and all(x[3] == "md_force_symmetric" for x in nk - rk), (dev["device"], nk ^ rk)
    axpy = [k for p in nat["programs"] for k in p["kernels"] if k["kernel"] == "rcl_axpy"]
    depth = rep["programs"][0]["depth"]
    if "Portable Computing Language" in dev["device"]:
        assert depth == "ir", depth
        assert axpy and all(k["fma"] > 0 for k in axpy), axpy
        assert any("llvm.fmuladd" in f["what"] for k in axpy for f in k["findings"])
    elif dev["device"].startswith("Intel(R) OpenCL"):
        assert depth == "machine", depth
        assert ".ocl.obj section of Intel's OpenCL CPU program binary" in rep["programs"][0]["note"]
        assert axpy and all(k["fma"] > 0 for k in axpy), axpy
        assert all(f["what"].startswith("vfmadd") for k in axpy for f in k["findings"]), axpy
    elif dev["device"].startswith("rusticl"):
        assert depth == "front-end", depth
        assert "front-end IR only (final code opaque)" in rep["programs"][0]["note"]
        assert dev["f64_programs"] == 0 and "no fp64" in dev["f64_note"]
EOF
expect 0 "--save writes each binary" -- "$CLI" audit --device 0 --mode reproducible --save "$TMP/bins"
n_saved=$(ls "$TMP/bins" | wc -l)
[ "$n_saved" -gt 0 ] && pass "--save wrote $n_saved binaries" || fail "--save wrote nothing"
first=$(ls "$TMP/bins" | grep -- '-reduce-f32\.' | head -1)
case "$first" in 0-reproducible-reduce-f32.*) pass "saved names say device, mode, program and dtype";;
  *) fail "saved name $first";; esac
expect 0 "a saved binary audits alone" -- "$CLI" audit --binary "$TMP/bins/$first"
contains "$TMP/out" "rcl_axpy" "the saved binary holds the program's kernels"
expect 2 "--save with --binary" -- "$CLI" audit --binary "$PTX" --save "$TMP/bins"
expect 0 "--mode native: native findings do not fail" -- "$CLI" audit --device 0 --mode native --details
contains "$TMP/out" "rcl_axpy" "native details name the kernels"

# --- bad usage ---
expect 2 "bad --mode" -- "$CLI" audit --mode sometimes
contains "$TMP/err" "--mode \"sometimes\": expected reproducible, native or both" "the bad mode is named"
expect 2 "missing file" -- "$CLI" audit --binary "$TMP/none.ptx"
contains "$TMP/err" "cannot open $TMP/none.ptx" "the missing file is named"
expect 2 "--binary with --device" -- "$CLI" audit --binary "$PTX" --device 0
expect 2 "stray argument" -- "$CLI" audit extra
expect 2 "unknown device" -- "$CLI" audit --device no-such-device
contains "$TMP/err" "no OpenCL device matches \"no-such-device\"" "the unknown device is named"
printf '.version 8.4\n.target sm_90\n.entry k(\n)\n{\n\tret;\n' >"$TMP/bad.ptx"
expect 2 "malformed PTX" -- "$CLI" audit --binary "$TMP/bad.ptx"
contains "$TMP/err" "PTX: line 3: the body of k is not closed" "the malformed PTX is located"

# --- every host allocation of the library failing in turn: a clean error, never a crash ---
for f in "$PTX" ${LLVM_AS:+"$TMP/sample.bc"} ${X86:+"$X86"}; do
  ok_alloc=1; k=1
  while [ $k -le 400 ]; do
    REPROCL_FAIL_ALLOC=$k "$CLI" audit --binary "$f" >"$TMP/out" 2>"$TMP/err"; st=$?
    if ! grep -q "out of host memory" "$TMP/err"; then
      [ $st = 1 ] && grep -q "fma" "$TMP/out" || { ok_alloc=0; echo "     allocation $k: exit $st"; head -3 "$TMP/err"; }
      break
    fi
    [ $st = 2 ] || { ok_alloc=0; echo "     allocation $k: exit $st"; break; }
    k=$((k + 1))
  done
  [ $ok_alloc = 1 ] && [ $k -gt 5 ] && [ $k -le 400 ] &&
    pass "$(basename "$f"): each of $((k - 1)) failing allocations gives a clean error" ||
    fail "$(basename "$f"): failing allocations (stopped at $k)"
done
finish
