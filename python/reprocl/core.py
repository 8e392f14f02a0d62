"""Devices, contexts, digests, deterministic data, reductions, BLAS-1 updates, stencils and SOR."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_char, c_char_p, c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._arrays import DTypeLike, Handle, check_array, np_dtype, ptr, rcl_dtype, scalar
from ._lib import lib
from .errors import check

FAMILIES = ("reduce", "stencil", "spmv", "md")
_MODES = {"reproducible": 0, "native": 1}
_TUNING = {"env": 0, "on": 1, "off": 2, "force": 3}
_REDUCE_MODES = {"ordered": 0, "exact": 1}
_REDUCE_VARIANTS = {"default": 0, "ndrange": 1, "task": 2}
_OPS = {"sum": 0, "dot": 1, "nrm2": 2}


def _choice(table: dict[str, int], value: str, what: str) -> int:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, one of {', '.join(table)}")
    if value not in table:
        raise ValueError(f"{what} {value!r}: expected one of {', '.join(table)}")
    return table[value]


def _parse(fn: Any, value: str, what: str) -> int:
    """An enum through the library's own *_parse function (its message names the accepted values)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string")
    out = c_int()
    check(fn(byref(out), value.encode()))
    return out.value


def _s(b: bytes) -> str:
    return b.decode(errors="replace")


# ---- devices -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Support:
    """How a family runs on a device for a dtype: "native", "emulated" or "unsupported", and why."""

    support: str
    reason: str


@dataclass(frozen=True)
class Device:
    """One OpenCL device: its index (a device spec), names, the profile the library derives (every field
    of rcl_device_profile) and per family and dtype how it runs there."""

    index: int
    platform_name: str
    name: str
    profile: dict[str, Any]
    support: dict[str, dict[str, Support]] = field(repr=False)

    @property
    def spec(self) -> str:
        return str(self.index)


def _profile_dict(p: _lib.DeviceProfile) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fld in p._fields_:
        name = fld[0]
        v = getattr(p, name)
        if isinstance(v, bytes):
            v = _s(v)
        elif isinstance(v, ctypes.Array):
            v = list(v)
        out[name] = v
    return out


def _support_table(p: _lib.DeviceProfile) -> dict[str, dict[str, Support]]:
    table: dict[str, dict[str, Support]] = {}
    for fi, fam in enumerate(FAMILIES):
        table[fam] = {}
        for dname, dt in (("float32", 1), ("float64", 2)):
            reason = c_char_p()
            s = lib.rcl_device_profile_support(byref(p), fi, dt, byref(reason))
            table[fam][dname] = Support(_s(lib.rcl_support_name(s)), _s(reason.value or b""))
    return table


def _device_from_info(info: _lib.DeviceInfo) -> Device:
    p = _lib.DeviceProfile()
    check(lib.rcl_device_profile_query(byref(p), info.device))
    return Device(info.index, _s(info.platform_name), _s(info.device_name), _profile_dict(p), _support_table(p))


def devices() -> list[Device]:
    """Every OpenCL device, in the order of `reprocl devices` (device specs use these indices)."""
    arr = ctypes.POINTER(_lib.DeviceInfo)()
    n = c_size_t()
    check(lib.rcl_devices(byref(arr), byref(n)))
    try:
        return [_device_from_info(arr[i]) for i in range(n.value)]
    finally:
        lib.rcl_devices_free(arr)


# ---- contexts ------------------------------------------------------------------------------------------


class Context(Handle):
    """A reprocl context: one device, its queue and the programs built for it. Use as a context manager
    (``with reprocl.Context(device="pocl") as ctx:``) or call close(). device: None ($REPROCL_DEVICE or
    device 0), an index, a Device, or a spec string ("pocl:", "intel", "rusticl#0"). mode: "reproducible"
    or "native" (the vendor's options, for comparisons only)."""

    def __init__(
        self,
        device: Union[None, int, str, Device] = None,
        mode: str = "reproducible",
        tuning: str = "env",
        cache_dir: Optional[str] = None,
        profiling: bool = True,
        _handle: Optional[int] = None,
    ) -> None:
        self._h: Optional[int] = None
        self._keep: list[Any] = []
        if _handle is not None:
            self._h = _handle
            return
        if isinstance(device, Device):
            device = device.index
        if isinstance(device, bool) or not (device is None or isinstance(device, (int, str))):
            raise TypeError("device must be None, an index, a spec string or a reprocl.Device")
        if isinstance(device, int) and device < 0:
            raise ValueError(f"device index {device} is negative")
        opts = self._options(mode, tuning, cache_dir, profiling)
        opts.device = None if device is None else str(device).encode()
        h = c_void_p()
        check(lib.rcl_context_create(byref(h), byref(opts)))
        self._h = h.value

    @staticmethod
    def _options(mode: str, tuning: str, cache_dir: Optional[str], profiling: bool) -> _lib.ContextOptions:
        opts = _lib.ContextOptions(1, None, _choice(_MODES, mode, "mode"), int(bool(profiling)))
        opts.tuning = _choice(_TUNING, tuning, "tuning")
        opts.cache_dir = None if cache_dir is None else str(cache_dir).encode()
        return opts

    _free = staticmethod(lib.rcl_context_free)
    _what = "reprocl.Context"

    def __enter__(self) -> "Context":
        return self

    @property
    def profile(self) -> dict[str, Any]:
        return _profile_dict(lib.rcl_context_profile(self.handle).contents)

    @property
    def support(self) -> dict[str, dict[str, Support]]:
        return _support_table(lib.rcl_context_profile(self.handle).contents)

    @property
    def device_name(self) -> str:
        p = lib.rcl_context_profile(self.handle).contents
        return f"{_s(p.platform_name)}: {_s(p.device_name)}"

    @property
    def mode(self) -> str:
        return "native" if lib.rcl_context_mode(self.handle) == 1 else "reproducible"

    def verdict(self, family: str, dtype: DTypeLike) -> tuple[str, str]:
        """The first-use self-test's verdict of family/dtype on this device, and its reason."""
        fi = _choice({f: i for i, f in enumerate(FAMILIES)}, family, "family")
        v, reason = c_int(), c_char_p()
        check(lib.rcl_context_verdict(byref(v), byref(reason), self.handle, fi, rcl_dtype(np_dtype(dtype))))
        return _s(lib.rcl_verdict_name(v.value)), _s(reason.value or b"")

    def __repr__(self) -> str:
        if self._h is None:
            return "<reprocl.Context closed>"
        return f"<reprocl.Context {self.device_name!r} {self.mode}>"

    # methods: the module functions with this context
    def sum(self, x: np.ndarray, mode: str = "ordered", **kw: Any) -> np.floating:
        return sum(x, mode, ctx=self, **kw)

    def dot(self, x: np.ndarray, y: np.ndarray, mode: str = "ordered", **kw: Any) -> np.floating:
        return dot(x, y, mode, ctx=self, **kw)

    def nrm2(self, x: np.ndarray, mode: str = "ordered", **kw: Any) -> np.floating:
        return nrm2(x, mode, ctx=self, **kw)

    def axpy(self, alpha: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return axpy(alpha, x, y, ctx=self)

    def scal(self, alpha: float, x: np.ndarray) -> np.ndarray:
        return scal(alpha, x, ctx=self)

    def stencil(self, grid: np.ndarray, iters: int = 1, **kw: Any) -> np.ndarray:
        return stencil(grid, iters, ctx=self, **kw)

    def sor(self, grid: np.ndarray, sweeps: int = 1, **kw: Any) -> tuple[np.ndarray, np.floating]:
        return sor(grid, sweeps, ctx=self, **kw)


_DEFAULT: Optional[Context] = None


def default_context() -> Context:
    """The context the functions use when no ctx is given: created on first use on $REPROCL_DEVICE or
    device 0."""
    global _DEFAULT
    if _DEFAULT is None or _DEFAULT._h is None:
        _DEFAULT = Context()
    return _DEFAULT


def _ctx(ctx: Optional[Context]) -> int:
    if ctx is None:
        return default_context().handle
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a reprocl.Context, not {type(ctx).__name__}")
    return ctx.handle


# ---- digests and data ----------------------------------------------------------------------------------


def digest(data: Union[np.ndarray, np.floating, bytes]) -> str:
    """SHA-256 (hex) of the bytes of a float32/float64 array or scalar (C order, little-endian on the
    machines reprocl runs on) or of a bytes object: the digest the CLI prints for the same values, and
    `sha256sum` of the file its --out writes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        buf = ctypes.create_string_buffer(raw, len(raw))
        hexbuf = (c_char * 65)()
        lib.rcl_sha256_hex(hexbuf, buf, len(raw))
        return _s(hexbuf.value)
    if isinstance(data, np.floating):
        data = np.array(data)
    if not isinstance(data, np.ndarray):
        raise TypeError(f"digest takes a numpy array or scalar or bytes, not {type(data).__name__}")
    if data.ndim == 0:
        data = data.reshape(1)
    a = check_array(data, "array", data.ndim)
    hexbuf = (c_char * 65)()
    lib.rcl_sha256_hex(hexbuf, ptr(a), a.nbytes)
    return _s(hexbuf.value)


def generate(n: int, kind: str = "uniform", seed: int = 1, dtype: DTypeLike = "float32") -> np.ndarray:
    """rcl_generate: the CLI's deterministic inputs ("uniform", "wide", "cancel", "special"); `reprocl run
    reduce --seed S` uses seed S for x and S+1 for y."""
    d = np_dtype(dtype)
    k = _parse(lib.rcl_gen_kind_parse, kind, "kind")
    out = np.empty(_count(n, "n"), dtype=d)
    check(lib.rcl_generate(ptr(out), rcl_dtype(d), out.size, k, _u64(seed, "seed")))
    return out


def grid(width: int, height: int, init: str = "shoc", seed: int = 42, dtype: DTypeLike = "float32") -> np.ndarray:
    """rcl_grid_generate: the stencil CLI's --init grids ("shoc", "random", "point", "zero") as a
    (height, width) array."""
    d = np_dtype(dtype)
    k = _parse(lib.rcl_grid_init_parse, init, "init")
    g = _lib.Grid()
    check(lib.rcl_grid_alloc(byref(g), rcl_dtype(d), _count(width, "width"), _count(height, "height")))
    try:
        check(lib.rcl_grid_generate(byref(g), k, _u64(seed, "seed")))
        src = np.ctypeslib.as_array(ctypes.cast(g.data, ctypes.POINTER(ctypes.c_ubyte)), (g.width * g.height * d.itemsize,))
        return src.view(d).reshape(height, width).copy()
    finally:
        lib.rcl_grid_free(byref(g))


def _count(n: Any, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an integer")
    if n < 0:
        raise ValueError(f"{name} = {n} is negative")
    return int(n)


def _u64(n: Any, name: str) -> int:
    n = _count(n, name)
    if n >= 1 << 64:
        raise ValueError(f"{name} = {n} does not fit 64 bits")
    return n


# ---- reductions ----------------------------------------------------------------------------------------


def _reduce_opts(mode: str, variant: str, local_size: int, num_groups: int) -> _lib.ReduceOptions:
    return _lib.ReduceOptions(
        2,
        _choice(_REDUCE_MODES, mode, "mode"),
        _count(local_size, "local_size"),
        _count(num_groups, "num_groups"),
        _choice(_REDUCE_VARIANTS, variant, "variant"),
    )


def _reduce(op: str, x: Any, y: Any, mode: str, ctx: Optional[Context], host: bool, **launch: Any) -> np.floating:
    x = check_array(x, "x", 1)
    if y is not None:
        y = check_array(y, "y", 1, x.dtype)
        if y.size != x.size:
            raise ValueError(f"x has {x.size} elements, y {y.size}")
    out = np.zeros(1, dtype=x.dtype)
    yp = None if y is None else ptr(y)
    if host:
        m = _choice(_REDUCE_MODES, mode, "mode")
        check(lib.rcl_ref_reduce(ptr(out), _OPS[op], rcl_dtype(x.dtype), m, x.size, ptr(x), yp))
    else:
        opts = _reduce_opts(mode, launch.get("variant", "default"), launch.get("local_size", 0), launch.get("num_groups", 0))
        check(lib.rcl_reduce(ptr(out), _ctx(ctx), _OPS[op], rcl_dtype(x.dtype), x.size, ptr(x), yp, byref(opts)))
    return out[0]


def sum(x: np.ndarray, mode: str = "ordered", *, ctx: Optional[Context] = None, variant: str = "default",
        local_size: int = 0, num_groups: int = 0) -> np.floating:  # noqa: A001
    """The sum of x (contract reduce.ordered or reduce.exact) as a scalar of x's dtype. Launch
    parameters (variant, local_size, num_groups) never change the bits."""
    return _reduce("sum", x, None, mode, ctx, False, variant=variant, local_size=local_size, num_groups=num_groups)


def dot(x: np.ndarray, y: np.ndarray, mode: str = "ordered", *, ctx: Optional[Context] = None,
        variant: str = "default", local_size: int = 0, num_groups: int = 0) -> np.floating:
    """The dot product of x and y (same dtype and length)."""
    return _reduce("dot", x, y, mode, ctx, False, variant=variant, local_size=local_size, num_groups=num_groups)


def nrm2(x: np.ndarray, mode: str = "ordered", *, ctx: Optional[Context] = None, variant: str = "default",
         local_size: int = 0, num_groups: int = 0) -> np.floating:
    """The Euclidean norm of x."""
    return _reduce("nrm2", x, None, mode, ctx, False, variant=variant, local_size=local_size, num_groups=num_groups)


def _blas1(name: str, alpha: Any, x: Any, y: Any, ctx: Optional[Context], host: bool) -> np.ndarray:
    target = check_array(y if name == "axpy" else x, "y" if name == "axpy" else "x", 1, writable=True)
    a = scalar(alpha, target.dtype, "alpha")
    dt = rcl_dtype(target.dtype)
    if name == "axpy":
        x = check_array(x, "x", 1, target.dtype)
        if x.size != target.size:
            raise ValueError(f"x has {x.size} elements, y {target.size}")
        if np.shares_memory(x, target):
            raise ValueError("x and y overlap")
        if host:
            lib.rcl_ref_axpy(ptr(target), dt, target.size, ptr(a), ptr(x))
        else:
            check(lib.rcl_axpy(ptr(target), _ctx(ctx), dt, target.size, ptr(a), ptr(x), 0))
    elif host:
        lib.rcl_ref_scal(ptr(target), dt, target.size, ptr(a))
    else:
        check(lib.rcl_scal(ptr(target), _ctx(ctx), dt, target.size, ptr(a), 0))
    return target


def axpy(alpha: float, x: np.ndarray, y: np.ndarray, *, ctx: Optional[Context] = None) -> np.ndarray:
    """y = alpha*x + y in place (contract blas1: the product rounded, then the sum); returns y. alpha is
    rounded once to y's dtype."""
    return _blas1("axpy", alpha, x, y, ctx, False)


def scal(alpha: float, x: np.ndarray, *, ctx: Optional[Context] = None) -> np.ndarray:
    """x = alpha*x in place; returns x."""
    return _blas1("scal", alpha, x, None, ctx, False)


# ---- stencils ------------------------------------------------------------------------------------------

_SHOC = (0.25, 0.15, 0.05)


def _stencil_desc(kind: str, weights: Optional[Sequence[float]], boundary: str, boundary_value: float) -> _lib.StencilDesc:
    st = _lib.StencilDesc(1)
    st.boundary = _parse(lib.rcl_boundary_parse, boundary, "boundary")
    st.boundary_value = float(boundary_value)
    if kind == "nine":
        w = list(_SHOC if weights is None else weights)
        if len(w) != 3:
            raise ValueError(f"kind 'nine' takes 3 weights (centre, cardinal, diagonal), got {len(w)}")
        st.kind, st.radius = 0, 1
    elif kind == "general":
        if weights is None:
            raise ValueError("kind 'general' needs weights: 9 (3x3) or 25 (5x5) values, row-major")
        w = list(np.asarray(weights, dtype=np.float64).ravel())
        if len(w) not in (9, 25):
            raise ValueError(f"kind 'general' takes 9 or 25 weights, got {len(w)}")
        st.kind, st.radius = 1, 1 if len(w) == 9 else 2
    else:
        raise ValueError(f"kind {kind!r}: expected 'nine' or 'general'")
    for i, v in enumerate(w):
        st.weights[i] = float(v)
    return st


def _stencil_opts(variant: str) -> _lib.StencilOptions:
    o = _lib.StencilOptions(1)
    o.variant = _parse(lib.rcl_stencil_variant_parse, variant, "variant")
    return o


def stencil(grid: np.ndarray, iters: int = 1, *, kind: str = "nine", weights: Optional[Sequence[float]] = None,
            boundary: str = "fixed", boundary_value: float = 0.0, variant: str = "auto",
            ctx: Optional[Context] = None) -> np.ndarray:
    """`iters` applications of a 2D stencil to a (height, width) grid; returns a new array. kind "nine"
    (SHOC Stencil2D, weights wc, wa, wd; default 0.25, 0.15, 0.05) or "general" (9 or 25 weights,
    row-major). Weights and boundary_value are rounded once to the grid's dtype."""
    return _stencil(grid, iters, kind, weights, boundary, boundary_value, variant, ctx, False)


def _stencil(g: Any, iters: int, kind: str, weights: Any, boundary: str, bv: float, variant: str,
             ctx: Optional[Context], host: bool) -> np.ndarray:
    g = check_array(g, "grid", 2)
    st = _stencil_desc(kind, weights, boundary, bv)
    out = np.empty_like(g)
    h, w = g.shape
    n = _count(iters, "iters")
    if host:
        check(lib.rcl_ref_stencil(ptr(out), byref(st), rcl_dtype(g.dtype), w, h, n, ptr(g)))
    else:
        o = _stencil_opts(variant)
        check(lib.rcl_stencil(ptr(out), _ctx(ctx), byref(st), rcl_dtype(g.dtype), w, h, n, ptr(g), byref(o)))
    return out


def sor(grid: np.ndarray, sweeps: int = 1, *, omega: float = 1.25, rhs: Optional[np.ndarray] = None,
        boundary: str = "fixed", boundary_value: float = 0.0, variant: str = "auto",
        ctx: Optional[Context] = None) -> tuple[np.ndarray, np.floating]:
    """`sweeps` red-black SOR sweeps of the 5-point Laplace/Poisson problem (rhs: b scaled by h^2, same
    shape and dtype, or None). Returns (the new grid, the residual norm after the sweeps)."""
    return _sor(grid, sweeps, omega, rhs, boundary, boundary_value, variant, ctx, False)


def _sor(g: Any, sweeps: int, omega: float, rhs: Any, boundary: str, bv: float, variant: str,
         ctx: Optional[Context], host: bool) -> tuple[np.ndarray, np.floating]:
    g = check_array(g, "grid", 2)
    if rhs is not None:
        rhs = check_array(rhs, "rhs", 2, g.dtype)
        if rhs.shape != g.shape:
            raise ValueError(f"rhs has shape {rhs.shape}, grid {g.shape}")
    s = _lib.SorDesc(1, float(omega), _parse(lib.rcl_boundary_parse, boundary, "boundary"), float(bv))
    out = g.copy()
    res = np.zeros(1, dtype=g.dtype)
    h, w = g.shape
    n = _count(sweeps, "sweeps")
    rp = None if rhs is None else ptr(rhs)
    if host:
        check(lib.rcl_ref_sor(ptr(out), ptr(res), byref(s), rcl_dtype(g.dtype), w, h, n, rp))
    else:
        o = _stencil_opts(variant)
        check(lib.rcl_sor(ptr(out), ptr(res), _ctx(ctx), byref(s), rcl_dtype(g.dtype), w, h, n, rp, byref(o)))
    return out, res[0]
