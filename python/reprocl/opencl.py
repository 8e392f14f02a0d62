"""PyOpenCL interop without copies: a reprocl Context on the application's pyopencl.Context and
CommandQueue (rcl_context_wrap), the *_enqueue forms on pyopencl.array.Array buffers returning
pyopencl.Event objects, and the application's own kernels built under the reproducibility policy
(Program). Needs pyopencl (Debian: python3-pyopencl)."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Optional, Sequence

import numpy as np

from . import _lib
from ._arrays import Handle, check_layout, rcl_dtype, scalar
from ._lib import lib
from .core import Context, _OPS, _choice, _count, _REDUCE_MODES, _reduce_opts, _stencil_desc, _stencil_opts
from .errors import check
from .sparse import Matrix, MatrixLike, _spmv_opts, as_matrix

try:
    import pyopencl as cl
    import pyopencl.array as cla
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("reprocl.opencl needs pyopencl (pip install pyopencl, or Debian's python3-pyopencl)") from e


def wrap(context: "cl.Context", queue: Optional["cl.CommandQueue"] = None, device: Optional["cl.Device"] = None,
         mode: str = "reproducible", tuning: str = "env", cache_dir: Optional[str] = None) -> Context:
    """A reprocl Context on the application's OpenCL objects (retained by reprocl, released by close()).
    device defaults to the queue's device, else the context's only device. Without a queue every call
    must pass one."""
    if not isinstance(context, cl.Context):
        raise TypeError(f"context must be a pyopencl.Context, not {type(context).__name__}")
    if device is None:
        if queue is not None:
            device = queue.device
        elif len(context.devices) == 1:
            device = context.devices[0]
        else:
            raise ValueError("the context has several devices: pass device= (or a queue)")
    opts = Context._options(mode, tuning, cache_dir, True)
    h = c_void_p()
    check(lib.rcl_context_wrap(byref(h), context.int_ptr, device.int_ptr, queue.int_ptr if queue else None,
                               byref(opts)))
    ctx = Context(_handle=h.value)
    ctx._keep = [context, queue, device]
    return ctx


def objects(ctx: Context) -> tuple["cl.Context", "cl.Device", "cl.CommandQueue"]:
    """The pyopencl objects of a reprocl Context (its own or wrapped ones), sharing the same handles."""
    h = ctx.handle
    c = cl.Context.from_int_ptr(lib.rcl_context_cl_context(h), retain=True)
    d = cl.Device.from_int_ptr(lib.rcl_context_cl_device(h), retain=True)
    q_ptr = lib.rcl_context_cl_queue(h)
    q = cl.CommandQueue.from_int_ptr(q_ptr, retain=True) if q_ptr else None
    return c, d, q


# ---- queue arguments and buffers -----------------------------------------------------------------------


class _Queue:
    """rcl_queue_args for one call: the queue, the wait list, and the out event as a pyopencl.Event."""

    def __init__(self, queue: Optional["cl.CommandQueue"], wait_for: Optional[Sequence["cl.Event"]]) -> None:
        evs = list(wait_for or [])
        for e in evs:
            if not isinstance(e, cl.Event):
                raise TypeError(f"wait_for holds {type(e).__name__}, not pyopencl.Event")
        self._wait = (c_void_p * max(1, len(evs)))(*[e.int_ptr for e in evs])
        self._event = c_void_p()
        self.args = _lib.QueueArgs(1, queue.int_ptr if queue is not None else None, len(evs),
                                   ctypes.cast(self._wait, ctypes.POINTER(c_void_p)) if evs else None,
                                   ctypes.pointer(self._event))

    def event(self) -> "cl.Event":
        return cl.Event.from_int_ptr(self._event.value, retain=False)  # reprocl hands us its reference


def _buf(a: Any, name: str, ndim: int, dtype: Any = None) -> tuple[int, int]:
    """(cl_mem, element offset) of a contiguous pyopencl array of float32/float64."""
    if not isinstance(a, cla.Array):
        raise TypeError(f"{name} must be a pyopencl.array.Array, not {type(a).__name__}")
    check_layout(a, name, ndim, dtype)
    if a.offset % a.dtype.itemsize:
        raise ValueError(f"{name}'s byte offset {a.offset} is not a whole number of elements")
    return a.base_data.int_ptr, a.offset // a.dtype.itemsize


# ---- the enqueue forms ---------------------------------------------------------------------------------


def reduce_enqueue(ctx: Context, op: str, result: "cla.Array", x: "cla.Array", y: Optional["cla.Array"] = None,
                   mode: str = "ordered", *, queue: Optional["cl.CommandQueue"] = None,
                   wait_for: Optional[Sequence["cl.Event"]] = None) -> "cl.Event":
    """result[0] = op(x, y) (op "sum", "dot", "nrm2") on the device; returns the operation's event."""
    xb, xo = _buf(x, "x", 1)
    rb, ro = _buf(result, "result", 1, x.dtype)
    if result.size < 1:
        raise ValueError("result needs one element")
    yb, yo = (None, 0) if y is None else _buf(y, "y", 1, x.dtype)
    if y is not None and y.size != x.size:
        raise ValueError(f"x has {x.size} elements, y {y.size}")
    opcode = _choice(_OPS, op, "op")
    opts = _reduce_opts(mode, "default", 0, 0)
    q = _Queue(queue, wait_for)
    check(lib.rcl_reduce_enqueue(rb, ro, ctx.handle, opcode, rcl_dtype(x.dtype), x.size, xb, xo, yb, yo,
                                 byref(opts), byref(q.args)))
    return q.event()


def axpy_enqueue(ctx: Context, alpha: float, x: "cla.Array", y: "cla.Array", *,
                 queue: Optional["cl.CommandQueue"] = None, wait_for: Optional[Sequence["cl.Event"]] = None) -> "cl.Event":
    """y = alpha*x + y on the device."""
    yb, yo = _buf(y, "y", 1)
    xb, xo = _buf(x, "x", 1, y.dtype)
    if x.size != y.size:
        raise ValueError(f"x has {x.size} elements, y {y.size}")
    a = scalar(alpha, y.dtype, "alpha")
    q = _Queue(queue, wait_for)
    check(lib.rcl_axpy_enqueue(yb, yo, ctx.handle, rcl_dtype(y.dtype), y.size, a.ctypes.data, xb, xo, 0,
                               byref(q.args)))
    return q.event()


def scal_enqueue(ctx: Context, alpha: float, x: "cla.Array", *, queue: Optional["cl.CommandQueue"] = None,
                 wait_for: Optional[Sequence["cl.Event"]] = None) -> "cl.Event":
    """x = alpha*x on the device."""
    xb, xo = _buf(x, "x", 1)
    a = scalar(alpha, x.dtype, "alpha")
    q = _Queue(queue, wait_for)
    check(lib.rcl_scal_enqueue(xb, xo, ctx.handle, rcl_dtype(x.dtype), x.size, a.ctypes.data, 0, byref(q.args)))
    return q.event()


def stencil_enqueue(ctx: Context, out: "cla.Array", grid: "cla.Array", iters: int = 1, *, kind: str = "nine",
                    weights: Optional[Sequence[float]] = None, boundary: str = "fixed", boundary_value: float = 0.0,
                    variant: str = "auto", queue: Optional["cl.CommandQueue"] = None,
                    wait_for: Optional[Sequence["cl.Event"]] = None) -> "cl.Event":
    """out = `iters` stencil applications to grid ((height, width) arrays in distinct buffers)."""
    ib, io = _buf(grid, "grid", 2)
    ob, oo = _buf(out, "out", 2, grid.dtype)
    if out.shape != grid.shape:
        raise ValueError(f"out has shape {out.shape}, grid {grid.shape}")
    if ib == ob:
        raise ValueError("out and grid must be distinct buffers")
    st = _stencil_desc(kind, weights, boundary, boundary_value)
    o = _stencil_opts(variant)
    h, w = grid.shape
    q = _Queue(queue, wait_for)
    check(lib.rcl_stencil_enqueue(ob, oo, w, ctx.handle, byref(st), rcl_dtype(grid.dtype), w, h, _count(iters, "iters"),
                                  ib, io, w, None, byref(o), byref(q.args)))
    return q.event()


class DeviceMatrix(Handle):
    """A CSR matrix uploaded once to ctx's device (rcl_spmv_matrix), for spmv_enqueue."""

    def __init__(self, ctx: Context, A: MatrixLike, dtype: Any = None) -> None:
        self.matrix: Matrix = as_matrix(A, None if dtype is None else np.dtype(dtype))
        h = c_void_p()
        check(lib.rcl_spmv_matrix_create(byref(h), ctx.handle, self.matrix._p))
        self._h = h.value
        self._ctx = ctx

    _free = staticmethod(lib.rcl_spmv_matrix_free)
    _what = "reprocl.opencl.DeviceMatrix"


def spmv_enqueue(A: DeviceMatrix, y: "cla.Array", x: "cla.Array", *, alpha: float = 1.0, beta: float = 0.0,
                 contract: str = "ordered", variant: str = "auto", queue: Optional["cl.CommandQueue"] = None,
                 wait_for: Optional[Sequence["cl.Event"]] = None) -> "cl.Event":
    """y = alpha*A*x + beta*y on the device."""
    d = A.matrix.dtype
    xb, xo = _buf(x, "x", 1, d)
    yb, yo = _buf(y, "y", 1, d)
    if x.size != A.matrix.shape[1] or y.size != A.matrix.shape[0]:
        raise ValueError(f"x has {x.size}, y {y.size} elements; the matrix is {A.matrix.shape}")
    a, b = scalar(alpha, d, "alpha"), scalar(beta, d, "beta")
    o = _spmv_opts(contract, variant)
    q = _Queue(queue, wait_for)
    check(lib.rcl_spmv_enqueue(yb, yo, A.handle, a.ctypes.data, xb, xo, b.ctypes.data, byref(o), byref(q.args)))
    return q.event()


# ---- the application's kernels under the policy --------------------------------------------------------


class Program(Handle):
    """The caller's OpenCL C source built for ctx's device under the context's mode (rcl_program_build):
    the prelude is prepended (FP_CONTRACT OFF, exact fp32 operations rcl_add_f32, ...) and options that
    break reproducibility are refused (PolicyError). prelude_ops=True declares that the source uses the
    prelude's operations for fp32 arithmetic (required on devices without IEEE fp32 guarantees)."""

    def __init__(self, ctx: Context, source: str, options: Optional[str] = None, name: Optional[str] = None,
                 prelude_ops: bool = False, allow_inexact_builtins: bool = False) -> None:
        flags = (1 if prelude_ops else 0) | (2 if allow_inexact_builtins else 0)
        opts = _lib.ProgramOptions(1, options.encode() if options else None, name.encode() if name else None, flags)
        src = source.encode()
        h = c_void_p()
        check(lib.rcl_program_build(byref(h), ctx.handle, src, len(src), byref(opts)))
        self._h = h.value
        self.ctx = ctx
        self.program = cl.Program.from_int_ptr(lib.rcl_program_cl(self._h), retain=True)

    @property
    def build_options(self) -> str:
        return (lib.rcl_program_build_options(self.handle) or b"").decode()

    def kernel(self, name: str) -> "cl.Kernel":
        """A pyopencl.Kernel of the policy-built program (callable as kernel(queue, gsize, lsize, *args))."""
        return cl.Kernel(self.program, name)

    def __getattr__(self, name: str) -> "cl.Kernel":
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    _free = staticmethod(lib.rcl_program_free)
    _what = "reprocl.opencl.Program"
