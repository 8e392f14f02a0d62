#!/bin/sh
# Mutation check of the reduction kernels: do the tests notice a reordered sum or a changed rounding?
# Each mutant below is one or more sed expressions on one file of cl/. For each, a fresh copy of cl/ is
# mutated (cl/ itself is never touched) and TEST is run RUNS times with REPROCL_KERNEL_DIR pointing at
# the copy. A mutant is killed when TEST fails every run; it survived if any run passes. The unmodified
# copy must pass first. Exit status 0 only if every mutant applied and was killed in every run.
#
#   scripts/mutate-kernels.sh TEST [RUNS]      e.g. scripts/mutate-kernels.sh build/tests/test_reduce 3
#
# MUTANTS="fold-assoc tail-pairs" runs only those. The environment passes through (RUSTICL_ENABLE=llvmpipe, CK_RUN_CASE=pinned_ordered, ...). The failing
# devices of each run are the loop indices of Check's failure lines. A sed expression that matches
# nothing (the kernel was edited) is reported as "not applied" and fails the check: update the mutant.
set -u
if [ $# -lt 1 ]; then
  echo "usage: $0 TEST [RUNS]" >&2
  exit 2
fi
test_bin=$1
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/mutate-kernels.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0

# run_test DIR LABEL: TEST with kernels from DIR, RUNS times; prints one line per run, returns the number
# of passing runs.
run_test() {
  passed=0
  i=1
  while [ "$i" -le "$runs" ]; do
    out="$work/out.txt"
    REPROCL_KERNEL_DIR="$1" REPROCL_CACHE_DIR="${REPROCL_CACHE_DIR:-$work/cache}" "$test_bin" >"$out" 2>&1
    rc=$?
    devs=$(sed -n 's/.*:[FE]:[^:]*:[^:]*:\([0-9][0-9]*\):.*/\1/p' "$out" | sort -un | tr '\n' ' ')
    if [ "$rc" -eq 0 ]; then
      passed=$((passed + 1))
      echo "  $2 run $i: passed"
    else
      echo "  $2 run $i: failed (devices ${devs:-?}) $(grep -c ':[FE]:' "$out") failing checks; first: $(grep -m1 ':[FE]:' "$out" | cut -c1-200)"
    fi
    i=$((i + 1))
  done
  return "$passed"
}

# mutant NAME FILE SED_EXPR...: applies the expressions in turn (each must change the file) and runs.
mutant() {
  name=$1
  file=$2
  shift 2
  case " ${MUTANTS:-$name} " in *" $name "*) ;; *) return ;; esac
  dir="$work/$name"
  rm -rf "$dir"
  cp -r "$root/cl" "$dir"
  for expr in "$@"; do
    cp "$dir/$file" "$work/before.cl"
    sed -i -e "$expr" "$dir/$file"
    if cmp -s "$dir/$file" "$work/before.cl"; then
      echo "$name: NOT APPLIED (no match for: $expr)"
      status=1
      return
    fi
  done
  diff -u "$root/cl/$file" "$dir/$file" | sed -n 's/^\([-+][^-+]\)/    \1/p'
  run_test "$dir" "$name"
  if [ $? -eq 0 ]; then
    echo "$name: killed"
  else
    echo "$name: SURVIVED"
    status=1
  fi
}

cp -r "$root/cl" "$work/original"
run_test "$work/original" original
if [ $? -ne "$runs" ]; then
  echo "the unmodified kernels fail: fix that first"
  exit 1
fi

# Each expression matches a small distinctive piece (a loop header, one add), so that edits around them
# (loop pragmas, sealed adds: R_SEAL(R_ADD(a, b), z)) leave the mutants applicable.
# ordered, one work-group's fold of its stack of subtrees: s0 + (s1 + s2) becomes (s0 + s1) + s2
mutant fold-assoc reduce.cl \
  's/real_t v = stack\[top - 1u\];/real_t v = stack[0];/' \
  's/for (uint k = top - 1u; k > 0u; k--)/for (uint k = 1u; k < top; k++)/' \
  's/R_ADD(stack\[k - 1u\], v)/R_ADD(v, stack[k])/'
# ordered, a lane of the last (partial) block summed in pairs, as a vectorizer reassociates it
mutant tail-pairs reduce.cl \
  's/for (i += RED_L; i < n; i += RED_L)/for (i += RED_L; i < n; i += 2u * RED_L)/' \
  's/R_ADD(s, LEAF(i))/R_ADD(s, (i + RED_L < n ? R_ADD(LEAF(i), LEAF(i + RED_L)) : LEAF(i)))/'
# ordered, a lane of a full block summed in pairs
mutant block-pairs reduce.cl \
  's/for (uint j = 1; j < RED_M; j++)/for (uint j = 1; j < RED_M; j += 2u)/' \
  's/R_ADD(s, LEAF(i + (ulong)j \* RED_L))/R_ADD(s, (j + 1u < RED_M ? R_ADD(LEAF(i + (ulong)j * RED_L), LEAF(i + (ulong)(j + 1u) * RED_L)) : LEAF(i + (ulong)j * RED_L)))/'
# exact, each f32 term loses the 8 low bits of its low chunk (a rounding of the terms)
mutant exact-f32-round reduce.cl \
  's/e\[0\] = v & XM32;/e[0] = v \& (XM32 - 0xffl);/'
# task, the final fold of the binary counter from the bottom: (s0 + s1) + s2
mutant task-fold-assoc reduce_task.cl \
  's/for (uint k = depth - 1u; k > 0u; k--) st\[k - 1u\] =/for (uint k = 1u; k < depth; k++) st[0] =/' \
  's/R_ADD(st\[k - 1u\], st\[k\])/R_ADD(st[0], st[k])/'
# task exact, every chunk loses its lowest bit before it is added
mutant task-exact-round reduce_task.cl \
  's/long v = (long)c\[j\];/long v = (long)(c[j] \& ~(rcl_u64)1);/'
exit "$status"
