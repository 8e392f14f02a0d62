"""reprocl: bit-reproducible OpenCL kernels from Python (ctypes over libreprocl).

    import reprocl
    x = reprocl.generate(1_000_000, "uniform", seed=1)
    y = reprocl.generate(1_000_000, "uniform", seed=2)
    with reprocl.Context() as ctx:
        r = ctx.dot(x, y)
    print(r, reprocl.digest(r))   # the digest `reprocl run reduce --op dot ...` prints
"""

from __future__ import annotations

from . import md, reference, tools  # reprocl.opencl: import it explicitly (needs pyopencl)
from ._lib import LIBRARY_PATH, library_candidates
from .core import (
    Context,
    Device,
    Support,
    axpy,
    default_context,
    devices,
    digest,
    dot,
    generate,
    grid,
    nrm2,
    scal,
    sor,
    stencil,
    sum,
)
from .errors import (
    BreakdownError,
    BuildError,
    Error,
    InternalError,
    InvalidArgumentError,
    MismatchError,
    NoConvergenceError,
    NotFoundError,
    OpenCLError,
    OutOfMemoryError,
    ParseError,
    PolicyError,
    ReproclIOError,
    ReproclOverflowError,
    UnsupportedError,
)
from .sparse import CGResult, Matrix, cg, spmv

__all__ = [
    "LIBRARY_PATH", "library_candidates", "reference", "md", "tools",
    "Context", "Device", "Support", "devices", "default_context", "digest", "generate", "grid",
    "sum", "dot", "nrm2", "axpy", "scal", "stencil", "sor", "Matrix", "CGResult", "spmv", "cg",
    "Error", "InvalidArgumentError", "OutOfMemoryError", "OpenCLError", "BuildError", "UnsupportedError",
    "NotFoundError", "ReproclIOError", "ParseError", "PolicyError", "ReproclOverflowError",
    "NoConvergenceError", "BreakdownError", "MismatchError", "InternalError",
]
