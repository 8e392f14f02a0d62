"""Argument checks shared by every wrapper: dtypes, shapes, contiguity. Nothing is ever cast or copied
silently: a wrong input raises TypeError or ValueError before any C call."""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional, Union

import numpy as np

F32 = 1
F64 = 2

DTypeLike = Union[str, type, np.dtype]

_NAMES = {"f32": np.float32, "float32": np.float32, "f64": np.float64, "float64": np.float64}


def np_dtype(dtype: DTypeLike) -> np.dtype:
    """np.float32 or np.float64 from "f32", "float32", np.float32, np.dtype(...)."""
    if isinstance(dtype, str):
        if dtype not in _NAMES:
            raise ValueError(f"dtype {dtype!r}: reprocl computes in f32 or f64 only")
        return np.dtype(_NAMES[dtype])
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype {dtype!r} is not a dtype") from e
    if d not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype {d}: reprocl computes in float32 or float64 only")
    return d


def rcl_dtype(d: np.dtype) -> int:
    return F32 if d == np.float32 else F64


def check_layout(a: Any, name: str, ndim: int, dtype: Any = None) -> None:
    """The checks every array argument passes, host (numpy) or device (pyopencl): float32/float64 in
    native byte order, of `dtype` when given, ndim dimensions, C-contiguous."""
    if a.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{name} has dtype {a.dtype}: reprocl takes float32 or float64 arrays only (no casts)")
    if not a.dtype.isnative:
        raise TypeError(f"{name} has non-native byte order {a.dtype.str}")
    if dtype is not None and a.dtype != dtype:
        raise TypeError(f"{name} has dtype {a.dtype}, expected {np.dtype(dtype)} (no implicit casts)")
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, has shape {a.shape}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} is not C-contiguous (a view with strides?); make a contiguous copy yourself")


def check_array(a: Any, name: str, ndim: int, dtype: Any = None, writable: bool = False) -> np.ndarray:
    """a itself (never a copy): a numpy array that passes check_layout."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, not {type(a).__name__} (no implicit conversion)")
    check_layout(a, name, ndim, dtype)
    if writable and not a.flags.writeable:
        raise ValueError(f"{name} is read-only but is written in place")
    return a


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def scalar(value: Any, d: np.dtype, name: str) -> np.ndarray:
    """A real number rounded once (to nearest even) to dtype d, as a 0-d array whose address the C API
    takes. Complex, bool, strings and arrays are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return np.array(value, dtype=d)


def cbuf(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


class Handle:
    """A C object owned by a Python object: `handle` (raises once closed), close() (frees it with the
    class's `_free`), a context manager, and freed on garbage collection."""

    _free: Callable[[int], None]
    _what = "object"
    _h: Optional[int] = None

    @property
    def handle(self) -> int:
        if self._h is None:
            raise ValueError(f"this {self._what} is closed")
        return self._h

    def close(self) -> None:
        if self._h is not None:
            type(self)._free(self._h)
            self._h = None

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
