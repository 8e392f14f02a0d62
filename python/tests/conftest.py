"""Fixtures: one context per OpenCL device present (every test that takes `ctx` runs on each), the CLI
for digest comparisons, and the repository's test data."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

import reprocl

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

_DEVICES = reprocl.devices()


def pytest_sessionstart(session: Any) -> None:
    need = int(os.environ.get("REPROCL_TEST_MIN_DEVICES", "0") or 0)
    if len(_DEVICES) < need:
        raise pytest.UsageError(
            f"REPROCL_TEST_MIN_DEVICES={need} but {len(_DEVICES)} OpenCL device(s) are present "
            "(Rusticl needs RUSTICL_ENABLE=llvmpipe)"
        )


def pytest_report_header(config: Any) -> list[str]:
    return [f"reprocl library: {reprocl.LIBRARY_PATH}"] + [
        f"device {d.index}: {d.platform_name}: {d.name}" for d in _DEVICES
    ]


@pytest.fixture(scope="session", params=[d.index for d in _DEVICES] or [None],
                ids=[f"dev{d.index}" for d in _DEVICES] or ["nodevice"])
def ctx(request: Any) -> Iterator[reprocl.Context]:
    if request.param is None:
        pytest.skip("no OpenCL device present")
    with reprocl.Context(device=request.param, tuning="off") as c:
        yield c


def cli_path() -> Path:
    """$REPROCL_CLI, the source tree's build/reprocl, else the CLI reprocl.tools finds (bundled, PATH)."""
    p = Path(os.environ.get("REPROCL_CLI", ROOT / "build" / "reprocl"))
    if p.exists():
        return p
    try:
        return Path(reprocl.tools.cli_path())
    except FileNotFoundError:
        pytest.skip(f"no reprocl CLI to compare digests with: not at {p}, not bundled, not on PATH (set REPROCL_CLI)")


def cli_json(*args: str) -> dict[str, Any]:
    """Runs `reprocl ARGS --json` and returns its JSON."""
    env = dict(os.environ, REPROCL_TUNING="off")
    r = subprocess.run([str(cli_path()), *args, "--json"], capture_output=True, text=True, env=env, check=False)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def supports(ctx: reprocl.Context, family: str, dtype: str) -> bool:
    return ctx.support[family][dtype].support != "unsupported"
