"""CSR matrices (from scipy.sparse, Matrix Market / Harwell-Boeing files, generators), SpMV and CG."""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_char, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from . import _lib
from ._arrays import DTypeLike, check_array, np_dtype, ptr, rcl_dtype, scalar
from ._lib import lib
from .core import Context, _choice, _count, _ctx, _parse, _REDUCE_MODES
from .errors import BreakdownError, NoConvergenceError, check, error_for


class Matrix:
    """A CSR matrix held by the C library (rcl_csr). Made from a scipy.sparse CSR matrix (its values must
    already be float32/float64: no casts; index arrays are widened to the C types, which keeps them
    exact), read from a file, or generated. Rows keep their stored column order: the ordered SpMV
    contract sums them in that order."""

    def __init__(self, handle: Any) -> None:
        self._p: Any = handle

    @classmethod
    def from_scipy(cls, A: Any) -> "Matrix":
        import scipy.sparse as sp

        if not sp.issparse(A):
            raise TypeError(f"expected a scipy.sparse CSR matrix, not {type(A).__name__}")
        if A.format != "csr":
            raise TypeError(f"expected CSR, got {A.format.upper()}: convert with .tocsr() yourself "
                            "(conversion sums duplicates, which can change bits)")
        d = np_dtype(A.dtype) if A.dtype in (np.float32, np.float64) else None
        if d is None:
            raise TypeError(f"matrix values have dtype {A.dtype}: float32 or float64 only (no casts)")
        nrows, ncols = A.shape
        if np.any(A.indptr < 0) or np.any(A.indices < 0):
            raise ValueError("negative index in the CSR arrays")
        rp = np.ascontiguousarray(A.indptr, dtype=np.uint64)
        ci = np.ascontiguousarray(A.indices, dtype=np.uint32)
        if ci.size and int(A.indices.max()) > 0xFFFFFFFF:
            raise ValueError("column index above 2^32 - 1")
        vals = np.ascontiguousarray(A.data)
        out = POINTER(_lib.Csr)()
        nnz = int(rp[-1]) if rp.size else 0
        if vals.size < nnz or ci.size < nnz:
            raise ValueError(f"indptr ends at {nnz} but the matrix stores {vals.size} values")
        check(lib.rcl_csr_create(byref(out), rcl_dtype(d), nrows, ncols, nnz, ptr(rp), ptr(ci),
                                 ptr(vals) if nnz else None))
        return cls(out)

    @classmethod
    def read(cls, path: Union[str, os.PathLike], dtype: DTypeLike = "float64") -> "Matrix":
        """A Matrix Market or Harwell-Boeing file (rcl_matrix_read: decimal text rounded once to dtype)."""
        out = POINTER(_lib.Csr)()
        check(lib.rcl_matrix_read(byref(out), os.fsencode(path), rcl_dtype(np_dtype(dtype))))
        return cls(out)

    @classmethod
    def generate(cls, spec: str, dtype: DTypeLike = "float64") -> "Matrix":
        """The CLI's --gen: "poisson2d:N", "poisson3d:N", "random:ROWS[xCOLS]:PERROW[:SEED]", ..."""
        out = POINTER(_lib.Csr)()
        check(lib.rcl_csr_generate(byref(out), rcl_dtype(np_dtype(dtype)), spec.encode()))
        return cls(out)

    @property
    def csr(self) -> _lib.Csr:
        if not self._p:
            raise ValueError("this Matrix is freed")
        return self._p.contents

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float32 if self.csr.dtype == 1 else np.float64)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.csr.nrows, self.csr.ncols)

    @property
    def nnz(self) -> int:
        return int(self.csr.nnz)

    def digest(self) -> str:
        """rcl_csr_digest: equal digests mean identical matrices."""
        h = (c_char * 65)()
        lib.rcl_csr_digest(h, self._p)
        return h.value.decode()

    def to_scipy(self) -> Any:
        """A scipy.sparse.csr_matrix copy (indptr int64, indices int32 where they fit)."""
        import scipy.sparse as sp

        c = self.csr
        rp = np.ctypeslib.as_array(c.row_ptr, (c.nrows + 1,)).astype(np.int64)
        if c.nnz:
            ci = np.ctypeslib.as_array(c.col_idx, (c.nnz,)).astype(np.int64)
            vals = np.ctypeslib.as_array(ctypes.cast(c.values, POINTER(ctypes.c_ubyte)), (c.nnz * self.dtype.itemsize,))
            v = vals.view(self.dtype).copy()
        else:
            ci, v = np.zeros(0, np.int64), np.zeros(0, self.dtype)
        return sp.csr_matrix((v, ci, rp), shape=self.shape)

    def free(self) -> None:
        if self._p:
            lib.rcl_csr_free(self._p)
            self._p = POINTER(_lib.Csr)()

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<reprocl.sparse.Matrix {self.shape[0]}x{self.shape[1]} nnz={self.nnz} {self.dtype}>"


MatrixLike = Union[Matrix, str, os.PathLike, Any]


def as_matrix(A: MatrixLike, dtype: Optional[np.dtype] = None) -> Matrix:
    """A Matrix from a Matrix, a scipy.sparse CSR matrix, or a file path (read in dtype)."""
    if isinstance(A, Matrix):
        m = A
    elif isinstance(A, (str, os.PathLike)):
        m = Matrix.read(A, dtype if dtype is not None else "float64")
    else:
        m = Matrix.from_scipy(A)
    if dtype is not None and m.dtype != dtype:
        raise TypeError(f"the matrix is {m.dtype}, the vectors {dtype} (no implicit casts)")
    return m


def _spmv_opts(contract: str, variant: str) -> _lib.SpmvOptions:
    o = _lib.SpmvOptions(1)
    o.contract = _parse(lib.rcl_spmv_contract_parse, contract, "contract")
    o.variant = _parse(lib.rcl_spmv_variant_parse, variant, "variant")
    return o


def spmv(A: MatrixLike, x: np.ndarray, y: Optional[np.ndarray] = None, *, alpha: float = 1.0, beta: float = 0.0,
         contract: str = "ordered", variant: str = "auto", ctx: Optional[Context] = None) -> np.ndarray:
    """alpha*A*x + beta*y (contract spmv.ordered or spmv.exact) as a new array; y is not modified. With
    beta 0 (the default) y is not read and may be None."""
    return _spmv(A, x, y, alpha, beta, contract, variant, ctx, False)


def _spmv(A: MatrixLike, x: Any, y: Any, alpha: float, beta: float, contract: str, variant: str,
          ctx: Optional[Context], host: bool) -> np.ndarray:
    x = check_array(x, "x", 1)
    m = as_matrix(A, x.dtype)
    nrows, ncols = m.shape
    if x.size != ncols:
        raise ValueError(f"x has {x.size} elements, the matrix {ncols} columns")
    if y is None:
        out = np.zeros(nrows, dtype=x.dtype)
    else:
        out = check_array(y, "y", 1, x.dtype).copy()
        if out.size != nrows:
            raise ValueError(f"y has {out.size} elements, the matrix {nrows} rows")
    a, b = scalar(alpha, x.dtype, "alpha"), scalar(beta, x.dtype, "beta")
    o = _spmv_opts(contract, variant)
    if host:
        check(lib.rcl_ref_spmv(ptr(out), m._p, o.contract, ptr(a), ptr(x), ptr(b)))
    else:
        check(lib.rcl_spmv(ptr(out), _ctx(ctx), m._p, ptr(a), ptr(x), ptr(b), byref(o)))
    return out


@dataclass
class CGResult:
    """CG's solution and its whole convergence history (identical on every device)."""

    x: np.ndarray
    history: np.ndarray  # iterations + 1 residual norms in the dtype; [0] = ||b - A x0||
    iterations: int
    converged: bool
    residual_norm: float
    rhs_norm: float
    history_sha256: str
    message: str


def cg(A: MatrixLike, b: np.ndarray, x0: Optional[np.ndarray] = None, *, tol: float = 1e-8,
       max_iterations: int = 1000, jacobi: bool = False, dot_mode: str = "ordered", contract: str = "ordered",
       variant: str = "auto", ctx: Optional[Context] = None) -> CGResult:
    """Solves A x = b (SPD A) with contract "cg". Raises NoConvergenceError / BreakdownError with the
    CGResult so far in ``.detail``."""
    return _cg(A, b, x0, tol, max_iterations, jacobi, dot_mode, contract, variant, ctx, False)


def _cg(A: MatrixLike, b: Any, x0: Any, tol: float, max_it: int, jacobi: bool, dot_mode: str, contract: str,
        variant: str, ctx: Optional[Context], host: bool) -> CGResult:
    b = check_array(b, "b", 1)
    m = as_matrix(A, b.dtype)
    if b.size != m.shape[0]:
        raise ValueError(f"b has {b.size} elements, the matrix {m.shape[0]} rows")
    x = np.zeros_like(b) if x0 is None else check_array(x0, "x0", 1, b.dtype).copy()
    if x.size != b.size:
        raise ValueError(f"x0 has {x.size} elements, b {b.size}")
    o = _lib.CgOptions(1, float(tol), _count(max_it, "max_iterations"), int(bool(jacobi)),
                       _choice(_REDUCE_MODES, dot_mode, "dot_mode"), _spmv_opts(contract, variant))
    res = _lib.CgResult()
    if host:
        rc = lib.rcl_ref_cg(ptr(x), byref(res), m._p, ptr(b), byref(o))
        err = error_for(rc) if rc < 0 else None
    else:
        dev = c_void_p()
        check(lib.rcl_spmv_matrix_create(byref(dev), _ctx(ctx), m._p))
        try:
            rc = lib.rcl_cg(ptr(x), byref(res), dev, ptr(b), byref(o))
            err = error_for(rc) if rc < 0 else None  # the message before any other call
        finally:
            lib.rcl_spmv_matrix_free(dev)
    return _cg_finish(rc, err, res, x)


def _cg_finish(rc: int, err: Any, res: _lib.CgResult, x: np.ndarray) -> CGResult:
    try:
        hist = np.zeros(res.history_len, dtype=x.dtype)
        if res.history and res.history_len:
            ctypes.memmove(ptr(hist), res.history, hist.nbytes)
        out = CGResult(x, hist, int(res.iterations), bool(res.converged), float(res.residual_norm),
                       float(res.rhs_norm), res.history_sha256.decode(), res.message.decode(errors="replace"))
    finally:
        if rc == 0 or rc in (NoConvergenceError.status, BreakdownError.status):
            lib.rcl_cg_result_free(byref(res))
    if err is not None:
        if rc in (NoConvergenceError.status, BreakdownError.status):
            err.detail = out
        raise err
    return out
