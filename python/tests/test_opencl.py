"""PyOpenCL interop on every device: reprocl on the application's context and queue, pyopencl arrays in
and out without host copies, events, and user kernels built under the policy."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pytest

import reprocl
from reprocl._lib import lib
from conftest import supports

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")
rop = pytest.importorskip("reprocl.opencl")


@pytest.fixture(scope="module")
def app(ctx: reprocl.Context) -> Iterator[tuple[Any, Any, reprocl.Context]]:
    """The application's own pyopencl context and queue on ctx's device, and reprocl wrapped on them."""
    dev = cl.Device.from_int_ptr(lib.rcl_context_cl_device(ctx.handle))
    c = cl.Context([dev])
    q = cl.CommandQueue(c)
    with rop.wrap(c, q, tuning="off") as r:
        yield c, q, r


def test_wrap_shares_objects(app: Any) -> None:
    c, q, r = app
    c2, d2, q2 = rop.objects(r)
    assert c2.int_ptr == c.int_ptr and q2.int_ptr == q.int_ptr and d2.int_ptr == q.device.int_ptr
    with pytest.raises(TypeError):
        rop.wrap("not a context")  # type: ignore[arg-type]


def test_reduce_axpy_scal_enqueue(app: Any, ctx: reprocl.Context) -> None:
    c, q, r = app
    x = reprocl.generate(10_007, "wide", seed=1)
    y = reprocl.generate(10_007, "uniform", seed=2)
    dx, dy = cla.to_device(q, x), cla.to_device(q, y)
    res = cla.zeros(q, 3, np.float32)
    ev = rop.reduce_enqueue(r, "dot", res[1:], dx, dy, "exact")
    assert isinstance(ev, cl.Event)
    ev.wait()
    assert res.get()[1].tobytes() == reprocl.reference.dot(x, y, "exact").tobytes()
    # an element offset (a slice of the pyopencl array) and a wait list
    ev2 = rop.reduce_enqueue(r, "sum", res, dx[5:], wait_for=[ev])
    ev2.wait()
    assert res.get()[0].tobytes() == reprocl.reference.sum(x[5:]).tobytes()
    e1 = rop.axpy_enqueue(r, 0.5, dx, dy)
    e2 = rop.scal_enqueue(r, -3.0, dy, wait_for=[e1])
    e2.wait()
    want = reprocl.reference.scal(-3.0, reprocl.reference.axpy(0.5, x, y.copy()))
    assert dy.get().tobytes() == want.tobytes()
    with pytest.raises(TypeError):
        rop.reduce_enqueue(r, "sum", res, x)  # a host array where a device array is needed
    with pytest.raises(TypeError):
        rop.reduce_enqueue(r, "sum", res, cla.to_device(q, np.arange(4, dtype=np.int32)))


def test_stencil_and_spmv_enqueue(app: Any, ctx: reprocl.Context) -> None:
    c, q, r = app
    if supports(ctx, "stencil", "float32"):
        g = reprocl.grid(33, 21, "random", seed=3)
        din, dout = cla.to_device(q, g), cla.empty(q, g.shape, np.float32)
        rop.stencil_enqueue(r, dout, din, 3, boundary="periodic").wait()
        assert dout.get().tobytes() == reprocl.reference.stencil(g, 3, boundary="periodic").tobytes()
    if supports(ctx, "spmv", "float32"):
        A = reprocl.Matrix.generate("random:50x40:6:9", "float32")
        x = reprocl.generate(40, "uniform", seed=4)
        M = rop.DeviceMatrix(r, A)
        dy = cla.zeros(q, 50, np.float32)
        rop.spmv_enqueue(M, dy, cla.to_device(q, x), alpha=2.0, contract="exact").wait()
        assert dy.get().tobytes() == reprocl.reference.spmv(A, x, alpha=2.0, contract="exact").tobytes()
        M.close()


SRC = """
__kernel void fma_free(__global const float *a, __global const float *b, __global const float *c,
                       __global float *out) {
  size_t i = get_global_id(0);
  out[i] = rcl_add_f32(rcl_mul_f32(a[i], b[i]), c[i]);
}
"""


def test_user_program_under_policy(app: Any) -> None:
    c, q, r = app
    p = rop.Program(r, SRC, prelude_ops=True, name="fma_free.cl")
    assert "-cl-fast-relaxed-math" not in p.build_options
    a, b, cc = (reprocl.generate(4096, "wide", seed=s) for s in (1, 2, 3))
    da, db, dc = (cla.to_device(q, v) for v in (a, b, cc))
    out = cla.empty(q, 4096, np.float32)
    p.fma_free(q, (4096,), None, da.data, db.data, dc.data, out.data).wait()
    # numpy rounds the product, then the sum (no contraction): the contract the prelude keeps
    with np.errstate(all="ignore"):
        want = (a * b) + cc
    got = out.get()
    both_nan = np.isnan(got) & np.isnan(want)
    assert np.array_equal(got.view(np.uint32)[~both_nan], want.view(np.uint32)[~both_nan])
    with pytest.raises(reprocl.PolicyError, match="fast-relaxed"):
        rop.Program(r, SRC, options="-cl-fast-relaxed-math", prelude_ops=True)
    with pytest.raises(reprocl.PolicyError, match="mad"):
        rop.Program(r, "__kernel void k(__global float *x) { x[0] = mad(x[0], x[1], x[2]); }", prelude_ops=True)
    with pytest.raises(reprocl.BuildError):
        rop.Program(r, "__kernel void k( { }", prelude_ops=True)
