#!/usr/bin/env python3
"""Turns a `reprocl bench` JSON file into Markdown tables: one row per case, reproducible beside native
(and peers), with the ratio reproducible/native and the fraction of the device's copy bandwidth.

usage: scripts/bench_table.py BENCH.json [--family F]
"""
import json
import sys
from collections import defaultdict


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    doc = json.load(open(argv[1]))
    family = argv[argv.index("--family") + 1] if "--family" in argv else None
    copy = {d["name"]: d.get("copy_gbps", 0) for d in doc["devices"]}
    rows = defaultdict(dict)
    for r in doc["results"]:
        if "skipped" in r or (family and r["family"] != family):
            continue
        key = (r["device"], r["family"], r["kernel"], r["variant"], r["dtype"], r["size"])
        rows[key][r["mode"]] = r
    for dev in dict.fromkeys(k[0] for k in rows):
        print(f"\n### {dev} (copy bandwidth {copy.get(dev, 0):.0f} GB/s)\n")
        print("| family | kernel | variant | dtype | size | reproducible ms | GB/s | % copy | native ms | repro/native |")
        print("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for key, modes in rows.items():
            if key[0] != dev or "reproducible" not in modes:
                continue
            r = modes["reproducible"]
            n = modes.get("native")
            t = r["time_s"]["median"] * 1e3
            frac = 100 * r.get("copy_fraction", 0)
            nt = f"{n['time_s']['median'] * 1e3:.3f}" if n else "-"
            ratio = f"{r['time_s']['median'] / n['time_s']['median']:.2f}" if n else "-"
            print(f"| {key[1]} | {key[2]} | {key[3]} | {key[4]} | {key[5]} | {t:.3f} | {r['gbps']:.0f} | {frac:.0f} | {nt} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
