"""MD from Python on every device: the same trajectory as the host reference and the CLI."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import reprocl
from conftest import DATA, cli_json, supports
from test_kernels import ctx_index


def test_md_lattice_matches_reference_and_cli(ctx: reprocl.Context) -> None:
    if not supports(ctx, "md", "float32"):
        pytest.skip(ctx.support["md"]["float32"].reason)
    sys_ = reprocl.md.System.lattice("fcc", 3, 0.8442, 1.44, seed=87287)
    seen: list[reprocl.md.Thermo] = []
    with reprocl.md.Simulation(sys_, dtype="float32", ctx=ctx) as sim, \
         reprocl.md.Simulation(sys_, dtype="float32", host=True) as ref:
        f0, fixed0 = sim.forces()
        assert fixed0.tobytes() == ref.forces()[1].tobytes()
        end = sim.run(20, 0.005, thermo_every=5, callback=seen.append)
        ref.run(20, 0.005)
        assert [t.step for t in seen] == [0, 5, 10, 15, 20] and end == seen[-1]
        # the host reference keeps no neighbour list: every other field is the same bits
        assert replace(end, neighbor_builds=0) == ref.thermo()
        assert sim.state()[0].tobytes() == ref.state()[0].tobytes()
        assert sim.state()[1].tobytes() == ref.state()[1].tobytes()
        j = cli_json("md", "--lattice", "fcc", "--cells", "3", "--density", "0.8442", "--temp", "1.44",
                     "--steps", "20", "--dtype", "f32", "--device", str(ctx_index(ctx)))
        assert sim.state_digest() == j["devices"][0]["state_sha256"]


def test_md_lammps_file_and_callback_stop(ctx: reprocl.Context) -> None:
    if not supports(ctx, "md", "float32"):
        pytest.skip(ctx.support["md"]["float32"].reason)
    sys_, lj = reprocl.md.System.read(DATA / "md" / "melt_f32.data")
    assert sys_.positions.shape == (sys_.natoms, 3) and set(np.unique(sys_.types)) <= set(range(1, 9))
    with reprocl.md.Simulation(sys_, lj, "float32", ctx=ctx) as sim:
        sim.run(10, 0.005, thermo_every=1, callback=lambda t: t.step >= 3)
        assert sim.step == 3
        with pytest.raises(ZeroDivisionError):
            sim.run(5, 0.005, thermo_every=1, callback=lambda t: 1 / 0)
    with pytest.raises(reprocl.ParseError):
        reprocl.md.System.read(DATA / "matrices" / "LFAT5.mtx")
