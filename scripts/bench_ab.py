#!/usr/bin/env python3
"""Compares two `reprocl bench` JSON files of the same device (A = before a change, B = after): for every
measurement both hold (family, kernel, variant, mode, dtype, size, shape), the ratio of median times B/A,
then per family the geometric mean and the worst case of the reproducible rows. Speed is compared only
between runs of one call on one machine (docs/performance.md).
  scripts/bench_ab.py before.json after.json [--json out.json]"""
import json
import math
import sys


def rows(path):
    d = json.load(open(path))
    out = {}
    for r in d.get("results", []):
        if r.get("record") != "measurement" or "time_s" not in r:
            continue
        key = tuple(str(r.get(k, "")) for k in ("family", "kernel", "variant", "mode", "dtype", "size", "shape", "device"))
        out[key] = r["time_s"]["median"]
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = rows(argv[1]), rows(argv[2])
    common = sorted(set(a) & set(b))
    if not common:
        print("bench_ab: no measurement in both files", file=sys.stderr)
        return 1
    fam = {}
    lines = []
    for k in common:
        ratio = b[k] / a[k] if a[k] > 0 else float("nan")
        lines.append({"key": dict(zip(("family", "kernel", "variant", "mode", "dtype", "size", "shape", "device"), k)),
                      "before_s": a[k], "after_s": b[k], "ratio": ratio})
        print("%-7s %-10s %-14s %-13s %-4s %-8s %-18s %10.4g s %10.4g s  x%.3f" % (k[0], k[1], k[2][:14], k[3][:13], k[4], k[5], k[6][:18], a[k], b[k], ratio))
        if k[3] in ("reproducible", "ordered", "exact") or k[3].startswith("reproducible"):
            fam.setdefault(k[0], []).append(ratio)
    print("\nreproducible rows, after/before median time (1.000 = same speed; > 1 slower):")
    summary = {}
    for f, rs in sorted(fam.items()):
        g = math.exp(sum(math.log(x) for x in rs) / len(rs))
        summary[f] = {"rows": len(rs), "geomean": g, "worst": max(rs), "best": min(rs)}
        print("  %-8s %3d rows  geomean x%.3f  worst x%.3f  best x%.3f" % (f, len(rs), g, max(rs), min(rs)))
    if len(argv) > 4 and argv[3] == "--json":
        json.dump({"before": argv[1], "after": argv[2], "rows": lines, "summary": summary}, open(argv[4], "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
