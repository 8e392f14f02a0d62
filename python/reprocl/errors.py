"""Exceptions: every negative rcl_status raises an `Error` subclass carrying the library's message."""

from __future__ import annotations

from typing import Any

from ._lib import lib


class Error(Exception):
    """A reprocl call failed. ``status`` is the negative rcl_status, ``status_name`` its name
    (``"RCL_ERR_PARSE"``) and ``message`` the library's thread-local message (rcl_error_last)."""

    status: int = 0

    def __init__(self, status: int, message: str, detail: Any = None) -> None:
        self.status = status
        self.status_name = (lib.rcl_status_name(status) or b"").decode()
        self.message = message
        self.detail = detail
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)


class InvalidArgumentError(Error, ValueError):
    """A bad argument: NULL, a size out of range, an unknown name (RCL_ERR_INVALID_ARG)."""

    status = -1


class OutOfMemoryError(Error, MemoryError):
    """Host allocation failed."""

    status = -2


class OpenCLError(Error):
    """An OpenCL call failed; the message names the call and the CL error."""

    status = -3


class BuildError(Error):
    """A program failed to compile; the message holds the build log."""

    status = -4


class UnsupportedError(Error):
    """The device cannot run this bit-exactly; the message says which feature (fp64 on Rusticl)."""

    status = -5


class NotFoundError(Error, LookupError):
    """No device, file or entry matches."""

    status = -6


class ReproclIOError(Error, OSError):
    """A file could not be read or written."""

    status = -7


class ParseError(Error, ValueError):
    """Malformed input; the message names file, line and problem."""

    status = -8


class PolicyError(Error):
    """A build option or source construct would break reproducibility."""

    status = -9


class ReproclOverflowError(Error, ArithmeticError):
    """A fixed-point accumulator or a size computation would overflow."""

    status = -10


class NoConvergenceError(Error):
    """CG stopped at its iteration limit; ``detail`` holds the CGResult (solution and history)."""

    status = -11


class BreakdownError(Error, ArithmeticError):
    """CG broke down; ``detail`` holds the CGResult up to the stop."""

    status = -12


class MismatchError(Error):
    """Two results that must be bit-identical differ (a bug; please report)."""

    status = -13


class InternalError(Error):
    """An invariant of the library failed (a bug; please report)."""

    status = -14


_BY_STATUS = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        OutOfMemoryError,
        OpenCLError,
        BuildError,
        UnsupportedError,
        NotFoundError,
        ReproclIOError,
        ParseError,
        PolicyError,
        ReproclOverflowError,
        NoConvergenceError,
        BreakdownError,
        MismatchError,
        InternalError,
    )
}


def error_for(status: int, detail: Any = None) -> Error:
    """The exception of a failed call (reads this thread's message right after the call)."""
    msg = (lib.rcl_error_last() or b"").decode(errors="replace")
    return _BY_STATUS.get(status, Error)(status, msg, detail)


def check(status: int, detail: Any = None) -> int:
    """Raises the exception of a negative status; returns 0 otherwise."""
    if status < 0:
        raise error_for(status, detail)
    return status
