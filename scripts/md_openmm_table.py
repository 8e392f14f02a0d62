#!/usr/bin/env python3
"""Markdown table of MD steps per second from a `reprocl bench --family md` JSON file: reprocl
(reproducible, the faster force path) beside each OpenMM platform, per dtype (OpenMM single ~ f32,
double ~ f64), one row per size, per device; then the energy check of each OpenMM record (its potential
energy per atom of the initial and the check state against reprocl's, relative).

usage: scripts/md_openmm_table.py BENCH.json
"""
import json
import sys
from collections import defaultdict


def fmt(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def device_table(res, dev):
    md = [r for r in res if r["device"] == dev and r["family"] == "md" and r["record"] == "measurement"]
    if not md:
        return
    cols = [("reprocl", dt) for dt in ("f32", "f64")]
    peers = sorted({(r["variant"], r["dtype"]) for r in md if r["mode"] == "peer:openmm"}, key=lambda v: (v[1], v[0]))
    cols = [c for dt in ("f32", "f64") for c in [("reprocl", dt)] + [p for p in peers if p[1] == dt]]
    rows = defaultdict(dict)
    for r in md:
        sps = 1.0 / r["time_per_step_s"]
        if r["mode"] == "reproducible":
            key = ("reprocl", r["dtype"])
            if sps > rows[r["n"]].get(key, (0, ""))[0]:
                rows[r["n"]][key] = (sps, r["variant"])
        elif r["mode"] == "peer:openmm":
            rows[r["n"]][(r["variant"], r["dtype"])] = (sps, "")
    print(f"\n{dev}: steps/s (reprocl: reproducible, the faster force path)\n")
    head = ["atoms"] + [f"reprocl {dt}" if v == "reprocl" else v.replace("openmm-", "OpenMM ") for v, dt in cols]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for n in sorted(rows):
        cells = [f"{int(n):,}"]
        for c in cols:
            v = rows[n].get(c)
            cells.append("–" if v is None else fmt(v[0]) + (f" ({v[1]})" if v[1] else ""))
        print("| " + " | ".join(cells) + " |")
    checks = [r for r in md if r["mode"] == "peer:openmm"]
    if checks:
        print("\nenergy per atom, OpenMM vs reprocl (relative): initial state, check state\n")
        print("| atoms | OpenMM | initial | check | agrees |\n|---:|---|---:|---:|---|")
        for r in sorted(checks, key=lambda r: (r["n"], r["variant"])):
            print(f"| {int(r['n']):,} | {r['variant']} {r['openmm_version']} | {r['pe_rel_diff']:.1e} | "
                  f"{r['check_pe_rel_diff']:.1e} | {'yes' if r['energy_agrees'] else 'NO'} |")
    for r in res:
        if r["device"] == dev and r["family"] == "md" and r["record"] == "skipped" and "openmm" in r["variant"]:
            print(f"\n{r['variant']} skipped: {r['skipped']}")


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    doc = json.load(open(argv[1]))
    for d in doc["devices"]:
        device_table(doc["results"], d["name"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
