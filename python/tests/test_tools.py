"""Tuning from Python, and the CLI's check/fingerprint suites as Python objects."""

from __future__ import annotations

import os

import pytest

import reprocl
from reprocl import tools
from conftest import cli_path


def test_tune_keeps_bits(ctx: reprocl.Context) -> None:
    assert "reduce.sum.ordered" in tools.tune_kernels()
    x = reprocl.generate(20_000, "wide", seed=3)
    before = ctx.sum(x)
    rep = tools.tune(ctx, "reduce.sum.ordered", "float32", 20_000, budget_ms=100, store=False)
    assert rep.mismatches == 0 and rep.timed >= 1 and rep.choice.origin in ("tuned", "defaults")
    assert tools.tune_get(ctx, "reduce.sum.ordered", "float32", 20_000).params == rep.choice.params
    assert ctx.sum(x).tobytes() == before.tobytes()
    with pytest.raises(ValueError, match="tune_kernels"):
        tools.tune(ctx, "reduce.nope", "float32")


def test_fingerprint_and_check_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPROCL_CLI", str(cli_path()))
    f = tools.fingerprint(families=["reduce"], device="all")
    assert f.all_agree and len(f.devices) == len(reprocl.devices())
    case = next(c for c in f.cases if c.name == "reduce sum f32 ordered uniform n=100003")
    x = reprocl.generate(100_003, "uniform", seed=7)  # the suite's x (suite_reduce.c: seeds 7 and 8)
    assert case.reference == reprocl.digest(reprocl.reference.sum(x))
    assert {r.sha256 for r in case.results} == {case.reference}
    c = tools.check(families=["reduce"], device="0")
    assert c.all_agree and all(r.native is not None for k in c.cases for r in k.results if r.status == "ok")
    with pytest.raises(tools.CLIError):
        tools.check(device="no-such-device")
