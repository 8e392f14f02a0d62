#!/usr/bin/env python3
"""Merges `reprocl bench` documents made on one machine by separate runs (one family each, so that each
family gets its own time budget) into one document for bench_table.py and plot_bench.py.

usage: scripts/bench_merge.py OUT.json IN.json [IN.json ...]

The devices come from the first document (later ones must name the same devices); results are
concatenated in order, each keeping the copy_fraction of its own run; command lines are listed."""
import json
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    docs = []
    for path in argv[2:]:
        with open(path) as f:
            docs.append(json.load(f))
    out = dict(docs[0])
    names = {d["name"] for d in out["devices"]}
    for path, d in zip(argv[2:], docs[1:]):
        other = {x["name"] for x in d["devices"]}
        if other != names:
            print("%s: devices %s differ from %s" % (path, sorted(other), sorted(names)), file=sys.stderr)
            return 1
    out["command_line"] = [d.get("command_line") for d in docs]
    out["merged_from"] = argv[2:]
    out["results"] = [r for d in docs for r in d["results"]]
    out["peers"] = {k: any(d.get("peers", {}).get(k) for d in docs) for k in docs[0].get("peers", {})}
    with open(argv[1], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
