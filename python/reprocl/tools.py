"""Tuning (the library's tuner) and the CLI's suites — `reprocl check` and `reprocl fingerprint` — as
Python objects. The suites live in the CLI (src/cli/suite*.c), so check() and fingerprint() run it:
$REPROCL_CLI, else the copy `pip install ./python` bundled, else `reprocl` on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from ctypes import byref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _lib
from ._arrays import DTypeLike, np_dtype, rcl_dtype
from ._lib import lib
from .core import Context, _count
from .errors import Error, check as _check

# ---- tuning --------------------------------------------------------------------------------------------


def tune_kernels() -> list[str]:
    """The tunable kernels ("reduce.sum.ordered", "stencil.nine", ...)."""
    return [lib.rcl_tune_kernel_name(i).decode() for i in range(lib.rcl_tune_kernel_count())]


@dataclass(frozen=True)
class TuneChoice:
    kernel: str
    dtype: str
    size_log2: int
    params: dict[str, str]  # parameter -> its value as text ("256", "task")
    origin: str  # "defaults", "cache", "tuned", "user"
    time_s: float
    default_time_s: float


@dataclass(frozen=True)
class TuneReport:
    choice: TuneChoice
    candidates: int
    timed: int
    mismatches: int  # candidates whose output bits differed from the default's: excluded
    mismatch: str
    tuning_s: float
    improved: bool
    reference_digest: str


def _choice(c: _lib.TuneChoice) -> TuneChoice:
    params = {c.params[i].name.decode(): c.params[i].label.decode() for i in range(c.count)}
    return TuneChoice(c.kernel.decode(), "float32" if c.dtype == 1 else "float64", c.size_log2, params,
                      lib.rcl_tune_origin_name(c.origin).decode(), c.time_s, c.default_time_s)


def _kernel(kernel: str) -> bytes:
    if kernel not in tune_kernels():
        raise ValueError(f"kernel {kernel!r}: not one of reprocl.tools.tune_kernels()")
    return kernel.encode()


def tune_get(ctx: Context, kernel: str, dtype: DTypeLike, n: Optional[int] = None) -> TuneChoice:
    """What the library would use for kernel/dtype at problem size n on ctx (never tunes)."""
    k = _kernel(kernel)
    size = lib.rcl_tune_kernel_default_size(k) if n is None else _count(n, "n")
    out = _lib.TuneChoice()
    _check(lib.rcl_tune_get(byref(out), ctx.handle, k, rcl_dtype(np_dtype(dtype)), size))
    return _choice(out)


def tune(ctx: Context, kernel: str, dtype: DTypeLike, n: Optional[int] = None, *, budget_ms: float = 0.0,
         samples: int = 0, store: bool = True) -> TuneReport:
    """Tunes kernel/dtype at size n (default: the size `reprocl tune` uses) now and uses the result in ctx.
    Every candidate's output is compared bit for bit with the default configuration's."""
    k = _kernel(kernel)
    size = lib.rcl_tune_kernel_default_size(k) if n is None else _count(n, "n")
    opts = _lib.TuneOptions(1, float(budget_ms), int(samples), int(bool(store)))
    rep = _lib.TuneReport()
    _check(lib.rcl_tune(byref(rep), ctx.handle, k, rcl_dtype(np_dtype(dtype)), size, byref(opts)))
    return TuneReport(_choice(rep.choice), rep.candidates, rep.timed, rep.mismatches, rep.mismatch.decode(),
                      rep.tuning_s, bool(rep.improved), rep.reference_digest.decode())


# ---- the CLI's suites ----------------------------------------------------------------------------------


class CLIError(Error):
    """The reprocl CLI could not run a suite (exit status 2: bad input, 3: could not run)."""

    def __init__(self, exit_status: int, message: str) -> None:
        Exception.__init__(self, f"reprocl CLI exit status {exit_status}: {message}")
        self.status, self.status_name, self.message, self.detail = exit_status, "CLI", message, None


def cli_path() -> str:
    """The reprocl CLI used by check() and fingerprint()."""
    env = os.environ.get("REPROCL_CLI")
    bundled = Path(__file__).resolve().parent / "_lib" / "reprocl"
    for cand in (env, str(bundled) if bundled.exists() else None, shutil.which("reprocl")):
        if cand:
            return cand
    raise FileNotFoundError("the reprocl CLI was not found: set REPROCL_CLI, put reprocl on PATH or "
                            "install this package with `pip install ./python` (which bundles it)")


def _run_cli(args: Sequence[str]) -> dict[str, Any]:
    r = subprocess.run([cli_path(), *args], capture_output=True, text=True, check=False)
    if r.returncode not in (0, 1):  # 1: a finding (a result that differs), the JSON says which
        raise CLIError(r.returncode, r.stderr.strip())
    return json.loads(r.stdout)


def _suite_args(suite: str, families: Optional[Sequence[str]], device: str) -> list[str]:
    if suite not in ("quick", "full"):
        raise ValueError(f"suite {suite!r}: 'quick' or 'full'")
    fam = "all" if families is None else ",".join(families)
    return ["--suite", suite, "--family", fam, "--device", str(device)]


@dataclass(frozen=True)
class CaseResult:
    device: int
    status: str  # "ok", "unsupported", ...
    sha256: Optional[str]
    agrees: Optional[bool]  # equals the host reference (None where it did not run)
    native: Optional[dict[str, Any]] = None  # check only: the native build's drift


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    contract: str
    dtype: str
    reference: Optional[str]
    results: list[CaseResult]


@dataclass(frozen=True)
class SuiteReport:
    """A `reprocl check --json` or `reprocl fingerprint --json` document: devices, cases, and the raw JSON."""

    devices: list[dict[str, Any]]
    cases: list[Case]
    raw: dict[str, Any] = field(repr=False)

    @property
    def all_agree(self) -> bool:
        return all(r.agrees is not False for c in self.cases for r in c.results)

    def save(self, path: str) -> None:
        """Writes the JSON (a fingerprint file `reprocl compare` reads)."""
        Path(path).write_text(json.dumps(self.raw, indent=2) + "\n")


def _report(j: dict[str, Any]) -> SuiteReport:
    cases = []
    for c in j.get("cases", []):
        res = [CaseResult(r.get("device", -1), r.get("status", ""), r.get("sha256"), r.get("agrees"),
                          r.get("native")) for r in c.get("results", [])]
        cases.append(Case(c["name"], c.get("family", ""), c.get("contract", ""), c.get("dtype", ""),
                          c.get("reference"), res))
    return SuiteReport(j.get("devices", []), cases, j)


def check(suite: str = "quick", families: Optional[Sequence[str]] = None, device: str = "all",
          native: bool = True) -> SuiteReport:
    """`reprocl check`: the standard suite on the devices, each result against the host reference."""
    args = ["check", *_suite_args(suite, families, device), "--json"]
    if not native:
        args.append("--no-native")
    return _report(_run_cli(args))


def fingerprint(suite: str = "quick", families: Optional[Sequence[str]] = None, device: str = "all") -> SuiteReport:
    """`reprocl fingerprint`: the reproducible digests of the suite, comparable across machines."""
    return _report(_run_cli(["fingerprint", *_suite_args(suite, families, device), "--json"]))
