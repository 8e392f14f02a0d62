#!/usr/bin/env python3
"""PNG charts from a `reprocl bench` JSON file (matplotlib; Debian: python3-matplotlib).

usage: scripts/plot_bench.py BENCH.json OUTDIR [--device SUBSTRING]

Per device (file names start with a short device slug):
  SLUG-reduce-f32.png, -f64   throughput (GB/s) vs vector length per kernel: ordered and exact,
                              reproducible and native, CLBlast; the copy bandwidth as a line
  SLUG-stencil.png            GB/s vs grid points per kernel and dtype: plain, tiled (and the best tile
                              shape of the sweep), task; reproducible and native
  SLUG-spmv-f32.png, -f64     GB/s per matrix (by size): fastest ordered and exact reproducible
                              configuration, fastest native, ViennaCL
  SLUG-cg.png                 CG GB/s (effective, per iteration): reproducible, native, ViennaCL
  SLUG-md.png                 pair evaluations per second vs atoms per force path (when measured)
  SLUG-md-steps.png           MD steps per second vs atoms: reprocl per force path (reproducible and
                              native) and the OpenMM peer per platform, f32 (OpenMM single) and f64
  SLUG-copy-fraction.png      the fraction of copy bandwidth of every kernel at its largest size,
                              reproducible beside native and the peers
Prints the files written. The JSON is validated first (scripts/bench_table.py --validate).
"""
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_table as bt  # noqa: E402

try:
    import matplotlib
except ImportError as e:  # the charts need it, nothing else does: say what to install, no traceback
    if getattr(e, "name", None) == "matplotlib":
        print("plot_bench.py: matplotlib is not installed (Debian: python3-matplotlib)", file=sys.stderr)
    else:
        print(f"plot_bench.py: matplotlib cannot be imported: {e}", file=sys.stderr)
    sys.exit(3)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {  # (mode kind) -> line style; colours per series label
    "reproducible": dict(linestyle="-", marker="o"),
    "native": dict(linestyle="--", marker="s", alpha=0.8),
    "peer": dict(linestyle=":", marker="^"),
}
COLOURS = {"ordered": "C0", "exact": "C1", "blas1": "C0", "clblast": "C3", "viennacl": "C3", "plain": "C0",
           "tiled": "C1", "tiled (best shape)": "C2", "task": "C4", "gather": "C0", "symmetric": "C1",
           "allpairs": "C2", "task-md": "C4", "openmm-opencl": "C3", "openmm-cuda": "C6", "openmm-hip": "C6",
           "openmm-cpu": "C5", "openmm-reference": "C7"}


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", bt.short_device(name).lower()).strip("-")[:40]


def kind(mode):
    return "peer" if mode.startswith("peer:") else mode


def copy_line(ax, gbps):
    if gbps and gbps > 0:
        ax.axhline(gbps, color="grey", linewidth=1, linestyle="-.", label=f"copy {gbps:.0f} GB/s")


def series_plot(ax, rows, label_of, x_of, y_of):
    """One line per label, points sorted by x (the median time's throughput)."""
    groups = defaultdict(list)
    for r in rows:
        groups[label_of(r)].append(r)
    for label, rs in sorted(groups.items()):
        rs.sort(key=x_of)
        variant = label.split(" ", 1)[0]
        mode = rs[0]["mode"]
        colour = COLOURS.get(variant, COLOURS.get(variant.rsplit("-", 1)[0]))  # openmm-PLATFORM-PRECISION
        ax.plot([x_of(r) for r in rs], [y_of(r) for r in rs], label=label, color=colour, **STYLE[kind(mode)])


def finish(fig, path, written):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)


def plot_reduce(doc, dev, copy, out, written):
    rs = list(bt.measurements(doc, dev, "reduce"))
    for dt in ("f32", "f64"):
        d = [r for r in rs if r["dtype"] == dt]
        if not d:
            continue
        kernels = [k for k in ("sum", "dot", "nrm2", "axpy", "asum") if any(r["kernel"] == k for r in d)]
        cols = min(3, len(kernels))
        nrow = (len(kernels) + cols - 1) // cols
        fig, axes = plt.subplots(nrow, cols, figsize=(4.6 * cols, 3.6 * nrow), squeeze=False)
        for j in range(len(kernels), nrow * cols):
            axes[j // cols][j % cols].axis("off")
        for ax, k in zip([a for row in axes for a in row], kernels):
            series_plot(ax, [r for r in d if r["kernel"] == k],
                        lambda r: r["variant"] + " " + (r["mode"][5:] if r["mode"].startswith("peer:") else r["mode"])
                        if not r["mode"].startswith("peer:") else r["mode"][5:],
                        lambda r: r["n"], lambda r: r["gbps"])
            copy_line(ax, copy)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{k} {dt}")
            ax.set_xlabel("elements")
            ax.set_ylabel("GB/s")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"Reductions on {bt.short_device(dev)}", fontsize=10)
        finish(fig, os.path.join(out, f"{slug(dev)}-reduce-{dt}.png"), written)


def plot_stencil(doc, dev, copy, out, written):
    rs = list(bt.measurements(doc, dev, "stencil"))
    if not rs:
        return
    # the sweep's shapes collapse into their fastest per size and mode
    best = {}
    for r in rs:
        v = "tiled (best shape)" if r["variant"].startswith("tiled-") else r["variant"]
        key = (r["kernel"], r["dtype"], r["n"], v, r["mode"])
        if key not in best or bt.t(r) < bt.t(best[key]):
            best[key] = dict(r, variant=v)
    rows = list(best.values())
    panels = sorted({(r["kernel"], r["dtype"]) for r in rows})
    cols = min(3, len(panels))
    nrow = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrow, cols, figsize=(4.4 * cols, 3.6 * nrow), squeeze=False)
    for i, (k, dt) in enumerate(panels):
        ax = axes[i // cols][i % cols]
        series_plot(ax, [r for r in rows if r["kernel"] == k and r["dtype"] == dt],
                    lambda r: f"{r['variant']} {r['mode']}", lambda r: r["n"], lambda r: r["gbps"])
        copy_line(ax, copy)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{k} {dt}")
        ax.set_xlabel("grid points")
        ax.set_ylabel("GB/s (1 read + 1 write per point)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    for j in range(len(panels), nrow * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(f"Stencils on {bt.short_device(dev)}", fontsize=10)
    finish(fig, os.path.join(out, f"{slug(dev)}-stencil.png"), written)


def bars(ax, cats, series, ylabel):
    """Grouped bars: series = [(label, colour, [value or None per category])]."""
    width = 0.8 / max(1, len(series))
    for i, (label, colour, vals) in enumerate(series):
        xs = [c + (i - (len(series) - 1) / 2) * width for c in range(len(cats))]
        ax.bar([x for x, v in zip(xs, vals) if v is not None], [v for v in vals if v is not None], width,
               label=label, color=colour)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)


def plot_spmv(doc, dev, copy, out, written):
    rs = list(bt.measurements(doc, dev, "spmv"))
    for dt in ("f32", "f64"):
        d = [r for r in rs if r["dtype"] == dt]
        if not d:
            continue
        mats = sorted({(r["n"], r["size"]) for r in d})
        picks = [("reproducible ordered (fastest)", "C0",
                  lambda r: r["mode"] == "reproducible" and r["variant"].startswith("ordered/")),
                 ("reproducible exact (fastest)", "C1",
                  lambda r: r["mode"] == "reproducible" and r["variant"].startswith("exact/")),
                 ("native (fastest)", "C7", lambda r: r["mode"] == "native"),
                 ("ViennaCL", "C3", lambda r: r["mode"] == "peer:viennacl")]
        series = []
        for label, colour, pred in picks:
            vals = []
            for _, m in mats:
                b = bt.best([r for r in d if r["size"] == m], pred)
                vals.append(b["gbps"] if b else None)
            if any(v is not None for v in vals):
                series.append((label, colour, vals))
        fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(mats) + 3), 4.2))
        bars(ax, [f"{m}\n{int(n)} nnz" for n, m in mats], series, "GB/s")
        copy_line(ax, copy)
        ax.legend(fontsize=7)
        ax.set_title(f"SpMV {dt} on {bt.short_device(dev)}", fontsize=10)
        finish(fig, os.path.join(out, f"{slug(dev)}-spmv-{dt}.png"), written)


def plot_cg(doc, dev, copy, out, written):
    rs = list(bt.measurements(doc, dev, "cg"))
    if not rs:
        return
    cats = sorted({(r["size"], r["variant"], r["dtype"]) for r in rs})
    series = []
    for label, colour, mode in (("reproducible", "C0", "reproducible"), ("native", "C7", "native"),
                                ("ViennaCL", "C3", "peer:viennacl")):
        vals = []
        for c in cats:
            b = bt.best([r for r in rs if (r["size"], r["variant"], r["dtype"]) == c], lambda r: r["mode"] == mode)
            vals.append(b["gbps"] if b else None)
        if any(v is not None for v in vals):
            series.append((label, colour, vals))
    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, [" ".join(c) for c in cats], series, "GB/s per iteration (effective)")
    copy_line(ax, copy)
    ax.legend(fontsize=7)
    ax.set_title(f"CG on {bt.short_device(dev)}", fontsize=10)
    finish(fig, os.path.join(out, f"{slug(dev)}-cg.png"), written)


def md_figure(rs, y_of, ylabel, steps, name, suptitle, written):
    """One panel per dtype, one line per force path and mode (and peer platform), against atoms."""
    dts = sorted({r["dtype"] for r in rs})
    fig, axes = plt.subplots(1, len(dts), figsize=((5.5 if steps else 5) * len(dts), 4.2 if steps else 3.8),
                             squeeze=False)
    for ax, dt in zip(axes[0], dts):
        series_plot(ax, [r for r in rs if r["dtype"] == dt], lambda r: f"{r['variant']} {r['mode']}",
                    lambda r: r["n"], y_of)
        if steps:  # steps/s spans decades from 500 atoms to 1M
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"MD {dt} (OpenMM: {'double' if dt == 'f64' else 'single'})")
        else:
            ax.set_xscale("log", base=2)
            ax.set_title(f"MD {dt}")
        ax.set_xlabel("atoms")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both" if steps else "major", alpha=0.3)
        ax.legend(fontsize=6 if steps else 7)
    fig.suptitle(suptitle, fontsize=10)
    finish(fig, name, written)


def plot_md(doc, dev, out, written):
    rs = list(bt.measurements(doc, dev, "md"))
    if rs:
        md_figure(rs, lambda r: r["pair_evals_per_s_wall"] / 1e9 if r.get("pair_evals_per_s_wall")
                  else r["pair_evals_per_s"] / 1e9, "G pair evaluations / s (per step, wall)", False,
                  os.path.join(out, f"{slug(dev)}-md.png"), f"Lennard-Jones MD on {bt.short_device(dev)}", written)


def plot_md_steps(doc, dev, out, written):
    """Steps per second against atoms: what an MD user sees, reprocl beside the OpenMM peer."""
    rs = [r for r in bt.measurements(doc, dev, "md") if r.get("time_per_step_s")]
    if rs:
        md_figure(rs, lambda r: 1.0 / r["time_per_step_s"], "steps / s", True,
                  os.path.join(out, f"{slug(dev)}-md-steps.png"),
                  f"Lennard-Jones MD steps per second on {bt.short_device(dev)}", written)


def plot_copy_fraction(doc, dev, out, written):
    """Every (family, kernel, dtype) at its largest size: fastest reproducible, native and peer."""
    rs = [r for r in bt.measurements(doc, dev) if r.get("copy_fraction") is not None and r["family"] != "md"]
    if not rs:
        return
    largest = {}
    for r in rs:
        if r["family"] == "spmv" and not r["size"].startswith("poisson3d"):
            continue  # SpMV: the 3D Poisson matrix is the headline case (its target is in the issue)
        k = (r["family"], r["kernel"], r["dtype"])
        largest[k] = max(largest.get(k, 0), r["n"])
    cats, vals = [], defaultdict(list)
    for k in sorted(largest):
        group = [r for r in rs if (r["family"], r["kernel"], r["dtype"]) == k and r["n"] == largest[k]]
        if k[0] == "reduce":  # the ordered contract is the one meant to reach the copy bandwidth
            group = [r for r in group if r["variant"] in ("ordered", "blas1") or r["mode"].startswith("peer:")]
        size = group[0]["size"] if group else ""
        cats.append(" ".join(dict.fromkeys((k[0], k[1]))) + f" {k[2]} {size}")
        for kind_, pred in (("reproducible", lambda r: r["mode"] == "reproducible"),
                            ("native", lambda r: r["mode"] == "native"),
                            ("peer", lambda r: r["mode"].startswith("peer:"))):
            b = bt.best(group, pred)
            vals[kind_].append(b["copy_fraction"] if b else None)
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(cats) + 1.5))
    h = 0.27
    for i, (kind_, colour) in enumerate((("reproducible", "C0"), ("native", "C7"), ("peer", "C3"))):
        ys = [c + (i - 1) * h for c in range(len(cats))]
        v = vals[kind_]
        ax.barh([y for y, x in zip(ys, v) if x is not None], [x for x in v if x is not None], h, label=kind_,
                color=colour)
    ax.axvline(1.0, color="grey", linestyle="-.", linewidth=1)
    ax.set_yticks(range(len(cats)))
    ax.set_yticklabels(cats, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("fraction of copy bandwidth (same run; fastest configuration, largest size)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"Fraction of copy bandwidth on {bt.short_device(dev)}", fontsize=10)
    finish(fig, os.path.join(out, f"{slug(dev)}-copy-fraction.png"), written)


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    doc = bt.load(argv[1])
    errs = bt.validate(doc)
    if errs:
        for e in errs[:20]:
            print(f"{argv[1]}: {e}", file=sys.stderr)
        return 1
    out = argv[2]
    os.makedirs(out, exist_ok=True)
    devsel = argv[argv.index("--device") + 1].lower() if "--device" in argv else None
    written = []
    for d in doc["devices"]:
        dev = d["name"]
        if devsel and devsel not in (dev + " " + bt.short_device(dev)).lower():
            continue
        copy = d.get("copy_gbps", 0)
        plot_reduce(doc, dev, copy, out, written)
        plot_stencil(doc, dev, copy, out, written)
        plot_spmv(doc, dev, copy, out, written)
        plot_cg(doc, dev, copy, out, written)
        plot_md(doc, dev, out, written)
        plot_md_steps(doc, dev, out, written)
        plot_copy_fraction(doc, dev, out, written)
    for w in written:
        print(w)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
