#!/bin/bash
# reprocl spmv and reprocl cg from the command line, on every device: the digest printed for y (and for
# the CG solution) equals sha256sum of the --out file; --x FILE reads raw values and refuses a file of
# the wrong length; malformed matrices are refused naming file and line; a row of 110000 entries agrees
# everywhere; CG reports convergence, the iteration limit and non-square input; the benchmark runs.
# Run by ctest as: cli_sparse.sh <reprocl> <source dir> <binary dir>
set -euo pipefail
cli=$1
src=$2
bin=$3
work=$(mktemp -d "$bin/cli-sparse-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data=$src/tests/data/matrices

# ---- spmv: JSON, --out and its digest ----------------------------------------------------------------
"$cli" spmv --matrix "$data/pores_1.mtx" --device all --json --out "$work/y.bin" >"$work/s.json" ||
  fail "spmv pores_1: $(cat "$work/s.json")"
grep -q '"all_agree": true' "$work/s.json" || fail "spmv pores_1 does not agree: $(cat "$work/s.json")"
sum=$(sha256sum "$work/y.bin" | cut -d' ' -f1)
[ "$(stat -c %s "$work/y.bin")" = 240 ] || fail "y.bin holds $(stat -c %s "$work/y.bin") bytes, expected 30 doubles"
grep -q "\"sha256\": \"$sum\"" "$work/s.json" || fail "the printed digest is not sha256sum of --out ($sum)"
ndev=$(grep -c '"support": "native"' "$work/s.json" || true)
[ "$(grep -c "\"sha256\": \"$sum\"" "$work/s.json")" -ge $((ndev + 1)) ] ||
  fail "not every device (and the reference) printed $sum"

# f32 on every device (Rusticl too), exact contract, vector variant, native beside it
"$cli" spmv --gen poisson3d:10 --dtype f32 --contract exact --variant vector --x random:5 --device all --native \
  >"$work/t.txt" || fail "spmv poisson3d f32 exact: $(cat "$work/t.txt")"
grep -q "^AGREE" "$work/t.txt" || fail "poisson3d f32 exact: $(cat "$work/t.txt")"
grep -q "native build" "$work/t.txt" || fail "--native printed nothing"

# --x FILE: raw little-endian values; a file of ones gives the bits of --x ones
for _ in $(seq 30); do printf '\x00\x00\x80\x3f'; done >"$work/ones.f32"
a=$("$cli" spmv --matrix "$data/pores_1.mtx" --dtype f32 --x ones --json | grep -m1 '"sha256"' | tr -d ' ",')
b=$("$cli" spmv --matrix "$data/pores_1.mtx" --dtype f32 --x "$work/ones.f32" --json | grep -m1 '"sha256"' | tr -d ' ",')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "--x FILE of ones ($b) differs from --x ones ($a)"
head -c 119 "$work/ones.f32" >"$work/short.f32"
if "$cli" spmv --matrix "$data/pores_1.mtx" --dtype f32 --x "$work/short.f32" 2>"$work/e.txt"; then
  fail "a 119-byte --x file was accepted"
fi
grep -q "short.f32 holds 119 bytes, expected 120" "$work/e.txt" || fail "wrong-length --x: $(cat "$work/e.txt")"
# the output of one run is a valid --x of the next (a square matrix)
"$cli" spmv --matrix "$data/pores_1.mtx" --x "$work/y.bin" --beta 0.5 --y0 random:2 --device all | grep -q "^AGREE" ||
  fail "--x from a previous --out"

# ---- malformed input is refused, naming file, line and problem ------------------------------------------
if "$cli" spmv --matrix "$data/wrong.mtx" 2>"$work/e.txt"; then fail "wrong.mtx was accepted"; fi
grep -q "wrong.mtx:3: row index 0 is outside 1..2" "$work/e.txt" || fail "wrong.mtx: $(cat "$work/e.txt")"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 99999999\n1 1 1\n' >"$work/claim.mtx"
if "$cli" spmv --matrix "$work/claim.mtx" 2>"$work/e.txt"; then fail "a huge nnz claim was accepted"; fi
grep -q "claim.mtx:2: the size line claims 99999999 entries" "$work/e.txt" || fail "claim: $(cat "$work/e.txt")"
if "$cli" spmv --matrix "$work/none.mtx" 2>"$work/e.txt"; then fail "a missing file was accepted"; fi
grep -q "none.mtx: cannot open" "$work/e.txt" || fail "missing file: $(cat "$work/e.txt")"
set +e
"$cli" spmv 2>"$work/e.txt"; rc=$?
set -e
[ $rc = 2 ] && grep -q "exactly one of --matrix FILE and --gen SPEC" "$work/e.txt" || fail "no matrix: rc $rc $(cat "$work/e.txt")"
if "$cli" spmv --gen poisson2d:4 --contract fuzzy 2>"$work/e.txt"; then fail "--contract fuzzy accepted"; fi
grep -q "unknown SpMV contract \"fuzzy\"" "$work/e.txt" || fail "--contract: $(cat "$work/e.txt")"
if "$cli" spmv --gen poisson2d:4 --local 3 2>"$work/e.txt"; then fail "--local 3 accepted"; fi
grep -q "local_size = 3 is not a power of two" "$work/e.txt" || fail "--local 3: $(cat "$work/e.txt")"
if "$cli" spmv --gen cube:4 2>"$work/e.txt"; then fail "--gen cube accepted"; fi
grep -q "unknown generator \"cube\"" "$work/e.txt" || fail "--gen cube: $(cat "$work/e.txt")"

# ---- exit statuses (docs/cli.md): 2 for bad usage or input, 3 when no device could run ---------------------------
status() { # status WANT TEXT ARGS...: the exit status is WANT and stderr holds TEXT
  local want=$1 text=$2 rc
  shift 2
  set +e
  "$cli" "$@" >"$work/o.txt" 2>"$work/e.txt"
  rc=$?
  set -e
  [ $rc = "$want" ] || fail "$*: exit status $rc, expected $want: $(cat "$work/e.txt")"
  grep -qF -- "$text" "$work/e.txt" || fail "$*: \"$text\" not in: $(cat "$work/e.txt")"
}
status 2 "wrong.mtx:3: row index 0" spmv --matrix "$data/wrong.mtx"
head -c 200 "$data/pores_1.mtx" >"$work/cut.mtx"
status 2 "cut.mtx:" spmv --matrix "$work/cut.mtx"
status 2 "CG needs a square matrix" cg --gen random:4x5:2
status 2 "unknown SpMV contract" cg --gen poisson2d:4 --contract fuzzy
# Option names match exactly, with a suggestion (no prefix abbreviations), in both commands and in the
# tunables they share.
status 2 "unknown option --devcie (did you mean --device?)" spmv --gen poisson2d:4 --devcie 0
status 2 "unknown option --varient (did you mean --variant?)" cg --gen poisson2d:4 --varient sell
status 2 "unknown option --contr" spmv --gen poisson2d:4 --contr exact
status 2 "reprocl cg: error: --window expects a non-negative integer" cg --gen poisson2d:4 --window=-1
for c in spmv cg; do
  "$cli" $c --help >"$work/h.txt" || fail "$c --help"
  for opt in --device --dtype --native --json --out --variant --local --lanes --block --slice --long-row --window; do
    grep -q -- "^  $opt " "$work/h.txt" || fail "$c --help does not list $opt"
  done
  grep -q "^exit status" "$work/h.txt" || fail "$c --help does not give the exit statuses"
done
grep -q "^tunables (of the SpMVs):" "$work/h.txt" || fail "cg --help: no tunables heading"
if RUSTICL_ENABLE=llvmpipe "$cli" devices --no-selftest | grep -q llvmpipe; then
  set +e
  RUSTICL_ENABLE=llvmpipe "$cli" spmv --gen poisson2d:4 --dtype f64 --device llvmpipe >"$work/o.txt" 2>&1
  rc=$?
  set -e
  [ $rc = 3 ] && grep -q "unsupported: " "$work/o.txt" || fail "f64 on llvmpipe alone: exit $rc (expected 3): $(cat "$work/o.txt")"
else
  echo "note: skip the no-device-ran case: Rusticl's llvmpipe device is absent" >&2
fi

# ---- rows of 110000 entries on every device, every variant ------------------------------------------------
for v in scalar vector adaptive sell task; do
  "$cli" spmv --gen random:2x120000:110000:3 --dtype f32 --variant $v --device all >"$work/l.txt" ||
    fail "long rows, $v: $(cat "$work/l.txt")"
  grep -q "^AGREE" "$work/l.txt" || fail "long rows, $v: $(cat "$work/l.txt")"
done

# ---- Harwell-Boeing from the package, when installed ---------------------------------------------------------
g20=/usr/share/doc/libsuperlu-dev/examples/g20.rua
[ -r "$g20" ] || g20=${REPROCL_DATA_PREFIX:-}$g20
if [ -r "$g20" ]; then
  "$cli" spmv --matrix "$g20" --dtype f32 --device all | grep -q "^AGREE" || fail "g20.rua"
else
  echo "note: skip g20.rua: $g20 is absent (install libsuperlu-doc)" >&2
fi

# ---- cg -------------------------------------------------------------------------------------------------------
"$cli" cg --gen poisson2d:16 --dtype f32 --tol 1e-5 --device all --json --out "$work/x.bin" >"$work/c.json" ||
  fail "cg: $(cat "$work/c.json")"
grep -q '"all_agree": true' "$work/c.json" || fail "cg does not agree: $(cat "$work/c.json")"
grep -q '"status": "converged"' "$work/c.json" || fail "cg did not converge: $(cat "$work/c.json")"
sum=$(sha256sum "$work/x.bin" | cut -d' ' -f1)
grep -q "\"solution_sha256\": \"$sum\"" "$work/c.json" || fail "the solution digest is not sha256sum of --out"
"$cli" cg --gen poisson2d:16 --dtype f32 --jacobi --dots exact --contract exact --variant sell --device all \
  --native >"$work/c.txt" || fail "cg jacobi exact: $(cat "$work/c.txt")"
grep -q "^AGREE" "$work/c.txt" || fail "cg jacobi exact: $(cat "$work/c.txt")"
"$cli" cg --gen poisson2d:16 --dtype f32 --maxit 3 --device all >"$work/c.txt" || fail "cg --maxit 3"
grep -q "no-convergence" "$work/c.txt" || fail "cg --maxit 3 did not report the limit: $(cat "$work/c.txt")"
if "$cli" cg --gen random:4x5:2 2>"$work/e.txt"; then fail "cg on a 4x5 matrix was accepted"; fi
grep -q "CG needs a square matrix" "$work/e.txt" || fail "cg non-square: $(cat "$work/e.txt")"
"$cli" cg --matrix "$data/m_05_05_crk.mtx" --device all >"$work/c.txt" || fail "cg skew: $(cat "$work/c.txt")"
grep -q "breakdown" "$work/c.txt" || fail "cg on a skew-symmetric matrix did not break down: $(cat "$work/c.txt")"

# ---- every host allocation failing in turn (REPROCL_FAIL_ALLOC=N): a clean error, never a crash ------------
for n in $(seq 1 100); do
  set +e
  REPROCL_FAIL_ALLOC=$n "$cli" cg --matrix "$data/LFAT5.mtx" --jacobi --device 0 >/dev/null 2>"$work/e.txt"
  rc=$?
  set -e
  [ $rc -le 2 ] || fail "REPROCL_FAIL_ALLOC=$n: exit status $rc (a crash?): $(cat "$work/e.txt")"
  [ $rc = 0 ] || grep -q "out of host memory" "$work/e.txt" || fail "REPROCL_FAIL_ALLOC=$n: $(cat "$work/e.txt")"
done

# ---- the benchmark (quick: tiny sizes, no speed asserted) ---------------------------------------------------
"$cli" bench --family spmv,cg --quick --device 0 -o "$work/b.json" 2>"$work/b.err" || fail "bench: $(cat "$work/b.err")"
grep -q '"record": "summary"' "$work/b.json" || fail "bench has no summary record"
grep -q '"family": "cg"' "$work/b.json" || fail "bench has no cg record"
grep -q '"mode": "native"' "$work/b.json" || fail "bench has no native record"
grep -q 'baseline-tree' "$work/b.json" || fail "bench has no baseline record"
# ---- --split: SpMV and CG cut by rows over every device (and PoCL's sub-devices with given weights): the
# digests (CG: history and solution) are the reference's, the shares cover the rows ----------------------
"$cli" spmv --gen powerlaw:30000:2:5 --dtype f32 --x random:3 --split all --json >"$work/sp.json" ||
  fail "spmv --split all: $(cat "$work/sp.json")"
python3 "$src/tests/split_agrees.py" "$work/sp.json" 30000 || fail "spmv --split all: the split's y digest"
"$cli" cg --gen poisson2d:60 --dtype f32 --jacobi --split all --json >"$work/sc.json" ||
  fail "cg --split all: $(cat "$work/sc.json")"
python3 "$src/tests/split_agrees.py" "$work/sc.json" 3600 || fail "cg --split all: the split's solution/history"
if "$cli" devices --no-selftest | grep -q "Portable Computing Language"; then
  "$cli" cg --gen poisson2d:50 --dtype f64 --dots exact --split pocl:/2 --split-weights 1:3 >"$work/sc.txt" ||
    fail "cg --split pocl:/2 1:3: $(cat "$work/sc.txt")"
  grep -q "^SPLIT AGREES" "$work/sc.txt" || fail "cg over PoCL's sub-devices, 1:3: $(cat "$work/sc.txt")"
  grep -q "rows \[0, " "$work/sc.txt" || fail "cg's split row shows no shares: $(cat "$work/sc.txt")"
fi
st=0
"$cli" spmv --gen poisson2d:10 --split 0 --split-weights one 2>"$work/sw.err" >/dev/null || st=$?
[ "$st" = 2 ] && grep -q '"one"' "$work/sw.err" || fail "spmv --split-weights one: exit $st, $(cat "$work/sw.err")"
echo "cli_sparse: all checks passed"
