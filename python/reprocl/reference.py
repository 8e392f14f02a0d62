"""The library's host C references (plain C compiled with -ffp-contract=off, no device): what every
device's result equals bit for bit. Same signatures as the device functions, without ctx and launch
parameters."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import core, sparse


def sum(x: np.ndarray, mode: str = "ordered") -> np.floating:  # noqa: A001
    return core._reduce("sum", x, None, mode, None, True)


def dot(x: np.ndarray, y: np.ndarray, mode: str = "ordered") -> np.floating:
    return core._reduce("dot", x, y, mode, None, True)


def nrm2(x: np.ndarray, mode: str = "ordered") -> np.floating:
    return core._reduce("nrm2", x, None, mode, None, True)


def axpy(alpha: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return core._blas1("axpy", alpha, x, y, None, True)


def scal(alpha: float, x: np.ndarray) -> np.ndarray:
    return core._blas1("scal", alpha, x, None, None, True)


def stencil(grid: np.ndarray, iters: int = 1, *, kind: str = "nine", weights: Optional[Sequence[float]] = None,
            boundary: str = "fixed", boundary_value: float = 0.0) -> np.ndarray:
    return core._stencil(grid, iters, kind, weights, boundary, boundary_value, "auto", None, True)


def sor(grid: np.ndarray, sweeps: int = 1, *, omega: float = 1.25, rhs: Optional[np.ndarray] = None,
        boundary: str = "fixed", boundary_value: float = 0.0) -> tuple[np.ndarray, np.floating]:
    return core._sor(grid, sweeps, omega, rhs, boundary, boundary_value, "auto", None, True)


def spmv(A: Any, x: np.ndarray, y: Optional[np.ndarray] = None, *, alpha: float = 1.0, beta: float = 0.0,
         contract: str = "ordered") -> np.ndarray:
    return sparse._spmv(A, x, y, alpha, beta, contract, "auto", None, True)


def cg(A: Any, b: np.ndarray, x0: Optional[np.ndarray] = None, *, tol: float = 1e-8, max_iterations: int = 1000,
       jacobi: bool = False, dot_mode: str = "ordered", contract: str = "ordered") -> sparse.CGResult:
    return sparse._cg(A, b, x0, tol, max_iterations, jacobi, dot_mode, contract, "auto", None, True)
