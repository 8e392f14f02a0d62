"""Errors: wrong inputs are TypeError/ValueError before any C call; failed C calls raise reprocl.Error
subclasses carrying the library's message."""

from __future__ import annotations

import numpy as np
import pytest

import reprocl
from conftest import DATA, supports


@pytest.mark.parametrize(
    "bad, exc",
    [
        ([1.0, 2.0], TypeError),  # a list: no implicit conversion
        (np.arange(4, dtype=np.int32), TypeError),
        (np.zeros(4, dtype=np.float16), TypeError),
        (np.zeros(4, dtype=np.complex64), TypeError),
        (np.zeros(4, dtype=">f8"), TypeError),  # non-native byte order
        (np.zeros((2, 2), dtype=np.float32), ValueError),
        (np.zeros(8, dtype=np.float32)[::2], ValueError),  # not contiguous
    ],
)
def test_bad_vectors(ctx: reprocl.Context, bad: object, exc: type) -> None:
    with pytest.raises(exc):
        ctx.sum(bad)  # type: ignore[arg-type]


def test_mixed_dtypes_and_sizes(ctx: reprocl.Context) -> None:
    x32, x64 = np.ones(5, np.float32), np.ones(5, np.float64)
    with pytest.raises(TypeError, match="expected float32"):
        ctx.dot(x32, x64)
    with pytest.raises(ValueError, match="elements"):
        ctx.dot(x32, np.ones(6, np.float32))
    with pytest.raises(ValueError, match="read-only"):
        x32.flags.writeable = False
        ctx.scal(2.0, x32)
    with pytest.raises(ValueError, match="overlap"):
        y = np.ones(5, np.float32)
        ctx.axpy(1.0, y, y)
    with pytest.raises(TypeError):
        ctx.axpy(1 + 2j, np.ones(3, np.float32), np.ones(3, np.float32))  # type: ignore[arg-type]


def test_bad_choices(ctx: reprocl.Context) -> None:
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="mode"):
        ctx.sum(x, mode="fast")
    with pytest.raises(reprocl.InvalidArgumentError, match="boundary"):
        ctx.stencil(np.ones((4, 4), np.float32), boundary="mirror")
    with pytest.raises(reprocl.InvalidArgumentError) as ei:
        ctx.sum(x, local_size=3)  # not a power of two: refused by the library
    assert ei.value.status == -1 and ei.value.status_name == "RCL_ERR_INVALID_ARG" and ei.value.message


def test_device_not_found() -> None:
    with pytest.raises(reprocl.NotFoundError, match="no-such-device") as ei:
        reprocl.Context(device="no-such-device")
    assert isinstance(ei.value, reprocl.Error) and "no-such-device" in ei.value.message
    with pytest.raises(ValueError):
        reprocl.Context(device=-1)
    with pytest.raises(ValueError, match="mode"):
        reprocl.Context(mode="fast")


def test_closed_context() -> None:
    c = reprocl.Context()
    c.close()
    with pytest.raises(ValueError, match="closed"):
        c.sum(np.ones(3, np.float32))


def test_unsupported_fp64(ctx: reprocl.Context) -> None:
    if supports(ctx, "reduce", "float64"):
        pytest.skip("this device runs fp64")
    with pytest.raises(reprocl.UnsupportedError, match="fp64"):
        ctx.sum(np.ones(3, np.float64))


def test_file_errors(tmp_path: object) -> None:
    with pytest.raises(reprocl.NotFoundError, match="does-not-exist.mtx: cannot open"):
        reprocl.Matrix.read(DATA / "matrices" / "does-not-exist.mtx")
    with pytest.raises(reprocl.ParseError, match=r"wrong\.mtx:\d+"):
        reprocl.Matrix.read(DATA / "matrices" / "wrong.mtx")


def test_sparse_inputs() -> None:
    sp = pytest.importorskip("scipy.sparse")
    A = sp.identity(4, format="coo", dtype=np.float64)
    with pytest.raises(TypeError, match="tocsr"):
        reprocl.reference.spmv(A, np.ones(4))
    with pytest.raises(TypeError, match="float32 or float64"):
        reprocl.reference.spmv(sp.identity(4, format="csr", dtype=np.int64), np.ones(4))
    with pytest.raises(TypeError, match="no implicit casts"):
        reprocl.reference.spmv(sp.identity(4, format="csr", dtype=np.float64), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="columns"):
        reprocl.reference.spmv(sp.identity(4, format="csr", dtype=np.float64), np.ones(5))


def test_cg_no_convergence_carries_result(ctx: reprocl.Context) -> None:
    A = reprocl.Matrix.generate("poisson2d:8", "float32")
    with pytest.raises(reprocl.NoConvergenceError) as ei:
        ctx_cg = reprocl.cg(A, np.ones(64, np.float32), max_iterations=2, ctx=ctx)
        del ctx_cg
    r = ei.value.detail
    assert isinstance(r, reprocl.CGResult) and r.iterations == 2 and len(r.history) == 3 and not r.converged
    assert ei.value.message
