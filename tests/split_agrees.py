"""split_agrees.py FILE ROWS: the "split" object of a reprocl command's --json output (run reduce, spmv, cg,
stencil --split) has the reference's digest (the solution's and the residual history's for cg), says it
matches, and its devices' shares tile [0, ROWS) in order. Used by tests/cli_*.sh."""
import json
import sys

d = json.load(open(sys.argv[1]))
s, ref = d["split"], d["reference"]
want = ref.get("solution_sha256", ref.get("sha256"))
assert s["sha256"] == want and s["matches_reference"], (s["sha256"], want)
assert s.get("history_sha256", "") == ref.get("history_sha256", ""), "residual history digests differ"
at = 0
for e in s["shares"]:
    assert e["count"] == 0 or e["first"] == at, (e, at)
    at += e["count"]
assert at == int(sys.argv[2]), (at, sys.argv[2])
