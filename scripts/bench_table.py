#!/usr/bin/env python3
"""Turns a `reprocl bench` JSON file into Markdown: per device, the performance targets as ratios measured in
the run, reprocl against the peer libraries, and one table per family (reproducible beside native and
the peers, with the fraction of the device's copy bandwidth).

usage: scripts/bench_table.py BENCH.json [--family F] [--device SUBSTRING] [--targets-only]
       scripts/bench_table.py --validate BENCH.json   (checks the record schema; exit status 1 if broken)

The record schema is documented in docs/performance.md. plot_bench.py imports this module.
"""
import json
import math
import re
import sys
from collections import defaultdict

# ---- schema -------------------------------------------------------------------------------------------
TOP_FIELDS = {"reprocl": str, "command": str, "quick": bool, "repeats": int, "devices": list, "results": list}
DEVICE_FIELDS = {"name": str, "copy_gbps": (int, float)}
MEASUREMENT_FIELDS = {
    "record": str, "family": str, "kernel": str, "variant": str, "mode": str, "dtype": str, "size": str,
    "n": (int, float), "device": str, "time_s": dict, "repeats": int, "bytes": (int, float),
    "flops": (int, float), "gbps": (int, float), "gflops": (int, float), "copy_fraction": (int, float, type(None)),
}
SKIP_FIELDS = {"record": str, "family": str, "kernel": str, "variant": str, "device": str, "skipped": str}
SUMMARY_FIELDS = {"record": str, "family": str, "kernel": str, "size": str, "dtype": str, "n": (int, float),
                  "device": str}
MODES = re.compile(r"^(reproducible|native|peer:[a-z0-9_-]+)$")
# fields a family's measurements must carry beyond the common ones
FAMILY_FIELDS = {"md": {"natoms": (int, float), "pair_evals_per_s": (int, float), "time_per_step_s": (int, float)},
                 "spmv": {"matrix": str, "contract": str, "nnz": (int, float)},
                 "cg": {"matrix": str, "iterations": int}}


def validate(doc):
    """Returns a list of problems (empty when every record has its fields with the right types)."""
    errs = []

    def need(obj, fields, where):
        for k, t in fields.items():
            if k not in obj:
                errs.append(f"{where}: missing field {k!r}")
            elif not isinstance(obj[k], t) or (t in ((int, float),) and isinstance(obj[k], bool)):
                errs.append(f"{where}: field {k!r} is {type(obj[k]).__name__}")

    need(doc, TOP_FIELDS, "document")
    for i, d in enumerate(doc.get("devices", [])):
        need(d, DEVICE_FIELDS, f"devices[{i}]")
    names = {d.get("name") for d in doc.get("devices", [])}
    for i, r in enumerate(doc.get("results", [])):
        where = f"results[{i}]"
        kind = r.get("record")
        if kind == "measurement":
            need(r, MEASUREMENT_FIELDS, where)
            need(r, FAMILY_FIELDS.get(r.get("family"), {}), where)
            t = r.get("time_s", {})
            need(t, {"median": (int, float), "min": (int, float), "max": (int, float)}, where + ".time_s")
            if all(isinstance(t.get(k), (int, float)) for k in ("median", "min", "max")):
                if not 0 < t["min"] <= t["median"] <= t["max"]:
                    errs.append(f"{where}: times not 0 < min <= median <= max: {t}")
            if not MODES.match(str(r.get("mode"))):
                errs.append(f"{where}: mode {r.get('mode')!r} is not reproducible, native or peer:NAME")
            for k in ("gbps", "gflops", "bytes", "flops"):
                v = r.get(k)
                if isinstance(v, (int, float)) and not (math.isfinite(v) and v >= 0):
                    errs.append(f"{where}: {k} = {v}")
        elif kind == "skipped":
            need(r, SKIP_FIELDS, where)
        elif kind == "summary":
            need(r, SUMMARY_FIELDS, where)
        else:
            errs.append(f"{where}: record {kind!r} is not measurement, skipped or summary")
        if r.get("device") not in names:
            errs.append(f"{where}: device {r.get('device')!r} is not in devices")
    return errs


# ---- access -------------------------------------------------------------------------------------------
def load(path):
    with open(path) as f:
        return json.load(f)


def measurements(doc, device=None, family=None):
    for r in doc["results"]:
        if r.get("record", "measurement" if "time_s" in r else "skipped") != "measurement":
            continue
        if (device and r["device"] != device) or (family and r["family"] != family):
            continue
        yield r


def t(r):
    return r["time_s"]["median"]


def short_device(name):
    """'NVIDIA CUDA: NVIDIA H100 80GB HBM3' -> 'NVIDIA H100 80GB HBM3', PoCL and Rusticl by name."""
    if name.startswith("Portable Computing Language"):
        return "PoCL (" + name.split(": ", 1)[-1] + ")"
    if name.startswith("rusticl"):
        return "Rusticl (llvmpipe)"
    return name.split(": ", 1)[-1]


def size_key(r):
    return (r.get("n", 0), r["size"])


def best(rows, pred):
    rows = [r for r in rows if pred(r)]
    return min(rows, key=t) if rows else None


def fmt(v, spec=".2f", none="–"):
    return none if v is None else format(v, spec)


def pct(v):
    return "–" if v is None else f"{100 * v:.0f}%"


# ---- targets (docs/performance.md: on the H100) -----------------------------------------
def is_stencil_impl(r):
    return r["variant"] in ("plain", "tiled") or r["variant"].startswith("tiled-")


def targets(doc, dev):
    """Rows (target, measured, status, where) for one device. status: met / missed / not measured."""
    rows = []
    red = [r for r in measurements(doc, dev, "reduce")]
    by = defaultdict(dict)  # (kernel, dtype, n) -> {(variant, mode): r}
    for r in red:
        by[(r["kernel"], r["dtype"], r["n"])][(r["variant"], r["mode"])] = r
    big = [k for k in by if k[2] >= 2 ** 26]

    def status(ok, have=True):
        return "not measured" if not have else ("met" if ok else "missed")

    for op in ("sum", "dot", "nrm2"):
        for dt in ("f32", "f64"):
            ks = [k for k in big if k[0] == op and k[1] == dt and ("ordered", "reproducible") in by[k]]
            fr = [by[k][("ordered", "reproducible")].get("copy_fraction") for k in ks]
            fr = [f for f in fr if f is not None]
            worst = min(fr) if fr else None
            rows.append((f"reduce {op} {dt} ordered >= 80% of copy at 2^26+", pct(worst),
                         status(worst is not None and worst >= 0.8, worst is not None), "worst size >= 2^26"))
    for dt in ("f32", "f64"):
        ks = [k for k in big if k[0] == "dot" and k[1] == dt and ("ordered", "reproducible") in by[k]
              and ("clblast", "peer:clblast") in by[k]]
        ratio = max((t(by[k][("ordered", "reproducible")]) / t(by[k][("clblast", "peer:clblast")]) for k in ks),
                    default=None)
        rows.append((f"reduce dot {dt} ordered time <= CLBlast Xdot at 2^26+", fmt(ratio, ".2f") + "x",
                     status(ratio is not None and ratio <= 1.0, ratio is not None), "reprocl / CLBlast, worst size"))
    for op in ("sum", "dot", "nrm2"):
        for dt in ("f32", "f64"):
            ks = [k for k in big if k[0] == op and k[1] == dt and ("ordered", "reproducible") in by[k]
                  and ("exact", "reproducible") in by[k]]
            ratio = max((t(by[k][("exact", "reproducible")]) / t(by[k][("ordered", "reproducible")]) for k in ks),
                        default=None)
            rows.append((f"reduce {op} {dt} exact <= 2x ordered at 2^26+", fmt(ratio, ".2f") + "x",
                         status(ratio is not None and ratio <= 2.0, ratio is not None), "exact / ordered, worst size"))
    st = [r for r in measurements(doc, dev, "stencil") if r["kernel"] == "nine" and r["dtype"] == "f32"
          and r["size"] == "8192^2" and is_stencil_impl(r)]
    br = best(st, lambda r: r["mode"] == "reproducible")
    bn = best(st, lambda r: r["mode"] == "native")
    frac = br.get("copy_fraction") if br else None
    rows.append(("stencil nine f32 8192^2 >= 80% of copy", pct(frac), status(frac is not None and frac >= 0.8, br),
                 f"fastest reproducible: {br['variant']}" if br else ""))
    ratio = t(br) / t(bn) if br and bn else None
    rows.append(("stencil nine f32 8192^2 <= 1.10x native", fmt(ratio) + "x",
                 status(ratio is not None and ratio <= 1.10, ratio is not None),
                 f"fastest of each: {br['variant']} / {bn['variant']}" if br and bn else ""))
    sp = [r for r in measurements(doc, dev, "spmv") if r["dtype"] == "f64" and r["size"].startswith("poisson3d")]
    br = best(sp, lambda r: r["mode"] == "reproducible" and r["variant"].startswith("ordered/"))
    pv = best(sp, lambda r: r["mode"] == "peer:viennacl")
    frac = br.get("copy_fraction") if br else None
    label = br["size"] if br else "poisson3d"
    rows.append((f"spmv f64 {label} ordered >= 60% of copy", pct(frac), status(frac is not None and frac >= 0.6, br),
                 f"fastest reproducible: {br['variant']}" if br else ""))
    ratio = t(br) / t(pv) if br and pv else None
    rows.append((f"spmv f64 {label} time <= ViennaCL", fmt(ratio) + "x",
                 status(ratio is not None and ratio <= 1.0, ratio is not None), "reprocl / ViennaCL"))
    md = defaultdict(dict)
    for r in measurements(doc, dev, "md"):
        md[(r["variant"], r["dtype"], r["n"])][r["mode"]] = r
    for path in sorted({k[0] for k in md}):
        for dt in ("f32", "f64"):
            ks = [k for k in md if k[0] == path and k[1] == dt and {"reproducible", "native"} <= md[k].keys()]
            ratio = max((t(md[k]["reproducible"]) / t(md[k]["native"]) for k in ks), default=None)
            if ratio is not None:
                rows.append((f"md {path} {dt} time per step <= 1.10x native", fmt(ratio) + "x",
                             status(ratio <= 1.10), "worst size"))
    if not md:
        rows.append(("md time per step <= 1.10x native", "–", "not measured", "no md records in this run"))
    return rows


def fit_fixed_cost(rows):
    """Least-squares fit time = t0 + bytes / bw over the rows (the largest sizes of one case): the fixed
    cost per call (launches, synchronisation, allocations) and the streaming bandwidth. None if < 2."""
    pts = [(r["bytes"], t(r)) for r in rows]
    if len(pts) < 2:
        return None
    mx = sum(b for b, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((b - mx) ** 2 for b, _ in pts)
    if sxx <= 0:
        return None
    slope = sum((b - mx) * (y - my) for b, y in pts) / sxx
    if slope <= 0:
        return None
    return my - slope * mx, 1.0 / slope / 1e9  # seconds, GB/s


def fixed_cost_rows(doc, dev, copy, min_n=2 ** 24):
    g = defaultdict(list)
    for r in measurements(doc, dev, "reduce"):
        if r["n"] >= min_n:
            g[(r["kernel"], r["variant"], r["mode"], r["dtype"])].append(r)
    out = []
    for key in sorted(g):
        f = fit_fixed_cost(g[key])
        if f:
            sizes = sorted(g[key], key=lambda r: r["n"])
            out.append(key + (f"{sizes[0]['size']}..{sizes[-1]['size']}", fmt(f[0] * 1e6, ".1f"), fmt(f[1], ".0f"),
                              pct(f[1] / copy) if copy else "–"))
    return out


def peer_rows(doc, dev):
    """reprocl (reproducible, fastest configuration) against each peer on the same case."""
    out = []
    rs = list(measurements(doc, dev))
    cases = defaultdict(list)
    for r in rs:
        variant = r["variant"] if r["family"] == "cg" else ""  # CG: plain and Jacobi are separate cases
        cases[(r["family"], r["kernel"], r["dtype"], r["size"], variant)].append(r)
    for (fam, kern, dt, size, _), group in sorted(cases.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2],
                                                                              kv[1][0].get("n", 0))):
        for peer in sorted({r["mode"] for r in group if r["mode"].startswith("peer:")}):
            p = best(group, lambda r: r["mode"] == peer)
            if fam == "reduce":
                variants = ("ordered", "blas1")
            elif fam == "cg":
                variants = (p["variant"],)
            else:
                variants = None
            repro = best(group, lambda r: r["mode"] == "reproducible"
                         and (variants is None or r["variant"] in variants)
                         and (fam != "spmv" or r["variant"].startswith("ordered/")))
            if not repro:
                continue
            what = f"{kern} {p['variant']}" if fam == "cg" else kern
            out.append((fam, what, dt, size, repro, p))
    return out


# ---- tables -------------------------------------------------------------------------------------------
NUMERIC = re.compile(r"^(–|–x|-?[0-9.]+(e[-+]?[0-9]+)?[%x]?)$")


def table(head, rows):
    """A Markdown table; columns whose cells are all numbers (or –) are right-aligned."""
    right = [bool(rows) and all(NUMERIC.match(str(row[i])) for row in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---:" if r else "---" for r in right) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def family_tables(doc, dev, family=None):
    out = []
    fams = [f for f in ("reduce", "stencil", "spmv", "cg", "md") if family in (None, f)]
    for fam in fams:
        rs = list(measurements(doc, dev, fam))
        if not rs:
            continue
        rows = []
        if fam == "reduce":
            g = defaultdict(dict)
            for r in rs:
                g[(r["kernel"], r["dtype"], r["n"], r["size"])][(r["variant"], r["mode"])] = r
            for (k, dt, n, size) in sorted(g, key=lambda x: (x[0], x[1], x[2])):
                c = g[(k, dt, n, size)]
                o, on = c.get(("ordered", "reproducible")) or c.get(("blas1", "reproducible")), \
                    c.get(("ordered", "native")) or c.get(("blas1", "native"))
                e = c.get(("exact", "reproducible"))
                p = c.get(("clblast", "peer:clblast"))
                if not o and not p:
                    continue
                rows.append((k, dt, size, fmt(t(o) * 1e3, ".3f") if o else "–", fmt(o["gbps"], ".1f") if o else "–",
                             pct(o.get("copy_fraction")) if o else "–", fmt(t(o) / t(on)) if o and on else "–",
                             fmt(t(e) / t(o)) if e and o else "–", fmt(p["gbps"], ".1f") if p else "–",
                             fmt(t(o) / t(p)) if o and p else "–"))
            out.append(("Reductions (ordered; axpy: reprocl's axpy)", table(
                ["kernel", "dtype", "n", "reproducible ms", "GB/s", "of copy", "repro/native x", "exact/ordered x",
                 "CLBlast GB/s", "repro/CLBlast x"], rows)))
        elif fam == "stencil":
            g = defaultdict(dict)
            for r in rs:
                v = "tiled (best shape)" if r["variant"].startswith("tiled-") else r["variant"]
                key = (r["kernel"], r["dtype"], r["n"], r["size"], v)
                if r["mode"] not in g[key] or t(r) < t(g[key][r["mode"]]):
                    g[key][r["mode"]] = r
            for key in sorted(g, key=lambda x: (x[0], x[1], x[2], x[4])):
                c = g[key]
                o, on = c.get("reproducible"), c.get("native")
                if not o:
                    continue
                rows.append((key[0], key[1], key[3], key[4], fmt(t(o) * 1e3, ".3f"),
                             fmt(o["gbps"], ".1f"), fmt(o["gflops"], ".1f"), pct(o.get("copy_fraction")),
                             fmt(t(o) / t(on)) if on else "–"))
            out.append(("Stencils", table(["kernel", "dtype", "grid", "variant", "ms per iteration", "GB/s",
                                           "GFLOP/s", "of copy", "repro/native x"], rows)))
        elif fam == "spmv":
            g = defaultdict(list)
            for r in rs:
                g[(r["dtype"], r["n"], r["size"])].append(r)
            for key in sorted(g):
                c = g[key]
                o = best(c, lambda r: r["mode"] == "reproducible" and r["variant"].startswith("ordered/"))
                e = best(c, lambda r: r["mode"] == "reproducible" and r["variant"].startswith("exact/"))
                nat = best(c, lambda r: r["mode"] == "native")
                p = best(c, lambda r: r["mode"] == "peer:viennacl")
                if not o:
                    continue
                rows.append((key[2], key[0], int(key[1]), o["variant"].split("/", 1)[1], fmt(o["gbps"], ".1f"),
                             pct(o.get("copy_fraction")), fmt(t(o) / t(nat)) if nat else "–",
                             fmt(t(e) / t(o)) if e else "–", fmt(p["gbps"], ".1f") if p else "–",
                             fmt(t(o) / t(p)) if p else "–"))
            out.append(("SpMV (fastest configuration of each kind)", table(
                ["matrix", "dtype", "nnz", "fastest ordered", "GB/s", "of copy", "repro/native x", "exact/ordered x",
                 "ViennaCL GB/s", "repro/ViennaCL x"], rows)))
        elif fam == "cg":
            g = defaultdict(dict)
            for r in rs:
                g[(r["size"], r["variant"], r["dtype"])][r["mode"]] = r
            for key in sorted(g):
                c = g[key]
                o, on, p = c.get("reproducible"), c.get("native"), c.get("peer:viennacl")
                if not o:
                    continue
                rows.append((key[0], key[1], key[2], fmt(t(o) * 1e3, ".3f"), fmt(o["gbps"], ".1f"),
                             pct(o.get("copy_fraction")), fmt(t(o) / t(on)) if on else "–",
                             fmt(t(p) * 1e3, ".3f") if p else "–", fmt(t(o) / t(p)) if p else "–"))
            out.append(("CG (time per iteration)", table(
                ["matrix", "variant", "dtype", "reproducible ms", "GB/s", "of copy", "repro/native x", "ViennaCL ms",
                 "repro/ViennaCL x"], rows)))
        elif fam == "md":
            g = defaultdict(dict)
            for r in rs:
                g[(r["variant"], r["dtype"], r["n"], r["size"])][r["mode"]] = r
            for key in sorted(g):
                c = g[key]
                o, on = c.get("reproducible"), c.get("native")
                if not o:
                    continue
                rows.append((key[0], key[1], key[3], fmt(o["time_per_step_s"] * 1e3, ".3f"),
                             fmt(o["pair_evals_per_s"] / 1e9, ".2f"), fmt(o.get("pair_evals_per_s_wall", 0) / 1e9, ".2f"),
                             fmt(on["time_per_step_s"] * 1e3, ".3f") if on else "–",
                             fmt(t(o) / t(on)) if on else "–"))
            out.append(("MD (Lennard-Jones, time per velocity-Verlet step)", table(
                ["path", "dtype", "atoms", "reproducible ms/step", "G pair evals/s (force kernel)",
                 "G pair evals/s (wall)", "native ms/step", "repro/native x"], rows)))
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    if argv[1] == "--validate":
        bad = 0
        for path in argv[2:]:
            errs = validate(load(path))
            for e in errs[:50]:
                print(f"{path}: {e}")
            bad += len(errs)
        return 1 if bad else 0
    doc = load(argv[1])
    family = argv[argv.index("--family") + 1] if "--family" in argv else None
    devsel = argv[argv.index("--device") + 1] if "--device" in argv else None
    only_targets = "--targets-only" in argv
    for d in doc["devices"]:
        dev = d["name"]
        if devsel and devsel.lower() not in (dev + " " + short_device(dev)).lower():
            continue
        launch = d.get("launch_seconds")
        extra = f"; one small kernel's launch + finish {launch * 1e6:.1f} µs" if launch else ""
        print(f"\n### {short_device(dev)}: copy bandwidth {d.get('copy_gbps', 0):.1f} GB/s (read + write){extra}\n")
        if family is None:
            print("Targets, measured in this run:\n")
            print(table(["target", "measured", "status", "how"], targets(doc, dev)))
            prs = peer_rows(doc, dev)
            if prs:
                print("\nreprocl (reproducible, fastest configuration) against the peers on the same case:\n")
                print(table(["family", "kernel", "dtype", "size", "reprocl GB/s", "peer", "peer GB/s",
                             "reprocl/peer time x"],
                            [(f, k, dt, s, fmt(r["gbps"], ".1f"), p["mode"][5:], fmt(p["gbps"], ".1f"),
                              fmt(t(r) / t(p))) for f, k, dt, s, r, p in prs]))
        fc = fixed_cost_rows(doc, dev, d.get("copy_gbps", 0)) if family in (None, "reduce") else []
        if fc:
            print("\nReductions: time = fixed cost + bytes / streaming bandwidth, fitted over 2^24 and up "
                  "(what a call pays whatever its size, and the rate it then streams at):\n")
            print(table(["kernel", "variant", "mode", "dtype", "sizes", "fixed µs", "streaming GB/s", "of copy"], fc))
        if only_targets:
            continue
        for title, tab in family_tables(doc, dev, family):
            print(f"\n{title}:\n")
            print(tab)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
