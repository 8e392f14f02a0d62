"""Every kernel on every device: the same bits as the library's host reference, and the same digests as
the reprocl CLI on the same inputs."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import reprocl
from conftest import DATA, cli_json, supports

DTYPES = ["float32", "float64"]
CLI_DT = {"float32": "f32", "float64": "f64"}


def need(ctx: reprocl.Context, family: str, dtype: str) -> None:
    if not supports(ctx, family, dtype):
        pytest.skip(f"{family} {dtype} unsupported here: {ctx.support[family][dtype].reason}")


def same_bits(a: object, b: object) -> None:
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), f"{a!r} != {b!r}"


def test_devices_and_profiles() -> None:
    devs = reprocl.devices()
    assert [d.index for d in devs] == list(range(len(devs)))
    for d in devs:
        assert len(d.profile["fingerprint"]) == 64 and d.profile["device_name"] == d.name
        assert set(d.support) == {"reduce", "stencil", "spmv", "md"}
        for fam in d.support.values():
            for s in fam.values():
                assert s.support in ("native", "emulated", "unsupported")
                assert (s.reason != "") == (s.support != "native")


def test_digest_is_sha256() -> None:
    x = reprocl.generate(1000, "wide", seed=7, dtype="float64")
    assert reprocl.digest(x) == hashlib.sha256(x.tobytes()).hexdigest()
    assert reprocl.digest(x[3]) == hashlib.sha256(x[3:4].tobytes()).hexdigest()
    assert reprocl.digest(b"abc") == hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["ordered", "exact"])
@pytest.mark.parametrize("op", ["sum", "dot", "nrm2"])
def test_reduce(ctx: reprocl.Context, op: str, mode: str, dtype: str) -> None:
    need(ctx, "reduce", dtype)
    x = reprocl.generate(100_003, "cancel" if op == "sum" else "wide", seed=3, dtype=dtype)
    y = reprocl.generate(100_003, "uniform", seed=4, dtype=dtype)
    args = (x, y) if op == "dot" else (x,)
    ref = getattr(reprocl.reference, op)(*args, mode)
    got = getattr(ctx, op)(*args, mode)
    assert got.dtype == np.dtype(dtype)
    same_bits(got, ref)
    same_bits(getattr(ctx, op)(*args, mode, variant="task"), ref)
    same_bits(getattr(ctx, op)(*args, mode, local_size=32, num_groups=3), ref)


def test_reduce_matches_cli(ctx: reprocl.Context) -> None:
    n = 50_000
    for op, dtype in (("dot", "float32"), ("sum", "float64")):
        if not supports(ctx, "reduce", dtype):
            continue
        x = reprocl.generate(n, "uniform", seed=5, dtype=dtype)
        y = reprocl.generate(n, "uniform", seed=6, dtype=dtype)
        r = ctx.dot(x, y) if op == "dot" else ctx.sum(x)
        j = cli_json("run", "reduce", "--op", op, "--dtype", CLI_DT[dtype], "--mode", "ordered", "--n", str(n),
                     "--seed", "5", "--device", str(ctx_index(ctx)))
        assert reprocl.digest(r) == j["devices"][0]["sha256"]


def ctx_index(ctx: reprocl.Context) -> int:
    fp = ctx.profile["fingerprint"]
    return next(d.index for d in reprocl.devices() if d.profile["fingerprint"] == fp)


@pytest.mark.parametrize("dtype", DTYPES)
def test_axpy_scal(ctx: reprocl.Context, dtype: str) -> None:
    need(ctx, "reduce", dtype)
    x = reprocl.generate(4097, "wide", seed=8, dtype=dtype)
    y = reprocl.generate(4097, "wide", seed=9, dtype=dtype)
    yr = reprocl.reference.axpy(0.3, x, y.copy())
    yd = ctx.axpy(0.3, x, y.copy())
    same_bits(yd, yr)
    same_bits(ctx.scal(-1.7, x.copy()), reprocl.reference.scal(-1.7, x.copy()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_stencil(ctx: reprocl.Context, dtype: str) -> None:
    need(ctx, "stencil", dtype)
    g = reprocl.grid(37, 29, "random", seed=11, dtype=dtype)
    ref = reprocl.reference.stencil(g, 4)
    for variant in ("auto", "plain", "tiled", "task"):
        same_bits(ctx.stencil(g, 4, variant=variant), ref)
    w = np.linspace(-1, 1, 25)
    same_bits(ctx.stencil(g, 2, kind="general", weights=w, boundary="periodic"),
              reprocl.reference.stencil(g, 2, kind="general", weights=w, boundary="periodic"))


def test_stencil_matches_cli(ctx: reprocl.Context) -> None:
    need(ctx, "stencil", "float32")
    out = ctx.stencil(reprocl.grid(40, 30, "shoc", dtype="float32"), 3)
    j = cli_json("stencil", "--kind", "nine", "--grid", "40x30", "--iters", "3", "--dtype", "f32", "--device",
                 str(ctx_index(ctx)))
    assert reprocl.digest(out) == j["devices"][0]["sha256"] == j["reference"]["sha256"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sor(ctx: reprocl.Context, dtype: str) -> None:
    need(ctx, "stencil", dtype)
    g = reprocl.grid(24, 18, "random", seed=2, dtype=dtype)
    rhs = reprocl.grid(24, 18, "point", dtype=dtype)
    gd, rd = ctx.sor(g, 5, rhs=rhs)
    gr, rr = reprocl.reference.sor(g, 5, rhs=rhs)
    same_bits(gd, gr)
    same_bits(rd, rr)
    assert g.tobytes() == reprocl.grid(24, 18, "random", seed=2, dtype=dtype).tobytes()  # input untouched


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("contract", ["ordered", "exact"])
def test_spmv_scipy(ctx: reprocl.Context, dtype: str, contract: str) -> None:
    need(ctx, "spmv", dtype)
    sp = pytest.importorskip("scipy.sparse")
    A = sp.random(300, 200, density=0.05, format="csr", dtype=dtype, random_state=1)
    x = reprocl.generate(200, "wide", seed=1, dtype=dtype)
    y = reprocl.generate(300, "uniform", seed=2, dtype=dtype)
    ref = reprocl.reference.spmv(A, x, y, alpha=2.0, beta=-0.5, contract=contract)
    for variant in ("auto", "scalar", "vector", "adaptive", "sell", "task"):
        same_bits(reprocl.spmv(A, x, y, alpha=2.0, beta=-0.5, contract=contract, variant=variant, ctx=ctx), ref)
    if contract == "ordered":  # ordered = plain sequential C: equals scipy's own row sums only in order
        m = reprocl.Matrix.from_scipy(A)
        assert m.to_scipy().nnz == A.nnz and m.digest() == reprocl.Matrix.from_scipy(m.to_scipy()).digest()


def test_spmv_file_matches_cli(ctx: reprocl.Context) -> None:
    need(ctx, "spmv", "float32")
    path = DATA / "matrices" / "pores_1.mtx"
    m = reprocl.Matrix.read(path, "float32")
    y = reprocl.spmv(path, np.ones(m.shape[1], np.float32), ctx=ctx)
    j = cli_json("spmv", "--matrix", str(path), "--dtype", "f32", "--device", str(ctx_index(ctx)))
    assert reprocl.digest(y) == j["devices"][0]["sha256"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_cg(ctx: reprocl.Context, dtype: str) -> None:
    need(ctx, "spmv", dtype)
    A = reprocl.Matrix.generate("poisson2d:12", dtype)
    b = np.ones(144, dtype)
    r = reprocl.cg(A, b, tol=1e-6, ctx=ctx)
    ref = reprocl.reference.cg(A, b, tol=1e-6)
    assert r.converged and r.iterations == ref.iterations == len(r.history) - 1
    same_bits(r.x, ref.x)
    same_bits(r.history, ref.history)
    assert r.history_sha256 == ref.history_sha256 == reprocl.digest(r.history)
    sp = pytest.importorskip("scipy.sparse")
    same_bits(reprocl.cg(A.to_scipy(), b, tol=1e-6, ctx=ctx).x, ref.x)
    assert isinstance(A.to_scipy(), sp.csr_matrix)


def test_cg_matches_cli(ctx: reprocl.Context) -> None:
    need(ctx, "spmv", "float32")
    r = reprocl.cg(reprocl.Matrix.generate("poisson2d:16", "float32"), np.ones(256, np.float32), ctx=ctx)
    j = cli_json("cg", "--gen", "poisson2d:16", "--dtype", "f32", "--device", str(ctx_index(ctx)))
    d = j["devices"][0]
    assert r.history_sha256 == d["history_sha256"] and reprocl.digest(r.x) == d["solution_sha256"]
