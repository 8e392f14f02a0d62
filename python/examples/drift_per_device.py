#!/usr/bin/env python3
"""Runs the same MD trajectory and the same stencil on every OpenCL device and plots, per device, the
energy drift of the trajectory (top: the curves lie on top of each other, bit for bit, with the digest of
each device's final state in the legend) and the difference image of the stencil built with the vendor's
native options against the reproducible build (bottom: where native mode changes bits on that device).

    python3 drift_per_device.py [OUT.png] [--steps N]
"""

from __future__ import annotations

import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import reprocl  # noqa: E402


def md_energy(dev: reprocl.Device, steps: int) -> tuple[list[int], list[float], str]:
    """etotal per atom every 10 steps of an fcc Lennard-Jones liquid (256 atoms, f32) and the final
    state digest."""
    system = reprocl.md.System.lattice("fcc", 4, 0.8442, 3.0, seed=87287)
    rows: list[reprocl.md.Thermo] = []
    with reprocl.Context(dev) as ctx, reprocl.md.Simulation(system, dtype="float32", ctx=ctx) as sim:
        sim.run(steps, 0.005, thermo_every=10, callback=rows.append)
        return [t.step for t in rows], [t.etotal / t.natoms for t in rows], sim.state_digest()


def stencil_native_diff(dev: reprocl.Device) -> tuple[np.ndarray, int]:
    """Native-minus-reproducible of 50 SHOC stencil iterations on a 128x96 random grid, and how many
    points differ."""
    g = reprocl.grid(128, 96, "random", seed=42)
    with reprocl.Context(dev) as r, reprocl.Context(dev, mode="native") as n:
        a, b = r.stencil(g, 50), n.stencil(g, 50)
    assert a.tobytes() == reprocl.reference.stencil(g, 50).tobytes()  # the reproducible build: the contract
    return b.astype(np.float64) - a.astype(np.float64), int(np.count_nonzero(a.view(np.uint32) != b.view(np.uint32)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="drift_per_device.png")
    ap.add_argument("--steps", type=int, default=1000)
    args = ap.parse_args()
    devs = [d for d in reprocl.devices() if d.support["md"]["float32"].support != "unsupported"]
    fig, axes = plt.subplots(2, max(1, len(devs)), figsize=(4.2 * max(1, len(devs)), 7.5), squeeze=False)
    top = fig.add_subplot(2, 1, 1)
    for ax in axes[0]:
        ax.remove()
    styles = ["-", "--", ":", "-."]
    for i, dev in enumerate(devs):
        steps, e, state = md_energy(dev, args.steps)
        drift = np.array(e) - e[0]
        label = f"{dev.platform_name[:28]}: state {state[:12]}"
        top.plot(steps, drift, styles[i % 4], lw=2.5 - 0.6 * i, label=label)
        print(f"{dev.platform_name}: {dev.name}\n  md  final etotal/N {e[-1]!r}  state sha256 {state}")
        diff, ndiff = stencil_native_diff(dev)
        lim = float(np.abs(diff).max()) or 1.0
        ax = axes[1][i]
        im = ax.imshow(diff, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(f"{dev.platform_name[:24]}\nnative - reproducible: {ndiff} of {diff.size} differ", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, shrink=0.8)
        print(f"  stencil native build: {ndiff} of {diff.size} points differ, max |diff| {np.abs(diff).max():.3g}")
    top.set_xlabel("step")
    top.set_ylabel("E_total/N - E_total/N at step 0")
    top.set_title("LJ fcc, 256 atoms, f32, dt 0.005: energy drift per device (identical bits)")
    top.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
